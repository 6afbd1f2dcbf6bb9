"""The run's report as one JSON document (see ``schema.json`` beside this file), and how it is
written. The controller builds it once at the end of the session from:

- the test reports it received (from xdist workers too): outcomes, durations, the host
  properties, and the ``sglang.check`` records of the built-in checks (lint, baselines, fleet);
- the session's targets, read in the controller: facts, effective values with their sources,
  and the explain findings.

The verdict follows pytest's exit status: ``hold`` exactly when it is not 0; with 0,
``inconclusive`` when something is open (a benchmark skipped as inconclusive, a host where
nothing was tested), never ``promote``; else ``promote``. Counts are pytest's own, by the
category pytest gives each report.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterable

import pytest

from pytest_sglang.plugin.checks import CHECK_PROPERTY, session_state
from pytest_sglang.base.errors import SGLangError
from pytest_sglang.base.secrets import clip, scrub, scrub_object
from pytest_sglang.model.numbers import JSON_NUMBER, checked_copy
from pytest_sglang.render.report.document import COUNT_KEYS, FAILED_OUTCOMES, HOLD, INCONCLUSIVE, PROMOTE, bench_name
from pytest_sglang.render.report.text import shorten

if TYPE_CHECKING:
    from pytest_sglang.target.spec import HostSpec
    from pytest_sglang.target.target import Target

REPORT_FORMAT = 1
HOST_PROPERTY = "sglang_host"
# The failure section the plugin adds to a failing test (pytest_sglang/plugin/core.py, render.py).
VALUES_SECTION = "SGLang values read by this test"
MESSAGE_LIMIT = 300
EXIT_MEANING = {1: "tests failed", 2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests were collected"}
_INCONCLUSIVE_MESSAGE = re.compile(r"inconclusive(?: on (?P<where>.*?))?(?P<after> after \d+ attempts?)?(?::\s|:$|$)(?P<why>.*)", re.I | re.S)
_CAUSE = re.compile(r"\[[\w.-]+\]$")


# ---- what each test report contributes --------------------------------------------------------


def _message(report: pytest.TestReport) -> str | None:
    longrepr = report.longrepr
    if longrepr is None:
        return None
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (file, line, reason)
        return shorten(str(longrepr[2]).removeprefix("Skipped: "), MESSAGE_LIMIT)
    crash = getattr(longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or str(longrepr)
    first = next((line.strip() for line in str(text).splitlines() if line.strip()), "")
    return shorten(first, MESSAGE_LIMIT)


def _sections(report: pytest.TestReport) -> list[tuple[str, str]]:
    """Every titled section of a report: pytest's own (captured output) and those added to
    its failure text (``longrepr.addsection``), which travel with the report under xdist."""
    out = [(str(title), str(text)) for title, text in report.sections]
    out += [(str(part[0]), str(part[1])) for part in getattr(report.longrepr, "sections", None) or () if len(part) >= 2]
    return out


def _split_requested(text: str) -> tuple[str, str | None]:
    """``48: launch command --max-running-requests`` -> (``48``, ``launch command ...``): the
    first ``": "`` outside quotes and brackets ends the value."""
    depth, quote = 0, ""
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == ":" and depth <= 0 and text[i + 1 : i + 2] == " ":
            return text[:i], text[i + 2 :]
    return text, None


def values_read(text: str) -> list[dict[str, Any]]:
    """The "SGLang values read by this test" section as records: per value read, its target,
    name, the value in effect, where it was read, what was requested and where that came from,
    notes, and the causes (one line per explain rule that set, capped or ignored it)::

        sim://...-candidate
          effective.max_running_requests = 26
              from /server_info internal_states[0].effective_max_running_requests_per_dp
              requested 48: launch command --max-running-requests, simulator profile ...
              per data-parallel worker
              capped by the mamba state cache (max_mamba_cache_size 132 // 5) [capacity.mamba-cap]
    """
    out: list[dict[str, Any]] = []
    host: str | None = None
    for raw in text.splitlines():
        if not raw.strip():
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        line = raw.strip()
        if indent == 0:
            host = line
        elif indent <= 4 and " = " in line:
            name, value = line.split(" = ", 1)
            out.append({"host": host, "name": name, "value": value, "source": None, "requested": None, "requested_source": None, "notes": [], "causes": []})
        elif out:
            record = out[-1]
            if line.startswith("from ") and record["source"] is None:
                record["source"] = line[5:]
            elif line.startswith("requested ") and record["requested_source"] is None:
                record["requested"], record["requested_source"] = _split_requested(line[10:])
            elif _CAUSE.search(line):
                record["causes"].append(line)
            else:
                record["notes"].append(line)
    return out


def report_entry(report: pytest.TestReport, category: str | None = None) -> dict[str, Any]:
    """What the report needs from one test report (a phase of one test), scrubbed.
    ``category`` is pytest's own for the report (``pytest_report_teststatus``): what its
    summary line counts it as."""
    props = [(name, value) for name, value in report.user_properties if isinstance(name, str)]
    host = next((str(value) for name, value in props if name == HOST_PROPERTY), None)
    checks = [value for name, value in props if name == CHECK_PROPERTY and isinstance(value, dict)] if report.when == "call" else []
    reads: list[dict[str, Any]] = []
    if report.failed:
        for title, text in _sections(report):
            if title.strip() == VALUES_SECTION:
                reads += values_read(text)
    entry = {
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "category": category if category is not None else _default_category(report),
        "counted": bool(getattr(report, "count_towards_summary", True)),
        "duration": round(float(report.duration or 0.0), 4),
        "host": host,
        "message": _message(report) if report.outcome != "passed" else None,
        "xfail": bool(getattr(report, "wasxfail", None) is not None),
        "checks": checks,
        "benchmarks": _bench_records(props) if report.when == "call" else [],
        "values_read": reads,
    }
    return scrub_object(entry)


def _default_category(report: pytest.TestReport) -> str:
    """pytest's category for a report, when its hook was not asked (a report built by hand)."""
    xfail = getattr(report, "wasxfail", None) is not None
    if report.when != "call":
        return "error" if report.failed else "skipped" if report.skipped and not xfail else "xfailed" if xfail else ""
    if xfail:
        return "xfailed" if report.skipped else "xpassed" if report.passed else "failed"
    return report.outcome


def _bench_records(props: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    from pytest_sglang.plugin.bench import BENCH_PROPERTY

    return [value for name, value in props if name == BENCH_PROPERTY and isinstance(value, dict)]


def _benchmarks(entries: Iterable[dict[str, Any]], tests: list[dict[str, Any]]) -> list[dict[str, Any]]:
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
    from pytest_sglang.base import reads as _reads

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
    from pytest_sglang.base import reads as _reads

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
        from pytest_sglang.judge.explain import explain

        explanation = explain(target)
    except Exception as exc:  # the report still has everything else about the host
        return [], f"explain failed: {type(exc).__name__}: {clip(str(exc), 200)}"
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


def inconclusive_reason(outcome: str, message: str | None) -> str | None:
    """Why a test was inconclusive, or None when it was not: a benchmark that could not be
    measured is skipped (or, in CI, failed) with a message starting "inconclusive"
    ("inconclusive on HOST after 2 attempts: why", "inconclusive: why"); the reason is what
    follows the host (which the report says already)."""
    if outcome not in ("skipped", "failed", "error") or not message:
        return None
    found = _INCONCLUSIVE_MESSAGE.match(message)
    if found is None:
        return None
    why = found["why"].strip() or "inconclusive"
    return f"{found['after'].strip()}: {why}" if found["after"] else why


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
        host = hosts[nodeid]
        reads = [r for item in items for r in item.get("values_read") or ()]
        tests.append(
            {
                "nodeid": nodeid,
                "host": host,
                "outcome": outcome,
                "duration": duration,
                "message": message,
                "check": nodeid in check_ids,
                "inconclusive": inconclusive_reason(outcome, message),
                "values_read": reads,
            }
        )
    return tests, checks


def _counts(entries: Iterable[dict[str, Any]], collect_errors: int = 0, collect_skipped: int = 0) -> dict[str, int]:
    """Outcomes as pytest's summary line counts them: one per test report by its category
    (a test that passed and then failed its teardown is 1 passed and 1 error, as pytest says),
    plus collection errors and skipped modules."""
    counts = {name: 0 for name in COUNT_KEYS}
    for entry in entries:
        category = entry.get("category")
        if category in counts and entry.get("counted", True):
            counts[category] += 1
    counts["error"] += collect_errors
    counts["skipped"] += collect_skipped
    return counts


# ---- the verdict ------------------------------------------------------------------------------
#
# HOLD exactly when pytest's exit status is not 0; with exit status 0, INCONCLUSIVE when
# something is not known yet (a benchmark that could not be measured, a host where nothing was
# tested, an error-level explain finding no test checked), never PROMOTE; otherwise PROMOTE.
# Per host likewise: held for what failed on it (only in a run that failed), inconclusive for
# what is open on it, else promote. A figure refused where it entered (a server's /metrics or
# /server_info answering NaN, an infinity or a number out of range) is open: never promote.
REFUSED_SHOWN = 3


def refused_reasons(faults: list[str]) -> list[str]:
    """The reasons a verdict gives for figures refused where they entered: the first few by
    field and value, then how many more."""
    faults = list(dict.fromkeys(faults))
    out = [f"figure refused: {fault}" for fault in faults[:REFUSED_SHOWN]]
    if len(faults) > REFUSED_SHOWN:
        out.append(f"{len(faults) - REFUSED_SHOWN} more figure(s) refused")
    return out


def _bench_refused(benchmarks: Iterable[dict[str, Any]]) -> list[str]:
    """Each refused figure of these benchmark records, with its benchmark and level."""
    out: list[str] = []
    for bench in benchmarks:
        for level in bench.get("levels") or ():
            for fault in level.get("refused") or () if isinstance(level, dict) else ():
                out.append(f"{fault} (benchmark {bench_name(str(bench.get('test') or ''))}, {level.get('name')})")
    return out


def _verdict(exitstatus: int, failing: list[str], open_: list[str]) -> str:
    if exitstatus != 0:
        return HOLD
    return INCONCLUSIVE if failing or open_ else PROMOTE


def _host_section(state: Any, spec: HostSpec, tests: list[dict[str, Any]], checks: list[dict[str, Any]], run_checks: list[dict[str, Any]], benchmarks: list[dict[str, Any]], entries: list[dict[str, Any]], exitstatus: int) -> dict[str, Any]:
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
    own_ids = {t["nodeid"] for t in own_tests}
    own_checks = [c for c in checks if c.get("host") == spec.display]
    section["tests"] = own_tests
    section["counts"] = _counts(e for e in entries if e["nodeid"] in own_ids)
    section["checks"] = own_checks
    section["benchmarks"] = [b for b in benchmarks if b.get("host") == spec.display]
    failing: list[str] = []
    open_: list[str] = []
    if section["error"]:
        failing.append(f"not read: {section['error']}")
    failed = [t for t in own_tests if t["outcome"] in FAILED_OUTCOMES and not t["inconclusive"]]
    if failed:
        failing.append(f"{len(failed)} test(s) failed")
    for test in own_tests:
        if test["inconclusive"]:
            where = failing if test["outcome"] in FAILED_OUTCOMES else open_
            where.append(f"benchmark {bench_name(test['nodeid'])} inconclusive: {test['inconclusive']}")
    failing += [f"check {c['check']} failed" for c in own_checks if not c.get("passed")]
    for check in run_checks:
        diffs = (check.get("differences") or {}).get(spec.display) if isinstance(check.get("differences"), dict) else None
        if diffs:
            failing.append(f"differs from the fleet in {len(diffs)} field(s) ({check['check']})")
        unread = check.get("unread")
        if isinstance(unread, dict) and spec.display in unread and not section["error"]:
            failing.append(f"not read by {check['check']}")
    refused = list(target.snapshot.refused) if not section["error"] else []
    open_ += refused_reasons(refused + _bench_refused(section["benchmarks"]))
    errors = [f for f in section["findings"] if f["severity"] == "error"]
    if errors:
        open_.append(f"{len(errors)} error-level explain finding(s) ({', '.join(f['id'] for f in errors[:3])}) that no test checks (add --sglang-lint)")
    ran = [t for t in tests if t["host"] == spec.display and t["outcome"] != "skipped"]
    if not ran and not failing and not open_:
        open_.append("nothing was tested on this host (every test was skipped or none ran)")
    section["verdict"] = HOLD if exitstatus != 0 and failing else _verdict(0, failing, open_)
    section["reasons"] = failing + open_
    return section


def build_report(config: pytest.Config, entries: list[dict[str, Any]], collect_errors: list[str], exitstatus: int, collect_skipped: int = 0) -> dict[str, Any]:
    from pytest_sglang import __version__

    state = session_state(config)
    specs = list(state.specs) if state is not None else []
    tests, checks = _tests(entries)
    run_checks = [c for c in checks if c.get("host") is None]
    benchmarks = _benchmarks(entries, tests)
    hosts = [_host_section(state, spec, tests, checks, run_checks, benchmarks, entries, exitstatus) for spec in specs]
    known = {spec.display for spec in specs}
    other_tests = [t for t in tests if t["host"] not in known and not t["check"]]
    failing: list[str] = []
    open_: list[str] = []
    if not specs:
        open_.append("no SGLang host in this run")
    for h in hosts:
        if h["verdict"] == HOLD:
            failing.append(f"{h['host']}: {'; '.join(h['reasons'])}")
        elif h["verdict"] == INCONCLUSIVE:
            open_.append(f"{h['host']}: {'; '.join(h['reasons'])}")
    failing += [f"check {c['check']} failed" for c in run_checks if not c.get("passed")]
    failed_other = [t for t in other_tests if t["outcome"] in FAILED_OUTCOMES and not t["inconclusive"]]
    if failed_other:
        failing.append(f"{len(failed_other)} test(s) without an SGLang host failed")
    for test in other_tests:
        if test["inconclusive"]:
            (failing if test["outcome"] in FAILED_OUTCOMES else open_).append(f"{bench_name(test['nodeid'])} inconclusive: {test['inconclusive']}")
    open_ += refused_reasons(_bench_refused(b for b in benchmarks if b.get("host") not in known))
    if collect_errors:
        failing.append(f"{len(collect_errors)} collection error(s)")
    if exitstatus != 0 and (exitstatus != 1 or not failing):
        failing.append(f"pytest exited with status {exitstatus} ({EXIT_MEANING.get(exitstatus, 'not 0')})")
    document = {
        "format": REPORT_FORMAT,
        "tool": {"name": "pytest-sglang", "version": __version__},
        "created_at": datetime.now(timezone.utc).isoformat(),
        "exit_status": exitstatus,
        "verdict": _verdict(exitstatus, failing, open_),
        "reasons": failing + open_,
        "counts": _counts(entries, len(collect_errors), collect_skipped),
        "hosts": hosts,
        "run_checks": run_checks,
        "tests_without_host": other_tests,
        "collection_errors": collect_errors,
    }
    return scrub_object(_finite(_json_value(document)))


def _finite(document: dict[str, Any]) -> dict[str, Any]:
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
