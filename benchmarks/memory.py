"""Memory per byte of input, and time, for the largest texts pytest-sglang reads: a start-up
line, a server's log and a JSON report (goal: a few bytes of memory per byte, whatever the text
holds).

    python benchmarks/memory.py [--line-mb 20,60] [--log-mb 60] [--report-mb 20,200] [--tracemalloc]

Each input is made up in a temporary folder and read by the command a user runs, in a process
of its own:

- a start-up line: the 0.5.23 line of tests/data/artefacts with ``encoder_urls`` holding a list
  of zeros of the given size, ``pytest-sglang explain --startup-line FILE``;
- a log: ordinary ``Decode batch`` lines of the given size after a real start-up line, the same
  command;
- a report: a valid report (benchmarks/report_html.py's synthetic one) whose ``reasons`` hold an
  array of zeros of the given size, every item a problem, ``pytest-sglang report FILE --md OUT``;
  and a valid report of that size (its hosts repeated), rendered.

Printed per case: the input's size, the process's peak resident memory (max RSS, from
``wait4``), the same command's peak on a tiny input of its kind (the interpreter and the
package), the difference per byte of input, the time and the first line it printed. With
``--tracemalloc`` a second run measures the peak of Python's own allocations, less the tiny
input's, per byte (slower).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
MB = 1_000_000
LOG = ROOT / "tests" / "data" / "artefacts" / "sglang-0.5.23-cpu" / "server.log"
EXPLAIN = ["explain", "--sglang-version", "0.5.23", "--gpu", "H100", "--startup-line"]
DECODE = "[2026-12-02 12:09:10 TP0] Decode batch, #running-req: 1, #token: 17, token usage: 0.00, cuda graph: False, gen throughput (token/s): 9.12, #queue-req: 0\n"
TRACED = """
import sys, tracemalloc
tracemalloc.start()
from pytest_sglang.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stderr.write(f"@@traced {tracemalloc.get_traced_memory()[1]}\\n")
"""


def startup_line() -> str:
    return next(line for line in LOG.read_text().splitlines() if "server_args=" in line)


def repeated(out: Any, piece: str, count: int) -> None:
    """``piece * count`` written a few MB at a time."""
    batch = max(1, 4 * MB // len(piece))
    for done in range(0, count, batch):
        out.write(piece * min(batch, count - done))


def line_file(path: Path, size: int) -> None:
    head, tail = startup_line().split("'encoder_urls': []", 1)
    with path.open("w") as out:
        out.write(head + "'encoder_urls': [")
        repeated(out, "0, ", max(0, (size - len(head) - len(tail)) // 3))
        out.write("0]" + tail + "\n")


def log_file(path: Path, size: int) -> None:
    head = LOG.read_text()
    with path.open("w") as out:
        out.write(head)
        repeated(out, DECODE, max(0, (size - len(head)) // len(DECODE)))


def report_base() -> dict:
    from report_html import synthetic_report

    return synthetic_report(hosts=1, levels=2)


def zeros_report(path: Path, size: int) -> None:
    document = report_base()
    document["reasons"] = ["@@"]
    head, tail = json.dumps(document).split('"@@"')
    with path.open("w") as out:
        out.write(head)
        repeated(out, "0,", max(0, (size - len(head) - len(tail)) // 2 - 1))
        out.write("0" + tail)


def valid_report(path: Path, size: int) -> None:
    document = report_base()
    host = json.dumps(document["hosts"][0])
    document["hosts"] = ["@@"]
    head, tail = json.dumps(document).split('"@@"')
    with path.open("w") as out:
        out.write(head + host)
        repeated(out, "," + host, max(0, (size - len(head)) // (len(host) + 1) - 1))
        out.write(tail)


MAKERS = {"line": line_file, "log": log_file, "report-zeros": zeros_report, "report-valid": valid_report}


def make(folder: Path, kind: str, size: int) -> Path:
    """The input, written by a process of its own: a child's peak memory (max RSS) counts its
    parent's peak at the fork, so the measuring process never holds a large text."""
    path = folder / f"{kind}-{size // MB}mb.{'json' if kind.startswith('report') else 'log'}"
    subprocess.run([sys.executable, __file__, "--make", kind, str(size), str(path)], check=True)
    return path


def run(args: list[str], folder: Path, traced: bool = False) -> tuple[int, float, str, int | None]:
    """(max RSS in bytes, seconds, the first line printed, Python's traced peak in bytes)."""
    command = [sys.executable, "-c", TRACED, *args] if traced else [sys.executable, "-m", "pytest_sglang.cli", *args]
    out, err = folder / "stdout", folder / "stderr"
    started = time.perf_counter()
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen(command, stdout=stdout, stderr=stderr, cwd=folder)
        _, _, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    printed = (err.read_text() + out.read_text()).splitlines()
    peak = next((int(line.split()[1]) for line in printed if line.startswith("@@traced ")), None)
    first = next((line for line in printed if line.strip() and not line.startswith("@@")), "")
    return usage.ru_maxrss * 1024, seconds, first, peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--line-mb", default="20,60", help="start-up line sizes, MB (default 20,60)")
    parser.add_argument("--log-mb", default="60", help="log sizes, MB (default 60)")
    parser.add_argument("--report-mb", default="20,200", help="report sizes, MB (default 20,200)")
    parser.add_argument("--tracemalloc", action="store_true", help="also measure the peak of Python's allocations")
    parser.add_argument("--make", nargs=3, metavar=("KIND", "BYTES", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make:
        kind, size, path = args.make
        MAKERS[kind](Path(path), int(size))
        return 0

    def sizes(text: str) -> list[int]:
        return [int(float(s) * MB) for s in text.split(",") if s.strip()]

    with tempfile.TemporaryDirectory(prefix="pytest-sglang-memory-") as name:
        folder = Path(name)
        tiny_line = folder / "tiny.log"
        tiny_line.write_text(LOG.read_text())
        tiny_report = make(folder, "report-valid", 0)
        cases: list[tuple[str, tuple[str, int], list[str], list[str]]] = []
        for size in sizes(args.line_mb):
            cases.append(("start-up line, a list of zeros", ("line", size), EXPLAIN, [*EXPLAIN, str(tiny_line)]))
        for size in sizes(args.log_mb):
            cases.append(("log, Decode batch lines", ("log", size), EXPLAIN, [*EXPLAIN, str(tiny_line)]))
        for size in sizes(args.report_mb):
            cases.append(("report, reasons an array of zeros", ("report-zeros", size), ["report", "--md", "out.md"], ["report", "--md", "out.md", str(tiny_report)]))
        for size in sizes(args.report_mb)[:1]:
            cases.append(("report, valid (hosts repeated)", ("report-valid", size), ["report", "--md", "out.md"], ["report", "--md", "out.md", str(tiny_report)]))

        baselines: dict[str, tuple[int, int]] = {}
        header = f"{'input':<36} {'MB':>6} {'max RSS MB':>10} {'tiny MB':>8} {'B/B':>6} {'seconds':>8}"
        print(header + (f" {'traced B/B':>10}" if args.tracemalloc else "") + "  printed")
        for label, (kind, wanted), given, tiny in cases:
            key = tiny[-1]
            path = make(folder, kind, wanted)
            command = [*given, str(path)]
            if key not in baselines:
                baselines[key] = (run(tiny, folder)[0], (run(tiny, folder, traced=True)[3] or 0) if args.tracemalloc else 0)
            base_rss, base_traced = baselines[key]
            size = path.stat().st_size
            rss, seconds, first, _ = run(command, folder)
            row = f"{label:<36} {size / MB:>6.0f} {rss / MB:>10.0f} {base_rss / MB:>8.0f} {(rss - base_rss) / size:>6.1f} {seconds:>8.1f}"
            if args.tracemalloc:
                peak = run(command, folder, traced=True)[3]
                row += f" {(peak - base_traced) / size if peak else float('nan'):>10.1f}"
            print(f"{row}  {first.replace(str(folder) + '/', '')[:90]}", flush=True)
            path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
