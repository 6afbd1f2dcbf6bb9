"""Add an SGLang release to the knowledge base (a maintainer command, run in a checkout).

    python -m pytest_sglang.model.knowledge.release add 0.5.24
    python -m pytest_sglang.model.knowledge.release add path/to/sglang-0.5.24-...whl

It reads the release's wheel and writes its tables under ``pytest_sglang/model/knowledge/`` and
``tests/data/``, then prints the work list for a person: docs/development.md, "Adding an SGLang
release". The steps run the real-SGLang tier's scripts (``tests/real_sglang/add_release.py``),
so the command needs the checkout those live in; an installed package has none.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_SCRIPT = Path(__file__).resolve().parents[3] / "tests" / "real_sglang" / "add_release.py"
_USAGE = "usage: python -m pytest_sglang.model.knowledge.release add VERSION|WHEEL [--examples N] [--no-differential]"


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "add" or len(argv) < 2 or argv[1].startswith("-"):
        print(_USAGE, file=sys.stderr)
        return 2
    if not _SCRIPT.is_file():
        print(f"pytest-sglang release add: needs a checkout of pytest-sglang ({_SCRIPT.parent} is not beside the package)", file=sys.stderr)
        return 2
    return subprocess.run([sys.executable, str(_SCRIPT), *argv[1:]]).returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
