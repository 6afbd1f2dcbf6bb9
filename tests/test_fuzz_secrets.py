"""Fuzz tier: keys of any shape, spelt any way, texts of any shape, cuts anywhere.

Hypothesis makes the keys (printable and not, quotes, ampersands, angle brackets, spaces,
unicode), the texts around them, and the spelling of each key (:data:`KINDS`): as a format
writes it (raw, stripped, white space collapsed, HTML-escaped every way, URL-encoded, JSON,
``repr``, shell-quoted), and as a hostile server or a second format can write it, any character
of it at a time in any mix: a numeric HTML entity (decimal or hex, ``&#X73``, with or without its
``;``, escaped again as ``&amp;#115;``), ``%XX`` (either case), ``\\uXXXX`` / ``\\xXX`` /
``\\UXXXXXXXX``, upper or mixed case, with zero-width or soft characters inside, broken across a
line; and base64 inside a longer blob at each of the three alignments, in both alphabets. Each
kind comes with the reader that gets the key back (:func:`reader`). Whatever Hypothesis makes:

- no spelling of the key survives :func:`~pytest_sglang.base.secrets.scrub`, and the reader
  finds no key in what is left;
- :func:`~pytest_sglang.base.secrets.clip` never leaves a piece of 6 characters or more of the key
  (or of a spelling of it written as a format writes it), whether the key is known to the clip or
  only to a scrub after it, at either end, at any limit;
- its result is at most ``limit + len(ellipsis)`` characters (at most ``limit`` once the limit
  leaves room for a character and the ellipsis).

A pytest run then carries every kind of spelling through the terminal (``-rA``), JUnit XML and
the JSON, Markdown and HTML reports (and ``pytest-sglang report``'s), and the reader of each
kind finds the key in none of them.

A fixed set of examples (derandomized, no deadline); a deeper, random search:
``ODD_VALUES_EXAMPLES=5000 pytest tests/test_fuzz_secrets.py``.
"""

from __future__ import annotations

import base64
import html
import json
import re
import shlex
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote, quote_plus, unquote

import pytest
from support import property_settings

from pytest_sglang.base.secrets import ELLIPSIS, MIN_LENGTH, REDACTED, Registry, clip, fold, forms, scrub

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies
given, assume = hypothesis.given, hypothesis.assume

SETTINGS = property_settings(suppress_health_check=list(hypothesis.HealthCheck))
FRAGMENT = 6

# ---- keys and texts ------------------------------------------------------------------------------

_SPECIAL = list("'\"&<> %+=/\\;:#?.,-_") + ["\t", "é", "ß", "€", "日", "🔑", "\u00a0", "\r"]
KEY_CHARS = st.one_of(st.sampled_from(_SPECIAL), st.characters(codec="utf-8", exclude_categories=("Cs",)))
KEYS = st.text(KEY_CHARS, min_size=4, max_size=40).filter(lambda k: len(k.strip()) >= 4 and REDACTED not in k)
# For the piece checks: a piece straddling what clip adds ("<redacted>", "…") cannot be told
# from a leak, so the keys there hold none of their marks ("<", ">", "…") nor a NUL.
PIECE_KEYS = KEYS.filter(lambda k: not any(c in k for c in "<>…\x00"))
TEXTS = st.lists(
    st.one_of(st.sampled_from(list(" x-./:=&'\"…\n") + ["...", "Bearer ", "x" * 40]), st.characters(codec="utf-8", exclude_categories=("Cs",))), max_size=60
).map("".join)

# ---- spellings ---------------------------------------------------------------------------------------


def spellings(key: str) -> list[str]:
    """Every way a format writes a key in text, made here independently of the package's forms()."""
    out = []
    for v in dict.fromkeys([key, key.strip(), " ".join(key.split())]):
        if len(v) < 4:
            continue
        base = v.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        out += [
            v,
            html.escape(v),
            html.escape(v, quote=False),
            base.replace('"', "&quot;").replace("'", "&#39;"),
            base.replace('"', "&#34;").replace("'", "&#39;"),
            base.replace('"', "&#x22;").replace("'", "&#x27;"),
            base.replace('"', "&quot;").replace("'", "&apos;"),
            quote(v, safe=""),
            quote_plus(v),
            json.dumps(v)[1:-1],
            json.dumps(v, ensure_ascii=False)[1:-1],
            repr(v)[1:-1],
            shlex.quote(v),
        ]
    return [s for s in dict.fromkeys(out) if len(s) >= 4]


# Characters of a key that read as an escape of their own (or start one the text after it ends),
# and the line breaks.
ESCAPE_LIKE = re.compile(r"\\[\\'\"/nruUx]|%[0-9a-fA-F]{2}|&(?:#|amp;|lt;|gt;|quot;|apos;)|(?:\\|%[0-9a-fA-F]?|&#?[xX]?[0-9a-fA-F]*|&[a-z]*)$")
LINE_BREAK_CHARS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# What shows as nothing, and how a line break looks where a key was broken across two lines.
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"]
LINE_BREAKS = ["\n", "\r\n", "\n    ", "\nE   ", "\\n"]


def _cased(c: str) -> list[str]:
    """The cases a character may be written in (one character each, folding back alike)."""
    return [x for x in dict.fromkeys([c, c.upper(), c.lower()]) if len(x) == 1 and x.lower() == c.lower()]


def _entity(c: str, style: int) -> str:
    return [f"&#{ord(c)};", f"&#x{ord(c):x};", f"&#X{ord(c):X};", f"&#{ord(c)}", f"&#x{ord(c):X}", f"&amp;#{ord(c)};"][style]


def _percent(c: str, lower: bool) -> str:
    text = quote(c, safe="")
    return text.lower() if lower else text


def _backslash(c: str, style: int) -> str:
    if style == 0 and ord(c) <= 0xFFFF:
        return f"\\u{ord(c):04x}"
    if style == 1 and ord(c) <= 0xFFFF:
        return f"\\u{ord(c):04X}"
    if style == 2 and ord(c) > 0xFFFF:  # a surrogate pair, as JSON writes it
        high, low = divmod(ord(c) - 0x10000, 0x400)
        return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"
    if style == 3:  # its UTF-8 bytes, as Python writes bytes
        return "".join(f"\\x{b:02x}" for b in c.encode("utf-8"))
    return f"\\U{ord(c):08x}"


def _per_character(draw: Callable[..., Any], key: str, choices: Callable[[str], list[str]]) -> str:
    return "".join(draw(st.sampled_from(choices(c))) for c in key)


def _base64(draw: Callable[..., Any], key: str) -> str:
    offset = draw(st.integers(0, 2))
    before = draw(st.binary(min_size=offset, max_size=offset)) + draw(st.binary(max_size=6).map(lambda b: b[: len(b) // 3 * 3]))
    after = draw(st.binary(max_size=8))
    encode = base64.urlsafe_b64encode if draw(st.booleans()) else base64.b64encode
    return encode(before + key.encode("utf-8") + after).decode("ascii")


def _split(draw: Callable[..., Any], key: str) -> str:
    at = draw(st.integers(1, len(key) - 1))
    assume(not key[at - 1].isspace() and not key[at].isspace())  # white space at a break is the break's
    brk = draw(st.sampled_from(LINE_BREAKS))
    assume(not (brk == "\\n" and key[at - 1] == "\\"))  # "\\" then "n": an escaped backslash, no break
    return key[:at] + brk + key[at:]


# kind -> how the key is written (drawing its choices), one character at a time where it can be.
KINDS: dict[str, Callable[[Callable[..., Any], str], str]] = {
    "form": lambda draw, key: draw(st.sampled_from(spellings(key))),
    "entities": lambda draw, key: _per_character(draw, key, lambda c: [c] + [_entity(c, i) for i in range(6)]),
    "percent": lambda draw, key: _per_character(draw, key, lambda c: [c, _percent(c, False), _percent(c, True)]),
    "backslash": lambda draw, key: _per_character(draw, key, lambda c: [c] + [_backslash(c, i) for i in range(5)]),
    "base64": _base64,
    "case": lambda draw, key: _per_character(draw, key, _cased),
    "invisible": lambda draw, key: _per_character(draw, key, lambda c: [c] + [c + z for z in INVISIBLE]),
    "split": _split,
    "any mix": lambda draw, key: _per_character(
        draw, key, lambda c: _cased(c) + [_entity(c, 1), _entity(c, 3), _percent(c, True), _backslash(c, 0), _backslash(c, 3), c + "\u200b"]
    ),
}

# ---- readers: the key back from a text, as a person or a program reading it gets it -------------

_BACKSLASH = re.compile(r"(?:\\x[0-9a-fA-F]{2})+|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|\\\\")


def _unbackslash(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        t = m.group(0)
        if t == "\\\\":  # an escaped backslash
            return "\\"
        if t[1] == "x":
            return bytes.fromhex(t.replace("\\x", "")).decode("utf-8", "replace")
        return chr(int(t[2:], 16)) if int(t[2:], 16) <= 0x10FFFF else "\ufffd"

    return _BACKSLASH.sub(one, text).encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _unbase64(text: str) -> str:
    """Every base64 run of the text, decoded at each alignment (latin-1: a byte a character)."""
    out = []
    for run in re.findall(r"[A-Za-z0-9+/_-]{4,}", text):
        run = run.replace("-", "+").replace("_", "/")
        for skip in range(4):
            part = run[skip:][: (len(run) - skip) // 4 * 4]
            try:
                out.append(base64.b64decode(part).decode("latin-1"))
            except ValueError:
                pass
    return "\x00".join(out)


READERS: dict[str, Callable[[str], str]] = {
    "form": lambda t: t,
    "entities": lambda t: html.unescape(html.unescape(t)),
    "percent": unquote,
    "backslash": _unbackslash,
    "base64": _unbase64,
    "case": str.lower,
    "invisible": lambda t: t.translate({ord(z): None for z in INVISIBLE}),
    "split": lambda t: re.sub(r"\r?\n(?:    |E   )?|\\n", "", t),
    "any mix": lambda t: _unbackslash(unquote(html.unescape(t))).translate({ord(z): None for z in INVISIBLE}).lower(),
}


def needle(kind: str, key: str) -> str:
    """What the reader of ``kind`` finds where the key is."""
    if kind == "base64":
        return key.encode("utf-8").decode("latin-1")
    return key.lower() if kind in ("case", "any mix") else key


def draw_spelling(data: st.DataObject, key: str, kinds: list[str] | None = None) -> tuple[str, str]:
    kind = data.draw(st.sampled_from(kinds or list(KINDS)), label="kind")
    if kind != "form":
        # A key that reads as fewer than 4 characters (``''\\'`` is three quotes) is only
        # looked for as written: shorter, it would eat ordinary text. A key that holds a line
        # break, or characters that read as an escape themselves (``\\'``, ``%41``, ``&#``), has
        # no one reading once some of its characters are encoded: it is found as written and as
        # the formats escape it, not spelt a character at a time (docs/trust.md).
        assume(len(fold(key).strip()) >= MIN_LENGTH)
        assume(not ESCAPE_LIKE.search(key) and not any(c in key for c in LINE_BREAK_CHARS))
    if kind == "base64":
        assume(len(key.encode("utf-8")) >= FRAGMENT)  # base64 of shorter keys is not looked for
    if kind == "split":
        assume(len(key.strip()) == len(key))  # a key's own edge white space goes with the break
    spelt = KINDS[kind](data.draw, key)
    # A spelling the reader does not read back as the key (an entity glued to the next digit) is none.
    assume(kind == "form" or needle(kind, key) in READERS[kind](spelt))
    return kind, spelt


# ---- scrub: no spelling survives ----------------------------------------------------------------


@SETTINGS
@given(key=KEYS, before=TEXTS, after=TEXTS, data=st.data())
def test_no_spelling_of_a_key_survives_scrub(key: str, before: str, after: str, data: st.DataObject) -> None:
    kind, form = draw_spelling(data, key)
    text = before + form + after
    read = READERS[kind]
    # The spelling is one in this text (an entity without its ";" glued to the hex digits after
    # it is another character), and the text around it holds no key of its own.
    assume(needle(kind, key) in read(text) and needle(kind, key) not in read(before + "\x00" + after))
    registry = Registry()
    registry.add(key)
    for out in (scrub(text, [key]), registry.scrub(text)):
        # A marker in place of the key (or a literal one in the text) cannot hide a spelling,
        # and cannot make one: the spellings hold no "<redacted>".
        shown = out.replace(REDACTED, "\x00")
        assert form not in shown, (kind, form, out)
        assert needle(kind, key) not in read(shown), (kind, form, out)
    assert registry.found_in(text)


@SETTINGS
@given(key=KEYS)
def test_forms_know_every_spelling(key: str) -> None:
    assert set(spellings(key)) <= forms(key)


@SETTINGS
@given(key=KEYS, before=TEXTS, after=TEXTS, data=st.data())
def test_a_key_broken_between_two_fields_leaves_no_piece(key: str, before: str, after: str, data: st.DataObject) -> None:
    """A key cut in two where one field ends and the next starts (two cells of a table, two
    attributes): each field is scrubbed alone, and neither keeps a piece of it."""
    at = data.draw(st.integers(1, len(key) - 1), label="at")
    first, second = scrub(before + key[:at], [key]), scrub(key[at:] + after, [key])
    # A field's white space at its end (or start) is no part of the piece there.
    for shown, half in ((first, key[:at].rstrip()), (second, key[at:].lstrip())):
        if len(half) >= FRAGMENT:
            assert half not in shown.replace(REDACTED, "\x00"), (half, shown)


# ---- clip: no piece, bounded length ------------------------------------------------------------


def pieces(form: str) -> set[str]:
    return {form[i : i + FRAGMENT] for i in range(len(form) - FRAGMENT + 1)}


def leaked(out: str, key: str, form: str, before: str, after: str, kind: str = "form") -> list[str]:
    """Pieces of the key (or of a spelling planted as a format writes it) in ``out``, as the
    kind's reader reads it, that the text around the key cannot have brought: not in it (white
    space collapsed, the key's place held by a NUL), not in ``<redacted>``."""
    read = READERS[kind]
    if kind == "form":
        around = read(" ".join((before + "\x00" + after).split()))
        shown = read(out.replace(REDACTED, "\x00"))
        look = pieces(needle(kind, key)) | pieces(form)
    else:  # white space read as one space, as a cut text puts it on one line
        around = " ".join(read(before + "\x00" + after).split())
        shown = " ".join(read(out.replace(REDACTED, "\x00")).split())
        look = pieces(" ".join(needle(kind, key).split()))
    return sorted(p for p in look if p in shown and p not in around and p not in read(before) and p not in read(after))


@SETTINGS
@given(key=PIECE_KEYS, before=TEXTS, after=TEXTS, keep=st.sampled_from(["start", "end"]), data=st.data())
def test_clip_never_leaves_a_piece_of_a_key(key: str, before: str, after: str, keep: str, data: st.DataObject) -> None:
    kind, form = draw_spelling(data, key)
    assume(not any(c in form for c in "<>…\x00"))
    text = before + form + after
    limit = data.draw(st.integers(1, len(text) + 2), label="limit")
    known = clip(text, limit, extra=[key], keep=keep)
    assert len(known) <= limit + len(ELLIPSIS)
    if limit > len(ELLIPSIS):
        assert len(known) <= limit
    assert not leaked(known, key, form, before, after, kind), (kind, known, leaked(known, key, form, before, after, kind))
    if kind == "split":
        return  # clip puts the text on one line: the break becomes a space no later scrub joins
    # Unknown to the clip: its ellipsis marks the cut, and a scrub that knows the key finds the piece.
    later = scrub(clip(text, limit, keep=keep), [key])
    assert not leaked(later, key, form, before, after, kind), (kind, later, leaked(later, key, form, before, after, kind))


@SETTINGS
@given(text=TEXTS, limit=st.integers(1, 200), ellipsis=st.sampled_from([ELLIPSIS, "...", " [more]"]), keep=st.sampled_from(["start", "end"]), one_line=st.booleans())
def test_clip_is_bounded_and_a_short_text_is_kept_whole(text: str, limit: int, ellipsis: str, keep: str, one_line: bool) -> None:
    out = clip(text, limit, ellipsis=ellipsis, keep=keep, one_line=one_line)
    assert len(out) <= max(limit, 1 + len(ellipsis))
    shown = " ".join(scrub(text).split()) if one_line else scrub(text)
    if len(shown) <= limit:
        assert out == shown
    else:
        assert out.startswith(ellipsis) if keep == "end" else out.endswith(ellipsis)


# ---- a pytest run: every spelling through the terminal, JUnit XML and every report -------------

RUN_KEY = "Zq7-kW9x-P4tRv"


def _cycle(key: str, styles: list[Callable[[str], str]]) -> str:
    return "".join(styles[i % len(styles)](c) for i, c in enumerate(key))


def _blob(offset: int, urlsafe: bool) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return encode(b"\xfb\xff" + b"\x00\xfe"[:offset] + RUN_KEY.encode() + b"\xff-tail").decode()


# kind (its reader), one spelling of RUN_KEY: every kind of KINDS, each style of it once.
RUN_SPELLINGS = [
    ("form", RUN_KEY),
    ("form", quote(RUN_KEY, safe="")),
    ("entities", _cycle(RUN_KEY, [lambda c: _entity(c, 0), lambda c: _entity(c, 1), lambda c: _entity(c, 2), lambda c: c])),
    ("entities", _cycle(RUN_KEY, [lambda c: _entity(c, 3) + "&#x200b;", lambda c: _entity(c, 5)])),
    ("percent", _cycle(RUN_KEY, [lambda c: _percent(c, False), lambda c: _percent(c, True)])),
    ("backslash", _cycle(RUN_KEY, [lambda c: _backslash(c, 0), lambda c: _backslash(c, 3), lambda c: _backslash(c, 4)])),
    ("base64", _blob(0, False)),
    ("base64", _blob(1, True)),
    ("base64", _blob(2, False)),
    ("case", RUN_KEY.upper()),
    ("invisible", "\u200b".join(RUN_KEY[i : i + 3] for i in range(0, len(RUN_KEY), 3)) + "\u00ad"),
    ("split", RUN_KEY[:6] + "\n" + RUN_KEY[6:]),
    ("any mix", _cycle(RUN_KEY, [str.upper, lambda c: _entity(c, 1), lambda c: _percent(c, True), lambda c: _backslash(c, 0) + "\u200d"])),
]

RUN_SUITE = """
import pytest

SPELLINGS = {spellings!r}

@pytest.mark.parametrize("n", range(len(SPELLINGS)))
def test_a_server_says(n):
    print("server said: " + SPELLINGS[n] + " (end)")
    assert False, "server said: " + SPELLINGS[n] + " (end)"
"""


class _Text(HTMLParser):
    """An HTML page's text and attribute values, as a browser shows and keeps them."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.parts += [v for _, v in attrs if v]

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(k) + _strings(v)]
    return [s for v in value for s in _strings(v)] if isinstance(value, list) else []


def run_outputs(folder: Path, terminal: str) -> dict[str, str]:
    """Each output of a run as its reader sees it: the terminal as printed, JUnit XML and the
    HTML pages parsed (entities decoded), the JSON as its strings, the Markdown unescaped."""
    out = {"terminal": terminal}
    junit = ET.parse(folder / "junit.xml").getroot()
    out["junit.xml"] = "\n".join(t for e in junit.iter() for t in (e.text, e.tail, *e.attrib.values()) if t)
    out["report.json"] = "\n".join(_strings(json.loads((folder / "report.json").read_text(encoding="utf-8"))))
    for name in ("report.md", "rendered.md"):
        out[name] = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", html.unescape((folder / name).read_text(encoding="utf-8")))
    for name in ("report.html", "rendered.html"):
        out[name] = "\n".join(_Text((folder / name).read_text(encoding="utf-8")).parts)
    return out


@pytest.mark.parametrize("part", [0, 1], ids=["first-half", "second-half"])
def test_no_spelling_of_a_key_reaches_the_terminal_junit_or_a_report(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, part: int) -> None:
    """Half the kinds a run (the Markdown lists eight failing tests): each test prints the key
    in its spelling and fails with it; the key is only known as SGLANG_API_KEY."""
    spellings = RUN_SPELLINGS[part::2]
    monkeypatch.setenv("SGLANG_API_KEY", RUN_KEY)
    pytester.makepyfile(test_spellings=RUN_SUITE.format(spellings=[s for _, s in spellings]))
    result = pytester.runpytest_subprocess(
        "-p", "no:benchmark", "-p", "no:cacheprovider", "-rA", "--sglang-allow-no-host", "--junitxml=out/junit.xml", "-o", "junit_logging=all",
        "--sglang-report-json=out/report.json", "--sglang-report-md=out/report.md", "--sglang-report-html=out/report.html",
    )  # fmt: skip
    result.assert_outcomes(failed=len(spellings))
    rendered = pytester.run("pytest-sglang", "report", "out/report.json", "--md", "out/rendered.md", "--html", "out/rendered.html")
    assert rendered.ret == 0, rendered.stderr.str()
    outputs = run_outputs(pytester.path / "out", result.stdout.str() + result.stderr.str() + rendered.stdout.str())
    for where, text in outputs.items():
        assert text.count("server said: ") >= len(spellings) or where == "terminal" and text.count("server said: ") >= 2 * len(spellings), where
        for kind, spelt in spellings:
            shown = text.replace(REDACTED, "\x00")
            assert needle(kind, RUN_KEY) not in READERS[kind](shown), (where, kind, spelt)
            assert spelt not in shown, (where, kind, spelt)
