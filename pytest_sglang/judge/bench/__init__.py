"""Serving benchmarks: a load generator that measures itself, thresholds, baselines, imports.

Library use::

    from pytest_sglang import connect
    from pytest_sglang.judge.bench import Bench
    from pytest_sglang.judge.bench import expect

    with connect("http://gpu1:30000") as target:
        result = Bench(target).run(concurrency=[1, 48], requests=200, repeats=1)
        expect(result, "p99 ttft <= 250 ms", level=48)
"""

from __future__ import annotations

from pytest_sglang.collect.bench.bench_serving import load_bench_serving
from pytest_sglang.collect.bench.load import LoadGenerator, LoadSpec, load_spec, run_load
from pytest_sglang.collect.bench.stats import SLO
from pytest_sglang.judge.bench.api import Bench, BenchFailed, BenchInconclusive, Budget, compare, expect
from pytest_sglang.model.bench import BenchResult, LevelResult, RequestRecord, ServerLoad, Stat, Validity

__all__ = [
    "Bench",
    "BenchFailed",
    "BenchInconclusive",
    "BenchResult",
    "Budget",
    "LevelResult",
    "LoadGenerator",
    "LoadSpec",
    "RequestRecord",
    "SLO",
    "ServerLoad",
    "Stat",
    "Validity",
    "compare",
    "expect",
    "load_bench_serving",
    "load_spec",
    "run_load",
]
