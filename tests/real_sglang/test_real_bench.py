"""The load generator against a real SGLang 0.5.23 server on CPU (tiny Llama; run with --real-sglang).

What the simulator stands in for must hold on the real thing: every request answers with the
token count asked (ignore_eos), the stream gives a first token and gaps between tokens, the
/metrics watch sees the requests running, and every metric family the simulator exports exists
on the real server with the same type (a benchmark gated against the simulator reads nothing
the real server lacks)."""

from __future__ import annotations

import re

import pytest
import requests

from pytest_sglang.collect.bench.load import load_spec, run_load
from pytest_sglang.model.bench import BenchResult
from pytest_sglang.simulator.launcher import start_simulator

INPUT_LEN = 32
OUTPUT_LEN = 8
LONG_OUTPUT_LEN = 192
REQUESTS = 16
LEVELS = [1, 4]
_TYPE = re.compile(r"^# TYPE (\S+) (\S+)$", re.M)


def _families(text: str) -> dict[str, str]:
    """Metric family name -> Prometheus type, from the TYPE lines of an exposition."""
    return dict(_TYPE.findall(text))


def _bench(url: str, route: str) -> BenchResult:
    # A short watch interval: a tiny model on CPU finishes 8 tokens quickly, and the /metrics
    # gauges must be caught while requests run.
    spec = load_spec(route=route, concurrency=LEVELS, requests=REQUESTS, input_len=INPUT_LEN, output_len=OUTPUT_LEN, warmup=2, metrics_interval_s=0.05)
    return run_load(url, spec, max_running=2048)


@pytest.fixture(scope="module")
def long_levels(real_llama):  # type: ignore[no-untyped-def]
    """One level per route whose four requests decode long enough (192 tokens) for the /metrics
    watch to sample them running however busy the machine is: the short levels above can end
    between two polls (a CI run once saw four samples, all 0, at concurrency 4)."""
    spec = {route: load_spec(route=route, concurrency=[4], requests=4, input_len=INPUT_LEN, output_len=LONG_OUTPUT_LEN, warmup=0, metrics_interval_s=0.05)
            for route in ("generate", "chat")}
    return {route: run_load(real_llama.url, spec[route], max_running=2048).level(4) for route in spec}


@pytest.fixture(scope="module")
def benches(real_llama):  # type: ignore[no-untyped-def]
    """Both routes, run once for the module's assertions (the server is shared, so is the load)."""
    return {route: _bench(real_llama.url, route) for route in ("generate", "chat")}


@pytest.mark.parametrize("route", ["generate", "chat"])
def test_every_request_answers_with_the_tokens_asked_and_is_timed(benches, route):
    result: BenchResult = benches[route]
    assert [level.concurrency for level in result.levels] == LEVELS
    for level in result.levels:
        assert (level.requests, level.completed, level.failed) == (REQUESTS, REQUESTS, 0), level.errors
        assert level.output_tokens == REQUESTS * OUTPUT_LEN  # the server's own count, ignore_eos
        if route == "generate":  # token ids: the prompt length is exact whatever the tokenizer
            assert level.input_tokens == REQUESTS * INPUT_LEN
        else:
            assert level.input_tokens > 0
        assert level.ttft.count == REQUESTS and level.ttft.median is not None and level.ttft.median > 0
        # A busy server hands several frames to one packet; they arrive together, so many gaps
        # are truly 0 and the median may be too. The gaps are measured, and some are real.
        assert level.itl.count > 0 and level.itl.max is not None and level.itl.max > 0
        assert level.tpot.count == REQUESTS
        assert level.peak_concurrency == level.concurrency


@pytest.mark.parametrize("route", ["generate", "chat"])
def test_the_metrics_watch_sees_the_requests_running(benches, long_levels, route):
    """SGLang 0.5.23 publishes sglang:num_running_reqs when it logs a prefill batch (the
    requests already running, without the new ones) and every decode_log_interval-th decode
    step, not on every change. The server here logs every decode step (see the real_llama
    fixture). A short level may end between two polls, so on every level the watch must only
    answer and never see more than the level sends; the long level (four requests decoding 192
    tokens each) must be seen running."""
    result: BenchResult = benches[route]
    for level in [*result.levels, long_levels[route]]:
        server = level.server
        assert server is not None and server.note is None, server
        assert server.samples >= 1
        assert server.peak_running is not None and server.peak_running <= level.concurrency, server
        assert server.max_running_requests == 2048 and server.reached_max_running is False
    long = long_levels[route]
    assert (long.completed, long.output_tokens) == (4, 4 * LONG_OUTPUT_LEN), long.errors
    busy = long.server
    assert busy is not None and busy.peak_running is not None and busy.peak_running >= 1, busy


def test_every_metric_family_of_the_simulator_exists_on_the_real_server_with_its_type(real_llama, benches):
    # The simulator's /metrics (its metrics_text), from a running simulator of the same SGLang
    # version, so whatever families it adds are held to the real server as well.
    simulator = start_simulator("qwen35-122b-a10b-4xrtx6000-0.5.23")
    try:
        simulated = _families(requests.get(f"{simulator.url}/metrics", timeout=10).text)
    finally:
        simulator.stop()
    # The real server's after the load, so its histograms and counters have samples.
    assert len(simulated) >= 10
    text = requests.get(f"{real_llama.url}/metrics", timeout=10).text
    real = _families(text)
    missing = sorted(name for name in simulated if name not in real)
    assert missing == []
    differing = {name: (kind, real[name]) for name, kind in simulated.items() if real[name] != kind}
    assert differing == {}
    # Sample names too: a counter's samples end in _total, a histogram's in _bucket/_sum/_count.
    for name, kind in simulated.items():
        sample = f"{name}_bucket" if kind == "histogram" else name
        assert re.search(rf"^{re.escape(sample)}[{{ ]", text, re.M), f"no {sample} sample on the real server"
