"""Text to values, with no input or output: start-up and capacity log lines, the current run's log, launch commands and their flags per release, and redaction of the secrets inside commands."""
