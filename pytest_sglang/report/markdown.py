"""The Markdown summary of a run's report, for a pull request comment: the verdict, one table
row per host, then only what holds the promotion (failing checks, baseline diffs, fleet drift,
error and warning findings, failing tests), each list cut short with a pointer to the JSON."""

from __future__ import annotations

from typing import Any

from .build import FAILED_OUTCOMES, HOLD, baseline_diffs

LIMIT = 8  # lines per list: the comment stays readable without scrolling
MARK = {"promote": "✅ promote", "hold": "❌ hold"}


def _cell(value: Any, limit: int = 60) -> str:
    text = "—" if value is None or value == "" else str(value)
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _host(value: Any, limit: int = 48) -> str:
    """A host spec, cut at the front when long: its end (the file or port) tells hosts apart."""
    text = _cell(value, 10_000)
    return text if len(text) <= limit else "…" + text[-(limit - 1):]


def _code(value: Any, limit: int = 40) -> str:
    import json

    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    text = " ".join(text.split()).replace("`", "'")
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return f"`{text}`"


def _capped(lines: list[str], what: str) -> list[str]:
    if len(lines) <= LIMIT:
        return lines
    return lines[:LIMIT] + [f"- … and {len(lines) - LIMIT} more {what} (see the JSON report)"]


def _tests_cell(counts: dict[str, int]) -> str:
    parts = [f"{counts[k]} {k}" for k in ("passed", "failed", "error", "skipped") if counts.get(k)]
    return ", ".join(parts) or "none"


def _checks_cell(checks: list[dict[str, Any]]) -> str:
    if not checks:
        return "—"
    failed = sum(1 for c in checks if not c.get("passed"))
    return f"{len(checks) - failed}/{len(checks)} passed"


def _number(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, (int, float)) else "–"


def render(doc: dict[str, Any]) -> str:
    verdict = doc["verdict"]
    lines = [f"## SGLang promotion gate: {'❌ HOLD' if verdict == HOLD else '✅ PROMOTE'}", ""]
    held = [h for h in doc["hosts"] if h["verdict"] == HOLD]
    other = [r for r in doc["reasons"] if not any(r.startswith(f"{h['host']}: ") for h in held)]
    why = ([f"{len(held)} of {len(doc['hosts'])} host(s) on hold"] if held else []) + [_cell(r, 120) for r in other]
    if why:
        lines += [f"Held because: {'; '.join(why[:4])}" + (" …" if len(why) > 4 else ""), ""]
    hosts = doc["hosts"]
    if hosts:
        lines += ["| host | verdict | why | SGLang | model | GPU | tests | checks |", "|---|---|---|---|---|---|---|---|"]
        for h in hosts:
            facts = h.get("facts") or {}
            lines.append(
                f"| {_host(h['host'])} | {MARK.get(h['verdict'], h['verdict'])} | {_cell('; '.join(h.get('reasons') or []), 70)} | {_cell(facts.get('sglang_version'))} | {_cell(facts.get('model'), 40)} "
                f"| {_cell(facts.get('gpu'), 40)} | {_tests_cell(h['counts'])} | {_checks_cell(h['checks'])} |"
            )
        lines.append("")
    unread = [f"- **{_host(h['host'])}**: {_cell(h['error'], 200)}" for h in hosts if h.get("error")]
    if unread:
        lines += ["### Hosts not read", *_capped(unread, "hosts"), ""]

    checks = [c for h in hosts for c in h["checks"]] + list(doc.get("run_checks", []))
    failing = []
    for c in checks:
        if c.get("passed"):
            continue
        where = f"[{_host(c['host'])}]" if c.get("host") else ""
        first = (c.get("failures") or ["failed"])[0]
        more = len(c.get("failures") or []) - 1
        failing.append(f"- **{_cell(c['check'])}{where}**: {_cell(first, 140)}" + (f" (+{more} more)" if more > 0 else ""))
    if failing:
        lines += ["### Failing checks", *_capped(failing, "failing checks"), ""]

    diffs = []
    for c in checks:
        for d in baseline_diffs(c):
            if d.get("failing") is False:
                continue
            field = d.get("path") or d.get("field") or "?"
            explained = f" — explained by `{_cell(d['finding'], 50)}`" if d.get("finding") else ""
            diffs.append(f"| {_host(c.get('host'))} | `{_cell(field, 50)}` | {_code(d.get('baseline'))} | {_code(d.get('live'))} | {_cell(d.get('status'), 20)}{explained} |")
    if diffs:
        diff_table = ["| host | field | baseline | live | status |", "|---|---|---|---|---|"]
        shown = diffs[:LIMIT] + ([f"| … | {len(diffs) - LIMIT} more (see the JSON report) | | | |"] if len(diffs) > LIMIT else [])
        lines += ["### Baseline diffs", *diff_table, *shown, ""]

    drift = []
    for c in doc.get("run_checks", []):
        for host, host_diffs in (c.get("differences") or {}).items():
            fields = ", ".join(f"`{d['field']}`" for d in host_diffs[:5]) + (f" and {len(host_diffs) - 5} more" if len(host_diffs) > 5 else "")
            drift.append(f"- **{_host(host)}** differs from the fleet in {len(host_diffs)} field(s): {fields}")
    if drift:
        lines += ["### Fleet drift", *_capped(drift, "hosts"), ""]

    findings = []
    for h in hosts:
        for f in h["findings"]:
            if f["severity"] in ("error", "warning"):
                findings.append(f"- {_host(h['host'])}: **{f['severity'].upper()}** `{f['id']}` {_cell(f['title'], 110)}")
    findings.sort(key=lambda line: "**WARNING**" in line)  # errors first
    if findings:
        lines += ["### Findings (errors and warnings)", *_capped(findings, "findings"), ""]

    bench_rows = []
    for h in hosts:
        for b in h.get("benchmarks") or ():
            name = b["test"].rsplit("::", 1)[-1]
            for lv in b.get("levels") or ():
                validity = lv.get("validity") or {}
                server = lv.get("server") or {}
                peak = server.get("peak_running")
                cap = server.get("max_running_requests")
                running = f"{peak:g}" if isinstance(peak, (int, float)) else "–"
                running += f" / {cap}" if cap is not None else ""
                state = "inconclusive" if validity.get("verdict") == "inconclusive" else b.get("outcome", "")
                bench_rows.append(
                    f"| {_host(h['host'])} | `{_cell(name, 50)}` | {_cell(lv['name'], 30)} | {_number(lv.get('output_throughput'))} | {_number((lv.get('ttft') or {}).get('p99'))} "
                    f"| {_number((lv.get('itl') or {}).get('p99'))} | {lv.get('completed', 0)}/{lv.get('requests', 0)} | {running} | {_cell(state, 20)} |"
                )
    if bench_rows:
        table = ["| host | benchmark | level | output tok/s | p99 TTFT ms | p99 ITL ms | completed | server running / max | result |", "|---|---|---|---|---|---|---|---|---|"]
        lines += ["### Benchmarks", *table, *_capped(bench_rows, "benchmark levels"), ""]

    tests = [t for h in hosts for t in h["tests"]] + list(doc.get("tests_without_host", []))
    broken = [f"- `{_cell(t['nodeid'].rsplit('::', 1)[-1], 120)}` {t['outcome']}: {_cell(t.get('message'), 120)}" for t in tests if t["outcome"] in FAILED_OUTCOMES]
    if broken:
        lines += ["### Failing tests", *_capped(broken, "failing tests"), ""]

    counts = doc["counts"]
    lines.append(f"<sub>{_tests_cell(counts)} · pytest exit status {doc['exit_status']} · pytest-sglang {doc['tool']['version']}</sub>")
    return "\n".join(lines) + "\n"
