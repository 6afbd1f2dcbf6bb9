"""Known secrets and the one scrubber every outgoing string passes through.

Two layers keep a key out of what pytest-sglang prints or writes:

- objects that hold a secret never show it: :class:`Secret` is a ``str`` whose ``repr`` is
  ``'<redacted>'``, so dataclass reprs, ``pytest -l`` locals and assertion introspection of a
  value that *is* the key show nothing;
- every string that leaves the plugin (errors, report sections, failure text, headers, files)
  goes through :func:`scrub`, which removes every registered secret in every form it can take
  on the way out: raw, ``repr``-escaped, JSON-escaped, URL-encoded, and inside an
  ``Authorization`` header. Secrets are registered where they enter: the user's api keys when
  options are read, and the values the redactor removes from server answers and launch commands.
"""

from __future__ import annotations

import json
import re
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterable, Iterator
from urllib.parse import quote, quote_plus

REDACTED = "<redacted>"
# Shorter values are not scrubbed from free text: a two-character "key" would eat ordinary words.
MIN_LENGTH = 4


class Secret(str):
    """A string that is a credential: usable as a ``str``, never shown by ``repr``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"'{REDACTED}'"


def forms(value: str) -> set[str]:
    """The spellings a secret takes in text: raw, stripped, escaped, encoded."""
    out = set()
    for v in {value, value.strip()}:
        if len(v) < MIN_LENGTH:
            continue
        out.add(v)
        out.add(str.__repr__(v)[1:-1])  # repr-escaped (\r, \t, non-printables, quotes)
        out.add(json.dumps(v)[1:-1])  # JSON-escaped
        out.add(json.dumps(v, ensure_ascii=False)[1:-1])
        out.add(quote(v, safe=""))
        out.add(quote_plus(v))
        out.add(v.encode("unicode_escape").decode("ascii", "replace"))
    return {f for f in out if len(f) >= MIN_LENGTH}


class Registry:
    """The secrets known in this process, and a scrubber built from them."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()

    def add(self, *values: Any) -> None:
        fresh = {str.__str__(v) for v in values if isinstance(v, str) and len(v.strip()) >= MIN_LENGTH and REDACTED not in v} - self._values
        if not fresh:
            return
        with self._lock:
            self._values |= fresh
            every = set().union(*(forms(v) for v in self._values))
            # Longest first, so a form that contains another is replaced whole.
            self._pattern = re.compile("|".join(re.escape(f) for f in sorted(every, key=len, reverse=True)))

    def __contains__(self, value: object) -> bool:
        return value in self._values

    def __len__(self) -> int:
        return len(self._values)

    def scrub(self, text: str) -> str:
        pattern = self._pattern
        if pattern is None or not text:
            return text
        return pattern.sub(REDACTED, text)

    def found_in(self, text: str) -> bool:
        pattern = self._pattern
        return bool(pattern is not None and text and pattern.search(text))


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
    """``text`` with every registered secret (and ``extra`` ones) replaced by ``<redacted>``."""
    text = SECRETS.scrub(text)
    for value in extra:
        for form in sorted(forms(value), key=len, reverse=True):
            text = text.replace(form, REDACTED)
    return text


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


def checked_api_key(api_key: str | None, where: str) -> Secret | None:
    """The key as it will be sent, or a one-line error that names the problem, never the key.

    Surrounding white space (a key file's trailing newline or ``\\r``) is dropped; a character
    an HTTP header cannot carry (outside Latin-1, or a control character) is refused."""
    from .errors import SpecError

    if api_key is None:
        return None
    register(api_key)
    key = api_key.strip()
    if not key:
        return None
    for position, char in enumerate(key, 1):
        code = ord(char)
        if code > 255 or code < 32 or code == 127:
            kind = "a control character" if code < 32 or code == 127 else "a character outside Latin-1"
            raise SpecError(
                f"the api key for {where} has {kind} at position {position}, which an HTTP header cannot carry: "
                "check the key (a copy-paste may have brought a typographic character)"
            )
    return Secret(key)
