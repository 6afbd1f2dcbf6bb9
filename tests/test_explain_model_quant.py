"""An unquantized checkpoint is a fact (``model.quant_method == 'none'``), so the rules that pick
a MoE runner for bf16 experts decide; a checkpoint whose quantization lives elsewhere (a ModelOpt
hf_quant_config.json) or a catalog copy that left it out stays unknown, never guessed 'none'."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_sglang.judge.explain import explain_launch
from pytest_sglang.judge.explain.situation import catalog_model, read_model

CONFIGS = Path(__file__).resolve().parent / "data" / "model-configs"
QWEN3_MOE = CONFIGS / "qwen3-moe" / "config.json"
LAUNCH = "python -m sglang.launch_server --model-path /models/q --tp 2"


def _quant(signals):  # type: ignore[no-untyped-def]
    return signals.get("quant_method", (None, None))[0]


def test_a_config_without_quantization_is_unquantized():
    config = json.loads(QWEN3_MOE.read_text())
    assert "quantization_config" not in config
    assert _quant(read_model(str(QWEN3_MOE))[1]) == "none"


def test_a_modelopt_checkpoint_beside_its_hf_quant_config_stays_unknown(tmp_path):
    shutil.copy(QWEN3_MOE, tmp_path / "config.json")
    (tmp_path / "hf_quant_config.json").write_text('{"quantization": {"quant_algo": "NVFP4"}}')
    assert _quant(read_model(str(tmp_path / "config.json"))[1]) is None


@pytest.mark.parametrize("mapping, expected", [({"architectures": ["X"], "quantization_config": {"quant_method": "fp8"}}, "fp8"),
                                               ({"architectures": ["X"], "compression_config": {"format": "int4"}}, None),
                                               ({"architectures": ["X"]}, "none")])
def test_what_a_config_says_of_its_quantization(mapping, expected):
    assert _quant(read_model(mapping)[1]) == expected


def test_a_partial_catalog_copy_never_reads_as_unquantized():
    # The catalog's GLM-4.7-FP8 entry is a reduced copy that leaves its quantization_config out.
    archs, signals, _ = catalog_model("zai-org/GLM-4.7-FP8")
    assert archs and _quant(signals) is None
    assert _quant(catalog_model("Qwen/Qwen3-30B-A3B")[1]) == "none"
    assert _quant(catalog_model("Qwen/Qwen3-30B-A3B-FP8")[1]) == "fp8"


def test_bf16_qwen3_moe_on_b200_gets_the_trtllm_runner_from_0_5_8_and_only_from_a_known_config(tmp_path):
    def runner(version, model):  # type: ignore[no-untyped-def]
        e = explain_launch(LAUNCH, gpu="B200", gpus=2, sglang_version=version, model=model)
        return [f.status for f in e.findings if f.rule.startswith("moe.runner-qwen3-sm100")], [f for f in e.findings if f.rule == "gap.model.config"]

    assert runner("0.5.8", str(QWEN3_MOE)) == (["predicted"], [])
    assert runner("0.5.7", str(QWEN3_MOE)) == ([], [])  # 0.5.6-0.5.7 pick it for fp8 or NVFP4 experts only
    shutil.copy(QWEN3_MOE, tmp_path / "config.json")
    (tmp_path / "hf_quant_config.json").write_text("{}")
    picked, gaps = runner("0.5.8", str(tmp_path / "config.json"))
    assert picked == [] and len(gaps) == 1 and gaps[0].status == "undecided"  # said undecided, not guessed
