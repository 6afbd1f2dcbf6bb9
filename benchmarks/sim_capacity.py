"""Is the simulator fast enough to benchmark against? Figures at 1, 64 and 256 concurrent streams.

    python benchmarks/sim_capacity.py [--server asyncio|threaded] [--levels 1,64,256] [--seconds 4]

It starts ``python -m pytest_sglang.sim`` in its own process with a profile whose running cap
(4096) is above every level, so no request ever queues and the model's times are known: time
to first token = prefill, gap between tokens = one decode step at the level's batch size.
Closed-loop clients (aiohttp) keep N streaming ``/generate`` or ``/v1/chat/completions``
requests in flight; each level reports the server process's CPU use, requests/s, and the
measured against the modelled TTFT and inter-token latency (median and p99). A server that is
not the bottleneck shows small added delays and CPU well below one core.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pytest_sglang.simulator import load_profile  # noqa: E402

PROFILE = "llama31-8b-1xh100-0.5.9"  # running cap 4096: nothing queues at these levels
PROMPT = " ".join(f"word{i}" for i in range(200))  # 200 tokens to the simulator
MAX_NEW_TOKENS = 32
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Level:
    """What the clients saw at one concurrency."""

    streams: int
    ttfts: list[float] = field(default_factory=list)
    itls: list[float] = field(default_factory=list)
    requests: int = 0
    errors: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    client_cpu_seconds: float = 0.0


def start(server: str | None) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "pytest_sglang.sim", "--profile", PROFILE, "--port", "0"]
    if server:
        cmd += ["--server", server]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().rsplit(" ", 1)[-1].strip()


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def request_for(endpoint: str) -> dict[str, object]:
    if endpoint == "/generate":
        return {"text": PROMPT, "sampling_params": {"max_new_tokens": MAX_NEW_TOKENS}, "stream": True}
    return {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": MAX_NEW_TOKENS, "stream": True}


async def one_stream(session: aiohttp.ClientSession, url: str, body: dict[str, object], level: Level) -> None:
    """One request; the arrival time of every output token. Chunks are counted, not parsed:
    a client that decodes JSON at 20,000 chunks a second would be the bottleneck itself."""
    marker = TOKEN_MARKERS[url.rsplit("/", 1)[-1]]
    sent = time.perf_counter()
    arrivals: list[float] = []
    async with session.post(url, json=body) as response:
        response.raise_for_status()
        async for data in response.content.iter_any():
            now = time.perf_counter()
            arrivals.extend([now] * data.count(marker))
    if not arrivals:
        raise RuntimeError("a stream carried no output")
    level.ttfts.append(arrivals[0] - sent)
    level.itls.extend(b - a for a, b in zip(arrivals, arrivals[1:]))
    level.requests += 1


# What marks an output token in a chunk: every /generate event carries one; of the chat
# events only the content deltas do (not the role announcement, the finish or the usage).
TOKEN_MARKERS = {"generate": b'data: {"text"', "completions": b'"content": " tok'}


async def run_level(url: str, endpoint: str, streams: int, seconds: float, pid: int) -> Level:
    level = Level(streams)
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        await one_stream(session, url + endpoint, request_for(endpoint), Level(1))  # warm the path
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            while time.perf_counter() < deadline:
                try:
                    await one_stream(session, url + endpoint, request_for(endpoint), level)
                except (aiohttp.ClientError, RuntimeError):
                    level.errors += 1

        cpu0, client0, t0 = cpu_seconds(pid), cpu_seconds(os.getpid()), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(streams)))
        level.seconds, level.cpu_seconds = time.perf_counter() - t0, cpu_seconds(pid) - cpu0
        level.client_cpu_seconds = cpu_seconds(os.getpid()) - client0
    return level


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(endpoint: str, level: Level) -> str:
    perf = load_profile(PROFILE).performance
    prompt_tokens = len(PROMPT.split())
    ttft_model = perf.prefill_base_ms + prompt_tokens / 1000 * perf.prefill_ms_per_1k_tokens
    itl_model = perf.decode_step_base_ms + perf.decode_step_ms_per_request * level.streams
    ms = [1000 * t for t in level.ttfts]
    itl = [1000 * t for t in level.itls]
    return (
        f"{endpoint:<22} {level.streams:>4} {100 * level.cpu_seconds / level.seconds:>6.0f}% "
        f"{100 * level.client_cpu_seconds / level.seconds:>6.0f}% "
        f"{level.requests / level.seconds:>7.1f} {level.errors:>4}  "
        f"{ttft_model:>6.2f} {statistics.median(ms):>7.2f} {percentile(ms, 0.99):>7.2f}  "
        f"{itl_model:>6.2f} {statistics.median(itl):>7.2f} {percentile(itl, 0.99):>7.2f}"
    )


async def main_async(args: argparse.Namespace) -> None:
    proc, url = start(args.server)
    try:
        print(f"simulator {url} ({args.server or 'default'} server), profile {PROFILE}, "
              f"{len(PROMPT.split())} prompt tokens, {MAX_NEW_TOKENS} output tokens; times in ms")
        print(f"transport floor (GET /health round trip, p50): {await round_trip(url):.2f} ms; "
              f"load average before: {os.getloadavg()[0]:.2f} (above ~0.3, other processes share the CPU)")
        print(f"{'endpoint':<22} {'N':>4} {'server':>7} {'client':>7} {'req/s':>7} {'err':>4}  "
              f"{'TTFT model':>10} {'p50':>5} {'p99':>7}  {'ITL model':>9} {'p50':>5} {'p99':>7}")
        for endpoint in args.endpoints.split(","):
            for streams in (int(n) for n in args.levels.split(",")):
                level = await run_level(url, endpoint, streams, args.seconds, proc.pid)
                print(report(endpoint, level), flush=True)
    finally:
        proc.terminate()
        proc.wait(5)
    print(f"load average after: {os.getloadavg()[0]:.2f}; server and client CPU in % of one core")


async def round_trip(url: str, count: int = 200) -> float:
    """Milliseconds for a request that waits for nothing: what the client, the loopback and
    HTTP parsing cost before the model's time starts."""
    times = []
    async with aiohttp.ClientSession() as session:
        for _ in range(count):
            start = time.perf_counter()
            async with session.get(f"{url}/health") as response:
                await response.read()
            times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", help="the simulator's --server choice (default: its default)")
    parser.add_argument("--levels", default="1,64,256", help="concurrent streams per level")
    parser.add_argument("--endpoints", default="/generate,/v1/chat/completions")
    parser.add_argument("--seconds", type=float, default=4.0, help="duration of each level")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
