"""A JSON report read in memory bounded by its size: decoded and checked against the schema in
one pass, keeping nothing of a report once it is known not to conform.

``json.loads`` builds every value before anything can be checked: a 200 MB array of zeros is
800 MB of list, ``[{}, {}, ...]`` 24 bytes per byte of text, and a check that keeps every
problem adds some 140 bytes per problem. :func:`read_report` decodes the text itself, with
json's own scanner for each string, number and literal (and json itself for each stretch of a
list that holds only numbers and literals), and checks each value against its part of the
schema as it is read:

- the problems are the first :data:`~.schema.MAX_PROBLEMS`, in the order :func:`~.schema.validate`
  gives them, with the count of all of them; once there is one, no value is kept;
- the values of a report that conforms so far are kept while they take at most
  :data:`BYTES_PER_BYTE` bytes per byte of the text (past :data:`MIN_BUDGET`): a report
  pytest-sglang writes takes about 2, and one that would take more is refused in one line;
- text that is not JSON raises :class:`json.JSONDecodeError` with the message and position
  ``json.loads`` gives.

Each string, number and literal, and each part of the schema with more than types, fields and
items (const, enum, oneOf), is checked by the validator itself (``schema._check``); the object
and list rules around them are mirrored here, and a property test holds the two to the same
problems, in the same order, on every document it draws.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import Counter
from json.decoder import JSONDecodeError
from typing import Any, Callable

from pytest_sglang.render.report import schema as _schema

# The values of a report take at most this many bytes of memory per byte of its text (a report
# pytest-sglang writes takes about 2), and at least MIN_BUDGET may always be used.
BYTES_PER_BYTE = 4
MIN_BUDGET = 64 * 1024 * 1024
# A stretch of a list with only numbers, literals, commas and blanks is decoded by json.loads in
# pieces of at most this many characters.
CHUNK_CHARS = 256 * 1024

_WS = re.compile(r"[ \t\n\r]*")
_SCALARS = re.compile(r"[-+.0-9eEtrufalsn \t\n\r,]*")
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # json's own scanner (C): one value at a position
scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]  # json's own (C)
_TRAILING_COMMA = sys.version_info >= (3, 13)  # json names a trailing comma from 3.13 on
# A part of the schema with only these keywords is checked as it is read (the object and list
# rules of schema._check, mirrored here); a part with any other (const, enum, oneOf, $ref beside
# more, a keyword the validator may learn) is read whole and given to schema._check.
_STREAMED = frozenset({"type", "properties", "required", "additionalProperties", "items", "minimum", "maximum"})
_LABELS = frozenset({"description", "title", "$schema", "$id", "$defs", "$comment", "examples", "default"})


# The exact types json gives for each schema type that is checked a chunk at a time.
_EXACT_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "boolean": (bool,), "null": (type(None),), "object": (dict,), "array": (list,)}


class ReportTooLarge(ValueError):
    """The report's values would take more memory than its size allows."""


class _Node:
    """A part of the schema, with what a streamed object or list needs of it at hand."""

    __slots__ = ("schema", "stream", "kinds", "props", "required", "extra", "items", "only_type", "checks")

    def __init__(self, schema: dict[str, Any] | None, root: dict[str, Any]) -> None:
        if schema is not None:
            # A part that is only a reference (and a description) is the part it refers to.
            while "$ref" in schema and set(schema) - _LABELS == {"$ref"}:
                schema = _schema._resolve(root, schema["$ref"])
        self.schema = schema
        self.checks = schema is not None and bool(set(schema) - _LABELS)
        self.stream = schema is None or set(schema) <= _STREAMED | _LABELS
        kinds = (schema or {}).get("type")
        self.kinds: list[str] | None = None if kinds is None else [kinds] if isinstance(kinds, str) else list(kinds)
        self.props: dict[str, Any] = (schema or {}).get("properties", {})
        self.required: list[str] = (schema or {}).get("required", [])
        self.extra: Any = (schema or {}).get("additionalProperties", True)
        items = (schema or {}).get("items")
        self.items: dict[str, Any] | None = items if isinstance(items, dict) else None
        # A part that checks only the type, and no number (a figure's range is part of its
        # check): a list's items are checked against it a chunk at a time.
        self.only_type = None
        if schema is not None and set(schema) - _LABELS == {"type"} and all(kind in _EXACT_TYPES for kind in self.kinds or ()):
            self.only_type = self.kinds


class _Reader:
    def __init__(self, text: str, root: dict[str, Any], limit: int, per_byte: int) -> None:
        self.text = text
        self.root = root
        self.limit = limit
        self.per_byte = per_byte
        self.budget = max(MIN_BUDGET, per_byte * len(text))
        self.cost = 0
        self.building = True  # no problem yet: the values read are kept
        self.forced = 0  # inside a value the validator must see whole (kept for the check)
        self.memo: dict[str, str] = {}
        self.nodes: dict[int, _Node] = {}
        self.anything = _Node(None, root)
        self.figures: list[str] = []  # the first figure faults, as validate keeps them
        self.figure_set: set[str] = set()
        self.kept_figures = getattr(_schema, "FIGURE_FAULTS_KEPT", 0)
        self.figure_range = _figure_range()
        self.checks = _Sink(self)

    # ---- problems ------------------------------------------------------------------------------

    def figure(self, where: str, value: Any) -> None:
        """A number JSON cannot hold, wherever it is (validate looks at every number)."""
        if self.figure_range is None or len(self.figures) >= self.kept_figures:
            return
        fault = self.figure_range.refusal(where, value)
        if fault is not None and fault not in self.figure_set:
            self.figures.append(fault)
            self.figure_set.add(fault)
            self.building = False

    def figures_of(self, values: list[Any], types: Counter[type], where: str, start: int) -> None:
        """The figure faults of a chunk of a list, ``types`` counting its items' types."""
        if self.figure_range is None or len(self.figures) >= self.kept_figures or not (types[int] or types[float]):
            return
        if not types.keys() - {int, float, bool}:
            # Their sum is NaN or infinite when one of them is, and then each is looked at.
            low, high = self.figure_range.minimum, self.figure_range.maximum
            try:
                finite = not types[float] or math.isfinite(math.fsum(values))
            except OverflowError:  # an integer past any float
                finite = False
            if finite and (low is None or min(values) >= low) and (high is None or max(values) <= high):
                return
        for index, value in enumerate(values, start):
            if type(value) is int or type(value) is float:
                self.figure(f"{where}[{index}]", value)

    # ---- what is kept --------------------------------------------------------------------------

    def spend(self, n: int) -> None:
        self.cost += n
        if self.cost > self.budget:
            raise ReportTooLarge(
                f"its values would take more than {self.budget // (1024 * 1024)} MiB of memory, over {self.per_byte} bytes per byte of the file "
                "(a report pytest-sglang writes takes about 2): is it the right file?"
            )

    def key(self, key: str) -> str:
        known = self.memo.get(key)
        if known is not None:
            return known
        if len(self.memo) < 100_000:  # the names a report repeats; a flood of new ones is not kept
            self.memo[key] = key
        if self.keeping:
            self.spend(sys.getsizeof(key))
        return key

    # ---- decoding --------------------------------------------------------------------------------

    def node(self, schema: dict[str, Any] | None) -> _Node:
        if schema is None:
            return self.anything
        node = self.nodes.get(id(schema))
        if node is None:
            node = self.nodes[id(schema)] = _Node(schema, self.root)
        return node

    def value(self, pos: int, node: _Node | None, where: str, sink: _Sink) -> tuple[Any, int]:
        """The value at ``pos`` and the position after it. ``node`` None: a part of a value that
        does not conform (only its syntax and its numbers matter)."""
        first = self.text[pos : pos + 1]
        if first == "{" or first == "[":
            if node is not None and node.kinds is not None and ("object" if first == "{" else "array") not in node.kinds:
                sink.append(f"{where}: {'dict' if first == '{' else 'list'} where {' or '.join(node.kinds)} is expected")
                node = None
            elif node is not None and not node.stream:
                # const, enum, oneOf: the validator looks at the whole value (facts is one).
                cost = self.cost
                self.forced += 1
                try:
                    value, end = self.container(pos, self.anything, where, sink, keep=True)
                finally:
                    self.forced -= 1
                _schema._check(value, node.schema, self.root, where, sink)  # type: ignore[arg-type]
                if not self.keeping:
                    self.cost = cost  # it was held only for the check
                    value = None
                return value, end
            return self.container(pos, node, where, sink, keep=self.keeping)
        try:
            value, end = _SCAN(self.text, pos)
        except StopIteration as err:
            raise JSONDecodeError("Expecting value", self.text, err.value) from None
        if type(value) is int or type(value) is float:
            self.figure(where, value)
        if node is not None and node.checks:
            _schema._check(value, node.schema, self.root, where, sink)  # type: ignore[arg-type]
        if self.keeping:
            self.spend(_scalar_cost(value))
        return value, end

    @property
    def keeping(self) -> bool:
        return self.building or self.forced > 0

    def container(self, pos: int, node: _Node | None, where: str, sink: _Sink, *, keep: bool) -> tuple[Any, int]:
        if self.text[pos] == "{":
            return self.object(pos, node, where, sink, keep)
        return self.array(pos, node, where, sink, keep)

    def object(self, pos: int, node: _Node | None, where: str, sink: _Sink, keep: bool) -> tuple[Any, int]:
        text, ws = self.text, _WS.match
        out: dict[str, Any] | None = {} if keep else None
        mark = len(sink)  # the missing fields go here, before the members' problems
        required = node.required if node is not None else ()
        seen: set[str] = set()
        pos = ws(text, pos + 1).end()  # type: ignore[union-attr]
        if text[pos : pos + 1] != "}":
            while True:
                if text[pos : pos + 1] != '"':
                    raise JSONDecodeError("Expecting property name enclosed in double quotes", text, pos)
                key, pos = scanstring(text, pos + 1, True)
                key = self.key(key)
                pos = ws(text, pos).end()  # type: ignore[union-attr]
                if text[pos : pos + 1] != ":":
                    raise JSONDecodeError("Expecting ':' delimiter", text, pos)
                pos = ws(text, pos + 1).end()  # type: ignore[union-attr]
                child: _Node | None = None
                if node is not None:
                    if key in node.props:
                        child = self.node(node.props[key])
                    elif node.extra is False:
                        sink.append(f"{where}: {key!r} is not allowed")
                    elif isinstance(node.extra, dict):
                        child = self.node(node.extra)
                    else:
                        child = self.anything
                    if key in required:
                        seen.add(key)
                value, pos = self.value(pos, child, f"{where}.{key}", sink)
                if out is not None and self.keeping:
                    if key not in out:
                        self.spend(48)  # a dict entry, with room to grow
                    out[key] = value
                pos = ws(text, pos).end()  # type: ignore[union-attr]
                following = text[pos : pos + 1]
                if following == "}":
                    break
                if following != ",":
                    raise JSONDecodeError("Expecting ',' delimiter", text, pos)
                comma = pos
                pos = ws(text, pos + 1).end()  # type: ignore[union-attr]
                if _TRAILING_COMMA and text[pos : pos + 1] == "}":
                    raise JSONDecodeError("Illegal trailing comma before end of object", text, comma)
        if len(seen) < len(required):
            sink.missing_fields(mark, [name for name in required if name not in seen], where)
        if out is not None and self.keeping:
            self.spend(sys.getsizeof(out) - 48 * len(out))
        return (out if self.keeping else None), pos + 1

    def array(self, pos: int, node: _Node | None, where: str, sink: _Sink, keep: bool) -> tuple[Any, int]:
        text, ws = self.text, _WS.match
        out: list[Any] | None = [] if keep else None
        items = None if node is None else self.node(node.items) if node.items is not None else self.anything
        pos = ws(text, pos + 1).end()  # type: ignore[union-attr]
        if text[pos : pos + 1] == "]":
            if out is not None and self.keeping:
                self.spend(sys.getsizeof(out))
            return (out if self.keeping else None), pos + 1
        index = 0
        while True:
            if text[pos : pos + 1] in ("-", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "t", "f", "n"):
                chunk = self.scalars(pos)
                if chunk is not None:
                    values, pos = chunk
                    if _TRAILING_COMMA and text[pos : pos + 1] == "]":
                        raise JSONDecodeError("Illegal trailing comma before end of array", text, text.rfind(",", 0, pos))
                    types = Counter(map(type, values))
                    self.figures_of(values, types, where, index)
                    if items is not None and items.checks:
                        self.check_items(values, types, items, where, index, sink)
                    if out is not None and self.keeping:
                        self.spend(8 * len(values) + sum(_scalar_cost(v) for v in values))
                        out += values
                    index += len(values)
                    continue
            value, pos = self.value(pos, items, f"{where}[{index}]", sink)
            if out is not None and self.keeping:
                self.spend(8)
                out.append(value)
            index += 1
            pos = ws(text, pos).end()  # type: ignore[union-attr]
            following = text[pos : pos + 1]
            if following == "]":
                break
            if following != ",":
                raise JSONDecodeError("Expecting ',' delimiter", text, pos)
            comma = pos
            pos = ws(text, pos + 1).end()  # type: ignore[union-attr]
            if _TRAILING_COMMA and text[pos : pos + 1] == "]":
                raise JSONDecodeError("Illegal trailing comma before end of array", text, comma)
        if out is not None and self.keeping:
            self.spend(sys.getsizeof(out) - 8 * len(out))
        return (out if self.keeping else None), pos + 1

    def scalars(self, pos: int) -> tuple[list[Any], int] | None:
        """The numbers and literals of a stretch of a list from ``pos`` up to its last comma, and
        where the next item starts; None where the stretch is not plain JSON (each item is then
        read alone, which finds the fault where json finds it)."""
        text = self.text
        stretch = _SCALARS.match(text, pos, min(len(text), pos + CHUNK_CHARS)).end()  # type: ignore[union-attr]
        cut = text.rfind(",", pos, stretch)
        if cut <= pos:
            return None
        try:
            values = json.loads("[" + text[pos:cut] + "]")
        except ValueError:
            return None
        return values, _WS.match(text, cut + 1).end()  # type: ignore[union-attr]

    def check_items(self, values: list[Any], types: Counter[type], items: _Node, where: str, start: int, sink: _Sink) -> None:
        if items.only_type is not None:
            accepted = {t for kind in items.only_type for t in _EXACT_TYPES[kind]}
            wrong = len(values) - sum(n for t, n in types.items() if t in accepted)
            for index, value in enumerate(values, start):
                if not wrong:
                    return
                if type(value) not in accepted:
                    if len(sink) >= sink.limit:
                        sink.count_only(wrong)  # counted by type, no message made
                        return
                    sink.append(f"{where}[{index}]: {type(value).__name__} where {' or '.join(items.only_type)} is expected")
                    wrong -= 1
            return
        for index, value in enumerate(values, start):
            _schema._check(value, items.schema, self.root, f"{where}[{index}]", sink)  # type: ignore[arg-type]


class _Sink(_schema.Problems):
    """Problems as the validator's list holds them (the first ``limit`` kept, all counted, none
    that repeats a figure fault already kept); the first one ends the keeping of values."""

    def __init__(self, reader: _Reader) -> None:
        super().__init__(limit=reader.limit, skip=reader.figure_set)
        self.reader = reader

    def append(self, problem: str) -> None:
        if problem not in self.skip:
            self.reader.building = False
        super().append(problem)

    def missing_fields(self, at: int, missing: list[str], where: str) -> None:
        """The missing fields of the object whose problems start at ``at``: before them, as the
        validator lists them (messages made only for the ones kept)."""
        self.total += len(missing)
        self.reader.building = False
        if at < self.limit:
            self[at:at] = [f"{where}: {name!r} is missing" for name in missing[: self.limit - at]]
            del self[self.limit :]

    def count_only(self, n: int) -> None:
        """``n`` more problems, not kept (the list is full)."""
        if n:
            self.total += n
            self.reader.building = False


def _scalar_cost(value: Any) -> int:
    """Bytes json's object for ``value`` takes, the ones Python shares (small numbers, one
    character, true, false, null) aside."""
    kind = type(value)
    if kind is str:
        return 0 if len(value) <= 1 else sys.getsizeof(value)
    if kind is int:
        return 0 if -5 <= value <= 256 else sys.getsizeof(value)
    if kind is float:
        return 24
    return 0


def _figure_range() -> Any:
    """The range validate holds every number of a report to, when it holds them to one."""
    if not getattr(_schema, "FIGURE_FAULTS_KEPT", 0):
        return None
    from pytest_sglang.model.numbers import JSON_NUMBER

    return JSON_NUMBER


def read_report(text: str, *, limit: int = _schema.MAX_PROBLEMS, bytes_per_byte: int = BYTES_PER_BYTE) -> tuple[dict[str, Any] | None, _schema.Problems]:
    """The report in ``text`` and its problems: ``(document, [])`` when it conforms to the
    schema, ``(None, problems)`` otherwise (the first ``limit``, ``problems.total`` of them in
    all). Raises :class:`json.JSONDecodeError` for text that is not JSON, and
    :class:`ReportTooLarge` for a report whose values would take more than ``bytes_per_byte``
    bytes per byte of ``text`` (past :data:`MIN_BUDGET`)."""
    root = _schema.load_schema()
    reader = _Reader(text, root, limit, bytes_per_byte)
    if text.startswith("\ufeff"):
        raise JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    start = _WS.match(text).end()  # type: ignore[union-attr]
    document, end = reader.value(start, reader.node(root), "$", reader.checks)
    end = _WS.match(text, end).end()  # type: ignore[union-attr]
    if end != len(text):
        raise JSONDecodeError("Extra data", text, end)
    if reader.building:
        return document, _schema.Problems(limit=limit)
    problems = _schema.Problems(reader.figures[:limit], limit=limit)
    problems.extend(reader.checks)  # validate's order: the figure faults, then the rest
    problems.total = len(reader.figures) + reader.checks.total
    return None, problems
