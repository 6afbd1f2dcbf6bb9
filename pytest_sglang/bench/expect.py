"""Thresholds on benchmark figures: ``"output_throughput >= 900"``, ``"p99 ttft <= 250 ms"``.

A threshold names a metric (:meth:`LevelResult.metrics` names, or a latency written as
``p99 ttft`` / ``ttft p99`` / ``ttft_p99_ms``), a comparison and a number with an optional
unit (``ms`` or ``s`` for latencies). It holds at every level it is checked on; a level on which
the client was the bottleneck is inconclusive and is never judged.
"""

from __future__ import annotations

import operator
import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..errors import SpecError
from .model import BenchResult, LevelResult

_OPS: dict[str, Callable[[float, float], bool]] = {"<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt, "==": operator.eq}
_FORM = re.compile(r"^\s*(?P<metric>[A-Za-z][A-Za-z0-9_ .]*?)\s*(?P<op><=|>=|==|<|>)\s*(?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<unit>ms|s|%|tok/s|req/s)?\s*$")
_FAMILIES = ("ttft", "itl", "tpot", "e2e")
_STATS = {"mean": "mean", "avg": "mean", "median": "median", "p50": "median", "p90": "p90", "p95": "p95", "p99": "p99", "max": "max", "std": "std"}


class ThresholdError(SpecError):
    """A threshold that cannot be read; the message says how to write it."""


@dataclass(frozen=True)
class Threshold:
    text: str
    metric: str
    op: str
    value: float

    def holds(self, figure: float) -> bool:
        return _OPS[self.op](figure, self.value)

    def describe(self, figure: float) -> str:
        unit = " ms" if self.metric.endswith("_ms") else ""
        return f"{self.metric} {figure_text(figure)}{unit} (limit {self.op} {figure_text(self.value)}{unit})"


def figure_text(value: float) -> str:
    """A figure as failure messages show it: one decimal from 10 up, three significant digits below."""
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.3g}"


def metric_name(words: str) -> str:
    """``"p99 ttft"``, ``"ttft.p99"``, ``"TTFT p99"`` and ``"ttft_p99_ms"`` all name ``ttft_p99_ms``."""
    parts = [p for p in re.split(r"[\s._]+", words.strip().lower()) if p]
    families = [p for p in parts if p in _FAMILIES]
    stats = [p for p in parts if p in _STATS]
    rest = [p for p in parts if p not in _FAMILIES and p not in _STATS and p != "ms"]
    if families and not rest:
        if len(families) != 1 or len(stats) > 1:
            raise ThresholdError(f"threshold metric {words!r}: name one latency and one statistic, e.g. 'p99 ttft'")
        stat = _STATS[stats[0]] if stats else "median"
        return f"{families[0]}_{stat}_ms"
    return "_".join(parts)


def parse_threshold(text: str, known: Iterable[str] = ()) -> Threshold:
    match = _FORM.match(text)
    if not match:
        raise ThresholdError(f"threshold {text!r}: write METRIC OP NUMBER [UNIT], e.g. 'output_throughput >= 900' or 'p99 ttft <= 250 ms'")
    metric = metric_name(match["metric"])
    value = float(match["number"])
    unit = match["unit"]
    names = set(known)
    if names and metric not in names:
        close = sorted(n for n in names if any(word in n for word in metric.split("_") if len(word) > 2))[:6] or sorted(names)[:12]
        raise ThresholdError(f"threshold {text!r}: no metric {metric!r}; known: {', '.join(close)}")
    if unit in ("ms", "s") and not metric.endswith("_ms"):
        raise ThresholdError(f"threshold {text!r}: {metric} is not a latency, so it takes no {unit} unit")
    if unit == "s":
        value *= 1000.0
    if unit == "%":
        value /= 100.0
    return Threshold(text.strip(), metric, match["op"], value)


@dataclass
class Judgement:
    """Thresholds checked over levels: what failed, what could not be judged and why."""

    failures: list[str]
    inconclusive: list[str]
    passed: list[str]

    @property
    def ok(self) -> bool:
        return not self.failures


def _runs_of(result: BenchResult, level: LevelResult) -> list[LevelResult]:
    """The same level in every repeat of the run (just the level when not repeated)."""
    if not result.repeats:
        return [level]
    return [lv for run in result.repeats for lv in run if lv.name == level.name] or [level]


def level_figures(result: BenchResult, level: LevelResult) -> dict[str, float]:
    """The level's figures; with repeats, each metric's median over the repeats."""
    runs = _runs_of(result, level)
    if len(runs) == 1:
        return runs[0].metrics()
    names = set.intersection(*(set(r.metrics()) for r in runs))
    return {name: statistics.median(r.metrics()[name] for r in runs) for name in names}


def judge(result: BenchResult, thresholds: Sequence[str | Threshold], *, levels: Sequence[LevelResult] | None = None) -> Judgement:
    chosen = list(levels if levels is not None else result.levels)
    verdict = Judgement([], [], [])
    known = set().union(*(lv.metrics() for lv in chosen)) if chosen else set()
    parsed = [t if isinstance(t, Threshold) else parse_threshold(t, known | _latency_names()) for t in thresholds]
    for level in chosen:
        runs = _runs_of(result, level)
        invalid = [r for r in runs if not r.conclusive]
        if invalid:
            reasons = "; ".join(dict.fromkeys(reason for r in invalid for reason in r.validity.reasons))
            verdict.inconclusive.append(f"{level.name}: the client's own measurement is not to be trusted: {reasons}")
            continue
        figures = level_figures(result, level)
        for threshold in parsed:
            figure = figures.get(threshold.metric)
            if figure is None:
                verdict.failures.append(f"{level.name}: {threshold.metric} was not measured (no successful request reported it)")
                continue
            line = f"{level.name}: {threshold.describe(figure)}"
            (verdict.passed if threshold.holds(figure) else verdict.failures).append(line)
    return verdict


def _latency_names() -> set[str]:
    return {f"{f}_{s}_ms" for f in _FAMILIES for s in ("mean", "median", "p90", "p99", "max")}  # p95 and std come with imports


def corroboration(level: LevelResult) -> str | None:
    """What the server said about the level, for a failure message: whether the effective
    max_running_requests capped it (the queue is where the time to first token went)."""
    server = level.server
    if server is None:
        return None
    parts: list[str] = []
    if server.peak_running is not None:
        parts.append(f"peak running requests {server.peak_running:g}, peak queue {server.peak_queue or 0:g} (/metrics)")
    elif server.note:
        parts.append(server.note)
    cap = server.max_running_requests
    asked = level.concurrency or level.peak_concurrency
    if cap is not None:
        text = f"effective max_running_requests is {cap}"
        if asked and cap < asked:
            text += f", below the {asked} requests in flight: {asked - cap} wait in the queue for a slot"
        parts.append(text)
    return "server: " + "; ".join(parts) if parts else None
