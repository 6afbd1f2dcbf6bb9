"""The benchmark levels of the Markdown summary as Mermaid ``xychart-beta`` charts, which GitHub
and GitLab draw in pull-request comments and job summaries (elsewhere the block shows as text).

One pair of charts per benchmark (output throughput, p99 time to first token), one line per
host, in the colours of the HTML report's charts. Mermaid's charts have no legend, so a line of
coloured squares under them names the hosts (escaped as Markdown text); inside the chart there
is no outside text at all (titles are fixed words, levels are numbers formatted here), and
labels pass through :func:`~pytest_sglang.render.report.escape.mermaid_text` all the same.
"""

from __future__ import annotations

from typing import Sequence

from pytest_sglang.judge.gate.models import HostSection
from pytest_sglang.render.report.charts import PALETTE
from pytest_sglang.render.report.escape import md_text, mermaid_text
from pytest_sglang.render.report.series import Chart, Group, host_groups
from pytest_sglang.render.report.text import shorten_front

# Mermaid's lines take the palette's first colours in order; each has a square that looks like it.
SQUARES = ("🟦", "🟧", "🟩", "🟪", "🟫", "🟨", "⬛")
MAX_LINES = len(SQUARES)
CHARTS = (("throughput", "output_throughput", "Output throughput", "tokens/s"), ("ttft", "ttft_p99", "p99 time to first token", "ms"))


def charts(hosts: Sequence[HostSection]) -> list[str]:
    """Markdown lines: the charts of every benchmark of these hosts (none without benchmarks)."""
    out: list[str] = []
    for group in host_groups(hosts):
        if len(group.levels) < 2:
            continue  # one level: a point per host, which the table says better
        out += _group(group)
    return out


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
    legend = " · ".join(f"{SQUARES[n - 1]} {md_text(shorten_front(run.host, 60))}" for run in group.runs for n in [run.number] if n in drawn)
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
    levels = ", ".join(f'"{mermaid_text(label)}"' for label in group.levels)
    body = [
        "```mermaid",
        '%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "' + palette + '"}}}}%%',
        "xychart-beta",
        f'    title "{mermaid_text(title)}: {mermaid_text(group.name)}"',
        f'    x-axis "{mermaid_text(group.axis)}" [{levels}]',
        f'    y-axis "{mermaid_text(unit)}" 0 --> {_axis_top(top)}',
    ]
    body += [f"    line [{', '.join(_figure(p.y) for p in sorted(line.points, key=lambda p: p.x))}]" for line in complete]
    body += ["```", ""]
    return body, [line.number for line in complete]


def _figure(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


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
