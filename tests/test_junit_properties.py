"""JUnit XML carries each pytest-sglang property as a short summary (a check's or a benchmark's
outcome in one line, at most 200 characters), never a record's Python repr; the JSON report
keeps the whole records."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"
SUITE = """
def test_tp(effective):
    assert effective.tp_size == 4

def test_streams(sglang_bench):
    result = sglang_bench.run(concurrency=[2], requests=4, input_len=16, output_len=4, repeats=1, warmup=0)
    sglang_bench.expect(result, "error_rate == 0")
"""


@pytest.mark.parametrize("workers", [[], ["-p", "xdist", "-n", "2"]], ids=["serial", "xdist"])
def test_every_sglang_property_is_a_bounded_one_line_summary(pytester, workers):
    pytester.makepyfile(SUITE)
    result = pytester.runpytest(
        "-p", "no:benchmark", "-p", "no:cacheprovider", *workers, f"--sglang-host={BASELINE}", f"--sglang-host={CANDIDATE}",
        "--sglang-lint", "--sglang-fleet", "--sglang-bench=smoke", "--sglang-bench-max-lag=1000",
        "--junitxml=out/junit.xml", "--sglang-report-json=out/report.json",
    )
    result.assert_outcomes(passed=4, failed=2, skipped=1)  # the candidate's lint and the fleet fail; its benchmark is skipped
    props = [(p.get("name"), p.get("value")) for p in ET.parse(pytester.path / "out" / "junit.xml").iter("property")]
    ours = [(name, value) for name, value in props if name.startswith("sglang")]
    assert ours and all(len(value) <= 200 and "\n" not in value and "{'" not in value for _, value in ours), ours
    values = {value for name, value in ours if name in ("sglang.check", "sglang.bench")}
    assert f"sglang-lint[{BASELINE}]: passed" in values
    assert any(v.startswith(f"sglang-lint[{CANDIDATE}]: failed, 2 failure(s); first: WARNING [capacity.mamba-cap] ") for v in values), values
    assert any(v.startswith("sglang-fleet: failed, ") for v in values), values
    assert f"{BASELINE}: 1 level(s), 1 run(s) each: concurrency=2 pass" in values
    # The JSON report still has the whole records.
    doc = json.loads((pytester.path / "out" / "report.json").read_text())
    (host,) = [h for h in doc["hosts"] if h["host"] == BASELINE]
    assert host["benchmarks"][0]["levels"][0]["name"] == "concurrency=2"
