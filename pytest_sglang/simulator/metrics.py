"""/metrics in Prometheus text: the families a serving benchmark and its reports read, with
the names, types and label sets of a real SGLang server (scheduler-side families carry the
parallel ranks, tokenizer-side ones only the model and engine, HTTP ones the route)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from pytest_sglang.simulator.engine import Histogram, LoadSnapshot
from pytest_sglang.simulator.profile import Profile

Sample = tuple[str, dict[str, str], float]


@dataclass
class HttpCounts:
    """Requests per (route, method): in progress and since start, as SGLang's HTTP middleware
    counts them. Thread-safe, as the threaded server serves requests concurrently."""

    active: dict[tuple[str, str], int] = field(default_factory=dict)
    total: dict[tuple[str, str], int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def started(self, key: tuple[str, str]) -> None:
        with self._lock:
            self.active[key] = self.active.get(key, 0) + 1
            self.total[key] = self.total.get(key, 0) + 1

    def ended(self, key: tuple[str, str]) -> None:
        with self._lock:
            self.active[key] -= 1

    def copy(self) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
        with self._lock:
            return dict(self.active), dict(self.total)


def _number(value: float) -> str:
    return "+Inf" if value == float("inf") else repr(float(value))


def _labels(labels: dict[str, str]) -> str:
    def escape(v: str) -> str:
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return "{" + ",".join(f'{k}="{escape(v)}"' for k, v in labels.items()) + "}"


def _histogram_samples(name: str, labels: dict[str, str], h: Histogram) -> Iterator[Sample]:
    for bound, count in zip((*h.bounds, float("inf")), h.cumulative()):
        yield f"{name}_bucket", {**labels, "le": _number(bound)}, count
    yield f"{name}_count", labels, h.count
    yield f"{name}_sum", labels, h.sum


def metrics_text(profile: Profile, snap: LoadSnapshot, http: HttpCounts | None = None) -> str:
    served = profile.model.served_model_name or profile.model.model_path
    scheduler = {"model_name": served, "engine_type": "unified", "tp_rank": "0", "pp_rank": "0", "moe_ep_rank": "0"}
    tokenizer = {"model_name": served, "engine_type": "unified"}
    capacity = profile.runtime.max_total_num_tokens
    lines: list[str] = []

    def family(name: str, kind: str, help_text: str, samples: Sequence[Sample] | Iterator[Sample]) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(f"{sample}{_labels(labels)} {_number(value)}" for sample, labels, value in samples)

    def gauge(name: str, help_text: str, value: float) -> None:
        family(name, "gauge", help_text, [(name, scheduler, value)])

    def counter(name: str, help_text: str, value: float) -> None:
        # prometheus_client names a counter family after its sample, so the TYPE line says _total too.
        family(f"{name}_total", "counter", help_text, [(f"{name}_total", tokenizer, value)])

    def histogram(name: str, help_text: str, h: Histogram, labels: dict[str, str]) -> None:
        family(name, "histogram", help_text, _histogram_samples(name, labels, h))

    gauge("sglang:num_running_reqs", "The number of running requests.", snap.running)
    gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", snap.waiting)
    gauge("sglang:num_used_tokens", "The number of used tokens.", snap.used_tokens)
    gauge("sglang:gen_throughput", "The generation throughput (token/s).", snap.throughput)
    gauge("sglang:token_usage", "The token usage.", snap.used_tokens / capacity if capacity else 0.0)
    gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", 0.0)  # no prefix cache is simulated
    gauge("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", capacity)
    gauge("sglang:context_len", "Maximum context length.", profile.model.context_len)
    gauge("sglang:page_size", "KV cache page size in tokens.", int(profile.server_args.get("page_size") or 1))
    totals = snap.totals
    counter("sglang:prompt_tokens", "Number of prefill tokens processed.", totals.prompt_tokens)
    counter("sglang:generation_tokens", "Number of generation tokens processed.", totals.generation_tokens)
    counter("sglang:num_requests", "Number of requests processed.", totals.requests)
    h = totals.histograms
    histogram("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", h["ttft"], tokenizer)
    histogram("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", h["itl"], tokenizer)
    histogram(
        "sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", h["e2e"], tokenizer
    )
    histogram(
        "sglang:request_time_per_output_token_seconds",
        "Histogram of time per output token in seconds.",
        h["tpot"],
        tokenizer,
    )
    histogram("sglang:queue_time_seconds", "Histogram of queueing time in seconds.", h["queue"], scheduler)
    if http is not None:
        _http_families(family, http)
    return "\n".join(lines) + "\n"


def _http_families(family: Callable[[str, str, str, list[Sample]], None], http: HttpCounts) -> None:
    active, total = http.copy()

    def samples(name: str, counts: dict[tuple[str, str], int]) -> list[Sample]:
        return [(name, {"endpoint": path, "method": method}, n) for (path, method), n in sorted(counts.items())]

    family(
        "sglang:http_requests_active",
        "gauge",
        "Number of currently active HTTP requests",
        samples("sglang:http_requests_active", active),
    )
    family(
        "sglang:http_requests_total",
        "counter",
        "Total number of HTTP requests by endpoint and method",
        samples("sglang:http_requests_total", total),
    )
