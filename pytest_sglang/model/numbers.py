"""Figures from outside (a server's answers, a result file, a JSON report), checked where they
enter the typed model: a number, finite, and in the range the figure can have. One function
decides, so every boundary says the same thing about the same value::

    figure_problem(float("nan"))                                -> "is not a finite number"
    refusal("/metrics sglang:num_running_reqs", float("nan"))
        -> "/metrics sglang:num_running_reqs = NaN is not a finite number"

The field types (:data:`Figure`, :data:`NonNegativeFigure`, :data:`Count`, :data:`Fraction`)
apply that check to a model's fields; :func:`refusals` turns a model's ``ValidationError`` into
the same lines, and :func:`validate_refusing` builds a model with each refused figure left at
its default and named. Nothing past this boundary (statistics, verdicts, renderers) ever holds
NaN, an infinity, or a number no float holds exactly.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar, get_args

from pydantic import BaseModel, BeforeValidator, ValidationError
from pydantic_core import PydanticCustomError

from pytest_sglang.base.secrets import clip

# The largest whole number a float holds exactly. No figure a server or a benchmark gives is
# larger (2^53 tokens, requests or milliseconds); one that is comes from a broken or hostile
# source, and statistics over it would round, overflow or print in exponent form.
MAX_FIGURE = 2**53
_LIMIT_TEXT: dict[float, str] = {MAX_FIGURE: "2^53", -MAX_FIGURE: "-2^53"}
_DIGITS_SHOWN = 24


def shown(value: object) -> str:
    """A value as a fault line names it: ``NaN``, ``+Inf``, ``1e+308``, ``'abc'``, ``-1``, and
    ``10**400`` as ``a number of 401 digits`` (never the digits)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "+Inf" if value > 0 else "-Inf"
        return repr(value) if abs(value) < 1e16 else f"{value:g}"
    if isinstance(value, int):
        digits = len(str(abs(value))) if value.bit_length() < 14000 else None  # str() refuses past ~4300 digits
        if digits is None or digits > _DIGITS_SHOWN:
            about = f"{digits}" if digits is not None else f"about {int(value.bit_length() * 0.30103) + 1}"
            return f"{'-' if value < 0 else ''}a number of {about} digits"
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, str):
        return repr(clip(value, 40, ellipsis="..."))
    return f"a JSON {'list' if isinstance(value, (list, tuple)) else 'object' if isinstance(value, dict) else type(value).__name__}"


def _limit(number: float) -> str:
    if number in _LIMIT_TEXT:
        return _LIMIT_TEXT[number]
    return f"{number:g}" if isinstance(number, float) else str(number)


def figure_problem(value: object, *, minimum: float | None = None, maximum: float | None = MAX_FIGURE, whole: bool = False) -> str | None:
    """Why ``value`` cannot be a figure in ``[minimum, maximum]`` (a whole one when ``whole``),
    or None when it can. A bool is no figure; neither is a string that spells one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "is not a number"
    if isinstance(value, float) and not math.isfinite(value):
        return "is not a finite number"
    if whole and isinstance(value, float) and not value.is_integer():
        return "is not a whole number"
    if minimum is not None and value < minimum:
        return f"is below {_limit(minimum)}"
    if maximum is not None and value > maximum:
        return f"is above {_limit(maximum)}"
    return None


def refusal(field: str, value: object, *, minimum: float | None = None, maximum: float | None = MAX_FIGURE, whole: bool = False) -> str | None:
    """The one-line fault for a figure that is refused (``FIELD = VALUE PROBLEM``), or None."""
    problem = figure_problem(value, minimum=minimum, maximum=maximum, whole=whole)
    return None if problem is None else f"{field} = {shown(value)} {problem}"


@dataclass(frozen=True)
class FigureRange:
    """A model field's range, checked on the value as given (before pydantic converts it): a
    string that spells a number is refused too, since no source this package reads writes one."""

    minimum: float | None = None
    maximum: float | None = MAX_FIGURE
    whole: bool = False

    def __call__(self, value: Any) -> Any:
        problem = figure_problem(value, minimum=self.minimum, maximum=self.maximum, whole=self.whole)
        if problem is not None:
            raise PydanticCustomError("figure", "{problem}", {"problem": problem})
        return int(value) if self.whole else float(value)

    def refusal(self, field: str, value: object) -> str | None:
        """The fault line for ``value`` as this field, or None when it is in range."""
        return refusal(field, value, minimum=self.minimum, maximum=self.maximum, whole=self.whole)


FIGURE = FigureRange(minimum=-MAX_FIGURE)
NON_NEGATIVE = FigureRange(minimum=0)
FRACTION = FigureRange(minimum=0, maximum=1)
COUNT = FigureRange(minimum=0, whole=True)

# What a JSON document (and JavaScript, which reads the HTML report's data) can hold as a number.
JSON_NUMBER = FigureRange(minimum=-1e308, maximum=1e308)

Figure = Annotated[float, BeforeValidator(FIGURE)]
NonNegativeFigure = Annotated[float, BeforeValidator(NON_NEGATIVE)]
Fraction = Annotated[float, BeforeValidator(FRACTION)]
Count = Annotated[int, BeforeValidator(COUNT)]


def field_range(model: type[BaseModel], name: str) -> FigureRange | None:
    """The range a model declares for a field (through the types above), or None."""
    info = model.model_fields.get(name)
    if info is None:
        return None
    candidates: list[Any] = [info.annotation, *get_args(info.annotation)]
    metadata = list(info.metadata) + [m for c in candidates for m in getattr(c, "__metadata__", ())]
    for meta in metadata:
        if isinstance(meta, BeforeValidator) and isinstance(meta.func, FigureRange):
            return meta.func
    return None


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def refusals(exc: ValidationError, where: str = "") -> list[str]:
    """A model's validation errors as fault lines, each naming the field and the value:
    ``WHERE FIELD = VALUE PROBLEM`` for a figure, ``WHERE FIELD: MESSAGE`` for anything else."""
    out: list[str] = []
    for error in exc.errors(include_url=False):
        field = " ".join(p for p in (where, _where(tuple(error["loc"]))) if p) or "the value"
        if error["type"] == "figure":
            out.append(f"{field} = {shown(error.get('input'))} {error['ctx']['problem']}")
        else:
            out.append(f"{field}: {' '.join(str(error['msg']).split())}")
    return out


M = TypeVar("M", bound=BaseModel)
_MAX_PASSES = 64


def _drop(data: Any, loc: tuple[int | str, ...]) -> bool:
    """Remove what ``loc`` names from nested dicts (a list's item: the whole list, which the
    model then holds at its default); False when nothing could be removed."""
    node = data
    for depth, part in enumerate(loc):
        if not isinstance(node, dict) or part not in node:
            return False
        if depth == len(loc) - 1 or not isinstance(node[part], dict):
            del node[part]
            return True
        node = node[part]
    return False


def validate_refusing(cls: type[M], data: dict[str, Any], where: str = "") -> tuple[M, list[str]]:
    """``cls`` built from ``data`` with every figure it refuses left at its default, and the
    fault lines naming each one. Used where one bad figure must not cost the rest (a level's
    other figures stay). Raises ``ValidationError`` only for a field that has no default."""
    data = _copy(data)
    found: list[str] = []
    for _ in range(_MAX_PASSES):
        try:
            return cls.model_validate(data), found
        except ValidationError as exc:
            found += refusals(exc, where)
            if not any(_drop(data, tuple(error["loc"])) for error in exc.errors(include_url=False)):
                raise
    return cls.model_validate(data), found


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value


def figure_faults(value: Any, where: str, checks: FigureRange | None = FIGURE, *, sep: str = " ") -> Iterator[str]:
    """The fault line of each number in a JSON-like value that ``checks`` refuses, in document
    order, without copying it and without recursion: a path is spelled only for a fault, so a
    report of millions of numbers costs no more memory than it holds."""
    ranges = checks or FigureRange(maximum=None)

    def spelled(parent: str, key: Any) -> str:
        if isinstance(key, int):
            return f"{parent}[{key}]"
        return f"{parent}{sep if parent == where else '.'}{key}"

    def children(node: Any) -> Iterator[tuple[Any, Any]]:
        return iter(node.items()) if isinstance(node, dict) else enumerate(node)

    if isinstance(value, (dict, list, tuple)):
        stack: list[tuple[str, Iterator[tuple[Any, Any]]]] = [(where, children(value))]
    else:
        fault = ranges.refusal(where, value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if fault is not None:
            yield fault
        return
    low = -math.inf if ranges.minimum is None else ranges.minimum
    high = math.inf if ranges.maximum is None else ranges.maximum
    while stack:
        parent, items = stack[-1]
        for key, node in items:
            kind = type(node)
            if kind is int:  # the common cases first, without a call: a report holds millions
                if low <= node <= high:
                    continue
            elif kind is float:
                if low <= node <= high and node - node == 0.0 and not (ranges.whole and not node.is_integer()):
                    continue
            elif kind is dict or kind is list or kind is tuple:
                stack.append((spelled(parent, key), children(node)))
                break
            elif kind is bool or not isinstance(node, (int, float)):
                continue
            fault = ranges.refusal(spelled(parent, key), node)
            if fault is not None:
                yield fault
        else:
            stack.pop()


def checked_copy(value: Any, where: str, checks: FigureRange | None = FIGURE, *, sep: str = " ") -> tuple[Any, list[str]]:
    """A copy of a JSON-like value with every number ``checks`` refuses replaced by null, and
    the fault line of each (``/server_info internal_states[0].max_running_requests = NaN is not
    a finite number``). ``checks=None`` refuses only what JSON cannot hold (NaN, infinities);
    ``sep`` comes between ``where`` and a top-level key."""
    found: list[str] = []
    ranges = checks or FigureRange(maximum=None)

    def walk(node: Any, path: str) -> Any:
        if isinstance(node, (int, float)) and not isinstance(node, bool):
            fault = ranges.refusal(path, node)
            if fault is not None:
                found.append(fault)
                return None
            return node
        if isinstance(node, dict):
            return {k: walk(v, f"{path}.{k}" if path != where else f"{path}{sep}{k}") for k, v in node.items()}
        if isinstance(node, (list, tuple)):
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(node)]
        return node

    return walk(value, where), found
