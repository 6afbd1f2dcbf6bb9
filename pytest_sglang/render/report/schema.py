"""The JSON Schema of ``--sglang-report-json`` (``schema.json`` beside this file, draft
2020-12) and a validator for the part of JSON Schema it uses (type, enum, const, properties,
required, additionalProperties, items, minimum, oneOf, local ``$ref``), so a report can be
checked without another package::

    from pytest_sglang.render.report.schema import load_schema, validate
    problems = validate(json.load(open("sglang-report.json")))   # [] when it conforms

The problems are the first :data:`MAX_PROBLEMS` (``problems.total`` counts them all): a document
with millions of wrong values is looked at to its end, but only that many messages are kept. A
report file is read by :func:`~pytest_sglang.render.report.reading.read_report`, which checks it
as it decodes it and keeps nothing of a report that does not conform.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from itertools import islice
from typing import Any

from pytest_sglang.model.numbers import JSON_NUMBER, MAX_FIGURE, figure_faults, figure_problem, shown

# Faults of numbers JSON cannot hold kept per document: a file of a million NaNs is refused as
# quickly, and in as little memory, as one with a single NaN.
FIGURE_FAULTS_KEPT = 20

_TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}
# How many problems a check keeps; the rest are counted.
MAX_PROBLEMS = 20


class Problems(list[str]):
    """The first problems found (at most ``limit``), in order; ``total`` counts them all. A
    problem in ``skip`` (one already kept elsewhere) is neither kept nor counted."""

    def __init__(self, kept: Any = (), *, limit: int = MAX_PROBLEMS, skip: Any = frozenset()) -> None:
        super().__init__(kept)
        self.limit = limit
        self.total = len(self)
        self.skip = skip

    def append(self, problem: str) -> None:
        if problem in self.skip:
            return
        self.total += 1
        if len(self) < self.limit:
            super().append(problem)

    def extend(self, problems: Any) -> None:
        for problem in problems:
            self.append(problem)
        if isinstance(problems, Problems):
            self.total += problems.total - len(problems)  # the ones it counted without keeping


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    text = resources.files("pytest_sglang.render.report").joinpath("schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _is(kind: str, value: Any) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[kind])


def _resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref is supported, not {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return dict(node)


def _check(value: Any, schema: dict[str, Any], root: dict[str, Any], where: str, out: list[str]) -> None:
    if "$ref" in schema:
        _check(value, _resolve(root, schema["$ref"]), root, where, out)
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if _is("number", value) and ("number" in kinds or "integer" in kinds):
            # A figure is finite and in its range (at most 2^53 unless the schema says
            # otherwise): checked as every figure is where it enters the model.
            whole = "integer" in kinds and "number" not in kinds
            problem = figure_problem(value, minimum=schema.get("minimum", -MAX_FIGURE), maximum=schema.get("maximum", MAX_FIGURE), whole=whole)
            if problem is not None:
                out.append(f"{where} = {shown(value)} {problem}")
                return
        if not any(_is(kind, value) for kind in kinds):
            out.append(f"{where}: {type(value).__name__} where {' or '.join(kinds)} is expected")
            return
    if "const" in schema and value != schema["const"]:
        out.append(f"{where}: {_clipped(value)} where {schema['const']!r} is expected")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {_clipped(value)} is not one of {schema['enum']}")
    if _is("number", value) and kinds is None and "minimum" in schema:
        problem = figure_problem(value, minimum=schema["minimum"], maximum=schema.get("maximum", MAX_FIGURE))
        if problem is not None:
            out.append(f"{where} = {shown(value)} {problem}")
    if "oneOf" in schema:
        matching = 0
        near: list[str] = []
        expected: list[str] = []
        for option in schema["oneOf"]:
            problems = Problems()  # at most MAX_PROBLEMS of them kept
            _check(value, option, root, where, problems)
            matching += not problems
            kind_differs = len(problems) == 1 and problems[0].startswith(f"{where}: ") and problems[0].endswith(" is expected")
            if problems and not kind_differs and not near:
                near = problems  # the alternative of the value's own kind: its problems name the field
            if kind_differs:
                expected.append(problems[0].rsplit(" where ", 1)[-1].removesuffix(" is expected"))
        if matching == 0 and near:
            out.extend(near)
        elif matching == 0 and expected:
            out.append(f"{where}: {type(value).__name__} where {' or '.join(expected)} is expected")
        elif matching != 1:
            out.append(f"{where}: matches {matching} of the oneOf alternatives where exactly 1 is expected")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                out.append(f"{where}: {name!r} is missing")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in props:
                _check(item, props[name], root, f"{where}.{name}", out)
            elif extra is False:
                out.append(f"{where}: {name!r} is not allowed")
            elif isinstance(extra, dict):
                _check(item, extra, root, f"{where}.{name}", out)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _check(item, schema["items"], root, f"{where}[{index}]", out)


def _clipped(value: Any) -> str:
    """``repr(value)`` for a message, never the whole of a long value (a problem is kept)."""
    from pytest_sglang.base.secrets import clip

    if isinstance(value, (dict, list)) and len(value) > 8:
        return f"a {'JSON object' if isinstance(value, dict) else 'list'} of {len(value)} items"
    return clip(repr(value[:1024]) if isinstance(value, str) else repr(value), 100)


def validate(document: Any, schema: dict[str, Any] | None = None, *, limit: int = MAX_PROBLEMS) -> Problems:
    """Where ``document`` does not conform to the report schema (empty: it conforms): the first
    ``limit`` problems, in order, and ``.total``, how many there are in all."""
    root = schema if schema is not None else load_schema()
    # A number JSON cannot hold (NaN, an infinity: Python's json reads both) anywhere, typed
    # by the schema or not: a renderer never sees one.
    figures = list(dict.fromkeys(islice(figure_faults(document, "$", JSON_NUMBER, sep="."), FIGURE_FAULTS_KEPT)))
    out = Problems(figures[:limit], limit=limit, skip=set(figures))  # a check's repeat of a figure fault is left out
    out.total = len(figures)
    _check(document, root, root, "$", out)
    return out
