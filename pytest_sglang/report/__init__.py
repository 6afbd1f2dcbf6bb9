"""Reports of a run: JUnit properties, JSON (with its schema) and a Markdown summary."""
