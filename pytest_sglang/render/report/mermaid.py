"""The benchmark levels of the Markdown summary as Mermaid ``xychart-beta`` charts, which GitHub
and GitLab draw in pull-request comments and job summaries (elsewhere the block shows as text).

One pair of charts per benchmark (output throughput, p99 time to first token), one line per
host, in the colours of the HTML report's charts. A benchmark of one level (every host at one
concurrency) gets bar charts instead (output throughput, p99 time to first token, p99
inter-token latency): one bar per host, and beside it a bar for the benchmark baseline it was
compared with (the repeats' median). Mermaid's charts have no legend, so a line under them
names the hosts by number (escaped as Markdown text), and no markers, so a failed or
inconclusive level is named in its x-axis label (``"48 (failed: 2)"``, ``"host 2 (failed)"``).
Inside the chart there is no outside text at all (titles are fixed words, levels are numbers
formatted here), and labels pass through
:func:`~pytest_sglang.render.report.escape.mermaid_text` all the same.
"""

from __future__ import annotations

from typing import Sequence

from pytest_sglang.base.text import number
from pytest_sglang.judge.gate.models import HostSection
from pytest_sglang.render.report.charts import PALETTE
from pytest_sglang.render.report.escape import md_code, md_text, mermaid_text
from pytest_sglang.render.report.series import FAIL, INCONCLUSIVE, Chart, Group, failed_hosts, host_groups
from pytest_sglang.render.report.text import shorten, shorten_front

# Mermaid's lines take the palette's first colours in order; each has a square that looks like it.
SQUARES = ("🟦", "🟧", "🟩", "🟪", "🟫", "🟨", "⬛")
MAX_LINES = len(SQUARES)
CHARTS = (("throughput", "output_throughput", "Output throughput", "tokens/s"), ("ttft", "ttft_p99", "p99 time to first token", "ms"))
BAR_CHARTS = (*CHARTS, ("itl", "itl_p99", "p99 inter-token latency", "ms"))
BASELINE_COLOR = "#9e9e9e"
MAX_BARS = 12  # hosts per bar chart; the HTML and JSON reports have them all


def charts(hosts: Sequence[HostSection]) -> list[str]:
    """Markdown lines: the charts of every benchmark of these hosts (none without benchmarks)."""
    out: list[str] = []
    for group in host_groups(hosts):
        out += _bar_group(group) if group.bars else _group(group)
    return out


def _bar_group(group: Group) -> list[str]:
    by_id = {c.id: c for c in group.charts}
    blocks: list[str] = []
    for chart_id, figure, title, unit in BAR_CHARTS:
        chart = by_id.get(chart_id)
        if chart is not None:
            blocks += _bar_block(group, chart, figure, title, unit)
    if not blocks:
        return []
    runs = group.runs[:MAX_BARS]
    legend = " · ".join(f"host {run.number}: {md_text(shorten_front(run.host, 60))}" for run in runs)
    more = len(group.runs) - len(runs)
    note = f" (and {more} more host(s): see the HTML or JSON report)" if more > 0 else ""
    names = sorted({b.name for c in group.charts for b in c.bands if b.number <= MAX_BARS})
    said = f" · grey bars, host N baseline: the median of the host's benchmark baseline repeats ({', '.join(_code_name(n) for n in names)})" if names else ""
    return blocks + [f"{legend}{note}{said}", ""]


def _code_name(name: str) -> str:
    return f"`{md_code(shorten(name, 40))}`"


def _bar_block(group: Group, chart: Chart, figure: str, title: str, unit: str) -> list[str]:
    """One ```` ```mermaid ```` bar chart: a bar per host (its level's result in the label),
    its benchmark baseline's median beside it."""
    lines = [line for line in chart.lines if line.figure == figure and line.number <= MAX_BARS and line.points]
    if not lines:
        return []
    bands = {b.number: b for b in chart.bands if b.figure == figure}
    labels: list[str] = []
    measured: list[float] = []
    baseline: list[float] = []
    for line in lines:
        point = line.points[0]
        state = {FAIL: " (failed)", INCONCLUSIVE: " (inconclusive)"}.get(point.state, "")
        labels.append(f"host {line.number}{state}")
        measured.append(point.y)
        baseline.append(0.0)
        band = bands.get(line.number)
        median = band.medians.get(point.x) if band is not None else None
        if median is not None:
            labels.append(f"host {line.number} baseline")
            measured.append(0.0)
            baseline.append(median)
    categories = ", ".join(f'"{mermaid_text(label)}"' for label in labels)
    # The baseline's bars are a second series, zero beside each host's bar, so they take their own colour.
    series = [measured, baseline] if any(baseline) else [measured]
    return [
        "```mermaid",
        '%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "' + ", ".join([PALETTE[0], BASELINE_COLOR][: len(series)]) + '"}}}}%%',
        "xychart-beta",
        f'    title "{mermaid_text(title)} at {mermaid_text(group.where)}: {mermaid_text(group.name)}"',
        f'    x-axis "host" [{categories}]',
        f'    y-axis "{mermaid_text(unit)}" 0 --> {_axis_top(max(measured + baseline))}',
        *(f"    bar [{', '.join(_figure(v, unit) for v in values)}]" for values in series),
        "```",
        "",
    ]


def _group(group: Group) -> list[str]:
    by_id = {c.id: c for c in group.charts}
    blocks: list[str] = []
    drawn: set[int] = set()
    for chart_id, figure, title, unit in CHARTS:
        chart = by_id.get(chart_id)
        if chart is None:
            continue
        block, numbers = _block(group, chart, figure, title, unit)
        if block:
            blocks += block
            drawn.update(numbers)
    if not blocks:
        return []
    legend = " · ".join(f"{SQUARES[n - 1]} {n}: {md_text(shorten_front(run.host, 60))}" for run in group.runs for n in [run.number] if n in drawn)
    more = len(group.runs) - len(drawn)
    note = f" (and {more} more host(s): see the HTML or JSON report)" if more > 0 else ""
    return blocks + [f"{legend}{note}", ""]


def _block(group: Group, chart: Chart, figure: str, title: str, unit: str) -> tuple[list[str], list[int]]:
    """One ```` ```mermaid ```` block: a line per host that has this figure at every level."""
    lines = [line for line in chart.lines if line.figure == figure and line.number <= MAX_LINES]
    count = len(group.levels)
    complete = [line for line in lines if sorted(p.x for p in line.points) == list(range(count))]
    if not complete:
        return [], []
    top = max(p.y for line in complete for p in line.points)
    palette = ", ".join(PALETTE[line.number - 1] for line in complete)
    levels = ", ".join(f'"{mermaid_text(_level_label(label, failed_hosts(complete, x)))}"' for x, label in enumerate(group.levels))
    body = [
        "```mermaid",
        '%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "' + palette + '"}}}}%%',
        "xychart-beta",
        f'    title "{mermaid_text(title)}: {mermaid_text(group.name)}"',
        f'    x-axis "{mermaid_text(group.axis)}" [{levels}]',
        f'    y-axis "{mermaid_text(unit)}" 0 --> {_axis_top(top)}',
    ]
    body += [f"    line [{', '.join(_figure(p.y, unit) for p in sorted(line.points, key=lambda p: p.x))}]" for line in complete]
    body += ["```", ""]
    return body, [line.number for line in complete]


def _level_label(label: str, failed: dict[str, list[int]]) -> str:
    """``"48"``, or ``"48 (failed: 2, inconclusive: 1)"`` naming the hosts by number."""
    said = [f"{state} {', '.join(str(n) for n in numbers)}" for state, numbers in (("failed:", failed.get(FAIL, [])), ("inconclusive:", failed.get(INCONCLUSIVE, []))) if numbers]
    return f"{label} ({', '.join(said)})" if said else label


def _figure(value: float, unit: str | None = None) -> str:
    """A value of a Mermaid data series: a plain number (no grouping), by the one formatter."""
    text = number(float(value), unit)
    return text[:-2] if text.endswith(".0") else text


def _axis_top(top: float) -> str:
    """A round top for the value axis, a little above the highest value (641 -> 700)."""
    if top <= 0:
        return "1"
    target = top * 1.05
    magnitude = 10.0 ** (len(str(int(target))) - 1) if target >= 1 else 1.0
    for step in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 10):
        if step * magnitude >= target:
            return _figure(step * magnitude)
    return _figure(10 * magnitude)
