"""pytest's test reports turned into the report's entries (one per phase of a test: outcome,
pytest's category, duration, host, message, the ``sglang.check`` records of the built-in checks,
the benchmark records, and the values a failing test read), in the controller, from xdist
workers too. The report document and its verdict are the library's
(:mod:`pytest_sglang.judge.gate`): :func:`build_report` hands it the entries and each host.
"""

from __future__ import annotations

import re
from functools import partial
from typing import TYPE_CHECKING, Any

import pytest

from pytest_sglang.base.errors import SGLangError
from pytest_sglang.base.secrets import clip, scrub, scrub_object
from pytest_sglang.base.text import tidy, tidy_numbers
from pytest_sglang.judge.gate.document import REPORT_FORMAT, build_document
from pytest_sglang.judge.gate.summary import read_host, summarize
from pytest_sglang.judge.gate.verdict import EXIT_MEANING
from pytest_sglang.plugin.checks import CHECK_PROPERTY, session_state
from pytest_sglang.plugin.settings import spoken
from pytest_sglang.render.report.text import shorten

if TYPE_CHECKING:
    from pytest_sglang.target.spec import HostSpec

HOST_PROPERTY = "sglang_host"
# The failure section the plugin adds to a failing test (pytest_sglang/plugin/core.py, render.py).
VALUES_SECTION = "SGLang values read by this test"
MESSAGE_LIMIT = 300
PROPERTY_LIMIT = 200  # a JUnit property's value, in characters
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
    return shorten(tidy_numbers(first), MESSAGE_LIMIT)  # pytest writes floats by repr: noise goes


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


def junit_properties(props: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The properties as JUnit XML shows them: each of pytest-sglang's a one-line summary of
    at most :data:`PROPERTY_LIMIT` characters (the JSON report carries the whole record)."""
    return [(name, junit_value(name, value)) if isinstance(name, str) and name.startswith("sglang") else (name, value) for name, value in props]


def junit_value(name: str, value: Any) -> str:
    """A check's or a benchmark's record in a line: what, where, and how it went."""
    from pytest_sglang.plugin.bench import BENCH_PROPERTY

    text: str
    if name == CHECK_PROPERTY and isinstance(value, dict):
        where = f"{value.get('check')}[{value['host']}]" if value.get("host") else str(value.get("check"))
        raw = value.get("failures")
        failures: list[Any] = raw if isinstance(raw, list) else []
        text = f"{where}: passed"
        if failures or value.get("passed") is False:
            text = f"{where}: failed, {len(failures)} failure(s)" + (f"; first: {failures[0]}" if failures else "")
    elif name == BENCH_PROPERTY and isinstance(value, dict):
        levels = [lv for lv in value.get("levels") or () if isinstance(lv, dict)]
        verdicts = ", ".join(f"{lv.get('name')} {lv.get('verdict') or 'not judged'}" for lv in levels)
        text = f"{value.get('target')}: {len(levels)} level(s), {value.get('repeats', 1)} run(s) each: {verdicts}"
    else:
        text = value if isinstance(value, str) else repr(tidy(value))
    return clip(text, PROPERTY_LIMIT)


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
    summary = summarize(target)
    props += [("sglang_version", summary.sglang_version or "unknown"), ("sglang_gpu", summary.gpu or "unknown"), ("sglang_model", summary.model or "unknown")]
    return [(name, scrub(value)) for name, value in props]


def has_hosts(config: pytest.Config) -> bool:
    """Whether this run has SGLang hosts (a verdict to give even with no report asked for)."""
    state = session_state(config)
    return state is not None and bool(state.specs)


def build_report(config: pytest.Config, entries: list[dict[str, Any]], collect_errors: list[str], exitstatus: int, collect_skipped: int = 0) -> dict[str, Any]:
    """The run's report document, judged, from the entries and the session's hosts."""
    state = session_state(config)
    specs = list(state.specs) if state is not None else []
    hosts = [read_host(spec.display, partial(state.target, spec)) for spec in specs]
    for host in hosts:  # the library's warnings name settings; a report of this run names its flags
        host.section["warnings"] = [spoken(warning) for warning in host.section["warnings"]]
    return build_document(entries, hosts, collect_errors, exitstatus, collect_skipped)


__all__ = ["EXIT_MEANING", "REPORT_FORMAT", "build_report", "has_hosts", "host_properties", "junit_properties", "junit_value", "report_entry", "values_read"]
