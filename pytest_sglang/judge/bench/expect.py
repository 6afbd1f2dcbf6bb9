"""Thresholds on benchmark figures: ``"output_throughput >= 900"``, ``"p99 ttft <= 250 ms"``.

A threshold names a metric (:meth:`LevelResult.metrics` names, or a latency written as
``p99 ttft`` / ``ttft p99`` / ``ttft_p99_ms``), a comparison and a number with an optional
unit (``ms`` or ``s`` for latencies). It holds at every level it is checked on. The client's own timing error is weighed
against each figure's margin to its limit: a verdict is inconclusive only when that error could
change it (:func:`judge`).
"""

from __future__ import annotations

import difflib
import math
import operator
import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.text import number
from pytest_sglang.model.bench import BenchResult, LevelResult

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
    """A figure as failure messages show it: a measured figure (one decimal from 10 up, three
    significant digits below), written by the reports' one number formatter."""
    return number(float(value), "ms")


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


def close_metrics(words: str, names: Iterable[str], limit: int = 5) -> list[str]:
    """Known metric names close to a misspelt one, the likeliest first: each word is matched
    to the latency and statistic words (``p99_tft`` -> ``ttft_p99_ms``), then by spelling."""
    names = sorted(set(names))
    vocabulary = [*_FAMILIES, *_STATS]
    parts = [p for p in re.split(r"[\s._]+", words.strip().lower()) if p]
    fixed = [p if p in vocabulary else next(iter(difflib.get_close_matches(p, vocabulary, n=1, cutoff=0.6)), p) for p in parts]
    out: list[str] = []
    try:
        corrected = metric_name(" ".join(fixed))
    except ThresholdError:
        corrected = None
    if corrected in names:
        out.append(corrected)
    out += [n for n in difflib.get_close_matches("_".join(parts), names, n=limit, cutoff=0.5) if n not in out]
    return out[:limit]


def known_metrics() -> set[str]:
    """Every metric a level of this package's load generator can report."""
    level = LevelResult(name="x", mode="concurrency", goodput=0.0, goodput_fraction=0.0)
    names = set(level.metrics()) | _latency_names()
    names |= {f"server_{part}" for part in ("peak_running", "peak_queue", "peak_token_usage", "mean_running")}
    return names


def check_threshold_text(text: str) -> None:
    """Raise :class:`ThresholdError` for a threshold that cannot be right before anything runs:
    bad form, or a metric that is not known but close to one that is (a misspelling). A name
    far from every known one may come from an imported result, and is checked when judged."""
    match = _FORM.match(text)
    if not match:
        parse_threshold(text)  # raises, with the form to write
        return
    metric = metric_name(match["metric"])
    names = known_metrics()
    if metric not in names and close_metrics(match["metric"], names):
        parse_threshold(text, names)  # raises, with the close names


def parse_threshold(text: str, known: Iterable[str] = ()) -> Threshold:
    match = _FORM.match(text)
    if not match:
        raise ThresholdError(f"threshold {text!r}: write METRIC OP NUMBER [UNIT], e.g. 'output_throughput >= 900' or 'p99 ttft <= 250 ms'")
    metric = metric_name(match["metric"])
    value = float(match["number"])
    unit = match["unit"]
    names = set(known)
    if names and metric not in names:
        close = close_metrics(match["metric"], names)
        hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(sorted(names)[:12])}, ..."
        raise ThresholdError(f"threshold {text!r}: no metric {metric!r}; {hint}")
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


# ---- how far the client's error can move a figure ----------------------------------------
#
# The client sees every event late, never early: a send it makes late, a chunk it reads late.
# ``error`` (ms) is the most it saw any one event late on the level (worst loop lag plus worst
# send delay). So the true value of a figure lies in an interval around what was measured:
#
# - time to first token, end-to-end latency: [measured - error, measured] (a latency measured
#   late is only longer);
# - gaps between tokens, time per output token: [measured - error, measured + error] (a chunk
#   read late makes its gap longer and the next one shorter);
# - throughputs and goodput: [measured, measured * e2e / (e2e - error)] (each request took at
#   most ``error`` longer than it did, so the level's rate was at most that much higher);
# - counts and the server's own figures: exact.
#
# When the client did not put the asked load on the server, a latency could be worse and a
# throughput higher than measured: that side of the interval is open. A threshold holds when
# the whole interval meets it, fails when none of it does, and is inconclusive otherwise.

_EXACT = {"completed", "failed", "error_rate", "peak_concurrency"}
_THROUGHPUTS = {"request_throughput", "input_throughput", "output_throughput", "total_throughput", "goodput"}


def _interval(metric: str, measured: float, level: LevelResult, error: float, shortfall: bool) -> tuple[float, float]:
    if metric in _EXACT or metric.startswith("server_") or metric in level.extra or level.mode == "imported":
        return measured, measured
    family = metric.split("_", 1)[0]
    if family in ("ttft", "e2e") and metric.endswith("_ms"):
        return measured - error, math.inf if shortfall else measured
    if family in ("itl", "tpot") and metric.endswith("_ms"):
        return measured - error, math.inf if shortfall else measured + error
    if metric in _THROUGHPUTS:
        e2e = level.e2e.median
        if shortfall or (error > 0 and (e2e is None or e2e <= error)):
            return measured, math.inf
        return measured, measured * e2e / (e2e - error) if error > 0 and e2e else measured
    if metric == "goodput_fraction":
        return (measured, 1.0) if error > 0 or shortfall else (measured, measured)
    return measured, measured


def _decide(threshold: Threshold, low: float, high: float) -> bool | None:
    """True: every value in [low, high] meets the threshold; False: none does; None: some do."""
    op, v = threshold.op, threshold.value
    if op in ("<=", "<"):
        if threshold.holds(high):
            return True
        return False if not threshold.holds(low) else None
    if op in (">=", ">"):
        if threshold.holds(low):
            return True
        return False if not threshold.holds(high) else None
    if low == high:
        return low == v
    return None if low <= v <= high else False


_QUANTILES = {"median": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99, "max": 1.0}


def server_ttft_floor(level: LevelResult, metric: str) -> float | None:
    """A lower bound (ms) of a TTFT percentile from the server's own histogram over the level,
    or None when it cannot give one. The server times a request from when it received it, so
    what the client saw of the same request is at least as long, and so is each percentile."""
    server = level.server
    parts = metric.split("_")
    if server is None or not server.ttft_histogram or len(parts) != 3 or parts[0] != "ttft" or parts[1] not in _QUANTILES:
        return None
    buckets = server.ttft_histogram
    total = buckets[-1][1]
    if level.completed < 1 or total < level.completed:  # the histogram missed some of the level's requests
        return None
    # The client's percentile interpolates between two ranks of its n requests: it is at least
    # the lower one, which is at least the server's value of the same rank among those n, which
    # is at least the value of that rank among everything the histogram holds (other requests
    # only add values below or above).
    n = level.completed
    rank = math.floor(_QUANTILES[parts[1]] * (n - 1)) + 1
    floor = 0.0
    for bound, count in buckets:
        if count >= rank:
            return floor
        floor = bound
    return None


def _allows_errors(parsed: Sequence[Threshold]) -> bool:
    return any(t.metric in ("error_rate", "failed") for t in parsed)


def request_failures(level: LevelResult) -> str | None:
    """The failure line for a level whose requests failed, or None."""
    if not level.requests and not level.completed:
        why = next((note for note in level.notes if note.startswith("warm-up")), None)
        return f"{level.name}: no request was measured" + (f" ({why})" if why else "")
    if level.requests and not level.completed:
        first = f": {level.errors[0]}" if level.errors else ""
        return f"{level.name}: none of the {level.requests} requests succeeded{first}"
    if level.failed:
        first = f" (first: {level.errors[0]})" if level.errors else ""
        return f"{level.name}: {level.failed} of {level.requests} requests failed{first}; no failed request is allowed unless the test sets a limit such as 'error_rate <= 0.01'"
    return None


def judge(result: BenchResult, thresholds: Sequence[str | Threshold], *, levels: Sequence[LevelResult] | None = None) -> Judgement:
    """Check every threshold at every chosen level, each level's verdict set on it.

    A level with failed requests fails (unless a threshold limits ``error_rate`` or ``failed``),
    whatever its timing. A figure is judged against its limit with the client's own error
    (see :func:`_interval`): it is inconclusive only when that error could change the verdict,
    and then the server's own TTFT histogram may still show a failure."""
    chosen = list(levels if levels is not None else result.levels)
    verdict = Judgement([], [], [])
    known = set().union(*(lv.metrics() for lv in chosen)) if chosen else set()
    parsed = [t if isinstance(t, Threshold) else parse_threshold(t, known | _latency_names()) for t in thresholds]
    allow_errors = _allows_errors(parsed)
    for level in chosen:
        runs = _runs_of(result, level)
        failing: list[str] = []
        unsure: list[str] = []
        passing: list[str] = []
        if not allow_errors or not any(run.completed for run in runs):
            failing += [line for line in (request_failures(run) for run in runs) if line][:1]
        figures = level_figures(result, level)
        error = max(run.client_error_ms() for run in runs)
        short = next((why for why in (run.load_shortfall() for run in runs) if why), None)
        for threshold in parsed:
            figure = figures.get(threshold.metric)
            if figure is None:
                failing.append(f"{level.name}: {threshold.metric} was not measured (no successful request reported it)")
                continue
            low, high = _interval(threshold.metric, figure, level, error, short is not None)
            decided = _decide(threshold, low, high)
            line = f"{level.name}: {threshold.describe(figure)}"
            if decided is None and threshold.op in ("<=", "<"):
                floor = server_ttft_floor(level, threshold.metric) if len(runs) == 1 else None
                if floor is not None and not threshold.holds(floor):
                    decided = False
                    line += f"; the server's own TTFT histogram puts it above {figure_text(floor)} ms"
            if decided is True:
                passing.append(line)
            elif decided is False:
                if high != low and high != math.inf and threshold.metric.endswith("_ms"):
                    line += f", beyond the client's own error of {figure_text(error)} ms"
                failing.append(line)
            else:
                why = short or f"the client saw events up to {figure_text(error)} ms late, more than the {figure_text(abs(figure - threshold.value))}{' ms' if threshold.metric.endswith('_ms') else ''} margin"
                unsure.append(f"{line}: cannot tell: {why}")
        verdict.failures += failing
        verdict.inconclusive += unsure
        verdict.passed += passing
        for run in {id(r): r for r in [level, *runs]}.values():
            run.judge("fail" if failing else "inconclusive" if unsure else "pass", failing + unsure)
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
