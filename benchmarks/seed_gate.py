"""The seed benchmark's verdicts on a busy machine, as a CI runner sees it.

Runs the example suite's benchmark test (``-k streams``, ``--sglang-bench=smoke``) against the
bundled baseline and candidate simulators RUNS times each, with ``CI=true`` and BURNERS
CPU-bound processes beside it, and prints how often each came out passed, failed, skipped
(inconclusive) or errored, with the p99 TTFT and the client's error of every run.

    python benchmarks/seed_gate.py --runs 10 --burners 2

The gate is right when the baseline passes and the candidate fails every time.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROFILES = {"baseline": "sim://qwen35-122b-a10b-4xrtx6000-baseline", "candidate": "sim://qwen35-122b-a10b-4xrtx6000-candidate"}


def _burn(stop_at: float) -> None:
    x = 0
    while time.time() < stop_at:
        x = (x * 31 + 7) % 1_000_003


def _one(host: str, report: Path) -> tuple[str, str]:
    env = {**os.environ, "CI": "true"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(ROOT / "example_suite"), f"--sglang-host={host}", "--sglang-bench=smoke", "-k", "streams", "-q", "-p", "no:cacheprovider", f"--sglang-report-json={report}"],
        capture_output=True, text=True, env=env, timeout=600,
    )
    try:
        doc = json.loads(report.read_text())
        (bench,) = doc["hosts"][0]["benchmarks"]
        (level,) = bench["levels"]
        figures = f"p99 TTFT {level['ttft']['p99']:.0f} ms, client error {(level['validity'].get('loop_lag_max_ms') or 0) + (level['validity'].get('send_delay_max_ms') or 0):.1f} ms, attempts {level.get('attempts', 1)}"
    except (OSError, ValueError, KeyError, TypeError):
        figures = "no benchmark record"
    outcome = {0: "passed", 1: "failed"}.get(done.returncode, f"exit {done.returncode}")
    if done.returncode == 0 and " skipped" in done.stdout:
        outcome = "skipped (inconclusive)"
    return outcome, figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--burners", type=int, default=2, help="CPU-bound processes running beside the benchmark")
    args = parser.parse_args()
    stop_at = time.time() + 3600
    burners = [multiprocessing.Process(target=_burn, args=(stop_at,), daemon=True) for _ in range(args.burners)]
    for p in burners:
        p.start()
    tally: dict[str, collections.Counter[str]] = {name: collections.Counter() for name in PROFILES}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(args.runs):
                for name, host in PROFILES.items():
                    outcome, figures = _one(host, Path(tmp) / f"{name}-{i}.json")
                    tally[name][outcome] += 1
                    print(f"run {i + 1:2d} {name:9s} {outcome:24s} {figures}", flush=True)
    finally:
        for p in burners:
            p.terminate()
    print(f"\n{args.runs} runs each, CI=true, {args.burners} CPU-bound processes beside it, {os.cpu_count()} cores:")
    for name, counts in tally.items():
        print(f"  {name:9s} " + ", ".join(f"{outcome} {n}" for outcome, n in counts.most_common()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
