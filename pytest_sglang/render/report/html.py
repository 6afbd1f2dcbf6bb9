"""The HTML report: one self-contained page from the JSON report document alone.

``--sglang-report-html FILE`` writes it at the end of a run, and ``pytest-sglang report
RUN.json --html FILE`` writes the same page later from the JSON report (the page reads nothing
but the document, never a target). The page needs no network: its style, its script and its
charts (inline SVG, drawn with the ``report`` extra; tables without it) are in the file, and
its Content-Security-Policy forbids every request and every script but its own. It reads
top-down: the verdict and why, each host's verdict, the benchmarks as charts, the fleet (hosts
by the fields where they differ), then per host the explain findings, the baseline diff grouped
by cause, the checks, the failing tests, the effective configuration (filterable), and the GPU
and version facts. It is readable with JavaScript off (the script only adds the filter, the
legend's highlight and opens every section for printing) and printable.

Every outside text (host names, model paths, launch commands, messages) is written through
:func:`pytest_sglang.render.report.escape.html_text`, the page's one escaping function; the charts
carry none (see :mod:`pytest_sglang.render.report.charts`).
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any, Iterable, Mapping, Sequence, Union

from pytest_sglang.base.text import number, value_text
from pytest_sglang.judge.gate.models import CheckRecord, HostSection, RunReport
from pytest_sglang.render.report import charts as chart_module
from pytest_sglang.render.report.document import (
    FAILED_OUTCOMES,
    HOLD,
    INCONCLUSIVE,
    PROMOTE,
    FieldDifference,
    baseline_changes,
    baseline_diffs,
    causes_and_counts,
    report_of,
    short_name,
    summary_line,
    verdict_lead,
)
from pytest_sglang.render.report.escape import html_text as _t
from pytest_sglang.render.report.fleet import FLEET_CHECK, field_section, fleet_view, host_labels
from pytest_sglang.render.report.series import FAIL, Group, figure, host_groups, level_state, server_figure
from pytest_sglang.render.report.text import shorten

VERDICT_WORD = {PROMOTE: "PROMOTE", HOLD: "HOLD", INCONCLUSIVE: "INCONCLUSIVE"}
REASONS_SHOWN = 6  # reasons in the headline; the rest one click away
FACT_ROWS = (
    ("SGLang", "sglang_version"),
    ("model", "model"),
    ("architecture", "architecture"),
    ("GPU", "gpu"),
    ("compute capability", "sm"),
    ("tensor parallel", "tp_size"),
    ("read from", "origin"),
    ("where", "where"),
    ("collected at", "collected_at"),
    ("launch command known", "launch_command_known"),
)
# A table cell: markup, or (markup, the cell's class).
Cell = Union[str, tuple[str, str]]

STYLE = """
:root{--fg:#1c1c1c;--muted:#5c5c5c;--line:#dedede;--soft:#f5f5f5;--hold:#b91c1c;--hold-bg:#fdecec;--inc:#92400e;--inc-bg:#fff4dc;--ok:#166534;--ok-bg:#e7f6ec;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg)}
body{margin:0;background:#fff}
main{max-width:1280px;margin:0 auto;padding:0 20px 40px}
h1{font-size:24px;margin:0 0 6px}h2{font-size:19px;margin:28px 0 8px;padding-top:8px;border-top:1px solid var(--line)}h3{font-size:16px;margin:18px 0 6px}h4{font-size:14px;margin:12px 0 4px}
a{color:#1d4ed8}code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.verdict{padding:16px 20px;margin:0 -20px 12px;border-bottom:3px solid}
.verdict.hold{background:var(--hold-bg);border-color:var(--hold)}.verdict.inconclusive{background:var(--inc-bg);border-color:var(--inc)}.verdict.promote{background:var(--ok-bg);border-color:var(--ok)}
.verdict .word{letter-spacing:.02em}.verdict p{margin:4px 0}.reasons{margin:4px 0 0;padding-left:22px}.reasons li{margin:2px 0;overflow-wrap:anywhere}
.meta{color:var(--muted);font-size:12.5px}
nav{position:sticky;top:0;background:#fff;border-bottom:1px solid var(--line);padding:6px 0;margin-bottom:8px;z-index:2;font-size:13px;overflow-x:auto;white-space:nowrap}
nav a{margin-right:14px;text-decoration:none}nav a.to::before{content:"";display:inline-block;width:8px;height:8px;border-radius:50%;margin-right:4px;background:var(--muted)}nav a.hold::before{background:var(--hold)}nav a.inconclusive::before{background:#d97706}nav a.promote::before{background:var(--ok)}
.badge{display:inline-block;padding:0 7px;border-radius:10px;font-size:12px;font-weight:600;white-space:nowrap}
.badge.hold,.badge.fail,.badge.failed,.badge.error{background:var(--hold-bg);color:var(--hold)}.badge.inconclusive,.badge.warning{background:var(--inc-bg);color:var(--inc)}.badge.promote,.badge.pass,.badge.passed{background:var(--ok-bg);color:var(--ok)}.badge.info,.badge.skipped{background:var(--soft);color:var(--muted)}
table{border-collapse:collapse;width:100%;margin:6px 0 10px;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:var(--soft);font-weight:600;position:sticky;top:33px;overflow-wrap:normal}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.changed td{background:#fffbea}td.differs{background:#fde8e8;font-weight:600}
.scroll{overflow-x:auto}.scroll th{position:static}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:12px}
figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:8px;break-inside:avoid}
figcaption{font-weight:600;font-size:13px;margin-bottom:4px}
svg.plot{width:100%;height:auto;display:block}
.legend{list-style:none;padding:0;margin:6px 0;display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12.5px}
.legend button{font:inherit;background:none;border:0;padding:1px 2px;cursor:pointer;color:inherit;text-align:left}
.legend button[aria-pressed=true]{outline:2px solid #888;border-radius:3px}
.swatch{display:inline-block;width:18px;height:4px;vertical-align:middle;margin-right:5px;border-radius:2px}
.key{display:inline-block;width:18px;height:0;vertical-align:middle;margin-right:5px;border-top:2px solid #444}
.key.dashed{border-top-style:dashed}.key.dotted{border-top:2px dotted #666}
.ring{display:inline-block;width:10px;height:10px;border-radius:50%;vertical-align:middle;margin-right:5px;border:2.5px solid #d62728}.ring.inconclusive{border:2px dashed #b45309}
.bandkey{display:inline-block;width:18px;height:10px;vertical-align:middle;margin-right:5px;background:#1f77b4;opacity:.25}
.bench[data-focus] svg [data-series]:not(.focus){opacity:.12}
.filter{margin:6px 0;display:flex;gap:14px;align-items:center;flex-wrap:wrap;font-size:13px}
.filter input[type=search]{font:inherit;padding:3px 6px;min-width:260px;border:1px solid #bbb;border-radius:4px}
.filter output{color:var(--muted)}.filter[hidden]{display:none}
.change{border-left:4px solid var(--line);padding:2px 10px;margin:8px 0}.change.failing{border-color:var(--hold)}
.note{color:var(--muted)}.empty{color:var(--muted);font-style:italic}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:6px 0}dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}
details>summary{cursor:pointer;color:#1d4ed8;margin:4px 0}
.host,section{scroll-margin-top:40px}
.counts{margin:6px 0 0;padding-left:22px;color:var(--muted);font-size:12.5px}
table.fit{width:auto;min-width:100%}table.fit td,table.fit th{overflow-wrap:normal}
.word,td.host{white-space:nowrap}td.cause{min-width:28em}td.knob{min-width:20em}
table.fleet td{white-space:nowrap}table.fleet th{vertical-align:bottom}table.fleet th .mono{display:inline-block}
table.fleet th.section{border-bottom:0;padding-bottom:0;font-weight:400;color:var(--muted)}
table.fleet .host{position:sticky;left:0;z-index:1;background:#fff;box-shadow:inset -1px 0 var(--line)}table.fleet th.host{background:var(--soft)}
.hostlabel{font-weight:600;white-space:nowrap}
.hostkey{list-style:none;padding:0;margin:4px 0 8px;display:flex;flex-wrap:wrap;gap:2px 16px;font-size:12.5px}.hostkey .mono{color:var(--muted)}
footer{margin-top:30px;color:var(--muted);font-size:12.5px}
@media print{
:root{font-size:11px}nav,.filter{display:none}.legend button{outline:0}
th{position:static}.verdict{margin:0 0 8px}main{max-width:none;padding:0}
details::details-content{content-visibility:visible;display:block}details>summary{display:none}
tr,figure,.change{break-inside:avoid}.charts{grid-template-columns:1fr 1fr}a{color:inherit;text-decoration:none}
}
"""

SCRIPT = """
(function(){
  for (const box of document.querySelectorAll('.filter[data-table]')) {
    const table = document.getElementById(box.dataset.table);
    if (!table || !table.tBodies.length) continue;
    const rows = Array.from(table.tBodies[0].rows);
    const text = box.querySelector('input[type=search]');
    const changed = box.querySelector('input[type=checkbox]');
    const count = box.querySelector('output');
    const apply = function(){
      const words = text.value.trim().toLowerCase().split(/\\s+/).filter(Boolean);
      let shown = 0;
      for (const row of rows) {
        const content = row.textContent.toLowerCase();
        const keep = words.every(function(w){ return content.includes(w); }) && (!changed.checked || row.classList.contains('changed'));
        row.hidden = !keep;
        if (keep) shown++;
      }
      count.value = shown + ' of ' + rows.length + ' values';
    };
    text.addEventListener('input', apply);
    changed.addEventListener('change', apply);
    box.hidden = false;
    apply();
  }
  for (const button of document.querySelectorAll('.legend button[data-series]')) {
    button.addEventListener('click', function(){
      const bench = button.closest('.bench');
      const n = button.dataset.series;
      const on = bench.dataset.focus !== n;
      if (on) bench.dataset.focus = n; else delete bench.dataset.focus;
      for (const el of bench.querySelectorAll('svg [data-series]')) el.classList.toggle('focus', on && el.dataset.series === n);
      for (const b of bench.querySelectorAll('.legend button[data-series]')) b.setAttribute('aria-pressed', String(on && b.dataset.series === n));
    });
  }
  window.addEventListener('beforeprint', function(){ for (const d of document.querySelectorAll('details')) d.open = true; });
})();
"""


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def _swatch_style() -> str:
    swatches = "".join(f".c{i}{{background:{c}}}" for i, c in enumerate(chart_module.PALETTE))
    return swatches + "".join(f".w{n}{{min-width:{n}ch}}" for n in range(1, WIDEST + 1))


# ---- small pieces ------------------------------------------------------------------------------


def _value(value: Any) -> str:
    """A JSON value as the configuration shows it: strings as they are, numbers by the one
    number formatter, the rest as JSON."""
    return value_text(value)


def _badge(word: Any, kind: Any = None) -> str:
    kind_text = str(kind if kind is not None else word)
    return f'<span class="badge {_t(kind_text)}">{_t(word)}</span>'


def _verdict_badge(verdict: str) -> str:
    return f'<span class="badge {_t(verdict)}">{_t(verdict)}</span>'


def _list(items: Iterable[str], cls: str = "") -> str:
    rows = "".join(f"<li>{item}</li>" for item in items)
    return f'<ul class="{cls}">{rows}</ul>' if rows else ""


def _table(
    head: list[str] | str,
    rows: Sequence[Sequence[Cell]],
    *,
    table_id: str | None = None,
    row_classes: list[str] | None = None,
    numeric: set[int] | frozenset[int] = frozenset(),
    table_class: str = "",
) -> str:
    """A table of cells already escaped (or markup made here); a cell given as ``(markup,
    class)`` gets that class. ``head``: the column names, or the head's rows as markup."""
    ident = f' id="{table_id}"' if table_id else ""
    ident += f' class="{table_class}"' if table_class else ""
    th = head if isinstance(head, str) else "<tr>" + "".join(f'<th{" class=num" if i in numeric else ""}>{h}</th>' for i, h in enumerate(head)) + "</tr>"
    body = []
    for n, row in enumerate(rows):
        cls = row_classes[n] if row_classes and row_classes[n] else ""
        cells = []
        for i, cell in enumerate(row):
            markup, cell_class = cell if isinstance(cell, tuple) else (cell, "num" if i in numeric else "")
            attribute = f' class="{cell_class}"' if cell_class else ""
            cells.append(f"<td{attribute}>{markup}</td>")
        body.append(f'<tr{f" class={cls}" if cls else ""}>{"".join(cells)}</tr>')
    return f"<table{ident}><thead>{th}</thead><tbody>{''.join(body)}</tbody></table>"


def _num(value: Any, unit: str | None = None) -> str:
    return number(float(value), unit) if isinstance(value, (int, float)) and not isinstance(value, bool) else "–"


def _host_ids(doc: RunReport) -> dict[str, str]:
    return {h.host: f"host-{i + 1}" for i, h in enumerate(doc.hosts)}


# ---- the verdict and the hosts -----------------------------------------------------------------


def _headline(doc: RunReport) -> str:
    """The answer first: the verdict's causes as a list (one line per failing field, check or
    benchmark level), then the counts in smaller type, as the Markdown summary says them."""
    verdict = doc.verdict
    causes, counts = causes_and_counts(doc)
    listed = causes or counts  # a run with no cause (inconclusive, a collection error) lists its counts
    shown = "".join(f"<li>{_t(r)}</li>" for r in listed[:REASONS_SHOWN])
    more = ""
    if len(listed) > REASONS_SHOWN:
        rest = "".join(f"<li>{_t(r)}</li>" for r in listed[REASONS_SHOWN:])
        more = f"<details><summary>{len(listed) - REASONS_SHOWN} more reason(s)</summary><ol class=reasons start={REASONS_SHOWN + 1}>{rest}</ol></details>"
    tally = "".join(f"<li>{_t(r)}</li>" for r in counts) if causes else ""
    return (
        f'<header id="verdict" class="verdict {_t(verdict)}">'
        f'<h1>SGLang promotion gate: <span class="word">{_t(VERDICT_WORD.get(verdict, verdict))}</span></h1>'
        f"<p><strong>{_t(verdict_lead(doc))}</strong></p>"
        + (f"<ol class=reasons>{shown}</ol>{more}" if shown else "")
        + (f"<ul class=counts>{tally}</ul>" if tally else "")
        + f'<p class="meta">{_t(summary_line(doc.counts))} · pytest exit status {_t(doc.exit_status)} · '
        f'{len(doc.hosts)} host(s) · {_t(doc.created_at)} · {_t(doc.tool.name)} {_t(doc.tool.version)}</p>'
        "</header>"
    )


def _host_link(host: str, ids: dict[str, str], labels: dict[str, str]) -> str:
    """A host's short label, linked to its section, its full spec in the tooltip."""
    return f'<a href="#{ids[host]}" class="hostlabel" title="{_t(host)}">{_t(labels[host])}</a>'


def _host_key(hosts: Sequence[str], labels: dict[str, str]) -> str:
    """The legend of the short labels: each label beside its host's full spec."""
    if all(labels[h] == h for h in hosts):
        return ""
    items = "".join(f'<li><span class="hostlabel">{_t(labels[h])}</span> <span class="mono">{_t(h)}</span></li>' for h in hosts)
    return f'<ul class="hostkey" aria-label="host labels">{items}</ul>'


def _hosts_table(doc: RunReport, ids: dict[str, str], labels: dict[str, str]) -> str:
    hosts = doc.hosts
    if not hosts:
        return '<section id="hosts"><h2>Hosts</h2><p class="empty">No SGLang host in this run.</p></section>'
    rows: list[Sequence[Cell]] = []
    for h in hosts:
        facts = h.facts
        checks = h.checks
        failed = sum(1 for c in checks if not c.passed)
        rows.append(
            [
                (_host_link(h.host, ids, labels), "host"),
                (_verdict_badge(h.verdict), "word"),
                "<br>".join(_t(r) for r in h.reasons) or "—",
                (_t((facts and facts.sglang_version) or "—"), "word"),
                _t((facts and facts.model) or "—"),
                _t((facts and facts.gpu) or "—"),
                _t(summary_line(h.counts)),
                (_t(f"{len(checks) - failed}/{len(checks)} passed" if checks else "—"), "word"),
            ]
        )
    table = _table(["host", "verdict", "why", "SGLang", "model", "GPU", "tests", "checks"], rows, table_class="fit")
    return f'<section id="hosts"><h2>Hosts</h2>{_host_key([h.host for h in hosts], labels)}<div class="scroll">{table}</div></section>'


# ---- benchmarks ---------------------------------------------------------------------------------


def _legend(group: Group) -> str:
    items = [
        f'<li><button type="button" data-series="{run.number}" aria-pressed="false" title="highlight this host on the charts">'
        f'<span class="swatch c{(run.number - 1) % len(chart_module.PALETTE)}"></span>{run.number} {_t(run.host)}</button></li>'
        for run in group.runs
    ]
    if group.bars:
        keys = ['<li><span class="key"></span>bars: p99 / peak running</li>']
    else:
        keys = ['<li><span class="key"></span>p99 / peak running</li>', '<li><span class="key dashed"></span>p50 / peak queue</li>']
    if any(c.rules for c in group.charts):
        keys.append('<li><span class="key dotted"></span>effective max_running_requests</li>')
    if any(c.bands for c in group.charts):
        keys.append('<li><span class="bandkey"></span>benchmark baseline: lowest to highest repeat' + (" (the shaded bar beside)" if group.bars else "") + "</li>")
    what = "result" if group.bars else "level"
    if any(p.state == FAIL for c in group.charts for _, p in c.marks):
        keys.append(f'<li><span class="ring"></span>failed {what}</li>')
    if any(p.state != FAIL for c in group.charts for _, p in c.marks):
        keys.append(f'<li><span class="ring inconclusive"></span>inconclusive {what}</li>')
    return f'<ul class="legend">{"".join(items + keys)}</ul>'


def _bench_table(group: Group) -> str:
    rows = []
    classes = []
    for run in group.runs:
        bench = run.bench
        base_levels = bench.baseline.levels if bench.baseline is not None else {}
        for lv in bench.levels:
            state, reasons = level_state(bench, lv)
            running = _num(server_figure(lv, "peak_running"), "requests")
            cap = server_figure(lv, "max_running_requests")
            running += f" / {_num(cap, 'requests')}" if cap is not None else ""
            base = base_levels.get(lv.name) or {}
            spread = []
            for metric, label, unit in (("output_throughput", "tok/s", "tokens/s"), ("ttft_p99_ms", "p99 TTFT ms", "ms")):
                values = [v for v in base.get(metric) or () if isinstance(v, (int, float))]
                if values:
                    spread.append(f"{label} {_num(min(values), unit)}–{_num(max(values), unit)} ({len(values)})")
            rows.append(
                [
                    f"{run.number} {_t(run.host)}",
                    _t(lv.name),
                    _num(figure(lv, "output_throughput"), "tokens/s"),
                    _num(figure(lv, "ttft_p50"), "ms"),
                    _num(figure(lv, "ttft_p99"), "ms"),
                    _num(figure(lv, "itl_p50"), "ms"),
                    _num(figure(lv, "itl_p99"), "ms"),
                    _t(f"{lv.completed}/{lv.requests}"),
                    _t(running),
                    _num(server_figure(lv, "peak_queue"), "requests"),
                    _t("; ".join(spread) or "—"),
                    _badge(state) + (f' <span class="note">{_t("; ".join(reasons))}</span>' if reasons else ""),
                ]
            )
            classes.append("")
    head = ["host", "level", "output tok/s", "TTFT p50 ms", "TTFT p99 ms", "ITL p50 ms", "ITL p99 ms", "completed", "server running / max", "server queue", "benchmark baseline (min–max, repeats)", "result"]
    return f'<div class="scroll">{_table(head, rows, row_classes=classes, numeric={2, 3, 4, 5, 6, 9})}</div>'


def _benchmarks(doc: RunReport, draw: bool) -> str:
    found = host_groups(doc.hosts)
    if not found:
        return ""
    out = ['<section id="benchmarks"><h2>Benchmarks</h2>']
    if not draw:
        out.append("<p class=note>Charts need the report extra (<code>pip install 'pytest-sglang[report]'</code>); the figures are in the tables.</p>")
    for index, group in enumerate(found, 1):
        out.append(f'<div class="bench" id="bench-{index}" data-benchmark="{_t(group.name)}" data-mode="{_t(group.mode)}" data-hosts="{len(group.runs)}" data-levels="{len(group.levels)}">')
        by = f"at {group.where}, a bar per host" if group.bars else f"by {group.axis}"
        out.append(f"<h3><code>{_t(group.name)}</code> <span class=note>{_t(by)}</span></h3>")
        out.append(_legend(group))
        if draw:
            figures = [f'<figure class="chart" data-chart="{c.id}"><figcaption>{_t(c.title)}</figcaption>{chart_module.chart_svg(group, c)}</figure>' for c in group.charts]
            out.append(f'<div class="charts">{"".join(figures)}</div>')
            out.append(f"<details><summary>the figures as a table</summary>{_bench_table(group)}</details>")
        else:
            out.append(_bench_table(group))
        out.append("</div>")
    out.append("</section>")
    return "".join(out)


# ---- the fleet ------------------------------------------------------------------------------------


WIDEST = 40  # characters: the widest a field name's column is made (the page's policy allows no style attribute, so widths are classes)
VALUE_CHARS = 24  # a value in the fleet and findings tables: longer ones are cut, whole in the tooltip


def _short_value(value: Any, limit: int = VALUE_CHARS) -> str:
    """A value on one line of a narrow column: cut at a word with ``…``, the whole of it in
    the tooltip; an explain finding as its severity and status."""
    if isinstance(value, Mapping) and {"severity", "status"} <= set(value):
        value = f"{value.get('severity')} ({value.get('status')})"
    text = "—" if value is None else _value(value)
    short = shorten(text, limit)
    return _t(short) if short == text else f'<span title="{_t(shorten(text, 400))}">{_t(short)}</span>'


def _field_name(name: str) -> str:
    """A field name in a column head, breakable after ``_`` and ``.`` (between its words),
    its column wide enough that it takes at most two lines."""
    parts = re.findall(r"[^_.]+[_.]?|[_.]", name)
    width = min(max(max(len(p) for p in parts), _two_lines(parts)) + 1, WIDEST)
    return f'<span class="mono w{width}">{"<wbr>".join(_t(p) for p in parts)}</span>'


def _two_lines(parts: list[str]) -> int:
    """The fewest characters a line needs for ``parts`` to fit on two lines."""
    total = sum(len(p) for p in parts)
    return min((max(sum(len(p) for p in parts[:i]), total - sum(len(p) for p in parts[:i])) for i in range(1, len(parts) + 1)), default=total)


def _fleet_head(fields: list[str]) -> str:
    """Two head rows: each section (``effective``, ``server_args``, ``launch.requested``,
    ``findings`` ...) over the names of its fields."""
    sections: list[tuple[str, int]] = []
    for name in fields:
        section = field_section(name)[0]
        if sections and sections[-1][0] == section:
            sections[-1] = (section, sections[-1][1] + 1)
        else:
            sections.append((section, 1))
    top = "".join(f'<th colspan="{n}" class="section"><span class="mono">{_t(section)}</span></th>' for section, n in sections)
    names = "".join(f"<th>{_field_name(field_section(name)[1])}</th>" for name in fields)
    return f'<tr><th class="host"></th>{top}</tr><tr><th class="host">host</th>{names}</tr>'


def _fleet(doc: RunReport, ids: dict[str, str], labels: dict[str, str]) -> str:
    view = fleet_view(doc)
    if view is None:
        return ""
    out = ['<section id="fleet"><h2>Fleet: hosts by the fields where they differ</h2>']
    for check in doc.run_checks:
        if check.check == FLEET_CHECK:
            status = _badge("passed" if check.passed else "failed")
            notes = [_t(n) for n in check.notes]
            out.append(f"<p>Check <code>sglang-fleet</code> {status} {' '.join(f'<span class=note>{n}</span>' for n in notes)}</p>")
    unread = [h.host for h in doc.hosts if h.host not in view.hosts]
    if unread:
        out.append(f"<p class=note>Not read, so not compared: {_t(', '.join(unread))}</p>")
    compared = "their configuration documents" if view.check is not None else "the effective configuration, SGLang version, model and GPU"
    if not view.fields:
        out.append(f"<p>The {len(view.hosts)} hosts read agree on all {view.compared} fields compared ({compared}).</p></section>")
        return "".join(out)
    fleet = f"{_t(labels.get(view.reference, view.reference))}'s" if view.reference else "most hosts'"
    rows: list[Sequence[Cell]] = [[(f'<em title="the fleet\'s configuration: {fleet}">fleet</em>', "host")] + [_short_value(view.fleet.get(f)) for f in view.fields]]
    for host in view.hosts:
        cells: list[Cell] = [(_host_link(host, ids, labels), "host")]
        for name in view.fields:
            value = _short_value(view.values[host].get(name))
            cells.append((value, "differs") if view.differs(host, name) else value)
        rows.append(cells)
    table = _table(_fleet_head(view.fields), rows, table_class="fit fleet")
    out.append(
        f"<p>{len(view.fields)} of {view.compared} fields differ ({compared}); a highlighted value differs from the fleet's configuration ({fleet}).</p>"
        f"<div class=scroll>{table}</div>{_host_key(view.hosts, labels)}</section>"
    )
    return "".join(out)


# ---- one host --------------------------------------------------------------------------------------


def _facts(host: HostSection) -> str:
    facts = host.facts
    if not facts:
        return ""
    rows = "".join(f"<dt>{_t(label)}</dt><dd>{_t(_value(getattr(facts, key)) if getattr(facts, key) is not None else '—')}</dd>" for label, key in FACT_ROWS)
    return f"<h3>GPU and version</h3><p>{_t(facts.describe)}</p><dl class=facts>{rows}</dl>"


def _findings(host: HostSection) -> str:
    findings = host.findings
    out = ["<h3>Explain findings</h3>"]
    if host.explain_error:
        out.append(f"<p class=note>{_t(host.explain_error)}</p>")
    if not findings:
        out.append("<p class=empty>None.</p>")
        return "".join(out)
    order = {"error": 0, "warning": 1, "info": 2}
    rows = []
    for f in sorted(findings, key=lambda f: order.get(f.severity, 3)):
        asked = "not requested" if f.requested is None else f"requested {_short_value(f.requested)}"
        knob = f"{_field_name(f.setting)}: {asked}, in effect {_short_value(f.effective)}"
        if f.predicted is not None and f.predicted != f.effective:
            knob += f", predicted {_short_value(f.predicted)}"
        cause = f'<strong title="{_t(f.summary)}">{_t(f.title)}</strong>'
        rows.append([(_badge(f.severity), "word"), (_t(f.status), "word"), (cause, "cause"), (f"<code>{_t(f.rule)}</code>", "word"), (knob, "knob")])
    out.append(f'<div class="scroll">{_table(["severity", "status", "cause", "rule", "the knobs"], rows, table_class="fit findings")}</div>')
    return "".join(out)


def _baseline_check(check: CheckRecord) -> str:
    """The baseline diff of one host, grouped by cause: one block per change (the fields of one
    setting and what follows from it), its fields under it."""
    diffs = baseline_diffs(check)
    state = check.baseline
    out = [f"<h4>Baseline <span class=mono>{_t(check.path or check.file or '')}</span> {_badge('passed' if check.passed else 'failed')}</h4>"]
    if state in ("missing", "new"):
        out.append(f"<p class=note>{_t(check.message or ('no baseline yet' if state == 'new' else 'no baseline'))}</p>")
    if check.summary:
        out.append(f"<p>{_t(check.summary)}</p>")
    by_group: dict[str, list[FieldDifference]] = {}
    for d in diffs:
        by_group.setdefault(str(d.group or ""), []).append(d)
    shown: set[str] = set()
    for change in baseline_changes(check):
        name = change.name
        members = by_group.get(name) or [d for d in diffs if d.path in (change.fields or ())]
        shown.update(str(d.path) for d in members)
        cause = ""
        if change.finding:
            cause = f"<p>Cause: <code>{_t(change.finding)}</code> {_t(change.finding_summary or '')}</p>"
        follows = f"<p class=note>follows from: {_t(change.follows_from)}</p>" if change.follows_from else ""
        failing = " failing" if change.failing else ""
        out.append(
            f'<div class="change{failing}"><strong>{_t(change.title or change.line or name)}</strong> {_badge(change.status, "fail" if change.failing else "info")}'
            f"{cause}{follows}{_diff_table(members)}</div>"
        )
    rest = [d for d in diffs if str(d.path) not in shown]
    if rest:
        out.append(f"<div class=change><strong>other differences</strong>{_diff_table(rest)}</div>")
    if not diffs and state == "found":
        out.append("<p class=empty>No difference from the baseline.</p>")
    return "".join(out)


def _diff_table(diffs: list[FieldDifference]) -> str:
    rows = []
    for d in diffs:
        sources = "; ".join(f"{side}: {src}" for side, src in (("baseline", d.baseline_source), ("live", d.live_source)) if src)
        status = f'<span class="word">{_t(d.status)}</span>' + (f" <span class=note>{_t(d.note)}</span>" if d.note else "")
        rows.append([f"<code>{_t(d.name)}</code>", _t(_value(d.baseline)), _t(_value(d.live)), status, f"<span class=note>{_t(sources)}</span>"])
    return _table(["field", "baseline", "live", "status", "read from"], rows) if rows else ""


def _checks(host: HostSection) -> str:
    checks = host.checks
    if not checks:
        return ""
    out = ["<h3>Checks</h3>"]
    for check in checks:
        if check.check == "sglang-baseline":
            out.append(_baseline_check(check))
            continue
        out.append(f"<h4><code>{_t(check.check)}</code> {_badge('passed' if check.passed else 'failed')}</h4>")
        out.append(_list((_t(line) for line in check.failures), "mono"))
        out.append(_list((f"<span class=note>{_t(line)}</span>" for line in check.notes)))
    return "".join(out)


def _tests(host: HostSection) -> str:
    tests = host.tests
    out = [f"<h3>Tests <span class=note>{_t(summary_line(host.counts))}</span></h3>"]
    for t in tests:
        if t.outcome not in FAILED_OUTCOMES and not t.inconclusive:
            continue
        kind = "inconclusive" if t.inconclusive else t.outcome
        out.append(f"<h4><code>{_t(short_name(t.nodeid))}</code> {_badge(kind)}</h4><p class=mono>{_t(t.inconclusive or t.message or '')}</p>")
        if t.values_read:
            rows = [
                [f"<code>{_t(r.name)}</code>", _t(r.value), _t(r.requested if r.requested_source is not None else "—"), _t("; ".join([*r.causes, *r.notes])), f"<span class=note>{_t(r.source)}</span>"]
                for r in t.values_read
            ]
            out.append(_table(["value read", "in effect", "requested", "why", "read from"], rows))
    if tests:
        rows = [[f"<code>{_t(short_name(t.nodeid))}</code>", _badge(t.outcome), f"{t.duration:.2f} s", _t(t.message or "")] for t in tests]
        out.append(f"<details><summary>all {len(tests)} test(s)</summary>{_table(['test', 'outcome', 'duration', 'message'], rows, numeric={2})}</details>")
    return "".join(out)


def _effective(host: HostSection, index: int, few_hosts: bool) -> str:
    effective = host.effective
    if not effective:
        return ""
    table_id = f"cfg-{index}"
    rows, classes = [], []
    for name, entry in effective.items():
        asked = entry.requested_source is not None
        changed = asked and entry.requested != entry.value
        requested = _t(_value(entry.requested)) if asked else "<span class=note>—</span>"
        rows.append(
            [
                f"<code>{_t(name)}</code>",
                _t(_value(entry.value)),
                requested,
                _t(entry.source),
                _t(entry.requested_source or ""),
                _t(entry.note or ""),
            ]
        )
        classes.append("changed" if changed else "")
    changed_count = classes.count("changed")
    box = (
        f'<div class="filter" data-table="{table_id}" hidden>'
        f'<input type="search" placeholder="filter: a name, a value, a source…" aria-label="filter the effective configuration of this host">'
        f'<label><input type="checkbox"> only values that differ from what was requested ({changed_count})</label><output></output></div>'
    )
    table = _table(["name", "in effect", "requested", "read from", "requested in", "note"], rows, table_id=table_id, row_classes=classes)
    opened = " open" if few_hosts else ""
    return f"<details{opened}><summary>Effective configuration: {len(rows)} values, {changed_count} differ from what was requested</summary>{box}{table}</details>"


def _host(host: HostSection, index: int, few_hosts: bool, label: str) -> str:
    named = f'<span class="hostlabel">{_t(label)}</span> ' if label != host.host else ""
    out = [f'<section class="host" id="host-{index}"><h2>{named}{_t(host.host)} {_verdict_badge(host.verdict)}</h2>']
    if host.reasons:
        out.append(f"<ol class=reasons>{''.join(f'<li>{_t(r)}</li>' for r in host.reasons)}</ol>")
    if host.error:
        out.append(f"<p><strong>Not read:</strong> <span class=mono>{_t(host.error)}</span></p>")
    for warning in host.warnings:
        out.append(f"<p class=note>warning: {_t(warning)}</p>")
    out.append(_findings(host) if host.facts else "")
    out.append(_checks(host))
    out.append(_tests(host))
    if host.facts:
        out.append("<h3>Effective configuration</h3>")
        out.append(_effective(host, index, few_hosts))
        out.append(_facts(host))
    out.append("</section>")
    return "".join(out)


def _other(doc: RunReport) -> str:
    out = []
    failing = [t for t in doc.tests_without_host if t.outcome in FAILED_OUTCOMES]
    if failing:
        rows = [[f"<code>{_t(short_name(t.nodeid))}</code>", _badge(t.outcome), _t(t.message or "")] for t in failing]
        out.append("<h2>Failing tests without an SGLang host</h2>" + _table(["test", "outcome", "message"], rows))
    errors = doc.collection_errors
    if errors:
        out.append("<h2>Collection errors</h2>" + _list(f"<code>{_t(e)}</code>" for e in errors))
    return "".join(out)


def _nav(doc: RunReport, has_bench: bool, has_fleet: bool, labels: dict[str, str]) -> str:
    links = ['<a href="#verdict">verdict</a>', '<a href="#hosts">hosts</a>']
    if has_bench:
        links.append('<a href="#benchmarks">benchmarks</a>')
    if has_fleet:
        links.append('<a href="#fleet">fleet</a>')
    for i, h in enumerate(doc.hosts, 1):
        links.append(f'<a href="#host-{i}" class="to {_t(h.verdict)}" title="{_t(h.host)}">{_t(labels[h.host])}</a>')
    return f"<nav>{''.join(links)}</nav>"


def render(document: RunReport | Mapping[str, Any], *, charts: bool | None = None) -> str:
    """The page for a run's report (a :class:`RunReport` or its JSON document). ``charts``:
    draw the benchmark charts (default: when the ``report`` extra is installed); without them
    the figures are tables."""
    doc = report_of(document)
    draw = chart_module.available() if charts is None else charts
    ids = _host_ids(doc)
    hosts = doc.hosts
    labels = host_labels([h.host for h in hosts])
    benchmarks = _benchmarks(doc, draw)
    fleet = _fleet(doc, ids, labels)
    style = STYLE + _swatch_style()
    policy = f"default-src 'none'; style-src '{_hash(style)}'; script-src '{_hash(SCRIPT)}'; img-src 'none'; base-uri 'none'; form-action 'none'"
    verdict = doc.verdict
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>SGLang promotion gate: {_t(VERDICT_WORD.get(verdict, verdict))}</title>",
        f"<style>{style}</style></head><body><main>",
        _headline(doc),
        _nav(doc, bool(benchmarks), bool(fleet), labels),
        _hosts_table(doc, ids, labels),
        benchmarks,
        fleet,
        *(_host(h, i, len(hosts) <= 4, labels[h.host]) for i, h in enumerate(hosts, 1)),
        _other(doc),
        f'<footer>{_t(summary_line(doc.counts))} · written by pytest-sglang from the JSON report of {_t(doc.created_at)}</footer>',
        f"</main><script>{SCRIPT}</script></body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"
