"""Verdicts and facts as people and machines read them: terminal text, the run's report (JSON schema, Markdown), capture files and starter suites."""
