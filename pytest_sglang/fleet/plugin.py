"""pytest hooks for fleet drift: a run-wide check when several hosts are given."""
