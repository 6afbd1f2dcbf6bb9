"""sim:// targets through the plugin: the bundled deployments, the example suite, markers, auth."""

from __future__ import annotations

import shutil

import pytest
import requests
from support import ROOT

BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"
NEW = "sim://qwen35-122b-a10b-4xrtx6000-0.5.23"
LLAMA = "sim://llama31-8b-1xh100-0.5.9"


@pytest.fixture
def example_suite(pytester):
    shutil.copytree(ROOT / "example_suite", pytester.path, dirs_exist_ok=True)
    return pytester


@pytest.mark.parametrize("host", [BASELINE, NEW])
def test_the_example_suite_passes_on_the_good_deployments(example_suite, host):
    result = example_suite.runpytest("--sglang-host", host, "-p", "no:cacheprovider")
    # The serving benchmark in the suite runs only when asked (--sglang-bench).
    result.assert_outcomes(passed=14, skipped=1)


def test_the_example_suite_fails_the_candidate_on_capacity_and_cuda_graph(example_suite):
    result = example_suite.runpytest("--sglang-host", CANDIDATE, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=12, failed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*FAILED*test_effective_running_requests_meet_the_sizing*",
            "*FAILED*test_prefill_cuda_graph_is_on*",
        ],
        consecutive=False,
    )
    result.stdout.fnmatch_lines(
        [
            "E       assert 26 >= 48",
            "*SGLang values read by this test*",
            CANDIDATE,
            "  effective.max_running_requests = 26",
            "      from /server_info internal_states[[]0[]].effective_max_running_requests_per_dp",
            f"      requested 48: launch command --max-running-requests, simulator profile {CANDIDATE[6:]}",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "E       assert False is True",
            "*SGLang values read by this test*",
            CANDIDATE,
            "  effective.prefill_cuda_graph = False",
            "      from /server_info internal_states[[]0[]].disable_piecewise_cuda_graph = True",
            # SGLang turned it off; the launch command never asked.
            f"      requested nothing: the launch command leaves SGLang's default, simulator profile {CANDIDATE[6:]}",
        ]
    )


def test_one_session_runs_the_suite_against_every_host(example_suite):
    result = example_suite.runpytest("--sglang-host", BASELINE, "--sglang-host", CANDIDATE, "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=26, failed=2, skipped=2)
    result.stdout.fnmatch_lines(
        [
            f"sglang: {BASELINE}: SGLang 0.5.12, Qwen/Qwen3.5-122B-A10B (Qwen3_5MoeForConditionalGeneration), 4x NVIDIA RTX PRO 6000 Blackwell Server Edition (SM120), tp 4",
            f"sglang: {CANDIDATE}: SGLang 0.5.12, *",
        ]
    )


def test_the_simulator_is_started_on_loopback_and_stopped_after_the_session(pytester, tmp_path):
    record = tmp_path / "url"
    pytester.makepyfile(
        f"""
        def test_url(sglang):
            assert sglang.url.startswith("http://127.0.0.1:")
            open({str(record)!r}, "w").write(sglang.url)
        """
    )
    pytester.runpytest("--sglang-host", LLAMA).assert_outcomes(passed=1)
    url = record.read_text()
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{url}/health", timeout=2)


MARKED = """
import pytest

@pytest.mark.requires_sm(120)
def test_sm120():
    pass

@pytest.mark.requires_sm(">=90")
def test_hopper_or_newer():
    pass

@pytest.mark.requires_gpus(4)
def test_four_gpus():
    pass

@pytest.mark.requires_sglang(">=0.5.10")
def test_new_sglang():
    pass

@pytest.mark.requires_arch("Qwen3_5MoeForConditionalGeneration")
def test_qwen35():
    pass
"""


def test_markers_skip_with_the_host_and_the_value_found(pytester):
    pytester.makepyfile(MARKED)
    result = pytester.runpytest("--sglang-host", LLAMA, "-rs", "--strict-markers")
    result.assert_outcomes(passed=1, skipped=4)
    result.stdout.fnmatch_lines(
        [
            f"SKIPPED*requires_sm(120): {LLAMA} has SM90 (9.0, simulator profile llama31-8b-1xh100-0.5.9 compute_cap 9.0)",
            f"SKIPPED*requires_gpus(4): {LLAMA} uses 1 GPU(s) (simulator profile llama31-8b-1xh100-0.5.9: the SGLang process uses GPU 0)",
            f"SKIPPED*requires_sglang(>=0.5.10): {LLAMA} runs SGLang 0.5.9",
            f"SKIPPED*requires_arch(Qwen3_5MoeForConditionalGeneration): {LLAMA} serves LlamaForCausalLM",
        ],
        consecutive=False,
    )


def test_markers_all_met_on_the_seed_deployment(pytester):
    pytester.makepyfile(MARKED)
    pytester.runpytest("--sglang-host", BASELINE, "--strict-markers").assert_outcomes(passed=5)


def test_an_unknown_gpu_skips_saying_how_to_give_it_and_sglang_sm_gives_it(pytester, canned, real_server_info, real_model_info):
    server = canned().serve_sglang(real_server_info, real_model_info)
    pytester.makepyfile(MARKED)
    result = pytester.runpytest("--sglang-host", server.url, "-rs", "-k", "test_sm120 or test_hopper")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        [
            f"SKIPPED*requires_sm(120): the GPU architecture of {server.url} is unknown: SGLang 0.5.23 reports no GPU model "
            "over HTTP and there is no host access: give --sglang-ssh USER@HOST (or local) so nvidia-smi can be read, or --sglang-sm=SM*"
        ]
    )
    result = pytester.runpytest("--sglang-host", server.url, "-rs", "-k", "test_sm120 or test_hopper", "--sglang-sm", "12.0")
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize(
    "mark, message",
    [
        ("requires_sm('blackwell')", "requires_sm('blackwell'): 'blackwell' is not a compute capability"),
        ("requires_gpus('four')", "requires_gpus('four'): give one whole number of GPUs (at least 1), e.g. requires_gpus(4)"),
        ("requires_gpus(0)", "requires_gpus(0): give one whole number of GPUs (at least 1)"),
        ("requires_sglang('newest')", "requires_sglang('newest') is not a version range"),
        ("requires_sglang('')", "requires_sglang(''): give one version range, e.g. requires_sglang('>=0.5.10')"),
        ("requires_sglang(0.5)", "requires_sglang(0.5): give one version range"),
        ("requires_arch()", "requires_arch(): give architecture names"),
    ],
)
def test_a_marker_with_odd_arguments_fails_that_test_in_one_line(pytester, mark, message):
    pytester.makepyfile(f"import pytest\n@pytest.mark.{mark}\ndef test_x():\n    pass\ndef test_y(sglang):\n    pass\n")
    result = pytester.runpytest("--sglang-host", LLAMA)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([f"*{message}*"])
    out = result.stdout.str()
    assert "Traceback" not in out and "During handling" not in out
    errors = out.split("short test summary info")[0]  # the summary line's width varies with the terminal
    assert errors.count(message) == 1  # once, not again after "During handling"


AUTHED = """
def test_reads(server_args, sglang):
    assert server_args.api_key == "<redacted>"
    assert sglang.client.get("/v1/models").status_code == 200
"""


@pytest.mark.parametrize(
    "args, outcome, message",
    [
        ([], {"passed": 1}, None),  # the documented sim://NAME?api_key=K reads with K
        (["--sglang-api-key", "sk-WRONG-1"], {"errors": 1}, "rejected the api key (401): the key given is wrong"),
        (["--sglang-api-key", "sk-sim-RIGHT"], {"passed": 1}, None),
    ],
    ids=["from-the-spec", "wrong", "right"],
)
def test_api_key_enforcement_against_the_simulator(pytester, args, outcome, message):
    pytester.makepyfile(AUTHED)
    result = pytester.runpytest("--sglang-host", f"{LLAMA}?api_key=sk-sim-RIGHT", *args, "-v")
    result.assert_outcomes(**outcome)
    if message:
        result.stdout.fnmatch_lines([f"*{message}*"])
    out = result.stdout.str()
    assert "sk-sim-RIGHT" not in out and "sk-WRONG-1" not in out


def test_the_simulators_generate_answer_has_the_real_servers_shape():
    import json

    from support import artefact

    from pytest_sglang import connect

    real = json.loads(artefact("generate_response.json").split("\nhttp=")[0])
    with connect(NEW) as target:
        answer = target.client.post("/generate", json={"text": "hello there", "sampling_params": {"max_new_tokens": 16}}).json()
    assert set(answer) == set(real)
    essential = {"id", "finish_reason", "prompt_tokens", "completion_tokens", "cached_tokens", "weight_version", "e2e_latency"}
    assert essential <= set(answer["meta_info"]) & set(real["meta_info"])
    assert answer["meta_info"]["finish_reason"] == {"type": "length", "length": 16}
    assert len(answer["output_ids"]) == 16


@pytest.mark.slow
def test_under_xdist_each_worker_reads_its_own_target(pytester):
    pytest.importorskip("xdist")
    pytester.makepyfile(
        """
        import os, pytest
        @pytest.mark.parametrize("i", range(6))
        def test_capacity(i, effective):
            assert effective.max_running_requests == 26
        """
    )
    result = pytester.runpytest_subprocess("--sglang-host", CANDIDATE, "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)
