"""The server's own account of a benchmark level: ``/metrics`` polled while the level runs.

Queue depth, running requests and token usage (and, from the server's TTFT histogram, how long
requests waited for their first token) do not depend on the client's timing, so a verdict built
on them holds however busy the client's machine was.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

from .model import ServerLoad

_SAMPLE = re.compile(r"^(sglang:(?:num_running_reqs|num_queue_reqs|token_usage))(\{[^}]*\})?\s+(\S+)", re.M)
_OTHER_RANK = re.compile(r'\b(?:tp_rank|pp_rank)="(?!0")')


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


class _MetricsWatch:
    """Polls /metrics while a level runs. In one client process it is a task of the client's
    own loop (a thread would take the interpreter lock from the loop at random moments); with
    several client processes the parent, which measures nothing, runs it."""

    def __init__(self, url: str, headers: dict[str, str], interval: float) -> None:
        self.url, self.headers, self.interval = url, headers, interval
        self.samples: list[dict[str, float]] = []
        self.problem: str | None = None

    async def run(self, stopped: Callable[[], bool]) -> None:
        from .wire import WireClient, WireError

        client = WireClient(self.url, self.headers)
        try:
            while not stopped():
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
            note=self.problem,
        )
