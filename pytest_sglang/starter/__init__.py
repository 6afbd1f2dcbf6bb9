"""Starter suites generated from a known-good host (``pytest-sglang init``)."""
