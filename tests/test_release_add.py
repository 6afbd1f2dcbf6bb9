"""The maintainer command that adds an SGLang release: a wheel it cannot read costs one line that
names the file, and writes nothing. (The command run on real wheels is proven by the tables it
wrote: tests/test_release_registry.py, and the real tier's flag-table check.)"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WRITABLE = [ROOT / "pytest_sglang" / "model" / "knowledge", ROOT / "tests" / "data"]


def _state() -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for top in WRITABLE for p in sorted(top.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _add(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_sglang.model.knowledge.release", "add", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def _zip(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as whl:
        for name, text in files.items():
            whl.writestr(name, text)
    return path


@pytest.fixture(scope="module")
def before() -> dict[str, str]:
    return _state()


@pytest.mark.parametrize(
    ("name", "files", "says"),
    [
        ("sglang-0.5.99-py3-none-any.whl", None, "cannot be read as a wheel"),
        ("sglang-0.5.99-py3-none-any.whl", {"README": "x"}, "not an SGLang wheel"),
        ("vllm-0.9.0-py3-none-any.whl", {"vllm-0.9.0.dist-info/METADATA": "Name: vllm\nVersion: 0.9.0\n"}, "not an SGLang wheel"),
        ("sglang-0.5.99-py3-none-any.whl", {"sglang-0.5.99.dist-info/METADATA": "Name: sglang\nVersion: 0.5.99\n"}, "has no sglang/srt/server_args.py"),
        (
            "sglang-0.5.98-py3-none-any.whl",
            {"sglang-0.5.99.dist-info/METADATA": "Name: sglang\nVersion: 0.5.99\n", "sglang/srt/server_args.py": ""},
            "must be named sglang-0.5.99-*.whl",
        ),
    ],
    ids=["not-a-zip", "no-metadata", "another-package", "no-server-args", "misnamed"],
)
def test_a_wheel_that_cannot_be_read_is_one_line_naming_it_and_nothing_is_written(tmp_path, before, name, files, says):
    path = tmp_path / name
    if files is None:
        path.write_text("this is not a zip file\n")
    else:
        _zip(path, files)
    done = _add(str(path))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert str(path) in lines[0] and says in lines[0]
    assert "Traceback" not in done.stderr + done.stdout
    assert _state() == before


def test_a_missing_wheel_and_a_word_that_is_no_version_are_one_line_each(tmp_path, before):
    missing = _add(str(tmp_path / "sglang-0.5.99-py3-none-any.whl"))
    assert missing.returncode == 2 and missing.stderr.strip().endswith("no such file")
    word = _add("latest")
    assert word.returncode == 2
    assert word.stderr.strip() == "pytest-sglang release add: 'latest' is neither an SGLang release (such as 0.5.24) nor a path to a wheel"
    assert _state() == before


def test_the_command_says_how_it_is_used():
    done = subprocess.run([sys.executable, "-m", "pytest_sglang.model.knowledge.release"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("usage: python -m pytest_sglang.model.knowledge.release add VERSION|WHEEL")
