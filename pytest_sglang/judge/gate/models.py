"""The run report as typed data: the models of the JSON document ``--sglang-report-json``
writes (``render/report/schema.json``; ``tests/test_gate.py`` holds the two equal).

The document is built as plain JSON data, in the schema's key order, and read back through
these models: :meth:`RunReport.model_validate` takes a report as the writer wrote it. A part
of the report whose schema lets checks and benchmarks add their own fields (``check``,
``benchmark``, ``bench_level``) keeps those as extra attributes; the nested records the
renderers read as data (a field's diff, a change, a fleet difference) stay JSON values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["promote", "hold", "inconclusive"]
Outcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]


class _Closed(BaseModel):
    """A part of the report whose schema allows no other field."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class _Open(BaseModel):
    """A part whose schema lets its producer add fields: they are kept, as attributes."""

    model_config = ConfigDict(extra="allow", frozen=True)


class Counts(_Closed):
    """pytest's own counts, by the category its summary line gives each report."""

    passed: int = Field(ge=0)
    failed: int = Field(ge=0)
    error: int = Field(ge=0)
    skipped: int = Field(ge=0)
    xfailed: int = Field(ge=0)
    xpassed: int = Field(ge=0)


class ValueRead(_Closed):
    """One SGLang value a failing test read, as its failure section shows it."""

    host: str | None
    name: str
    value: str
    source: str | None
    requested: str | None
    requested_source: str | None
    notes: list[str]
    causes: list[str]


class TestResult(_Closed):
    """One test's result, all its phases taken together."""

    __test__ = False  # a model, not a pytest test class

    nodeid: str
    host: str | None
    outcome: Outcome
    duration: float = Field(ge=0)
    message: str | None
    check: bool
    inconclusive: str | None
    values_read: list[ValueRead]


class CheckRecord(_Open):
    """A built-in check's record (lint, baselines, fleet drift); each check adds its fields."""

    check: str
    host: str | None
    passed: bool
    failures: list[str]
    notes: list[str]
    nodeid: str
    error: str | None = None
    key: str | None = None
    file: str | None = None
    path: str | None = None
    baseline: str | None = None
    summary: str | None = None
    message: str | None = None
    updating: bool | None = None
    diffs: list[dict[str, Any]] | None = None
    groups: list[dict[str, Any]] | dict[str, list[dict[str, Any]]] | None = None
    differences: dict[str, list[dict[str, Any]]] | None = None
    tolerated: dict[str, list[dict[str, Any]]] | None = None
    unread: dict[str, str] | None = None
    agree: bool | None = None
    hosts: list[str] | None = None
    reference: str | None = None
    fields_compared: int | None = Field(default=None, ge=0)
    differing_fields: list[str] | None = None
    findings: list[str] | None = None
    accepted: list[str] | None = None


def differing_fields(differences: Mapping[str, Sequence[Mapping[str, Any]]], host: str | None = None) -> list[str]:
    """The fields that differ from the fleet's configuration (failing, not those a policy
    tolerates), as a fleet check's record keeps them (``differences``: per host, one record
    per field): on ``host``, or on any host. Every output that counts differing fields (the
    check's heading, the verdict's reasons, the Markdown, the HTML) counts this list."""
    hosts = [host] if host is not None else list(differences)
    return sorted({str(d.get("field")) for name in hosts for d in differences.get(name, ())})


class EffectiveValue(_Closed):
    """A value in force on a host, where it was read, and what was requested."""

    value: Any
    source: str
    requested: Any
    requested_source: str | None
    note: str | None


class Finding(_Closed):
    """An explain finding, as the report keeps it."""

    id: str
    rule: str
    severity: Literal["error", "warning", "info"]
    status: Literal["confirmed", "predicted", "contradicted", "undecided"]
    setting: str
    title: str
    summary: str
    requested: Any
    effective: Any
    predicted: Any
    lint: bool


class HostFacts(_Closed):
    """What a host is: its identity, SGLang version, GPU and model."""

    describe: str
    origin: Literal["http", "sim", "replay"]
    collected_at: str
    profile: str | None
    where: str | None
    sglang_version: str | None
    model: str | None
    architecture: str | None
    gpu: str | None
    gpu_name: str | None
    gpu_count: int | None
    sm: int | None
    tp_size: int | None
    launch_command_known: bool


class Stat(_Closed):
    """A latency's distribution over a level's requests, in milliseconds."""

    count: int | None = Field(default=None, ge=0)
    mean: float | None = Field(default=None, ge=0)
    median: float | None = Field(default=None, ge=0)
    p90: float | None = Field(default=None, ge=0)
    p99: float | None = Field(default=None, ge=0)
    max: float | None = Field(default=None, ge=0)


class BenchLevel(_Open):
    """One load level of a benchmark: what it sent, what it measured, and whether it counts."""

    name: str
    mode: Literal["concurrency", "rate", "imported"]
    requests: int = Field(ge=0)
    completed: int = Field(ge=0)
    failed: int = Field(ge=0)
    output_throughput: float = Field(ge=0)
    ttft: Stat
    validity: dict[str, Any]
    request_throughput: float | None = Field(default=None, ge=0)
    itl: Stat | None = None
    tpot: Stat | None = None
    e2e: Stat | None = None
    server: dict[str, Any] | None = None
    verdict: Literal["pass", "fail", "inconclusive"] | None = None
    verdict_reasons: list[str] | None = None
    attempts: int | None = Field(default=None, ge=1)
    errors: list[str] | None = None
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    peak_concurrency: int | None = Field(default=None, ge=0)
    duration_s: float | None = Field(default=None, ge=0)
    input_throughput: float | None = Field(default=None, ge=0)
    total_throughput: float | None = Field(default=None, ge=0)
    concurrency: int | None = Field(default=None, ge=0)
    rate: float | None = Field(default=None, ge=0)
    goodput: float | None = Field(default=None, ge=0)
    goodput_fraction: float | None = Field(default=None, ge=0, le=1)
    extra: dict[str, float] | None = None
    notes: list[str] | None = None
    refused: list[str] | None = None


class BenchBaseline(_Closed):
    """The stored repeats a benchmark was compared with."""

    name: str
    levels: dict[str, dict[str, list[float]]]
    key: str | None = None
    recorded: str | None = None


class Benchmark(_Open):
    """One benchmark's result: its host, the outcome of the test that ran it, its levels."""

    test: str
    host: str | None
    outcome: str
    source: Literal["pytest-sglang", "bench_serving"]
    levels: list[BenchLevel]
    route: str | None = None
    repeats: int | None = Field(default=None, ge=1)
    settings: dict[str, Any] | None = None
    baseline: BenchBaseline | None = None
    inconclusive: str | None = None
    message: str | None = None


class HostSection(_Closed):
    """Everything the report says about one SGLang host, and its verdict."""

    host: str
    verdict: Verdict
    reasons: list[str]
    error: str | None
    warnings: list[str]
    facts: HostFacts | None
    effective: dict[str, EffectiveValue]
    findings: list[Finding]
    explain_error: str | None
    tests: list[TestResult]
    counts: Counts
    checks: list[CheckRecord]
    benchmarks: list[Benchmark]


class Tool(_Closed):
    name: Literal["pytest-sglang"]
    version: str


class RunReport(_Closed):
    """The whole run: per host, and the verdict CI reads."""

    format: Literal[1]
    tool: Tool
    created_at: str
    exit_status: int
    verdict: Verdict
    reasons: list[str]
    counts: Counts
    hosts: list[HostSection]
    run_checks: list[CheckRecord]
    tests_without_host: list[TestResult]
    collection_errors: list[str]


# The schema's definitions and the models that hold them (tests/test_gate.py compares them).
SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "counts": Counts,
    "value_read": ValueRead,
    "test": TestResult,
    "check": CheckRecord,
    "effective_value": EffectiveValue,
    "finding": Finding,
    "facts": HostFacts,
    "stat": Stat,
    "bench_level": BenchLevel,
    "bench_baseline": BenchBaseline,
    "benchmark": Benchmark,
    "host": HostSection,
}
