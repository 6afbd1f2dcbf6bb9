"""The server's own account of a benchmark level: ``/metrics`` polled while the level runs.

Queue depth, running requests and token usage (and, from the server's TTFT histogram, how long
requests waited for their first token) do not depend on the client's timing, so a verdict built
on them holds however busy the client's machine was.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable

from pytest_sglang.model.bench import ServerLoad

_SAMPLE = re.compile(r"^(sglang:(?:num_running_reqs|num_queue_reqs|token_usage))(\{[^}]*\})?\s+(\S+)", re.M)
_OTHER_RANK = re.compile(r'\b(?:tp_rank|pp_rank)="(?!0")')
INF_BOUND = 1e308  # the +Inf bucket's bound, finite so that JSON keeps it
_TTFT_BUCKET = re.compile(r'^sglang:time_to_first_token_seconds_bucket\{([^}]*)\}\s+(\S+)', re.M)
_LE = re.compile(r'\ble="([^"]+)"')


def read_load(text: str) -> dict[str, float]:
    """Running and queued requests and token usage from Prometheus text, summed over the
    data-parallel ranks (each tensor/pipeline group counted once, by its rank 0)."""
    out: dict[str, float] = {}
    for name, labels, value in _SAMPLE.findall(text):
        if labels and _OTHER_RANK.search(labels):
            continue
        try:
            number = float(value)
        except ValueError:
            continue
        key = name.split(":", 1)[1]
        out[key] = max(out.get(key, 0.0), number) if key == "token_usage" else out.get(key, 0.0) + number
    return out


def read_ttft_buckets(text: str) -> dict[float, float]:
    """The server's time-to-first-token histogram: cumulative count per upper bound (seconds),
    summed over label sets (one per tokenizer manager)."""
    out: dict[float, float] = {}
    for labels, value in _TTFT_BUCKET.findall(text):
        le = _LE.search(labels)
        if le is None:
            continue
        try:
            bound, count = float(le[1]), float(value)
        except ValueError:
            continue
        if count == count and count >= 0:  # NaN and negatives are not counts
            out[bound] = out.get(bound, 0.0) + count
    return out


def ttft_histogram(before: dict[float, float], after: dict[float, float]) -> list[tuple[float, float]]:
    """The observations between two readings of the histogram: (upper bound in ms, cumulative
    count), ascending, the last bound infinite (in JSON: the bound ``1e308``); empty when the
    readings do not fit together (a restart, other bounds)."""
    if not after or math.inf not in after or set(before) - set(after):
        return []
    out: list[tuple[float, float]] = []
    last = 0.0
    for bound in sorted(after):
        count = after[bound] - before.get(bound, 0.0)
        if count < last - 1e-9:  # cumulative counts never fall: the readings do not fit
            return []
        last = count
        out.append((min(bound * 1000.0, INF_BOUND), count))
    return out


class _MetricsWatch:
    """Polls /metrics while a level runs. In one client process it is a task of the client's
    own loop (a thread would take the interpreter lock from the loop at random moments); with
    several client processes the parent, which measures nothing, runs it."""

    def __init__(self, url: str, headers: dict[str, str], interval: float) -> None:
        self.url, self.headers, self.interval = url, headers, interval
        self.samples: list[dict[str, float]] = []
        self.problem: str | None = None
        # The TTFT histogram at the first and the last reading (the last taken after the level).
        self.ttft_first: dict[float, float] = {}
        self.ttft_last: dict[float, float] = {}

    async def run(self, stopped: Callable[[], bool]) -> None:
        from pytest_sglang.collect.bench.wire import WireClient, WireError

        client = WireClient(self.url, self.headers)
        try:
            while True:
                last = stopped()  # one more reading once the level is over: its histograms whole
                try:
                    answer = await client.request("GET", "/metrics", timeout=2.0)
                except (WireError, asyncio.TimeoutError) as exc:
                    self.problem = f"/metrics could not be read: {exc or type(exc).__name__}"
                    return
                if answer.status != 200:
                    self.problem = f"/metrics answered HTTP {answer.status} (start the server with --enable-metrics)"
                    return
                text = answer.body().decode("utf-8", "replace")
                sample = read_load(text)
                if not sample:
                    self.problem = "/metrics has no sglang:num_running_reqs"
                    return
                buckets = read_ttft_buckets(text)
                if not self.samples:
                    self.ttft_first = buckets
                self.ttft_last = buckets
                if last:
                    return
                self.samples.append(sample)
                waited = 0.0
                while waited < self.interval and not stopped():
                    await asyncio.sleep(0.05)
                    waited += 0.05
        finally:
            client.close()

    def summary(self, max_running: int | None) -> ServerLoad:
        if not self.samples:
            return ServerLoad(note=self.problem or "no /metrics sample was taken", max_running_requests=max_running)
        running = [s.get("num_running_reqs", 0.0) for s in self.samples]
        peak = max(running)
        return ServerLoad(
            samples=len(self.samples),
            peak_running=peak,
            peak_queue=max(s.get("num_queue_reqs", 0.0) for s in self.samples),
            peak_token_usage=max(s.get("token_usage", 0.0) for s in self.samples),
            mean_running=sum(running) / len(running),
            max_running_requests=max_running,
            reached_max_running=(peak >= max_running) if max_running else None,
            ttft_histogram=ttft_histogram(self.ttft_first, self.ttft_last),
            note=self.problem,
        )
