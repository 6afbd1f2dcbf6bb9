"""Short text for the reports: one line, cut at a word boundary with an ellipsis, never in the
middle of a word (a reviewer reads ``…`` as "more in the JSON report", not a typo).

Both cuts are :func:`pytest_sglang.base.secrets.clip`: the text is scrubbed before it is cut and
again after, so a cut never leaves a piece of a secret behind."""

from __future__ import annotations

from typing import Any

from pytest_sglang.base.secrets import ELLIPSIS, clip

__all__ = ["ELLIPSIS", "one_line", "shorten", "shorten_front"]


def one_line(value: Any) -> str:
    return " ".join(str(value).split())


def shorten(value: Any, limit: int) -> str:
    """``value`` on one line, at most ``limit`` characters: when longer, cut after the last
    whole word that fits and ended with ``…``. A text whose first word alone is longer than the
    room (a path, a test id) is cut after the last punctuation that fits (``/``, ``:``, ``[``,
    ``_`` ...); only a single unbroken run of letters and digits is cut where the room ends."""
    return clip(value, limit)


def shorten_front(value: Any, limit: int) -> str:
    """Like :func:`shorten`, but keeps the end (a host spec's file or port tells hosts apart):
    ``…/captures/gpu1.json``, cut just after a space or a punctuation mark."""
    return clip(value, limit, keep="end")
