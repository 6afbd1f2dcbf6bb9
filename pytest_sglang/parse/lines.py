"""Parsers for the lines SGLang prints at start-up.

``server_args=ServerArgs(...)`` (<= 0.5.18, a dataclass repr) and ``server_args={...}``
(0.5.19+, a dict) are read by walking Python's AST; nothing is ever evaluated. A line
that was cut or damaged still yields every field before the break, and says where it broke.

Memory stays about the line's own length, whatever the line holds: a line longer than
:data:`WHOLE_LINE_CHARS` is read field by field where it lies (no copy), a value longer than
:data:`MAX_VALUE_CHARS` is kept as its first :data:`MAX_VALUE_CHARS` characters marked as cut
(a :class:`RawValue`), a value past the line's :data:`MAX_ITEMS` list items as its text, reading
stops after :data:`MAX_FIELDS` fields, and quoted text is scanned without a regular expression
that keeps a record per character. A real line is some 20 KB with about 600 fields, far below
each limit.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Literal

from pytest_sglang.base.errors import ParseError
from pytest_sglang.base.secrets import clip
from pytest_sglang.parse.quoted import quoted_end, token_end

# An OSC sequence ends at its BEL, before the next escape (a text of "\x1b]" and no BEL took
# quadratic time when the search for a BEL ran to the end from each one).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*\x07")
_START = re.compile(r"server_args=(ServerArgs\(|\{)")
# Log prefix SGLang writes: "[2026-05-20 10:11:12(.345)( DP0)( TP0)]".
# (At most 8 process tags: a pattern keeps a record per repetition, and SGLang prints up to 4.)
_PREFIX = re.compile(r"\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)((?:\s+[A-Z_]+\d+){0,8})\]")
# One lexical step of a Python repr is a string (possibly unterminated at the end of the text),
# an opening or closing bracket, or a comma (see _tokens).
_SIGNIFICANT = re.compile(r"""['"()\[\]{},]""")
_NESTED = re.compile(r"""['"()\[\]{}]""")  # inside brackets a comma changes nothing
_OPENERS = {"(": ")", "[": "]", "{": "}"}

# A line up to this long is parsed whole by Python's parser (every real line: some 20 KB), which
# takes some 300 bytes per character of a list; a longer one is read field by field.
WHOLE_LINE_CHARS = 64 * 1024
# A value longer than this is kept as its beginning, marked as cut: no field SGLang prints comes
# near it.
MAX_VALUE_CHARS = 64 * 1024
# List items, dict entries and brackets built over the whole line (a real line has some 2,000);
# the values after the budget is spent are kept as their text.
MAX_ITEMS = 100_000
# ServerArgs has some 600 fields; reading stops after this many.
MAX_FIELDS = 10_000


class RawValue(str):
    """A value SGLang printed that is not a Python literal (e.g. ``<function f at 0x..>``), kept as
    text; one longer than :data:`MAX_VALUE_CHARS` as its beginning and ``… (N characters)``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"RawValue({str.__repr__(self)})"


@dataclass
class StartupLine:
    """What :func:`parse_startup_line` found."""

    fields: dict[str, Any]
    complete: bool
    era: Literal["dataclass", "dict"]
    timestamp: str | None = None
    process: str | None = None
    broke_after: str | None = None
    broke_at: int | None = None
    problem: str | None = None
    raw_fields: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.fields)

    @property
    def server_args(self) -> Any:
        from pytest_sglang.model.config import ServerArgs

        return ServerArgs.from_mapping(self.fields)

    def describe(self) -> str:
        if self.complete:
            return f"complete {self.era} server_args line with {len(self.fields)} fields"
        return f"partial server_args line: {len(self.fields)} fields; {self.problem}"


def clean_line(text: str) -> str:
    """Drop ANSI colour codes and carriage-return residue (tqdm bars overwritten in place)."""
    text = _ANSI.sub("", text)
    if "\r" in text:
        # Keep the last segment that holds the interesting text; \r\n is a plain line end. The
        # segment is found by position, not by splitting the text into a list of every segment.
        text = text.replace("\r\n", "\n")
        at = max(text.rfind("server_args="), text.rfind("max_total_num_tokens="))
        if at < 0:
            return text[text.rfind("\r") + 1 :]
        end = text.find("\r", at)
        text = text[text.rfind("\r", 0, at) + 1 : end if end >= 0 else None]
    return text


def parse_startup_line(text: str) -> StartupLine:
    """Parse SGLang's start-up ``server_args=`` line of any era (0.5.x).

    Any prefix (timestamps, ``[... TP0]``, journald, ``service |``, ``INFO engine.py:177:``),
    ANSI codes, carriage returns and JSON-string embedding are tolerated.
    Raises :class:`ParseError` when the text holds no ``server_args=`` line at all.
    """
    text = clean_line(text)
    match = _START.search(text)
    if match is None:
        snippet = clip(text, 60, ellipsis="...")
        raise ParseError(f"no 'server_args=ServerArgs(' or 'server_args={{' in the text (starts {snippet!r})")
    # Slices of the one line, never of the text before or after it (a whole log may be given).
    head = text[text.rfind("\n", 0, match.start()) + 1 : match.start()]
    era: Literal["dataclass", "dict"] = "dataclass" if match.group(1) != "{" else "dict"
    end_of_line = text.find("\n", match.end())
    embedded = _json_embedded(head)
    if end_of_line < 0 and not embedded:
        body, base = text, match.end() - 1  # the line runs to the end of the text: read in place
    else:
        body, base = text[match.end() - 1 : end_of_line if end_of_line >= 0 else None], 0
    if embedded:
        body = _json_unescape(body)
    timestamp = process = None
    stamp: re.Match[str] | None = None
    for stamp in _PREFIX.finditer(head):
        pass  # the last one is the line's own
    if stamp is not None:
        timestamp = stamp.group(1)
        process = stamp.group(2).strip() or None

    result = _parse_fast(body[base:] if len(body) - base <= WHOLE_LINE_CHARS else "", era) or _parse_slow(body, era, base)
    result.timestamp, result.process = timestamp, process
    return result


def _json_embedded(head: str) -> bool:
    """The line was stored inside a JSON string (e.g. a harness's ``"pool_lines": [...]``)."""
    return head.lstrip().startswith('"')


def _json_unescape(body: str) -> str:
    end = _json_string_end(body)
    try:
        return json.loads('"' + body[:end] + '"') if end is not None else _loose_unescape(body)
    except ValueError:
        return _loose_unescape(body)


def _json_string_end(body: str) -> int | None:
    """The index of the first quote in ``body`` that no backslash escapes, or None."""
    pos = 0
    while True:
        quote = body.find('"', pos)
        if quote < 0:
            return None
        start = quote
        while start > pos and body[start - 1] == "\\":
            start -= 1
        if (quote - start) % 2 == 0:
            return quote
        pos = quote + 1


def _loose_unescape(body: str) -> str:
    return re.sub(r'\\(["\\/])', r"\1", body)


# --- fast path: the whole line is valid Python syntax -----------------------------------


def _parse_fast(body: str, era: str) -> StartupLine | None:
    if not body or len(body) > WHOLE_LINE_CHARS:
        return None
    end = _closing_index(body)
    if end is None:
        return None
    try:
        tree = ast.parse(body[: end + 1], mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None
    fields: dict[str, Any] = {}
    raw: dict[str, str] = {}
    source = body[: end + 1]
    if era == "dataclass":
        if not isinstance(tree, ast.Call) or tree.args:
            return None
        for kw in tree.keywords:
            if kw.arg is None or len(fields) >= MAX_FIELDS:
                return None
            _store(fields, raw, kw.arg, kw.value, source)
    else:
        if not isinstance(tree, ast.Dict):
            return None
        for key, value in zip(tree.keys, tree.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)) or len(fields) >= MAX_FIELDS:
                return None
            _store(fields, raw, key.value, value, source)
    return StartupLine(fields=fields, complete=True, era=era, raw_fields=raw)  # type: ignore[arg-type]


def _store(fields: dict[str, Any], raw: dict[str, str], name: str, node: ast.AST, source: str) -> None:
    try:
        fields[name] = literal(node)
    except ValueError:
        text = ast.get_source_segment(source, node) or ast.unparse(node)
        fields[name] = RawValue(text)
        raw[name] = text


def literal(node: ast.AST) -> Any:
    """A literal value from an AST node; nested dataclass reprs (``LoRARef(...)``,
    ``CudaGraphConfig(decode=PhaseConfig(...))``) become dicts, sets become sorted lists, so
    both log eras and ``/server_info`` JSON give the same shapes."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = literal(node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
        raise ValueError("not a number")
    if isinstance(node, (ast.List, ast.Tuple)):
        return [literal(e) for e in node.elts]
    if isinstance(node, ast.Set):
        return _sorted([literal(e) for e in node.elts])
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                raise ValueError("dict unpacking")
            key = literal(k)
            out[key if isinstance(key, (str, int, float, bool)) or key is None else str(key)] = literal(v)
        return out
    if isinstance(node, ast.Name):
        if node.id in ("inf", "nan"):
            return float(node.id)
        raise ValueError(f"name {node.id}")
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        if isinstance(node.func, ast.Name) and node.func.id == "set" and not node.args and not node.keywords:
            return []
        if not node.args and all(kw.arg for kw in node.keywords):
            return {kw.arg: literal(kw.value) for kw in node.keywords}
    raise ValueError("not a literal")


def _sorted(values: list[Any]) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=repr)


def _tokens(body: str, pos: int = 0, depth: list[int] | None = None) -> Iterator[tuple[int, int]]:
    """(start, end) of each lexical step from ``pos`` on: a bracket, a comma, or a string token
    (``'(?:[^'\\\n]|\\.)*(?:'|$)`` and its double-quoted twin, re.S): what
    ``re.finditer`` gives for their alternation, in linear time and constant memory. Commas
    are left out while the caller's ``depth[0]`` is above 0 (a list's items go by at the speed
    of one search)."""
    while True:
        found = (_NESTED if depth and depth[0] > 0 else _SIGNIFICANT).search(body, pos)
        if found is None:
            return
        start = found.start()
        if body[start] in "'\"":
            end = token_end(body, start)
            if end is None:
                pos = start + 1  # no string token here: the quote alone is skipped
                continue
        else:
            end = start + 1
        yield start, end
        pos = end


def _closing_index(body: str) -> int | None:
    """Index of the bracket that closes ``body[0]``; None when the text ends first."""
    depth = [0]
    for start, _ in _tokens(body, 0, depth):
        ch = body[start]
        if ch in _OPENERS:
            depth[0] += 1
        elif ch in ")]}":
            depth[0] -= 1
            if depth[0] == 0:
                return start
    return None


# --- slow path: field by field, keeping everything before a break ----------------------

_KEY_DATACLASS = re.compile(r"\s*,?\s*([A-Za-z_]\w*)\s*=")
_PARTIAL_KEY = re.compile(r"""[A-Za-z_]\w*\s*|'(?:[^'\\]|\\.)*'?\s*|"(?:[^"\\]|\\.)*"?\s*""")
# A partial field name is short; this many characters are matched at most (the pattern keeps a
# record per character of a quoted one).
_PARTIAL_KEY_CHARS = 4096
# A dict key, \s*,?\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\s*: as one pattern, is read in three steps (_key).
_BEFORE_KEY = re.compile(r"\s*,?\s*")
_AFTER_KEY = re.compile(r"\s*:")
_SEPARATORS = re.compile(r"[ ,]*")
_BLANK_TO_END = re.compile(r"\s*\Z")


class _Key:
    """Where a field's name and its ``=`` or ``:`` are (the match object of the old pattern)."""

    __slots__ = ("name_start", "name_end", "stop")

    def __init__(self, name_start: int, name_end: int, stop: int) -> None:
        self.name_start, self.name_end, self.stop = name_start, name_end, stop


def _key(body: str, pos: int, era: str) -> _Key | None:
    if era == "dataclass":
        match = _KEY_DATACLASS.match(body, pos)
        return _Key(match.start(1), match.end(1), match.end()) if match else None
    start = _BEFORE_KEY.match(body, pos).end()  # type: ignore[union-attr]  # it matches the empty text
    if body[start : start + 1] not in ("'", '"'):
        return None
    end = quoted_end(body, start)
    if end is None:
        return None
    colon = _AFTER_KEY.match(body, end)
    return _Key(start, end, colon.end()) if colon else None


def _parse_slow(body: str, era: str, base: int = 0) -> StartupLine:
    """Field by field from the bracket at ``body[base]`` to the end of ``body`` (positions in
    messages count from that bracket)."""
    closer = ")" if era == "dataclass" else "}"
    fields: dict[str, Any] = {}
    raw: dict[str, str] = {}
    pos = base + 1  # after the opening bracket
    last: str | None = None
    budget = [MAX_ITEMS]

    def broken(at: int, problem: str) -> StartupLine:
        after = f"after field {last!r}" if last else "before the first field"
        at -= base
        return StartupLine(
            fields=fields,
            complete=False,
            era=era,  # type: ignore[arg-type]
            broke_after=last,
            broke_at=at,
            problem=f"{problem} at character {at} ({after}); fields from there on are missing",
            raw_fields=raw,
        )

    while True:
        # Positions in the body, never a copy of the rest of it (a copy per field was quadratic).
        stripped = _SEPARATORS.match(body, pos).end()  # type: ignore[union-attr]  # it matches the empty text
        if _BLANK_TO_END.match(body, stripped):
            return broken(len(body), "the line ends before the closing bracket (it was cut)")
        if body.startswith(closer, stripped):
            return StartupLine(fields=fields, complete=True, era=era, raw_fields=raw)  # type: ignore[arg-type]
        if len(fields) >= MAX_FIELDS:
            return broken(stripped, f"more than {MAX_FIELDS} fields (SGLang prints some 600)")
        key_match = _key(body, pos, era)
        if key_match is None:
            end = len(body.rstrip())
            if end - stripped <= _PARTIAL_KEY_CHARS and _PARTIAL_KEY.fullmatch(body, stripped, end):
                return broken(len(body), "the line ends inside a field name")
            return broken(stripped, "unexpected text where a field name should be")
        name = body[key_match.name_start : key_match.name_end]
        if era == "dict":
            try:
                name = ast.literal_eval(name)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return broken(key_match.name_start, "a key that is not a string")
        value_start = key_match.stop
        value_end, terminated = _value_end(body, value_start)
        if not terminated or value_end is None:
            # A value running to the end of the text may itself be cut ("0.8" of "0.85"):
            # never keep it.
            return broken(value_start, f"the line ends inside the value of {name!r}")
        start, end = _stripped(body, value_start, value_end)
        if start == end:
            return broken(value_start, f"field {name!r} has no value")
        _store_text(fields, raw, name, body, start, end, budget)
        last = name
        pos = value_end


def _stripped(body: str, start: int, end: int) -> tuple[int, int]:
    """``start`` and ``end`` moved past the whitespace at both ends of ``body[start:end]``."""
    start = _SPACE.match(body, start, end).end()  # type: ignore[union-attr]  # it matches the empty text
    while end > start and body[end - 1].isspace():
        end -= 1
    return start, end


_SPACE = re.compile(r"\s*")


def _store_text(fields: dict[str, Any], raw: dict[str, str], name: str, body: str, start: int, end: int, budget: list[int]) -> None:
    # Python's parser takes some 300 bytes per character of a list: a value past the limits is
    # not given to it (the items counted are commas and brackets, in strings too: an upper bound).
    if end - start > MAX_VALUE_CHARS:
        # Its beginning, marked as cut: no field SGLang prints is this long.
        fields[name] = raw[name] = RawValue(f"{body[start : start + MAX_VALUE_CHARS]}… ({end - start} characters)")
        return
    items = sum(body.count(c, start, end) for c in ",[({")
    if items > budget[0]:
        fields[name] = raw[name] = RawValue(body[start:end])
        return
    budget[0] -= items
    text = body[start:end]
    try:
        fields[name] = literal(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        fields[name] = RawValue(text)
        raw[name] = text


def _value_end(body: str, start: int) -> tuple[int | None, bool]:
    """End of the value starting at ``start``: (index of the top-level ',' or closer, True),
    or (None, False) when the text ends first."""
    depth = [0]
    for begin, end in _tokens(body, start, depth):
        ch = body[begin]
        if ch in "'\"":
            if end - begin == 1 or body[end - 1] != ch or (body.endswith("\\" + ch, begin, end) and not body.endswith("\\\\" + ch, begin, end)):
                return None, False  # unterminated string: cut inside it
            continue
        if ch in _OPENERS:
            depth[0] += 1
        elif ch in ")]}":
            if depth[0] == 0:
                return begin, True
            depth[0] -= 1
        elif ch == "," and depth[0] == 0:
            return begin, True
    return None, False


# --- the scheduler capacity line --------------------------------------------------------

_CAPACITY = re.compile(r"max_total_num_tokens=\d+,\s*chunked_prefill_size=")
_PAIR = re.compile(r"(\w+)=([^,]+)")
_MAX_PAIRS = 64  # SGLang prints 5 to 8; a longer line is read that far
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?")


@dataclass
class CapacityLine:
    """``max_total_num_tokens=…, chunked_prefill_size=…, max_prefill_tokens=…, max_running_requests=…, context_len=…``."""

    values: dict[str, Any]
    timestamp: str | None = None
    process: str | None = None

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


def parse_capacity_line(text: str) -> CapacityLine:
    """Parse the scheduler's capacity summary line (TP rank 0 prints it after sizing pools)."""
    text = clean_line(text)
    match = _CAPACITY.search(text)
    if match is None:
        raise ParseError("no scheduler capacity line ('max_total_num_tokens=..., chunked_prefill_size=...') in the text")
    line_start = text.rfind("\n", 0, match.start()) + 1
    line_end = text.find("\n", match.start())
    line = text[match.start() : line_end if line_end >= 0 else None]
    values: dict[str, Any] = {}
    for pair in itertools.islice(_PAIR.finditer(line), _MAX_PAIRS):
        key, value = pair.groups()
        value = value.strip().rstrip('",')
        number = _NUMBER.match(value)
        if number is None:
            values[key] = value
            continue
        token = number.group()
        values[key] = float(token) if "." in token else int(token)
    stamp: re.Match[str] | None = None
    for stamp in _PREFIX.finditer(text, line_start, match.start()):
        pass  # the last one is the line's own
    timestamp = stamp.group(1) if stamp else None
    process = (stamp.group(2).strip() or None) if stamp else None
    return CapacityLine(values=values, timestamp=timestamp, process=process)


def is_finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
