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
  ``Authorization`` header; each in any case; its base64 at each alignment; and, in a copy of
  the text decoded and folded once (:func:`fold`), written a character at a time as entities,
  ``%XX``, ``\\uXXXX`` or ``\\xXX`` in any mix, with invisible characters inside, or broken
  across a line. Secrets are registered where they enter: the user's api keys when options are
  read, and the values the redactor removes from server answers and launch commands.

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

import base64
import html
import json
import re
import shlex
import threading
from array import array
from bisect import bisect_right
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, Callable, Iterable, Iterator
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


# ---- spellings no list of forms can hold: one folded copy of the text ---------------------------
#
# An output format or a hostile server can spell a key one character at a time (``&#115;``,
# ``&#x73``, ``&amp;#X73;``, ``%73``, ``\u0073``, ``\x73``, in any mix), in upper case, with
# zero-width or soft characters inside, or broken across a line. Listing those spellings per key
# would multiply the patterns; instead the text is decoded and folded once (:class:`_Folded`),
# each key is folded the same way (:func:`fold`), and what is found is mapped back to the text's
# own offsets. Base64 is the one spelling of another alphabet: its three alignments are literal
# strings (:func:`base64_forms`), searched with the forms.

# A character written as an entity, ``%XX`` (one character's UTF-8 bytes together), a backslash
# escape: decoded first. Each alternative starts with its own mark, which keeps the search fast.
_UTF8 = r"(?:[cCdD][0-9a-fA-F]{p}[89abAB][0-9a-fA-F]|[eE][0-9a-fA-F](?:{p}[89abAB][0-9a-fA-F]){{2}}|[fF][0-7](?:{p}[89abAB][0-9a-fA-F]){{3}})"
_ENCODED = re.compile(
    r"&(?:amp;)*(?:#(?:[xX]([0-9a-fA-F]{1,6})|([0-9]{1,7}));?|(amp|lt|gt|quot|apos);)"  # an entity, escaped again or not
    + r"|%(?:(" + _UTF8.format(p="%") + r")|([0-9a-fA-F]{2}))"
    + r"|\\(?:x(" + _UTF8.format(p=r"\\x") + r")|u([dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    + r"|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|x([0-9a-fA-F]{2})|([\\'" + '"' + r"/])|([nr]))"
)
_ENCODED_MARKS = "&%\\"
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_HEX_PAIR = re.compile(r"[0-9a-fA-F]{2}")
# Then, in what is decoded: a line break where a key may have been broken in two (with the white
# space around it and a failure line's gutter after it, pytest's ``E   `` or ``>   ``) and
# characters that show as nothing (zero-width space, non-joiner, joiner, marks, word joiner,
# invisible operators, BOM, soft hyphen, combining grapheme joiner, Mongolian vowel separator)
# are dropped, and other white space is one space (as a key's white space collapsed).
_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_OTHER_SPACES = "\t\x1f\xa0\u1680\u2000-\u200a\u202f\u205f\u3000"
_SPACES = " " + _OTHER_SPACES  # white space within a line
_INVISIBLE = "\u00ad\u034f\u180e\u200b-\u200f\u2060-\u2064\ufeff"
_BLANK = f"[{_SPACES}{_INVISIBLE}]"
_GUTTER = rf"[E>]{_BLANK}*[{_SPACES}]{_BLANK}*"  # pytest's ``E   ``, ``>   ``
# A line break with the blanks around it (and a gutter after it); else a run of blanks that is
# not a lone space between two words (nothing to do there). The lookahead lets the search skip
# to the next blank or line break.
_ANY = f"[{_SPACES}{_INVISIBLE}{_BREAKS}]"
_JOINS = re.compile(rf"(?={_ANY})(?:{_ANY}*[{_BREAKS}](?:{_GUTTER}|{_ANY}*)|({_ANY}{{2,}}|[{_OTHER_SPACES}{_INVISIBLE}{_BREAKS}]))")
_HAS_SPACE = re.compile(f"[{_SPACES}]")
# The line breaks a redacted span keeps (escaped ones too): a key broken across lines is
# replaced piece by piece, and the lines stay lines.
_LINE_BREAKS = re.compile(rf"({_BLANK}*(?:\r\n|[{_BREAKS}]|\\r\\n|\\n)(?:{_GUTTER}|{_BLANK}*))")
# What a cut may leave of an encoded character: its start before the cut, its rest after it.
_PARTIAL_TAIL = re.compile(
    r"(?:(?:%|\\x)[c-fC-F][0-9a-fA-F](?:(?:%|\\x)[89abAB][0-9a-fA-F]){0,2})?"  # the first bytes of a character as UTF-8
    r"(?:&(?:amp;)*(?:#(?:[xX][0-9a-fA-F]{0,5}|[0-9]{0,6}))?|%[0-9a-fA-F]?|\\(?:u[0-9a-fA-F]{0,3}|U[0-9a-fA-F]{0,7}|x[0-9a-fA-F]?)?)?\Z"
)
_PARTIAL_HEAD = re.compile(r"(?:(?:amp|mp|p);)?(?:#[xX]?|[xXuU])?[0-9a-fA-F]{0,8};?(?:(?:%|\\x)[89abAB][0-9a-fA-F]){0,3}")


def _decoded(match: re.Match[str]) -> str:
    """One token of :data:`_ENCODED` as the character it spells (U+FFFD for a number that is no
    character)."""
    hexa, dec, named, utf8, pct, utf8x, pair, u4, u8, x2, escaped, control = match.groups()
    if named is not None:
        return _NAMED[named]
    if escaped is not None:
        return escaped
    if control is not None:
        return "\n" if control == "n" else "\r"
    if utf8 is not None or utf8x is not None or pair is not None:
        if pair is not None:  # a surrogate pair, as JSON writes a character past U+FFFF
            data, codec = bytes.fromhex(pair[:4] + pair[6:]), "utf-16-be"
        else:  # the bytes after the first mark, and after each "%" or "\\x" that follows
            data, codec = bytes(int(h, 16) for h in _HEX_PAIR.findall((utf8 or utf8x).replace("\\x", "%").replace("%", " "))), "utf-8"
        try:
            text = data.decode(codec)
        except UnicodeDecodeError:
            return "\ufffd"
        return text if len(text) == 1 else "\ufffd"
    digits = hexa if hexa is not None else pct if pct is not None else u4 if u4 is not None else u8 if u8 is not None else x2
    number = int(dec) if dec is not None else int(digits, 16)
    return chr(number) if number <= 0x10FFFF else "\ufffd"


def _joined(match: re.Match[str]) -> str:
    """One token of :data:`_JOINS`: nothing for a line break (with its blanks and gutter) or
    invisible characters alone; one space for a run that holds white space."""
    run = match.group(1)
    return " " if run is not None and _HAS_SPACE.search(run) else ""


def _lower(text: str) -> str:
    """``text`` in lower case, character by character (no character changes its length, and a
    final sigma is a sigma: a key folded alone and inside a text fold alike)."""
    low = text.lower()
    if len(low) != len(text):
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    return low.replace("ς", "σ") if "ς" in low else low


def _to_decode(text: str) -> bool:
    """Whether ``text`` may hold an encoded character (cheap: three searches for a mark)."""
    return any(mark in text for mark in _ENCODED_MARKS)


def _to_join(text: str) -> bool:
    """Whether ``text`` may hold a line break, a run of white space or an invisible character
    (cheap: a text of printable characters and lone spaces holds none)."""
    return not text.isprintable() or "  " in text


def fold(text: str) -> str:
    """``text`` as the scrubber compares it: every character spelt as an entity, ``%XX``,
    ``\\uXXXX`` or ``\\xXX`` decoded, invisible characters and line breaks dropped, white space
    one space, lower case."""
    if _to_decode(text):
        text = _ENCODED.sub(_decoded, text)
    if _to_join(text):
        text = _JOINS.sub(_joined, text)
    return _lower(text)


class _Map:
    """The way back from a text rewritten token by token to the text it was made from: only the
    tokens are recorded (four integers each)."""

    __slots__ = ("_fs", "_fe", "_ts", "_te")

    def __init__(self) -> None:
        self._fs, self._fe, self._ts, self._te = array("q"), array("q"), array("q"), array("q")

    @classmethod
    def rewrite(cls, text: str, pattern: re.Pattern[str], replace: Any) -> tuple[str, _Map | None]:
        """``text`` with each match of ``pattern`` replaced by ``replace(match)``, and the map
        back (None when nothing matched: the offsets are the text's own)."""
        first = pattern.search(text)
        if first is None:
            return text, None
        out = cls()
        pieces: list[str] = []
        n = last = 0
        for m in pattern.finditer(text, first.start()):
            a, b = m.span()
            pieces.append(text[last:a])
            n += a - last
            c = replace(m)
            pieces.append(c)
            out._fs.append(n)
            n += len(c)
            out._fe.append(n)
            out._ts.append(a)
            out._te.append(b)
            last = b
        pieces.append(text[last:])
        return "".join(pieces), out

    def _at(self, i: int) -> tuple[int, int]:
        """The span of the source that character ``i`` comes from."""
        k = bisect_right(self._fe, i)
        if k < len(self._fs) and self._fs[k] <= i:
            return self._ts[k], self._te[k]
        start = self._te[k - 1] + (i - self._fe[k - 1]) if k else i
        return start, start + 1

    def span(self, a: int, b: int) -> tuple[int, int]:
        """The source's span of the span ``[a, b)`` (``b > a``)."""
        return self._at(a)[0], self._at(b - 1)[1]

    def position(self, p: int) -> int:
        """The offset of the source's offset ``p`` (inside a token: the token's start)."""
        k = bisect_right(self._ts, p) - 1
        if k < 0:
            return p
        return self._fs[k] if p < self._te[k] else self._fe[k] + (p - self._te[k])


class _Folded:
    """A text folded (:func:`fold`), with the way back from the folded copy's offsets to the
    text's. A text with nothing to decode or drop costs one lower-cased copy; the way back is
    worked out only when something is found (each token costs four integers there)."""

    __slots__ = ("source", "text", "decoded", "_decoding", "_joining", "_mapped")

    def __init__(self, text: str, lowered: str | None = None) -> None:
        self.source = text
        decoded = _ENCODED.sub(_decoded, text) if _to_decode(text) else text
        joined = _JOINS.sub(_joined, decoded) if _to_join(decoded) else decoded
        self.decoded = joined != text  # anything decoded or dropped (else the copy is only lower case)
        self.text = _lower(joined) if self.decoded or lowered is None else lowered
        self._decoding: _Map | None = None
        self._joining: _Map | None = None
        self._mapped = not self.decoded

    def _map(self) -> None:
        if not self._mapped:
            decoded, self._decoding = _Map.rewrite(self.source, _ENCODED, _decoded) if _to_decode(self.source) else (self.source, None)
            self._joining = _Map.rewrite(decoded, _JOINS, _joined)[1] if _to_join(decoded) else None
            self._mapped = True

    def span(self, a: int, b: int) -> tuple[int, int]:
        """The text's span of the folded span ``[a, b)`` (``b > a``)."""
        self._map()
        if self._joining is not None:
            a, b = self._joining.span(a, b)
        if self._decoding is not None:
            a, b = self._decoding.span(a, b)
        return a, b

    def position(self, p: int) -> int:
        """The folded offset of the text's offset ``p`` (inside a token: the token's start)."""
        self._map()
        if self._decoding is not None:
            p = self._decoding.position(p)
        return self._joining.position(p) if self._joining is not None else p


def base64_forms(value: str) -> set[str]:
    """The base64 of ``value`` wherever it sits in a longer blob: for each of the three
    alignments, the characters that only its bytes decide, in the standard and the URL-safe
    alphabets. Values of fewer than :data:`FRAGMENT` bytes have none (their pieces would be a
    few characters that any blob may hold)."""
    data = value.encode("utf-8", "surrogatepass")
    if len(data) < FRAGMENT:
        return set()
    out = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode("ascii")
        core = encoded[(8 * offset + 5) // 6 : 8 * (offset + len(data)) // 6]
        out |= {core, core.replace("+", "-").replace("/", "_")}
    return out


# The longest total of literals one pattern holds: compiling a pattern of a megabyte-long value
# a host sent costs seconds, searching for it with str.find costs milliseconds.
_PATTERN_LIMIT = 16 * 1024


# A pattern of literals nested deeper than this (values that are prefixes of each other) is
# written flat: the regular-expression parser recurses per level.
_TRIE_DEPTH = 100


class _Deep(Exception):
    """A tree of literals past :data:`_TRIE_DEPTH` levels."""


def _trie(literals: Iterable[str]) -> str:
    """One pattern of the literals as a tree of their shared beginnings (``sk-(?:a|b)``): the
    search tries a character once at each place, not once per literal (a flat alternation of
    some hundred forms made the search ten times slower). The longest literal at a place wins.
    Raises :class:`_Deep` past :data:`_TRIE_DEPTH` levels."""
    root: dict[str | None, Any] = {}
    for literal in literals:
        node = root
        for c in literal:
            node = node.setdefault(c, {})
        node[None] = True

    def emit(node: dict[str | None, Any], depth: int) -> str:
        if depth > _TRIE_DEPTH:
            raise _Deep
        branches = []
        for c, child in node.items():
            if c is None:
                continue
            chars = [c]
            while len(child) == 1 and None not in child:  # a run with no fork: one literal
                ((c, child),) = child.items()
                chars.append(c)
            branches.append(re.escape("".join(chars)) + emit(child, depth + 1))
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if None in node else body

    return emit(root, 0)


class _Finder:
    """Where any of some literal strings occur in a text (the longest at a place first)."""

    def __init__(self, literals: Iterable[str]) -> None:
        self.literals = sorted(set(literals), key=len, reverse=True)
        size = sum(len(f) for f in self.literals)
        self.pattern: re.Pattern[str] | None = None
        if self.literals and size <= _PATTERN_LIMIT:
            try:
                self.pattern = re.compile(_trie(self.literals))
            except _Deep:
                self.pattern = re.compile("|".join(re.escape(f) for f in self.literals))

    def spans(self, text: str) -> list[tuple[int, int]]:
        if self.pattern is not None:
            return [m.span() for m in self.pattern.finditer(text)]
        return self.plain(self.literals, text)

    @staticmethod
    def plain(literals: Iterable[str], text: str) -> list[tuple[int, int]]:
        """Where each literal occurs, by ``str.find``."""
        out = []
        for literal in literals:
            at = text.find(literal)
            while at >= 0:
                out.append((at, at + len(literal)))
                at = text.find(literal, at + len(literal))
        return out


def _cuts_of(forms: Iterable[str]) -> list[_Cuts]:
    cuts: dict[int, _Cuts] = {}
    for form in forms:
        size = fragment_length(form)
        if len(form) > size:
            cuts.setdefault(size, _Cuts(size)).add(form)
    return sorted(cuts.values(), key=lambda c: c.size)


def _merged(spans: Iterable[tuple[int, int]]) -> list[list[int]]:
    merged: list[list[int]] = []
    for a, b in sorted(spans):
        if merged and a < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


def _replaced(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with each span replaced by ``<redacted>``; a span that runs over a line break
    (a key broken in two) keeps its line breaks, each piece replaced."""
    out: list[str] = []
    last = 0
    for a, b in _merged(spans):
        out.append(text[last:a])
        piece = text[a:b]
        parts = [piece] if piece.isprintable() and "\\" not in piece else _LINE_BREAKS.split(piece)  # a line break is not printable
        out.append(REDACTED if len(parts) == 1 else "".join(p if i % 2 or not p.strip() else REDACTED for i, p in enumerate(parts)))
        last = b
    out.append(text[last:])
    return "".join(out)


@lru_cache(maxsize=4096)
def _spellings_of(value: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """What the scrubber looks for of one value: its base64 (as written: base64 has cases), its
    forms in lower case, and its forms folded (:func:`fold`)."""
    every = _forms_of(value)
    base64s = frozenset(base64_forms(value) | base64_forms(value.strip()))
    return base64s, frozenset(map(_lower, every)), frozenset(f for f in map(fold, every) if len(f) >= MIN_LENGTH)


class _Matcher:
    """A scrubber for a set of secrets: every form anywhere (in any case, and folded), its
    base64, and pieces of forms at cuts.

    Three searches, each of one set of literal strings: the base64 forms in the text as it is,
    the forms in lower case in the text in lower case (every form as written, in any case), and,
    when the text holds anything to decode or drop, the forms folded in the text folded."""

    def __init__(self, values: Iterable[str]) -> None:
        spellings = [_spellings_of(v) for v in values]
        base64s = set().union(*(b for b, _, _ in spellings))
        lowered = set().union(*(w for _, w, _ in spellings))
        folded = set().union(*(f for _, _, f in spellings))
        self.base64 = _Finder(base64s) if base64s else None
        self.lowered = _Finder(lowered) if lowered else None
        self.folded = _Finder(folded) if folded else None
        self.base64_cuts = _cuts_of(base64s)
        self.lowered_cuts = _cuts_of(lowered)
        self.folded_cuts = _cuts_of(folded)

    def scrub(self, text: str) -> str:
        if self.lowered is None or not text:
            return text
        lowered = _lower(text)
        spans = self.lowered.spans(lowered)
        if self.base64 is not None:
            spans += self.base64.spans(text)
        folded = _Folded(text, lowered)
        if folded.decoded and self.folded is not None:
            spans += [folded.span(a, b) for a, b in self.folded.spans(folded.text)]
        if spans:
            return self._cut_pieces(_replaced(text, spans), None, None)
        return self._cut_pieces(text, lowered, folded)

    def _cut_pieces(self, text: str, lowered: str | None, folded: _Folded | None) -> str:
        """The cut rule: pieces of a form (in any case, folded, or base64) at the text's ends and
        at ellipses, replaced."""
        marks = [m.start() for m in _CUT_MARKS.finditer(text)] if ELLIPSIS in text or "..." in text else []
        ends = {len(text.rstrip())} | set(marks)
        starts = {len(text) - len(text.lstrip())} | {m + (1 if text[m] == ELLIPSIS else 3) for m in marks}
        spans = []
        lowered = _lower(text) if lowered is None else lowered
        for cut_text, cuts in [(text, c) for c in self.base64_cuts] + [(lowered, c) for c in self.lowered_cuts]:
            for end in ends:
                k = cuts.prefix_ending_at(cut_text, end)
                if k:
                    spans.append((end - k, end))
            for start in starts:
                k = cuts.suffix_starting_at(cut_text, start)
                if k:
                    spans.append((start, start + k))
        if self.folded_cuts:
            spans += self._folded_pieces(text, lowered, folded, ends, starts)
        if not spans:
            return text
        # A piece that overlaps a <redacted> already there is part of it, not of a key.
        markers = [(m.start(), m.end()) for m in re.finditer(re.escape(REDACTED), text)]
        spans = [(a, b) for a, b in spans if not any(a < y and x < b for x, y in markers)]
        return _replaced(text, spans) if spans else text

    def _folded_pieces(self, text: str, lowered: str, folded: _Folded | None, ends: set[int], starts: set[int]) -> list[tuple[int, int]]:
        """The cut rule in the folded copy, where a cut through an encoded character leaves part
        of it: each cut is looked at on both sides of such a part. A long text is folded only
        around its cuts (a piece is at most a form long, a form's character at most
        :data:`_REACH` characters written), and only its first :data:`_CUTS_FOLDED` ellipses are."""
        spans: list[tuple[int, int]] = []
        reach = _REACH * (max(c.longest for c in self.folded_cuts) + 1)
        whole = len(text) <= 4 * reach
        if whole:
            folded = folded or _Folded(text, lowered)
        for end in sorted(ends)[: _CUTS_FOLDED + 1]:
            lo = 0 if whole else max(0, end - reach)
            part = folded if whole else _Folded(text[lo:end], lowered[lo:end])
            assert part is not None
            points = {end} | ({*range(t.start(), end)} if (t := _PARTIAL_TAIL.search(text, max(0, end - 24), end)) else set())
            for cuts in self.folded_cuts:
                for point in {part.position(p - lo) for p in points}:
                    k = cuts.prefix_ending_at(part.text, point)
                    if k:
                        a, b = part.span(point - k, point)
                        spans.append((a + lo, b + lo))
        for start in sorted(starts)[: _CUTS_FOLDED + 1]:
            lo = 0 if whole else start
            hi = len(text) if whole else min(len(text), start + reach)
            part = folded if whole else _Folded(text[lo:hi], lowered[lo:hi])
            assert part is not None
            points = {start} | ({*range(start + 1, h.end() + 1)} if (h := _PARTIAL_HEAD.match(text, start)) else set())
            for cuts in self.folded_cuts:
                for point in {part.position(p - lo) for p in points}:
                    k = cuts.suffix_starting_at(part.text, point)
                    if k:
                        a, b = part.span(point, point + k)
                        spans.append((a + lo, b + lo))
        return spans


# How many characters one character of a key may take written out (``&amp;#x10FFFF;`` is 14),
# and how many ellipses of a text the cut rule reads folded (the ends always).
_REACH = 16
_CUTS_FOLDED = 256


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

    @contextmanager
    def scope(self) -> Iterator[None]:
        """Secrets added inside are forgotten when it ends: one test's keys must not scrub the
        next test's text (a short key's piece at a cut, ``gpu1`` of ``sk-gpu1``, would)."""
        saved = self._values
        try:
            yield
        finally:
            with self._lock:
                self._values = saved

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


def remove(text: str, values: Iterable[str]) -> str:
    """``text`` with every registered secret scrubbed, and ``values`` removed in every spelling
    (as :func:`scrub` finds them whole, without its cut rule) by plain searches: for the values a
    redactor finds in what a host sends, each met once and perhaps megabytes long, where building
    a scrubber per value would cost more than the search."""
    text = SECRETS.scrub(text)
    kept = {v for v in values if isinstance(v, str) and len(v.strip()) >= MIN_LENGTH and REDACTED not in v}
    if not kept or not text:
        return text
    lowered = _lower(text)
    folded = _Folded(text, lowered)
    spans: list[tuple[int, int]] = []
    for value in kept:
        base64s, lowered_forms, folded_forms = _spellings_of(value)
        spans += _Finder.plain(base64s, text) + _Finder.plain(lowered_forms, lowered)
        if folded.decoded:
            spans += [folded.span(a, b) for a, b in _Finder.plain(folded_forms, folded.text)]
    return _replaced(text, spans) if spans else text


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


def scrub_object(obj: Any, _depth: int = 0, *, text: Callable[[str], str] | None = None) -> Any:
    """Scrub every string inside a report object in place (pytest's longrepr classes are
    dataclasses of strings, lists and tuples); returns the object, or a scrubbed copy for
    immutable values. ``text`` rewrites each string instead of :func:`scrub` (a front end
    naming its options, :mod:`pytest_sglang.base.settings`)."""
    if _depth > 12:
        return obj
    if isinstance(obj, str):
        return (text or scrub)(obj)
    if isinstance(obj, list):
        for i, item in enumerate(obj):
            obj[i] = scrub_object(item, _depth + 1, text=text)
        return obj
    if isinstance(obj, tuple):
        items = [scrub_object(item, _depth + 1, text=text) for item in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)  # a namedtuple takes fields
    if isinstance(obj, dict):
        for key in list(obj):
            obj[key] = scrub_object(obj[key], _depth + 1, text=text)
        return obj
    fields = getattr(obj, "__dataclass_fields__", None)
    if fields:
        for name in fields:
            value = getattr(obj, name, None)
            if value is not None:
                object.__setattr__(obj, name, scrub_object(value, _depth + 1, text=text))
    return obj
