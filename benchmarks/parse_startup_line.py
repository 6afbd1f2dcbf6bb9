"""How long parse_startup_line takes on real start-up lines (goal: < 5 ms for a 14 KB line).

    python benchmarks/parse_startup_line.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from pytest_sglang import parse_startup_line

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


def samples() -> list[tuple[str, str]]:
    out = []
    for path in sorted((DATA / "corpus" / "server_args").glob("*.txt")):
        out.append((f"corpus/server_args/{path.name}", path.read_text(errors="replace").split("\n", 3)[3]))
    log = DATA / "artefacts" / "sglang-0.5.23-cpu" / "server.log"
    line = next(l for l in log.read_text().splitlines() if "server_args=" in l)
    out.append(("artefacts/0.5.23 server.log (dict era)", line))
    return out


def measure(text: str, rounds: int = 200) -> list[float]:
    parse_startup_line(text)  # warm
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        parse_startup_line(text)
        times.append((time.perf_counter() - start) * 1000)
    return times


def main() -> int:
    cases = samples()
    if not cases:
        print(f"no corpus found in {DATA / 'corpus'}", file=sys.stderr)
        return 1
    print(f"{'line':<42} {'size':>8} {'fields':>7} {'median ms':>10} {'p95 ms':>8}")
    for name, text in cases:
        times = sorted(measure(text))
        fields = len(parse_startup_line(text).fields)
        print(f"{name:<42} {len(text):>8} {fields:>7} {statistics.median(times):>10.2f} {times[int(len(times) * 0.95)]:>8.2f}")
    # A damaged line takes the field-by-field path.
    name, text = max(cases, key=lambda c: len(c[1]))
    cut = text[: int(len(text) * 0.9)]
    times = sorted(measure(cut, rounds=50))
    print(f"{'(cut at 90%: ' + name[-28:] + ')':<42} {len(cut):>8} {len(parse_startup_line(cut).fields):>7} {statistics.median(times):>10.2f} {times[int(len(times) * 0.95)]:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
