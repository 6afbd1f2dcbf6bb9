"""A benchmark result as text: one table row per level, the client's self-check, the server's view."""

from __future__ import annotations

from typing import Any

from pytest_sglang.model.bench import BenchResult, LevelResult


def progress_line(progress: Any) -> str:
    """A running benchmark's progress (a level's requests done and seconds so far, every few
    seconds and when it finishes), as the plugin and the command line both print it."""
    return f"sglang bench: {progress.line()}"


def _n(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def level_row(level: LevelResult) -> list[str]:
    server = level.server
    running = "-"
    if server is not None and server.peak_running is not None:
        running = f"{server.peak_running:g}" + (f"/{server.max_running_requests}" if server.max_running_requests else "")
    return [
        level.name,
        f"{level.completed}/{level.requests}",
        _n(level.request_throughput, 2),
        _n(level.output_throughput),
        _n(level.ttft.median),
        _n(level.ttft.p99),
        _n(level.itl.median),
        _n(level.itl.p99),
        _n(level.e2e.p99),
        str(level.peak_concurrency),
        running,
        level.validity.verdict,
    ]


HEADER = ["level", "ok/sent", "req/s", "out tok/s", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "E2E p99", "in flight", "server running", "client"]


def render_result(result: BenchResult) -> str:
    rows = [HEADER] + [level_row(level) for level in result.levels]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = [f"{result.target}: {result.route or ''} ({result.source}); latencies in ms"]
    lines += ["  " + "  ".join(cell.rjust(widths[i]) if i else cell.ljust(widths[i]) for i, cell in enumerate(row)) for row in rows]
    for level in result.levels:
        v = level.validity
        lines.append(
            f"  {level.name}: client loop lag p99 {_n(v.loop_lag_p99_ms, 2)} ms, send delay p99 {_n(v.send_delay_p99_ms, 2)} ms, "
            f"CPU {_n((v.client_cpu or 0) * 100, 0)}% of a core in {v.processes} process(es)"
            + (f", sent {_n(v.achieved_rate)} of {_n(v.target_rate)} req/s asked" if v.target_rate else "")
        )
        lines += [f"    inconclusive: {reason}" for reason in v.reasons]
        if level.goodput is not None:
            lines.append(f"    goodput {_n(level.goodput, 2)} req/s ({_n((level.goodput_fraction or 0) * 100, 0)}% of requests met the SLOs)")
        if level.server is not None and level.server.note:
            lines.append(f"    server: {level.server.note}")
        lines += [f"    refused: {fault}" for fault in level.refused]
        lines += [f"    note: {note}" for note in level.notes]
        lines += [f"    error: {error}" for error in level.errors]
    return "\n".join(lines)
