"""How argparse tells flags from values, shared by launch-command parsing and redaction."""

from __future__ import annotations

import re

NEGATIVE_NUMBER = re.compile(r"^-\d+(\.\d+)?$")
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")  # VAR=value before a command


def option_like(word: str) -> bool:
    """What argparse never takes as a flag's value: ``--x``, ``-x`` (not ``-5`` or ``-``)."""
    return word.startswith("-") and len(word) > 1 and not NEGATIVE_NUMBER.match(word)
