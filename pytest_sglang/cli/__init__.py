"""The ``pytest-sglang`` command line front end: one module a subcommand (``main`` dispatches),
thin over the library below."""
