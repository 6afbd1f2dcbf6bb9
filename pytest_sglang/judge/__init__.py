"""Verdicts on the model: explain what SGLang changed and why, compare with baselines, benchmark and gate, check a fleet for drift."""
