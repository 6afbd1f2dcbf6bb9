"""The JSON Schema of ``--sglang-report-json`` (``schema.json`` beside this file, draft
2020-12) and a validator for the part of JSON Schema it uses (type, enum, const, properties,
required, additionalProperties, items, minimum, oneOf, local ``$ref``), so a report can be
checked without another package::

    from pytest_sglang.render.report.schema import load_schema, validate
    problems = validate(json.load(open("sglang-report.json")))   # [] when it conforms
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

_TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


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
        if not any(_is(kind, value) for kind in kinds):
            out.append(f"{where}: {type(value).__name__} where {' or '.join(kinds)} is expected")
            return
    if "const" in schema and value != schema["const"]:
        out.append(f"{where}: {value!r} where {schema['const']!r} is expected")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and _is("number", value) and value < schema["minimum"]:
        out.append(f"{where}: {value!r} is below {schema['minimum']}")
    if "oneOf" in schema:
        matching = 0
        for option in schema["oneOf"]:
            problems: list[str] = []
            _check(value, option, root, where, problems)
            matching += not problems
        if matching != 1:
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


def validate(document: Any, schema: dict[str, Any] | None = None) -> list[str]:
    """Where ``document`` does not conform to the report schema (empty: it conforms)."""
    root = schema if schema is not None else load_schema()
    out: list[str] = []
    _check(document, root, root, "$", out)
    return out
