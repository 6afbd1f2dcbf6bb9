"""Known secrets and the one scrubber every outgoing string passes through.

Two layers keep a key out of what pytest-sglang prints or writes:

- objects that hold a secret never show it: :class:`Secret` is a ``str`` whose ``repr`` is
  ``'<redacted>'``, so dataclass reprs, ``pytest -l`` locals and assertion introspection of a
  value that *is* the key show nothing;
- every string that leaves the plugin (errors, report sections, failure text, headers, files)
  goes through :func:`scrub`, which removes every registered secret in every form it can take
  on the way out (:func:`forms`): raw, stripped, white space collapsed, ``repr``-escaped,
  JSON-escaped, URL-encoded (``quote``, ``quote_plus``), HTML-escaped (``&amp;``, ``&quot;``,
  ``&#x27;``, ``&#39;``, ``&#34;``, ``&apos;``, all-numeric) and shell-quoted, and inside an
  ``Authorization`` header. Secrets are registered where they enter: the user's api keys when
  options are read, and the values the redactor removes from server answers and launch commands.

No fragment of a key either. Outside text (an error body, a status line) is shortened with
:func:`clip` only, never by slicing: it scrubs the whole text *first*, then cuts (at a word
boundary, with an ellipsis), then scrubs again. And :func:`scrub` treats a cut as a boundary
where a key may have been broken (the *cut rule*):

- a text that ends (white space aside) with a **prefix** of a form of a key, or has one just
  before an ellipsis (``…`` or ``...``), has that prefix replaced by ``<redacted>``;
- a text that starts (white space aside) with a **suffix** of a form of a key, or has one just
  after an ellipsis, has that suffix replaced;

when the piece is at least :func:`fragment_length` characters: 6, or for a short form more
than half of it (at least 4). A piece shorter than that says too little to identify a key, and
the rule only looks at a text's ends and at ellipses, so ordinary words elsewhere are never
eaten (a text that ends with a six-letter word a key happens to start with does lose it).
Since every cut pytest-sglang makes is marked by an ellipsis, a later scrub that knows more
secrets (the auth headers of a benchmark request, say) still finds a key broken at the cut.
"""

from __future__ import annotations

import html
import json
import re
import shlex
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, Iterable, Iterator
from urllib.parse import quote, quote_plus

REDACTED = "<redacted>"
ELLIPSIS = "…"
# Shorter values are not scrubbed from free text: a two-character "key" would eat ordinary words.
MIN_LENGTH = 4
# The longest piece of a key a cut may leave: a piece of FRAGMENT characters or more at a cut
# boundary is scrubbed (see fragment_length for short keys).
FRAGMENT = 6
# What marks a cut in a text: the ellipses pytest-sglang (and most tools) put where they cut.
_CUT_MARKS = re.compile(r"(?=…|\.\.\.)")
# Where a long unbroken token (a host spec, a test id, a path) may be cut when it has no space.
_SOFT_BREAKS = "/:,;=&?[](){}_.-"
_HTML_SPECIAL = "&<>\"'"


class Secret(str):
    """A string that is a credential: usable as a ``str``, never shown by ``repr``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"'{REDACTED}'"


def _html_forms(value: str) -> set[str]:
    """The HTML/XML spellings of ``value``: ``html.escape`` with and without quotes, the other
    entity spellings of the quotes (``&#39;`` ``&#34;`` ``&#x22;`` ``&apos;``), all-numeric."""
    if not any(c in value for c in _HTML_SPECIAL):
        return set()
    out = {html.escape(value, quote=False), html.escape(value, quote=True)}
    base = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for dq, sq in (("&quot;", "&#39;"), ("&#34;", "&#39;"), ("&#x22;", "&#x27;"), ("&quot;", "&apos;"), ("&#34;", "&#x27;")):
        out.add(base.replace('"', dq).replace("'", sq))
    out.add("".join(f"&#{ord(c)};" if c in _HTML_SPECIAL else c for c in value))
    out.add("".join(f"&#x{ord(c):x};" if c in _HTML_SPECIAL else c for c in value))
    return out


def forms(value: str) -> set[str]:
    """The spellings a secret takes in text: raw, stripped, white space collapsed, escaped
    (``repr``, JSON, HTML, shell), encoded (URL)."""
    out = set()
    for v in {value, value.strip(), " ".join(value.split())}:
        if len(v) < MIN_LENGTH:
            continue
        out.add(v)
        out.add(str.__repr__(v)[1:-1])  # repr-escaped (\r, \t, non-printables, quotes)
        out.add(json.dumps(v)[1:-1])  # JSON-escaped
        out.add(json.dumps(v, ensure_ascii=False)[1:-1])
        out.add(quote(v, safe=""))
        out.add(quote(v))  # a path keeps its slashes
        out.add(quote_plus(v))
        out.add(v.encode("unicode_escape").decode("ascii", "replace"))
        out |= _html_forms(v)
        quoted = shlex.quote(v)
        out.add(quoted)
        if quoted != v:
            out.add(quoted[1:-1])  # inside its quotes ('"'"' for each quote it holds)
    return {f for f in out if len(f) >= MIN_LENGTH}


def fragment_length(form: str) -> int:
    """The shortest piece of ``form`` the cut rule scrubs: :data:`FRAGMENT` (6) characters, or
    for a short form more than half of it, and never under :data:`MIN_LENGTH`."""
    return min(FRAGMENT, max(MIN_LENGTH, len(form) // 2 + 1))


class _Cuts:
    """The pieces of some forms that the cut rule scrubs, for one fragment length ``size``.
    Memory and time stay linear in the forms' length (a key of 10 KB costs no 10 MB table)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.windows: set[str] = set()  # every ``size``-long piece of a form: a quick first test
        self.heads: dict[str, list[str]] = {}  # a form's first ``size`` characters -> the forms
        self.tails: dict[str, list[str]] = {}  # a form's last ``size`` characters -> the forms
        self.longest = 0  # the longest piece: a form less one character (a whole one is a form)

    def add(self, form: str) -> None:
        n = self.size
        self.windows.update(form[i : i + n] for i in range(len(form) - n + 1))
        self.heads.setdefault(form[:n], []).append(form)
        self.tails.setdefault(form[-n:], []).append(form)
        self.longest = max(self.longest, len(form) - 1)

    def prefix_ending_at(self, text: str, end: int) -> int:
        """The length of the longest proper prefix of a form that ends at ``end`` (0: none)."""
        n = self.size
        if end < n or text[end - n : end] not in self.windows:
            return 0
        for start in range(max(0, end - self.longest), end - n + 1):  # the longest piece first
            candidates = self.heads.get(text[start : start + n])
            if candidates:
                piece = text[start:end]
                if any(len(f) > len(piece) and f.startswith(piece) for f in candidates):
                    return end - start
        return 0

    def suffix_starting_at(self, text: str, start: int) -> int:
        """The length of the longest proper suffix of a form that starts at ``start`` (0: none)."""
        n = self.size
        if len(text) - start < n or text[start : start + n] not in self.windows:
            return 0
        for end in range(min(len(text), start + self.longest), start + n - 1, -1):  # the longest first
            candidates = self.tails.get(text[end - n : end])
            if candidates:
                piece = text[start:end]
                if any(len(f) > len(piece) and f.endswith(piece) for f in candidates):
                    return end - start
        return 0


@lru_cache(maxsize=4096)
def _forms_of(value: str) -> frozenset[str]:
    """:func:`forms`, worked out once per value: a scrubber rebuilt after a secret is added
    does not spell every earlier secret out again."""
    return frozenset(forms(value))


class _Matcher:
    """A scrubber for a set of secrets: every form anywhere, and pieces of forms at cuts."""

    def __init__(self, values: Iterable[str]) -> None:
        every = set().union(*(_forms_of(v) for v in values))
        # Longest first, so a form that contains another is replaced whole.
        self.pattern = re.compile("|".join(re.escape(f) for f in sorted(every, key=len, reverse=True))) if every else None
        cuts: dict[int, _Cuts] = {}
        for form in every:
            size = fragment_length(form)
            if len(form) > size:
                cuts.setdefault(size, _Cuts(size)).add(form)
        self.cuts = sorted(cuts.values(), key=lambda c: c.size)

    def scrub(self, text: str) -> str:
        if self.pattern is None or not text:
            return text
        return self._cut_pieces(self.pattern.sub(REDACTED, text))

    def _cut_pieces(self, text: str) -> str:
        """The cut rule: pieces of a form at the text's ends and at ellipses, replaced."""
        if not self.cuts:
            return text
        marks = [m.start() for m in _CUT_MARKS.finditer(text)]
        ends = {len(text.rstrip())} | set(marks)
        starts = {len(text) - len(text.lstrip())} | {m + (1 if text[m] == ELLIPSIS else 3) for m in marks}
        spans = []
        for cuts in self.cuts:
            for end in ends:
                k = cuts.prefix_ending_at(text, end)
                if k:
                    spans.append((end - k, end))
            for start in starts:
                k = cuts.suffix_starting_at(text, start)
                if k:
                    spans.append((start, start + k))
        if not spans:
            return text
        # A piece that overlaps a <redacted> already there is part of it, not of a key.
        markers = [(m.start(), m.end()) for m in re.finditer(re.escape(REDACTED), text)]
        spans = [(a, b) for a, b in spans if not any(a < y and x < b for x, y in markers)]
        merged: list[list[int]] = []
        for a, b in sorted(spans):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        for a, b in reversed(merged):
            text = text[:a] + REDACTED + text[b:]
        return text


@lru_cache(maxsize=64)
def _matcher(values: frozenset[str]) -> _Matcher:
    """The scrubber of a set of secrets, built (its pattern compiled) once per set: a scrub
    with the same ``extra`` secrets, or the registry's set met again, costs no compilation."""
    return _Matcher(values)


class Registry:
    """The secrets known in this process, and a scrubber built from them.

    :meth:`add` only records the values (registering a secret per option, per host, per
    found value costs nothing each); the scrubber is built at the next :meth:`scrub` after a
    change, once for that frozen set of secrets (the forms of each value are worked out once
    per value, :func:`_forms_of`)."""

    def __init__(self) -> None:
        self._values: frozenset[str] = frozenset()
        self._matcher: _Matcher | None = None
        self._built_for: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    def add(self, *values: Any) -> None:
        fresh = {str.__str__(v) for v in values if isinstance(v, str) and len(v.strip()) >= MIN_LENGTH and REDACTED not in v} - self._values
        if not fresh:
            return
        with self._lock:
            self._values = self._values | fresh  # a new frozen set: a scrub under way keeps its own

    def _current(self) -> _Matcher | None:
        """The scrubber for the secrets known now, built at the first scrub after a change."""
        values = self._values
        if values is self._built_for:
            return self._matcher
        if not values:
            return None
        matcher = _Matcher(values)  # not in _matcher's cache: each change would keep an old set there
        with self._lock:
            if values is self._values:
                self._matcher, self._built_for = matcher, values
        return matcher

    def __contains__(self, value: object) -> bool:
        return value in self._values

    def __len__(self) -> int:
        return len(self._values)

    def scrub(self, text: str) -> str:
        """``text`` with every form of every secret, and every piece of one at a cut (the cut
        rule, see the module's text), replaced by ``<redacted>``."""
        if not text:
            return text
        matcher = self._current()
        if matcher is None:
            return text
        return matcher.scrub(text)

    def found_in(self, text: str) -> bool:
        """Whether :meth:`scrub` would change ``text``."""
        return bool(text) and self.scrub(text) != text


SECRETS = Registry()


def register(*values: Any) -> None:
    """Make these values secrets for every later :func:`scrub`."""
    SECRETS.add(*values)


# Secrets the redactor finds in what a target sends (its own api key in /server_info, a key in
# its launch command) are noted in the collection under way, and registered once the target is
# read: redacting text outside a collection (a script, a property test) registers nothing.
_FOUND: ContextVar[set[str] | None] = ContextVar("pytest_sglang_found_secrets", default=None)


def note_found(*values: Any) -> None:
    """A secret the redactor removed: kept for the collection under way, if any."""
    found = _FOUND.get()
    if found is not None:
        found.update(v for v in values if isinstance(v, str) and len(v.strip()) >= MIN_LENGTH and REDACTED not in v)


@contextmanager
def collecting() -> Iterator[set[str]]:
    """Gather the secrets found while a target is collected; they are registered on the way out."""
    found: set[str] = set()
    token = _FOUND.set(found)
    try:
        yield found
    finally:
        _FOUND.reset(token)
        register(*found)


def scrub(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every registered secret (and ``extra`` ones) replaced by ``<redacted>``:
    every form of it, and a piece of one at a cut (see the module's text)."""
    text = SECRETS.scrub(text)
    values = frozenset(v for v in extra if isinstance(v, str) and len(v.strip()) >= MIN_LENGTH and REDACTED not in v)
    if values and text:
        text = _matcher(values).scrub(text)
    return text


def clip(text: Any, limit: int, *, extra: Iterable[str] = (), ellipsis: str = ELLIPSIS, one_line: bool = True, keep: str = "start") -> str:
    """Outside text (an error body, a header, a status line) shortened to ``limit`` characters,
    with no secret in it and no piece of one: the one way pytest-sglang shortens such text.

    The whole text is scrubbed first (every registered secret and ``extra`` ones, in every
    form), then put on one line (``one_line``), then cut: after the last whole word that fits,
    else after the last punctuation mark that fits (``/``, ``:``, ``_`` ...), never inside a
    ``<redacted>``, and ended with ``ellipsis``; ``keep="end"`` keeps the end instead, the
    ellipsis in front. The cut text is scrubbed again: a cut through a secret the first scrub
    could not see whole leaves a piece of it next to the ellipsis, where the cut rule removes
    it (and a later scrub that knows more secrets still can).

    The result is at most ``limit`` characters long (at most ``1 + len(ellipsis)`` for a
    ``limit`` smaller than that)."""
    extra = tuple(extra)
    out = scrub(str(text), extra)
    if one_line:
        out = scrub(" ".join(out.split()), extra)
    if len(out) <= max(1, limit):
        return out
    room = max(1, limit - len(ellipsis))
    while True:
        cut = _cut_front(out, room, ellipsis) if keep == "end" else _cut_end(out, room, ellipsis)
        cut = scrub(cut, extra)
        if len(cut) <= limit or room <= 1:
            return cut
        room = max(1, room - (len(cut) - limit))  # a piece became <redacted>: cut shorter


def _cut_end(text: str, room: int, ellipsis: str) -> str:
    """The first ``room`` characters of ``text`` or fewer, ended at a word or punctuation mark,
    then ``ellipsis``."""
    inside = text.rfind(REDACTED, 0, room + len(REDACTED) - 1)
    if inside >= 0 and inside < room < inside + len(REDACTED):
        room = inside  # never half a <redacted>
        if room == 0:
            return ellipsis
    head = text[:room]
    if text[room] == " ":  # the cut falls between two words
        return head.rstrip() + ellipsis
    space = head.rfind(" ")
    if space > 0:
        return head[:space].rstrip(" ,;:") + ellipsis
    soft = max(head.rfind(c) for c in _SOFT_BREAKS)
    if soft > 0:
        return head[: soft + 1] + ellipsis
    return head + ellipsis


def _cut_front(text: str, room: int, ellipsis: str) -> str:
    """The last ``room`` characters of ``text`` or fewer, from a space or punctuation mark on,
    after ``ellipsis``."""
    start = len(text) - room
    inside = text.find(REDACTED, max(0, start - len(REDACTED) + 1))
    if inside >= 0 and inside < start < inside + len(REDACTED):
        start = inside + len(REDACTED)  # never half a <redacted>
        return ellipsis + text[start:].lstrip()
    tail = text[start:]
    if text[start - 1] in " " + _SOFT_BREAKS:
        return ellipsis + tail
    breaks = [i for i, c in enumerate(tail) if c in " " + _SOFT_BREAKS]
    if breaks and breaks[0] < len(tail) - 1:
        cut = breaks[0]
        return ellipsis + (tail[cut + 1 :] if tail[cut] == " " else tail[cut:])
    return ellipsis + tail


def scrub_object(obj: Any, _depth: int = 0) -> Any:
    """Scrub every string inside a report object in place (pytest's longrepr classes are
    dataclasses of strings, lists and tuples); returns the object, or a scrubbed copy for
    immutable values."""
    if _depth > 12:
        return obj
    if isinstance(obj, str):
        return scrub(obj)
    if isinstance(obj, list):
        for i, item in enumerate(obj):
            obj[i] = scrub_object(item, _depth + 1)
        return obj
    if isinstance(obj, tuple):
        items = [scrub_object(item, _depth + 1) for item in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)  # a namedtuple takes fields
    if isinstance(obj, dict):
        for key in list(obj):
            obj[key] = scrub_object(obj[key], _depth + 1)
        return obj
    fields = getattr(obj, "__dataclass_fields__", None)
    if fields:
        for name in fields:
            value = getattr(obj, name, None)
            if value is not None:
                object.__setattr__(obj, name, scrub_object(value, _depth + 1))
    return obj
