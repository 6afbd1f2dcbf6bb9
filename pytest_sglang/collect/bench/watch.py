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

from pytest_sglang.model.bench import INF_BOUND, ServerLoad
from pytest_sglang.model.numbers import refusal, validate_refusing

_SAMPLE = re.compile(r"^(sglang:(?:num_running_reqs|num_queue_reqs|token_usage))(\{[^}]*\})?\s+(\S+)", re.M)
_OTHER_RANK = re.compile(r'\b(?:tp_rank|pp_rank)="(?!0")')
_TTFT_BUCKET = re.compile(r'^sglang:time_to_first_token_seconds_bucket\{([^}]*)\}\s+(\S+)', re.M)
_LE = re.compile(r'\ble="([^"]+)"')
_WHOLE = re.compile(r"[+-]?\d+")


def _number(text: str) -> object:
    """A sample's value as the server wrote it: a whole number exactly (``1`` followed by 400
    zeros is that number, not infinity), else a float, else the text itself (refused by name)."""
    try:
        return int(text) if _WHOLE.fullmatch(text) else float(text)
    except ValueError:  # not a number, or more digits than Python converts
        return text


def read_load(text: str, refused: list[str] | None = None) -> dict[str, float]:
    """Running and queued requests and token usage from Prometheus text, summed over the
    data-parallel ranks (each tensor/pipeline group counted once, by its rank 0). A sample
    that is no figure (``NaN``, ``+Inf``, ``-1``, ``1e308``: all valid Prometheus text) is
    left out and named in ``refused``."""
    out: dict[str, float] = {}
    for name, labels, value in _SAMPLE.findall(text):
        if labels and _OTHER_RANK.search(labels):
            continue
        number = _number(value)
        fault = refusal(f"/metrics {name}", number, minimum=0)
        if fault is not None:
            if refused is not None:
                refused.append(fault)
            continue
        assert isinstance(number, (int, float))
        key = name.split(":", 1)[1]
        out[key] = max(out.get(key, 0.0), float(number)) if key == "token_usage" else out.get(key, 0.0) + float(number)
    return out


def read_ttft_buckets(text: str, refused: list[str] | None = None) -> dict[float, float]:
    """The server's time-to-first-token histogram: cumulative count per upper bound (seconds),
    summed over label sets (one per tokenizer manager). A bucket whose bound (other than
    ``+Inf``) or count is no figure is left out and named in ``refused``."""
    out: dict[float, float] = {}
    name = "/metrics sglang:time_to_first_token_seconds_bucket"
    for labels, value in _TTFT_BUCKET.findall(text):
        le = _LE.search(labels)
        if le is None:
            continue
        bound, count = _number(le[1]), _number(value)
        fault = None if bound == math.inf else refusal(f'{name} le="{le[1]}"', bound, minimum=0)
        fault = fault or refusal(f'{name}{{le="{le[1]}"}}', count, minimum=0)
        if fault is not None:
            if refused is not None:
                refused.append(fault)
            continue
        assert isinstance(bound, (int, float)) and isinstance(count, (int, float))
        out[float(bound)] = out.get(float(bound), 0.0) + float(count)
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
        # Figures the server answered that are none (NaN, an infinity, out of range): once one
        # is, none of the server's figures of the level is used.
        self.refused: list[str] = []
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
                refused: list[str] = []
                sample = read_load(text, refused)
                buckets = read_ttft_buckets(text, refused)
                if refused:
                    self.refused = list(dict.fromkeys(refused))
                    self.problem = f"{self.refused[0]}: the server's /metrics figures of this level are not used"
                    return
                if not sample:
                    self.problem = "/metrics has no sglang:num_running_reqs"
                    return
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
        if not self.samples or self.refused:
            return ServerLoad(note=self.problem or "no /metrics sample was taken", max_running_requests=max_running)
        running = [s.get("num_running_reqs", 0.0) for s in self.samples]
        peak = max(running)
        load, refused = validate_refusing(
            ServerLoad,
            {
                "samples": len(self.samples),
                "peak_running": peak,
                "peak_queue": max(s.get("num_queue_reqs", 0.0) for s in self.samples),
                "peak_token_usage": max(s.get("token_usage", 0.0) for s in self.samples),
                "mean_running": sum(running) / len(running),
                "max_running_requests": max_running,
                "reached_max_running": (peak >= max_running) if max_running else None,
                "ttft_histogram": ttft_histogram(self.ttft_first, self.ttft_last),
                "note": self.problem,
            },
            "/metrics",
        )
        self.refused += refused  # sums over many ranks past 2^53
        return load
