"""Parsers for the lines SGLang prints at start-up.

``server_args=ServerArgs(...)`` (<= 0.5.18, a dataclass repr) and ``server_args={...}``
(0.5.19+, a dict) are read by walking Python's AST; nothing is ever evaluated. A line
that was cut or damaged still yields every field before the break, and says where it broke.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_sglang.base.errors import ParseError
from pytest_sglang.base.secrets import clip

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_START = re.compile(r"server_args=(ServerArgs\(|\{)")
# Log prefix SGLang writes: "[2026-05-20 10:11:12(.345)( DP0)( TP0)]".
_PREFIX = re.compile(r"\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)((?:\s+[A-Z_]+\d+)*)\]")
# One lexical step of a Python repr: a string (possibly unterminated at the end of the text),
# an opening or closing bracket, or a comma.
_TOKEN = re.compile(
    r"""'(?:[^'\\\n]|\\.)*(?:'|$)|"(?:[^"\\\n]|\\.)*(?:"|$)|[()\[\]{},]""",
    re.S,
)
_OPENERS = {"(": ")", "[": "]", "{": "}"}


class RawValue(str):
    """A value SGLang printed that is not a Python literal (e.g. ``<function f at 0x..>``), kept as text."""

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
        # Keep the last segment that holds the interesting text; \r\n is a plain line end.
        text = text.replace("\r\n", "\n")
        parts = text.split("\r")
        keep = [p for p in parts if "server_args=" in p or "max_total_num_tokens=" in p]
        text = keep[-1] if keep else parts[-1]
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
    head = text[: match.start()]
    line_start = head.rfind("\n") + 1
    head = head[line_start:]
    era: Literal["dataclass", "dict"] = "dataclass" if match.group(1) != "{" else "dict"
    body = text[match.end() - 1 :]
    end_of_line = body.find("\n")
    if end_of_line >= 0:
        body = body[:end_of_line]
    if _json_embedded(head):
        body = _json_unescape(body)
    timestamp = process = None
    stamps = list(_PREFIX.finditer(head))
    if stamps:
        timestamp = stamps[-1].group(1)
        process = stamps[-1].group(2).strip() or None

    result = _parse_fast(body, era) or _parse_slow(body, era)
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
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            return i
        i += 1
    return None


def _loose_unescape(body: str) -> str:
    return re.sub(r'\\(["\\/])', r"\1", body)


# --- fast path: the whole line is valid Python syntax -----------------------------------


def _parse_fast(body: str, era: str) -> StartupLine | None:
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
            if kw.arg is None:
                return None
            _store(fields, raw, kw.arg, kw.value, source)
    else:
        if not isinstance(tree, ast.Dict):
            return None
        for key, value in zip(tree.keys, tree.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
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


def _closing_index(body: str) -> int | None:
    """Index of the bracket that closes ``body[0]``; None when the text ends first."""
    depth = 0
    for tok in _TOKEN.finditer(body):
        ch = tok.group()
        if ch in _OPENERS:
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return tok.start()
    return None


# --- slow path: field by field, keeping everything before a break ----------------------

_KEY_DATACLASS = re.compile(r"\s*,?\s*([A-Za-z_]\w*)\s*=")
_PARTIAL_KEY = re.compile(r"""[A-Za-z_]\w*\s*|'(?:[^'\\]|\\.)*'?\s*|"(?:[^"\\]|\\.)*"?\s*""")
_KEY_DICT = re.compile(r"""\s*,?\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\s*:""")


def _parse_slow(body: str, era: str) -> StartupLine:
    closer = ")" if era == "dataclass" else "}"
    key_re = _KEY_DATACLASS if era == "dataclass" else _KEY_DICT
    fields: dict[str, Any] = {}
    raw: dict[str, str] = {}
    pos = 1  # after the opening bracket
    last: str | None = None

    def broken(at: int, problem: str) -> StartupLine:
        after = f"after field {last!r}" if last else "before the first field"
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
        rest = body[pos:]
        stripped = rest.lstrip(" ,")
        if not stripped.strip():
            return broken(len(body), "the line ends before the closing bracket (it was cut)")
        if stripped.startswith(closer):
            return StartupLine(fields=fields, complete=True, era=era, raw_fields=raw)  # type: ignore[arg-type]
        key_match = key_re.match(body, pos)
        if key_match is None:
            if _PARTIAL_KEY.fullmatch(stripped.rstrip()):
                return broken(len(body), "the line ends inside a field name")
            return broken(pos + len(rest) - len(stripped), "unexpected text where a field name should be")
        name = key_match.group(1)
        if era == "dict":
            try:
                name = ast.literal_eval(name)
            except (ValueError, SyntaxError):
                return broken(key_match.start(1), "a key that is not a string")
        value_start = key_match.end()
        value_end, terminated = _value_end(body, value_start)
        if not terminated or value_end is None:
            # A value running to the end of the text may itself be cut ("0.8" of "0.85"):
            # never keep it.
            return broken(value_start, f"the line ends inside the value of {name!r}")
        text = body[value_start:value_end]
        if not text.strip():
            return broken(value_start, f"field {name!r} has no value")
        _store_text(fields, raw, name, text)
        last = name
        pos = value_end


def _store_text(fields: dict[str, Any], raw: dict[str, str], name: str, text: str) -> None:
    text = text.strip()
    try:
        fields[name] = literal(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError):
        fields[name] = RawValue(text)
        raw[name] = text


def _value_end(body: str, start: int) -> tuple[int | None, bool]:
    """End of the value starting at ``start``: (index of the top-level ',' or closer, True),
    or (None, False) when the text ends first."""
    depth = 0
    for tok in _TOKEN.finditer(body, start):
        ch = tok.group()
        if ch[0] in "'\"":
            if len(ch) == 1 or ch[-1] != ch[0] or (len(ch) >= 2 and ch.endswith("\\" + ch[0]) and not ch.endswith("\\\\" + ch[0])):
                return None, False  # unterminated string: cut inside it
            continue
        if ch in _OPENERS:
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return tok.start(), True
            depth -= 1
        elif ch == "," and depth == 0:
            return tok.start(), True
    return None, False


# --- the scheduler capacity line --------------------------------------------------------

_CAPACITY = re.compile(r"max_total_num_tokens=\d+,\s*chunked_prefill_size=")
_PAIR = re.compile(r"(\w+)=([^,]+)")
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
    for key, value in _PAIR.findall(line):
        value = value.strip().rstrip('",')
        number = _NUMBER.match(value)
        if number is None:
            values[key] = value
            continue
        token = number.group()
        values[key] = float(token) if "." in token else int(token)
    stamps = list(_PREFIX.finditer(text[line_start : match.start()]))
    timestamp = stamps[-1].group(1) if stamps else None
    process = (stamps[-1].group(2).strip() or None) if stamps else None
    return CapacityLine(values=values, timestamp=timestamp, process=process)


def is_finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
