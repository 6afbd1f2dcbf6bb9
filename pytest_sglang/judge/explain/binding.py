"""Whether a cap binds. A cap on a requested value is a WARNING only when it certainly binds.

A cap rule's value reads figures SGLang sizes at start-up (``runtime.max_total_num_tokens // 2``,
``runtime.mamba_cache_size // derived.mamba_ratio``). On a running server they are reported;
before it runs they are known exactly, as a range (the pool estimate of :mod:`.pools`), or not
at all. A cap's value is monotone in each figure it reads, so over the figures' possible values
its lowest and highest values are at the corners of their ranges. From those:

- the highest value is below the request: the cap certainly binds (a WARNING, with the range);
- the lowest value reaches the request: it never binds (no finding);
- otherwise it may bind: an INFO that says the threshold, the figure the cap binds below
  ("binds only if the KV pool holds fewer than 128 tokens"), found by bisection on that figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product
from typing import Any, Callable, Mapping

from pytest_sglang.judge.explain.expr import is_unknown
from pytest_sglang.judge.explain.kb import Rule
from pytest_sglang.judge.explain.pools import estimate_pools
from pytest_sglang.judge.explain.situation import Situation

# What no GPU pool holds: the top of every figure's range when nothing is known of it.
_HUGE = 2**50
# How a figure is named in a threshold, and its unit.
_WORDS: dict[str, tuple[str, str]] = {
    "max_total_num_tokens": ("the KV pool holds", "tokens"),
    "mamba_cache_size": ("the mamba state cache holds", "slots"),
    "context_len": ("the context length is", "tokens"),
}


@dataclass(frozen=True)
class CapBound:
    """What is known of a cap's value before comparing it with the request."""

    low: float | None
    high: float | None
    # The figure the cap reads that decides it, and where it comes from, when it is a range.
    figures: Mapping[str, tuple[float, float]]
    estimate_why: str = ""

    @property
    def exact(self) -> bool:
        return self.low is not None and self.low == self.high


class Figures:
    """The start-up figures as a target's ``effective`` offers them to rules (``runtime.X``)."""

    def __init__(self, values: Mapping[str, float]) -> None:
        self._values = dict(values)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._values.get(name)

    def source_of(self, name: str) -> str:
        return "explain's pool estimate"


def runtime_names(situation: Situation, rule: Rule) -> list[str]:
    """The start-up figures a rule reads, through its derived values."""
    names = situation.kb.reads_all.get(rule.id, rule.reads)
    return sorted(n.removeprefix("runtime.") for n in names if n.startswith("runtime."))


def evaluate_with(situation: Situation, rule: Rule, values: Mapping[str, float]) -> Any:
    """The rule's value with the start-up figures set to ``values`` (derived values that read them
    are computed afresh, and the situation is left as it was)."""
    if rule.value_expression is None:
        return None
    saved_runtime, saved_derived, saved_before = situation.runtime, situation._derived, situation.before
    # Derived values that read no start-up figure stay as computed; the others are computed afresh.
    reading = _derived_reading_runtime(situation.kb)
    kept = {name: value for name, value in saved_derived.items() if name not in reading}
    situation.runtime, situation._derived, situation.before = Figures(values), kept, rule.setting
    try:
        return rule.value_expression.evaluate(situation)
    except (ArithmeticError, TypeError, ValueError):
        return None
    finally:
        situation.runtime, situation._derived, situation.before = saved_runtime, saved_derived, saved_before


_RUNTIME_READERS: dict[int, frozenset[str]] = {}


def _derived_reading_runtime(kb: Any) -> frozenset[str]:
    """The derived values that read a start-up figure, directly or through another derived value."""
    key = id(kb)
    if key not in _RUNTIME_READERS:
        names = set(kb.derived)
        reading: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name in names - reading:
                read = kb.derived[name].names
                if any(n.startswith("runtime.") or (n.startswith("derived.") and n.removeprefix("derived.") in reading) for n in read):
                    reading.add(name)
                    changed = True
        _RUNTIME_READERS[key] = frozenset(reading)
    return _RUNTIME_READERS[key]


def estimate(situation: Situation) -> tuple[dict[str, tuple[float, float]], dict[str, str], str]:
    """The pool estimate for a launch command: each figure's range, the figures that cannot be
    known before start (with why), and how the ranges were found. Computed once per situation."""
    cached = situation.__dict__.get("_pool_estimate")
    if cached is None:
        ranges: dict[str, tuple[float, float]] = {}
        unknown: dict[str, str] = {}
        why: list[str] = []
        result = estimate_pools(situation)
        for name, bound in result.figures.items():
            ranges[name] = (bound.low, bound.high)
            if bound.why and bound.why not in why:
                why.append(bound.why)
        unknown = dict(result.unknown)
        cached = (ranges, unknown, "; ".join(why))
        situation.__dict__["_pool_estimate"] = cached
    return cached


def spans_of(situation: Situation, names: list[str]) -> tuple[dict[str, tuple[float, float]], str]:
    """What is known of each start-up figure: a running server's own value, else the pool
    estimate's range for a launch command (and how it was found)."""
    if situation.mode == "target":
        runtime = situation.runtime
        known = {n: getattr(runtime, n, None) if runtime is not None else None for n in names}
        return {n: (v, v) for n, v in known.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}, ""
    ranges, _, why = estimate(situation)
    return {n: ranges[n] for n in names if n in ranges}, why


def cap_bound(situation: Situation, rule: Rule, predicted: Any) -> CapBound:
    """The lowest and highest value the cap can take under the facts given."""
    if not is_unknown(predicted):
        number = predicted if isinstance(predicted, (int, float)) and not isinstance(predicted, bool) else None
        return CapBound(number, number, {})
    names = runtime_names(situation, rule)
    if not names:
        return CapBound(None, None, {})
    ranges, why = spans_of(situation, names)
    spans = {name: ranges.get(name, (0 if name != "context_len" else 1, _HUGE)) for name in names}
    values = [evaluate_with(situation, rule, dict(zip(names, corner))) for corner in product(*spans.values())]
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) != len(values):
        return CapBound(None, None, {})
    known = {name: spans[name] for name in names if name in ranges}
    return CapBound(min(numbers), max(numbers), known, why if known else "")


def threshold(situation: Situation, rule: Rule, requested: float, bound: CapBound) -> str | None:
    """``binds only if the KV pool holds fewer than 128 tokens``: the figure below (or above)
    which the cap is lower than the request, when one figure decides it; else the value's
    threshold in words."""
    names = runtime_names(situation, rule)
    ranges, _ = spans_of(situation, names)
    free = [n for n in names if not (n in ranges and ranges[n][0] == ranges[n][1])]
    fixed = {n: ranges[n][0] for n in names if n not in free}
    if len(free) != 1:
        return None
    name = free[0]

    def value(x: float) -> Any:
        return evaluate_with(situation, rule, {**fixed, name: x})

    low_end, high_end = value(1), value(_HUGE)
    if not all(isinstance(v, (int, float)) for v in (low_end, high_end)):
        return None
    rising = high_end >= low_end
    cut = _bisect(lambda x: value(x) >= requested if rising else value(x) < requested, start=int(requested))
    if cut is None:
        return None
    words, unit = _WORDS.get(name, (f"{name.replace('_', ' ')} is", ""))
    if rising:
        return f"binds only if {words} fewer than {cut:,} {unit}".rstrip()
    return f"binds only if {words.removesuffix(' is')} is above {cut - 1:,} {unit}".rstrip()


def _bisect(holds: Callable[[int], bool], start: int = 1) -> int | None:
    """The smallest whole x in [1, 2**50] for which ``holds`` (monotone: False then True) holds.
    Thresholds sit near the request (a few slots or tokens per request), so the search doubles
    from ``start`` before it halves: about twenty evaluations instead of fifty."""
    low, high = 1, _HUGE
    try:
        if not holds(high):
            return None
        if holds(low):
            return low
        probe = max(2, start)
        while probe < high and not holds(probe):
            low, probe = probe, probe * 4
        high = min(high, probe)
        while high - low > 1:
            middle = (low + high) // 2
            if holds(middle):
                high = middle
            else:
                low = middle
    except TypeError:
        return None
    return high


def shown(number: float) -> str:
    """A figure as the user reads it: whole numbers with thousands separators."""
    if isinstance(number, float) and not math.isfinite(number):
        return str(number)
    if float(number).is_integer():
        return f"{int(number):,}"
    return f"{number:.4g}"
