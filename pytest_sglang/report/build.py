"""The run's report as one JSON document (see ``schema.json`` beside this file), and how it is
written. The controller builds it once at the end of the session from:

- the test reports it received (from xdist workers too): outcomes, durations, the host
  properties, and the ``sglang.check`` records of the built-in checks (lint, baselines, fleet);
- the session's targets, read in the controller: facts, effective values with their sources,
  and the explain findings.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import pytest

from ..checks import CHECK_PROPERTY, session_state
from ..errors import SGLangError
from ..secrets import scrub, scrub_object

if TYPE_CHECKING:
    from ..spec import HostSpec
    from ..target import Target

REPORT_FORMAT = 1
HOST_PROPERTY = "sglang_host"
PROMOTE, HOLD = "promote", "hold"
FAILED_OUTCOMES = ("failed", "error")


# ---- what each test report contributes --------------------------------------------------------


def _message(report: pytest.TestReport) -> str | None:
    longrepr = report.longrepr
    if longrepr is None:
        return None
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (file, line, reason)
        return str(longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or str(longrepr)
    first = next((line.strip() for line in str(text).splitlines() if line.strip()), "")
    return first[:300]


def report_entry(report: pytest.TestReport) -> dict[str, Any]:
    """What the report needs from one test report (a phase of one test), scrubbed."""
    props = [(name, value) for name, value in report.user_properties if isinstance(name, str)]
    host = next((str(value) for name, value in props if name == HOST_PROPERTY), None)
    checks = [value for name, value in props if name == CHECK_PROPERTY and isinstance(value, dict)] if report.when == "call" else []
    entry = {
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "duration": round(float(report.duration or 0.0), 4),
        "host": host,
        "message": _message(report) if report.outcome != "passed" else None,
        "xfail": bool(getattr(report, "wasxfail", None) is not None),
        "checks": checks,
        "benchmarks": _bench_records(props) if report.when == "call" else [],
    }
    return scrub_object(entry)


def _bench_records(props: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    from ..bench.plugin import BENCH_PROPERTY

    return [value for name, value in props if name == BENCH_PROPERTY and isinstance(value, dict)]


def _benchmarks(entries: Iterable[dict[str, Any]], tests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every benchmark result of the run, with its host and the outcome of the test that ran it."""
    by_id = {t["nodeid"]: t for t in tests}
    out: list[dict[str, Any]] = []
    for entry in entries:
        for record in entry.get("benchmarks") or ():
            test = by_id.get(entry["nodeid"], {})
            out.append({**record, "test": entry["nodeid"], "host": test.get("host") or entry["host"], "outcome": test.get("outcome", entry["outcome"])})
    return out


def host_properties(config: pytest.Config, spec: HostSpec) -> list[tuple[str, str]]:
    """The JUnit properties of a test on this host: host, SGLang version, GPU, model."""
    props = [(HOST_PROPERTY, spec.display)]
    state = session_state(config)
    if state is None:
        return props
    try:
        target = state.target(spec)
    except SGLangError:
        return props  # the test itself reports why the host could not be read
    facts = _facts(target)
    gpu = facts.get("gpu") or ""
    props += [("sglang_version", facts.get("sglang_version") or "unknown"), ("sglang_gpu", gpu or "unknown"), ("sglang_model", facts.get("model") or "unknown")]
    return [(name, scrub(value)) for name, value in props]


# ---- per host, from the target ----------------------------------------------------------------


def _json_value(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _facts(target: Target) -> dict[str, Any]:
    from .. import _reads

    with _reads.paused():
        e = target.effective
        host = target.facts.host
        gpu = None
        if e.gpu_name:
            gpu = f"{e.gpu_count}x {e.gpu_name}" if e.gpu_count else e.gpu_name
        elif e.sm:
            gpu = f"SM{e.sm}"
        return {
            "describe": target.describe(),
            "origin": target.facts.origin,
            "collected_at": target.facts.collected_at.isoformat(),
            "profile": target.facts.profile,
            "where": host.where if host else None,
            "sglang_version": target.version,
            "model": target.model_info.model_path or target.server_args.model_path,
            "architecture": target.model_info.architecture,
            "gpu": gpu,
            "gpu_name": e.gpu_name,
            "gpu_count": e.gpu_count,
            "sm": e.sm,
            "tp_size": e.tp_size,
            "launch_command_known": target.launch_command is not None,
        }


def _effective(target: Target) -> dict[str, Any]:
    from .. import _reads

    out: dict[str, Any] = {}
    with _reads.paused():
        e = target.effective
        for name, value in e.values().items():
            prov = e.provenance.get(name)
            out[name] = {
                "value": _json_value(value),
                "source": prov.source if prov else "unknown",
                "requested": _json_value(prov.requested) if prov and prov.requested_source else None,
                "requested_source": prov.requested_source if prov else None,
                "note": prov.note if prov else None,
            }
    return out


FINDING_FIELDS = ("id", "rule", "severity", "status", "setting", "title", "summary", "requested", "effective", "predicted", "lint")


def _findings(target: Target) -> tuple[list[dict[str, Any]], str | None]:
    try:
        from ..explain import explain

        explanation = explain(target)
    except Exception as exc:  # the report still has everything else about the host
        return [], f"explain failed: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    return [_json_value({k: getattr(f, k) for k in FINDING_FIELDS}) for f in explanation.findings], None


# ---- test results -----------------------------------------------------------------------------


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


def _tests(entries: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
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
        tests.append({"nodeid": nodeid, "host": hosts[nodeid], "outcome": outcome, "duration": duration, "message": message, "check": nodeid in check_ids})
    return tests, checks


def _counts(tests: list[dict[str, Any]]) -> dict[str, int]:
    counts = {name: 0 for name in ("passed", "failed", "error", "skipped", "xfailed", "xpassed")}
    for test in tests:
        counts[test["outcome"]] = counts.get(test["outcome"], 0) + 1
    return counts


def baseline_diffs(check: dict[str, Any]) -> list[dict[str, Any]]:
    """The field-level baseline differences a check record carries (a list of objects with
    ``baseline`` and ``live``), whatever the key it uses."""
    out: list[dict[str, Any]] = []
    for key, value in check.items():
        if key in ("failures", "notes") or not isinstance(value, list):
            continue
        out += [d for d in value if isinstance(d, dict) and "baseline" in d and "live" in d]
    return out


# ---- the document -----------------------------------------------------------------------------


def _host_section(state: Any, spec: HostSpec, tests: list[dict[str, Any]], checks: list[dict[str, Any]], run_checks: list[dict[str, Any]], benchmarks: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    section: dict[str, Any] = {"host": spec.display, "error": None, "warnings": [], "facts": None, "effective": {}, "findings": [], "explain_error": None}
    try:
        target = state.target(spec)
    except SGLangError as exc:
        section["error"] = str(exc)
    else:
        section["facts"] = _facts(target)
        section["warnings"] = list(target.warnings)
        section["effective"] = _effective(target)
        section["findings"], section["explain_error"] = _findings(target)
    own_tests = [t for t in tests if t["host"] == spec.display and not t["check"]]
    own_checks = [c for c in checks if c.get("host") == spec.display]
    section["tests"] = own_tests
    section["counts"] = _counts(own_tests)
    section["checks"] = own_checks
    own_benchmarks = [b for b in benchmarks or () if b.get("host") == spec.display]
    section["benchmarks"] = own_benchmarks
    reasons: list[str] = []
    if section["error"]:
        reasons.append(f"not read: {section['error']}")
    failed = [t for t in tests if t["host"] == spec.display and t["outcome"] in FAILED_OUTCOMES and not t["check"]]
    if failed:
        reasons.append(f"{len(failed)} test(s) failed")
    reasons += [f"check {c['check']} failed" for c in own_checks if not c.get("passed")]
    errors = [f for f in section["findings"] if f["severity"] == "error"]
    if errors:
        reasons.append(f"{len(errors)} error finding(s)")
    for check in run_checks:
        diffs = (check.get("differences") or {}).get(spec.display) if isinstance(check.get("differences"), dict) else None
        if diffs:
            reasons.append(f"differs from the fleet in {len(diffs)} field(s) ({check['check']})")
        unread = check.get("unread")
        if isinstance(unread, dict) and spec.display in unread and not section["error"]:
            reasons.append(f"not read by {check['check']}")
    for bench in own_benchmarks:
        unsure = [lv["name"] for lv in bench.get("levels") or () if (lv.get("validity") or {}).get("verdict") == "inconclusive"]
        if unsure:
            reasons.append(f"benchmark {bench['test']} inconclusive at {', '.join(unsure)} (the client was the bottleneck)")
    ran = [t for t in tests if t["host"] == spec.display and t["outcome"] not in ("skipped",)]
    if not ran and not reasons:
        reasons.append("nothing was tested on this host (every test was skipped or none ran)")
    section["verdict"] = HOLD if reasons else PROMOTE
    section["reasons"] = reasons
    return section


def build_report(config: pytest.Config, entries: list[dict[str, Any]], collect_errors: list[str], exitstatus: int) -> dict[str, Any]:
    from .. import __version__

    state = session_state(config)
    specs = list(state.specs) if state is not None else []
    tests, checks = _tests(entries)
    run_checks = [c for c in checks if c.get("host") is None]
    benchmarks = _benchmarks(entries, tests)
    hosts = [_host_section(state, spec, tests, checks, run_checks, benchmarks) for spec in specs]
    known = {spec.display for spec in specs}
    other_tests = [t for t in tests if t["host"] not in known and not t["check"]]
    reasons: list[str] = []
    if not specs:
        reasons.append("no SGLang host in this run")
    reasons += [f"{h['host']}: {'; '.join(h['reasons'])}" for h in hosts if h["verdict"] == HOLD]
    reasons += [f"check {c['check']} failed" for c in run_checks if not c.get("passed")]
    failed_other = [t for t in other_tests if t["outcome"] in FAILED_OUTCOMES]
    if failed_other:
        reasons.append(f"{len(failed_other)} test(s) without an SGLang host failed")
    if collect_errors:
        reasons.append(f"{len(collect_errors)} collection error(s)")
    if exitstatus not in (0, 1) or (exitstatus == 1 and not reasons):
        reasons.append(f"pytest exited with status {exitstatus}")
    document = {
        "format": REPORT_FORMAT,
        "tool": {"name": "pytest-sglang", "version": __version__},
        "created_at": datetime.now(timezone.utc).isoformat(),
        "exit_status": exitstatus,
        "verdict": HOLD if reasons else PROMOTE,
        "reasons": reasons,
        "counts": _counts([t for t in tests if not t["check"]]),
        "hosts": hosts,
        "run_checks": run_checks,
        "tests_without_host": other_tests,
        "collection_errors": collect_errors,
    }
    return scrub_object(_json_value(document))


def _write(path: Path, text: str) -> str | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(scrub(text), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        return f"could not write the report {path}: {exc.strerror or exc}"
    return None


def write_reports(document: dict[str, Any], json_path: Path | None, md_path: Path | None) -> list[str]:
    """Write the reports through the scrubber; returns the problems (one line each)."""
    problems = []
    if json_path is not None:
        problem = _write(json_path, json.dumps(document, indent=2, sort_keys=False) + "\n")
        if problem:
            problems.append(problem)
    if md_path is not None:
        from .markdown import render

        problem = _write(md_path, render(document))
        if problem:
            problems.append(problem)
    return problems
