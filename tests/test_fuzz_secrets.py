"""Fuzz tier: keys of any shape, texts of any shape, cuts anywhere.

Hypothesis makes the keys (printable and not, quotes, ampersands, angle brackets, spaces,
unicode) and the texts around them. Whatever it makes:

- no spelling of the key survives :func:`~pytest_sglang.base.secrets.scrub` (raw, stripped, white
  space collapsed, HTML-escaped every way, URL-encoded, JSON, ``repr``, shell-quoted);
- :func:`~pytest_sglang.base.secrets.clip` never leaves a piece of 6 characters or more of the key
  (or of any of its spellings), whether the key is known to the clip or only to a scrub after
  it, at either end, at any limit;
- its result is at most ``limit + len(ellipsis)`` characters (at most ``limit`` once the limit
  leaves room for a character and the ellipsis).

A fixed set of examples (derandomized, no deadline); a deeper, random search:
``ODD_VALUES_EXAMPLES=5000 pytest tests/test_fuzz_secrets.py``.
"""

from __future__ import annotations

import html
import json
import shlex
from urllib.parse import quote, quote_plus

import pytest

from pytest_sglang.base.secrets import ELLIPSIS, REDACTED, Registry, clip, forms, scrub
from support import property_settings

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


def spellings(key: str) -> list[str]:
    """Every way a key is spelt in text, made here independently of the package's forms()."""
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


def pieces(form: str) -> set[str]:
    return {form[i : i + FRAGMENT] for i in range(len(form) - FRAGMENT + 1)}


def leaked(out: str, key: str, form: str, before: str, after: str) -> list[str]:
    """Pieces of the key (or of the spelling planted) in ``out`` that the text around the key
    cannot have brought: not in it (white space collapsed, the key's place held by a NUL), not
    in ``<redacted>``."""
    around = " ".join((before + "\x00" + after).split())
    return sorted(p for p in pieces(key) | pieces(form) if p in out and p not in around and p not in REDACTED and p not in before and p not in after)


# ---- scrub: no spelling survives ----------------------------------------------------------------


@SETTINGS
@given(key=KEYS, before=TEXTS, after=TEXTS, data=st.data())
def test_no_spelling_of_a_key_survives_scrub(key: str, before: str, after: str, data: st.DataObject) -> None:
    form = data.draw(st.sampled_from(spellings(key)), label="spelling")
    text = before + form + after
    registry = Registry()
    registry.add(key)
    for out in (scrub(text, [key]), registry.scrub(text)):
        # A marker in place of the key (or a literal one in the text) cannot hide a spelling,
        # and cannot make one: the spellings hold no "<redacted>".
        assert form not in out.replace(REDACTED, "\x00"), (form, out)
    assert registry.found_in(text)


@SETTINGS
@given(key=KEYS)
def test_forms_know_every_spelling(key: str) -> None:
    assert set(spellings(key)) <= forms(key)


# ---- clip: no piece, bounded length ------------------------------------------------------------


@SETTINGS
@given(key=PIECE_KEYS, before=TEXTS, after=TEXTS, keep=st.sampled_from(["start", "end"]), data=st.data())
def test_clip_never_leaves_a_piece_of_a_key(key: str, before: str, after: str, keep: str, data: st.DataObject) -> None:
    form = data.draw(st.sampled_from([s for s in spellings(key) if not any(c in s for c in "<>…\x00")] or [key]), label="spelling")
    text = before + form + after
    limit = data.draw(st.integers(1, len(text) + 2), label="limit")
    known = clip(text, limit, extra=[key], keep=keep)
    assert len(known) <= limit + len(ELLIPSIS)
    if limit > len(ELLIPSIS):
        assert len(known) <= limit
    assert not leaked(known, key, form, before, after), (known, leaked(known, key, form, before, after))
    # Unknown to the clip: its ellipsis marks the cut, and a scrub that knows the key finds the piece.
    later = scrub(clip(text, limit, keep=keep), [key])
    assert not leaked(later, key, form, before, after), (later, leaked(later, key, form, before, after))


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
