"""A whole gate run that fills every part of the HTML report, as a user runs it: the seed
deployment's baseline and candidate (``sim://``), the fleet check, configuration and
benchmark baselines, and a benchmark over five concurrency levels with a latency threshold
that the candidate's capped ``max_running_requests`` breaks.

Two pytest runs in a folder: the first records the baselines (each host mapped to its own
deployment key, three repeats per level), the second is the gate, writing the JSON, HTML and
Markdown reports. No ``--sglang-lint``: a host whose lint fails is not benchmarked, and the
page should show the candidate's benchmark (its explain findings are on the page all the same). The browser tier (``tests/test_report_browser.py``) and the screenshot of
docs/reports.md use it; ``python tests/report_run.py DIR`` runs it in DIR.

:func:`seed_gate` is the smaller run a reviewer meets first: the example suite against the
same two hosts, with the fleet check and the smoke benchmark (the screenshots of the seed gate's
page, and the one count of differing fields across every output).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"
LEVELS = (4, 16, 32, 48, 64)
THRESHOLD = "p99 ttft <= 40 ms"

SUITE = f'''
LEVELS = {list(LEVELS)!r}


def test_tensor_parallel_across_four_gpus(effective):
    assert effective.tp_size == 4


def test_effective_running_requests_meet_the_sizing(effective):
    assert effective.max_running_requests >= 48


def test_streams(sglang_bench):
    result = sglang_bench.run(concurrency=LEVELS, requests=64, input_len=64, output_len=8, repeats=3)
    try:
        sglang_bench.expect(result, "{THRESHOLD}")
    finally:
        sglang_bench.baseline(result, name="streams", metrics=["ttft_p99_ms", "output_throughput"], tolerance=0.5)
'''

INI = f"""[pytest]
sglang_baseline_key =
    {BASELINE} = seed-baseline
    {CANDIDATE} = seed-candidate
"""


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SGLANG_")) and k != "CI"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def pytest_run(work: Path, *args: str, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:benchmark", "test_gate.py", *args, *extra]
    return subprocess.run(command, cwd=work, env=environment(), capture_output=True, text=True, timeout=600)


def gate_run(work: Path) -> subprocess.CompletedProcess[str]:
    """The two runs in ``work``; returns the gate's. Writes ``work/out/report.{json,html,md}``."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "test_gate.py").write_text(SUITE)
    (work / "pytest.ini").write_text(INI)
    hosts = (f"--sglang-host={BASELINE}", f"--sglang-host={CANDIDATE}")
    # A busy machine makes the client late: a generous lag bound keeps the recording possible.
    bench = ("--sglang-bench=full", "--sglang-bench-max-lag=50")
    record = pytest_run(work, *hosts, "--sglang-baseline=baselines", "--sglang-update-baseline", *bench, "-k", "streams or tensor")
    if record.returncode not in (0, 1):
        raise RuntimeError(f"recording the baselines failed ({record.returncode}):\n{record.stdout[-3000:]}\n{record.stderr[-2000:]}")
    return pytest_run(
        work,
        *hosts,
        "--sglang-baseline=baselines",
        *bench,
        "--sglang-fleet",
        "--sglang-report-json=out/report.json",
        "--sglang-report-html=out/report.html",
        "--sglang-report-md=out/report.md",
    )


# The seed gate as a reviewer first meets it: the example suite against the baseline and the
# candidate, the fleet check and the smoke benchmark, every report written.
SEED_GATE = (
    "example_suite",
    f"--sglang-host={BASELINE}",
    f"--sglang-host={CANDIDATE}",
    "--sglang-fleet",
    "--sglang-bench=smoke",
    "--sglang-report-json=out/report.json",
    "--sglang-report-html=out/report.html",
    "--sglang-report-md=out/report.md",
)


def seed_gate(work: Path) -> subprocess.CompletedProcess[str]:
    """The seed gate in ``work`` (on a copy of the example suite); writes ``work/out/report.{json,html,md}``."""
    work.mkdir(parents=True, exist_ok=True)
    shutil.copytree(Path(__file__).resolve().parents[1] / "example_suite", work / "example_suite", ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:benchmark", *SEED_GATE]
    return subprocess.run(command, cwd=work, env=environment(), capture_output=True, text=True, timeout=600)


seed_gate_run = seed_gate  # the same run, as the chart checks name it


if __name__ == "__main__":
    done = gate_run(Path(sys.argv[1]))
    print(done.stdout[-4000:], done.stderr[-2000:])
