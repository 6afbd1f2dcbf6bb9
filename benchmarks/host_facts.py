"""Host facts over SSH: round trips, bytes moved, time (goals: at most 3 round trips over one
connection; under 1 MB moved to extract the current run's start-up lines from a 1 GB log).

    python benchmarks/host_facts.py [--log-mb 1024]

Starts the project's test host (a real sshd on loopback, the real journalctl; see
tests/testhost.py), writes a log file holding two older runs and the current run followed by
request lines up to the given size, and collects every host fact through the plugin.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from testhost import missing_requirements, start_test_host  # noqa: E402

from pytest_sglang.collect.host import HostOptions, collect_host  # noqa: E402
from pytest_sglang.collect.shell.ssh import SSHShell  # noqa: E402
from pytest_sglang.parse.logs import LogSource  # noqa: E402


class CountingShell(SSHShell):
    """Counts what crosses the connection: the bytes of every command's output."""

    moved = 0

    def run(self, script, *, timeout):  # type: ignore[no-untyped-def]
        result = super().run(script, timeout=timeout)
        self.moved += len(script.encode()) + len(result.stdout.encode()) + len(result.stderr.encode())
        return result


def write_big_log(path: Path, runs: list[dict], size_mb: int) -> int:
    """Older runs, then the current run's start-up, then request lines up to size_mb."""
    target = size_mb * 1024 * 1024
    with path.open("w") as out:
        for run in runs[:-1]:
            out.writelines(line + "\n" for line in run["lines"])
        current = [line + "\n" for line in runs[-1]["lines"]]
        startup = [line for line in current if "Decode batch" not in line and "Prefill batch" not in line]
        out.writelines(startup)
        request = next(line for line in current if "Decode batch" in line)
        block = request * 4096
        written = out.tell()
        while written < target:
            out.write(block)
            written += len(block)
    return path.stat().st_size


def measure(shell: CountingShell, options: HostOptions) -> tuple[float, int, int, int]:
    shell.moved, trips = 0, shell.round_trips
    start = time.perf_counter()
    facts = collect_host(shell, options, where=shell.name)
    return time.perf_counter() - start, shell.round_trips - trips, shell.moved, len(facts.log_lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log-mb", type=int, default=1024)
    opts = parser.parse_args()
    if missing_requirements():
        print("needs: " + ", ".join(missing_requirements()), file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        host = start_test_host(Path(tmp) / "host")
        try:
            log = Path(tmp) / "sglang.log"
            size = write_big_log(log, host.runs, opts.log_mb)
            shell = CountingShell(f"{host.user}@{host.host}:{host.port}", key_filename=str(host.client_key), known_hosts=str(host.known_hosts))
            start = time.perf_counter()
            shell.connect()
            print(f"SSH connect (one connection for everything below): {time.perf_counter() - start:.3f} s")
            cases = [
                ("GPUs + process + launch command, no logs", HostOptions(unit=host.unit)),
                (f"... + journald:{host.unit} (current invocation)", HostOptions(unit=host.unit, logs=LogSource.parse(f"journald:{host.unit}"))),
                (f"... + file: log of {size / 2**20:.0f} MiB", HostOptions(unit=host.unit, logs=LogSource.parse(f"file:{log}"))),
            ]
            print(f"{'what':<52} {'round trips':>11} {'bytes moved':>12} {'lines':>6} {'seconds':>8}")
            for name, options in cases:
                seconds, trips, moved, lines = measure(shell, options)
                print(f"{name:<52} {trips:>11} {moved:>12,} {lines:>6} {seconds:>8.2f}")
            shell.close()
        finally:
            host.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
