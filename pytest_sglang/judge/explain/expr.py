"""The small expression language the knowledge base writes conditions and values in.

A condition is one Python expression over named facts, for example::

    arg.tp_size > 1 and gpu.sm in (90, 100) and model.arch in list.allreduce_fusion_archs

It is parsed once, when the knowledge base loads, into a tree of closures; only the nodes
below are allowed (no attribute access on values, no calls but the few functions named in
``FUNCTIONS``), so a rule file cannot run code.

Facts may be *unknown* (no launch command, no GPU facts...). Evaluation is three-valued: an
unknown fact makes a comparison unknown, but ``False and <unknown>`` is False and
``True or <unknown>`` is True, so a rule that cannot apply stays silent and only a rule that
could apply reports which facts it lacks.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping


@dataclass(frozen=True)
class Unknown:
    """A value that could not be known, and the facts it needs."""

    needs: frozenset[str]

    def __or__(self, other: Unknown) -> Unknown:
        return Unknown(self.needs | other.needs)

    def __bool__(self) -> bool:  # never silently truthy or falsy
        raise TypeError("an unknown value has no truth value")

    def __repr__(self) -> str:
        return f"Unknown({', '.join(sorted(self.needs))})"


def is_unknown(value: Any) -> bool:
    return isinstance(value, Unknown)


def _merge(values: Iterable[Any]) -> Unknown | None:
    needs: set[str] = set()
    for value in values:
        if isinstance(value, Unknown):
            needs |= value.needs
    return Unknown(frozenset(needs)) if needs else None


class Scope:
    """What an expression reads: ``lookup('gpu.sm')`` returns a value or :class:`Unknown`."""

    def lookup(self, name: str) -> Any:  # pragma: no cover - interface
        raise NotImplementedError


class ExpressionError(ValueError):
    """A rule's expression uses something the language does not allow."""


def _tier(value: Any, bounds: list[Any], values: list[Any]) -> Any:
    """``values[i]`` for the first ``bounds[i]`` that ``value`` is below; the last value otherwise."""
    if len(values) != len(bounds) + 1:
        raise ExpressionError("tier(x, bounds, values) needs one more value than bounds")
    for bound, result in zip(bounds, values):
        if value < bound:
            return result
    return values[-1]


def _clamp(value: Any, low: Any, high: Any) -> Any:
    return max(low, min(high, value))


def _lower(value: Any) -> Any:
    """A string in lower case (an environment variable's value, which SGLang reads case-blind);
    anything else, None included, as it is."""
    return value.lower() if isinstance(value, str) else value


_STEPS_LIMIT = 4096  # items a steps() list may hold: SGLang's capture lists hold a few hundred


def _steps(start: Any, stop: Any, step: Any = 1) -> list[Any]:
    """The integers from ``start`` below ``stop`` by ``step`` (Python's ``range``, as a list):
    how SGLang writes its CUDA graph capture sizes."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, stop, step)) or step <= 0:
        raise ExpressionError("steps(start, stop, step) takes whole numbers and a positive step")
    if (stop - start) // step > _STEPS_LIMIT:
        raise ExpressionError(f"steps() would hold more than {_STEPS_LIMIT} values")
    return list(range(start, stop, step))


def _upto(values: Any, limit: Any) -> list[Any]:
    """The items of a list that are at most ``limit``, in order."""
    return [v for v in values if v <= limit]


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "floor": math.floor,
    "round": round,
    "int": int,
    "len": len,
    "abs": abs,
    "tier": _tier,
    "clamp": _clamp,
    "lower": _lower,
    "steps": _steps,
    "upto": _upto,
}
# Functions whose meaning depends on the scope (rule outcomes, whether a flag was given).
SCOPE_FUNCTIONS = frozenset({"fired", "given"})

def _add(a: Any, b: Any) -> Any:
    """``+``; a list written in a rule (a tuple) joins a list a function gave (a list)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and type(a) is not type(b):
        return [*a, *b]
    return a + b


_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: _add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_CMPOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}

Evaluator = Callable[[Scope], Any]


NOT_COMPUTABLE = "a value of the expected type"
"""What an :class:`Unknown` needs when every fact it read was there but the expression cannot
be computed from them (``None // 2``): no fact to ask for."""


@dataclass(frozen=True)
class Expression:
    """A compiled expression: its text, the facts it names, and how to evaluate it."""

    text: str
    names: frozenset[str]
    rules: frozenset[str]
    _run: Evaluator

    def evaluate(self, scope: Scope) -> Any:
        try:
            return self._run(scope)
        except (TypeError, ValueError, ZeroDivisionError, KeyError):
            # A fact of an unexpected type (a server that reports tp_size='four'): the
            # expression cannot be decided from it, which is what unknown means.
            # No fact is missing, so none is named: giving one would not decide it.
            return Unknown(frozenset({NOT_COMPUTABLE}))

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"


def compile_expression(text: str, *, known_roots: Iterable[str] = ()) -> Expression:
    """Parse ``text`` once; raise :class:`ExpressionError` naming what is not allowed."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"{text!r} is not an expression: {exc.msg}") from None
    names: set[str] = set()
    rules: set[str] = set()
    roots = frozenset(known_roots)
    run = _compile(tree.body, text, names, rules, roots)
    return Expression(text=text, names=frozenset(names), rules=frozenset(rules), _run=run)


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _compile(node: ast.AST, text: str, names: set[str], rules: set[str], roots: frozenset[str]) -> Evaluator:
    def sub(child: ast.AST) -> Evaluator:
        return _compile(child, text, names, rules, roots)

    if isinstance(node, ast.Constant):
        value = node.value
        return lambda scope: value
    if isinstance(node, (ast.Name, ast.Attribute)):
        name = _dotted(node)
        if name is None:
            raise ExpressionError(f"{text!r}: only dotted fact names may be read, not {ast.unparse(node)!r}")
        if name in ("None", "True", "False"):
            constant = {"None": None, "True": True, "False": False}[name]
            return lambda scope: constant
        if any(part.startswith("_") for part in name.split(".")):
            raise ExpressionError(f"{text!r}: {name!r} is not a fact name")
        root = name.split(".", 1)[0]
        if roots and root not in roots:
            raise ExpressionError(f"{text!r}: {name!r} is not a fact (facts start with {', '.join(sorted(roots))})")
        names.add(name)
        return lambda scope: scope.lookup(name)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [sub(e) for e in node.elts]

        def seq(scope: Scope) -> Any:
            values = [f(scope) for f in items]
            unknown = _merge(values)
            return unknown if unknown is not None else tuple(values)

        return seq
    if isinstance(node, ast.BoolOp):
        parts = [sub(v) for v in node.values]
        if isinstance(node.op, ast.And):
            return lambda scope: _and(parts, scope)
        return lambda scope: _or(parts, scope)
    if isinstance(node, ast.UnaryOp):
        operand = sub(node.operand)
        if isinstance(node.op, ast.Not):

            def negate(scope: Scope) -> Any:
                value = operand(scope)
                return value if is_unknown(value) else not value

            return negate
        if isinstance(node.op, ast.USub):

            def minus(scope: Scope) -> Any:
                value = operand(scope)
                return value if is_unknown(value) else -value

            return minus
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        op = _BINOPS[type(node.op)]
        left, right = sub(node.left), sub(node.right)

        def binop(scope: Scope) -> Any:
            a, b = left(scope), right(scope)
            unknown = _merge((a, b))
            return unknown if unknown is not None else op(a, b)

        return binop
    if isinstance(node, ast.Compare) and all(type(o) in _CMPOPS for o in node.ops):
        first = sub(node.left)
        ops = [_CMPOPS[type(o)] for o in node.ops]
        rest = [sub(c) for c in node.comparators]

        def compare(scope: Scope) -> Any:
            left_value = first(scope)
            outcome: Any = True
            for op, right in zip(ops, rest):
                right_value = right(scope)
                unknown = _merge((left_value, right_value))
                if unknown is not None:
                    outcome = unknown if outcome is True else (outcome | unknown if is_unknown(outcome) else outcome)
                elif not op(left_value, right_value):
                    return False
                left_value = right_value
            return outcome

        return compare
    if isinstance(node, ast.IfExp):
        test, body, orelse = sub(node.test), sub(node.body), sub(node.orelse)

        def choose(scope: Scope) -> Any:
            cond = test(scope)
            if is_unknown(cond):
                a, b = body(scope), orelse(scope)
                return a if not is_unknown(a) and not is_unknown(b) and a == b else cond
            return body(scope) if cond else orelse(scope)

        return choose
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        fname = node.func.id
        if fname in SCOPE_FUNCTIONS:
            if len(node.args) != 1 or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
                raise ExpressionError(f"{text!r}: {fname}() takes one quoted name, e.g. {fname}('pcg.multimodal')")
            arg = node.args[0].value
            key = f"{fname}:{arg}"
            if fname == "fired":
                rules.add(arg)
            else:
                names.add(f"requested.{arg}")
            return lambda scope: scope.lookup(key)
        if fname in FUNCTIONS:
            func = FUNCTIONS[fname]
            args = [sub(a) for a in node.args]

            def call(scope: Scope) -> Any:
                values = [f(scope) for f in args]
                unknown = _merge(values)
                return unknown if unknown is not None else func(*values)

            return call
        raise ExpressionError(f"{text!r}: {fname}() is not a function of the rule language ({', '.join(sorted([*FUNCTIONS, *SCOPE_FUNCTIONS]))})")
    raise ExpressionError(f"{text!r}: {ast.unparse(node)!r} is not allowed in a rule expression")


def _and(parts: list[Evaluator], scope: Scope) -> Any:
    unknown: Unknown | None = None
    value: Any = True
    for part in parts:
        value = part(scope)
        if is_unknown(value):
            unknown = value if unknown is None else unknown | value
        elif not value:
            return False
    return unknown if unknown is not None else bool(value)


def _or(parts: list[Evaluator], scope: Scope) -> Any:
    unknown: Unknown | None = None
    for part in parts:
        value = part(scope)
        if is_unknown(value):
            unknown = value if unknown is None else unknown | value
        elif value:
            return True
    return unknown if unknown is not None else False


class MappingScope(Scope):
    """A scope over a plain mapping, for tests and scripts: absent names are unknown."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = values

    def lookup(self, name: str) -> Any:
        return self.values[name] if name in self.values else Unknown(frozenset({name}))
