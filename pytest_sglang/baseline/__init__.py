"""Baselines of the effective configuration: documents, typed diffs, per-field policy."""
