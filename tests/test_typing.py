"""The package ships py.typed: its annotations must hold, and a user's typed script must check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mypy", reason="pip install '.[test]' installs mypy")

USER_SCRIPT = '''
from pytest_sglang import connect, parse_startup_line
from pytest_sglang.parse.launch import parse_launch_command

target = connect("sim://qwen35-122b-a10b-4xrtx6000-candidate")
running: int | None = target.effective.max_running_requests
source: str = target.effective.source_of("max_running_requests")
tp: int | None = target.server_args.tp_size
line = parse_startup_line("server_args=ServerArgs(tp_size=4)")
complete: bool = line.complete
requested = parse_launch_command("python -m sglang.launch_server --tp 4", sglang_version="0.5.12").requested
'''


def _mypy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", *args], cwd=ROOT, capture_output=True, text=True)


@pytest.mark.slow
def test_the_package_type_checks():
    result = _mypy()  # [tool.mypy] in pyproject.toml
    assert result.returncode == 0, result.stdout


@pytest.mark.slow
def test_a_users_typed_script_checks_against_the_package(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(USER_SCRIPT)
    result = _mypy(str(script))
    assert result.returncode == 0, result.stdout
    wrong = tmp_path / "wrong.py"
    wrong.write_text(USER_SCRIPT + "oops: str = target.effective.max_running_requests\n")
    result = _mypy(str(wrong))
    assert result.returncode == 1 and "Incompatible types in assignment" in result.stdout
