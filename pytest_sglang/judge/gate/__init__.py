"""The promotion gate: the run report as typed data (:mod:`.models`), the one function that
judges a run PROMOTE, HOLD or INCONCLUSIVE (:func:`judge_run`, and :func:`rejudge` for a stored
report), and the report document built from a front end's test entries (:mod:`.document`)."""

from __future__ import annotations

from pytest_sglang.judge.gate.models import (
    BenchLevel,
    Benchmark,
    CheckRecord,
    Counts,
    EffectiveValue,
    Finding,
    HostFacts,
    HostSection,
    RunReport,
    TestResult,
    ValueRead,
)
from pytest_sglang.judge.gate.verdict import (
    COUNT_KEYS,
    EXIT_MEANING,
    FAILED_OUTCOMES,
    HOLD,
    INCONCLUSIVE,
    PROMOTE,
    VERDICTS,
    HostReading,
    Judgment,
    bench_name,
    disagreement,
    inconclusive_reason,
    judge_run,
    refused_reasons,
    rejudge,
    short_name,
)

__all__ = [
    "COUNT_KEYS",
    "EXIT_MEANING",
    "FAILED_OUTCOMES",
    "HOLD",
    "INCONCLUSIVE",
    "PROMOTE",
    "VERDICTS",
    "BenchLevel",
    "Benchmark",
    "CheckRecord",
    "Counts",
    "EffectiveValue",
    "Finding",
    "HostFacts",
    "HostReading",
    "HostSection",
    "Judgment",
    "RunReport",
    "TestResult",
    "ValueRead",
    "bench_name",
    "disagreement",
    "inconclusive_reason",
    "judge_run",
    "refused_reasons",
    "rejudge",
    "short_name",
]
