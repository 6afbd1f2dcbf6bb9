"""A benchmark against its stored baseline: which direction is better, and change versus noise.

One run of a serving benchmark is one sample of a noisy process, so a bare percentage between two
runs says little. A level is run ``repeats`` times on each side and, per metric:

- the **change** is the relative difference of the medians over the repeats, signed so that a
  positive change is worse (lower throughput, higher latency);
- the **evidence** is the one-sided Mann-Whitney U test on the repeats (exact for small samples):
  the probability that repeats at least this much worse would come from the same distribution.

A metric *regressed* when its change is beyond the tolerance (default 5 %; for a latency also
at least ``min_delta_ms``, default 5 ms) **and** p <= alpha (default 0.05) **and** it is larger
than the two runs' client timing errors together could make it (else *inconclusive*). With three repeats on each side the smallest possible p is 0.05 (every candidate
repeat worse than every baseline repeat); with one repeat each it is 0.5, so a change is reported
as *undecided*, never as a regression.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_sglang.base.errors import SpecError
from pytest_sglang.judge.bench.expect import figure_text
from pytest_sglang.model.bench import BenchResult, direction

BENCH_BASELINE_KIND = "pytest-sglang bench baseline"
DEFAULT_METRICS = (
    "output_throughput",
    "request_throughput",
    "ttft_median_ms",
    "ttft_p99_ms",
    "itl_median_ms",
    "itl_p99_ms",
    "e2e_p99_ms",
    "goodput",
    "error_rate",
)
Status = Literal["regressed", "improved", "unchanged", "undecided", "inconclusive"]


class BenchBaselineError(SpecError):
    """A benchmark baseline that does not fit the benchmark; the message says what to do."""


def mann_whitney_p(worse: Sequence[float], better: Sequence[float]) -> float:
    """One-sided p-value that ``worse`` is stochastically larger than ``better`` (ties count
    half). Exact by enumeration up to 12 870 splits, else the normal approximation."""
    m, n = len(worse), len(better)
    if not m or not n:
        return 1.0

    def u_of(a: Sequence[float], b: Sequence[float]) -> float:
        return sum(1.0 if x > y else 0.5 if x == y else 0.0 for x in a for y in b)

    observed = u_of(worse, better)
    pooled = list(worse) + list(better)
    if math.comb(m + n, m) <= 12_870:
        count = total = 0
        for chosen in itertools.combinations(range(m + n), m):
            picked = set(chosen)
            a = [pooled[i] for i in chosen]
            b = [pooled[i] for i in range(m + n) if i not in picked]
            total += 1
            if u_of(a, b) >= observed - 1e-9:
                count += 1
        return count / total
    mean = m * n / 2
    sd = math.sqrt(m * n * (m + n + 1) / 12)
    z = (observed - mean - 0.5) / sd
    return 0.5 * math.erfc(z / math.sqrt(2))


def smallest_p(baseline_runs: int, runs: int) -> float:
    """The smallest one-sided p the exact test can give these sample sizes (every run of
    one side beyond every run of the other): 0.5 for one run each, 0.05 for three each."""
    return 1.0 / math.comb(baseline_runs + runs, runs) if baseline_runs and runs else 1.0


def too_few_runs(changes: Sequence[MetricChange], alpha: float) -> dict[str, str]:
    """Per level whose runs could never show a change at ``alpha`` (so its comparison could
    never fail), why, in words."""
    out: dict[str, str] = {}
    for c in changes:
        p = smallest_p(len(c.baseline), len(c.candidate))
        if p > alpha and c.level not in out:
            out[c.level] = (
                f"{c.level}: {len(c.baseline)} baseline run(s) against {len(c.candidate)} cannot tell a change from noise "
                f"(the smallest p they allow is {p:.2g}, over alpha {alpha:g}): record the baseline and run with repeats >= 3 "
                "on both sides (--sglang-bench=full)"
            )
    return out


@dataclass
class MetricChange:
    level: str
    metric: str
    baseline: list[float]
    candidate: list[float]
    change: float  # relative, positive = worse
    p_value: float
    status: Status
    better: str = field(default="higher")

    @property
    def failing(self) -> bool:
        return self.status == "regressed"

    def line(self) -> str:
        base = statistics.median(self.baseline)
        cand = statistics.median(self.candidate)
        unit = " ms" if self.metric.endswith("_ms") else ""
        runs = f"{len(self.baseline)} vs {len(self.candidate)} run(s)"
        trend = "worse" if self.change > 0 else "better"
        text = f"{self.level}: {self.metric} {figure_text(base)}{unit} -> {figure_text(cand)}{unit} ({abs(self.change):.1%} {trend}, {self.better} is better; median of {runs}, Mann-Whitney p={self.p_value:.3g})"
        if self.status == "inconclusive":
            text += ": within the client's own timing error on the two runs, so not told apart"
        if self.status == "undecided":
            text += ": not told apart from noise" + (" (one run each cannot show a change: use repeats >= 3)" if min(len(self.baseline), len(self.candidate)) < 2 else "")
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "metric": self.metric,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "change": self.change,
            "p_value": self.p_value,
            "status": self.status,
            "better": self.better,
        }


def level_samples(result: BenchResult) -> dict[str, dict[str, list[float]]]:
    """Per level name, per metric, the value of every repeat (levels with a successful request;
    how far the client's timing can be trusted is :func:`client_errors`)."""
    runs = result.repeats or [result.levels]
    out: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        for level in run:
            if not level.completed:
                continue
            metrics = out.setdefault(level.name, {})
            for name, value in level.metrics().items():
                metrics.setdefault(name, []).append(value)
    return out


def client_errors(result: BenchResult) -> dict[str, float]:
    """Per level name, the client's worst timing error over the repeats (ms)."""
    out: dict[str, float] = {}
    for run in result.repeats or [result.levels]:
        for level in run:
            out[level.name] = max(out.get(level.name, 0.0), level.client_error_ms())
    return out


def baseline_entry(result: BenchResult) -> dict[str, Any]:
    """What a benchmark baseline file keeps of a run: the load pattern and every repeat's figures."""
    return {
        "settings": result.settings,
        "source": result.source,
        "route": result.route,
        "sglang_version": result.sglang_version,
        "recorded": result.started,
        "levels": level_samples(result),
        "client_error_ms": client_errors(result),
    }


def _comparable_settings(settings: dict[str, Any]) -> dict[str, Any]:
    # What makes two runs the same experiment; request and duration caps may differ with the budget.
    return {k: v for k, v in settings.items() if k not in ("processes", "metrics_interval_s", "request_timeout_s", "limits", "warmup")}


def compare_to_baseline(
    entry: dict[str, Any],
    result: BenchResult,
    *,
    metrics: Iterable[str] = DEFAULT_METRICS,
    tolerance: float = 0.05,
    alpha: float = 0.05,
    name: str = "benchmark",
    min_delta_ms: float = 5.0,
) -> list[MetricChange]:
    """Every compared metric of every level both sides measured conclusively. A latency that
    moved less than ``min_delta_ms`` is unchanged, whatever its relative change: a p99 of 11 ms
    against 18 ms is noise on a shared machine, not a finding."""
    want, have = _comparable_settings(entry.get("settings") or {}), _comparable_settings(result.settings)
    if want and have and want != have:
        differing = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
        raise BenchBaselineError(
            f"{name}: the load pattern differs from its baseline's ({', '.join(differing)}); "
            "run the baseline's pattern or rewrite the baseline with --sglang-update-baseline"
        )
    stored: dict[str, dict[str, list[float]]] = entry.get("levels") or {}
    raw_errors = entry.get("client_error_ms")
    stored_errors: dict[str, Any] = raw_errors if isinstance(raw_errors, dict) else {}
    live = level_samples(result)
    live_errors = client_errors(result)
    changes: list[MetricChange] = []
    for level_name, figures in live.items():
        base_figures = stored.get(level_name)
        if not base_figures:
            continue
        error = live_errors.get(level_name, 0.0) + _number(stored_errors.get(level_name))
        e2e = statistics.median(figures["e2e_median_ms"]) if figures.get("e2e_median_ms") else None
        for metric in metrics:
            base, cand = base_figures.get(metric), figures.get(metric)
            if not base or not cand:
                continue
            change = _change(level_name, metric, [float(v) for v in base], cand, tolerance, alpha, min_delta_ms)
            if change.status == "regressed" and _within_error(change, error, e2e):
                change.status = "inconclusive"
            changes.append(change)
    return changes


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else 0.0


def _within_error(change: MetricChange, error_ms: float, e2e_ms: float | None) -> bool:
    """Whether the two runs' client timing errors together could account for the change: a
    latency by milliseconds, a throughput by the share of a request's time they make up."""
    if error_ms <= 0:
        return False
    delta = abs(statistics.median(change.candidate) - statistics.median(change.baseline))
    if change.metric.endswith("_ms"):
        return delta <= error_ms
    if change.metric in ("error_rate", "failed", "completed") or change.metric.startswith("server_"):
        return False
    if not e2e_ms or e2e_ms <= error_ms:
        return True
    return abs(change.change) <= error_ms / (e2e_ms - error_ms)


def _change(level: str, metric: str, base: list[float], cand: list[float], tolerance: float, alpha: float, min_delta_ms: float = 0.0) -> MetricChange:
    better = direction(metric)
    b, c = statistics.median(base), statistics.median(cand)
    if metric.endswith("_ms") and abs(c - b) < min_delta_ms:
        return MetricChange(level, metric, base, cand, 0.0 if b == 0 else (c - b) / abs(b), 1.0, "unchanged", better)
    if b == 0:
        change = 0.0 if c == 0 else math.copysign(math.inf, c if better == "lower" else -c)
    else:
        change = (c - b) / abs(b) if better == "lower" else (b - c) / abs(b)
    # Orient the samples so that "larger" means worse, then test both ways.
    sign = 1.0 if better == "lower" else -1.0
    worse_c, worse_b = [sign * v for v in cand], [sign * v for v in base]
    p_worse = mann_whitney_p(worse_c, worse_b)
    p_better = mann_whitney_p(worse_b, worse_c)
    status: Status
    if abs(change) <= tolerance:
        status = "unchanged"
    elif change > 0:
        status = "regressed" if p_worse <= alpha else "undecided"
    else:
        status = "improved" if p_better <= alpha else "undecided"
    p = p_worse if change > 0 else p_better
    return MetricChange(level, metric, base, cand, change, p, status, better)


def levels_missing(entry: dict[str, Any], result: BenchResult) -> list[str]:
    """Levels the baseline has that this run did not measure (no successful request)."""
    live = {level.name for level in result.levels if level.completed}
    return [name for name in (entry.get("levels") or {}) if name not in live]
