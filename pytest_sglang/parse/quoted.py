"""Where a quoted string in Python-repr text ends, found in linear time and constant memory.

A regular expression that reads a quoted string one character at a time
(``'(?:[^'\\\\]|\\\\.)*'``) keeps a backtracking record per character in Python's ``re``: a
20 MB string value took 140 bytes of memory per character. These functions find the same
end as those expressions do: they jump from quote to quote with a compiled search and count
the backslashes before each one (an odd run escapes it), so each character is looked at a
bounded number of times and nothing is kept per character.
"""

from __future__ import annotations

import re
from typing import Callable

_QUOTE_OR_NEWLINE = {q: re.compile(f"[{q}\\n]") for q in ("'", '"')}


def _escaped(text: str, i: int, floor: int) -> bool:
    """Whether ``text[i]`` follows an odd run of backslashes (none of them before ``floor``)."""
    j = i
    while j > floor and text[j - 1] == "\\":
        j -= 1
    return (i - j) % 2 == 1


def token_end(text: str, start: int) -> int | None:
    """The end (exclusive) of the string token that opens at ``text[start]`` (a quote), as
    ``'(?:[^'\\\\\\n]|\\\\.)*(?:'|$)`` with ``re.S`` matches it there: up to the closing quote,
    or to the end of the text (a cut line); ``None`` where that expression does not match (a
    raw line break inside, or a lone backslash last)."""
    quote = text[start]
    search = _QUOTE_OR_NEWLINE[quote].search
    n = len(text)
    floor = pos = start + 1
    while True:
        found = search(text, pos)
        if found is None:
            return None if _escaped(text, n, floor) else n
        i = found.start()
        if _escaped(text, i, floor):
            floor = pos = i + 1
            continue
        if text[i] == quote:
            return i + 1
        return i if i == n - 1 else None  # '$' matches before a line break that ends the text


def quoted_end(text: str, start: int) -> int | None:
    """The end (exclusive) of the quoted string that opens at ``text[start]``, as
    ``'(?:[^'\\\\]|\\\\.)*'`` (without ``re.S``) matches it there; ``None`` where it does not
    (no closing quote, or a backslash before a line break)."""
    quote = text[start]
    search = _QUOTE_OR_NEWLINE[quote].search
    floor = pos = start + 1
    while True:
        found = search(text, pos)
        if found is None:
            return None
        i = found.start()
        escaped = _escaped(text, i, floor)
        if text[i] == "\n":
            if escaped:
                return None  # '\\.' does not take a line break without re.S
        elif not escaped:
            return i + 1
        floor = pos = i + 1


def replace_quoted(text: str, head: re.Pattern[str], replace: Callable[[re.Match[str]], str | None]) -> str:
    """``re.sub`` of ``head`` followed by a quoted string (:func:`quoted_end`), in linear time
    and constant memory: each match of ``head`` must end where a quote opens (end it with
    ``(?=['"])``). ``replace(match)`` gives the text for the match and its quoted string, or
    None to keep them; a quote that never closes matches nothing, and the search goes on from
    the character after the match's start, as ``re.sub`` would."""
    out: list[str] = []
    last = pos = 0
    search = head.search
    while True:
        found = search(text, pos)
        if found is None:
            break
        end = quoted_end(text, found.end())
        if end is None:
            pos = found.start() + 1
            continue
        new = replace(found)
        if new is not None:
            out += (text[last : found.start()], new)
            last = end
        pos = end
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)
