"""Short text for the reports: one line, cut at a word boundary with an ellipsis, never in the
middle of a word (a reviewer reads ``…`` as "more in the JSON report", not a typo)."""

from __future__ import annotations

from typing import Any

ELLIPSIS = "…"
# Where a long unbroken token (a host spec, a test id, a path) may be cut when it has no space.
_SOFT_BREAKS = "/:,;=&?[](){}_.-"


def one_line(value: Any) -> str:
    return " ".join(str(value).split())


def shorten(value: Any, limit: int) -> str:
    """``value`` on one line, at most ``limit`` characters: when longer, cut after the last
    whole word that fits and ended with ``…``. A text whose first word alone is longer than the
    room (a path, a test id) is cut after the last punctuation that fits (``/``, ``:``, ``[``,
    ``_`` ...); only a single unbroken run of letters and digits is cut where the room ends."""
    text = one_line(value)
    if len(text) <= limit:
        return text
    room = max(1, limit - len(ELLIPSIS))
    head = text[:room]
    if text[room] == " ":  # the cut falls between two words
        return head.rstrip() + ELLIPSIS
    space = head.rfind(" ")
    if space > 0:
        return head[:space].rstrip(" ,;:") + ELLIPSIS
    soft = max(head.rfind(c) for c in _SOFT_BREAKS)
    if soft > 0:
        return head[: soft + 1] + ELLIPSIS
    return head + ELLIPSIS


def shorten_front(value: Any, limit: int) -> str:
    """Like :func:`shorten`, but keeps the end (a host spec's file or port tells hosts apart):
    ``…/captures/gpu1.json``, cut just after a space or a punctuation mark."""
    text = one_line(value)
    if len(text) <= limit:
        return text
    room = max(1, limit - len(ELLIPSIS))
    start = len(text) - room
    tail = text[start:]
    if text[start - 1] in " " + _SOFT_BREAKS:
        return ELLIPSIS + tail
    breaks = [i for i, c in enumerate(tail) if c in " " + _SOFT_BREAKS]
    if breaks and breaks[0] < len(tail) - 1:
        cut = breaks[0]
        return ELLIPSIS + (tail[cut + 1:] if tail[cut] == " " else tail[cut:])
    return ELLIPSIS + tail
