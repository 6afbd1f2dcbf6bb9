"""The simulator under benchmark load: its running cap shows in /metrics, its timing stays
the model's, its metrics are the real server's, and both of its servers speak the same HTTP."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
import requests
from test_sim_fidelity import REAL

from pytest_sglang.simulator import load_profile
from pytest_sglang.simulator.server import SimServer

BASELINE = "qwen35-122b-a10b-4xrtx6000-baseline"  # effective cap 48
CANDIDATE = "qwen35-122b-a10b-4xrtx6000-candidate"  # effective cap 26
QWEN_0523 = "qwen35-122b-a10b-4xrtx6000-0.5.23"
LLAMA_059 = "llama31-8b-1xh100-0.5.9"  # cap 4096, no metrics
SERVERS = ("asyncio", "threaded")


@pytest.fixture
def served(request: pytest.FixtureRequest) -> Iterator[SimServer]:
    name, kind = request.param
    with SimServer(load_profile(name), server=kind) as server:
        yield server


def _samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """The samples of one metric in Prometheus text, with their labels."""
    found = []
    for line in text.splitlines():
        match = re.fullmatch(rf"{re.escape(name)}\{{(.*)\}} (\S+)", line)
        if match:
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(1)))
            found.append((labels, float(match.group(2))))
    return found


def _value(text: str, name: str) -> float:
    (_, value), *_ = _samples(text, name)
    return value


async def _streams(url: str, count: int, max_new_tokens: int, watch: str | None = None) -> dict[str, Any]:
    """``count`` concurrent streaming /generate requests; while they run, /metrics is read
    every few milliseconds and the peaks of the gauges named in ``watch`` are kept."""
    body = {"text": "how many run at once", "sampling_params": {"max_new_tokens": max_new_tokens}, "stream": True}
    peaks: dict[str, float] = {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one() -> int:
            async with session.post(f"{url}/generate", json=body) as response:
                assert response.status == 200
                events = [line async for line in response.content if line.startswith(b"data: ")]
            assert events[-1] == b"data: [DONE]\n"
            return len(events) - 1

        async def watch_metrics(done: asyncio.Event) -> None:
            while not done.is_set():
                async with session.get(f"{url}/metrics") as response:
                    text = await response.text()
                for name in (watch or "").split(","):
                    peaks[name] = max(peaks.get(name, 0.0), _value(text, name))
                await asyncio.sleep(0.005)

        done = asyncio.Event()
        watcher = asyncio.create_task(watch_metrics(done)) if watch else None
        tokens = await asyncio.gather(*(one() for _ in range(count)))
        done.set()
        if watcher:
            await watcher
    return {"tokens": tokens, "peaks": peaks}


# ---- the running cap under load -------------------------------------------------------------


@pytest.mark.parametrize(
    ("served", "cap"),
    [((CANDIDATE, "asyncio"), 26), ((BASELINE, "asyncio"), 48), ((CANDIDATE, "threaded"), 26)],
    indirect=["served"],
    ids=["candidate", "baseline", "candidate-threaded"],
)
def test_48_concurrent_streams_show_the_effective_running_cap_in_metrics(served: SimServer, cap: int) -> None:
    # 60 tokens at >= 1.6 ms a step: each stream runs ~100 ms or more, long enough to be seen together.
    result = asyncio.run(_streams(served.url, 48, 60, watch="sglang:num_running_reqs,sglang:num_queue_reqs"))
    assert result["tokens"] == [60] * 48
    assert result["peaks"]["sglang:num_running_reqs"] == cap
    assert (result["peaks"]["sglang:num_queue_reqs"] > 0) == (cap < 48)
    text = requests.get(f"{served.url}/metrics").text
    assert _value(text, "sglang:num_running_reqs") == 0
    assert _value(text, "sglang:num_requests_total") == 48
    assert _value(text, "sglang:generation_tokens_total") == 48 * 60
    assert _value(text, "sglang:queue_time_seconds_count") == 48
    assert _value(text, "sglang:inter_token_latency_seconds_count") == 48 * 59


@pytest.mark.parametrize("served", [(LLAMA_059, "asyncio")], indirect=True)
def test_256_concurrent_streams_all_finish_and_the_server_forgets_them(served: SimServer) -> None:
    result = asyncio.run(_streams(served.url, 256, 16))
    assert result["tokens"] == [16] * 256
    loads = requests.get(f"{served.url}/get_server_info").json()
    assert loads["internal_states"][0]["effective_max_running_requests_per_dp"] == 2048
    assert not served.simulator.engine.busy()


# ---- timing ---------------------------------------------------------------------------------


@pytest.mark.parametrize("served", [(QWEN_0523, kind) for kind in SERVERS], indirect=True, ids=SERVERS)
def test_at_low_load_prefill_and_decode_take_the_modelled_time(served: SimServer) -> None:
    """Measured by the server's own timestamps (meta_info with --enable-metrics), so the
    client and the loopback are not part of it. A step never takes less than the model says,
    and the quickest of five is within 1 ms of it (a busy machine only adds to the others)."""
    perf = served.profile.performance
    prompt = " ".join(["word"] * 500)
    model_prefill = (perf.prefill_base_ms + 500 / 1000 * perf.prefill_ms_per_1k_tokens) / 1000
    model_step = (perf.decode_step_base_ms + perf.decode_step_ms_per_request * 1) / 1000
    prefills, steps = [], []
    for _ in range(5):
        body = {"text": prompt, "sampling_params": {"max_new_tokens": 21}}
        meta = requests.post(f"{served.url}/generate", json=body).json()["meta_info"]
        prefills.append(meta["prefill_finished_time"] - meta["forward_entry_time"])
        steps.append((meta["request_finished_ts"] - meta["prefill_finished_time"]) / 20)
    assert min(prefills) > model_prefill - 0.0005 and min(prefills) - model_prefill < 0.001, prefills
    assert min(steps) > model_step - 0.0005 and min(steps) - model_step < 0.001, steps


# ---- metrics as the real server exports them -------------------------------------------------


@pytest.mark.parametrize("served", [(name, "asyncio") for name in (BASELINE, CANDIDATE, QWEN_0523)], indirect=True)
def test_every_family_is_a_real_one_with_its_type_and_labels(served: SimServer) -> None:
    requests.post(f"{served.url}/generate", json={"text": "warm the histograms", "sampling_params": {"max_new_tokens": 3}})
    text = requests.get(f"{served.url}/metrics").text
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE))
    assert {name: kind for name, kind in types.items() if REAL["metrics"].get(name) != kind} == {}
    wanted = {
        "num_running_reqs", "num_queue_reqs", "token_usage", "num_used_tokens", "gen_throughput",
        "cache_hit_rate", "e2e_request_latency_seconds", "inter_token_latency_seconds", "queue_time_seconds",
        "request_time_per_output_token_seconds", "time_to_first_token_seconds", "prompt_tokens_total",
        "generation_tokens_total", "num_requests_total", "http_requests_active", "http_requests_total",
        "max_total_num_tokens", "context_len", "page_size",
    }  # fmt: skip
    assert {f"sglang:{name}" for name in wanted} <= types.keys()
    scheduler = {"model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank"}
    tokenizer = {"model_name", "engine_type"}
    for name, labels in [
        ("sglang:num_running_reqs", scheduler),
        ("sglang:queue_time_seconds_count", scheduler),
        ("sglang:context_len", scheduler),
        ("sglang:e2e_request_latency_seconds_count", tokenizer),
        ("sglang:request_time_per_output_token_seconds_count", tokenizer),
        ("sglang:prompt_tokens_total", tokenizer),
        ("sglang:http_requests_total", {"endpoint", "method"}),
    ]:
        assert {frozenset(found) for found, _ in _samples(text, name)} == {frozenset(labels)}, name
    assert _value(text, "sglang:context_len") == served.profile.model.context_len
    assert _value(text, "sglang:max_total_num_tokens") == served.profile.runtime.max_total_num_tokens
    http = {labels["endpoint"]: value for labels, value in _samples(text, "sglang:http_requests_total")}
    assert http == {"/generate": 1, "/metrics": 1}
    active = {labels["endpoint"]: value for labels, value in _samples(text, "sglang:http_requests_active")}
    assert active == {"/generate": 0, "/metrics": 1}  # this very request


def test_the_seed_profiles_have_metrics_enabled() -> None:
    for name in (BASELINE, CANDIDATE, QWEN_0523):
        profile = load_profile(name)
        assert profile.metrics_enabled, name
        assert "--enable-metrics" in profile.launch_command, name
    assert not load_profile(LLAMA_059).metrics_enabled


# ---- both servers speak the same HTTP -------------------------------------------------------

_STREAM = b'{"text": "a b", "sampling_params": {"max_new_tokens": 2}, "stream": true}'
RAW_REQUESTS = [
    b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n",
    b"DELETE /generate HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /generate HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n{bad!",
    b"POST /generate HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(_STREAM), _STREAM),
    b"POST /generate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST /generate HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n",
    b"GET /v1/models HTTP/1.0\r\n\r\n",
    b"POST /generate HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 13\r\n\r\n{\"text\": \"x\"}",
    # What neither server can route or parse: the same plain-text answers, no HTML page.
    b"BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GARBAGE\r\n\r\n",
    b"GET /health HTTP/2.0\r\nHost: x\r\n\r\n",
    b"GET /health HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n",
    b"GET /health HTTP/1.1\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(120)) + b"\r\n",
]


def _exchange(port: int, raw: bytes) -> tuple[str, list[str], bytes]:
    """Status line, header names (in order, Date left out) and body of one raw exchange;
    the server is expected to close the connection or to have sent a complete answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(raw)
        sock.shutdown(socket.SHUT_WR)  # one request: the server sees the end and closes
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    interim = b"HTTP/1.1 100 Continue\r\n\r\n"
    continued = data.startswith(interim)
    head, _, body = data.removeprefix(interim).partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    status = f"100 Continue, then {status}" if continued else status
    names = [line.split(":", 1)[0] for line in lines if not line.startswith("Date:")]
    return status, names, body


def _comparable(body: bytes) -> bytes:
    """Bodies with their request-specific parts (ids, times, chunk sizes) blanked."""
    body = re.sub(rb"(^|\r\n)[0-9a-f]+\r\n", rb"\1", body)
    return re.sub(rb'("(id|[a-z0-9_]*(time|ts|latency|throughput))": )("[0-9a-f]{32}"|[0-9.e+-]+)', rb"\1_", body)


def test_the_asyncio_and_threaded_servers_answer_alike() -> None:
    profile = load_profile(QWEN_0523)
    with SimServer(profile, server="asyncio") as aio, SimServer(profile, server="threaded") as threaded:
        for raw in RAW_REQUESTS:
            a_status, a_names, a_body = _exchange(aio.port, raw)
            t_status, t_names, t_body = _exchange(threaded.port, raw)
            assert (a_status, a_names) == (t_status, t_names), raw
            assert _comparable(a_body) == _comparable(t_body), raw


@pytest.mark.parametrize("kind", SERVERS)
def test_a_stream_goes_out_token_by_token(kind: str) -> None:
    """Each chunk leaves when its token is produced, not when the answer is complete (a
    keep-alive client's delayed ACK must not hold chunks back either)."""
    with SimServer(load_profile(BASELINE), server=kind) as server, requests.Session() as session:
        body = {"text": "x", "sampling_params": {"max_new_tokens": 20}, "stream": True}
        for _ in range(3):  # the same kept-alive connection each time
            with session.post(f"{server.url}/generate", json=body, stream=True) as response:
                arrivals = [time.monotonic() for line in response.iter_lines() if line]
            assert len(arrivals) == 21
            # 19 decode steps of 2.05 ms between the first token and the last.
            assert arrivals[19] - arrivals[0] > 0.030


def test_an_unknown_server_kind_is_one_line_naming_the_choices() -> None:
    with pytest.raises(ValueError, match=r"^simulator server 'fast' is unknown; use asyncio or threaded$"):
        SimServer(load_profile(LLAMA_059), server="fast")


def test_the_command_line_serves_with_either_server(tmp_path: Any) -> None:
    import subprocess
    import sys

    for kind in SERVERS:
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest_sglang.sim", "--profile", LLAMA_059, "--port", "0", "--server", kind],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            url = process.stdout.readline().rsplit(" ", 1)[-1].strip()
            answer = requests.post(f"{url}/generate", json={"text": "hi", "sampling_params": {"max_new_tokens": 2}})
            assert json.loads(answer.content)["meta_info"]["completion_tokens"] == 2
        finally:
            process.terminate()
            assert process.wait(5) == 0
