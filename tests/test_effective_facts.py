"""The effective facts behind the surprises users report (docs/effective.md, docs/surprises.md):
the longest prompt, the page size and who set it, shared-experts fusion, mixed chunking, the
decode CUDA graph per PD role and the batches above it, each read from what the server reports
and, where a release does not report one, predicted from the figures it does."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import artefact

from pytest_sglang import Facts, normalise
from pytest_sglang.model import knowledge
from pytest_sglang.model.config import Effective
from pytest_sglang.model.facts import Endpoint, HostFacts
from pytest_sglang.parse.redact import redact_mapping

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _info() -> dict:
    return json.loads(artefact("server_info.json"))  # a real SGLang 0.5.23 server (CPU)


def _effective(info: dict, *, log: list[str] | None = None, models: dict | None = None) -> Effective:
    endpoints = {"server_info": Endpoint(path="/server_info", status=200, body=redact_mapping(info))}
    if models is not None:
        endpoints["models"] = Endpoint(path="/v1/models", status=200, body=models)
    host = HostFacts(log_lines=log, log_source="file:/var/log/sglang.log") if log else None
    return normalise(Facts(target="t", endpoints=endpoints, host=host)).effective


def _set(info: dict, **values) -> dict:  # type: ignore[no-untyped-def]
    """The value as both the top level and the scheduler's copy report it."""
    for body in (info, info["internal_states"][0]):
        body.update(copy.deepcopy(values))
    return info


def test_every_effective_value_is_in_the_manual():
    table = (DOCS / "effective.md").read_text()
    documented = {name for row in re.findall(r"^\| ([^|]+) \|", table, re.M) for name in re.findall(r"`([a-z_]+)`", row)}
    missing = sorted(set(Effective.model_fields) - {"provenance", "target"} - documented)
    assert missing == [], f"add these to the table in docs/effective.md: {missing}"


# ---- the longest prompt -------------------------------------------------------------------------
def test_the_reported_input_limit_wins():
    e = _effective(_info())
    assert (e.max_req_input_len, e.source_of("max_req_input_len")) == (2042, "/server_info max_req_input_len")


def test_an_input_limit_not_reported_is_predicted_and_says_the_pool_caps_it():
    info = _info()
    del info["max_req_input_len"]
    models = {"data": [{"id": "m", "max_model_len": 131072}]}
    e = _effective(info, models=models)
    # The KV pool of 8192 tokens, not the context of 131072, decides the longest prompt.
    assert e.max_total_num_tokens == 8192 and e.context_len == 131072
    assert e.max_req_input_len == 8192 - 1 - 5
    assert e.source_of("max_req_input_len").startswith("predicted: min(context_len - 1, max_total_num_tokens - 1) - 5")
    assert "below context_len 131072: the KV pool (8192 tokens) caps it" in e.describe("max_req_input_len")


def test_no_input_limit_is_predicted_for_decode_context_parallelism():
    info = _set(_info(), dcp_size=2)
    del info["max_req_input_len"]
    e = _effective(info, models={"data": [{"id": "m", "max_model_len": 4096}]})
    assert e.max_req_input_len is None


@settings(max_examples=200, deadline=None)
@given(context=st.integers(7, 2**40), pool=st.integers(7, 2**40))
def test_the_predicted_limit_is_the_tp_workers_and_never_above_either_figure(context, pool):
    limit = knowledge.max_req_input_len(context, pool)
    assert limit == min(context - 1, pool - 1) - 5
    assert limit < context and limit < pool


# ---- page size ----------------------------------------------------------------------------------
def test_a_page_size_sglang_changed_says_so_beside_what_was_asked():
    info = _set(_info(), page_size=128)
    info["launch_command"] = "python -m sglang.launch_server --model-path m --attention-backend fa4 --page-size 16"
    e = _effective(info)
    assert (e.page_size, e.requested("page_size")) == (128, 16)
    assert e.source_of("page_size") == "/server_info internal_states[0].page_size"
    assert "SGLang changed it at start-up from the 16 asked for" in e.describe("page_size")


def test_a_page_size_kept_as_asked_has_no_note():
    info = _set(_info(), page_size=64)
    info["launch_command"] = "python -m sglang.launch_server --model-path m --page-size 64"
    e = _effective(info)
    assert e.page_size == 64 and e.provenance["page_size"].note is None


# ---- the decode CUDA graph per PD role ----------------------------------------------------------
def test_a_prefill_server_that_captured_no_decode_graph_says_its_role():
    info = _info()
    state = info["internal_states"][0]
    state.update(disaggregation_mode="prefill", decode_cuda_graph_bs=[])
    e = _effective(info)
    assert (e.disaggregation_mode, e.decode_cuda_graph, e.decode_cuda_graph_max_bs, e.decode_eager_batches) == ("prefill", False, None, True)
    assert "on a PD prefill server" in e.describe("decode_cuda_graph")


def test_a_decode_server_reports_the_batch_sizes_it_captured():
    info = _info()
    info["internal_states"][0].update(disaggregation_mode="decode", decode_cuda_graph_bs=[1, 2, 4, 8, 16, 24])
    e = _effective(info)
    # 24 captured, though the arguments ask for up to 32: the worker never captures more than it admits.
    assert (e.decode_cuda_graph, e.decode_cuda_graph_max_bs) == (True, 24)
    assert e.decode_eager_batches is True
    assert e.source_of("decode_eager_batches") == "effective.max_running_requests 2048 against decode_cuda_graph_max_bs 24: batches of 25-2048 requests run without a graph"


def test_a_graph_that_covers_every_admitted_batch():
    info = _info()
    info["internal_states"][0].update(decode_cuda_graph_bs=[1, 2, 4, 8], effective_max_running_requests_per_dp=8)
    e = _effective(info)
    assert (e.max_running_requests, e.decode_cuda_graph_max_bs, e.decode_eager_batches) == (8, 8, False)


# ---- shared-experts fusion, mixed chunking ------------------------------------------------------
def test_shared_experts_fusion_turned_off_by_the_model_loader_is_read_from_its_log_line():
    line = "[2026-12-01 10:00:00 TP0] Only Deepseek V3/R1 on NV-platform with capability >= 80 can use shared experts fusion optimization. Shared experts fusion optimization is disabled."
    e = _effective(_info(), log=[line])
    assert e.shared_experts_fusion is False
    assert "Shared experts fusion optimization is disabled" in e.source_of("shared_experts_fusion")


def test_shared_experts_fusion_turned_off_in_post_init_is_not_what_was_asked():
    info = _set(_info(), disable_shared_experts_fusion=True, moe_runner_backend="flashinfer_trtllm")
    info["launch_command"] = "python -m sglang.launch_server --model-path m --moe-runner-backend flashinfer_trtllm"
    e = _effective(info)
    assert (e.shared_experts_fusion, e.requested("shared_experts_fusion")) == (False, None)  # nobody asked: SGLang chose
    assert e.source_of("shared_experts_fusion") == "/server_info internal_states[0].disable_shared_experts_fusion = True"


def test_mixed_chunk_turned_off_says_it_was_asked_for():
    info = _set(_info(), enable_mixed_chunk=False, speculative_algorithm="EAGLE")
    info["launch_command"] = "python -m sglang.launch_server --model-path m --enable-mixed-chunk --speculative-algorithm EAGLE"
    e = _effective(info)
    assert (e.mixed_chunk, e.requested("mixed_chunk")) == (False, True)
    assert "SGLang changed it at start-up from the True asked for" in e.describe("mixed_chunk")


@pytest.mark.parametrize("bad", ["many", -3, 1.5, [1, "x"]])
def test_a_damaged_report_is_passed_over_never_believed(bad):
    info = _info()
    info["internal_states"][0].update(decode_cuda_graph_bs=bad, page_size=bad)
    info["page_size"] = bad
    e = _effective(info)
    assert e.page_size is None
    assert (e.decode_cuda_graph, e.decode_cuda_graph_max_bs) == (True, 32)  # the arguments, as before 0.5.23
