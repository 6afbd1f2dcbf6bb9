"""pytest hooks for reports: ``--sglang-report-json``, ``--sglang-report-md``, JUnit properties."""
