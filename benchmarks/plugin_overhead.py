"""What the plugin adds to a 100-test suite against an already running simulated host,
and how many HTTP requests it makes (goal: each endpoint once per session; < 0.5 s added).

    python benchmarks/plugin_overhead.py [--tests 100] [--rounds 5]

It starts ``python -m pytest_sglang.sim`` on loopback, then times ``pytest`` on 100 tests that
read the server's configuration through the plugin's fixtures, against the same 100 tests
asserting on constants with the plugin disabled. A counting proxy in front of the simulator
shows how often each path was requested.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests

PROFILE = "qwen35-122b-a10b-4xrtx6000-baseline"


def start_simulator() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_sglang.sim", "--profile", PROFILE, "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, line.rsplit(" ", 1)[-1].strip()


def counting_proxy(upstream: str) -> tuple[ThreadingHTTPServer, collections.Counter[str]]:
    counts: collections.Counter[str] = collections.Counter()
    session = requests.Session()

    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            counts[self.path] += 1
            upstream_response = session.get(upstream + self.path, timeout=10)
            body = upstream_response.content
            self.send_response(upstream_response.status_code)
            self.send_header("Content-Type", upstream_response.headers.get("Content-Type", "application/json"))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, counts


def write_suites(folder: Path, n: int) -> tuple[Path, Path]:
    with_plugin = folder / "with_plugin"
    without = folder / "without_plugin"
    with_plugin.mkdir()
    without.mkdir()
    checks = [
        ("effective", "effective.max_running_requests >= 48"),
        ("server_args", "server_args.tp_size == 4"),
        ("effective", "effective.prefill_cuda_graph is True"),
        ("model_info", "model_info.architectures == ['Qwen3_5MoeForConditionalGeneration']"),
    ]
    plugin_tests, plain_tests = [], []
    for i in range(n):
        fixture, check = checks[i % len(checks)]
        plugin_tests.append(f"def test_{i}({fixture}):\n    assert {check}\n")
        plain_tests.append(f"def test_{i}():\n    assert {i} == {i}\n")
    (with_plugin / "test_suite.py").write_text("\n".join(plugin_tests))
    (without / "test_suite.py").write_text("\n".join(plain_tests))
    return with_plugin, without


def run(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"pytest failed in {cwd}:\n{result.stdout[-2000:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    proc, url = start_simulator()
    proxy, counts = counting_proxy(url)
    proxy_url = f"http://127.0.0.1:{proxy.server_address[1]}"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            with_plugin, without = write_suites(Path(tmp), opts.tests)
            # Requests made by one session, counted at the proxy.
            run(["--sglang-host", proxy_url], with_plugin)
            per_path = dict(sorted(counts.items()))
            times_with, times_without = [], []
            for _ in range(opts.rounds):
                times_without.append(run(["-p", "no:sglang"], without))
                times_with.append(run(["--sglang-host", url], with_plugin))
    finally:
        proxy.shutdown()
        proc.terminate()
        proc.wait(5)
    med_with, med_without = statistics.median(times_with), statistics.median(times_without)
    print(f"suite: {opts.tests} tests, {opts.rounds} rounds, simulator {PROFILE} at {url}")
    print("HTTP requests in one session (via counting proxy):")
    for path, count in per_path.items():
        print(f"  {path:<16} {count}")
    print(f"pytest without plugin (plain tests, -p no:sglang): median {med_without:.3f} s  (runs: {', '.join(f'{t:.3f}' for t in times_without)})")
    print(f"pytest with plugin (fixtures, --sglang-host):      median {med_with:.3f} s  (runs: {', '.join(f'{t:.3f}' for t in times_with)})")
    print(f"added by the plugin: {med_with - med_without:+.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
