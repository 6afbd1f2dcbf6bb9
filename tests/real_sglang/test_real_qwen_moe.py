"""The plugin against a real SGLang 0.5.23 server on CPU: tiny Qwen3-MoE, tp 2 (run with --real-sglang)."""

from __future__ import annotations

import requests
from harness import FIXTURE_SUITE

from pytest_sglang import connect, parse_capacity_line


def test_the_tp2_qwen3_moe_server(pytester, real_qwen_moe_tp2):
    raw = requests.get(f"{real_qwen_moe_tp2.url}/server_info", timeout=10).json()
    with connect(real_qwen_moe_tp2.url) as target:
        e = target.effective
        assert target.model_info.architectures == ["Qwen3MoeForCausalLM"]
    assert e.tp_size == 2
    assert e.max_running_requests == raw["internal_states"][0]["effective_max_running_requests_per_dp"]
    assert e.max_running_requests == parse_capacity_line(real_qwen_moe_tp2.log())["max_running_requests"]
    assert e.is_multimodal is False and e.is_hybrid is False
    assert e.moe_runner_backend == raw["moe_runner_backend"]
    pytester.makepyfile(FIXTURE_SUITE)
    pytester.runpytest("--sglang-host", real_qwen_moe_tp2.url, "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_explain_finds_nothing_false_on_a_real_server(real_qwen_moe_tp2):
    from real_explain import assert_no_false_findings

    assert_no_false_findings(real_qwen_moe_tp2)
