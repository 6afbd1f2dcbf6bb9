"""The add command on a real wheel (run with --real-sglang): in a copy of the checkout, adding a
release the knowledge base holds writes nothing outside ``pytest_sglang/model/knowledge/`` and
``tests/data/``, and adding it again writes every byte as the first run did (idempotent)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RELEASE = os.environ.get("SGLANG_ADD_RELEASE", "0.5.9")
SKIP = shutil.ignore_patterns(".git", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", "*.egg-info", ".hypothesis")


def _tree(top: Path) -> dict[str, str]:
    out = {}
    for path in sorted(top.rglob("*")):
        if path.is_file() and not any(part in ("__pycache__", ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache") for part in path.parts):
            out[str(path.relative_to(top))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _add(copy: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run(
        [sys.executable, "-m", "pytest_sglang.model.knowledge.release", "add", RELEASE, "--examples", "3"],
        cwd=copy, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def test_adding_a_known_release_again_changes_no_byte(tmp_path, sglang_python):
    """The first run writes only where it may (the stored differential sets name the Hypothesis
    version that drew them, so another environment may redraw them); the second writes the
    same bytes again."""
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT, copy, ignore=SKIP)
    before = _tree(copy)
    first = _add(copy)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert f"== SGLang {RELEASE}" in first.stdout
    after = _tree(copy)
    changed = sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))
    allowed = ("pytest_sglang/model/knowledge/", "tests/data/")
    assert [name for name in changed if not name.startswith(allowed)] == []
    second = _add(copy)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    again = _tree(copy)
    rewritten = sorted(name for name in set(after) | set(again) if after.get(name) != again.get(name))
    assert rewritten == [], f"a second add {RELEASE} rewrote: {rewritten}"
