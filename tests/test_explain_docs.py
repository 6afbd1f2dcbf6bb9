"""docs/explain.md and docs/explain-rules.md show what the package prints today: every
``$ pytest-sglang ...`` console block there is run and its output compared line for line, and
the rule catalogue is regenerated and compared."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_sglang.judge.explain import catalog, load

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"```console\n\$ (pytest-sglang (?:[^\n]*\\\n)*[^\n]*)\n(.*?)```", re.S)


def _blocks() -> list[tuple[str, str]]:
    # A block with --execute runs an installed SGLang: the real tier runs it
    # (tests/real_sglang/test_explain_execute_real.py).
    blocks = [(command.replace("\\\n", " "), output) for command, output in BLOCK.findall((DOCS / "explain.md").read_text())]
    return [(command, output) for command, output in blocks if "--execute" not in command.split()]


def test_the_manual_shows_commands():
    assert len(_blocks()) >= 3


@pytest.mark.parametrize("command, output", _blocks(), ids=[c[:60] for c, _ in _blocks()])
def test_every_console_block_in_the_manual_is_what_the_command_prints(command, output):
    words = shlex.split(command)
    done = subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", *words[1:]], capture_output=True, text=True, timeout=120)
    shown = output.rstrip("\n").splitlines()
    exit_line = [line for line in shown if line.startswith("$ echo $?")]
    if exit_line:
        index = shown.index(exit_line[0])
        assert shown[index + 1] == str(done.returncode), command
        shown = shown[:index]
    assert done.stdout.rstrip("\n").splitlines() == shown, f"docs/explain.md is stale for: {command}\n{done.stdout}"


def test_the_rule_catalogue_page_is_current():
    assert (DOCS / "explain-rules.md").read_text() == catalog.markdown(load()), "regenerate: pytest-sglang explain --list-rules --markdown > docs/explain-rules.md"
