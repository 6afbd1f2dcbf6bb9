"""What a team promoting Qwen3.5-122B-A10B on 4x RTX PRO 6000 Blackwell (SM120) checks
before a new server configuration goes live.

Run it against the bundled simulated deployments:

    pytest example_suite --sglang-host=sim://qwen35-122b-a10b-4xrtx6000-baseline    # all pass
    pytest example_suite --sglang-host=sim://qwen35-122b-a10b-4xrtx6000-candidate   # two fail

or against a live server: ``pytest example_suite --sglang-host=http://gpu1:30000``. The log-based
tests read the current run's log: simulated deployments carry one; for a live server give host
access (``--sglang-ssh root@gpu1 --sglang-logs journald:sglang.service``), or they are skipped.
"""

import pytest

ARCHITECTURE = "Qwen3_5MoeForConditionalGeneration"
SERVED_NAME = "qwen3.5-122b-a10b"
# The capacity the deployment was sized and load-tested for.
MIN_RUNNING_REQUESTS = 48


def test_serves_the_expected_architecture(model_info):
    assert model_info.architectures == [ARCHITECTURE]


def test_clients_address_the_served_model_name(server_args):
    assert server_args.served_model_name == SERVED_NAME


def test_tensor_parallel_across_four_gpus(server_args):
    assert server_args.tp_size == 4


@pytest.mark.requires_gpus(4)
def test_every_gpu_is_used(effective):
    assert effective.tp_size * (effective.pp_size or 1) == effective.gpu_count


def test_effective_running_requests_meet_the_sizing(effective):
    # The effective value, not the argument: SGLang can cap it at start-up (KV or mamba state cache).
    assert effective.max_running_requests >= MIN_RUNNING_REQUESTS


def test_prefill_cuda_graph_is_on(effective):
    # Piecewise (<= 0.5.13) or prefill (0.5.14+) CUDA graph: SGLang turns it off silently for some models.
    assert effective.prefill_cuda_graph is True


def test_decode_cuda_graph_covers_every_running_request(effective):
    # Batches above the captured decode graph run without one (eager), slower at full load.
    assert effective.decode_eager_batches is False, effective.describe("decode_eager_batches")


@pytest.mark.requires_sm(120)
def test_flashinfer_allreduce_fusion_is_not_in_effect_on_sm120(effective):
    # The fusion kernel runs only on SM90/SM10x: on SM120 the flag changes nothing but memory.
    assert effective.flashinfer_allreduce_fusion is False


def test_kv_cache_holds_a_full_context(effective):
    assert effective.max_total_num_tokens >= effective.context_len


def test_prefix_cache_is_on(server_args):
    assert server_args.disable_radix_cache is not True


def test_metrics_are_exported(server_args):
    assert server_args.enable_metrics is True


def test_the_start_up_log_says_what_the_server_reports(sglang_logs, server_args):
    # Read from the current run's log, never a time window that may have missed the restart.
    startup = sglang_logs.startup_line
    assert startup is not None and startup.complete
    assert startup.fields["tp_size"] == server_args.tp_size
    assert startup.fields["model_path"] == server_args.model_path


def test_the_launch_uses_no_deprecated_flag(sglang_logs):
    # SGLang's words for it: "'--flag' is deprecated and will be removed in a future release."
    assert sglang_logs.search(r"'--[\w-]+' is deprecated") == []


def test_sglang_reads_every_flag_of_the_launch_command(requested):
    # Read with the flag table of the server's own SGLang release: a flag it does not know, an
    # ambiguous abbreviation or a deprecated spelling is a flag that may not do what was meant.
    assert requested.problems == []
    assert requested.unknown == {}
    assert requested.deprecated == {}


def test_48_concurrent_streams_start_without_queueing(sglang_bench):
    # The sizing promises 48 concurrent requests, each answered promptly. Skipped unless the run
    # asks for benchmarks (--sglang-bench=smoke or full); a client-side bottleneck makes the
    # result inconclusive (skipped, with the reason), never a pass or a fail.
    result = sglang_bench.run(concurrency=[48], requests=96, input_len=256, output_len=64, repeats=1)
    sglang_bench.expect(result, "p99 ttft <= 250 ms", level=48)
