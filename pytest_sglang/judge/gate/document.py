"""The run report document (``render/report/schema.json``), built from the entries a front end
gives (one per phase of a test, as :func:`pytest_sglang.plugin.report_build.report_entry`
makes them from pytest's reports) and each host's reading (:mod:`.summary`), and judged by
:func:`~pytest_sglang.judge.gate.verdict.judge_run`.

An entry is a plain JSON object: ``nodeid``, ``when``, ``outcome``, ``category`` (pytest's,
as its summary line counts it), ``counted``, ``duration``, ``host``, ``message``, ``xfail``,
``checks`` (check records), ``benchmarks`` (benchmark records) and ``values_read``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

from pytest_sglang.base.secrets import scrub_object
from pytest_sglang.judge.gate.models import Benchmark, CheckRecord, TestResult
from pytest_sglang.judge.gate.summary import HostPart
from pytest_sglang.judge.gate.verdict import COUNT_KEYS, FAILED_OUTCOMES, INCONCLUSIVE, PROMOTE, HostReading, inconclusive_reason, judge_run, refused_reasons
from pytest_sglang.model.numbers import JSON_NUMBER, checked_copy

REPORT_FORMAT = 1


def json_value(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _outcome(phases: list[dict[str, Any]]) -> tuple[str, str | None, float]:
    by_when = {p["when"]: p for p in phases}
    duration = round(sum(p["duration"] for p in phases), 4)
    for when in ("setup", "call", "teardown"):
        phase = by_when.get(when)
        if phase is not None and phase["outcome"] == "failed":
            return ("failed" if when == "call" else "error"), phase["message"], duration
    call = by_when.get("call")
    for when in ("setup", "call"):
        phase = by_when.get(when)
        if phase is not None and phase["outcome"] == "skipped":
            return ("xfailed" if phase["xfail"] else "skipped"), phase["message"], duration
    if call is not None and call["xfail"]:
        return "xpassed", None, duration
    return "passed", None, duration


def fold_tests(entries: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(tests, check records): one result per test, and every check record once."""
    phases: dict[str, list[dict[str, Any]]] = {}
    hosts: dict[str, str | None] = {}
    checks: list[dict[str, Any]] = []
    check_ids: set[str] = set()
    for entry in entries:
        phases.setdefault(entry["nodeid"], []).append(entry)
        hosts[entry["nodeid"]] = hosts.get(entry["nodeid"]) or entry["host"]
        for record in entry["checks"]:
            checks.append({**record, "nodeid": entry["nodeid"]})
            check_ids.add(entry["nodeid"])
    tests = []
    for nodeid, items in phases.items():
        outcome, message, duration = _outcome(items)
        reads = [r for item in items for r in item.get("values_read") or ()]
        tests.append(
            {
                "nodeid": nodeid,
                "host": hosts[nodeid],
                "outcome": outcome,
                "duration": duration,
                "message": message,
                "check": nodeid in check_ids,
                "inconclusive": inconclusive_reason(outcome, message),
                "values_read": reads,
            }
        )
    return tests, checks


def counts(entries: Iterable[dict[str, Any]], collect_errors: int = 0, collect_skipped: int = 0) -> dict[str, int]:
    """Outcomes as pytest's summary line counts them: one per test report by its category
    (a test that passed and then failed its teardown is 1 passed and 1 error, as pytest says),
    plus collection errors and skipped modules."""
    out = {name: 0 for name in COUNT_KEYS}
    for entry in entries:
        category = entry.get("category")
        if category in out and entry.get("counted", True):
            out[category] += 1
    out["error"] += collect_errors
    out["skipped"] += collect_skipped
    return out


def benchmarks(entries: Iterable[dict[str, Any]], tests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every benchmark result of the run, with its host, the outcome of the test that ran it
    and, when that test was inconclusive, why."""
    by_id = {t["nodeid"]: t for t in tests}
    out: list[dict[str, Any]] = []
    for entry in entries:
        for record in entry.get("benchmarks") or ():
            test = by_id.get(entry["nodeid"], {})
            out.append(
                {
                    **record,
                    "test": entry["nodeid"],
                    "host": test.get("host") or entry["host"],
                    "outcome": test.get("outcome", entry["outcome"]),
                    "inconclusive": test.get("inconclusive"),
                    "message": test.get("message"),
                }
            )
    return out


def build_document(entries: list[dict[str, Any]], hosts: Sequence[HostPart], collect_errors: list[str], exitstatus: int, collect_skipped: int = 0) -> dict[str, Any]:
    """The run's report: the tests folded from the entries, each host's reading, and the
    verdict of :func:`judge_run` on them."""
    from pytest_sglang import __version__

    tests, checks = fold_tests(entries)
    run_checks = [c for c in checks if c.get("host") is None]
    bench = benchmarks(entries, tests)
    judged = judge_run(
        [HostReading(h.host, h.section["error"], h.findings, h.refused) for h in hosts],
        [TestResult.model_validate(t) for t in tests],
        [CheckRecord.model_validate(c) for c in checks],
        [Benchmark.model_validate(b) for b in bench],
        collect_errors,
        exitstatus,
    )
    sections = []
    for part in hosts:
        own_tests = [t for t in tests if t["host"] == part.host and not t["check"]]
        own_ids = {t["nodeid"] for t in own_tests}
        host = judged.hosts[part.host]
        sections.append(
            {
                **part.section,
                "tests": own_tests,
                "counts": counts(e for e in entries if e["nodeid"] in own_ids),
                "checks": [c for c in checks if c.get("host") == part.host],
                "benchmarks": [b for b in bench if b.get("host") == part.host],
                "verdict": host.verdict,
                "reasons": host.reasons,
            }
        )
    known = {part.host for part in hosts}
    document = {
        "format": REPORT_FORMAT,
        "tool": {"name": "pytest-sglang", "version": __version__},
        "created_at": datetime.now(timezone.utc).isoformat(),
        "exit_status": exitstatus,
        "verdict": judged.verdict,
        "reasons": judged.reasons,
        "counts": counts(entries, len(collect_errors), collect_skipped),
        "hosts": sections,
        "run_checks": run_checks,
        "tests_without_host": [t for t in tests if t["host"] not in known and not t["check"]],
        "collection_errors": collect_errors,
    }
    return scrub_object(finite(json_value(document)))


def finite(document: dict[str, Any]) -> dict[str, Any]:
    """The document with any number JSON cannot hold (NaN, an infinity, an integer past 1e308)
    left out and said: what reaches a writer or a renderer is always a number it can print.
    Every figure is checked where it enters the model, so this finds nothing; it is the last
    guard, so that the JSON report is written with ``allow_nan=False`` and never holds ``NaN``."""
    clean, stray = checked_copy(document, "$", JSON_NUMBER, sep=".")
    if not stray:
        return dict(clean)
    reasons = refused_reasons(stray)
    for index, host in enumerate(clean.get("hosts") or ()):
        mine = [fault for fault in stray if fault.startswith(f"$.hosts[{index}].")]
        if mine and host.get("verdict") == PROMOTE:
            host["verdict"] = INCONCLUSIVE
        host["reasons"] = [*host.get("reasons", []), *refused_reasons(mine)] if mine else host.get("reasons", [])
    clean["reasons"] = [*clean.get("reasons", []), *reasons]
    if clean.get("verdict") == PROMOTE:
        clean["verdict"] = INCONCLUSIVE
    return dict(clean)


__all__ = ["FAILED_OUTCOMES", "REPORT_FORMAT", "build_document", "counts", "finite", "fold_tests", "json_value"]
