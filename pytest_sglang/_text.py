"""Short, one-line text for messages and reports."""

from __future__ import annotations

from typing import Any


def short_repr(value: Any, limit: int = 100) -> str:
    """``repr(value)``, cut with an ellipsis past ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: Any, limit: int = 120) -> str:
    """Free text (a response body, an error) on one line, whitespace collapsed, cut past ``limit``."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
