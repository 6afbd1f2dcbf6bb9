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
    """``repr(value)`` with :func:`tidy` floats, scrubbed, then cut with an ellipsis past ``limit`` characters."""
    from pytest_sglang.base.secrets import clip

    return clip(repr(tidy(value)), limit, one_line=False)


def one_line(text: Any, limit: int = 120) -> str:
    """Free text (a response body, an error) on one line, whitespace collapsed, scrubbed, then cut past ``limit``."""
    from pytest_sglang.base.secrets import clip

    return clip(str(text), limit)
