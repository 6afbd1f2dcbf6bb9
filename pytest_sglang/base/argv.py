"""How argparse tells flags from values, shared by launch-command parsing and redaction."""

from __future__ import annotations

import re

# argparse's own rule (``_negative_number_matcher``): "-5", "-1.5" and "-.5" are numbers.
NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")  # VAR=value before a command


def option_like(word: str) -> bool:
    """What argparse never takes as a flag's value: ``--x``, ``-x``, ``--x=1 2``; not ``-5``,
    ``-.5``, ``-`` nor a word with a space before any ``=`` (``'-x y'`` is a value to argparse)."""
    return word.startswith("-") and len(word) > 1 and not NEGATIVE_NUMBER.match(word) and " " not in word.partition("=")[0]
