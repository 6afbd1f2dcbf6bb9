"""pytest hooks for capture: ``--sglang-capture DIR``."""
