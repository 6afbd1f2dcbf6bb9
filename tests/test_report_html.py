"""The HTML report and the Markdown charts as users get them: ``--sglang-report-html`` on a run
against the simulator, ``pytest-sglang report RUN.json`` rendering the same page later, one
self-contained file with no secret in it, and outside text that stays text in every report
(one escaping function per format, held to a Hypothesis property).

The page in a real browser is ``tests/test_report_browser.py``."""

from __future__ import annotations

import html as html_module
import importlib.util
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import ROOT, property_settings

from pytest_sglang.base import secrets
from pytest_sglang.cli.main import main
from pytest_sglang.judge.gate import RunReport
from pytest_sglang.render.report import charts, escape, markdown
from pytest_sglang.render.report import html as html_report
from pytest_sglang.render.report.document import ReportError
from pytest_sglang.render.report.schema import validate
from pytest_sglang.render.report.series import groups
from pytest_sglang.render.report.write import write_reports

BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"
KEY = "sk-html-9f3e1c"
HOSTILE = '/models/<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'

SUITE = """
def test_tp(effective):
    assert effective.tp_size == 4

def test_running_requests(effective):
    assert effective.max_running_requests >= 40
"""


def _synthetic() -> Any:
    spec = importlib.util.spec_from_file_location("report_html_benchmark", ROOT / "benchmarks" / "report_html.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.synthetic_report


synthetic_report = _synthetic()


class Page(HTMLParser):
    """What a browser would build: every element with its attributes, and the text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self._in: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def run(pytester: pytest.Pytester, *args: str, suite: str = SUITE) -> pytest.RunResult:
    pytester.makepyfile(suite)
    return pytester.runpytest("-p", "no:benchmark", "--sglang-report-json=out/report.json", "--sglang-report-html=out/report.html", "--sglang-report-md=out/report.md", *args)


def hostile_profile(folder: Path) -> Path:
    """The baseline deployment serving a model whose path and name carry markup."""
    import pytest_sglang.simulator

    profile = json.loads((Path(pytest_sglang.simulator.__file__).parent / "profiles" / "qwen35-122b-a10b-4xrtx6000-baseline.json").read_text())
    profile["name"] = "hostile"
    profile["model"]["model_path"] = HOSTILE
    profile["model"]["served_model_name"] = HOSTILE
    profile["server_args"] = {**profile.get("server_args", {}), "model_path": HOSTILE, "served_model_name": HOSTILE}
    profile.pop("launch_command", None)
    path = folder / "hostile.json"
    path.write_text(json.dumps(profile))
    return path


# ---- the page of a run ------------------------------------------------------------------------


def test_a_run_writes_one_self_contained_page_with_verdicts_findings_and_the_configuration(pytester):
    result = run(pytester, f"--sglang-host={BASELINE}", f"--sglang-host={CANDIDATE}", "--sglang-lint", "--sglang-fleet")
    result.assert_outcomes(passed=4, failed=3)  # the candidate's running requests, its lint, the fleet
    result.stdout.fnmatch_lines([f"sglang: report written to {pytester.path / 'out' / 'report.html'}"])
    page = (pytester.path / "out" / "report.html").read_text()
    parsed = Page(page)
    # nothing to fetch: no script, style, image, font or frame from anywhere, and a policy that forbids it
    for tag, attrs in parsed.tags:
        assert not attrs.get("src"), (tag, attrs)
        assert tag not in ("img", "iframe", "object", "embed", "link"), tag
        assert not (attrs.get("href") or "#").split("#")[0], (tag, attrs)  # in-page links only
    policy = next(attrs["content"] for tag, attrs in parsed.tags if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in (policy or "") and "'unsafe-inline'" not in (policy or "")
    text = " ".join(" ".join(parsed.text).split())
    # the verdict first, with its reasons, then each host's
    assert page.index('id="verdict"') < page.index('id="hosts"') < page.index('id="host-1"')
    assert "SGLang promotion gate: HOLD" in text and f"{CANDIDATE}: 1 test(s) failed; check sglang-lint failed" in text
    # the answer first: the causes as a list under the Markdown's words, the counts after them
    header = page[page.index('id="verdict"') : page.index("</header>")]
    assert "<strong>Held because: 1 of 2 host(s) on hold</strong>" in header
    causes, counts = header.split("<ol class=reasons>", 1)[1].split("</ol>", 1)[0], header.split("<ul class=counts>", 1)[1].split("</ul>", 1)[0]
    assert causes.startswith("<li>max_running_requests 26 &lt; 40: capped by the mamba state cache") and "test(s) failed" not in causes
    assert f"<li>{CANDIDATE}: 1 test(s) failed; check sglang-lint failed" in counts and "<li>check sglang-fleet failed</li>" in counts
    # per host: findings, checks, the effective configuration with sources and what was requested, facts
    assert "max_running_requests is capped by the mamba state cache" in text
    assert "/server_info internal_states[0].effective_max_running_requests_per_dp" in text
    assert "launch command --max-running-requests" in text
    assert "4x NVIDIA RTX PRO 6000 Blackwell Server Edition" in text
    assert page.count('class="filter" data-table="cfg-') == 2
    # the fleet: hosts by the fields where they differ
    assert "Fleet: hosts by the fields where they differ" in text and '<td class="differs">' in page
    # the Markdown links to it
    md = (pytester.path / "out" / "report.md").read_text()
    assert "[report.html](<report.html>)" in md


def test_the_seed_gate_of_one_benchmark_level_has_bars_in_the_page_and_a_chart_in_the_summary(pytester):
    """The example suite against the seed's two deployments, benchmarked at its one level
    (concurrency=48): a bar per host on every chart, the candidate's failed level marked in the
    page and named in the Markdown, and no float noise anywhere: the baseline here reports the
    share of memory its post-init computed with an arithmetic tail (0.7851260156250001)."""
    for name in ("pytest.ini", "conftest.py", "test_qwen35_deployment.py"):
        (pytester.path / name).write_text((ROOT / "example_suite" / name).read_text())
    profile = json.loads((ROOT / "pytest_sglang" / "simulator" / "profiles" / "qwen35-122b-a10b-4xrtx6000-baseline.json").read_text())
    assert profile["server_args"]["mem_fraction_static"] == 0.785126015625
    profile["server_args"]["mem_fraction_static"] = NOISY
    (pytester.path / "noisy-baseline.json").write_text(json.dumps(profile))
    baseline = f"sim://{pytester.path / 'noisy-baseline.json'}"
    noisy = "def test_memory_share(server_args):\n    assert server_args.mem_fraction_static >= 0.8\n"
    result = run(pytester, f"--sglang-host={baseline}", f"--sglang-host={CANDIDATE}", "--sglang-bench=smoke", suite=noisy)
    assert result.ret == 1
    page = (pytester.path / "out" / "report.html").read_text()
    md = (pytester.path / "out" / "report.md").read_text()
    bars = re.findall(r'<svg [^>]*class="plot bars".*?</svg>', page, re.S)
    assert len(bars) == 4 and all(svg.count('<rect class="bar"') == 2 for svg in bars)
    assert sum(svg.count('<rect class="mark fail"') for svg in bars) == 4  # the candidate's level failed: its bar on each chart
    blocks = mermaid_blocks(md)
    assert len(blocks) == 3 and all('x-axis "host" ["host 1", "host 2 (failed)"]' in b for b in blocks)
    assert "assert 0.785126015625 &gt;= 0.8" in page and "`0.785126015625`" in md
    doc = json.loads((pytester.path / "out" / "report.json").read_text())
    texts = list(_strings(doc))
    for text in (page, md, *texts):
        assert repr(NOISY) not in text
    assert any("assert 0.785126015625 >= 0.8" in text for text in texts)  # pytest's own message, kept without the noise
    assert repr(NOISY) in result.stdout.str()  # the value the test read had the tail: pytest's own traceback shows it


NOISY = 0.7851260156250001


def _strings(node: Any) -> Any:
    """Every string of a JSON document (its text fields)."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def test_the_report_subcommand_renders_the_same_page_from_the_json_report(pytester, capsys):
    run(pytester, f"--sglang-host={BASELINE}", f"--sglang-host={CANDIDATE}", "--sglang-fleet")
    out = pytester.path / "out"
    assert main(["report", str(out / "report.json"), "--html", str(out / "again.html"), "--md", str(out / "again.md")]) == 0
    assert (out / "again.html").read_bytes() == (out / "report.html").read_bytes()
    assert (out / "again.md").read_text() == (out / "report.md").read_text().replace("report.html", "again.html")
    assert f"pytest-sglang: wrote {out / 'again.html'} (verdict hold)" in capsys.readouterr().out
    assert main(["report", str(out / "report.json"), "--md", str(out / "linked.md"), "--link", "https://ci.example/job/1/artifacts/report.html", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"verdict": "hold", "written": [str(out / "linked.md")]}
    assert "(<https://ci.example/job/1/artifacts/report.html>)" in (out / "linked.md").read_text()


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: None, "JSON report {path} does not exist: give the file --sglang-report-json wrote"),
        (lambda p: p.write_text("{not json"), "JSON report {path} is not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1)): give the file --sglang-report-json wrote"),
        (lambda p: p.write_text('{"format": 1}'), "JSON report {path} is not a pytest-sglang report: $: 'tool' is missing (and 9 more)"),
        (lambda p: p.mkdir(), "JSON report {path} is not a regular file (a directory)"),
    ],
    ids=["missing", "not-json", "not-a-report", "a-directory"],
)
def test_report_with_a_bad_json_file_is_one_line_and_exit_2(tmp_path, capsys, make, expected):
    path = tmp_path / "run.json"
    make(path)
    assert main(["report", str(path), "--html", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err == f"pytest-sglang: {expected.format(path=path)}\n"
    assert not (tmp_path / "r.html").exists()


def test_report_needs_something_to_write_and_a_file_path(tmp_path, capsys):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(synthetic_report(2, 3)))
    assert main(["report", str(path)]) == 2
    assert capsys.readouterr().err == "pytest-sglang: give --html FILE, --md FILE or both: what to write\n"
    assert main(["report", str(path), "--html", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"pytest-sglang: --html {tmp_path} is a directory: give a file path, e.g. --html {tmp_path / 'sglang-report.html'}\n"


def test_no_secret_reaches_the_page(pytester):
    result = run(pytester, f"--sglang-host={BASELINE}?api_key={KEY}", "-k", "tp")
    result.assert_outcomes(passed=1, deselected=1)
    page = (pytester.path / "out" / "report.html").read_text()
    assert KEY not in page and html_module.escape(KEY) not in page
    assert KEY not in (pytester.path / "out" / "report.md").read_text()


def test_a_served_model_name_with_markup_stays_text_in_the_page_and_the_markdown(pytester):
    profile = hostile_profile(pytester.path)
    run(pytester, f"--sglang-host=sim://{profile}", "-k", "tp").assert_outcomes(passed=1, deselected=1)
    page = (pytester.path / "out" / "report.html").read_text()
    parsed = Page(page)
    assert [tag for tag, _ in parsed.tags if tag in ("img", "script")] == ["script"]  # the page's own script, at the end
    assert not any(name.startswith("on") for _, attrs in parsed.tags for name in attrs)
    assert HOSTILE in "".join(parsed.text)  # shown as written
    md = (pytester.path / "out" / "report.md").read_text()
    assert "<script>" not in md and "<img" not in md
    assert "| /models/&lt;script>window.\\_\\_pwned=1&lt;/… |" in md  # the table's model cell, cut at 40


# ---- the page, from a report document ---------------------------------------------------------


@pytest.mark.parametrize(
    ("hosts", "labels"),
    [
        ([BASELINE, CANDIDATE], ["baseline", "candidate"]),
        ([f"http://gpu{i:02d}.example:30000" for i in (1, 2, 12)], ["gpu01", "gpu02", "gpu12"]),  # the shared ".example:30000" set aside
        (["http://10.0.0.1:30000", "http://10.0.0.2:30000", "http://10.0.1.2:30000"], ["10.0.0.1", "10.0.0.2", "10.0.1.2"]),  # never "0.2"
        (["replay:captures/gpu1.json", "replay:captures/gpu2.json"], ["gpu1", "gpu2"]),
        (["http://gpu1:30000", "http://gpu1:30001"], ["30000", "30001"]),
        ([BASELINE], ["baseline"]),
        (["sim://qwen35-122b-a10b-4xrtx6000-baseline-first-replica", "sim://qwen35-122b-a10b-4xrtx6000-candidate-first-replica"], ["baseline", "candidate"]),
        # ends that are long or not distinct: numbers
        (["sim://east-qwen35-122b-a10b-4xrtx6000-baseline", "sim://west-qwen35-122b-a10b-4xrtx6000-baseline", "sim://east-qwen35-122b-a10b-4xrtx6000-candidate"], ["#1", "#2", "#3"]),
        (["http://a.example:30000/", "http://a.example:30000"], ["#1", "#2"]),
    ],
)
def test_hosts_get_the_shortest_distinct_end_of_their_spec_or_a_number(hosts, labels):
    from pytest_sglang.render.report.fleet import host_labels

    assert list(host_labels(hosts).values()) == labels


def test_the_fleet_view_names_hosts_by_label_with_the_full_spec_in_the_tooltip_and_the_legend():
    doc = synthetic_report(32, 2)
    page = html_report.render(doc, charts=False)
    fleet = page[page.index('<section id="fleet">') : page.index("</section>", page.index('<section id="fleet">'))]
    rows = re.findall(r'<td class="host"><a href="#host-(\d+)" class="hostlabel" title="([^"]+)">([^<]+)</a></td>', fleet)
    assert [(int(n), spec, label) for n, spec, label in rows] == [(i + 1, h["host"], f"gpu{i:02d}") for i, h in enumerate(doc["hosts"])]
    assert all(f'<span class="hostlabel">gpu{i:02d}</span> <span class="mono">{h["host"]}</span>' in fleet for i, h in enumerate(doc["hosts"]))
    # the effective values where hosts differ: the held hosts' running cap, one in eight's schedule policy
    assert "2 of 31 fields differ" in fleet and fleet.count('<td class="differs">') == 8 + 4


def test_a_32_host_fleet_draws_one_line_per_host_on_a_few_charts():
    doc = synthetic_report(32, 10)
    assert validate(doc) == []
    page = html_report.render(doc, charts=True)
    assert len(page.encode()) < 2_000_000
    (group,) = groups(doc)
    assert [c.id for c in group.charts] == ["throughput", "ttft", "itl", "server"]
    svgs = re.findall(r'<svg [^>]*data-chart="(\w+)"[^>]*data-series-count="(\d+)"[^>]*data-point-count="(\d+)"[^>]*data-mark-count="(\d+)"', page)
    held = sum(1 for h in doc["hosts"] if h["verdict"] == "hold")
    failed_levels = sum(1 for h in doc["hosts"] for lv in h["benchmarks"][0]["levels"] if lv["verdict"] == "fail")
    assert held == 8 and failed_levels > 0
    assert svgs == [
        ("throughput", "32", "320", str(failed_levels)),
        ("ttft", "64", "640", str(2 * failed_levels)),
        ("itl", "64", "640", str(2 * failed_levels)),
        ("server", "64", "640", str(2 * failed_levels)),
    ]
    assert page.count('<g class="series"') == 224 and page.count('class="band"') == 32 * 5
    assert page.count('<li><button type="button" data-series=') == 32


def test_without_the_report_extra_the_page_has_tables_in_place_of_charts():
    doc = synthetic_report(3, 4)
    page = html_report.render(doc, charts=False)
    assert "<svg" not in page
    assert "Charts need the report extra (<code>pip install 'pytest-sglang[report]'</code>)" in page
    text = " ".join(Page(page).text)
    assert "concurrency=8" in text and "output tok/s" in text and "benchmark baseline (min–max, repeats)" in text
    assert page.count("<tr>") >= 3 * 4


def test_charts_carry_no_outside_text():
    doc = synthetic_report(2, 3)
    for host in doc["hosts"]:
        host["host"] = f"{host['host']}/<b>&amp;"
        for bench in host["benchmarks"]:
            bench["host"] = host["host"]
    page = html_report.render(doc, charts=True)
    for svg in re.findall(r"<svg .*?</svg>", page, re.S):
        assert "gpu0" not in svg and "&lt;b&gt;" not in svg and "<b>" not in svg


def test_the_charts_module_says_whether_the_extra_is_installed():
    assert charts.available() == (importlib.util.find_spec("leather") is not None)


# ---- the Markdown charts ----------------------------------------------------------------------


XYCHART_LINE = {
    "title": re.compile(r'^    title "[^"]*"$'),
    "x-axis": re.compile(r'^    x-axis "[^"]*" \[("[^"]*"(, "[^"]*")*)\]$'),
    "y-axis": re.compile(r'^    y-axis "[^"]*" 0 --> \d+(\.\d+)?$'),
    "series": re.compile(r"^    (bar|line) \[(-?\d+(\.\d+)?(, -?\d+(\.\d+)?)*)\]$"),
}


def xychart_problems(block: str) -> list[str]:
    """What in a ```` ```mermaid ```` block is not a valid ``xychart-beta`` as this project
    writes it: an init line, the chart type, a title, the x-axis with quoted categories, the
    y-axis range, then bar and line series of one number per category."""
    lines = block.splitlines()
    problems = []
    if not (lines[0].startswith("%%{init: ") and lines[0].endswith("}%%") and json.loads(lines[0][len("%%{init: ") : -len("}%%")])):
        problems.append(f"init: {lines[0]}")
    if lines[1:2] != ["xychart-beta"]:
        problems.append(f"type: {lines[1:2]}")
    if not XYCHART_LINE["title"].match(lines[2]):
        problems.append(f"title: {lines[2]}")
    axis = XYCHART_LINE["x-axis"].match(lines[3])
    if not axis or not XYCHART_LINE["y-axis"].match(lines[4]):
        return problems + [f"axes: {lines[3:5]}"]
    categories = len(re.findall(r'"[^"]*"', axis.group(1)))
    series = [XYCHART_LINE["series"].match(line) for line in lines[5:]]
    if not series or not all(series):
        problems.append(f"series: {lines[5:]}")
    problems += [f"{m.group(1)} of {len(m.group(2).split(', '))} values on {categories} categories" for m in series if m and len(m.group(2).split(", ")) != categories]
    return problems


def mermaid_blocks(md: str) -> list[str]:
    blocks = re.findall(r"```mermaid\n(.*?)```", md, re.S)
    for block in blocks:
        assert xychart_problems(block) == [], block
    return blocks


def test_the_chart_checker_refuses_what_mermaid_would_not_draw():
    good = '%%{init: {"a": 1}}%%\nxychart-beta\n    title "t"\n    x-axis "h" ["1", "2"]\n    y-axis "ms" 0 --> 700\n    bar [1, 2.5]\n'
    assert xychart_problems(good) == []
    assert xychart_problems(good.replace('["1", "2"]', "[1, 2]")) != []  # categories unquoted
    assert xychart_problems(good.replace("bar [1, 2.5]", "bar [1]")) != []  # a value short
    assert xychart_problems(good.replace("bar [1, 2.5]", "bars [1, 2]")) != []


def test_the_markdown_draws_the_levels_as_a_mermaid_chart_beside_the_table():
    doc = synthetic_report(2, 4)
    doc["hosts"][1]["host"] = "http://gpu01:30000/*bold* [link](x) <i>"
    md = markdown.render(doc, html_link="out/report.html")
    assert "The whole run as one page (charts, findings, configuration): [out/report.html](<out/report.html>)" in md
    blocks = mermaid_blocks(md)
    assert len(blocks) == 2  # output throughput, p99 TTFT
    for block in blocks:
        assert block.splitlines()[1] == "xychart-beta"
        assert '"plotColorPalette": "#1f77b4, #ff7f0e"' in block
        assert 'x-axis "concurrency (requests in flight)" ["1", "2", "4", "8"]' in block
        assert len(re.findall(r"^    line \[", block, re.M)) == 2
    assert "🟦 1: http\\://gpu00.example:30000 · 🟧 2: http\\://gpu01:30000/\\*bold\\* \\[link\\](x) &lt;i>" in md  # no address GitHub links
    assert md.index("| host | benchmark | level |") < md.index("```mermaid")


def test_mermaid_names_failed_and_inconclusive_levels_on_the_axis():
    doc = synthetic_report(3, 4)
    doc["hosts"][1]["benchmarks"][0]["levels"][0]["verdict"] = "fail"
    doc["hosts"][2]["benchmarks"][0]["levels"][0]["verdict"] = "fail"
    doc["hosts"][0]["benchmarks"][0]["levels"][3]["verdict"] = "inconclusive"
    for block in mermaid_blocks(markdown.render(doc)):
        assert 'x-axis "concurrency (requests in flight)" ["1 (failed: 2, 3)", "2", "4", "8 (inconclusive: 1)"]' in block


def test_one_level_per_host_draws_a_bar_per_host_with_the_baseline_beside_it_in_mermaid():
    doc = synthetic_report(2, 1)  # each host compared with its benchmark baseline of 3 repeats
    doc["hosts"][1]["benchmarks"][0]["levels"][0]["verdict"] = "fail"
    md = markdown.render(doc)
    blocks = mermaid_blocks(md)
    assert [b.splitlines()[2] for b in blocks] == [
        '    title "Output throughput at concurrency 1: test_streams"',
        '    title "p99 time to first token at concurrency 1: test_streams"',
        '    title "p99 inter-token latency at concurrency 1: test_streams"',
    ]
    repeats = doc["hosts"][0]["benchmarks"][0]["baseline"]["levels"]["concurrency=1"]["output_throughput"]
    level = doc["hosts"][0]["benchmarks"][0]["levels"][0]
    throughput = blocks[0].splitlines()
    assert throughput[3] == '    x-axis "host" ["host 1", "host 1 baseline", "host 2 (failed)", "host 2 baseline"]'
    # the hosts' bars, then the baselines' bars (their own colour), each zero beside the other
    assert throughput[5] == f"    bar [{level['output_throughput']:.1f}, 0, {doc['hosts'][1]['benchmarks'][0]['levels'][0]['output_throughput']:.1f}, 0]"
    assert throughput[6].startswith(f"    bar [0, {sorted(repeats)[1]:.1f}, 0, ")
    assert "host 1: http\\://gpu00.example:30000 · host 2: http\\://gpu01.example:30000 · grey bars, host N baseline: the median" in md


def test_one_level_per_host_draws_bars_in_the_page_with_failed_bars_marked():
    doc = synthetic_report(3, 1)
    doc["hosts"][2]["benchmarks"][0]["levels"][0]["verdict"] = "fail"
    page = html_report.render(doc, charts=True)
    svgs = re.findall(r'<svg [^>]*class="plot bars"[^>]*data-chart="(\w+)".*?</svg>', page, re.S)
    assert svgs == ["throughput", "ttft", "itl", "server"]
    for svg in re.findall(r'<svg [^>]*class="plot bars".*?</svg>', page, re.S):
        assert svg.count('<rect class="bar"') == 3 and svg.count('<rect class="mark fail"') == 1
    bands = [svg.count('class="band"') for svg in re.findall(r'<svg [^>]*class="plot bars".*?</svg>', page, re.S)]
    assert bands == [3, 3, 3, 0]  # each host's baseline repeats beside its bar; /metrics has no baseline
    assert "at concurrency 1, a bar per host" in page and "circle class=\"point\"" not in page
    assert "<table" in html_report.render(doc, charts=False)  # the table stands in without the extra


# ---- the renderers read the report as typed data ----------------------------------------------


def _whole_numbers(doc: dict[str, Any]) -> dict[str, Any]:
    """The document with whole numbers where the models type a float (a duration, a throughput,
    a latency), as a producer may write them."""
    for host in doc["hosts"]:
        for test in host["tests"]:
            test["duration"] = 3
        for bench in host["benchmarks"]:
            for level in bench["levels"]:
                level["output_throughput"] = round(level["output_throughput"])
                level["ttft"] = {name: round(value) for name, value in level["ttft"].items()}
            for figures in bench["baseline"]["levels"].values():
                figures["output_throughput"] = [round(v) for v in figures["output_throughput"]]
    return doc


def test_the_page_and_the_summary_are_the_same_from_the_json_document_and_from_the_typed_report():
    doc = _whole_numbers(synthetic_report(3, 4))
    report = RunReport.model_validate(doc)
    # the typed report holds floats (3.0) where the document has whole numbers (3) ...
    dumped = report.model_dump(mode="json", exclude_unset=True)
    assert dumped["hosts"][0]["tests"][0]["duration"] == 3.0 and isinstance(dumped["hosts"][0]["tests"][0]["duration"], float)
    # ... and every number is shown as it was
    for form in (report, dumped):
        for draw in (False, charts.available()):
            assert html_report.render(form, charts=draw) == html_report.render(doc, charts=draw)
        assert markdown.render(form, html_link="r.html") == markdown.render(doc, html_link="r.html")
    assert "3.00 s" in html_report.render(doc, charts=False)


def test_a_document_the_models_refuse_is_one_line_naming_the_field_and_no_report_is_written(tmp_path):
    doc = synthetic_report(2, 2)
    del doc["hosts"][1]["counts"]
    for render in (lambda d: html_report.render(d, charts=False), markdown.render, groups):
        with pytest.raises(ReportError, match=r"^the report does not fit the report schema: \$\.hosts\[1\]\.counts: Field required$"):
            render(doc)
    paths = [tmp_path / name for name in ("r.json", "r.md", "r.html")]
    with pytest.raises(ReportError):
        write_reports(doc, *paths)
    assert not any(p.exists() for p in paths)


def test_the_json_report_is_written_as_the_document_holds_it_and_a_typed_report_as_its_fields(tmp_path):
    doc = _whole_numbers(synthetic_report(2, 2))
    assert write_reports(doc, tmp_path / "doc.json", tmp_path / "doc.md", tmp_path / "doc.html") == []
    assert (tmp_path / "doc.json").read_text() == json.dumps(doc, indent=2) + "\n"
    report = RunReport.model_validate(doc)
    assert write_reports(report, tmp_path / "typed.json", tmp_path / "typed.md", tmp_path / "typed.html") == []
    assert RunReport.model_validate_json((tmp_path / "typed.json").read_text()) == report
    assert (tmp_path / "typed.md").read_text() == (tmp_path / "doc.md").read_text().replace("doc.html", "typed.html")
    assert (tmp_path / "typed.html").read_text() == (tmp_path / "doc.html").read_text()


# ---- one escaping function per format -----------------------------------------------------------

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)


@given(TEXT)
@property_settings()
def test_html_text_shows_any_text_as_written_in_an_element_and_an_attribute(value):
    escaped = escape.html_text(value)
    assert not set(escaped) & set("<>\"'")
    for markup in (f"<p>{escaped}</p>", f'<p title="{escaped}"></p>'):
        parsed = Page(markup)
        assert [tag for tag, _ in parsed.tags] == ["p"]
    assert "".join(Page(f"<p>{escaped}</p>").text) == value
    assert Page(f'<p title="{escaped}"></p>').tags[0][1]["title"] == value


_MD_UNESCAPE = re.compile(r"\\([\\`*~\[\]|_:.])")


@given(TEXT)
@property_settings()
def test_md_text_leaves_no_markup_and_unescapes_to_the_text_on_one_line(value):
    saved, secrets.SECRETS = secrets.SECRETS, secrets.Registry()  # no secret registered by an earlier test scrubs the text
    try:
        escaped = escape.md_text(value)
    finally:
        secrets.SECRETS = saved
    assert "\n" not in escaped and "\r" not in escaped and "<" not in escaped
    bare = _MD_UNESCAPE.sub("", escaped)
    assert not set(bare) & set("\\`*~[]|"), escaped  # every markup character is escaped
    assert not re.search(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])", bare), escaped  # an underscore left is inside a word
    # The zero-width space after "@" (and between "#" and a digit) is no mention on GitHub, and shows as nothing.
    shown = html_module.unescape(_MD_UNESCAPE.sub(r"\1", escaped)).replace("@\u200b", "@").replace("#\u200b", "#")
    assert shown == " ".join(re.split(r"[\r\n\u2028\u2029\x0b\x0c\x85]+", value))
    assert not re.search(r"@[0-9A-Za-z]|#[0-9]|(?i:https?|ftp)://|(?i:www)\.", html_module.unescape(escaped)), escaped  # no mention, reference or address


@given(TEXT)
@property_settings()
def test_md_code_never_ends_its_code_span_or_the_table_cell(value):
    escaped = escape.md_code(value)
    assert "`" not in escaped and "\n" not in escaped
    assert "|" not in escaped.replace("\\|", "")


@given(TEXT)
@property_settings()
def test_mermaid_text_holds_only_harmless_characters(value):
    assert re.fullmatch(r"[\w .,:/=+%()-]*", escape.mermaid_text(value), re.ASCII)


def _with_texts(texts: list[str]) -> dict[str, Any]:
    doc = synthetic_report(2, 2)
    for host, text in zip(doc["hosts"], texts):
        host["facts"]["model"] = texts[0]  # the same on both hosts: the fleet view keeps its shape
        host["facts"]["describe"] = text
        host["reasons"] = [text]
        host["findings"][0]["title"] = text
        host["effective"]["attention_backend"]["value"] = texts[0]  # the same on both: the fleet view keeps its shape
        host["tests"][0].update(outcome="failed", message=text)
    return doc


@given(st.lists(TEXT, min_size=2, max_size=2))
@settings(max_examples=25, deadline=None, derandomize=True)
def test_outside_text_anywhere_in_a_report_document_never_becomes_markup(texts):
    """Host facts, reasons, findings, values and messages with any text: the page has exactly
    the elements it has with plain words there, and the Markdown no HTML."""
    tags = [tag for tag, _ in Page(html_report.render(_with_texts(texts), charts=False)).tags]
    assert tags == [tag for tag, _ in Page(html_report.render(_with_texts(["plain", "plain"]), charts=False)).tags]
    md = markdown.render(_with_texts(texts))
    assert "<" not in md.replace("<sub>", "").replace("</sub>", "")


def test_the_repository_keeps_one_escaping_module():
    """Every renderer escapes through pytest_sglang/render/report/escape.py, none with html.escape of its own."""
    escape_module = ROOT / "pytest_sglang" / "render" / "report" / "escape.py"
    for path in (ROOT / "pytest_sglang" / "render").rglob("*.py"):
        if path == escape_module:
            continue
        source = path.read_text()
        assert "html.escape" not in source and "import html\n" not in source, path.name


# ---- what the benchmark records for the charts ----------------------------------------------------


def test_a_level_judged_by_a_threshold_and_then_a_baseline_keeps_the_worse_verdict():
    """``expect`` then ``baseline`` in one test: a level that failed its threshold is not shown
    as passed because the baseline comparison found no change."""
    from pytest_sglang.model.bench import LevelResult

    level = LevelResult(name="concurrency=48", mode="concurrency", concurrency=48)
    failed = "concurrency=48: ttft_p99_ms 583.7 ms (limit <= 250.0 ms)"
    level.judge("fail", [failed])
    level.judge("pass", [])
    level.judge("fail", [failed])  # the same threshold again (a rerun of another level)
    assert (level.verdict, level.verdict_reasons) == ("fail", [failed])
    level.judge("inconclusive", ["concurrency=48: output_throughput: cannot tell"])
    assert level.verdict == "fail" and len(level.verdict_reasons) == 2


def test_the_benchmark_baseline_a_result_was_compared_with_is_kept_for_the_band():
    from pytest_sglang.model.bench import BaselineRepeats, BenchResult

    entry = {
        "recorded": "2026-01-01T00:00:00Z",
        "levels": {"concurrency=1": {"output_throughput": [1, 2, 3.5], "ttft_p99_ms": [10, True, float("nan")], "goodput": [1.0]}},
    }
    band = BaselineRepeats.from_entry("streams", "seed-baseline", entry)
    assert band.levels == {"concurrency=1": {"output_throughput": [1.0, 2.0, 3.5], "ttft_p99_ms": [10.0]}}
    record = BenchResult(target="sim://x", baseline=band).model_dump(mode="json")
    assert record["baseline"] == {"name": "streams", "key": "seed-baseline", "recorded": "2026-01-01T00:00:00Z", "levels": band.levels}
