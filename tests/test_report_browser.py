"""The HTML report in a real browser: headless Chromium (Debian's ``chromium``) driven by
Playwright's Python API, offline. The page of a whole gate run (``tests/report_run.py``: the
seed deployment's baseline and candidate with benchmarks and baselines) loads with no console
error and no request, draws every chart with the series and points the JSON report holds (and
the example suite's seed gate, one level per host, as a bar per host),
filters the configuration table, shows the verdict without scrolling, reads with JavaScript off
and prints; a served model name carrying ``<script>`` and ``<img onerror>`` runs nothing and
shows as written. The fleet fits: for the seed gate (``report_run.seed_gate``) and a fleet of 32
hosts, at 1280x800 and 800x600, no cell of the fleet or findings tables is taller than three
lines, no word in them is broken across lines, and the host column stays in place when the
fleet table scrolls sideways. The screenshots of docs/reports.md are taken here:

    python tests/test_report_browser.py --update      # rewrites docs/img/report.png and docs/img/seed-gate-*.png

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
# The seed gate's page as a reviewer opens it: one screen each of its top, its fleet and the
# candidate's section.
SEED_VIEWPORT = {"width": 1366, "height": 900}
SEED_SHOTS = {"top": "#verdict", "fleet": "#fleet", "candidate": "#host-2"}
FITTING = [{"width": 1280, "height": 800}, {"width": 800, "height": 600}]

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
def seed(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed gate's page: the example suite, baseline and candidate, fleet check, smoke benchmark."""
    work = tmp_path_factory.mktemp("seed")
    done = report_run.seed_gate(work)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    return work / "out" / "report.html"


def fleet_of_32(folder: Path) -> Path:
    """The page of a made-up run of 32 hosts (``benchmarks/report_html.py``) with a fleet check:
    the held hosts differ from the fleet in their running cap, its finding, their launch
    command and a long list, and one host in eight in its schedule policy; rendered from the
    JSON report by ``pytest-sglang report``, as a user renders a stored report."""
    from test_report_html import synthetic_report

    from pytest_sglang.cli.main import main

    doc = synthetic_report(32, 4)
    differences = {}
    for host in doc["hosts"]:
        fields = []
        if host["verdict"] == "hold":
            finding = {"severity": "warning", "status": "confirmed", "summary": "max_running_requests: requested 48, in effect 26"}
            fields += [
                ("effective.max_running_requests", 26, 48),
                ("effective.mamba_cache_size", 132, 160),
                ("findings.capacity.mamba-cap", finding, None),
                ("launch.requested.speculative_algorithm", "NEXTN", None),
                ("server_args.cuda_graph_bs", list(range(1, 33)) + list(range(40, 520, 8)), [1, 2, 4] + list(range(8, 520, 8))),
            ]
        if host["effective"]["schedule_policy"]["value"] != "fcfs":
            fields.append(("effective.schedule_policy", "lpm", "fcfs"))
        if fields:
            differences[host["host"]] = [{"field": f, "value": v, "fleet_value": w, "source": "/server_info", "fleet_source": "/server_info", "finding": None, "status": "differs", "note": None, "group": f} for f, v, w in fields]
    names = sorted({d["field"] for diffs in differences.values() for d in diffs})
    doc["run_checks"] = [
        {
            "check": "sglang-fleet",
            "host": None,
            "passed": False,
            "failures": [f"{h}: {len(d)} field(s) differ" for h, d in differences.items()],
            "notes": [],
            "nodeid": "::sglang-fleet",
            "agree": False,
            "hosts": [h["host"] for h in doc["hosts"]],
            "reference": doc["hosts"][0]["host"],
            "fields_compared": 424,
            "differing_fields": names,
            "differences": differences,
            "groups": {},
            "tolerated": {},
            "unread": {},
        }
    ]
    # the verdicts the gate gives such a run, so the stored report agrees with its contents
    from pytest_sglang.judge.gate import RunReport
    from pytest_sglang.judge.gate.verdict import rejudge

    judged = rejudge(RunReport.model_validate(doc))
    doc.update(verdict=judged.verdict, reasons=judged.reasons)
    for host in doc["hosts"]:
        host.update(verdict=judged.hosts[host["host"]].verdict, reasons=judged.hosts[host["host"]].reasons)
    source, page = folder / "fleet32.json", folder / "fleet32.html"
    source.write_text(json.dumps(doc))
    assert main(["report", str(source), "--html", str(page)]) == 0
    return page


@pytest.fixture(scope="module")
def fleet32(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fleet_of_32(tmp_path_factory.mktemp("fleet32"))


@pytest.fixture(scope="module")
def seed_report(seed: Path) -> tuple[Path, dict[str, Any]]:
    """The seed gate's page and its JSON report (one benchmark level per host)."""
    return seed, json.loads((seed.parent / "report.json").read_text())


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


def test_one_level_per_host_draws_a_bar_per_host_inside_each_chart(browser, seed_report):
    """The seed gate benchmarks each host at concurrency=48: every chart is a bar per host,
    drawn inside its frame with the height of its figure, a failed host's bar outlined."""
    path, doc = seed_report
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


# Per cell of the fleet and findings tables: its lines (its content's height over its line
# height) and every word (a run of letters and digits) drawn on more than one line.
CELLS = """() => {
  const words = /[A-Za-z0-9]+/g;
  return Array.from(document.querySelectorAll('table.fleet td, table.fleet th, table.findings td, table.findings th')).map(cell => {
    const style = getComputedStyle(cell);
    const box = cell.getBoundingClientRect();
    const inner = box.height - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom) - parseFloat(style.borderTopWidth) - parseFloat(style.borderBottomWidth);
    const broken = [];
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const found of node.data.matchAll(words)) {
        const range = document.createRange();
        range.setStart(node, found.index);
        range.setEnd(node, found.index + found[0].length);
        const tops = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
        if (tops.size > 1) broken.push(found[0]);
      }
    }
    return {table: cell.closest('table').classList.contains('fleet') ? 'fleet' : 'findings', lines: inner / parseFloat(style.lineHeight), text: cell.innerText.slice(0, 80), broken: broken};
  });
}"""


@pytest.mark.parametrize("viewport", FITTING, ids=lambda v: f"{v['width']}x{v['height']}")
@pytest.mark.parametrize("which", ["seed", "fleet32"])
def test_no_cell_of_the_fleet_or_findings_tables_is_taller_than_three_lines(browser, request, which, viewport):
    opened = Opened(browser, request.getfixturevalue(which), viewport=viewport)
    try:
        cells = opened.page.evaluate(CELLS)
        assert {c["table"] for c in cells} == {"fleet", "findings"}
        tall = [(round(c["lines"], 1), c["table"], c["text"]) for c in cells if c["lines"] > 3.2]
        assert tall == []
        assert [(c["text"], c["broken"]) for c in cells if c["broken"]] == []
        assert any(c["text"] == "confirmed" for c in cells)  # a status word, among the words checked whole
    finally:
        opened.close()


@pytest.mark.parametrize("which", ["seed", "fleet32"])
def test_the_fleet_table_scrolls_sideways_with_the_host_column_pinned(browser, request, which):
    opened = Opened(browser, request.getfixturevalue(which), viewport={"width": 800, "height": 600})
    try:
        page = opened.page
        labels = page.evaluate("() => Array.from(document.querySelectorAll('table.fleet td.host a')).map(a => [a.innerText, a.title])")
        assert labels and all(len(label) <= 20 and label in spec or label.startswith("#") for label, spec in labels), labels
        assert len({label for label, _ in labels}) == len(labels)
        # the legend names each label's full spec
        legend = page.inner_text("#fleet .hostkey")
        assert all(spec in legend for _, spec in labels)
        before = page.evaluate("() => { const box = document.querySelector('#fleet .scroll'); box.scrollIntoView(); return [box.scrollWidth > box.clientWidth, document.querySelector('table.fleet tbody td.host').getBoundingClientRect().left]; }")
        assert before[0], "the fleet table is expected to be wider than the window here"
        after = page.evaluate("() => { const box = document.querySelector('#fleet .scroll'); box.scrollLeft = box.scrollWidth; const host = document.querySelector('table.fleet tbody td.host').getBoundingClientRect(); const other = document.querySelector('table.fleet tbody td:nth-child(2)').getBoundingClientRect(); return [host.left, other.left]; }")
        assert abs(after[0] - before[1]) < 1 and after[1] < after[0]  # the host stays; the values slid under it
    finally:
        opened.close()


def test_a_screenshot_of_the_page(opened, tmp_path):
    """The picture docs/reports.md shows is taken like this (``--update`` writes it there)."""
    shot = tmp_path / "report.png"
    opened.page.screenshot(path=str(shot), clip=SHOT_CLIP, full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert SCREENSHOT.exists(), "docs/img/report.png is missing: python tests/test_report_browser.py --update"
    assert "img/report.png" in (REPO / "docs" / "reports.md").read_text()


def seed_screenshots(browser: Any, page: Path, folder: Path) -> list[Path]:
    """One screen (1366x900) of the seed gate's page per part: ``seed-gate-top.png``,
    ``-fleet.png`` and ``-candidate.png``, each part scrolled to the top of the window."""
    opened = Opened(browser, page, viewport=SEED_VIEWPORT)
    shots = []
    try:
        for name, selector in SEED_SHOTS.items():
            opened.page.locator(selector).evaluate("part => part.scrollIntoView()")
            shots.append(folder / f"seed-gate-{name}.png")
            opened.page.screenshot(path=str(shots[-1]))
    finally:
        opened.close()
    return shots


def test_the_seed_gate_screenshots(browser, seed, tmp_path):
    """The pictures of the seed gate in docs/reports.md are taken like this (``--update``)."""
    shots = seed_screenshots(browser, seed, tmp_path)
    assert all(shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000 for shot in shots)
    text = (REPO / "docs" / "reports.md").read_text()
    for shot in shots:
        assert (SCREENSHOT.parent / shot.name).exists(), f"docs/img/{shot.name} is missing: python tests/test_report_browser.py --update"
        assert f"img/{shot.name}" in text


def update_screenshot(work: Path) -> list[Path]:
    """Run the gate in ``work`` and write the page's first screen to docs/img/report.png; run
    the seed gate and write its three screens to docs/img/seed-gate-*.png."""
    done = report_run.gate_run(work / "gate")
    if done.returncode != 1:
        raise SystemExit(f"the gate run ended with {done.returncode}, not 1:\n{done.stdout[-3000:]}")
    seeded = report_run.seed_gate(work / "seed")
    if seeded.returncode != 1:
        raise SystemExit(f"the seed gate ended with {seeded.returncode}, not 1:\n{seeded.stdout[-3000:]}")
    playwright, chromium = launch()
    try:
        opened = Opened(chromium, work / "gate" / "out" / "report.html")
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        opened.page.screenshot(path=str(SCREENSHOT), clip=SHOT_CLIP, full_page=True)
        opened.close()
        shots = seed_screenshots(chromium, work / "seed" / "out" / "report.html", SCREENSHOT.parent)
    finally:
        chromium.close()
        playwright.stop()
    return [SCREENSHOT, *shots]


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        raise SystemExit("usage: python tests/test_report_browser.py --update   (rewrites docs/img/report.png and docs/img/seed-gate-*.png)")
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        for written in update_screenshot(Path(folder)):
            print(f"wrote {written}")
