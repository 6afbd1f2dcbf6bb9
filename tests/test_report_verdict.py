"""The verdict a reviewer reads agrees with the job: HOLD exactly when pytest exits non-zero,
INCONCLUSIVE (never PROMOTE) when it exits 0 with a benchmark that could not be measured,
PROMOTE otherwise; the same in the JSON report and the Markdown headline. The Markdown's counts
are pytest's own (under xdist too), its text is never cut mid-word, a failing test shows what
was requested, what is in effect and why, and the benchmark table shows failed and
inconclusive levels with their reasons."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import host_section, report_counts, report_document

from pytest_sglang.render.report.markdown import HEADLINE, TITLE, render
from pytest_sglang.render.report.schema import validate
from pytest_sglang.render.report.text import shorten, shorten_front

BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"
LENIENT = "--sglang-bench-max-lag=1000"  # a busy test machine must not make a level inconclusive
WHY = "concurrency=4: the client's event loop lagged 40 ms (p99), more than 5 ms"

CONFIG = """
def test_tp(effective):
    assert effective.tp_size == 4
"""
CONFIG_FAILS = """
def test_running_requests_meet_the_sizing(effective):
    assert effective.max_running_requests >= 48
"""
UNMEASURED = f"""
from pytest_sglang.judge.bench.api import BenchInconclusive

def test_streams(sglang_bench):
    sglang_bench.run(concurrency=[4], requests=4, input_len=16, output_len=4, repeats=1, warmup=0)
    raise BenchInconclusive({WHY!r})
"""
TOO_SLOW = """
def test_streams(sglang_bench):
    result = sglang_bench.run(concurrency=[4], requests=4, input_len=16, output_len=4, repeats=1, warmup=0)
    sglang_bench.expect(result, "p99 ttft <= 0.001 ms")
"""


@dataclass
class Case:
    suite: str
    host: str
    exit: int
    verdict: str
    reasons: list[str] = field(default_factory=list)  # each a substring of some run reason
    ci: bool = False


CASES = {
    "passing run": Case(CONFIG, BASELINE, 0, "promote"),
    "failing config test": Case(CONFIG + CONFIG_FAILS, CANDIDATE, 1, "hold", [f"{CANDIDATE}: 1 test(s) failed"]),
    "inconclusive benchmark (skipped)": Case(CONFIG + UNMEASURED, BASELINE, 0, "inconclusive", [f"{BASELINE}: benchmark test_streams inconclusive: {WHY}"]),
    "inconclusive benchmark under CI=1 (failed)": Case(CONFIG + UNMEASURED, BASELINE, 1, "hold", [f"{BASELINE}: benchmark test_streams inconclusive: {WHY}"], ci=True),
    "benchmark failure": Case(CONFIG + TOO_SLOW, BASELINE, 1, "hold", [f"{BASELINE}: 1 test(s) failed"]),
}


def _report(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict, str]:
    result = pytester.runpytest("-p", "no:benchmark", "--sglang-report-json=report.json", "--sglang-report-md=report.md", *args)
    doc = json.loads((pytester.path / "report.json").read_text())
    assert validate(doc) == []
    return result, doc, (pytester.path / "report.md").read_text()


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_the_exit_status_the_json_verdict_and_the_markdown_headline_agree(pytester, monkeypatch, case):
    if case.ci:
        monkeypatch.setenv("CI", "1")
    else:
        monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(case.suite)
    result, doc, md = _report(pytester, f"--sglang-host={case.host}", "--sglang-bench=smoke", LENIENT)
    assert (int(result.ret), doc["verdict"]) == (case.exit, case.verdict), result.stdout.str()[-3000:]
    assert doc["exit_status"] == case.exit
    # the rule itself: hold exactly when pytest failed, never promote with an open question
    assert (doc["verdict"] == "hold") == (result.ret != 0)
    assert md.splitlines()[0] == TITLE + HEADLINE[doc["verdict"]]
    (host,) = doc["hosts"]
    assert host["verdict"] == case.verdict
    for reason in case.reasons:
        assert any(reason in r for r in doc["reasons"]), (reason, doc["reasons"])
    if case.verdict == "promote":
        assert doc["reasons"] == [] and "Held because" not in md and "Not promotable" not in md
    if case.verdict == "inconclusive":
        assert md.splitlines()[2:5] == ["Not promotable until measured", "", f"- {BASELINE}: benchmark test_streams inconclusive: {WHY}"]
        assert "PROMOTE" not in md and "HOLD" not in md
    if case.verdict == "hold":
        assert md.splitlines()[2].startswith("Held because: 1 of 1 host(s) on hold")


def test_an_inconclusive_benchmark_and_a_failure_together_hold_and_say_both(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(CONFIG + CONFIG_FAILS + UNMEASURED)
    result, doc, md = _report(pytester, f"--sglang-host={CANDIDATE}", "--sglang-bench=smoke", LENIENT)
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    assert doc["verdict"] == "hold"
    assert doc["reasons"] == [
        f"max_running_requests 26 < 48: capped by the mamba state cache (max_mamba_cache_size 132 // 5) [capacity.mamba-cap] (on {CANDIDATE})",
        f"{CANDIDATE}: 1 test(s) failed; benchmark test_streams inconclusive: {WHY}",
    ]
    assert f"### Inconclusive (not measured)\n- {CANDIDATE}: `test_streams`: {WHY}\n" in md


def test_a_run_that_failed_before_any_test_is_held(pytester):
    pytester.makepyfile(CONFIG + "\nimport nonexistent_module_for_the_report\n")
    result, doc, md = _report(pytester, f"--sglang-host={BASELINE}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert doc["verdict"] == "hold" and md.startswith(TITLE + HEADLINE["hold"])
    assert "1 collection error(s)" in doc["reasons"] and "pytest exited with status 2 (interrupted)" in doc["reasons"]
    assert doc["counts"]["error"] == 1


# ---- counts: pytest's own ---------------------------------------------------------------------

EVERY_OUTCOME = """
import pytest

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown broke")

@pytest.fixture
def broken_setup():
    raise RuntimeError("setup broke")

def test_passes(effective):
    assert effective.tp_size == 4

def test_fails(effective):
    assert effective.max_running_requests >= 48

def test_skips(effective):
    pytest.skip("not today")

@pytest.mark.xfail(reason="known")
def test_xfails(effective):
    assert effective.tp_size == 8

@pytest.mark.xfail(reason="fixed since")
def test_xpasses(effective):
    assert effective.tp_size == 4

def test_setup_error(effective, broken_setup):
    pass

def test_passes_then_teardown_errors(effective, broken_teardown):
    pass

def test_fails_then_teardown_errors(effective, broken_teardown):
    assert effective.tp_size == 8

def test_without_host():
    pass
"""

SUMMARY = re.compile(r"^=+ (?P<counts>.+?) in [\d.]+s(?: \([\d:]+\))? =+$", re.M)


def _pytest_summary(result: pytest.RunResult) -> str:
    (found,) = SUMMARY.findall(result.stdout.str())
    return ", ".join(part for part in found.split(", ") if not part.endswith(("deselected", "warning", "warnings")))


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-p", "xdist", "-n", "2"]], ids=["serial", "xdist"])
def test_the_counts_are_pytests_own_every_outcome_under_xdist_too(pytester, workers):
    pytester.makepyfile(test_outcomes=EVERY_OUTCOME)
    pytester.makepyfile(test_skipped_module="import pytest\npytest.skip('not this module', allow_module_level=True)\n")
    result, doc, md = _report(pytester, f"--sglang-host={CANDIDATE}", "--sglang-lint", *workers)
    outcomes = result.parseoutcomes()
    pytest_counts = {key: outcomes.get("errors" if key == "error" else key, 0) for key in doc["counts"]}
    assert pytest_counts == {"failed": 3, "passed": 3, "skipped": 2, "xfailed": 1, "xpassed": 1, "error": 3}  # lint on the candidate fails too
    assert doc["counts"] == pytest_counts
    # the Markdown's line reads as pytest's summary line
    footer = md.rstrip("\n").splitlines()[-1]
    assert footer.startswith(f"<sub>{_pytest_summary(result)} · pytest exit status 1 · ")
    # per host: its tests, the check counted apart
    (host,) = doc["hosts"]
    assert host["counts"] == {"failed": 2, "passed": 2, "skipped": 1, "xfailed": 1, "xpassed": 1, "error": 3}
    assert "| 2 failed, 2 passed, 1 skipped, 1 xfailed, 1 xpassed, 3 errors | 0/1 passed |" in md


# ---- what a failing test shows ----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-p", "xdist", "-n", "2"]], ids=["serial", "xdist"])
def test_a_failing_test_shows_requested_effective_and_the_cause(pytester, workers):
    pytester.makepyfile(CONFIG_FAILS)
    result, doc, md = _report(pytester, f"--sglang-host={CANDIDATE}", *workers)
    result.assert_outcomes(failed=1)
    ((test,),) = [h["tests"] for h in doc["hosts"]]
    (read,) = test["values_read"]
    assert read == {
        "host": CANDIDATE,
        "name": "effective.max_running_requests",
        "value": "26",
        "source": "/server_info internal_states[0].effective_max_running_requests_per_dp",
        "requested": "48",
        "requested_source": "launch command --max-running-requests, simulator profile qwen35-122b-a10b-4xrtx6000-candidate",
        "notes": ["per data-parallel worker"],
        "causes": ["capped by the mamba state cache (max_mamba_cache_size 132 // 5) [capacity.mamba-cap]"],
    }
    assert (
        f"- `test_running_requests_meet_the_sizing[{CANDIDATE}]` failed: assert 26 >= 48\n"
        "  - `effective.max_running_requests` = `26`, requested `48` (launch command --max-running-requests, simulator profile…): "
        "capped by the mamba state cache (max_mamba_cache_size 132 // 5) \\[capacity.mamba-cap\\]\n"  # brackets escaped: Markdown text
    ) in md


def test_a_value_requested_by_nobody_says_so(pytester):
    pytester.makepyfile("def test_prefill_graph(effective):\n    assert effective.prefill_cuda_graph is True\n")
    _, doc, md = _report(pytester, f"--sglang-host={CANDIDATE}")
    ((test,),) = [h["tests"] for h in doc["hosts"]]
    (read,) = test["values_read"]
    assert (read["value"], read["requested"]) == ("False", "nothing")
    assert read["causes"] and read["causes"][0].endswith("[pcg.multimodal]")
    assert "  - `effective.prefill_cuda_graph` = `False`, requested nothing (the launch command leaves SGLang's default," in md


# ---- benchmark levels, failed and inconclusive, with their reasons ---------------------------------


def test_the_benchmark_table_shows_a_failed_level_and_why(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(TOO_SLOW)
    result, doc, md = _report(pytester, f"--sglang-host={BASELINE}", "--sglang-bench=smoke", LENIENT)
    result.assert_outcomes(failed=1)
    ((bench,),) = [h["benchmarks"] for h in doc["hosts"]]
    (level,) = bench["levels"]
    row = next(line for line in md.splitlines() if line.startswith(f"| {BASELINE} | `test_streams` | concurrency=4 |"))
    assert row.endswith("| ❌ fail |")
    why = next(line for line in md.splitlines() if line.startswith(f"- {BASELINE} `test_streams` concurrency=4: ❌ fail: "))
    # the failing figure, from the level's verdict when it was judged, else the test's message
    assert "ttft" in why and ("0.001" in why or level["verdict_reasons"])


def test_the_benchmark_table_shows_an_inconclusive_level_and_why(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(UNMEASURED)
    result, doc, md = _report(pytester, f"--sglang-host={BASELINE}", "--sglang-bench=smoke", LENIENT)
    result.assert_outcomes(skipped=1)
    assert f"| {BASELINE} | `test_streams` | concurrency=4 |" in md
    assert f"- {BASELINE} `test_streams` concurrency=4: ⚠️ inconclusive: {WHY}" in md
    assert "| ⚠️ inconclusive |" in md


def test_levels_judged_by_the_benchmark_show_their_verdicts_and_reasons():
    """A record as the sglang_bench fixture writes it once thresholds judged its levels."""
    level = {"name": "concurrency=48", "mode": "concurrency", "requests": 96, "completed": 96, "failed": 0, "output_throughput": 900.0, "ttft": {"p99": 812.0}, "itl": {"p99": 9.0}, "validity": {"verdict": "valid", "reasons": []}, "server": {"peak_running": 26, "max_running_requests": 26}}
    levels = [
        {**level, "verdict": "fail", "verdict_reasons": ["concurrency=48: ttft_p99_ms 812.0 > 250 (limit)"], "attempts": 1},
        {**level, "name": "concurrency=64", "verdict": "inconclusive", "verdict_reasons": ["concurrency=64: the client's error (±40 ms) could change the verdict"], "attempts": 3, "failed": 2, "errors": ["HTTP 503"]},
        {**level, "name": "concurrency=1", "verdict": "pass", "verdict_reasons": [], "attempts": 1},
    ]
    bench = {"test": f"t.py::test_streams[{CANDIDATE}]", "host": CANDIDATE, "outcome": "failed", "source": "pytest-sglang", "levels": levels, "inconclusive": None, "message": "benchmark failed"}
    host = host_section(CANDIDATE, verdict="hold", reasons=["1 test(s) failed"], counts=report_counts(failed=1), benchmarks=[bench])
    doc = report_document([host], verdict="hold", reasons=[f"{CANDIDATE}: 1 test(s) failed"], counts=report_counts(failed=1), exit_status=1)
    assert validate(doc) == []
    md = render(doc)
    assert f"| {CANDIDATE} | `test_streams` | concurrency=48 | 900.0 | 812.0 | 9 | 96/96 | 26 / 26 | ❌ fail |" in md
    assert "| concurrency=1 | 900.0 | 812.0 | 9 | 96/96 | 26 / 26 | ✅ pass |" in md
    assert f"- {CANDIDATE} `test_streams` concurrency=48: ❌ fail: concurrency=48: ttft_p99_ms 812.0 > 250 (limit)" in md
    assert f"- {CANDIDATE} `test_streams` concurrency=64: ⚠️ inconclusive: concurrency=64: the client's error (±40 ms) could change the verdict; 2 of 96 requests failed: HTTP 503; after 3 attempts" in md
    assert "concurrency=1: ✅" not in md  # a passing level needs no reason


# ---- text is never cut mid-word ---------------------------------------------------------------


def test_long_text_is_cut_at_a_word_boundary_with_an_ellipsis():
    assert shorten("4x NVIDIA RTX PRO 6000 Blackwell Server Edition", 30) == "4x NVIDIA RTX PRO 6000…"
    assert shorten("2 test(s) failed; check sglang-lint failed; differs from the fleet", 40) == "2 test(s) failed; check sglang-lint…"
    assert shorten("short", 30) == "short"
    # one long token: cut after punctuation, not inside a word
    assert shorten("test_effective_running_requests_meet_the_sizing[sim://x]", 30) == "test_effective_running_…"
    # a host spec keeps its end, from a punctuation mark on
    assert shorten_front("replay:/very/long/path/to/the/captures/gpu1.json", 24) == "…/the/captures/gpu1.json"


WORDS = st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=12), min_size=1, max_size=20).map(" ".join)


@given(WORDS, st.integers(min_value=2, max_value=80))
def test_a_cut_never_falls_inside_a_word(text, limit):
    cut = shorten(text, limit)
    assert len(cut) <= limit
    if cut == text:
        return
    assert cut.endswith("…")
    body = cut[:-1]
    assert text.startswith(body)
    words = text.split(" ")
    if len(words[0]) < limit - 1:  # a first word that fits: only whole words are kept
        assert body.split(" ") == words[: len(body.split(" "))]


@given(WORDS, st.integers(min_value=2, max_value=80))
def test_a_front_cut_never_falls_inside_a_word(text, limit):
    cut = shorten_front(text, limit)
    assert len(cut) <= limit
    if cut == text:
        return
    body = cut[1:]
    assert cut.startswith("…") and text.endswith(body)
    if len(text.split(" ")[-1]) < limit - 1:
        assert body.split(" ") == text.split(" ")[-len(body.split(" ")):]


def test_the_terminal_closes_with_the_verdict_and_its_causes_without_any_report_asked(pytester):
    pytester.makepyfile(CONFIG + CONFIG_FAILS)
    result = pytester.runpytest(f"--sglang-host={CANDIDATE}", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    # after pytest's failures and short summary, before its counts line: the answer, then the count
    result.stdout.fnmatch_lines(
        [
            "*= FAILURES =*",
            "*= short test summary info =*",
            "*= SGLang gate: HOLD =*",
            f"max_running_requests 26 < 48: capped by the mamba state cache (max_mamba_cache_size 132 // 5) [[]capacity.mamba-cap[]] (on {CANDIDATE})",
            f"{CANDIDATE}: 1 test(s) failed",
            "*= 1 failed, 1 passed in *",
        ]
    )
    assert "report written" not in out and not list(pytester.path.glob("*.json"))
    passing = pytester.runpytest(f"--sglang-host={CANDIDATE}", "-p", "no:cacheprovider", "-k", "not running")
    passing.stdout.fnmatch_lines(["*= SGLang gate: PROMOTE =*"])
    assert pytester.runpytest("-p", "no:cacheprovider", "--collect-only").stdout.str().count("SGLang gate") == 0  # no host: no verdict
