"""The add command on a real wheel (run with --real-sglang): in a copy of the checkout, adding a
release the knowledge base holds writes every byte as it is in the repository (the command is
idempotent and the stored tables are what it writes), and nothing outside
``pytest_sglang/model/knowledge/`` and ``tests/data/`` changes."""

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


def test_adding_a_known_release_again_changes_no_byte(tmp_path, sglang_python):
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT, copy, ignore=SKIP)
    before = _tree(copy)
    env = {**os.environ, "PYTHONPATH": str(copy)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest_sglang.model.knowledge.release", "add", RELEASE, "--examples", "3"],
        cwd=copy, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"== SGLang {RELEASE}" in done.stdout
    after = _tree(copy)
    changed = sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))
    assert changed == [], f"add {RELEASE} rewrote: {changed}"
