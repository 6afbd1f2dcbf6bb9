"""The benchmark charts of the HTML report as inline SVG, drawn with leather (the ``report``
extra: ``pip install 'pytest-sglang[report]'``).

Why leather: it is pure Python with no dependency (a 30 KB wheel), draws SVG offline and fast,
and leaves the look to the page's own CSS. On the 2-core development machine the charts of a
32-host, 10-level run (4 charts, 224 lines, 2,240 points) take 0.2-0.3 s and 0.45 MB
(``python benchmarks/report_html.py``: the whole page 0.26-0.52 s, 0.94 MB); pygal took about
0.8 s and 0.7 MB for as many lines, matplotlib 0.8 s plus 0.8-1.4 s to import (and about
120 MB of dependencies): each alone over the page's budget of 1 s.

leather lays out the axes, ticks and scales; the marks are this module's own leather shapes
(:class:`leather.Shape`), so that every line is one ``<g class="series" data-series=N>`` with
one ``<circle>`` per point, a failed or inconclusive level a ring on its point, the benchmark
baseline's repeats a shaded band, and an effective ``max_running_requests`` a dotted rule. A
chart of one level draws a ``<rect class="bar">`` per host instead (in its line's ``<g
class="series">``), a failed or inconclusive bar outlined (``<rect class="mark fail">``), and
the baseline's repeats as a shaded bar from the lowest to the highest beside it. The
SVG carries no outside text: lines are named by their legend number, levels by numbers
formatted in :mod:`pytest_sglang.render.report.series`; the page's legend (HTML, escaped) names the
hosts.
"""

from __future__ import annotations

import math
import re
import threading
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

from pytest_sglang.base.text import number
from pytest_sglang.render.report.series import FAIL, INCONCLUSIVE, Band, Chart, Group, Line, Point, number_text

# Colours by line number (cycled), chosen to stay apart from the marks' red and amber.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#c9a200", "#333333", "#17becf", "#e377c2", "#7f7f7f")
FAIL_COLOR = "#d62728"
INCONCLUSIVE_COLOR = "#b45309"
WIDTH, HEIGHT = 560, 300
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"
# leather's look is set through its theme module; these values hold while a chart is drawn.
THEME: dict[str, Any] = {
    "background_color": "#ffffff",
    "margin": 0.02,
    "title_font_family": FONT,
    "legend_font_char_height": 0,  # the legend is the page's (HTML, escaped), not leather's
    "legend_gap": 0,
    "axis_title_color": "#444",
    "axis_title_font_family": FONT,
    "axis_title_font_size": 12,
    "axis_title_font_char_height": 12,
    "axis_title_font_char_width": 7,
    "axis_title_gap": 10,
    "tick_color": "#e6e6e6",
    "zero_color": "#999",
    "label_color": "#555",
    "tick_font_family": FONT,
    "tick_font_size": 11,
    "tick_font_char_height": 11,
    "tick_font_char_width": 7,
}
_THEME_LOCK = threading.Lock()


def available() -> bool:
    """Whether the ``report`` extra is installed (leather can be imported)."""
    try:
        import leather  # noqa: F401
    except ImportError:
        return False
    return True


def color(number: int) -> str:
    return PALETTE[(number - 1) % len(PALETTE)]


@contextmanager
def _theme() -> Iterator[Any]:
    """leather with this report's look, restored afterwards (its theme is module-wide)."""
    import leather
    from leather import theme

    with _THEME_LOCK, warnings.catch_warnings():
        # A library's warning is no line for the user's terminal: values outside the scale are
        # clipped to it (below), and nothing else leather might say changes the page.
        warnings.simplefilter("ignore")
        saved = {name: getattr(theme, name) for name in THEME}
        try:
            for name, value in THEME.items():
                setattr(theme, name, value)
            yield leather
        finally:
            for name, value in saved.items():
                setattr(theme, name, value)


def _f(value: Any) -> str:
    return f"{float(value):.1f}"


def _shapes(leather: Any) -> dict[str, type]:
    """leather shapes for a line, a band, the marks and the rules, made once leather is imported."""

    class _Shape(leather.Shape):
        def validate_series(self, series: Any) -> bool:
            return True

        def legend_to_svg(self, series: Any, palette: Any) -> list[Any]:
            return []

    class LineShape(_Shape):
        def __init__(self, line: Line, unit: str) -> None:
            self.line = line
            self.unit = unit

        def to_svg(self, width: Any, height: Any, x_scale: Any, y_scale: Any, series: Any, palette: Any) -> ET.Element:
            line = self.line
            group = ET.Element("g", {"class": "series", "data-series": str(line.number), "data-figure": line.figure, "data-points": str(len(line.points))})
            xy = [(x_scale.project(p.x + 1, 0, width), y_scale.project(p.y, height, 0)) for p in line.points]
            path = ET.SubElement(group, "path", {"d": " ".join(f"{'L' if i else 'M'}{_f(x)} {_f(y)}" for i, (x, y) in enumerate(xy)), "fill": "none", "stroke": color(line.number), "stroke-width": "2"})
            if line.dashed:
                path.set("stroke-dasharray", "5 4")
            for p, (x, y) in zip(line.points, xy):
                dot = ET.SubElement(group, "circle", {"class": "point", "cx": _f(x), "cy": _f(y), "r": "3", "fill": color(line.number)})
                ET.SubElement(dot, "title").text = f"{line.number}: {p.level}: {number(p.y, self.unit)}" + (f" ({p.state})" if p.state else "")
            return group

    class BandShape(_Shape):
        def __init__(self, band: Any) -> None:
            self.band = band

        def to_svg(self, width: Any, height: Any, x_scale: Any, y_scale: Any, series: Any, palette: Any) -> ET.Element:
            band = self.band
            group = ET.Element("g", {"class": "band", "data-series": str(band.number), "data-figure": band.figure})
            spans = band.spans
            if len(spans) == 1:  # one level: a short bar of the band's width
                x, low, high = spans[0]
                spans = [(x - 0.15, low, high), (x + 0.15, low, high)]
            upper = [f"{_f(x_scale.project(Decimal(str(x + 1)), 0, width))},{_f(y_scale.project(high, height, 0))}" for x, _, high in spans]
            lower = [f"{_f(x_scale.project(Decimal(str(x + 1)), 0, width))},{_f(y_scale.project(low, height, 0))}" for x, low, _ in reversed(spans)]
            polygon = ET.SubElement(group, "polygon", {"points": " ".join(upper + lower), "fill": color(band.number), "fill-opacity": "0.18", "stroke": "none"})
            ET.SubElement(polygon, "title").text = f"{band.number}: benchmark baseline, {band.repeats} repeat(s): lowest to highest"
            return group

    class MarksShape(_Shape):
        def __init__(self, chart: Chart) -> None:
            self.chart = chart

        def to_svg(self, width: Any, height: Any, x_scale: Any, y_scale: Any, series: Any, palette: Any) -> ET.Element:
            group = ET.Element("g", {"class": "marks"})
            for line, p in self.chart.marks:
                failed = p.state == FAIL
                ring = ET.SubElement(
                    group,
                    "circle",
                    {
                        "class": f"mark {p.state}",
                        "data-series": str(line.number),
                        "cx": _f(x_scale.project(p.x + 1, 0, width)),
                        "cy": _f(y_scale.project(p.y, height, 0)),
                        "r": "7",
                        "fill": "none",
                        "stroke": FAIL_COLOR if failed else INCONCLUSIVE_COLOR,
                        "stroke-width": "2.5" if failed else "2",
                    },
                )
                if not failed:
                    ring.set("stroke-dasharray", "3 2")
                ET.SubElement(ring, "title").text = f"{line.number}: {p.level}: {'failed' if failed else 'inconclusive'}"
            return group

    class RulesShape(_Shape):
        def __init__(self, chart: Chart) -> None:
            self.chart = chart

        def to_svg(self, width: Any, height: Any, x_scale: Any, y_scale: Any, series: Any, palette: Any) -> ET.Element:
            group = ET.Element("g", {"class": "rules"})
            for rule in self.chart.rules:
                y = _f(y_scale.project(rule.value, height, 0))
                line = ET.SubElement(group, "line", {"class": "rule", "data-value": number(rule.value, "requests"), "x1": "0", "x2": _f(width), "y1": y, "y2": y, "stroke": "#666", "stroke-width": "1.5", "stroke-dasharray": "2 3"})
                hosts = ", ".join(str(n) for n in rule.numbers)
                ET.SubElement(line, "title").text = f"effective max_running_requests {number(rule.value, 'requests')} ({hosts})"
                label = ET.SubElement(group, "text", {"x": _f(width), "y": str(float(y) - 4), "text-anchor": "end", "font-size": "11", "fill": "#555"})
                label.text = f"max_running_requests {number(rule.value, 'requests')}"
            return group

    class BarsShape(_Shape):
        """A bar per host (at x = its slot), the baseline's repeats as a shaded bar beside it."""

        def __init__(self, chart: Chart, slots: dict[int, int]) -> None:
            self.chart = chart
            self.slots = slots  # host number -> x

        def to_svg(self, width: Any, height: Any, x_scale: Any, y_scale: Any, series: Any, palette: Any) -> ET.Element:
            group = ET.Element("g", {"class": "bars"})
            wide = BAR_WIDTH * (float(x_scale.project(2, 0, width)) - float(x_scale.project(1, 0, width)))
            bands = {band.number: band for band in self.chart.bands}
            for line in self.chart.lines:
                band = bands.get(line.number)
                slot = self.slots[line.number]
                left = float(x_scale.project(slot - (BAR_SHIFT if band else 0.0), 0, width)) - wide / 2
                for p in line.points:
                    _bar(group, self.chart, line, p, (left, wide), (float(y_scale.project(p.y, height, 0)), float(y_scale.project(0, height, 0))))
                if band is not None:
                    _baseline_bar(group, self.chart, band, float(x_scale.project(slot + BAR_SHIFT, 0, width)) - wide / 2, wide, lambda v: float(y_scale.project(v, height, 0)))
            return group

    return {"line": LineShape, "band": BandShape, "marks": MarksShape, "rules": RulesShape, "bars": BarsShape}


# A bar's width in level slots; a bar beside a baseline's bar moves this far off its slot.
BAR_WIDTH, BAR_SHIFT = 0.3, 0.17


def _bar(group: ET.Element, chart: Chart, line: Line, p: Point, across: tuple[float, float], down: tuple[float, float]) -> None:
    """A host's bar (``across``: its left edge and width; ``down``: its top and the axis), outlined when its level failed or was inconclusive."""
    (left, wide), (top, base) = across, down
    tall = max(base - top, 0.5)
    series = ET.SubElement(group, "g", {"class": "series", "data-series": str(line.number), "data-figure": line.figure, "data-points": "1"})
    bar = ET.SubElement(series, "rect", {"class": "bar", "x": _f(left), "y": _f(top), "width": _f(wide), "height": _f(tall), "fill": color(line.number)})
    ET.SubElement(bar, "title").text = f"{line.number}: {p.level}: {number(p.y, chart.unit)}" + (f" ({p.state})" if p.state else "")
    if p.state not in (FAIL, INCONCLUSIVE):
        return
    failed = p.state == FAIL
    outline = {"x": _f(left - 3), "y": _f(top - 3), "width": _f(wide + 6), "height": _f(tall + 3), "fill": "none", "stroke": FAIL_COLOR if failed else INCONCLUSIVE_COLOR, "stroke-width": "2.5" if failed else "2"}
    mark = ET.SubElement(group, "rect", {"class": f"mark {p.state}", "data-series": str(line.number), **outline})
    if not failed:
        mark.set("stroke-dasharray", "3 2")
    ET.SubElement(mark, "title").text = f"{line.number}: {p.level}: {'failed' if failed else 'inconclusive'}"


def _baseline_bar(group: ET.Element, chart: Chart, band: Band, left: float, wide: float, y: Any) -> None:
    """A benchmark baseline's repeats beside a host's bar: shaded from the lowest to the highest, a line at the median."""
    for x, low, high in band.spans:
        shade = ET.SubElement(group, "g", {"class": "band", "data-series": str(band.number), "data-figure": band.figure})
        rect = ET.SubElement(shade, "rect", {"x": _f(left), "y": _f(y(high)), "width": _f(wide), "height": _f(max(y(low) - y(high), 1.5)), "fill": color(band.number), "fill-opacity": "0.25", "stroke": color(band.number), "stroke-dasharray": "3 2"})
        median = band.medians.get(x)
        told = f", median {number(median, chart.unit)}" if median is not None else ""
        ET.SubElement(rect, "title").text = f"{band.number}: benchmark baseline, {band.repeats} repeat(s): {number(low, chart.unit)} to {number(high, chart.unit)}{told}"
        if median is not None:
            ET.SubElement(shade, "line", {"class": "median", "x1": _f(left), "x2": _f(left + wide), "y1": _f(y(median)), "y2": _f(y(median)), "stroke": color(band.number), "stroke-width": "2"})


def _y_max(chart: Chart) -> float:
    values = [p.y for line in chart.lines for p in line.points]
    values += [high for band in chart.bands for _, _, high in band.spans]
    values += [rule.value for rule in chart.rules]
    top = max((v for v in values if math.isfinite(v)), default=0.0)
    return top * 1.08 if top > 0 else 1.0


def _clipper(top: float) -> Any:
    """A value clipped to the y scale (0 to ``top``): a figure below 0 (a baseline band's low
    end) is drawn at the axis, never outside the chart."""

    def clip(value: Any) -> float:
        number = float(value)
        return min(max(number, 0.0), top) if math.isfinite(number) else 0.0

    return clip


def chart_svg(group: Group, chart: Chart) -> str:
    """One chart as an inline ``<svg>`` element (a string), sized by its viewBox."""
    with _theme() as leather:
        shapes = _shapes(leather)
        plot = leather.Chart()
        if chart.bars:
            _bars(leather, plot, shapes, chart)
        else:
            _lines(leather, plot, shapes, group, chart)
        body = plot.to_svg_group(WIDTH, HEIGHT)
    _round_coordinates(body)
    root = ET.Element(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "viewBox": f"0 0 {WIDTH} {HEIGHT}",
            "role": "img",
            "class": "plot bars" if chart.bars else "plot",
            "data-chart": chart.id,
            "data-series-count": str(len(chart.lines)),
            "data-point-count": str(chart.points),
            "data-mark-count": str(len(chart.marks)),
        },
    )
    ET.SubElement(root, "title").text = chart.title
    root.append(body)
    return ET.tostring(root, encoding="unicode", short_empty_elements=True)


_LONG_DECIMAL = re.compile(r"(-?\d+\.\d)\d+")


def _round_coordinates(element: ET.Element) -> None:
    """leather's own coordinates to a tenth of a pixel (``118.30000000000001`` is ``118.3``):
    no noise digits in the page's source, and a smaller page."""
    for node in element.iter():
        for name, value in node.attrib.items():
            if name != "class" and not name.startswith("data-"):
                node.set(name, _LONG_DECIMAL.sub(lambda m: m.group(1), value))


def _y_scale(leather: Any, plot: Any, chart: Chart) -> Any:
    """The y scale from 0 to the chart's top, where a value outside it is drawn at its edge;
    returns that clipping. The edge is leather's highest tick, which may lie above the data:
    a tick clipped to the data's top would be labelled at the wrong height."""
    top = _y_max(chart)
    top = max(top, *(float(t) for t in leather.Linear(0, top).ticks()))
    clip = _clipper(top)

    def project(scale: Any, value: Any, range_min: Any, range_max: Any) -> Any:
        return leather.Linear.project(scale, clip(value), range_min, range_max)

    plot.set_y_scale(type("ClippedLinear", (leather.Linear,), {"project": project})(0, top))
    return clip


def _bars(leather: Any, plot: Any, shapes: dict[str, type], chart: Chart) -> None:
    """A bar per host of a one-level chart: hosts at x = 1..n, labelled by their numbers."""
    numbers = [line.number for line in chart.lines]
    slots = {n: i + 1 for i, n in enumerate(numbers)}
    plot.set_x_scale(leather.Linear(0.4, len(numbers) + 0.6))
    clip = _y_scale(leather, plot, chart)
    plot.add_x_axis(ticks=list(range(1, len(numbers) + 1)), tick_formatter=lambda value, index, total: str(numbers[int(value) - 1]) if 1 <= int(value) <= len(numbers) else "", name="host (numbered as in the legend)")
    plot.add_y_axis(tick_formatter=lambda value, index, total: number_text(float(value)), name=chart.unit)
    if chart.rules:
        plot.add_series(leather.Series([(1, clip(rule.value)) for rule in chart.rules]), shapes["rules"](chart))
    plot.add_series(leather.Series([(slots[line.number], clip(p.y)) for line in chart.lines for p in line.points]), shapes["bars"](chart, slots))


def _lines(leather: Any, plot: Any, shapes: dict[str, type], group: Group, chart: Chart) -> None:
    """A line per host (and figure) over the group's levels."""
    count = len(group.levels)
    plot.set_x_scale(leather.Linear(0.6, count + 0.4))  # levels at 1..count: no "zero" line among them
    clip = _y_scale(leather, plot, chart)
    labels = group.levels
    plot.add_x_axis(ticks=list(range(1, count + 1)), tick_formatter=lambda value, index, total: labels[int(value) - 1] if 1 <= int(value) <= count else "", name=group.axis)
    plot.add_y_axis(tick_formatter=lambda value, index, total: number_text(float(value)), name=chart.unit)
    for band in chart.bands:
        plot.add_series(leather.Series([(x + 1, clip(v)) for x, low, high in band.spans for v in (low, high)]), shapes["band"](band))
    if chart.rules:
        plot.add_series(leather.Series([(1, clip(rule.value)) for rule in chart.rules]), shapes["rules"](chart))
    for line in chart.lines:
        plot.add_series(leather.Series([(p.x + 1, clip(p.y)) for p in line.points]), shapes["line"](line, chart.unit))
    if chart.marks:
        plot.add_series(leather.Series([(p.x + 1, clip(p.y)) for _, p in chart.marks]), shapes["marks"](chart))
