"""The simulated SGLang server: endpoints and shapes per version, auth, generation, queueing, CLI."""

from __future__ import annotations

import http.client
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from support import artefact, gone_within, process_running

from pytest_sglang.simulator.profile import Profile, SimPerformance, bundled_profiles, load_profile
from pytest_sglang.simulator.server import FLUSH_CACHE_TEXT, SimServer

LLAMA_059 = "llama31-8b-1xh100-0.5.9"  # both info paths, no metrics, no GPU name over HTTP
QWEN_0512 = "qwen35-122b-a10b-4xrtx6000-baseline"  # 0.5.12: /v1/loads with aggregate, metrics on
QWEN_0523 = "qwen35-122b-a10b-4xrtx6000-0.5.23"  # 0.5.23: accelerator in /v1/loads, /ready
REPO = Path(__file__).resolve().parents[1]

Serve = Callable[..., SimServer]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Start servers from a profile name or object; every one is stopped afterwards."""
    servers: list[SimServer] = []

    def start(profile: str | Profile, **kwargs: Any) -> SimServer:
        loaded = load_profile(profile) if isinstance(profile, str) else profile
        server = SimServer(loaded, **kwargs)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


def _with(name: str, **update: Any) -> Profile:
    # Validated afresh: model_copy would keep cached properties such as the parsed version.
    return Profile.model_validate({**load_profile(name).model_dump(), **update})


def _sse_events(response: requests.Response) -> list[str]:
    return [line[len("data: ") :] for line in response.iter_lines(decode_unicode=True) if line]


def _chunks(events: list[str]) -> list[dict[str, Any]]:
    assert events[-1] == "[DONE]"
    return [json.loads(e) for e in events[:-1]]


# ---- endpoints and shapes per SGLang version ------------------------------------------


def test_server_info_and_model_info_answer_on_both_paths_from_0_5_9(serve: Serve) -> None:
    url = serve(LLAMA_059).url
    info = requests.get(f"{url}/server_info").json()
    assert requests.get(f"{url}/get_server_info").json() == info
    assert info["version"] == "0.5.9"
    assert info["model_path"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert info["internal_states"][0]["effective_max_running_requests_per_dp"] == 2048
    model = requests.get(f"{url}/model_info").json()
    assert requests.get(f"{url}/get_model_info").json() == model
    assert model["architectures"] == ["LlamaForCausalLM"]


def test_before_0_5_9_only_the_get_paths_exist(serve: Serve) -> None:
    url = serve(_with(LLAMA_059, sglang_version="0.5.5")).url
    assert requests.get(f"{url}/get_server_info").json()["version"] == "0.5.5"
    for path in ("/server_info", "/model_info", "/v1/loads", "/ready"):
        response = requests.get(f"{url}{path}")
        assert (response.status_code, response.json()) == (404, {"detail": "Not Found"}), path


def test_v1_loads_takes_the_0_5_12_shape(serve: Serve) -> None:
    body = requests.get(f"{serve(QWEN_0512).url}/v1/loads").json()
    assert body["version"] == "0.5.12"
    assert "accelerator" not in body
    assert body["dp_rank_count"] == 1
    assert body["aggregate"] == {"total_running_reqs": 0, "total_waiting_reqs": 0, "total_reqs": 0}
    assert body["loads"][0]["max_running_requests"] == 48


def test_v1_loads_takes_the_0_5_23_shape_with_the_gpu_name(serve: Serve) -> None:
    body = requests.get(f"{serve(QWEN_0523).url}/v1/loads").json()
    assert body["version"] == "0.5.23"
    assert body["accelerator"] == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert body["num_accelerators"] == 4
    assert "aggregate" not in body
    assert body["loads"][0]["memory"]["token_capacity"] == body["loads"][0]["max_total_num_tokens"]


def test_ready_exists_from_0_5_20(serve: Serve) -> None:
    assert requests.get(f"{serve(QWEN_0512).url}/ready").status_code == 404
    assert requests.get(f"{serve(QWEN_0523).url}/ready").status_code == 200


def test_v1_models_lists_the_served_model_name(serve: Serve) -> None:
    body = requests.get(f"{serve(QWEN_0523).url}/v1/models").json()
    assert [(m["id"], m["owned_by"], m["max_model_len"]) for m in body["data"]] == [
        ("qwen3.5-122b-a10b", "sglang", 262144)
    ]


def test_metrics_exist_only_with_enable_metrics(serve: Serve) -> None:
    assert requests.get(f"{serve(LLAMA_059).url}/metrics").status_code == 404
    url = serve(QWEN_0523).url
    requests.post(f"{url}/generate", json={"text": "one two three", "sampling_params": {"max_new_tokens": 5}})
    response = requests.get(f"{url}/metrics")
    assert response.headers["Content-Type"].startswith("text/plain")
    text = response.text
    ranks = 'model_name="qwen3.5-122b-a10b",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0"'
    assert f"sglang:num_running_reqs{{{ranks}}} 0.0" in text
    assert f"sglang:max_total_num_tokens{{{ranks}}} 395685.0" in text
    for gauge in ("num_queue_reqs", "gen_throughput", "token_usage"):
        assert f"# TYPE sglang:{gauge} gauge" in text
    tokenizer = 'model_name="qwen3.5-122b-a10b",engine_type="unified"'
    assert f"sglang:prompt_tokens_total{{{tokenizer}}} 3.0" in text
    assert f"sglang:generation_tokens_total{{{tokenizer}}} 5.0" in text
    assert f"sglang:num_requests_total{{{tokenizer}}} 1.0" in text
    for name in ("prompt_tokens", "generation_tokens", "num_requests"):
        assert f"# TYPE sglang:{name}_total counter" in text  # prometheus_client types a counter by its sample name
    assert "# TYPE sglang:time_to_first_token_seconds histogram" in text
    assert f'sglang:time_to_first_token_seconds_bucket{{{tokenizer},le="+Inf"}} 1.0' in text


# ---- auth ------------------------------------------------------------------------------


def test_health_metrics_and_ready_stay_open_when_keys_are_set(serve: Serve) -> None:
    url = serve(QWEN_0523, api_key="k", admin_api_key="admin").url
    for path in ("/health", "/health_generate", "/metrics", "/ready"):
        assert requests.get(f"{url}{path}").status_code == 200, path


@pytest.mark.parametrize(
    ("authorization", "status"),
    [(None, 401), ("Bearer wrong", 401), ("Basic k", 401), ("Bearer k", 200), ("bearer k", 200)],
)
def test_normal_endpoints_need_the_api_key(serve: Serve, authorization: str | None, status: int) -> None:
    url = serve(LLAMA_059, api_key="k").url
    headers = {"Authorization": authorization} if authorization else {}
    for path in ("/server_info", "/v1/models", "/ping"):
        response = requests.get(f"{url}{path}", headers=headers)
        assert response.status_code == status, path
        if status == 401:
            assert response.json() == {"error": "Unauthorized"}
    generate = requests.post(f"{url}/generate", json={"text": "hi"}, headers=headers)
    assert generate.status_code == status


def test_server_info_reports_the_keys_it_was_started_with(serve: Serve) -> None:
    url = serve(QWEN_0523, api_key="k", admin_api_key="admin").url
    info = requests.get(f"{url}/server_info", headers={"Authorization": "Bearer k"}).json()
    assert (info["api_key"], info["admin_api_key"]) == ("k", "admin")
    assert "--api-key k" in info["launch_command"]  # SGLang keeps it verbatim there


@pytest.mark.parametrize(
    ("api_key", "admin_api_key", "presented", "status"),
    [
        (None, None, None, 200),  # both unset: open
        ("k", None, None, 401),  # only api_key: it is needed
        ("k", None, "k", 200),
        ("k", "admin", "k", 401),  # admin key set: the api key is not accepted
        ("k", "admin", "admin", 200),
        (None, "admin", None, 401),
        (None, "admin", "admin", 200),
    ],
)
def test_flush_cache_follows_the_admin_optional_rule(
    serve: Serve, api_key: str | None, admin_api_key: str | None, presented: str | None, status: int
) -> None:
    url = serve(LLAMA_059, api_key=api_key, admin_api_key=admin_api_key).url
    headers = {"Authorization": f"Bearer {presented}"} if presented else {}
    response = requests.post(f"{url}/flush_cache", headers=headers)
    assert response.status_code == status
    if status == 200:
        assert response.text == FLUSH_CACHE_TEXT


def test_only_an_admin_key_leaves_normal_endpoints_open(serve: Serve) -> None:
    url = serve(LLAMA_059, admin_api_key="admin").url
    assert requests.get(f"{url}/server_info").json()["admin_api_key"] == "admin"


# ---- generation --------------------------------------------------------------------------


def test_generate_returns_deterministic_tokens_and_meta_info(serve: Serve) -> None:
    url = serve(LLAMA_059).url
    request = {"text": "The capital of France is", "sampling_params": {"max_new_tokens": 7}}
    body = requests.post(f"{url}/generate", json=request).json()
    meta = body["meta_info"]
    assert len(body["output_ids"]) == 7
    assert body["text"] == "".join(f" tok{i}" for i in body["output_ids"])
    assert meta["finish_reason"] == {"type": "length", "length": 7}
    assert (meta["prompt_tokens"], meta["completion_tokens"], meta["cached_tokens"]) == (5, 7, 0)
    assert (meta["weight_version"], meta["num_retractions"]) == ("default", 0)
    assert 0 < meta["e2e_latency"] < 5
    again = requests.put(f"{url}/generate", json=request).json()
    assert again["output_ids"] == body["output_ids"]
    assert again["meta_info"]["id"] != meta["id"]
    other = requests.post(f"{url}/generate", json={**request, "text": "Something else"}).json()
    assert other["output_ids"] != body["output_ids"]


def test_generate_counts_input_ids_and_answers_a_batch_with_a_list(serve: Serve) -> None:
    url = serve(LLAMA_059).url
    by_ids = requests.post(f"{url}/generate", json={"input_ids": [1, 2, 3, 4, 5, 6]}).json()
    assert by_ids["meta_info"]["prompt_tokens"] == 6
    assert by_ids["meta_info"]["completion_tokens"] == 16  # the profile's default_max_new_tokens
    batch = requests.post(f"{url}/generate", json={"text": ["a b", "c"], "sampling_params": {"max_new_tokens": 2}})
    assert [r["meta_info"]["prompt_tokens"] for r in batch.json()] == [2, 1]


def test_generate_stream_sends_cumulative_chunks_then_done(serve: Serve) -> None:
    url = serve(LLAMA_059).url
    request = {"text": "hello there", "sampling_params": {"max_new_tokens": 5}}
    response = requests.post(f"{url}/generate", json={**request, "stream": True}, stream=True)
    assert response.headers["Content-Type"] == "text/event-stream"
    chunks = _chunks(_sse_events(response))
    assert len(chunks) == 5
    for before, after in zip(chunks, chunks[1:]):
        assert after["text"].startswith(before["text"]) and len(after["text"]) > len(before["text"])
        assert after["output_ids"][: len(before["output_ids"])] == before["output_ids"]
    assert [c["meta_info"]["finish_reason"] for c in chunks[:-1]] == [None] * 4
    assert chunks[-1]["meta_info"]["finish_reason"] == {"type": "length", "length": 5}
    assert chunks[-1]["output_ids"] == requests.post(f"{url}/generate", json=request).json()["output_ids"]


# meta_info keys of a real 0.5.23 server: always, with --enable-metrics, and once finished.
META_0523 = {"id", "finish_reason", "prompt_tokens", "weight_version", "num_retractions", "reasoning_tokens"}
META_0523 |= {"completion_tokens", "cached_tokens", "cached_tokens_details", "dp_rank"}
SCHEDULER_TIMINGS = {"storage_prefetch_wait", "storage_staging_wait", "forward_entry_time", "prefill_finished_time"}
SCHEDULER_TIMINGS |= {"queue_time"}
FINISHED = {"weight_versions", "e2e_latency"}
TOKENIZER_TIMINGS = {"request_received_ts", "first_token_latency", "api_server_dispatch_finish_ts"}
TOKENIZER_TIMINGS |= {"request_finished_ts", "decode_throughput"}
SENT = "response_sent_to_client_ts"


def _generate_meta(url: str, text: str, max_new_tokens: int) -> dict[str, Any]:
    request = {"text": text, "sampling_params": {"max_new_tokens": max_new_tokens}}
    return requests.post(f"{url}/generate", json=request).json()["meta_info"]


def test_0_5_23_generate_meta_info_carries_the_request_timings_with_metrics(serve: Serve) -> None:
    url = serve(QWEN_0523).url
    before = time.time()
    meta = _generate_meta(url, "one two", 4)
    after = time.time()
    assert set(meta) == META_0523 | SCHEDULER_TIMINGS | FINISHED | TOKENIZER_TIMINGS | {SENT}
    assert meta["weight_versions"] == [{"version": "default", "start": 0, "end": 4}]
    assert (meta["cached_tokens_details"], meta["dp_rank"]) == (None, None)
    # The stages in the order a request passes them, all within this call.
    stages = [meta["request_received_ts"], meta["api_server_dispatch_finish_ts"], meta["forward_entry_time"]]
    stages += [meta["prefill_finished_time"], meta["request_finished_ts"], meta[SENT]]
    assert before <= stages[0] and stages == sorted(stages) and stages[-1] <= after
    assert 0 <= meta["queue_time"] < meta["first_token_latency"] < meta["e2e_latency"]
    assert meta["e2e_latency"] == pytest.approx(meta["request_finished_ts"] - meta["request_received_ts"])
    decoding = meta["request_finished_ts"] - meta["prefill_finished_time"]
    assert meta["decode_throughput"] == pytest.approx(4 / decoding)


def test_0_5_23_generate_stream_sends_timings_first_and_last(serve: Serve) -> None:
    url = serve(QWEN_0523).url
    request = {"text": "one two", "sampling_params": {"max_new_tokens": 3}, "stream": True}
    metas = [c["meta_info"] for c in _chunks(_sse_events(requests.post(f"{url}/generate", json=request, stream=True)))]
    assert [set(m) for m in metas] == [
        META_0523 | SCHEDULER_TIMINGS | {SENT},
        META_0523 | SCHEDULER_TIMINGS,
        META_0523 | SCHEDULER_TIMINGS | FINISHED | TOKENIZER_TIMINGS | {SENT},
    ]
    assert metas[0][SENT] == metas[-1][SENT]  # the time the first chunk went out
    assert len({m["forward_entry_time"] for m in metas}) == 1


def test_0_5_23_generate_without_metrics_has_no_timings(serve: Serve) -> None:
    """As the real 0.5.23 answer in the SGLang 0.5.23 artefacts (tests/data/artefacts) (generate_response.json) shows."""
    server_args = {**load_profile(QWEN_0523).server_args, "enable_metrics": False}
    meta = _generate_meta(serve(_with(QWEN_0523, server_args=server_args)).url, "hi", 2)
    assert set(meta) == META_0523 | FINISHED | {SENT}


def test_before_0_5_23_generate_meta_info_keeps_its_era_keys(serve: Serve) -> None:
    meta = _generate_meta(serve(QWEN_0512).url, "hi", 2)  # metrics on, but 0.5.12
    assert set(meta) == META_0523 - {"cached_tokens_details", "dp_rank"} | {"e2e_latency"}


def test_0_5_23_v1_loads_counts_prefill_and_decode_steps(serve: Serve) -> None:
    url = serve(QWEN_0523).url
    idle = requests.get(f"{url}/v1/loads").json()["loads"][0]
    counters = ("total_prefill_uncached_tokens", "total_prefill_busy_us", "decode_moments")
    assert [idle[k] for k in counters] == [0, 0, [0.0] * 6]
    requests.post(f"{url}/generate", json={"text": "one two three", "sampling_params": {"max_new_tokens": 5}})
    load = requests.get(f"{url}/v1/loads").json()["loads"][0]
    assert load["total_prefill_uncached_tokens"] == 3
    assert load["total_prefill_busy_us"] > 0
    steps, batch_sizes, step_us, squares, weighted_us, tokens = load["decode_moments"]
    assert (steps, batch_sizes, squares, tokens) == (4.0, 4.0, 4.0, 4.0)  # one request alone: 4 decode steps of 1
    assert step_us == pytest.approx(weighted_us) and step_us > 0
    assert 0 < load["timestamp"] <= time.time()
    assert load["queues"] == {"waiting": 0, "grammar": 0, "paused": 0, "retracted": 0, "prealloc_ready": 0}
    assert load["disaggregation"]["mode"] == "null"
    assert (load["num_active_tokens"], load["num_prealloc_ready_tokens"]) == (0, 0)


def test_chat_completions_stream_deltas_and_a_usage_chunk(serve: Serve) -> None:
    url = serve(QWEN_0523).url
    request = {
        "model": "qwen3.5-122b-a10b",
        "messages": [{"role": "user", "content": "say three words"}],
        "max_tokens": 3,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    chunks = _chunks(_sse_events(requests.post(f"{url}/v1/chat/completions", json=request, stream=True)))
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert {c["model"] for c in chunks} == {"qwen3.5-122b-a10b"}  # the request's model, echoed
    assert chunks[0]["choices"][0]["delta"] == {"reasoning_content": None, "role": "assistant", "content": ""}
    contents = [c["choices"][0]["delta"]["content"] for c in chunks[1:4]]
    assert len(contents) == 3 and all(contents)
    assert chunks[4]["choices"][0]["delta"] == {"reasoning_content": None}
    assert chunks[4]["choices"][0]["finish_reason"] == "length"
    assert ["usage" in c for c in chunks] == [False] * 5 + [True]  # 0.5.23: no `usage: null` on the others
    assert chunks[5]["choices"] == []
    assert chunks[5]["usage"]["completion_tokens"] == 3
    assert chunks[5]["usage"]["total_tokens"] == 3 + chunks[5]["usage"]["prompt_tokens"]


def test_chat_completions_answer_with_one_assistant_message(serve: Serve) -> None:
    url = serve(QWEN_0523).url
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    request = {"messages": messages, "max_tokens": 9, "max_completion_tokens": 3}
    body = requests.post(f"{url}/v1/chat/completions", json=request).json()
    assert (body["object"], body["model"]) == ("chat.completion", "default")  # 0.5.23: "default" when none is named
    (choice,) = body["choices"]
    assert choice["message"]["role"] == "assistant"
    assert "tool_calls" not in choice["message"] and choice["message"]["reasoning_content"] is None
    assert body["metadata"] == {
        "weight_version": "default",
        "weight_versions": [{"version": "default", "start": 0, "end": 3}],
    }
    assert choice["message"]["content"].count(" tok") == 3
    assert choice["finish_reason"] == "length"
    assert (body["usage"]["prompt_tokens"], body["usage"]["completion_tokens"]) == (3, 3)


def test_completions_answer_in_the_openai_shape(serve: Serve) -> None:
    url = serve(QWEN_0523).url
    body = requests.post(f"{url}/v1/completions", json={"prompt": "once upon", "max_tokens": 4}).json()
    assert (body["object"], body["model"]) == ("text_completion", "default")  # 0.5.23: "default" when none is named
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"] == {
        "prompt_tokens": 2,
        "total_tokens": 6,
        "completion_tokens": 4,
        "prompt_tokens_details": None,
        "reasoning_tokens": 0,
        "completion_tokens_details": None,
    }
    assert body["metadata"]["weight_versions"] == [{"version": "default", "start": 0, "end": 4}]
    request = {"prompt": "once upon", "max_tokens": 2}
    whole = requests.post(f"{url}/v1/completions", json=request).json()["choices"][0]["text"]
    streamed = requests.post(f"{url}/v1/completions", json={**request, "stream": True}, stream=True)
    chunks = _chunks(_sse_events(streamed))
    # 0.5.23 puts the finish reason on the last token's chunk and keeps `usage: null` on every one.
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None, "length"]
    assert [c["usage"] for c in chunks] == [None, None]
    assert "".join(c["choices"][0]["text"] for c in chunks) == whole  # deltas, not cumulative


def test_before_0_5_23_completion_streams_end_with_an_empty_finish_chunk(serve: Serve) -> None:
    request = {"prompt": "once upon", "max_tokens": 2, "stream": True}
    streamed = requests.post(f"{serve(QWEN_0512).url}/v1/completions", json=request, stream=True)
    chunks = _chunks(_sse_events(streamed))
    assert [(c["choices"][0]["text"] == "", c["choices"][0]["finish_reason"]) for c in chunks] == [
        (False, None),
        (False, None),
        (True, "length"),
    ]


def test_0_5_23_serves_an_unknown_model_name_and_echoes_it(serve: Serve) -> None:
    """A real 0.5.23 server answers 200 to a model it does not serve, naming that model."""
    url = serve(QWEN_0523).url
    request = {"model": "gpt-4", "messages": [{"content": "x"}], "max_tokens": 2}
    response = requests.post(f"{url}/v1/chat/completions", json=request)
    assert response.status_code == 200
    assert response.json()["model"] == "gpt-4"


def test_before_0_5_23_an_unknown_model_is_an_openai_404(serve: Serve) -> None:
    url = serve(QWEN_0512).url
    response = requests.post(f"{url}/v1/chat/completions", json={"model": "gpt-4", "messages": [{"content": "x"}]})
    assert response.status_code == 404
    assert response.json()["object"] == "error"
    assert "gpt-4" in response.json()["message"]


def test_one_connection_serves_requests_and_streams_in_turn(serve: Serve) -> None:
    server = serve(LLAMA_059)
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    stream = json.dumps({"text": "x", "sampling_params": {"max_new_tokens": 3}, "stream": True})
    sockets = []
    try:
        for method, path, body in [("GET", "/health", None), ("POST", "/generate", stream), ("GET", "/ping", None)]:
            connection.request(method, path, body=body)
            sockets.append(connection.sock)
            response = connection.getresponse()
            assert response.status == 200
            response.read()
        assert len({id(s) for s in sockets}) == 1  # never re-opened: the server kept it alive
    finally:
        connection.close()


# ---- refusals ------------------------------------------------------------------------


def test_unknown_paths_and_wrong_methods(serve: Serve) -> None:
    url = serve(LLAMA_059).url
    missing = requests.get(f"{url}/does_not_exist")
    assert (missing.status_code, missing.json()) == (404, {"detail": "Not Found"})
    assert requests.delete(f"{url}/generate").status_code == 405
    assert requests.post(f"{url}/server_info").status_code == 405


@pytest.mark.parametrize("path", ["/generate", "/v1/completions", "/v1/chat/completions"])
def test_malformed_json_is_a_400_with_a_json_error(serve: Serve, path: str) -> None:
    response = requests.post(f"{serve(LLAMA_059).url}{path}", data="{not json")
    assert response.status_code == 400
    assert "not valid JSON" in json.dumps(response.json())


@pytest.mark.parametrize(
    ("path", "error_type"),
    [("/generate", "dataclass_type"), ("/v1/completions", "json_invalid"), ("/v1/chat/completions", "json_invalid")],
)
def test_0_5_23_refuses_malformed_json_in_the_validation_error_shape(serve: Serve, path: str, error_type: str) -> None:
    response = requests.post(f"{serve(QWEN_0523).url}{path}", data=b"{bad")
    assert response.status_code == 400
    body = response.json()
    assert {k: v for k, v in body.items() if k != "message"} == {
        "object": "error",
        "type": "Bad Request",
        "param": None,
        "code": 400,
    }
    assert body["message"].startswith(f"1 validation error:\n  {{'type': '{error_type}', 'loc': ('body',")
    assert f"POST {path} [" in body["message"]


@pytest.mark.parametrize("profile", [LLAMA_059, QWEN_0523])
@pytest.mark.parametrize("path", ["/generate", "/v1/completions", "/v1/chat/completions"])
@pytest.mark.parametrize("body", [b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", b'{"text": ' + b"1" * 5000 + b"}"], ids=["100k-deep", "5000-digits"])
def test_a_body_json_cannot_parse_is_answered_as_sglang_answers_it(serve: Serve, caplog: pytest.LogCaptureFixture, profile: str, path: str, body: bytes) -> None:
    """FastAPI turns a body its JSON parser raises on (other than a decode error) into
    HTTPException(400, "There was an error parsing the body"), which every release's handler
    answers as an ErrorResponse; the simulator answers the same, and keeps serving."""
    url = serve(profile).url
    response = requests.post(f"{url}{path}", data=body, headers={"Content-Type": "application/json"}, timeout=30)
    assert (response.status_code, response.json()) == (400, {"object": "error", "message": "There was an error parsing the body", "type": "400", "param": None, "code": 400})
    assert requests.get(f"{url}/health", timeout=10).status_code == 200
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


@pytest.mark.parametrize("max_new_tokens", [0, -1, 4097, "8", 2.5, True])
def test_max_new_tokens_must_be_a_positive_int_up_to_4096(serve: Serve, max_new_tokens: object) -> None:
    url = serve(LLAMA_059).url
    request = {"text": "hi", "sampling_params": {"max_new_tokens": max_new_tokens}}
    response = requests.post(f"{url}/generate", json=request)
    assert response.status_code == 400
    assert "max_new_tokens" in response.json()["error"]["message"]


def test_only_loopback_hosts_are_accepted() -> None:
    profile = load_profile(LLAMA_059)
    for host in ("0.0.0.0", "10.1.2.3", "example.com"):
        with pytest.raises(ValueError, match="loopback"):
            SimServer(profile, host)


# ---- warm-up and the performance model ------------------------------------------------


def test_health_is_503_until_ready_after_has_passed(serve: Serve) -> None:
    started = time.monotonic()
    # Long enough that three loopback requests fit even on a loaded machine.
    server = serve(QWEN_0523, ready_after=1.5)
    url = server.url
    for path in ("/health", "/health_generate", "/ready"):
        response = requests.get(f"{url}{path}")
        assert (response.status_code, response.content) == (503, b""), path
    assert server.simulator.ready is False  # what a shared simulator reports when it opens a host
    while requests.get(f"{url}/health").status_code == 503:
        assert time.monotonic() - started < 30, "never became healthy"
        time.sleep(0.05)
    assert time.monotonic() - started >= 1.5
    assert server.simulator.ready is True
    assert requests.get(f"{url}/health_generate").status_code == 200


@pytest.fixture
def capped_profile(tmp_path: Path) -> Profile:
    """Two running slots and slow decode steps, loaded from a profile JSON file."""
    base = load_profile(QWEN_0512)
    data = base.model_dump(mode="json")
    data["name"] = "capped"
    data["runtime"]["effective_max_running_requests_per_dp"] = 2
    data["performance"] = SimPerformance(decode_step_base_ms=40, decode_step_ms_per_request=0).model_dump()
    path = tmp_path / "capped.json"
    path.write_text(json.dumps(data))
    return load_profile(str(path))


def test_requests_above_the_cap_queue_and_wait_longer_for_the_first_token(
    serve: Serve, capped_profile: Profile
) -> None:
    url = serve(capped_profile).url
    # 8 tokens = prefill + 7 decode steps of 40 ms: three waves of two, at least 280 ms apart.
    request = {"text": "a queued prompt", "sampling_params": {"max_new_tokens": 8}, "stream": True}
    gate = threading.Barrier(6)
    ttfts: list[float] = []
    last_events: list[bytes] = []

    def client() -> None:
        gate.wait()
        sent = time.monotonic()
        with requests.post(f"{url}/generate", json=request, stream=True) as response:
            lines = (line for line in response.iter_lines() if line)
            next(lines)
            ttfts.append(time.monotonic() - sent)
            last_events.append(list(lines)[-1])  # read to the end, so the request runs to completion

    threads = [threading.Thread(target=client) for _ in range(6)]
    for thread in threads:
        thread.start()
    running, waiting = [], []
    while any(t.is_alive() for t in threads):
        load = requests.get(f"{url}/v1/loads").json()["loads"][0]
        running.append(load["num_running_reqs"])
        waiting.append(load["num_waiting_reqs"])
        time.sleep(0.01)
    for thread in threads:
        thread.join()

    assert last_events == [b"data: [DONE]"] * 6
    assert max(running) == 2
    assert max(waiting) >= 2
    ttfts.sort()
    assert ttfts[-1] > 0.5  # the last wave waits for two others: 560 ms at least, sleeps never end early
    # Load can only delay the first wave, never shorten the last one's queueing; a wide margin.
    assert ttfts[-1] - ttfts[1] > 0.3
    final = requests.get(f"{url}/v1/loads").json()
    assert final["aggregate"] == {"total_running_reqs": 0, "total_waiting_reqs": 0, "total_reqs": 0}


def test_flush_cache_is_refused_while_a_request_runs(serve: Serve, capped_profile: Profile) -> None:
    url = serve(capped_profile).url
    request = {"text": "long", "sampling_params": {"max_new_tokens": 12}}
    worker = threading.Thread(target=requests.post, args=(f"{url}/generate",), kwargs={"json": request})
    worker.start()
    _wait_for_running(url, lambda running: running == 1)
    refused = requests.get(f"{url}/flush_cache")
    worker.join()
    assert refused.status_code == 400
    assert requests.get(f"{url}/flush_cache").status_code == 200


def test_a_client_leaving_mid_stream_frees_its_slot(serve: Serve, capped_profile: Profile) -> None:
    url = serve(capped_profile).url
    request = {"text": "long", "sampling_params": {"max_new_tokens": 100}, "stream": True}  # 4 s if read to the end
    with requests.post(f"{url}/generate", json=request, stream=True) as response:
        next(line for line in response.iter_lines() if line)
    _wait_for_running(url, lambda running: running == 0)


def _wait_for_running(url: str, condition: Callable[[int], bool], timeout: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition(requests.get(f"{url}/v1/loads").json()["loads"][0]["num_running_reqs"]):
        assert time.monotonic() < deadline, "the running count never got there"
        time.sleep(0.005)


def test_stop_is_idempotent_and_frees_the_port() -> None:
    server = SimServer(load_profile(LLAMA_059)).start()
    session = requests.Session()
    assert session.get(f"{server.url}/health").status_code == 200  # a kept-alive connection
    server.stop()
    server.stop()
    with pytest.raises(requests.ConnectionError):
        session.get(f"{server.url}/health", timeout=2)


# ---- python -m pytest_sglang.sim --------------------------------------------------------


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest_sglang.sim", *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _first_line(process: subprocess.Popen[str], timeout: float = 10) -> str:
    assert process.stdout is not None
    readable, _, _ = select.select([process.stdout], [], [], timeout)
    assert readable, "the simulator printed nothing"
    return process.stdout.readline()


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_cli_prints_its_url_serves_and_exits_0_on_a_signal(stop_signal: signal.Signals) -> None:
    process = _cli("--profile", LLAMA_059, "--port", "0", env={"SGLANG_API_KEY": "from-env"})
    try:
        line = _first_line(process)
        match = re.fullmatch(
            r"pytest-sglang simulator: llama31-8b-1xh100-0\.5\.9 \(SGLang 0\.5\.9\) "
            r"listening on (http://127\.0\.0\.1:\d+)\n",
            line,
        )
        assert match, line
        url = match.group(1)
        assert requests.get(f"{url}/health", timeout=5).status_code == 200
        assert requests.get(f"{url}/server_info", timeout=5).status_code == 401
        authorised = {"Authorization": "Bearer from-env"}
        assert requests.get(f"{url}/server_info", headers=authorised, timeout=5).status_code == 200
        process.send_signal(stop_signal)
        assert process.wait(timeout=10) == 0
        assert process.stderr is not None and process.stderr.read() == ""
    finally:
        process.kill()
        process.communicate()


@pytest.fixture
def occupied_port() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--profile", "no-such-profile"], "unknown simulator profile"),
        (["--profile", LLAMA_059, "--host", "0.0.0.0"], "not a loopback address"),
        (["--profile", LLAMA_059, "--port", "{occupied}"], "cannot listen on 127.0.0.1"),
        (["--port", "0"], "--profile"),
        (["--profile", LLAMA_059, "--port", "many"], "invalid int value"),
        (["--profile", LLAMA_059, "--parent-pid", "0"], "--parent-pid: 0 is not a process id"),
    ],
    ids=["unknown-profile", "non-loopback-host", "port-in-use", "no-profile", "bad-port", "bad-parent-pid"],
)
def test_cli_reports_user_errors_on_one_line_with_exit_2(args: list[str], message: str, occupied_port: int) -> None:
    process = _cli(*(a.format(occupied=occupied_port) for a in args))
    stdout, stderr = process.communicate(timeout=10)
    assert process.returncode == 2
    assert stdout == ""
    assert len(stderr.splitlines()) == 1 and stderr.startswith("error:"), stderr
    assert message in stderr
    assert "Traceback" not in stderr


def test_cli_lists_the_bundled_profiles_with_their_descriptions() -> None:
    stdout, _ = _cli("--list").communicate(timeout=10)
    lines = stdout.splitlines()
    assert any(line.startswith(f"{LLAMA_059}  Llama-3.1-8B-Instruct on one H100") for line in lines)
    assert len(lines) == len(bundled_profiles())


# ---- the simulator never outlives the process that started it ----------------------------


def _wait_for_file(path: Path, process: subprocess.Popen[str], seconds: float = 60) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().strip():
            return path.read_text().strip()
        assert process.poll() is None, process.communicate()
        time.sleep(0.1)
    raise AssertionError(f"{path} was not written")


SLEEPING_SUITE = """
import ctypes, os, resource, time

def test_sleeps(sglang):
    pid = sglang._simulator.process.pid
    with open({record!r} + ".tmp", "w") as f:
        f.write(f"{{pid}} {{os.getpid()}}")
    os.replace({record!r} + ".tmp", {record!r})
    if {crash!r}:
        while not os.path.exists({record!r} + ".crash"):
            time.sleep(0.05)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        ctypes.string_at(0)  # a segmentation fault: pytest dies without running a finaliser
    time.sleep(120)
"""


@pytest.mark.parametrize("kill_signal", [signal.SIGTERM, signal.SIGKILL, None], ids=["SIGTERM", "SIGKILL", "crash"])
def test_the_simulator_ends_when_pytest_is_killed(pytester: pytest.Pytester, kill_signal: signal.Signals | None) -> None:
    record = pytester.path / "pids"
    pytester.makepyfile(test_sleeping=SLEEPING_SUITE.format(record=str(record), crash=kill_signal is None))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_ADDOPTS"))}
    env["PYTHONPATH"] = str(REPO)
    pytest_process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--sglang-host=sim://{QWEN_0512}"],
        cwd=pytester.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    sim_pid = None
    try:
        sim_pid, test_pid = map(int, _wait_for_file(record, pytest_process).split())
        assert test_pid == pytest_process.pid
        assert process_running(sim_pid)
        if kill_signal is not None:
            pytest_process.send_signal(kill_signal)
        else:
            record.with_name(record.name + ".crash").touch()
        assert pytest_process.wait(timeout=10) < 0  # ended by a signal, as asked (or by the crash)
        how = kill_signal.name if kill_signal else "a crash"
        assert gone_within(sim_pid, 5), f"simulator {sim_pid} outlived pytest ({how})"
    finally:
        pytest_process.kill()
        pytest_process.communicate()
        if sim_pid is not None and process_running(sim_pid):
            os.kill(sim_pid, signal.SIGKILL)


PARENT = """
import os, subprocess, sys, threading, time
started = []
def start():
    args = ["--profile", {profile!r}, "--port", "0", "--parent-pid", str(os.getpid())]
    started.append(subprocess.Popen([sys.executable, *{child!r}, *args], stdout=subprocess.PIPE, text=True))
    print(started[0].stdout.readline(), flush=True)
thread = threading.Thread(target=start)
thread.start()
thread.join()  # the thread that started the simulator has ended; the process lives on
print(started[0].pid, flush=True)
time.sleep(120)
"""


# Without the kernel's parent-death signal (macOS, or prctl refused), the polling thread alone.
POLLING_ONLY = [
    "-c",
    "import sys, pytest_sglang.simulator.__main__ as m; m._PARENT_DEATH_SIGNAL = None; sys.exit(m.main(sys.argv[1:]))",
]


@pytest.mark.parametrize("child", [["-m", "pytest_sglang.sim"], POLLING_ONLY], ids=["parent-death-signal", "polling-only"])
def test_the_simulator_outlives_the_thread_that_started_it_but_not_the_process(child: list[str]) -> None:
    """Linux signals a child when the *thread* that started it ends: that alone must not stop it."""
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT.format(profile=LLAMA_059, child=child)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )
    sim_pid = None
    try:
        assert parent.stdout is not None
        url = re.search(r"listening on (http://\S+)", parent.stdout.readline()).group(1)  # type: ignore[union-attr]
        parent.stdout.readline()  # the blank line print adds
        sim_pid = int(parent.stdout.readline())
        time.sleep(1.5)  # past the parent-death signal and a few polls
        assert process_running(sim_pid)
        assert requests.get(f"{url}/health", timeout=5).status_code == 200
        parent.kill()
        parent.wait(timeout=10)
        assert gone_within(sim_pid, 5)
    finally:
        parent.kill()
        parent.communicate()
        if sim_pid is not None and process_running(sim_pid):
            os.kill(sim_pid, signal.SIGKILL)


def test_a_simulator_started_for_a_process_that_is_gone_exits_at_once() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    process = _cli("--profile", LLAMA_059, "--port", "0", "--parent-pid", str(gone.pid))
    stdout, _ = process.communicate(timeout=10)
    assert process.returncode == 0 and stdout == ""


def test_the_0523_profile_answers_with_the_real_servers_keys():
    """The simulator's 0.5.23 /server_info has exactly the keys a real 0.5.23 server returned."""
    real = json.loads(artefact("server_info.json"))
    sim = load_profile("qwen35-122b-a10b-4xrtx6000-0.5.23").server_info()
    assert set(sim) == set(real)
    assert set(sim["internal_states"][0]) == set(real["internal_states"][0])
    assert set(sim["internal_states"][0]["memory_usage"]) == set(real["internal_states"][0]["memory_usage"])
