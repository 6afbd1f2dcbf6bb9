"""The lint the project keeps (pyproject.toml [tool.ruff]): no unused or undefined names, no loop
variable shadowing an import, no exception re-raised without its cause."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("ruff", reason="pip install '.[test]' installs ruff")


def test_the_code_passes_the_projects_lint():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "pytest_sglang", "tests", "benchmarks", "example_suite"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]


def test_the_lint_catches_what_it_is_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\ndef f(x=[]):\n    return undefined_name\n")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(bad)], capture_output=True, text=True)
    assert done.returncode == 1
    for code in ("F401", "F821", "B006"):  # the unused import, the undefined name, the mutable default
        assert code in done.stdout, done.stdout
