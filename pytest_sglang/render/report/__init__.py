"""The run's report as a document: its JSON schema and its renderings."""
