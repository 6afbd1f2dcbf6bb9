"""The Markdown summary of a run's report, for a pull request comment: the verdict, one table
row per host, then only what stands in the way of the promotion (failing checks, baseline diffs,
fleet drift, error and warning findings, failing tests with the values they read, inconclusive
benchmarks, with a Mermaid chart of their levels), each list cut short with a pointer to the JSON,
and a link to the HTML report when one is written. Text is cut at a word boundary with ``…``,
never in the middle of a word; the counts are pytest's own.

Outside text (host names, model paths, messages) goes through :func:`~pytest_sglang.render.report.escape.md_text`
(or :func:`~pytest_sglang.render.report.escape.md_code` inside a code span): it shows as written and
never becomes markup or HTML."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from pytest_sglang.base.secrets import scrub
from pytest_sglang.base.text import number, value_text
from pytest_sglang.judge.gate.models import CheckRecord, HostSection, RunReport, ValueRead, differing_fields
from pytest_sglang.render.report.document import FAILED_OUTCOMES, HOLD, INCONCLUSIVE, PROMOTE, baseline_diffs, bench_name, report_of, short_name, summary_line, verdict_lead
from pytest_sglang.render.report.escape import md_code, md_text
from pytest_sglang.render.report.fleet import fleet_view, host_labels
from pytest_sglang.render.report.series import level_state, server_figure
from pytest_sglang.render.report.text import shorten, shorten_front

LIMIT = 8  # lines per list: the comment stays readable without scrolling
HEADLINE = {PROMOTE: "✅ PROMOTE", HOLD: "❌ HOLD", INCONCLUSIVE: "⚠️ INCONCLUSIVE"}
MARK = {PROMOTE: "✅ promote", HOLD: "❌ hold", INCONCLUSIVE: "⚠️ inconclusive"}
LEVEL_MARK = {"pass": "✅ pass", "fail": "❌ fail", "inconclusive": "⚠️ inconclusive"}
TITLE = "## SGLang promotion gate: "
REASONS_SHOWN = 6


def _cell(value: Any, limit: int = 60) -> str:
    """Outside text for running text or a table cell: shortened, then escaped."""
    text = "—" if value is None or value == "" else str(value)
    return md_text(shorten(text, limit))


def _host(value: Any, limit: int = 48) -> str:
    """A host spec, cut at the front when long: its end (the file or port) tells hosts apart."""
    return md_text(shorten_front("—" if value is None else value, limit))


def _code(value: Any, limit: int = 40) -> str:
    """A value in a code span: JSON for anything but a string (numbers by the one number
    formatter), shortened, escaped for the span."""
    text = value_text(value)
    text = shorten(scrub(text).replace("`", "'"), limit)  # scrubbed before a key's backtick changes
    return f"`{md_code(text)}`"


def _name(value: Any, limit: int = 60) -> str:
    """A name (a test, a field, a rule) in a code span, shortened."""
    return f"`{md_code(shorten('—' if value is None else str(value), limit))}`"


def _capped(lines: list[str], what: str) -> list[str]:
    if len(lines) <= LIMIT:
        return lines
    return lines[:LIMIT] + [f"- … and {len(lines) - LIMIT} more {what} (see the JSON report)"]


def _capped_rows(rows: list[str], columns: int, what: str) -> list[str]:
    if len(rows) <= LIMIT:
        return rows
    return rows[:LIMIT] + [f"| … | {len(rows) - LIMIT} more {what} (see the JSON report) |" + " |" * (columns - 2)]


def _checks_cell(checks: Sequence[CheckRecord]) -> str:
    if not checks:
        return "—"
    failed = sum(1 for c in checks if not c.passed)
    return f"{len(checks) - failed}/{len(checks)} passed"


def _number(value: Any, unit: str) -> str:
    return number(float(value), unit) if isinstance(value, (int, float)) and not isinstance(value, bool) else "–"


def render(doc: RunReport | Mapping[str, Any], *, html_link: str | None = None) -> str:
    """The summary of a run's report (a :class:`RunReport` or its JSON document);
    ``html_link``: where the HTML report is (a relative path or a URL), linked under the verdict."""
    report = report_of(doc)
    verdict = report.verdict
    lines = [TITLE + (HEADLINE.get(verdict) or _cell(verdict, 20)), ""]
    hosts = report.hosts
    if verdict in (HOLD, INCONCLUSIVE):
        # The answer first: each cause on its own line (the gate puts them first), then the counts.
        head = verdict_lead(report)  # the HTML page's words
        why = [f"- {_cell(r, 240)}" for r in report.reasons]
        if len(why) > REASONS_SHOWN:
            why = why[:REASONS_SHOWN] + [f"- … and {len(why) - REASONS_SHOWN} more (the JSON report lists them all)"]
        lines += [head.rstrip(": "), "", *why, ""]
    if html_link:
        lines += [f"The whole run as one page (charts, findings, configuration): [{md_text(shorten_front(html_link, 60))}](<{_link_target(html_link)}>)", ""]
    if hosts:
        lines += ["| host | verdict | why | SGLang | model | GPU | tests | checks |", "|---|---|---|---|---|---|---|---|"]
        for h in hosts:
            facts = h.facts
            lines.append(
                f"| {_host(h.host)} | {MARK.get(h.verdict) or _cell(h.verdict, 20)} | {_cell('; '.join(h.reasons), 90)} | {_cell(facts and facts.sglang_version)} | {_cell(facts and facts.model, 40)} "
                f"| {_cell(facts and facts.gpu, 48)} | {_cell(summary_line(h.counts), 120)} | {_checks_cell(h.checks)} |"
            )
        lines.append("")
    unread = [f"- **{_host(h.host)}**: {_cell(h.error, 200)}" for h in hosts if h.error]
    if unread:
        lines += ["### Hosts not read", *_capped(unread, "hosts"), ""]

    checks = [c for h in hosts for c in h.checks] + list(report.run_checks)
    failing = []
    for c in checks:
        if c.passed:
            continue
        where = f"[{_host(c.host)}]" if c.host else ""
        first = (c.failures or ["failed"])[0]
        more = len(c.failures) - 1
        failing.append(f"- **{_cell(c.check)}{where}**: {_cell(first, 160)}" + (f" (+{more} more)" if more > 0 else ""))
    if failing:
        lines += ["### Failing checks", *_capped(failing, "failing checks"), ""]

    diffs = []
    for c in checks:
        for d in baseline_diffs(c):
            if d.failing is False:
                continue
            explained = f" — explained by {_name(d.finding, 50)}" if d.finding else ""
            diffs.append(f"| {_host(c.host)} | {_name(d.name or '?', 60)} | {_code(d.baseline)} | {_code(d.live)} | {_cell(d.status, 20)}{explained} |")
    if diffs:
        lines += ["### Baseline diffs", "| host | field | baseline | live | status |", "|---|---|---|---|---|", *_capped_rows(diffs, 5, "differences"), ""]

    lines += _fleet(report)

    findings = []
    for h in hosts:
        for f in h.findings:
            if f.severity in ("error", "warning"):
                findings.append(f"- {_host(h.host)}: **{_cell(f.severity.upper(), 20)}** {_name(f.id)} {_cell(f.title, 120)}")
    findings.sort(key=lambda line: "**WARNING**" in line)  # errors first
    if findings:
        lines += ["### Findings (errors and warnings)", *_capped(findings, "findings"), ""]

    lines += _benchmarks(hosts)

    tests = [t for h in hosts for t in h.tests] + list(report.tests_without_host)
    unsure = [f"- {_host(t.host)}: {_name(bench_name(t.nodeid), 80)}: {_cell(t.inconclusive, 300)}" for t in tests if t.inconclusive and t.outcome not in FAILED_OUTCOMES]
    if unsure:
        lines += ["### Inconclusive (not measured)", *_capped(unsure, "inconclusive tests"), ""]
    broken = []
    for t in tests:
        if t.outcome not in FAILED_OUTCOMES:
            continue
        broken.append(f"- {_name(short_name(t.nodeid), 120)} {_cell(t.outcome, 20)}: {_cell(t.message, 160)}")
        reads = t.values_read
        broken += [f"  - {_value_read(r)}" for r in reads[:3]]
        if len(reads) > 3:
            broken.append(f"  - … and {len(reads) - 3} more values read (see the JSON report)")
    if broken:
        lines += ["### Failing tests", *_capped_tests(broken), ""]

    lines.append(f"<sub>{_cell(summary_line(report.counts), 200)} · pytest exit status {_cell(report.exit_status, 20)} · pytest-sglang {_cell(report.tool.version, 40)}</sub>")
    return "\n".join(lines) + "\n"


def _fleet(report: RunReport) -> list[str]:
    """The hosts that differ from the fleet's configuration, by their short labels, with the
    count of differing fields every report gives, and the labels' full specs under the table."""
    view = fleet_view(report)
    if view is None or view.check is None or not view.fields:
        return []
    differences = view.check.differences or {}
    labels = host_labels([h.host for h in report.hosts])
    rows = []
    for host in differences:
        fields = differing_fields(differences, host)
        named = ", ".join(_name(f, 80) for f in fields[:5]) + (f" and {len(fields) - 5} more" if len(fields) > 5 else "")
        rows.append(f"| {_cell(labels.get(host, host), 30)} | {len(fields)} | {named} |")
    fleet = f", **{_cell(labels.get(view.reference, view.reference), 30)}**'s" if view.reference else ""
    named_hosts = [h for h in labels if h in differences or h == view.reference][: LIMIT + 1]
    key = " · ".join(f"**{_cell(labels[h], 30)}** {md_text(shorten_front(h, 120))}" for h in named_hosts if labels[h] != h)
    return [
        "### Fleet drift",
        f"{len(view.fields)} of {view.compared} fields differ from the fleet's configuration{fleet}.",
        "",
        "| host | fields | differs in |",
        "|---|---|---|",
        *_capped_rows(rows, 3, "hosts"),
        "",
        *([f"Hosts: {key}", ""] if key else []),
    ]


def _capped_tests(lines: list[str]) -> list[str]:
    """At most LIMIT failing tests, each with its values read."""
    starts = [i for i, line in enumerate(lines) if line.startswith("- ")]
    if len(starts) <= LIMIT:
        return lines
    return lines[: starts[LIMIT]] + [f"- … and {len(starts) - LIMIT} more failing tests (see the JSON report)"]


def _value_read(read: ValueRead) -> str:
    """``effective.max_running_requests`` = `26`, requested `48` (launch command ...): capped by ... [rule]"""
    text = f"{_name(read.name, 60)} = {_code(read.value, 40)}"
    if read.requested_source is not None:
        asked = read.requested
        shown = "nothing" if asked in (None, "nothing") else _code(asked, 40)
        text += f", requested {shown} ({_cell(read.requested_source, 70)})"
    causes = read.causes
    if causes:
        text += ": " + "; ".join(_cell(c, 140) for c in causes[:2])
    return text


def _benchmarks(hosts: Sequence[HostSection]) -> list[str]:
    rows: list[str] = []
    why: list[str] = []
    for h in hosts:
        for b in h.benchmarks:
            name = bench_name(b.test)
            for lv in b.levels:
                peak = server_figure(lv, "peak_running")
                cap = server_figure(lv, "max_running_requests")
                running = _number(peak, "requests")
                running += f" / {_cell(number(cap, 'requests'), 20)}" if cap is not None else ""
                state, reasons = level_state(b, lv)
                rows.append(
                    f"| {_host(h.host)} | {_name(name, 50)} | {_cell(lv.name, 30)} | {_number(lv.output_throughput, 'tokens/s')} | {_number(lv.ttft.p99, 'ms')} "
                    f"| {_number(lv.itl and lv.itl.p99, 'ms')} | {_cell(lv.completed, 20)}/{_cell(lv.requests, 20)} | {running} | {LEVEL_MARK.get(state) or _cell(state, 20)} |"
                )
                if state in ("fail", "inconclusive"):
                    why.append(f"- {_host(h.host)} {_name(name, 50)} {_cell(lv.name, 30)}: {LEVEL_MARK[state]}: {_cell('; '.join(reasons) or '—', 300)}")
    if not rows:
        return []
    table = ["| host | benchmark | level | output tok/s | p99 TTFT ms | p99 ITL ms | completed | server running / max | result |", "|---|---|---|---|---|---|---|---|---|"]
    from pytest_sglang.render.report.mermaid import charts

    return ["### Benchmarks", *table, *_capped_rows(rows, 9, "benchmark levels"), "", *charts(hosts), *_capped(why, "levels that failed or were inconclusive"), *([""] if why else [])]


def _link_target(link: str) -> str:
    """A link destination inside ``<...>``: no angle bracket or line break can end it early."""
    return "".join(f"%{ord(c):02X}" if c in "<>\n\r" or ord(c) < 32 else c for c in scrub(link))
