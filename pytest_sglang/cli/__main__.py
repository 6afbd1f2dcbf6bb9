"""``python -m pytest_sglang.cli``: the ``pytest-sglang`` command."""

from pytest_sglang.cli.main import main

raise SystemExit(main())
