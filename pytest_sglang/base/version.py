"""This release of pytest-sglang (``pytest_sglang.__version__`` names it too): here, at the
bottom, so a module of any layer reads it without importing the package root."""

__version__ = "0.1.0"
