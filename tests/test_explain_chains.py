"""A setting several rules set in turn is reported once, at its final value, with each step.

SGLang 0.5.16 picks chunked_prefill_size from the GPU memory, then DP attention divides it by
dp_size: the server runs with the divided value, so explain must never print the first one as
what SGLang "makes it".
"""

from __future__ import annotations

import json
import subprocess
import sys

from pytest_sglang.judge.explain import explain_launch

DP_ATTENTION = "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --dp 8 --enable-dp-attention"


def _chunked(explanation):
    return [f for f in explanation.findings if f.setting == "chunked_prefill_size"]


def test_dp_attention_reports_the_divided_chunked_prefill_size_with_the_steps_that_made_it():
    plan = explain_launch(DP_ATTENTION, gpu="H100", gpus=8, sglang_version="0.5.16", model="DeepseekV3ForCausalLM")
    [finding] = _chunked(plan)
    assert finding.rule == "capacity.dp-attention-chunked"
    assert finding.predicted == 8192 // 8
    assert [(s["rule"], s["value"]) for s in finding.chain] == [("gpumem.chunked-prefill", 8192), ("capacity.dp-attention-chunked", 1024)]
    assert "SGLang makes it 1024" in finding.summary


def test_without_dp_attention_the_gpu_memory_value_stands_alone():
    plan = explain_launch(DP_ATTENTION.replace(" --enable-dp-attention", ""), gpu="H100", gpus=8, sglang_version="0.5.16", model="DeepseekV3ForCausalLM")
    [finding] = _chunked(plan)
    assert (finding.rule, finding.predicted, finding.chain) == ("gpumem.chunked-prefill", 8192, [])


def test_rules_that_agree_on_one_value_are_each_reported_and_are_no_chain():
    # 0.5.12: EAGLE with topk 4 turns the overlap schedule off in one place two rules describe.
    command = ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --speculative-algorithm EAGLE "
               "--speculative-num-steps 5 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8")
    plan = explain_launch(command, sm=90, sglang_version="0.5.12", model="LlamaForCausalLM")
    overlap = [f for f in plan.findings if f.setting == "disable_overlap_schedule"]
    assert {f.rule for f in overlap} == {"capacity.spec-topk-no-overlap", "spec.overlap-off-topk"}
    assert all(f.predicted is True and not f.chain for f in overlap)


def test_the_command_line_prints_the_final_value_and_the_steps_and_json_carries_them():
    args = [sys.executable, "-m", "pytest_sglang.cli.main", "explain", "--gpu", "H100", "--gpus", "8", "--sglang-version", "0.5.16",
            "--model", "DeepseekV3ForCausalLM", "--launch", DP_ATTENTION]
    text = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    assert "chunked_prefill_size: not requested, SGLang makes it 1024" in text
    assert "set in turn: 8192 [gpumem.chunked-prefill], then 1024 [capacity.dp-attention-chunked]" in text
    assert "SGLang makes it 8192" not in text
    data = json.loads(subprocess.run([*args, "--json"], capture_output=True, text=True, check=True).stdout)
    [finding] = [f for f in data["findings"] if f["setting"] == "chunked_prefill_size"]
    assert finding["predicted"] == 1024 and [s["value"] for s in finding["chain"]] == [8192, 1024]
