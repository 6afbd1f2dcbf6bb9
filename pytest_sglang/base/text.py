"""Short, one-line text for messages and reports."""

from __future__ import annotations

import json
import math
import re
from typing import Any

# Figures of these units are measured, not exact: one decimal from 10 up, three significant
# digits below (``579.5`` ms, ``7.83`` ms, ``4476.4`` tokens/s).
MEASURED_UNITS = frozenset({"ms", "s", "tokens/s", "requests/s", "GiB", "GB", "%"})
# Figures of these units are counts: whole numbers (``26``, not ``26.0``).
COUNT_UNITS = frozenset({"requests", "tokens", "GPUs"})


def tidy(value: Any) -> Any:
    """Floats to 12 significant digits, inside lists, tuples and dicts too: arithmetic noise
    (``0.7392700000000001``) goes, every digit a value really has stays (``0.73927``); a whole
    float keeps every digit (``2.0**53``), and ``-0.0`` is ``0.0``."""
    if isinstance(value, float):
        if not math.isfinite(value) or (value.is_integer() and abs(value) < 1e16):
            return value + 0.0
        return float(f"{value:.12g}") + 0.0
    if type(value) in (list, tuple):
        return type(value)(tidy(v) for v in value)
    if type(value) is dict:
        return {k: tidy(v) for k, v in value.items()}
    return value


def number(value: Any, unit: str | None = None) -> str:
    """The one way a number is written in text, in every output: a figure of a known unit at
    that unit's fixed precision (:data:`MEASURED_UNITS`, :data:`COUNT_UNITS`), any other number
    as the shortest text that reads back as its :func:`tidy` value (``0.1 + 0.2`` is ``0.3``,
    ``1e-07``, ``26``, ``0.5``). A bool or a non-number is ``str(value)``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return str(value)
    if unit in COUNT_UNITS and value.is_integer():
        return str(int(value))
    if unit in MEASURED_UNITS and abs(value) < 1e15:
        text = f"{value:.1f}" if abs(value) >= 10 else f"{value:.3g}"
        return "0" if float(text) == 0 and text.startswith("-") else text
    return repr(tidy(value))


def value_text(value: Any) -> str:
    """A value as reports show it: a string as it is, a number by :func:`number`, anything else
    (lists, mappings, None, bools) as JSON with its numbers :func:`tidy`."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return number(value)
    return json.dumps(tidy(value), default=str)


_DECIMAL = re.compile(r"(?<![\w.])-?\d+\.\d+(?:[eE][+-]?\d+)?(?![\w.])")


def tidy_numbers(text: str) -> str:
    """Text another program wrote (pytest's ``assert 0.7392700000000001 >= 0.8``) with each
    decimal number of more than 12 significant digits written by :func:`number`."""

    def shorter(found: re.Match[str]) -> str:
        literal = found.group()
        digits = literal.lower().split("e")[0].replace("-", "").replace(".", "").lstrip("0")
        return number(float(literal)) if len(digits) > 12 else literal

    return _DECIMAL.sub(shorter, text)


def short_repr(value: Any, limit: int = 100) -> str:
    """``repr(value)`` with :func:`tidy` floats, scrubbed, then cut with an ellipsis past ``limit`` characters."""
    from pytest_sglang.base.secrets import clip

    return clip(repr(tidy(value)), limit, one_line=False)


def one_line(text: Any, limit: int = 120) -> str:
    """Free text (a response body, an error) on one line, whitespace collapsed, scrubbed, then cut past ``limit``."""
    from pytest_sglang.base.secrets import clip

    return clip(str(text), limit)
