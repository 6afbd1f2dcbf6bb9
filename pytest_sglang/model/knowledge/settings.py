"""Which reported fields are one SGLang setting, and which values SGLang sizes at start-up from
other settings: what a diff needs to know of SGLang to group its differences by change
(:func:`pytest_sglang.judge.baseline.compare.changes`). Field names differ by release (three eras
of CUDA graph fields, two of allreduce fusion); they are listed here, with the flag tables and
the explain rules, and nowhere else."""

from __future__ import annotations

# Effective fields the normaliser (pytest_sglang/normaliser/snapshot.py) reads from a field of another
# name or derives from another field: ``effective.NAME`` -> the names it comes from. One setting,
# reported in several places; a test checks this table against the sources the normaliser gives.
SAME_SETTING: dict[str, tuple[str, ...]] = {
    "sglang_version": ("version",),
    # capacity
    "max_running_requests": ("effective_max_running_requests_per_dp",),
    "max_running_requests_total": ("max_running_requests",),  # per data-parallel worker x dp_size
    "context_len": ("context_length", "max_model_len"),
    "mamba_cache_size": ("max_mamba_cache_size",),
    # CUDA graphs, three eras of fields (0.5.14+: one cuda_graph_config for both phases)
    "decode_cuda_graph": ("disable_cuda_graph", "cuda_graph_config", "decode_cuda_graph_bs"),
    "decode_cuda_graph_max_bs": ("cuda_graph_max_bs", "cuda_graph_bs", "cuda_graph_config", "decode_cuda_graph_bs"),
    # whether batches above the decode graph's range run eager: the graph against the request cap
    "decode_eager_batches": ("decode_cuda_graph", "max_running_requests", "decode_cuda_graph_max_bs"),
    # on/off fields named the other way round, or by their flag
    "shared_experts_fusion": ("disable_shared_experts_fusion",),
    "mixed_chunk": ("enable_mixed_chunk",),
    "prefill_cuda_graph": ("disable_piecewise_cuda_graph", "enable_piecewise_cuda_graph", "cuda_graph_config"),
    "prefill_cuda_graph_backend": ("prefill_cuda_graph",),  # the backend of the on/off field
    # allreduce fusion: what was asked (the era's field), then whether it runs on this GPU
    "flashinfer_allreduce_fusion_requested": ("enable_flashinfer_allreduce_fusion", "flashinfer_allreduce_fusion_backend"),
    "flashinfer_allreduce_fusion": ("flashinfer_allreduce_fusion_requested",),
    # speculative decoding: the algorithm's parameters
    "speculative_num_draft_tokens": ("speculative_algorithm",),
    "speculative_num_steps": ("speculative_algorithm",),
    "speculative_eagle_topk": ("speculative_algorithm",),
    "speculative_draft_model_path": ("speculative_algorithm",),
    # model and GPUs
    "is_multimodal": ("has_image_understanding", "has_audio_understanding", "architectures"),
    "is_hybrid": ("architectures", "mamba_cache_size"),
    "gpu_name": ("gpu_devices",),
    "gpu_count": ("gpu_devices",),
    "sm": ("gpu_devices",),
}

# Values SGLang sizes at start-up from other settings, where no explain rule says so: NAME -> the
# settings it is computed from (SGLang's model runner sizes the KV and mamba pools from the memory
# mem_fraction_static leaves; server_args picks the default CUDA graph batch sizes by whether
# speculative decoding is on).
SIZED_FROM: dict[str, tuple[str, ...]] = {
    "max_total_num_tokens": ("mem_fraction_static", "max_total_tokens", "kv_cache_dtype", "page_size"),
    "mamba_cache_size": ("mem_fraction_static", "mamba_full_memory_ratio", "mamba_ssm_dtype"),
    "max_req_input_len": ("max_total_num_tokens", "context_length"),
    "cuda_graph_bs": ("speculative_algorithm", "cuda_graph_max_bs", "disable_cuda_graph_padding"),
}
