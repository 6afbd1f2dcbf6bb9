"""The promotion verdict of a run: PROMOTE, HOLD or INCONCLUSIVE, with its reasons.

HOLD exactly when pytest's exit status is not 0; with exit status 0, INCONCLUSIVE when
something is not known yet (a benchmark that could not be measured, a host where nothing was
tested, an error-level explain finding no test checked), never PROMOTE; otherwise PROMOTE.
Per host likewise: held for what failed on it (only in a run that failed), inconclusive for
what is open on it, else promote. A figure refused where it entered (a server's /metrics or
/server_info answering NaN, an infinity or a number out of range) is open: never promote.

:func:`judge_run` is the one place this is decided: the pytest plugin calls it as the run
ends, and ``pytest-sglang report`` calls it again on a stored report (:func:`rejudge`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pytest_sglang.judge.gate.causes import bench_causes, bench_name, check_causes, failed_test_causes, fleet_causes, shown
from pytest_sglang.judge.gate.models import Benchmark, CheckRecord, Finding, RunReport, TestResult, differing_fields

PROMOTE, HOLD, INCONCLUSIVE = "promote", "hold", "inconclusive"
VERDICTS = (PROMOTE, HOLD, INCONCLUSIVE)
FAILED_OUTCOMES = ("failed", "error")
# pytest's own outcome categories, in the order its summary line names them.
COUNT_KEYS = ("failed", "passed", "skipped", "xfailed", "xpassed", "error")
EXIT_MEANING = {1: "tests failed", 2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests were collected"}
REFUSED_SHOWN = 3
_REFUSED = "figure refused: "
_INCONCLUSIVE_MESSAGE = re.compile(r"inconclusive(?: on (?P<where>.*?))?(?P<after> after \d+ attempts?)?(?::\s|:$|$)(?P<why>.*)", re.I | re.S)


@dataclass(frozen=True)
class HostReading:
    """What the verdict needs of a host itself: whether it could be read, its explain
    findings, and the figures refused where they entered."""

    host: str
    error: str | None = None
    findings: Sequence[Finding] = ()
    refused: Sequence[str] = ()


@dataclass(frozen=True)
class Judgment:
    """A verdict and why it is not promote (empty for promote): ``reasons`` start with the
    ``causes`` (one line per failing field, check or benchmark level), then the counts and
    what is open."""

    verdict: str
    reasons: list[str]
    hosts: dict[str, Judgment] = field(default_factory=dict)
    causes: list[str] = field(default_factory=list)


def short_name(nodeid: str) -> str:
    return nodeid.rsplit("::", 1)[-1]


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


def refused_reasons(faults: list[str]) -> list[str]:
    """The reasons a verdict gives for figures refused where they entered: the first few by
    field and value, then how many more."""
    faults = list(dict.fromkeys(faults))
    out = [f"{_REFUSED}{fault}" for fault in faults[:REFUSED_SHOWN]]
    if len(faults) > REFUSED_SHOWN:
        out.append(f"{len(faults) - REFUSED_SHOWN} more figure(s) refused")
    return out


def bench_refused(benchmarks: Iterable[Benchmark]) -> list[str]:
    """Each refused figure of these benchmarks, with its benchmark and level."""
    return [f"{fault} (benchmark {bench_name(bench.test)}, {level.name})" for bench in benchmarks for level in bench.levels for fault in level.refused or ()]


def _verdict(failing: list[str], open_: list[str]) -> str:
    return INCONCLUSIVE if failing or open_ else PROMOTE


def judge_host(reading: HostReading, tests: Sequence[TestResult], checks: Sequence[CheckRecord], benchmarks: Sequence[Benchmark], exit_status: int) -> Judgment:
    """One host's verdict: ``tests``, ``checks`` and ``benchmarks`` are the whole run's."""
    host = reading.host
    own_tests = [t for t in tests if t.host == host and not t.check]
    failing: list[str] = []
    open_: list[str] = []
    failed = [t for t in own_tests if t.outcome in FAILED_OUTCOMES and not t.inconclusive]
    # The causes: a host that could not be read fails every test for that one reason.
    causes: list[str] = [f"not read: {reading.error}"] if reading.error else []
    for test in [] if reading.error else failed:
        bench = next((b for b in benchmarks if b.host == host and b.test == test.nodeid), None)
        causes += (bench_causes(bench) if bench is not None else []) or failed_test_causes(test)
    for check in checks:
        if check.host == host and not check.passed:
            causes += check_causes(check)
    if failed:
        failing.append(f"{len(failed)} test(s) failed")
    for test in own_tests:
        if test.inconclusive:
            where = failing if test.outcome in FAILED_OUTCOMES else open_
            where.append(f"benchmark {bench_name(test.nodeid)} inconclusive: {test.inconclusive}")
    failing += [f"check {c.check} failed" for c in checks if c.host == host and not c.passed]
    for check in checks:
        if check.host is not None:
            continue
        fields = differing_fields(check.differences or {}, host)
        if fields:
            failing.append(f"differs from the fleet in {len(fields)} field(s) ({check.check})")
        if check.unread is not None and host in check.unread and not reading.error:
            failing.append(f"not read by {check.check}")
    refused = [] if reading.error else list(reading.refused)
    open_ += refused_reasons(refused + bench_refused(b for b in benchmarks if b.host == host))
    errors = [f for f in reading.findings if f.severity == "error"]
    if errors:
        open_.append(f"{len(errors)} error-level explain finding(s) ({', '.join(f.id for f in errors[:3])}) that no test checks (add --sglang-lint)")
    ran = [t for t in tests if t.host == host and t.outcome != "skipped"]
    if not ran and not failing and not causes and not open_:
        open_.append("nothing was tested on this host (every test was skipped or none ran)")
    causes = shown(causes)
    held = causes + failing
    return Judgment(HOLD if exit_status != 0 and held else _verdict(held, open_), held + open_, causes=causes)


def judge_run(hosts: Sequence[HostReading], tests: Sequence[TestResult], checks: Sequence[CheckRecord], benchmarks: Sequence[Benchmark], collection_errors: Sequence[str], exit_status: int, refused: Sequence[str] = ()) -> Judgment:
    """The run's verdict, and each host's (``Judgment.hosts``, by host).

    ``tests`` are every test of the run (built-in check items too, ``check`` true),
    ``checks`` every check record, ``benchmarks`` every benchmark, and ``refused`` the
    figures refused outside any host."""
    judged = {reading.host: judge_host(reading, tests, checks, benchmarks, exit_status) for reading in hosts}
    known = set(judged)
    other_tests = [t for t in tests if t.host not in known and not t.check]
    failing: list[str] = []
    open_: list[str] = []
    if not hosts:
        open_.append("no SGLang host in this run")
    for reading in hosts:
        host = judged[reading.host]
        rest = host.reasons[len(host.causes) :]
        if not rest:
            continue  # its causes say it, with its name (and its verdict counts below)
        if host.verdict == HOLD:
            failing.append(f"{reading.host}: {'; '.join(rest)}")
        elif host.verdict == INCONCLUSIVE:
            open_.append(f"{reading.host}: {'; '.join(rest)}")
    causes = shown(fleet_causes({name: j.causes for name, j in judged.items() if j.verdict != PROMOTE}))
    failing += [f"check {c.check} failed" for c in checks if c.host is None and not c.passed]
    failed_other = [t for t in other_tests if t.outcome in FAILED_OUTCOMES and not t.inconclusive]
    if failed_other:
        failing.append(f"{len(failed_other)} test(s) without an SGLang host failed")
    for test in other_tests:
        if test.inconclusive:
            (failing if test.outcome in FAILED_OUTCOMES else open_).append(f"{bench_name(test.nodeid)} inconclusive: {test.inconclusive}")
    open_ += refused_reasons(list(refused) + bench_refused(b for b in benchmarks if b.host not in known))
    if collection_errors:
        failing.append(f"{len(collection_errors)} collection error(s)")
    if exit_status != 0 and (exit_status != 1 or not failing):
        failing.append(f"pytest exited with status {exit_status} ({EXIT_MEANING.get(exit_status, 'not 0')})")
    not_promoted = [j.verdict for j in judged.values() if j.verdict != PROMOTE]
    return Judgment(HOLD if exit_status != 0 else _verdict(failing + not_promoted, open_), causes + failing + open_, judged, causes)


def _refused_in(reasons: Iterable[str]) -> list[str]:
    """The refused figures a stored report names in its reasons: the snapshot's own are not
    kept elsewhere in the document."""
    return [reason[len(_REFUSED) :] for reason in reasons if reason.startswith(_REFUSED)]


def rejudge(report: RunReport) -> Judgment:
    """The verdict of a stored report, judged again from what it holds, by :func:`judge_run`.

    A report keeps a built-in check as its record, not as a test: a check recorded ran (a
    check item records only when it runs). Figures refused are read back from the reasons
    that named them (beyond the first few, only their count is kept)."""
    checks = [c for h in report.hosts for c in h.checks] + list(report.run_checks)
    ran_checks = [
        TestResult(nodeid=c.nodeid, host=c.host, outcome="passed" if c.passed else "failed", duration=0.0, message=None, check=True, inconclusive=None, values_read=[])
        for c in checks
    ]
    tests = [t for h in report.hosts for t in h.tests] + list(report.tests_without_host) + ran_checks
    hosts = [HostReading(h.host, h.error, h.findings, _refused_in(h.reasons)) for h in report.hosts]
    benchmarks = [b for h in report.hosts for b in h.benchmarks]
    return judge_run(hosts, tests, checks, benchmarks, report.collection_errors, report.exit_status, _refused_in(report.reasons))


def disagreement(report: RunReport, judged: Judgment) -> str | None:
    """One line when a stored report's verdict is not the one its contents give, else None."""
    hosts = [f"{h.host} {h.verdict} judged {judged.hosts[h.host].verdict}" for h in report.hosts if h.host in judged.hosts and judged.hosts[h.host].verdict != h.verdict]
    if report.verdict == judged.verdict and not hosts:
        return None
    why = "; ".join(judged.reasons) or "nothing failed or is open"
    per_host = f" (hosts: {', '.join(hosts)})" if hosts else ""
    return f"the report says {report.verdict}, but its contents judge {judged.verdict}{per_host}: {why}"
