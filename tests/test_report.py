"""Reports as users get them: JUnit properties per host test, ``--sglang-report-json`` (valid
against the shipped schema), ``--sglang-report-md`` (a verdict a reviewer reads at a glance),
complete under xdist, and no secret in any file the run wrote."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from support import host_section, report_counts, report_document

from pytest_sglang.render.report.markdown import render
from pytest_sglang.render.report.schema import load_schema, validate

BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"
KEY = "sk-rep-123"
GPU = "4x NVIDIA RTX PRO 6000 Blackwell Server Edition"

SUITE = """
def test_tp(effective):
    assert effective.tp_size == 4

def test_running_requests(effective):
    assert effective.max_running_requests >= 40

def test_without_host():
    pass
"""


def run(pytester: pytest.Pytester, *args: str, suite: str = SUITE) -> pytest.RunResult:
    pytester.makepyfile(suite)
    return pytester.runpytest("-p", "no:benchmark", "--sglang-report-json=out/report.json", "--sglang-report-md=out/report.md", "--junitxml=out/junit.xml", *args)


def report(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "out" / "report.json").read_text())


def host(doc: dict, name: str) -> dict:
    (found,) = [h for h in doc["hosts"] if h["host"] == name]
    return found


def junit_properties(pytester: pytest.Pytester) -> dict[str, dict[str, str]]:
    tree = ET.parse(pytester.path / "out" / "junit.xml")
    return {case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")} for case in tree.iter("testcase")}


# ---- JUnit ------------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [[], ["-p", "xdist", "-n", "2"]], ids=["serial", "xdist"])
def test_junit_has_host_version_gpu_and_model_for_every_host_test(pytester, workers):
    result = run(pytester, *workers, f"--sglang-host={BASELINE}", "--sglang-host=sim://llama31-8b-1xh100-0.5.9", "--sglang-lint")
    result.assert_outcomes(passed=6, failed=1)
    props = junit_properties(pytester)
    assert props[f"test_tp[{BASELINE}]"] == {"sglang_host": BASELINE, "sglang_version": "0.5.12", "sglang_gpu": GPU, "sglang_model": "Qwen/Qwen3.5-122B-A10B"}
    llama = props["test_tp[sim://llama31-8b-1xh100-0.5.9]"]
    assert llama["sglang_version"] == "0.5.9" and llama["sglang_model"].startswith("meta-llama/") and "H100" in llama["sglang_gpu"]
    assert props["test_without_host"] == {}
    # the per-host built-in checks carry them too
    assert props[f"sglang-lint[{BASELINE}]"]["sglang_host"] == BASELINE


# ---- JSON -------------------------------------------------------------------------------------


def test_the_json_report_holds_the_whole_run_per_host_and_validates_against_its_schema(pytester):
    result = run(pytester, f"--sglang-host={BASELINE}", f"--sglang-host={CANDIDATE}", "--sglang-lint", "--sglang-fleet")
    result.assert_outcomes(passed=5, failed=3)  # candidate's running requests, its lint, the fleet
    doc = report(pytester)
    assert validate(doc) == []
    assert doc["verdict"] == "hold" and doc["exit_status"] == 1
    base, cand = host(doc, BASELINE), host(doc, CANDIDATE)
    # facts summary
    assert cand["facts"]["sglang_version"] == "0.5.12" and cand["facts"]["origin"] == "sim" and cand["facts"]["gpu"] == GPU
    # effective configuration with sources and what was requested
    mrr = cand["effective"]["max_running_requests"]
    assert mrr["value"] == 26 and mrr["requested"] == 48
    assert mrr["source"] == "/server_info internal_states[0].effective_max_running_requests_per_dp"
    # explain findings
    assert {"capacity.mamba-cap", "allreduce.fusion-noop-sm"} <= {f["rule"] for f in cand["findings"]}
    # check results from the built-in checks, per host and for the run
    assert [(c["check"], c["passed"]) for c in base["checks"]] == [("sglang-lint", True)]
    assert [(c["check"], c["passed"]) for c in cand["checks"]] == [("sglang-lint", False)]
    assert [c["check"] for c in doc["run_checks"]] == ["sglang-fleet"] and list(doc["run_checks"][0]["differences"]) == [CANDIDATE]
    # test results per host
    assert {t["nodeid"].split("::")[1]: t["outcome"] for t in cand["tests"]} == {f"test_tp[{CANDIDATE}]": "passed", f"test_running_requests[{CANDIDATE}]": "failed"}
    assert "assert 26 >= 40" in next(t["message"] for t in cand["tests"] if t["outcome"] == "failed")
    assert [t["nodeid"].split("::")[1] for t in doc["tests_without_host"]] == ["test_without_host"]
    # verdicts
    assert base["verdict"] == "promote" and base["reasons"] == []
    assert cand["verdict"] == "hold"
    # the causes first (the field, the comparison, the finding that explains it), then the counts
    assert cand["reasons"][0] == "max_running_requests 26 < 40: capped by the mamba state cache (max_mamba_cache_size 132 // 5) [capacity.mamba-cap]"
    assert cand["reasons"][0] in doc["reasons"][0] and doc["reasons"][0].endswith(f"(on {CANDIDATE})")
    assert cand["reasons"][cand["reasons"].index("1 test(s) failed") + 1] == "check sglang-lint failed"
    assert any("differs from the fleet" in r for r in cand["reasons"])


@pytest.mark.slow
def test_the_report_is_the_same_under_xdist(pytester):
    args = (f"--sglang-host={BASELINE}", f"--sglang-host={CANDIDATE}", "--sglang-lint")
    run(pytester, *args).assert_outcomes(passed=5, failed=2)
    serial = report(pytester)
    run(pytester, "-p", "xdist", "-n", "2", *args).assert_outcomes(passed=5, failed=2)
    parallel = report(pytester)
    assert validate(parallel) == []

    def outline(doc: dict) -> object:
        return [
            (h["host"], h["verdict"], sorted((t["nodeid"], t["outcome"]) for t in h["tests"]), sorted((c["check"], c["passed"]) for c in h["checks"]), len(h["findings"]), h["counts"])
            for h in doc["hosts"]
        ]

    assert outline(parallel) == outline(serial)
    assert all(h["tests"] and h["checks"] and h["effective"] for h in parallel["hosts"])
    assert parallel["verdict"] == serial["verdict"] == "hold"


def test_the_schema_is_valid_json_schema_and_rejects_a_broken_report(pytester):
    run(pytester, f"--sglang-host={BASELINE}")
    doc = report(pytester)
    assert validate(doc) == []
    broken = json.loads(json.dumps(doc))
    broken["hosts"][0]["verdict"] = "maybe"
    del broken["hosts"][0]["effective"]["tp_size"]["source"]
    broken["surprise"] = 1
    problems = validate(broken)
    assert "$: 'surprise' is not allowed" in problems
    assert "$.hosts[0].verdict: 'maybe' is not one of ['promote', 'hold', 'inconclusive']" in problems
    assert "$.hosts[0].effective.tp_size: 'source' is missing" in problems
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(load_schema())
    jsonschema.validate(doc, load_schema(), cls=jsonschema.Draft202012Validator)
    assert not jsonschema.Draft202012Validator(load_schema()).is_valid(broken)


def test_the_schema_ships_with_the_package():
    import importlib.resources

    assert importlib.resources.files("pytest_sglang.render.report").joinpath("schema.json").is_file()
    assert load_schema()["$defs"]["host"]["properties"]["verdict"]["enum"] == ["promote", "hold", "inconclusive"]


# ---- Markdown ---------------------------------------------------------------------------------


def test_the_markdown_gives_a_verdict_per_host_and_what_holds_it_in_a_screenful(pytester):
    run(pytester, f"--sglang-host={BASELINE}", f"--sglang-host={CANDIDATE}", "--sglang-lint", "--sglang-fleet")
    md = (pytester.path / "out" / "report.md").read_text()
    lines = md.splitlines()
    assert lines[0] == "## SGLang promotion gate: ❌ HOLD"
    assert f"| {BASELINE} | ✅ promote | — | 0.5.12 |" in md
    assert f"| {CANDIDATE} | ❌ hold | max_running_requests 26 &lt; 40: capped by the mamba state cache" in md  # its first cause
    assert "### Failing checks" in md and f"**sglang-lint[{CANDIDATE}]**: WARNING \\[capacity.mamba-cap\\]" in md  # the check's text, escaped
    assert "### Fleet drift" in md and "| candidate | 36 | `effective.flashinfer_allreduce_fusion_requested`" in md  # the host by its short label
    assert f"Hosts: **baseline** {BASELINE} · **candidate** {CANDIDATE}" in md  # and the labels' full specs
    assert f"{CANDIDATE}: **WARNING** `capacity.mamba-cap`" in md
    assert "### Failing tests" in md and f"- `test_running_requests[{CANDIDATE}]` failed: assert 26 >= 40" in md
    assert len(lines) <= 40 and max(len(line) for line in lines) <= 400


def test_a_run_where_everything_passes_is_promoted(pytester):
    run(pytester, f"--sglang-host={BASELINE}", "--sglang-lint", suite="def test_tp(effective):\n    assert effective.tp_size == 4\n")
    doc = report(pytester)
    assert doc["verdict"] == "promote" and doc["reasons"] == []
    md = (pytester.path / "out" / "report.md").read_text()
    assert md.startswith("## SGLang promotion gate: ✅ PROMOTE\n")
    assert "### Failing" not in md
    # the baseline's findings are information (its one contradiction included): none is listed
    # as a warning, and none holds the promotion
    assert "**WARNING**" not in md


def test_a_host_that_cannot_be_read_is_held_and_one_where_nothing_ran_is_not_promoted(pytester, free_port):
    down = f"http://127.0.0.1:{free_port}"
    run(pytester, f"--sglang-host={BASELINE}", f"--sglang-host={down}", "-k", "not running_requests")
    doc = report(pytester)
    assert validate(doc) == []
    unread = host(doc, down)
    assert unread["verdict"] == "hold" and unread["facts"] is None and "connection refused" in unread["error"]
    assert unread["reasons"][0].startswith("not read: ")
    assert "### Hosts not read" in (pytester.path / "out" / "report.md").read_text()
    # Nothing tested on a host: pytest exits 0, so it is not held, but not promoted either.
    run(pytester, f"--sglang-host={BASELINE}", "-k", "without_host").assert_outcomes(passed=1, deselected=2)
    untested = report(pytester)
    assert host(untested, BASELINE)["reasons"] == ["nothing was tested on this host (every test was skipped or none ran)"]
    assert host(untested, BASELINE)["verdict"] == "inconclusive"
    assert untested["exit_status"] == 0 and untested["verdict"] == "inconclusive"
    assert (pytester.path / "out" / "report.md").read_text().startswith("## SGLang promotion gate: ⚠️ INCONCLUSIVE\n")


def test_baseline_diffs_in_check_records_are_shown_as_a_table():
    check = {
        "check": "sglang-baseline",
        "host": CANDIDATE,
        "passed": False,
        "failures": ["effective.max_running_requests: 48 -> 26"],
        "notes": [],
        "nodeid": f"sglang-baseline[{CANDIDATE}]",
        "diffs": [
            {"path": "effective.max_running_requests", "baseline": 48, "live": 26, "status": "differs", "failing": True, "finding": "capacity.mamba-cap"},
            {"path": "effective.max_total_num_tokens", "baseline": 412160, "live": 412000, "status": "within tolerance", "failing": False},
        ],
    }
    host = host_section(CANDIDATE, verdict="hold", counts=report_counts(passed=1), checks=[check])
    doc = report_document([host], verdict="hold", reasons=[f"{CANDIDATE}: hold"], counts=report_counts(passed=1), exit_status=1)
    assert validate(doc) == []
    md = render(doc)
    assert "### Baseline diffs" in md
    assert f"| {CANDIDATE} | `effective.max_running_requests` | `48` | `26` | differs — explained by `capacity.mamba-cap` |" in md
    assert "max_total_num_tokens" not in md.split("### Baseline diffs")[1]  # within tolerance: not a diff that holds


# ---- files, paths, secrets --------------------------------------------------------------------


@pytest.mark.slow
def test_no_secret_in_any_file_the_run_wrote(pytester):
    suite = SUITE + "\ndef test_shows_the_spec(sglang):\n    assert sglang.spec.raw == 'something else'\n"
    keyed = f"{BASELINE}?api_key={KEY}"
    result = run(pytester, "-p", "xdist", "-n", "2", f"--sglang-host={keyed}", f"--sglang-host={CANDIDATE}", "--sglang-lint", "--sglang-fleet", suite=suite)
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] >= 2
    assert KEY not in result.stdout.str() + result.stderr.str()
    written = [p for p in pytester.path.rglob("*") if p.is_file()]
    assert {"report.json", "report.md", "junit.xml"} <= {p.name for p in written}
    for path in written:
        assert KEY not in path.read_text(errors="replace"), path
    doc = report(pytester)
    message = next(t["message"] for t in host(doc, BASELINE)["tests"] if "shows_the_spec" in t["nodeid"])
    assert "<redacted>" in message


def test_a_report_path_that_is_a_directory_is_one_usage_error(pytester):
    (pytester.path / "out").mkdir()
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:benchmark", "--sglang-report-json=out", f"--sglang-host={BASELINE}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--sglang-report-json out is a directory: give a file path*"])
    assert "Traceback" not in result.stderr.str()


@pytest.mark.slow
def test_report_paths_from_the_ini_file_are_written_once_by_the_controller(pytester):
    pytester.makeini("[pytest]\nsglang_report_json = reports/run.json\nsglang_report_md = reports/run.md\n")
    pytester.makepyfile("def test_tp(effective):\n    assert effective.tp_size == 4\n")
    result = pytester.runpytest("-p", "no:benchmark", "-p", "xdist", "-n", "2", f"--sglang-host={BASELINE}")
    result.assert_outcomes(passed=1)
    written = result.stdout.lines.count(f"sglang: report written to {pytester.path / 'reports' / 'run.json'}")
    assert written == 1
    assert sorted(p.name for p in (pytester.path / "reports").iterdir()) == ["run.json", "run.md"]


def test_the_gate_from_a_capture_with_a_baseline_shows_the_baseline_diffs(pytester, monkeypatch):
    """The CI flow of docs/ci.md: capture, a reviewed baseline, replay, reports."""
    import subprocess
    import sys

    monkeypatch.delenv("CI", raising=False)
    capture = pytester.path / "captures" / "candidate.json"
    done = subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", "capture", CANDIDATE, "-o", str(capture)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    suite = "def test_tp(effective):\n    assert effective.tp_size == 4\n"
    pytester.makepyfile(suite)
    written = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={BASELINE}", "--sglang-baseline=baselines", "--sglang-update-baseline")
    written.assert_outcomes(passed=2)
    (key_file,) = (pytester.path / "baselines").glob("*.json")
    pytester.makeini(f"[pytest]\nsglang_baseline_key =\n    replay:{capture} = {key_file.stem}\n")
    result = run(pytester, f"--sglang-host=replay:{capture}", "--sglang-baseline=baselines", suite=suite)
    result.assert_outcomes(passed=1, failed=1)
    doc = report(pytester)
    assert validate(doc) == []
    (replayed,) = doc["hosts"]
    assert replayed["facts"]["origin"] == "replay" and replayed["verdict"] == "hold"
    (check,) = replayed["checks"]
    assert check["check"] == "sglang-baseline" and not check["passed"]
    md = (pytester.path / "out" / "report.md").read_text()
    assert "### Baseline diffs" in md
    assert "| `effective.max_running_requests` | `48` | `26` | differs — explained by `capacity.mamba-cap` |" in md


# ---- one count of differing fields ------------------------------------------------------------


def test_every_output_of_the_seed_gate_gives_the_same_count_of_differing_fields(tmp_path):
    """The fleet check's differing fields, counted once (``differing_fields`` in
    judge/gate/models.py): the JSON record, the verdict's reasons, the terminal (the check's
    heading and the closing summary), the Markdown and the HTML page say the same number."""
    import re

    import report_run
    from test_report_html import Page

    done = report_run.seed_gate(tmp_path)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    out = tmp_path / "out"
    doc = json.loads((out / "report.json").read_text())
    (fleet,) = [c for c in doc["run_checks"] if c["check"] == "sglang-fleet"]
    count, compared = len(fleet["differing_fields"]), fleet["fields_compared"]
    assert count > 10 and compared > 300 and len(fleet["differences"][CANDIDATE]) == count
    # every number given as a count of fields, anywhere, is that one
    said = {
        "json": re.findall(r"(\d+) field\(s\)", " ".join(doc["reasons"] + host(doc, CANDIDATE)["reasons"])),
        "terminal": re.findall(r"(\d+) field\(s\)", done.stdout),
        "markdown": re.findall(r"(\d+) field\(s\)|(\d+) of \d+ fields differ|\| candidate \| (\d+) \|", (out / "report.md").read_text()),
        "html": re.findall(r"(\d+) field\(s\)|(\d+) of \d+ fields differ", " ".join(" ".join(Page((out / "report.html").read_text()).text).split())),
    }
    found = {where: {int(n) for match in matches for n in (match if isinstance(match, tuple) else (match,)) if n} for where, matches in said.items()}
    assert found == dict.fromkeys(said, {count}), found
    assert f"the hosts of this run do not agree: 8 change(s) ({count} field(s)) differ:" in done.stdout
    assert f"{count} of {compared} fields differ" in (out / "report.md").read_text()
    page = (out / "report.html").read_text()
    assert f"{count} of {compared} fields differ" in page
    fleet_table = page[page.index('<table class="fit fleet">') :].split("</table>")[0]
    assert fleet_table.count('<th><span class="mono w') == count  # a column per differing field
