"""The serving benchmark as users run it: the ``sglang_bench`` fixture through pytest (in-process
and under xdist), its budget and safety rules, inconclusive results, benchmark baselines, the
reports, and the ``pytest-sglang bench`` command, all against the bundled simulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_sglang.render.report.schema import validate

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"
# Pass/fail tests must not turn inconclusive because the test machine is busy; inconclusive
# results have their own tests below.
LENIENT = "--sglang-bench-max-lag=1000"

SMALL = """
def test_small_benchmark(sglang_bench):
    result = sglang_bench.run(concurrency=[4], requests=8, input_len=32, output_len=4, repeats=1, warmup=0)
    assert result.level(4).completed == 8
    sglang_bench.expect(result, "output_throughput > 0", "p99 ttft <= 60 s")
"""


@pytest.fixture(autouse=True)
def _not_in_ci(monkeypatch):
    """These runs are a developer's: CI=true (as .ci/run sets it) refuses baseline updates and
    silences progress, which the tests that want it set themselves."""
    monkeypatch.delenv("CI", raising=False)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:benchmark", *args)


def test_benchmarks_are_off_unless_asked(pytester):
    pytester.makepyfile(SMALL + "\ndef test_config(effective):\n    assert effective.tp_size == 4\n")
    result = _run(pytester, f"--sglang-host={BASELINE}", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*serving benchmarks are off: run with --sglang-bench=smoke or --sglang-bench=full*"])


def test_the_seed_benchmark_passes_on_the_baseline_and_fails_on_the_candidate_naming_max_running_requests(pytester):
    """The example suite's own benchmark test, as shipped: at 48 concurrent streams the
    candidate's 26 running slots queue the rest, and its p99 time to first token shows it."""
    pytester.makepyfile(test_qwen35=(ROOT / "example_suite" / "test_qwen35_deployment.py").read_text())
    result = _run(pytester, f"--sglang-host={BASELINE}", f"--sglang-host={CANDIDATE}", "--sglang-bench=smoke", LENIENT, "-k", "streams", "-rfEs")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        f"FAILED *test_48_concurrent_streams_start_without_queueing[[]{CANDIDATE}[]]*",
    ])
    out = result.stdout.str()
    assert "concurrency=48: ttft_p99_ms" in out
    assert "effective max_running_requests is 26, below the 48 requests in flight: 22 wait in the queue for a slot" in out
    assert "Traceback" not in out and "api.py" not in out  # the figures are the failure, not the library's stack


def test_no_benchmark_against_a_host_whose_configuration_check_failed(pytester, tmp_path):
    """The gate's order: verify the configuration first, then benchmark. The candidate checked
    against the baseline's file fails the check, so its benchmark does not run."""
    pytester.makepyfile(SMALL)
    baselines = tmp_path / "baselines"
    _run(pytester, f"--sglang-host={BASELINE}", f"--sglang-baseline={baselines}", "--sglang-update-baseline", "-k", "nothing").assert_outcomes(passed=1, deselected=1)
    (written,) = [p for p in baselines.glob("*.json")]
    pytester.makeini(f"[pytest]\nsglang_baseline_key =\n    {CANDIDATE} = {written.stem}\n")
    result = _run(pytester, f"--sglang-host={CANDIDATE}", f"--sglang-baseline={baselines}", "--sglang-bench=smoke", LENIENT, "-rs")
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines([f"*benchmark not run: the configuration of {CANDIDATE} failed in this session (sglang-baseline[[]{CANDIDATE}[]] failed)*"])


@pytest.mark.slow
def test_benchmarks_of_one_host_never_overlap_under_xdist(pytester, tmp_path):
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    body = """
import time, os
def _bench(sglang_bench, name):
    start = time.time()
    sglang_bench.run(concurrency=[2], requests=6, input_len=16, output_len=8, repeats=1, warmup=0)
    with open(os.path.join({where!r}, name), "w") as f:
        f.write(f"{{start}} {{time.time()}}")
""".format(where=str(stamps))
    body += "".join(f"\ndef test_b{i}(sglang_bench):\n    _bench(sglang_bench, 'b{i}')\n" for i in range(4))
    pytester.makepyfile(body)
    result = _run(pytester, "-p", "xdist", "-n", "2", f"--sglang-host={BASELINE}", "--sglang-bench=smoke", LENIENT)
    result.assert_outcomes(passed=4)
    spans = sorted(tuple(map(float, p.read_text().split())) for p in stamps.iterdir())
    assert len(spans) == 4
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start >= end - 0.001, f"two benchmarks ran at once against one host: {spans}"


BASELINE_SUITE = """
def test_capacity(sglang_bench):
    result = sglang_bench.run(concurrency=[48], requests=48, input_len=64, output_len=128, repeats=3)
    changes = sglang_bench.baseline(result, name="capacity-48", metrics=["ttft_p99_ms", "output_throughput"], tolerance=0.5, min_delta_ms=50)
    print("CHANGES", [c.status for c in changes])
"""


@pytest.mark.slow
def test_a_benchmark_baseline_is_written_then_gates_a_regression_with_repeats(pytester, tmp_path):
    pytester.makepyfile(BASELINE_SUITE)
    baselines = tmp_path / "baselines"
    pytester.makeini(f"[pytest]\nsglang_baseline_key =\n    {BASELINE} = qwen35\n    {CANDIDATE} = qwen35\n")
    wrote = _run(pytester, f"--sglang-host={BASELINE}", f"--sglang-baseline={baselines}", "--sglang-update-baseline", "--sglang-bench=full", LENIENT)
    wrote.assert_outcomes(passed=2)  # the config check and the benchmark
    stored = json.loads((baselines / "qwen35.bench.json").read_text())
    assert stored["kind"] == "pytest-sglang bench baseline"
    samples = stored["benchmarks"]["capacity-48"]["levels"]["concurrency=48"]
    assert len(samples["ttft_p99_ms"]) == 3  # every repeat kept, for the noise test

    same = _run(pytester, f"--sglang-host={BASELINE}", f"--sglang-baseline={baselines}", "--sglang-bench=full", LENIENT, "-s")
    same.assert_outcomes(passed=2)

    # The candidate differs in configuration too, so its benchmark would be refused after the
    # config check; compare the benchmark alone by taking the config check out of the gate.
    pytester.makeini(f"[pytest]\nsglang_baseline_key =\n    {CANDIDATE} = qwen35\nsglang_baseline_policy =\n    * = ignore\n")
    worse = _run(pytester, f"--sglang-host={CANDIDATE}", f"--sglang-baseline={baselines}", "--sglang-bench=full", LENIENT)
    worse.assert_outcomes(passed=1, failed=1)
    worse.stdout.fnmatch_lines([
        "*capacity-48: 1 figure(s) regressed against the baseline*",
        "*concurrency=48: ttft_p99_ms * ms -> * ms (*% worse, lower is better; median of 3 vs 3 run(s), Mann-Whitney p=0.05)*",
        "*concurrency=48: server: peak running requests 26*effective max_running_requests is 26, below the 48 requests in flight*",
    ])


def test_the_json_report_carries_each_level_and_validates(pytester, tmp_path):
    pytester.makepyfile(SMALL)
    result = _run(pytester, f"--sglang-host={BASELINE}", "--sglang-bench=smoke", LENIENT, f"--sglang-report-json={tmp_path / 'r.json'}", f"--sglang-report-md={tmp_path / 'r.md'}")
    result.assert_outcomes(passed=1)
    doc = json.loads((tmp_path / "r.json").read_text())
    assert validate(doc) == []
    (bench,) = doc["hosts"][0]["benchmarks"]
    (level,) = bench["levels"]
    assert bench["outcome"] == "passed" and level["name"] == "concurrency=4"
    assert level["completed"] == 8 and level["output_throughput"] > 0 and level["ttft"]["p99"] > 0
    assert level["server"]["max_running_requests"] == 48
    assert "| concurrency=4 |" in (tmp_path / "r.md").read_text()


def test_progress_is_shown_by_default_and_silent_under_q_and_in_ci(pytester, monkeypatch):
    pytester.makepyfile(SMALL)
    monkeypatch.delenv("CI", raising=False)
    shown = _run(pytester, f"--sglang-host={BASELINE}", "--sglang-bench=smoke", LENIENT)
    assert "sglang bench: concurrency=4: 8/8 requests" in shown.stdout.str()
    quiet = _run(pytester, f"--sglang-host={BASELINE}", "--sglang-bench=smoke", LENIENT, "-q")
    assert "sglang bench:" not in quiet.stdout.str()
    monkeypatch.setenv("CI", "true")
    ci = _run(pytester, f"--sglang-host={BASELINE}", "--sglang-bench=smoke", LENIENT)
    assert "sglang bench:" not in ci.stdout.str()
    asked = _run(pytester, f"--sglang-host={BASELINE}", "--sglang-bench=smoke", LENIENT, "--sglang-bench-progress")
    assert "sglang bench: concurrency=4" in asked.stdout.str()


def test_the_budget_caps_requests_and_says_so(pytester):
    pytester.makepyfile("""
def test_big(sglang_bench):
    result = sglang_bench.run(concurrency=[2], requests=500, input_len=16, output_len=4, repeats=3, warmup=0)
    level = result.level(2)
    assert level.requests == 5
    assert result.repeats == []  # smoke runs once
    assert "smoke budget: at most 5 requests per level" in level.notes
""")
    _run(pytester, f"--sglang-host={BASELINE}", "--sglang-bench=smoke", "--sglang-bench-max-requests=5", LENIENT).assert_outcomes(passed=1)


@pytest.mark.parametrize(
    "option, message",
    [
        ("--sglang-bench-max-requests=0", "--sglang-bench-max-requests must be more than 0 requests, not '0'"),
        ("--sglang-bench-max-requests=2.5", "--sglang-bench-max-requests must be a whole number of requests, not '2.5'"),
        ("--sglang-bench-max-duration=nan", "--sglang-bench-max-duration must be a finite number of seconds, not 'nan'"),
        ("--sglang-bench-max-duration=inf", "--sglang-bench-max-duration must be a finite number of seconds, not 'inf'"),
        ("--sglang-bench-processes=-2", "--sglang-bench-processes must be more than 0 client processes, not '-2'"),
        ("--sglang-bench-max-lag=soon", "--sglang-bench-max-lag must be a number of ms, not 'soon'"),
    ],
)
def test_bad_benchmark_options_are_one_line_usage_errors(pytester, option, message):
    """An unbounded or NaN limit would let a benchmark run on a live host without limit."""
    pytester.makepyfile(SMALL)
    result = _run(pytester, f"--sglang-host={BASELINE}", "--sglang-bench=smoke", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "Traceback" not in result.stderr.str()


def test_bad_benchmark_ini_values_name_the_ini_key(pytester):
    pytester.makepyfile(SMALL)
    pytester.makeini("[pytest]\nsglang_bench = smoke\nsglang_bench_max_duration = forever\n")
    result = _run(pytester, f"--sglang-host={BASELINE}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: ini sglang_bench_max_duration must be a number of seconds, not 'forever'"])
    pytester.makeini("[pytest]\nsglang_bench = often\n")
    result = _run(pytester, f"--sglang-host={BASELINE}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: ini sglang_bench = 'often': use off, smoke or full"])
    result = _run(pytester, f"--sglang-host={BASELINE}", "--sglang-bench=often")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_a_misspelt_threshold_is_a_usage_error_before_anything_runs(pytester):
    pytester.makepyfile("""
def test_typo(sglang_bench):
    result = sglang_bench.run(concurrency=[1], requests=2, input_len=8, output_len=2, repeats=1, warmup=0)
    sglang_bench.expect(result, "p99_tft <= 3 ms")
""")
    result = _run(pytester, f"--sglang-host={BASELINE}", "--sglang-bench=smoke", LENIENT)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *.py:3: threshold 'p99_tft <= 3 ms': no metric 'p99_tft'; did you mean ttft_p99_ms*"])
    assert "sglang bench:" not in result.stdout.str()  # no request was sent
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_the_api_key_never_reaches_output_or_reports(pytester, tmp_path, monkeypatch):
    key = "sk-bench-SECRET-4412"
    monkeypatch.setenv("SGLANG_API_KEY", key)
    pytester.makepyfile(SMALL)
    result = _run(pytester, f"--sglang-host={BASELINE}?api_key_env=SGLANG_API_KEY", "--sglang-bench=smoke", LENIENT, f"--sglang-report-json={tmp_path / 'r.json'}", f"--sglang-report-md={tmp_path / 'r.md'}", "--junitxml", str(tmp_path / "j.xml"), "-v", "-rs")
    result.assert_outcomes(passed=1)
    for text in (result.stdout.str(), result.stderr.str(), *(p.read_text() for p in tmp_path.iterdir())):
        assert key not in text


# ---- the command line ---------------------------------------------------------------------


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", "bench", *args], capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})


def test_cli_runs_levels_and_judges_thresholds_with_exit_codes(tmp_path):
    out = tmp_path / "result.json"
    ok = _cli(BASELINE, "--concurrency", "1,4", "--requests", "8", "--input-len", "16", "--output-len", "4", "--expect", "output_throughput > 0", "-o", str(out))
    assert ok.returncode == 0, ok.stderr  # a throughput measured above its limit holds whatever the client's lag
    assert "concurrency=4" in ok.stdout and "TTFT p99" in ok.stdout
    data = json.loads(out.read_text())
    assert [level["name"] for level in data["levels"]] == ["concurrency=1", "concurrency=4"]
    failing = _cli(BASELINE, "--concurrency", "2", "--requests", "4", "--input-len", "16", "--output-len", "4", "--expect", "request_throughput >= 1000000")
    assert failing.returncode == 1, failing.stderr  # a million times short: no client error explains that
    assert "request_throughput" in failing.stderr and "limit >= 1000000" in failing.stderr


def test_cli_prints_the_plugins_progress_lines_per_level_on_stderr_unless_quiet():
    # Standard error is a pipe here, as in a CI log: progress shows all the same.
    shown = _cli(BASELINE, "--concurrency", "1,4", "--requests", "8", "--input-len", "16", "--output-len", "4", "--json")
    assert shown.returncode == 0, shown.stderr
    done = [line for line in shown.stderr.splitlines() if line.endswith("(done)")]
    assert [line.split(":")[1].strip() for line in done] == ["concurrency=1", "concurrency=4"], shown.stderr
    assert all(line.startswith("sglang bench: concurrency=") and " 8/8 requests, " in line for line in done), shown.stderr
    json.loads(shown.stdout)  # standard output stays the result alone
    quiet = _cli(BASELINE, "--concurrency", "1", "--requests", "4", "--input-len", "16", "--output-len", "4", "-q")
    assert quiet.returncode == 0 and "sglang bench:" not in quiet.stderr + quiet.stdout, quiet.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        ((BASELINE,), "give --concurrency N,N or --rate R,R"),
        ((BASELINE, "--concurrency", "1,x"), "--concurrency '1,x': give comma-separated numbers"),
        ((BASELINE, "--concurrency", "0"), "concurrency levels must be 1 or more"),
        ((BASELINE, "--concurrency", "1", "--input-len", "9:3"), "low <= high"),
        ((BASELINE, "--concurrency", "1", "--slo", "ttft:3"), "write NAME=MS pairs"),
        (("--import", "/nonexistent/results.jsonl"), "/nonexistent/results.jsonl"),
        ((), "give a TARGET to benchmark or --import FILE"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(args, message):
    done = _cli(*args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr


# ---- sglang.bench_serving results through the same judging ----------------------------------

IMPORTED = ROOT / "tests" / "data" / "bench_serving" / "sglang-sweep-c1-c4-c16-details.jsonl"


def test_an_imported_bench_serving_sweep_is_judged_and_reported_like_our_own(pytester, tmp_path):
    pytester.makepyfile(f"""
def test_nightly(sglang_bench):
    result = sglang_bench.load({str(IMPORTED)!r})
    assert [level.concurrency for level in result.levels] == [1, 4, 16]
    sglang_bench.expect(result, "output_throughput > 0", "error_rate == 0")
    sglang_bench.expect(result, "p99 ttft <= 0.001 ms", level=16)
""")
    result = _run(pytester, f"--sglang-host={BASELINE}", "--sglang-bench=smoke", f"--sglang-report-json={tmp_path / 'r.json'}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*concurrency=16: ttft_p99_ms * ms (limit <= 0.001 ms)*"])
    doc = json.loads((tmp_path / "r.json").read_text())
    assert validate(doc) == []
    (bench,) = doc["hosts"][0]["benchmarks"]
    assert bench["source"] == "bench_serving" and [lv["name"] for lv in bench["levels"]] == ["concurrency=1", "concurrency=4", "concurrency=16"]


def test_cli_imports_bench_serving_output_and_judges_it(tmp_path):
    ok = _cli("--import", str(IMPORTED), "--expect", "output_throughput > 0", "--level", "4")
    assert ok.returncode == 0, ok.stderr
    assert "concurrency=16" in ok.stdout and "(bench_serving)" in ok.stdout
    bad = _cli("--import", str(IMPORTED), "--expect", "p99 ttft <= 0.001 ms")
    assert bad.returncode == 1
    assert "concurrency=1: ttft_p99_ms" in bad.stderr
    garbage = tmp_path / "cut.txt"
    garbage.write_text("============ Serving Benchmark Result ============\nBackend:   sglang\nSuccessful requests:   10\n")
    cut = _cli("--import", str(garbage))
    assert cut.returncode == 2 and len(cut.stderr.strip().splitlines()) == 1 and "cut.txt" in cut.stderr
