"""What SGLang does, as data: architecture lists and hardware gates the normaliser needs.

Each entry names the SGLang versions it was read from (see shared/sglang-facts.md).
"""

from __future__ import annotations

# configs/model_config.py multimodal_model_archs (0.5.12 :1495-1555), the members users meet most.
MULTIMODAL_ARCHS = frozenset(
    {
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "Qwen3VLForConditionalGeneration",
        "Qwen3VLMoeForConditionalGeneration",
        "Qwen2_5_VLForConditionalGeneration",
        "Qwen2VLForConditionalGeneration",
        "Gemma3ForConditionalGeneration",
        "Gemma4ForConditionalGeneration",
        "Llama4ForConditionalGeneration",
        "LlavaForConditionalGeneration",
        "MllamaForConditionalGeneration",
        "InternVLChatModel",
        "KimiVLForConditionalGeneration",
        "MiniCPMV",
        "MiniCPMO",
        "Glm4vForConditionalGeneration",
        "Glm4vMoeForConditionalGeneration",
        "Mistral3ForConditionalGeneration",
        "DeepseekVL2ForCausalLM",
        "Phi4MMForCausalLM",
    }
)

# Architectures with a mamba-like (linear attention / SSM) state cache.
HYBRID_ARCHS = frozenset(
    {
        "Qwen3NextForCausalLM",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "Qwen3_5ForCausalLM",
        "Qwen3_5MoeForCausalLM",
        "FalconH1ForCausalLM",
        "NemotronHForCausalLM",
        "Lfm2ForCausalLM",
        "GraniteMoeHybridForCausalLM",
        "KimiLinearForCausalLM",
        "JambaForCausalLM",
        "MambaForCausalLM",
        "Mamba2ForCausalLM",
    }
)


def flashinfer_allreduce_fusion_runs_on(sm: int) -> bool:
    """The runtime gate (0.5.10-0.5.13 ``layers/communicator.py:158``; 0.5.14+ ``add_norm.py:144``):
    SM90 (``is_sm90_supported``) or SM10x (``is_sm100_supported``: major 10). Not SM11x, not SM12x."""
    return sm // 10 in (9, 10)


FLASHINFER_ALLREDUCE_FUSION_GATE = (
    "FlashInfer allreduce fusion runs only on SM90 and SM10x "
    "(a silent no-op elsewhere in SGLang 0.5.10-0.5.13, a start-up error from 0.5.14)"
)
