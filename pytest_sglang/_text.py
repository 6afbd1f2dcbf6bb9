"""Short, one-line text for messages and reports."""

from __future__ import annotations

from typing import Any


def tidy(value: Any) -> Any:
    """Floats to 12 significant digits, inside lists, tuples and dicts too: arithmetic noise
    (``0.7392700000000001``) goes, every digit a value really has stays (``0.73927``)."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if type(value) in (list, tuple):
        return type(value)(tidy(v) for v in value)
    if type(value) is dict:
        return {k: tidy(v) for k, v in value.items()}
    return value


def short_repr(value: Any, limit: int = 100) -> str:
    """``repr(value)`` with :func:`tidy` floats, cut with an ellipsis past ``limit`` characters."""
    text = repr(tidy(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: Any, limit: int = 120) -> str:
    """Free text (a response body, an error) on one line, whitespace collapsed, cut past ``limit``."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
