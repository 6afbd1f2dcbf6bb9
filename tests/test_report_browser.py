"""The HTML report in a real browser: headless Chromium (Debian's ``chromium``) driven by
Playwright's Python API, offline. The page of a whole gate run (``tests/report_run.py``: the
seed deployment's baseline and candidate with benchmarks and baselines) loads with no console
error and no request, draws every chart with the series and points the JSON report holds (and
the example suite's seed gate, one level per host, as a bar per host),
filters the configuration table, shows the verdict without scrolling, reads with JavaScript off
and prints; a served model name carrying ``<script>`` and ``<img onerror>`` runs nothing and
shows as written. The screenshot of docs/reports.md is taken here:

    python tests/test_report_browser.py --update      # rewrites docs/img/report.png

Without Chromium or Playwright the tests skip, saying what to install (``apt-get install
chromium``, ``pip install playwright``; Playwright uses the system browser, never a download).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report_run  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[1]
SCREENSHOT = REPO / "docs" / "img" / "report.png"
HOSTILE = '/models/<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
VIEWPORT = {"width": 1280, "height": 800}
# The first screen of the page for the docs: the verdict, the hosts and the benchmark charts.
SHOT_CLIP = {"x": 0, "y": 0, "width": 1280, "height": 1330}

pytestmark = pytest.mark.slow


def launch() -> tuple[Any, Any]:
    """(playwright, browser), or a skip naming what to install."""
    if not CHROMIUM.exists():
        pytest.skip(f"the browser tier needs Chromium at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the browser tier needs Playwright's Python package: pip install playwright (it drives the system Chromium; no 'playwright install')")
    playwright = sync_playwright().start()
    # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    return playwright, playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    playwright, chromium = launch()
    yield chromium
    chromium.close()
    playwright.stop()


@pytest.fixture(scope="module")
def gate(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    work = tmp_path_factory.mktemp("gate")
    done = report_run.gate_run(work)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    return work / "out" / "report.html", json.loads((work / "out" / "report.json").read_text())


@pytest.fixture(scope="module")
def seed(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The example suite's seed gate: one benchmark level per host."""
    work = tmp_path_factory.mktemp("seed")
    done = report_run.seed_gate_run(work)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    return work / "out" / "report.html", json.loads((work / "out" / "report.json").read_text())


@pytest.fixture(scope="module")
def hostile(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page of a run against a host that serves a model named with markup."""
    work = tmp_path_factory.mktemp("hostile")
    import pytest_sglang.simulator

    profile = json.loads((Path(pytest_sglang.simulator.__file__).parent / "profiles" / "qwen35-122b-a10b-4xrtx6000-baseline.json").read_text())
    profile["model"]["model_path"] = profile["model"]["served_model_name"] = HOSTILE
    profile["server_args"] = {**profile.get("server_args", {}), "model_path": HOSTILE, "served_model_name": HOSTILE}
    profile.pop("launch_command", None)
    (work / "hostile.json").write_text(json.dumps(profile))
    (work / "test_gate.py").write_text("def test_tp(effective):\n    assert effective.tp_size == 4\n")
    done = report_run.pytest_run(work, f"--sglang-host=sim://{work / 'hostile.json'}", "--sglang-report-html=out/report.html")
    assert done.returncode == 0, done.stdout[-3000:]
    return work / "out" / "report.html"


class Opened:
    """A page opened offline, with every console message, page error and request it made."""

    def __init__(self, browser: Any, path: Path, **context: Any) -> None:
        self.context = browser.new_context(viewport=context.pop("viewport", VIEWPORT), **context)
        self.context.set_offline(True)
        self.console: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.url = path.as_uri()
        self.page = self.context.new_page()
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(self.url)
        self.page.wait_for_load_state("load")

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def opened(browser: Any, gate: tuple[Path, dict[str, Any]]) -> Iterator[Opened]:
    page = Opened(browser, gate[0])
    yield page
    page.close()


def expected_charts(doc: dict[str, Any]) -> dict[str, tuple[int, int, int]]:
    """Per chart, from the JSON report alone: (lines, points, marked points). One line per host
    (two on the latency and /metrics charts: p99 and p50, running and queue); a mark on each
    point of a level that failed or was inconclusive."""
    lines = {"throughput": 0, "ttft": 0, "itl": 0, "server": 0}
    points = dict.fromkeys(lines, 0)
    marks = dict.fromkeys(lines, 0)
    for host in doc["hosts"]:
        for bench in host["benchmarks"]:
            levels = bench["levels"]
            judged = sum(1 for lv in levels if lv.get("verdict") in ("fail", "inconclusive"))
            for chart, per_host in (("throughput", 1), ("ttft", 2), ("itl", 2), ("server", 2)):
                lines[chart] += per_host
                points[chart] += per_host * len(levels)
                marks[chart] += per_host * judged
    return {chart: (lines[chart], points[chart], marks[chart]) for chart in lines}


# ---- the tests ------------------------------------------------------------------------------------


def test_the_page_loads_offline_with_no_console_error_and_no_request(opened):
    assert opened.errors == [] and [m for m in opened.console if m.startswith("error")] == []
    assert opened.requests == [opened.url]  # the page itself, nothing else
    assert opened.page.evaluate("performance.getEntriesByType('resource').length") == 0


def test_every_chart_is_drawn_with_one_line_per_host_and_a_point_per_level(opened, gate):
    _, doc = gate
    drawn = opened.page.evaluate(
        """() => Array.from(document.querySelectorAll('svg.plot')).map(svg => ({
            chart: svg.dataset.chart,
            lines: svg.querySelectorAll('g.series').length,
            points: svg.querySelectorAll('g.series circle.point').length,
            marks: svg.querySelectorAll('circle.mark').length,
            drawn: Array.from(svg.querySelectorAll('g.series path')).every(p => p.getTotalLength() > 0),
            inside: Array.from(svg.querySelectorAll('circle.point')).every(c => {
                const box = c.getBoundingClientRect(), frame = svg.getBoundingClientRect();
                return box.width > 0 && box.left >= frame.left && box.right <= frame.right && box.top >= frame.top && box.bottom <= frame.bottom;
            }),
            bands: svg.querySelectorAll('g.band polygon').length,
            rules: svg.querySelectorAll('line.rule').length,
        }))"""
    )
    expected = expected_charts(doc)
    assert [d["chart"] for d in drawn] == list(expected)
    assert {d["chart"]: (d["lines"], d["points"], d["marks"]) for d in drawn} == expected
    assert all(d["drawn"] and d["inside"] for d in drawn), drawn
    by_chart = {d["chart"]: d for d in drawn}
    compared = sum(1 for h in doc["hosts"] for b in h["benchmarks"] if b.get("baseline") and b["baseline"]["levels"])
    assert compared >= 1  # a busy machine may keep one recording from being made; not both
    assert by_chart["throughput"]["bands"] == compared and by_chart["ttft"]["bands"] == 2 * compared  # each host's baseline repeats
    assert by_chart["server"]["rules"] == 2  # effective max_running_requests 48 and 26
    assert expected["ttft"][2] > 0  # the candidate's capped running requests fail the latency threshold


def test_one_level_per_host_draws_a_bar_per_host_inside_each_chart(browser, seed):
    """The seed gate benchmarks each host at concurrency=48: every chart is a bar per host,
    drawn inside its frame with the height of its figure, a failed host's bar outlined."""
    path, doc = seed
    opened = Opened(browser, path)
    try:
        drawn = opened.page.evaluate(
            """() => Array.from(document.querySelectorAll('svg.plot')).map(svg => {
                const frame = svg.getBoundingClientRect();
                const bars = Array.from(svg.querySelectorAll('g.series rect.bar'));
                return {
                    chart: svg.dataset.chart,
                    bars: bars.map(b => [Number(b.closest('g.series').dataset.series), b.getBoundingClientRect().height]),
                    inside: bars.every(b => { const box = b.getBoundingClientRect(); return box.height > 0 && box.left >= frame.left && box.right <= frame.right && box.top >= frame.top && box.bottom <= frame.bottom; }),
                    marks: Array.from(svg.querySelectorAll('rect.mark.fail')).map(m => Number(m.dataset.series)),
                    points: svg.querySelectorAll('circle.point').length,
                };
            })"""
        )
        assert opened.errors == [] and [m for m in opened.console if m.startswith("error")] == []
    finally:
        opened.close()
    failed = [n for n, h in enumerate(doc["hosts"], 1) for b in h["benchmarks"] for lv in b["levels"] if lv.get("verdict") == "fail"]
    assert failed == [2]  # the candidate's queued requests fail the p99 TTFT limit
    assert [d["chart"] for d in drawn] == ["throughput", "ttft", "itl", "server"]
    for d in drawn:
        assert [n for n, _ in d["bars"]] == [1, 2] and d["inside"] and d["points"] == 0, d
        assert d["marks"] == failed, d
    ttft = {n: height for n, height in next(d for d in drawn if d["chart"] == "ttft")["bars"]}
    levels = [h["benchmarks"][0]["levels"][0]["ttft"]["p99"] for h in doc["hosts"]]
    assert abs(ttft[2] / ttft[1] - levels[1] / levels[0]) < 0.05 * levels[1] / levels[0]  # bars as tall as their figures


def test_the_filter_narrows_the_configuration_table(opened, gate):
    _, doc = gate
    page = opened.page
    total = len(doc["hosts"][1]["effective"])

    def visible() -> list[str]:
        return page.evaluate("() => Array.from(document.querySelectorAll('#cfg-2 tbody tr')).filter(r => !r.hidden && r.offsetParent !== null).map(r => r.innerText)")

    assert len(visible()) == total
    page.fill('.filter[data-table="cfg-2"] input[type=search]', "mamba")
    rows = visible()
    assert 0 < len(rows) < total and all("mamba" in row.lower() for row in rows)
    assert page.inner_text('.filter[data-table="cfg-2"] output') == f"{len(rows)} of {total} values"
    page.fill('.filter[data-table="cfg-2"] input[type=search]', "")
    page.check('.filter[data-table="cfg-2"] input[type=checkbox]')
    changed = [name for name, e in doc["hosts"][1]["effective"].items() if e["requested_source"] is not None and e["requested"] != e["value"]]
    assert [row.split("\t")[0] for row in visible()] == changed and "max_running_requests" in changed


@pytest.mark.parametrize("viewport", [VIEWPORT, {"width": 1366, "height": 768}, {"width": 800, "height": 600}], ids=["1280x800", "1366x768", "800x600"])
def test_the_verdict_and_its_reasons_are_visible_without_scrolling(browser, gate, viewport):
    opened = Opened(browser, gate[0], viewport=viewport)
    try:
        page = opened.page
        assert page.evaluate("window.scrollY") == 0
        for selector in ("#verdict h1", "#verdict ol.reasons li"):
            box = page.locator(selector).first.bounding_box()
            assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"], (selector, box)
        assert page.inner_text("#verdict h1") == "SGLang promotion gate: HOLD"
    finally:
        opened.close()


def test_markup_in_a_served_model_name_runs_nothing_and_shows_as_written(browser, hostile):
    opened = Opened(browser, hostile)
    try:
        page = opened.page
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.evaluate("document.querySelectorAll('img').length") == 0
        assert page.evaluate("document.querySelectorAll('script').length") == 1  # the page's own
        assert HOSTILE in page.inner_text("body")
        assert opened.errors == [] and [m for m in opened.console if m.startswith("error")] == []
        assert opened.requests == [opened.url]
    finally:
        opened.close()


def test_the_page_reads_with_javascript_off(browser, gate):
    opened = Opened(browser, gate[0], java_script_enabled=False)
    try:
        page = opened.page
        assert page.locator("svg.plot").count() == 4
        assert page.locator('.filter[data-table="cfg-1"]').is_hidden()  # the filter needs the script
        assert page.locator("#cfg-1 tbody tr").count() == len(gate[1]["hosts"][0]["effective"])
        assert page.locator("#cfg-1").is_visible()
    finally:
        opened.close()


def test_the_page_prints_with_every_section_open(opened):
    pdf = opened.page.pdf(format="A4")
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") > 3
    assert opened.page.evaluate("Array.from(document.querySelectorAll('details')).every(d => d.open)")


def test_a_screenshot_of_the_page(opened, tmp_path):
    """The picture docs/reports.md shows is taken like this (``--update`` writes it there)."""
    shot = tmp_path / "report.png"
    opened.page.screenshot(path=str(shot), clip=SHOT_CLIP, full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert SCREENSHOT.exists(), "docs/img/report.png is missing: python tests/test_report_browser.py --update"
    assert "img/report.png" in (REPO / "docs" / "reports.md").read_text()


def update_screenshot(work: Path) -> Path:
    """Run the gate in ``work`` and write the page's first screen to docs/img/report.png."""
    done = report_run.gate_run(work)
    if done.returncode != 1:
        raise SystemExit(f"the gate run ended with {done.returncode}, not 1:\n{done.stdout[-3000:]}")
    playwright, chromium = launch()
    try:
        opened = Opened(chromium, work / "out" / "report.html")
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        opened.page.screenshot(path=str(SCREENSHOT), clip=SHOT_CLIP, full_page=True)
        opened.close()
    finally:
        chromium.close()
        playwright.stop()
    return SCREENSHOT


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        raise SystemExit("usage: python tests/test_report_browser.py --update   (rewrites docs/img/report.png)")
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        print(f"wrote {update_screenshot(Path(folder))}")
