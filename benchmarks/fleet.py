"""Reading a fleet: how long opening N hosts takes, in parallel (one thread per host, as
``--sglang-fleet`` and the run header do) and one after the other (goal: 32 hosts take not
much longer than 4).

    python benchmarks/fleet.py [--sizes 4,32] [--repeat 3]

Two kinds of simulated host:

- ``sim://`` specs, as a run uses them: every host is a server of one shared simulator
  process (pytest_sglang/simulator/many.py), started with the first host. "cold" starts that process
  in every run, as a test session does once; "warm" finds it already running. (Before, each
  host was a Python process of its own: 32 interpreter starts, about 0.2 s of CPU each.);
- in-process simulators (one listening thread per host in this process), read over HTTP on
  loopback as ``http://127.0.0.1:PORT`` targets: what reading a fleet of already running
  servers costs, which is what a fleet of real replicas looks like to the plugin;
- the same with a network round trip added to every request (``--rtt-ms``, default 50, a
  sleep in the client before each request): replicas in another data centre, where reading
  waits on the network and one thread per host overlaps the waits.

Every host gets its own profile file (a copy of the baseline deployment), so the specs differ.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from pytest_sglang.base.errors import SGLangError
from pytest_sglang.collect.http import HttpClient
from pytest_sglang.judge.fleet import documents, drift, open_targets
from pytest_sglang.simulator.launcher import shutdown_shared_simulator
from pytest_sglang.simulator.profile import load_profile
from pytest_sglang.simulator.server import SimServer
from pytest_sglang.target.spec import parse_spec
from pytest_sglang.target.target import Target, open_target

PROFILE = "qwen35-122b-a10b-4xrtx6000-baseline"


def profile_files(folder: Path, count: int) -> list[Path]:
    import pytest_sglang.simulator

    source = Path(pytest_sglang.simulator.__file__).parent / "profiles" / f"{PROFILE}.json"
    out = []
    for i in range(count):
        path = folder / f"replica-{i:02d}.json"
        if not path.exists():
            shutil.copyfile(source, path)
        out.append(path)
    return out


def timed(fn: Callable[[], Any], repeat: int, before: Callable[[], None] | None = None) -> tuple[float, Any]:
    """The median time of ``fn`` over ``repeat`` runs (``before`` runs untimed before each)."""
    times, result = [], None
    for _ in range(repeat):
        if before is not None:
            before()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
        if isinstance(result, dict):
            close(result)
    return statistics.median(times), result


def close(opened: dict[str, Any]) -> None:
    for found in opened.values():
        if isinstance(found, Target):
            found.close()


def check_all_read(opened: dict[str, Any], count: int) -> None:
    errors = [str(v) for v in opened.values() if isinstance(v, SGLangError)]
    if errors or len(opened) != count:
        raise SystemExit(f"not every host was read: {errors[:1]}")


@contextmanager
def added_rtt(seconds: float) -> Iterator[None]:
    """Every HTTP request of the plugin waits ``seconds`` first, as on a distant network."""
    original = HttpClient.request

    def slow(self: HttpClient, *args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return original(self, *args, **kwargs)

    HttpClient.request = slow  # type: ignore[method-assign]
    try:
        yield
    finally:
        HttpClient.request = original  # type: ignore[method-assign]


def serial(specs: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for spec in specs:
        try:
            out[spec.display] = open_target(spec)
        except SGLangError as exc:
            out[spec.display] = exc
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4,32", help="fleet sizes, comma-separated (default 4,32)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the median is shown (default 3)")
    parser.add_argument("--rtt-ms", type=float, default=50.0, help="round trip added to each request of the last kind (default 50)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{os.cpu_count()} CPU(s); median of {args.repeat} run(s); profile {PROFILE}")
    print(f"{'hosts':>5}  {'kind':<34} {'parallel':>9} {'serial':>9} {'per host (parallel)':>20}")
    with tempfile.TemporaryDirectory() as tmp:
        files = profile_files(Path(tmp), max(sizes))
        # The cold runs of every size take turns (4, 32, 4, 32, ...): the machine's speed drifts
        # over a run (a 2-core VM's does by a third), and sizes measured one after the other
        # would compare different machines.
        cold_runs: dict[int, list[float]] = {n: [] for n in sizes}
        for _ in range(args.repeat):
            for n in sizes:
                specs = [parse_spec(f"sim://{path}") for path in files[:n]]
                par, opened = timed(lambda: open_targets(specs), 1, before=shutdown_shared_simulator)
                check_all_read(opened, n)
                cold_runs[n].append(par)
        cold = {n: statistics.median(runs) for n, runs in cold_runs.items()}
        for n in sizes:
            # 1. sim:// specs: servers of one shared simulator process, started in each run (cold)
            # or already running (warm)
            specs = [parse_spec(f"sim://{path}") for path in files[:n]]
            par = cold[n]
            ser, _ = timed(lambda: serial(specs), 1 if n > 8 else args.repeat, before=shutdown_shared_simulator)
            print(f"{n:>5}  {'sim:// (shared process, cold)':<34} {par:>8.2f}s {ser:>8.2f}s {par / n * 1000:>18.0f}ms")
            par, opened = timed(lambda: open_targets(specs), args.repeat)
            check_all_read(opened, n)
            ser, _ = timed(lambda: serial(specs), 1 if n > 8 else args.repeat)
            print(f"{n:>5}  {'sim:// (shared process, warm)':<34} {par:>8.2f}s {ser:>8.2f}s {par / n * 1000:>18.0f}ms")
            # 2. in-process simulated servers, read over loopback HTTP
            servers = [SimServer(load_profile(str(path))).start() for path in files[:n]]
            try:
                http_specs = [parse_spec(server.url) for server in servers]
                par, opened = timed(lambda: open_targets(http_specs), args.repeat)
                check_all_read(opened, n)
                ser, _ = timed(lambda: serial(http_specs), args.repeat)
                print(f"{n:>5}  {'running servers (loopback HTTP)':<34} {par:>8.2f}s {ser:>8.2f}s {par / n * 1000:>18.0f}ms")
                with added_rtt(args.rtt_ms / 1000):
                    par, opened = timed(lambda: open_targets(http_specs), args.repeat)
                    check_all_read(opened, n)
                    ser, _ = timed(lambda: serial(http_specs), 1)
                kind = f"running servers, {args.rtt_ms:g} ms round trip"
                print(f"{n:>5}  {kind:<34} {par:>8.2f}s {ser:>8.2f}s {par / n * 1000:>18.0f}ms")
                # and the comparison itself
                opened = open_targets(http_specs)
                start = time.perf_counter()
                result = drift(documents({name: t for name, t in opened.items() if isinstance(t, Target)}))
                cmp_s = time.perf_counter() - start
                close(opened)
                print(f"{n:>5}  {'documents + drift (' + str(result.fields_compared) + ' fields)':<34} {cmp_s:>8.2f}s {'':>9} {'agree' if result.agree else 'DIFFER':>20}")
            finally:
                for server in servers:
                    server.stop()
    small, large = min(cold), max(cold)
    if large > small:
        ratio = cold[large] / cold[small]
        verdict = "met" if ratio < 2 else "missed"
        spread = ", ".join(f"{n} hosts {min(runs):.2f}-{max(runs):.2f}s" for n, runs in cold_runs.items())
        print(f"sim:// cold, parallel: {large} hosts take {ratio:.2f}x the time of {small} (goal: under 2x, {verdict}); runs: {spread}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
