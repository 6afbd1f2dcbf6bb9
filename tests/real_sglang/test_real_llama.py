"""The plugin against a real SGLang 0.5.23 server on CPU: tiny Llama, tp 1 (run with --real-sglang).

One module per server, so each server runs only while its tests do."""

from __future__ import annotations

import shutil
from pathlib import Path

import requests
from harness import FIXTURE_SUITE

from pytest_sglang import connect, parse_capacity_line, parse_startup_line
from pytest_sglang.model.facts import SERVER_INFO_EXTRA_KEYS

ROOT = Path(__file__).resolve().parents[2]


def test_the_plugins_fixtures_resolve_against_the_real_server(pytester, real_llama):
    pytester.makepyfile(FIXTURE_SUITE)
    result = pytester.runpytest("--sglang-host", real_llama.url, "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"sglang: {real_llama.url}: SGLang 0.5.23, *tiny-llama (LlamaForCausalLM), GPU unknown, tp 1"])


def test_server_args_hold_every_key_the_real_server_returned(real_llama):
    raw = requests.get(f"{real_llama.url}/server_info", timeout=10).json()
    with connect(real_llama.url) as target:
        args = target.server_args
        assert target.version == "0.5.23"
        assert set(args.keys()) == set(raw) - SERVER_INFO_EXTRA_KEYS
        dumped = args.as_dict()
        differing = {key for key in set(raw) - SERVER_INFO_EXTRA_KEYS if dumped[key] != raw[key]}
        assert differing == set()


def test_effective_max_running_requests_is_the_schedulers_value_not_the_argument(real_llama):
    raw = requests.get(f"{real_llama.url}/server_info", timeout=10).json()
    scheduler_line = parse_capacity_line(real_llama.log())
    with connect(real_llama.url) as target:
        e = target.effective
    assert raw["max_running_requests"] is None  # not set at launch
    assert e.max_running_requests == raw["internal_states"][0]["effective_max_running_requests_per_dp"]
    assert e.max_running_requests == scheduler_line["max_running_requests"] == 2048
    assert e.requested("max_running_requests") is None
    assert e.max_total_num_tokens == scheduler_line["max_total_num_tokens"] == 8192


def test_cuda_graph_answers_match_cuda_graph_config(real_llama):
    raw = requests.get(f"{real_llama.url}/server_info", timeout=10).json()
    config = raw["internal_states"][0]["cuda_graph_config"]
    with connect(real_llama.url) as target:
        e = target.effective
    assert e.prefill_cuda_graph == (config["prefill"]["backend"] != "disabled")
    assert e.prefill_cuda_graph_backend == config["prefill"]["backend"]
    # 0.5.23 reports the decode batch sizes the worker captured: a CPU worker captures none,
    # whatever cuda_graph_config asks for, and every decode batch runs without a graph.
    state = raw["internal_states"][0]
    captured = state["decode_cuda_graph_bs"]
    assert e.decode_cuda_graph == bool(captured)
    assert e.decode_cuda_graph_max_bs == (max(captured) if captured else None)
    assert e.decode_eager_batches is (not captured or e.max_running_requests > max(captured))


def test_the_facts_behind_the_surprises_are_the_servers(real_llama):
    raw = requests.get(f"{real_llama.url}/server_info", timeout=10).json()
    state = raw["internal_states"][0]
    with connect(real_llama.url) as target:
        e = target.effective
    assert e.page_size == state["page_size"] and e.mixed_chunk == state["enable_mixed_chunk"]
    assert e.shared_experts_fusion is not state["disable_shared_experts_fusion"]
    assert e.disaggregation_mode == state.get("disaggregation_mode", raw["disaggregation_mode"]) == "null"
    # The longest prompt the server reports is the TP worker's formula on its own figures.
    assert e.max_req_input_len == raw["max_req_input_len"] == min(e.context_len - 1, e.max_total_num_tokens - 1) - 5


def test_the_runs_own_startup_line_parses_to_the_values_of_server_info(real_llama):
    raw = requests.get(f"{real_llama.url}/server_info", timeout=10).json()
    log = real_llama.log()
    line = parse_startup_line(next(l for l in log.splitlines() if "server_args=" in l))
    assert line.complete and line.era == "dict"
    args = set(raw) - SERVER_INFO_EXTRA_KEYS
    assert set(line.fields) == args
    differing = {k for k in args if line.fields[k] != raw[k]}
    # /server_info redacts the watermark secrets; the log does not.
    assert differing <= {"watermark_key", "watermark_key_b", "watermark_config"}


def test_the_example_suite_runs_with_the_expected_skips_and_no_errors(pytester, real_llama):
    shutil.copytree(ROOT / "example_suite", pytester.path, dirs_exist_ok=True)
    result = pytester.runpytest("--sglang-host", real_llama.url, "-rA", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    # The real launch command, read with SGLang 0.5.23's own flag table, has nothing it would not read.
    result.stdout.fnmatch_lines(["PASSED*test_sglang_reads_every_flag_of_the_launch_command*"], consecutive=False)
    assert outcomes.get("errors", 0) == 0
    assert outcomes["skipped"] == 5
    result.stdout.fnmatch_lines(
        [
            f"SKIPPED*requires_gpus(4): the number of GPUs {real_llama.url} uses is unknown*",
            f"SKIPPED*requires_sm(120): the GPU architecture of {real_llama.url} is unknown: SGLang 0.5.23 reports no GPU model over HTTP and there is no host access*",
            f"SKIPPED*no logs for {real_llama.url}: give --sglang-logs*",
            "SKIPPED*serving benchmarks are off: run with --sglang-bench=smoke or --sglang-bench=full*",
        ],
        consecutive=False,
    )


def test_the_real_log_read_through_the_file_source_agrees_with_http(pytester, real_llama):
    pytester.makepyfile(
        """
        def test_logs_agree_with_http(sglang_logs, effective, server_args, requested):
            assert sglang_logs.capacity["max_running_requests"] == effective.max_running_requests == 2048
            assert sglang_logs.capacity["max_total_num_tokens"] == effective.max_total_num_tokens
            line = sglang_logs.startup_line
            assert line.complete and line.era == "dict"
            http = server_args.as_dict()
            differing = {k for k, v in line.fields.items() if http.get(k) != v}
            assert differing <= {"watermark_key", "watermark_key_b", "watermark_config"}
            assert sglang_logs.ready
            assert requested["device"] == "cpu" and requested["max_total_tokens"] == 8192
        """
    )
    result = pytester.runpytest(
        "--sglang-host", real_llama.url, "--sglang-ssh", "local", "--sglang-logs", f"file:{real_llama.log_path}", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)


def test_explain_finds_nothing_false_on_a_real_server(real_llama):
    from real_explain import assert_no_false_findings

    assert_no_false_findings(real_llama)
