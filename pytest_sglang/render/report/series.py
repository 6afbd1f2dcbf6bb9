"""What the reports draw of the benchmarks, read from the JSON report alone: the benchmark
results grouped into charts (one group per benchmark and load mode), one line per host, the
benchmark baseline's repeats as a band, and each level's result (failed and inconclusive levels
are marked where they are drawn). A group of one level (every host measured at one
concurrency) is drawn as bars instead: one bar per host for each figure, the benchmark
baseline's repeats beside the bar they were compared with.

The HTML page draws these as SVG charts (or tables without the ``report`` extra) and the
Markdown summary as Mermaid charts; both read only this, so the figures agree. Nothing here
formats outside text: labels on the level axis are numbers formatted here, host names stay in
:attr:`Line.host` for the renderers to escape.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from pytest_sglang.judge.gate.models import BenchLevel, Benchmark, HostSection, RunReport, Stat
from pytest_sglang.render.report.document import FAILED_OUTCOMES, bench_name, report_of

# What a level's result is called where it is drawn.
PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
# Figures of a level, by the name the charts use: (the level's field, which statistic of it).
FIGURES: dict[str, tuple[str, str | None]] = {
    "output_throughput": ("output_throughput", None),
    "ttft_p50": ("ttft", "median"),
    "ttft_p99": ("ttft", "p99"),
    "itl_p50": ("itl", "median"),
    "itl_p99": ("itl", "p99"),
    "peak_running": ("server", "peak_running"),
    "peak_queue": ("server", "peak_queue"),
}
# The benchmark baseline's figure for each charted figure (pytest_sglang.model.bench.BASELINE_BAND_METRICS).
BASELINE_FIGURE = {"output_throughput": "output_throughput", "ttft_p50": "ttft_median_ms", "ttft_p99": "ttft_p99_ms", "itl_p50": "itl_median_ms", "itl_p99": "itl_p99_ms"}


@dataclass(frozen=True)
class Point:
    """One level of one line: its position on the level axis, its value and its result."""

    x: int
    y: float
    level: str  # the level's label on the axis ("48", "20/s")
    state: str  # PASS, FAIL, INCONCLUSIVE, or "" when the level was not judged


@dataclass
class Line:
    """A host's line on a chart. ``number`` (1-based) names it in the legend and in the chart's
    own titles, which never carry the host's name (outside text stays out of the SVG)."""

    number: int
    host: str
    figure: str
    dashed: bool
    points: list[Point]

    @property
    def color(self) -> int:
        return self.number - 1


@dataclass
class Band:
    """The spread (lowest to highest) of a benchmark baseline's repeats, per level position."""

    number: int  # the line (host) whose baseline it is: drawn in its colour
    figure: str
    spans: list[tuple[int, float, float]]  # (x, low, high)
    name: str
    key: str | None
    repeats: int
    medians: dict[int, float] = field(default_factory=dict)  # x -> the repeats' median


@dataclass
class Rule:
    """A horizontal reference line: an effective ``max_running_requests`` of some hosts."""

    value: float
    numbers: list[int]


@dataclass
class Chart:
    id: str  # "throughput", "ttft", "itl", "server"
    title: str
    unit: str
    lines: list[Line] = field(default_factory=list)
    bands: list[Band] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    bars: bool = False  # one level: a bar per host, not a line

    @property
    def points(self) -> int:
        return sum(len(line.points) for line in self.lines)

    @property
    def marks(self) -> list[tuple[Line, Point]]:
        """Every point of a failed or inconclusive level, as drawn."""
        return [(line, p) for line in self.lines for p in line.points if p.state in (FAIL, INCONCLUSIVE)]


@dataclass
class HostRun:
    """One benchmark result of one host in a group: a line on each chart."""

    number: int
    host: str
    bench: Benchmark  # its levels: those of the group's mode


@dataclass
class Group:
    """One benchmark (a test's name) in one load mode, across the hosts that ran it."""

    name: str
    mode: str
    axis: str  # the level axis' title
    levels: list[str]  # labels by position
    runs: list[HostRun]
    charts: list[Chart]

    @property
    def id(self) -> str:
        return f"{self.name}-{self.mode}"

    @property
    def bars(self) -> bool:
        """One level: every chart is a bar per host."""
        return len(self.levels) == 1

    @property
    def where(self) -> str:
        """The first level in words: ``concurrency 48``, ``request rate 20/s``."""
        return f"{self.axis.split(' (')[0]} {self.levels[0]}" if self.levels else self.axis


# ---- a level --------------------------------------------------------------------------------


def level_state(bench: Benchmark, level: BenchLevel) -> tuple[str, list[str]]:
    """A level's result and why: its verdict when it was judged (pass, fail, inconclusive),
    else what the test that ran it says."""
    validity = Validity.read(level.validity)
    verdict: str | None = level.verdict
    reasons = [str(r) for r in level.verdict_reasons or ()]
    if verdict == INCONCLUSIVE or (verdict is None and validity.verdict == INCONCLUSIVE):
        reasons = reasons or validity.reasons
    if verdict is None:
        if bench.inconclusive:
            verdict = INCONCLUSIVE
            reasons = reasons or [bench.inconclusive]
        elif validity.verdict == INCONCLUSIVE:
            verdict = INCONCLUSIVE
        elif bench.outcome in FAILED_OUTCOMES:
            verdict = FAIL
            reasons = reasons or ([bench.message] if bench.message else [])
    if level.failed and verdict in (FAIL, INCONCLUSIVE):
        errors = level.errors or []
        reasons.append(f"{level.failed} of {level.requests} requests failed" + (f": {errors[0]}" if errors else ""))
    attempts = level.attempts or 1
    if attempts > 1 and verdict is not None:
        reasons.append(f"after {attempts} attempts")
    return (verdict or bench.outcome or "—"), reasons


@dataclass(frozen=True)
class Validity:
    """A level's ``validity`` record (pytest_sglang.model.bench.Validity as JSON): whether its
    figures can be trusted, and why not."""

    verdict: Any
    reasons: list[str]

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> Validity:
        return cls(record.get("verdict"), [str(r) for r in record.get("reasons") or ()])


def server_figure(level: BenchLevel, name: str) -> Any:
    """What the server's /metrics said during a level (``peak_running``, ``max_running_requests``
    ...), as the level's ``server`` record holds it, or None."""
    return (level.server or {}).get(name)


def figure(level: BenchLevel, name: str) -> float | None:
    """A level's figure by chart name (``ttft_p99``, ``peak_running`` ...), or None."""
    where, stat = FIGURES[name]
    if where == "server":
        return _number(server_figure(level, stat or ""))
    value = getattr(level, where)
    if stat is not None:
        value = getattr(value, stat) if isinstance(value, Stat) else None
    return _number(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def number_text(value: float) -> str:
    """A tick label on an axis, or a level's label: ``48``, ``2.5``, ``583.7``, ``4,509``
    (a figure in text is written by :func:`pytest_sglang.base.text.number`)."""
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"


def _level_key(level: BenchLevel, mode: str) -> tuple[float, str]:
    """Where a level sits on its axis: the concurrency or the rate (the name breaks ties)."""
    for field_name in (("rate", "concurrency") if mode == "rate" else ("concurrency", "rate")):
        value = _number(getattr(level, field_name))
        if value is not None:
            return value, _level_label(value, field_name)
    return math.inf, ""


def _level_label(value: float, field_name: str) -> str:
    text = number_text(value)
    return f"{text}/s" if field_name == "rate" else text


# ---- grouping -------------------------------------------------------------------------------


def groups(doc: RunReport | Mapping[str, Any]) -> list[Group]:
    """Every benchmark of the report (a :class:`RunReport` or its JSON document), grouped by
    benchmark name and load mode, hosts numbered in the report's order (the same number, so
    the same colour, on every chart of a group)."""
    return host_groups(report_of(doc).hosts)


def host_groups(hosts: Iterable[HostSection]) -> list[Group]:
    """:func:`groups` of these hosts."""
    found: dict[tuple[str, str], list[tuple[str, Benchmark]]] = {}
    for host in hosts:
        for bench in host.benchmarks:
            if not bench.levels:
                continue
            for mode in sorted({lv.mode for lv in bench.levels}):
                own = [lv for lv in bench.levels if lv.mode == mode]
                name = bench_name(bench.test or "benchmark")
                found.setdefault((name, mode), []).append((host.host, bench.model_copy(update={"levels": own})))
    return [_group(name, mode, members) for (name, mode), members in found.items()]


def _group(name: str, mode: str, members: list[tuple[str, Benchmark]]) -> Group:
    positions: dict[str, tuple[float, str]] = {}
    unnamed = 0
    for _, bench in members:
        for lv in bench.levels:
            key = _level_key(lv, mode)
            if key[0] == math.inf:
                unnamed += 1
                key = (math.inf, f"#{unnamed}")
            positions.setdefault(lv.name, key)
    ordered = sorted(set(positions.values()), key=lambda k: (k[0], k[1]))
    labels = [label for _, label in ordered]
    index = {key: i for i, key in enumerate(ordered)}
    x_of = {level_name: index[key] for level_name, key in positions.items()}
    runs: list[HostRun] = []
    seen: dict[str, int] = {}
    for host, bench in members:
        seen[host] = seen.get(host, 0) + 1
        shown = host if seen[host] == 1 else f"{host} ({seen[host]})"
        runs.append(HostRun(len(runs) + 1, shown, bench))
    axis = {"concurrency": "concurrency (requests in flight)", "rate": "request rate (requests/s)"}.get(mode, "level")
    if len(labels) == 1:
        return Group(name, mode, axis, labels, runs, _bar_charts(runs, x_of, labels))
    charts = [
        _chart("throughput", "Output throughput", "tokens/s", runs, x_of, labels, [("output_throughput", False)]),
        _chart("ttft", "Time to first token (p99 solid, p50 dashed)", "ms", runs, x_of, labels, [("ttft_p99", False), ("ttft_p50", True)]),
        _chart("itl", "Inter-token latency (p99 solid, p50 dashed)", "ms", runs, x_of, labels, [("itl_p99", False), ("itl_p50", True)]),
        _chart("server", "Server /metrics: peak running (solid), peak queue (dashed)", "requests", runs, x_of, labels, [("peak_running", False), ("peak_queue", True)]),
    ]
    return Group(name, mode, axis, labels, runs, [c for c in charts if c.lines])


def _bar_charts(runs: list[HostRun], x_of: dict[str, int], labels: list[str]) -> list[Chart]:
    """The charts of one level: each figure's p99 (or peak running) as a bar per host."""
    charts = [
        _chart("throughput", "Output throughput", "tokens/s", runs, x_of, labels, [("output_throughput", False)]),
        _chart("ttft", "p99 time to first token", "ms", runs, x_of, labels, [("ttft_p99", False)]),
        _chart("itl", "p99 inter-token latency", "ms", runs, x_of, labels, [("itl_p99", False)]),
        _chart("server", "Server /metrics: peak running requests", "requests", runs, x_of, labels, [("peak_running", False)]),
    ]
    for chart in charts:
        chart.bars = True
    return [c for c in charts if c.lines]


def failed_hosts(lines: Iterable[Line], x: int) -> dict[str, list[int]]:
    """The numbers of the hosts whose level at ``x`` failed or was inconclusive on these lines,
    by result: what a chart without marks (Mermaid's) names in its labels."""
    found: dict[str, list[int]] = {}
    for line in lines:
        for point in line.points:
            if point.x == x and point.state in (FAIL, INCONCLUSIVE) and line.number not in found.get(point.state, []):
                found.setdefault(point.state, []).append(line.number)
    return found


def _chart(chart_id: str, title: str, unit: str, runs: list[HostRun], x_of: dict[str, int], labels: list[str], figures: list[tuple[str, bool]]) -> Chart:
    chart = Chart(chart_id, title, unit)
    for run in runs:
        for name, dashed in figures:
            points = []
            for lv in run.bench.levels:
                value = figure(lv, name)
                x = x_of.get(lv.name)
                if value is None or x is None:
                    continue
                state, _ = level_state(run.bench, lv)
                points.append(Point(x, value, labels[x], state if state in (PASS, FAIL, INCONCLUSIVE) else ""))
            if points:
                chart.lines.append(Line(run.number, run.host, name, dashed, sorted(points, key=lambda p: p.x)))
            band = _band(run, name, x_of)
            if band is not None and not any(_same_band(band, b) for b in chart.bands):
                chart.bands.append(band)
    if chart_id == "server":
        chart.rules = _rules(runs)
    return chart


def _band(run: HostRun, name: str, x_of: dict[str, int]) -> Band | None:
    baseline = run.bench.baseline
    metric = BASELINE_FIGURE.get(name)
    if baseline is None or metric is None:
        return None
    spans = []
    medians = {}
    repeats = 0
    for level_name, figures in baseline.levels.items():
        values = [v for v in (_number(x) for x in figures.get(metric) or ()) if v is not None]
        x = x_of.get(level_name)
        if values and x is not None:
            spans.append((x, min(values), max(values)))
            medians[x] = statistics.median(values)
            repeats = max(repeats, len(values))
    if not spans:
        return None
    return Band(run.number, name, sorted(spans), baseline.name, baseline.key, repeats, medians)


def _same_band(a: Band, b: Band) -> bool:
    """One baseline compared by several hosts (mapped to one deployment key) is drawn once."""
    return (a.figure, a.name, a.key, a.spans) == (b.figure, b.name, b.key, b.spans)


def _rules(runs: Iterable[HostRun]) -> list[Rule]:
    by_value: dict[float, list[int]] = {}
    for run in runs:
        for lv in run.bench.levels:
            value = _number(server_figure(lv, "max_running_requests"))
            if value is not None and run.number not in by_value.setdefault(value, []):
                by_value[value].append(run.number)
    return [Rule(value, numbers) for value, numbers in sorted(by_value.items())]
