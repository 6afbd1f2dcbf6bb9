"""The severity contract (docs/explain.md, "Severity: what each level promises"), over every rule
and every release.

- ERROR: the release refuses the command.
- WARNING: a value the command asked for is certainly changed, ignored or a no-op under the
  facts given: the finding carries the request and the value SGLang uses, and that value is the
  release's own (checked against what each release's post-init made of the stored commands).
- INFO: the rest; a cap that may or may not bind says its threshold.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from pytest_sglang.judge.explain import explain_launch
from pytest_sglang.judge.explain.findings import Explanation
from pytest_sglang.judge.explain.kb import load

sys.path.insert(0, str(Path(__file__).resolve().parent / "real_sglang"))

import postinit_differential as differential  # noqa: E402

KB = load()
KINDS = {rule.id: rule.kind for rule in KB.rules}
# Rules whose value is None itself (a backend cleared): a predicted None is their value, not "not known".
VALUE_NONE = {rule.id for rule in KB.rules if (rule.value or "").strip() == "None"}
DATA = json.loads(differential.DATA.read_text())
CASES = [(version, case) for version, release in DATA["releases"].items() for case in release["cases"]]
# The severity a rule file declares is the one used when SGLang decides by itself.
DECLARED = {"override": "info", "cap": "info", "noop": "warning", "error": "error", "deprecated": "info", "unknown-flag": "error", "refused": "error", "unknown-arch": "error"}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def violations(explanation: Explanation) -> list[str]:
    """What in an explanation breaks the contract, one line per finding."""
    out = []
    for f in explanation.findings:
        kind = KINDS.get(f.rule)
        if f.severity == "error" and kind not in ("error", "unknown-flag", "refused", "unknown-arch", None):
            out.append(f"{f.id}: an error from a {kind} rule")
        if f.severity != "warning":
            if kind == "cap" and f.severity == "info" and _number(f.requested) and f.predicted is None and f.effective is None and f.predicted_range is None:
                if not (f.threshold or "known once the server runs" in f.summary):
                    out.append(f"{f.id}: a cap that may bind says no threshold: {f.summary}")
            continue
        if f.status in ("undecided", "contradicted"):
            out.append(f"{f.id}: a warning that is {f.status}")
        elif kind == "override":
            if f.requested is None or (f.predicted is None and f.rule not in VALUE_NONE) or f.requested == f.predicted:
                out.append(f"{f.id}: a warning override without a changed request ({f.requested!r} -> {f.predicted!r})")
        elif kind == "cap":
            shown = f.effective if _number(f.effective) else f.predicted if _number(f.predicted) else (f.predicted_range or (None, None))[1]
            if not (_number(f.requested) and _number(shown) and shown < f.requested):
                out.append(f"{f.id}: a warning cap that is not shown to bind ({f.requested!r}, {shown!r})")
        elif kind == "noop":
            if f.requested in (None, False):
                out.append(f"{f.id}: a warning no-op on a flag nobody gave")
    return out


def test_every_rule_declares_the_severity_of_its_kind():
    wrong = [(r.id, r.kind, r.severity) for r in KB.rules if DECLARED[r.kind] != r.severity]
    assert wrong == []


@pytest.mark.parametrize("version, case", CASES, ids=[case["name"] for _, case in CASES])
def test_every_warning_in_the_stored_commands_is_what_the_release_did(version, case):
    """Each stored command, explained for its release: the contract holds, every warning's value
    is the release's own, and every error is a command the release refused (or one refused
    after post-init, proven by source)."""
    explanation = differential.explain(case, version)
    assert violations(explanation) == []
    answer = case["answer"]
    for f in explanation.findings:
        if f.severity == "warning" and KINDS.get(f.rule) == "override" and "values" in answer and f.setting in answer["values"]:
            assert differential._same(f.predicted, answer["values"][f.setting]), f"{f.id}: {f.predicted!r} vs SGLang {answer['values'][f.setting]!r}"
        if f.severity == "error" and KINDS.get(f.rule) == "error" and differential.refuses_in_post_init(KB.by_id[f.rule]):
            assert "error" in answer, f"{f.id}: explain says SGLang {version} refuses; it accepted {differential.command_text(case)}"


@pytest.mark.parametrize("version", differential.versions())
def test_the_contract_holds_for_drawn_commands(version):
    """Commands drawn over every flag the rules read, on every simulated GPU and model family."""

    @settings(max_examples=12, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(differential.postinit_cases(version))
    def check(case: dict) -> None:
        explanation = differential.explain(case, version)
        assert violations(explanation) == [], differential.command_text(case)

    check()


LLAMA = str(differential.MODELS / "llama" / "config.json")


def test_a_cap_that_cannot_be_known_before_start_is_information_with_its_threshold():
    """Without the GPU's memory the KV pool is unknown: whether half of it caps 64 is too."""
    explanation = explain_launch(
        "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --max-running-requests 64",
        sm=90, gpus=1, sglang_version="0.5.16", model="LlamaForCausalLM",
    )  # fmt: skip
    [cap] = explanation.by_rule("capacity.kv-cap.v3")
    assert cap.severity == "info" and not cap.lint
    assert cap.title == "max_running_requests may be limited by the KV token capacity"
    assert cap.threshold == "binds only if the KV pool holds fewer than 128 tokens"
    assert explanation.warnings == []


def test_a_cap_the_pool_estimate_shows_cannot_bind_is_left_out():
    """One H100 holds hundreds of thousands of Llama 3.1 8B tokens: half of them never caps 64."""
    explanation = explain_launch(
        "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --max-running-requests 64",
        gpu="H100", gpus=1, sglang_version="0.5.16", model="LlamaForCausalLM",
    )  # fmt: skip
    assert explanation.by_rule("capacity.kv-cap.v3") == [] and explanation.warnings == []


def test_the_mamba_cap_of_a_pool_sized_from_the_request_is_left_out():
    """Without radix cache SGLang sizes the mamba pool from max_running_requests (one slot each):
    its cap equals the request and never binds (issue class 2, on every release that has it)."""
    for version in ("0.5.6", "0.5.12", "0.5.14", "0.5.16", "0.5.23"):
        explanation = explain_launch(
            "python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --tp 4 --max-running-requests 48 --disable-radix-cache",
            gpu="RTX PRO 6000", gpus=4, sglang_version=version,
        )  # fmt: skip
        assert [f.rule for f in explanation.findings if "mamba-cap" in f.rule] == [], version


def test_the_seed_candidate_command_alone_shows_the_mamba_cap_binding():
    """The seed case before deploying: the pool estimate puts the mamba cap below the 48 asked
    for on 4x RTX PRO 6000 (the running candidate reports 26)."""
    explanation = explain_launch(
        "python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --tp 4 --max-running-requests 48 "
        "--speculative-algorithm NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 "
        "--mamba-scheduler-strategy extra_buffer",
        gpu="RTX PRO 6000", gpus=4, gpu_memory="96GiB", sglang_version="0.5.12",
    )  # fmt: skip
    [cap] = explanation.by_rule("capacity.mamba-cap")
    assert cap.severity == "warning" and cap.predicted_range is not None
    low, high = cap.predicted_range
    assert low < high < 48 and high >= 26


def test_a_cap_that_always_binds_is_a_warning_without_any_pool_figure():
    """0.5.12 bounds a requested value by the KV estimate clamped to 2048..4096: 5000 per worker
    is always lowered, whatever the pool holds."""
    explanation = explain_launch("python -m sglang.launch_server --model-path m --max-running-requests 5000", sglang_version="0.5.12", model="LlamaForCausalLM")
    [cap] = explanation.by_rule("capacity.kv-cap")
    assert cap.severity == "warning" and cap.lint
    assert cap.predicted_range is None and cap.threshold is None


def test_a_cap_between_its_bounds_is_information_until_the_pool_is_known():
    """3000 per worker lies between the estimate's clamp bounds (2048..4096): whether it binds
    depends on the KV pool and the context length, both known only once the server runs."""
    explanation = explain_launch("python -m sglang.launch_server --model-path m --max-running-requests 3000", sglang_version="0.5.12", model="LlamaForCausalLM")
    [cap] = explanation.by_rule("capacity.kv-cap")
    assert cap.severity == "info" and not cap.lint and "known once the server runs" in cap.summary
    assert cap.title.startswith("max_running_requests may be limited")


def test_the_attention_dp_division_is_certain_and_a_warning():
    explanation = explain_launch(
        "python -m sglang.launch_server --model-path m --tp 4 --dp 4 --enable-dp-attention --max-running-requests 64", sglang_version="0.5.12", model="LlamaForCausalLM"
    )
    [cap] = explanation.by_rule("capacity.dp-division")
    assert (cap.severity, cap.predicted, cap.requested) == ("warning", 16, 64)


def test_an_override_of_what_nobody_asked_for_is_information():
    explanation = explain_launch("python -m sglang.launch_server --model-path zai-org/GLM-4.5-Air --tp 4", sglang_version="0.5.8", model="Glm4MoeForCausalLM")
    [overlap] = explanation.by_rule("capacity.glm4moe-overlap-0508")
    assert overlap.severity == "info" and overlap.predicted is True


def test_an_override_of_a_requested_value_is_a_warning():
    explanation = explain_launch(
        "python -m sglang.launch_server --model-path m --attention-backend fa3 --kv-cache-dtype fp8_e5m2", sglang_version="0.5.12", gpu="H100", model="LlamaForCausalLM"
    )
    [backend] = explanation.by_rule("attention.fa3-fp8-e5m2")
    assert (backend.severity, backend.requested, backend.predicted) == ("warning", "fa3", "triton")
