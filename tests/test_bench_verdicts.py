"""Benchmark verdicts a gate can stand on: conclusive wherever the client's own error could not
change them, failed requests are failures, and an undecided benchmark is never a silent pass.

The judging is tested on hand-made levels (the arithmetic, and a property that holds it for any
latencies and client delays), then as users meet it: through pytest against the simulator."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_sglang.collect.bench.stats import percentile
from pytest_sglang.judge.bench.api import BenchFailed, BenchInconclusive, expect
from pytest_sglang.judge.bench.expect import close_metrics, judge, known_metrics, server_ttft_floor
from pytest_sglang.model.bench import BenchResult, LevelResult, ServerLoad, Stat, Validity

BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"


def _level(
    *,
    ttft_p99: float = 100.0,
    lag_max: float = 0.0,
    completed: int = 48,
    failed: int = 0,
    errors: tuple[str, ...] = (),
    peak: int = 48,
    e2e_median: float = 1000.0,
    output_throughput: float = 1000.0,
    server: ServerLoad | None = None,
) -> LevelResult:
    return LevelResult(
        name="concurrency=48",
        mode="concurrency",
        concurrency=48,
        requests=completed + failed,
        completed=completed,
        failed=failed,
        errors=list(errors),
        output_throughput=output_throughput,
        ttft=Stat(count=completed, median=ttft_p99 / 2, p99=ttft_p99),
        e2e=Stat(count=completed, median=e2e_median),
        peak_concurrency=peak,
        validity=Validity(loop_lag_max_ms=lag_max, send_delay_max_ms=0.0),
        server=server,
    )


def _verdict(level: LevelResult, *thresholds: str) -> str:
    result = BenchResult(target="sim://x", levels=[level])
    try:
        expect(result, *thresholds)
    except BenchFailed:
        return "fail"
    except BenchInconclusive:
        return "inconclusive"
    return "pass"


# ---- the client's error against each figure's margin --------------------------------------


def test_583_ms_against_a_250_ms_limit_with_15_ms_of_lag_is_a_conclusive_failure():
    level = _level(ttft_p99=583.0, lag_max=15.0)
    assert _verdict(level, "p99 ttft <= 250 ms") == "fail"
    assert level.verdict == "fail" and "ttft_p99_ms 583.0 ms (limit <= 250.0 ms)" in level.verdict_reasons[0]


def test_a_latency_measured_within_its_limit_holds_however_late_the_client_was():
    # The client sees events late, never early: the true latency is at most what it measured.
    assert _verdict(_level(ttft_p99=240.0, lag_max=500.0), "p99 ttft <= 250 ms") == "pass"


def test_a_latency_over_its_limit_by_less_than_the_clients_error_is_inconclusive():
    level = _level(ttft_p99=260.0, lag_max=15.0)
    with pytest.raises(BenchInconclusive) as info:
        expect(BenchResult(target="sim://x", levels=[level]), "p99 ttft <= 250 ms")
    assert str(info.value).startswith("inconclusive on sim://x: concurrency=48: ttft_p99_ms 260.0 ms")
    assert "the client saw events up to 15.0 ms late, more than the 10.0 ms margin" in str(info.value)
    assert info.value.levels == ["concurrency=48"] and level.verdict == "inconclusive"


def test_a_level_that_did_not_reach_its_concurrency_cannot_pass_a_latency_limit():
    # 30 of 48 in flight: under the asked load the latency could be worse than measured.
    assert _verdict(_level(ttft_p99=100.0, peak=30), "p99 ttft <= 250 ms") == "inconclusive"
    assert _verdict(_level(ttft_p99=900.0, peak=30), "p99 ttft <= 250 ms") == "fail"


@pytest.mark.parametrize(
    "measured, lag, expected",
    [
        (1200.0, 500.0, "pass"),  # measured above the limit: the client can only understate a rate
        (900.0, 5.0, "fail"),  # at most 900 * 1000 / 995 = 904.5 tokens/s: short of 1000
        (900.0, 200.0, "inconclusive"),  # up to 900 * 1000 / 800 = 1125: could be either
    ],
)
def test_a_throughput_is_judged_with_the_share_of_a_request_the_client_could_have_added(measured, lag, expected):
    assert _verdict(_level(output_throughput=measured, lag_max=lag, e2e_median=1000.0), "output_throughput >= 1000") == expected


def _histogram(*buckets: tuple[float, float]) -> ServerLoad:
    return ServerLoad(samples=3, peak_running=26, peak_queue=22, ttft_histogram=list(buckets))


def test_the_servers_own_ttft_histogram_decides_what_the_clients_error_leaves_open():
    # 48 requests, none of them served its first token within 500 ms by the server's own clock.
    slow = _histogram((250.0, 0.0), (500.0, 0.0), (1000.0, 48.0), (1e308, 48.0))
    level = _level(ttft_p99=600.0, lag_max=400.0, server=slow)
    assert server_ttft_floor(level, "ttft_p99_ms") == 500.0
    assert _verdict(level, "p99 ttft <= 250 ms") == "fail"
    assert "the server's own TTFT histogram puts it above 500.0 ms" in level.verdict_reasons[0]


def test_a_server_histogram_that_missed_some_of_the_levels_requests_decides_nothing():
    partial = _histogram((250.0, 0.0), (1000.0, 40.0), (1e308, 40.0))  # 40 of 48 observed
    level = _level(ttft_p99=600.0, lag_max=400.0, server=partial)
    assert server_ttft_floor(level, "ttft_p99_ms") is None
    assert _verdict(level, "p99 ttft <= 250 ms") == "inconclusive"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(1.0, 2000.0), min_size=1, max_size=60).flatmap(
        lambda true: st.tuples(st.just(true), st.lists(st.floats(0.0, 1.0), min_size=len(true), max_size=len(true)))
    ),
    st.floats(0.0, 300.0),
    st.floats(1.0, 2500.0),
    st.sampled_from([50, 90, 99]),
)
def test_a_verdict_never_contradicts_the_truth_whatever_the_clients_delays(data, error, limit, q):
    """Each request's true latency, the client seeing it up to ``error`` ms late: a pass means
    the true percentile meets the limit, a fail means it does not, whatever the delays were."""
    true, shares = data
    measured = [t + s * error for t, s in zip(true, shares)]
    stat = {50: "median", 90: "p90", 99: "p99"}[q]
    truth = percentile(sorted(true), q)
    figure = percentile(sorted(measured), q)
    level = LevelResult(
        name="concurrency=4", mode="concurrency", concurrency=4, requests=len(true), completed=len(true), peak_concurrency=4,
        ttft=Stat(count=len(true), **{stat: figure}), validity=Validity(loop_lag_max_ms=error, send_delay_max_ms=0.0),
    )
    verdict = judge(BenchResult(levels=[level]), [f"ttft_{stat}_ms <= {limit!r}"])
    if verdict.passed:
        assert truth <= limit
    if verdict.failures:
        assert truth > limit


# ---- failed requests are failures ------------------------------------------------------------


def test_a_level_with_failed_requests_fails_whatever_its_figures():
    level = _level(completed=7, failed=1, errors=("HTTP 503: overloaded",))
    with pytest.raises(BenchFailed) as info:
        expect(BenchResult(target="sim://x", levels=[level]), "output_throughput > 0")
    assert "concurrency=48: 1 of 8 requests failed (first: HTTP 503: overloaded); no failed request is allowed unless the test sets a limit such as 'error_rate <= 0.01'" in str(info.value)


def test_an_error_rate_limit_allows_what_it_says_but_never_a_level_with_no_success():
    assert _verdict(_level(completed=7, failed=1, errors=("HTTP 503",)), "error_rate <= 0.25") == "pass"
    assert _verdict(_level(completed=7, failed=1, errors=("HTTP 503",)), "error_rate <= 0.1") == "fail"
    nothing = _level(completed=0, failed=8, errors=("HTTP 429: rate limited",))
    with pytest.raises(BenchFailed) as info:
        expect(BenchResult(target="sim://x", levels=[nothing]), "error_rate <= 1")
    assert "none of the 8 requests succeeded: HTTP 429: rate limited" in str(info.value)


def test_a_level_that_measured_nothing_fails_and_says_why():
    """A warm-up that used the whole budget leaves a level with no request: that is not a pass."""
    empty = LevelResult(name="concurrency=4", mode="concurrency", concurrency=4, notes=["warm-up: 2 of 2 requests failed: did not finish within the level's 18 s bound"])
    with pytest.raises(BenchFailed) as info:
        expect(BenchResult(target="sim://x", levels=[empty]), "error_rate <= 1")
    assert "concurrency=4: no request was measured (warm-up: 2 of 2 requests failed: did not finish within the level's 18 s bound)" in str(info.value)


# ---- thresholds that cannot be right -----------------------------------------------------------


@pytest.mark.parametrize(
    "written, first",
    [("p99_tft", "ttft_p99_ms"), ("tft p99", "ttft_p99_ms"), ("output_thruput", "output_throughput"), ("errors", "error_rate"), ("itl_p50", "itl_median_ms")],
)
def test_a_misspelt_metric_suggests_the_name_meant_first(written, first):
    assert close_metrics(written, known_metrics())[0] == first


# ---- as users meet it: pytest against the simulator --------------------------------------------

UNDECIDABLE = """
def test_streams(sglang_bench):
    result = sglang_bench.run(concurrency=[2], requests=4, input_len=16, output_len=4, repeats=1, warmup=0)
    sglang_bench.expect(result, "p99 ttft <= 0.001 ms")
"""


@pytest.fixture
def starved_client(monkeypatch):
    """A client so late that no latency over its limit can be told from its own error (as on a
    machine whose CPU other work holds): every figure measured over its limit is undecided."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(LevelResult, "client_error_ms", lambda self: 1e6)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:benchmark", *args)


def test_an_undecided_level_is_run_again_then_skipped_with_its_host_and_reason(pytester, starved_client, tmp_path):
    pytester.makepyfile(UNDECIDABLE)
    result = _run(pytester, f"--sglang-host={BASELINE}", "--sglang-bench=smoke", "-rs", f"--sglang-report-json={tmp_path / 'r.json'}")
    result.assert_outcomes(skipped=1)
    assert result.ret == 0
    out = result.stdout.str()
    assert out.count("sglang bench: concurrency=2: 4/4 requests") == 3  # the first run and two reruns
    result.stdout.fnmatch_lines([
        "*SGLang benchmarks not measured (skipped, not passed)*",
        f"*test_streams*inconclusive on {BASELINE} after 3 attempts*",
        f"SKIPPED * inconclusive on {BASELINE} after 3 attempts: concurrency=2: ttft_p99_ms * (limit <= 0.001 ms): cannot tell: *",
    ])
    (bench,) = json.loads((tmp_path / "r.json").read_text())["hosts"][0]["benchmarks"]
    (level,) = bench["levels"]
    assert level["verdict"] == "inconclusive" and level["attempts"] == 3
    assert [note.split(":")[0] for note in level["notes"] if note.startswith("attempt")] == ["attempt 1 was inconclusive", "attempt 2 was inconclusive"]


@pytest.mark.parametrize("how", ["CI", "option"])
def test_an_undecided_level_fails_in_ci_or_when_asked(pytester, starved_client, monkeypatch, how):
    pytester.makepyfile(UNDECIDABLE)
    args = [f"--sglang-host={BASELINE}", "--sglang-bench=smoke"]
    if how == "CI":
        monkeypatch.setenv("CI", "true")
    else:
        args.append("--sglang-bench-inconclusive=fail")
    result = _run(pytester, *args)
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    why = "CI is set" if how == "CI" else "--sglang-bench-inconclusive=fail"
    result.stdout.fnmatch_lines([f"inconclusive on {BASELINE} after 3 attempts: *", f"(an undecided benchmark fails because {why};*", "*SGLang benchmarks not measured (failed)*"])


def test_the_seed_benchmark_fails_the_candidate_and_passes_the_baseline_with_ci_set(pytester, monkeypatch):
    """In CI nothing undecided passes; the seed case needs no leniency to be decided: the
    candidate's p99 is far over its limit and the baseline's under it."""
    from pathlib import Path

    monkeypatch.setenv("CI", "true")
    pytester.makepyfile(test_qwen35=(Path(__file__).resolve().parents[1] / "example_suite" / "test_qwen35_deployment.py").read_text())
    result = _run(pytester, f"--sglang-host={BASELINE}", f"--sglang-host={CANDIDATE}", "--sglang-bench=smoke", "-k", "streams")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*benchmark failed on {CANDIDATE}*", "*concurrency=48: ttft_p99_ms * ms (limit <= 250.0 ms)*"])


def test_no_benchmark_baseline_is_recorded_from_a_run_with_failed_requests(pytester, tmp_path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile("""
def test_capacity(sglang_bench):
    result = sglang_bench.run(concurrency=[2], requests=4, input_len=16, output_len=4, repeats=1, warmup=0)
    level = result.level(2)
    # as if the server had refused two of them
    level.failed, level.completed, level.errors = 2, 2, ["HTTP 429: too many requests"]
    sglang_bench.baseline(result)
""")
    baselines = tmp_path / "baselines"
    result = _run(pytester, f"--sglang-host={BASELINE}", f"--sglang-baseline={baselines}", "--sglang-update-baseline", "--sglang-bench=smoke", "-k", "capacity")
    result.assert_outcomes(passed=1, failed=1)  # the configuration baseline is written; the benchmark's is not
    result.stdout.fnmatch_lines(["*benchmark baseline 'test_capacity' not recorded: requests failed on*", "*2 of 4 requests failed (first: HTTP 429: too many requests)*"])
    assert not list(baselines.glob("*.bench.json"))


def _baseline_entry(ttft_p99: float, runs: int) -> dict:
    from pytest_sglang.judge.bench.compare import baseline_entry

    levels = [_level(ttft_p99=ttft_p99 + i) for i in range(runs)]
    return baseline_entry(BenchResult(target="sim://x", levels=levels[:1], repeats=[[lv] for lv in levels] if runs > 1 else []))


@pytest.mark.parametrize("ttft_p99", [100.0, 400.0])  # unchanged, and four times worse
def test_one_run_on_each_side_is_inconclusive_never_a_pass(ttft_p99):
    from pytest_sglang.bench import compare

    result = BenchResult(target="sim://x", levels=[_level(ttft_p99=ttft_p99)])
    with pytest.raises(BenchInconclusive) as caught:
        compare(result, _baseline_entry(100.0, 1), name="capacity", metrics=["ttft_p99_ms"])
    assert str(caught.value) == (
        "inconclusive on sim://x: capacity: concurrency=48: 1 baseline run(s) against 1 cannot tell a change from noise "
        "(the smallest p they allow is 0.5, over alpha 0.05): record the baseline and run with repeats >= 3 on both sides (--sglang-bench=full)"
    )
    assert caught.value.levels == []  # running the level again gives as few runs: no rerun
    assert result.levels[0].verdict == "inconclusive"


def test_three_runs_on_each_side_are_compared():
    from pytest_sglang.bench import compare

    result = BenchResult(target="sim://x", levels=[_level()], repeats=[[_level(ttft_p99=100.0 + i)] for i in range(3)])
    changes = compare(result, _baseline_entry(100.0, 3), metrics=["ttft_p99_ms"])
    assert [c.status for c in changes] == ["unchanged"] and result.levels[0].verdict == "pass"


ONE_RUN_BASELINE = """
def test_capacity(sglang_bench):
    result = sglang_bench.run(concurrency=[2], requests=4, input_len=16, output_len=4, repeats=1, warmup=0)
    sglang_bench.baseline(result, name="capacity")
"""


@pytest.mark.parametrize("ci", [False, True])
def test_a_one_run_benchmark_baseline_is_not_green_and_fails_under_ci(pytester, tmp_path, monkeypatch, ci):
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(ONE_RUN_BASELINE)
    baselines = str(tmp_path / "baselines")
    lenient = "--sglang-bench-max-lag=1000"
    _run(pytester, f"--sglang-host={BASELINE}", f"--sglang-baseline={baselines}", "--sglang-update-baseline", "--sglang-bench=smoke", lenient).assert_outcomes(passed=2)
    if ci:
        monkeypatch.setenv("CI", "true")
    result = _run(pytester, f"--sglang-host={BASELINE}", f"--sglang-baseline={baselines}", "--sglang-bench=smoke", lenient, "-rs")
    if ci:
        result.assert_outcomes(passed=1, failed=1)
    else:
        result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines([f"*inconclusive on {BASELINE}: capacity: concurrency=2: 1 baseline run(s) against 1 cannot tell a change from noise*"])
    assert "after 3 attempts" not in result.stdout.str()  # not run again: it would have as few runs
