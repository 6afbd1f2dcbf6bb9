"""pytest hooks for baselines: ``--sglang-baseline DIR``, ``--sglang-update-baseline``."""
