"""What SGLang's pool sizing makes of a deployment before it starts: the KV pool's token
capacity, the mamba state cache, the context length and the running-request cap.

SGLang sizes these at start-up from the GPU memory left after the weights load
(``rest = free after loading - free before loading x (1 - mem_fraction_static)``), the model's
layer shapes and the post-init values. Each release's sizing code is transcribed, step by step,
in ``pytest_sglang/model/knowledge/pools.toml`` (which era computes how is data); the shape
arithmetic that every release shares (bytes per token of the KV cache per attention kind, the
mamba state per request) is here. Given the free memory before loading and the weights' size
exactly, every figure is exact (``low == high``) and equals the release's own
(``tests/real_sglang/pool_differential.py``). Without them, both are estimated (the card's memory
less the CUDA context and distributed state; the weights from the config's shapes, or a
checkpoint's published size) and each figure is a range; a figure that needs a fact nobody gave
is ``unknown``, with why.
"""

from __future__ import annotations

import math
import struct
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

from packaging.version import Version

from pytest_sglang.judge.explain.expr import Expression, Scope, Unknown, compile_expression, is_unknown
from pytest_sglang.judge.explain.situation import Situation
from pytest_sglang.model import knowledge
from pytest_sglang.model.versions import nearest_release, within

GIB = 1 << 30
_DATA = Path(__file__).resolve().parents[2] / "model" / "knowledge" / "pools.toml"
# The names an era must define, and the figure each becomes.
FIGURES = {"tokens": "max_total_num_tokens", "running": "max_running_requests", "mamba": "mamba_cache_size"}
_DTYPE_BYTES = {"bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2, "float32": 4, "fp32": 4, "fp8_e4m3": 1, "fp8_e5m2": 1}
_EAGLE_LIKE = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")


@dataclass(frozen=True)
class Bound:
    """A figure lies in ``[low, high]``; ``why`` says how it was computed and what is uncertain."""

    low: float
    high: float
    why: str

    @property
    def exact(self) -> bool:
        return self.low == self.high


@dataclass(frozen=True)
class PoolEstimate:
    """The figures the pool sizing gives (keys as the rules read them: ``max_total_num_tokens``,
    ``mamba_cache_size``, ``context_len``, ``max_running_requests``, the release's resulting
    value per attention-DP worker, ``max_req_input_len``, the longest prompt), the ones that cannot be known before start, and the start-up
    error the sizing raises when every estimate says it does."""

    figures: dict[str, Bound]
    unknown: dict[str, str]
    refusal: str | None = None
    release: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Era:
    since: Version
    until: Version | None
    source: str
    texts: tuple[tuple[str, str], ...]

    @property
    def steps(self) -> tuple[tuple[str, Expression], ...]:
        return _compiled(self.texts)


@lru_cache(maxsize=32)
def _compiled(texts: tuple[tuple[str, str], ...]) -> tuple[tuple[str, Expression], ...]:
    """An era's steps, compiled the first time it is used (an explanation needs one era)."""
    return tuple((name, compile_expression(text)) for name, text in texts)


@dataclass(frozen=True)
class _Data:
    eras: tuple[_Era, ...]
    overhead_gib: dict[int, tuple[float, float]]
    weights_tolerance: tuple[float, float]
    lists: dict[str, frozenset[str]]
    page_size: dict[str, Any]
    dsa_auto_kept: tuple[Version, Version]  # releases whose post-init keeps a DSA model's KV dtype auto below SM100
    mamba_whole_tp: tuple[frozenset[str], Version, Version]  # architectures whose mamba state splits over all of TP, and when


@lru_cache(maxsize=1)
def _data() -> _Data:
    raw = tomllib.loads(_DATA.read_text(encoding="utf-8"))
    eras = []
    for era in raw["era"]:
        missing = [n for n in (*FIGURES, "refusal") if n not in era["steps"]]
        if missing:
            raise ValueError(f"{_DATA.name}: the era since {era['since']} does not define {', '.join(missing)}")
        eras.append(_Era(Version(era["since"]), Version(era["until"]) if "until" in era else None, era["source"], tuple(era["steps"].items())))
    estimate = raw["estimate"]
    overhead = {int(k): (float(v[0]), float(v[1])) for k, v in estimate["overhead_gib"].items()}
    low, high = estimate["weights_tolerance"]
    lists = {name: frozenset(values) for name, values in raw["lists"].items()}
    kept, whole = raw["dsa_kv_dtype"]["auto_kept"], raw["mamba_whole_tp"]
    return _Data(
        tuple(eras), overhead, (float(low), float(high)), lists, raw["page_size"], (Version(kept["since"]), Version(kept["until"])),
        (frozenset(whole["archs"]), Version(whole["since"]), Version(whole["until"])),
    )  # fmt: skip


def _era(version: Version) -> _Era | None:
    """The era that holds the release (in the order of releases: 0.5.6 < 0.5.6.post1 < 0.5.7);
    None for a release no era holds: its sizing is not transcribed (the add command widens an
    era to a new release only where that release's own sizing agrees with it)."""
    return next((era for era in _data().eras if within(version, era.since, era.until)), None)


class _Scope(Scope):
    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = dict(values)

    def lookup(self, name: str) -> Any:
        return self.values[name] if name in self.values else Unknown(frozenset({name}))


# ---- the facts the sizing reads --------------------------------------------------------------


def _text(config: Mapping[str, Any]) -> Mapping[str, Any]:
    nested = config.get("text_config")
    return nested if isinstance(nested, Mapping) else config


def _int(text: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = text.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _context_len(text: Mapping[str, Any]) -> int | None:
    """SGLang's get_context_length: the first length key, times the rope scaling factor unless
    the scaling keeps the original length (llama3, or an original_max_position_embeddings)."""
    rope = text.get("rope_scaling")
    factor: Any = 1
    if isinstance(rope, Mapping) and rope:
        factor = rope.get("factor", 1)
        if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
            factor = 1
    if not isinstance(factor, (int, float)) or isinstance(factor, bool):
        return None
    for key in ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings"):
        value = text.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return int(factor * value)
    return 2048


@dataclass
class _Facts:
    values: dict[str, Any]
    why: dict[str, str]  # input name -> why it is not known
    known: Mapping[str, Any] = field(default_factory=dict)  # post-init values given, by ServerArgs name
    # Inputs post-init decides with no rule to predict it: (value at the low end, at the high end, why).
    alternatives: dict[str, tuple[Any, Any, str]] = field(default_factory=dict)

    def missing(self, name: str, why: str) -> None:
        self.values.pop(name, None)
        self.why[name] = why


def _unsized(config: Mapping[str, Any], situation: Situation, known: Mapping[str, Any]) -> str | None:
    """Why the pools of this model are not sized here: the attention kinds whose pools split
    differently (sliding-window and chunked attention, DeepSeek V4's compressed KV, Kimi's
    linear attention, a MiniMax sparse indexer, a NemotronH layer pattern)."""
    text = _text(config)
    layer_types = text.get("layer_types")
    swa = (
        (text.get("sliding_window") is not None and text.get("use_sliding_window") is not False)
        or text.get("attention_chunk_size") is not None
        or (isinstance(layer_types, list) and any(t in ("sliding_attention", "chunked_attention") for t in layer_types))
    )
    disabled = known.get("disable_hybrid_swa_memory", situation.effective_value("disable_hybrid_swa_memory"))
    if swa and disabled is not True:
        return "the model has sliding-window (or chunked) attention layers, whose pool SGLang may size apart from the full-attention one (--swa-full-tokens-ratio); that is not sized here"
    for key, kind in (("compress_ratios", "DeepSeek V4's compressed KV"), ("linear_attn_config", "linear-attention (KDA) states"),
                      ("sparse_attention_config", "a sparse-attention indexer"), ("hybrid_override_pattern", "a hybrid layer pattern")):  # fmt: skip
        if key in text or key in config:
            return f"the model's pools hold {kind}, which are not sized here"
    return None


def _model_kind(text: Mapping[str, Any]) -> tuple[bool, bool, bool]:
    """(hybrid, gated delta net, Mamba2) as SGLang's mambaish config classes see the model."""
    model_type = str(text.get("model_type", ""))
    layer_types = text.get("layer_types")
    gdn = "linear_num_value_heads" in text or (isinstance(layer_types, list) and "linear_attention" in layer_types)
    mamba2 = model_type in ("falcon_h1", "nemotron_h") or "mamba_d_ssm" in text or "mamba_n_heads" in text
    return gdn or mamba2, gdn, mamba2 and not gdn


def _gdn_layers(text: Mapping[str, Any]) -> tuple[int, int] | None:
    """(full-attention layers, linear-attention layers) of a gated-delta-net model."""
    layers = _int(text, "num_hidden_layers")
    if layers is None:
        return None
    layer_types = text.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        full = sum(1 for t in layer_types if t == "full_attention")
        return full, len(layer_types) - full
    interval = _int(text, "full_attention_interval")
    if interval is None or interval < 1:
        return None
    full = sum(1 for i in range(layers) if (i + 1) % interval == 0)
    return full, layers - full


def _mamba_dtype_bytes(text: Mapping[str, Any], env: Mapping[str, str], requested: Any) -> tuple[int, int]:
    """(conv, ssm) bytes per element of the mamba state: SGLANG_MAMBA_CONV_DTYPE (bfloat16);
    SGLANG_MAMBA_SSM_DTYPE, else --mamba-ssm-dtype, else the config's mamba_ssm_dtype, else float32."""
    conv = _DTYPE_BYTES.get(str(env.get("SGLANG_MAMBA_CONV_DTYPE", "bfloat16")).lower(), 2)
    ssm_name = env.get("SGLANG_MAMBA_SSM_DTYPE") or (requested if isinstance(requested, str) else None) or text.get("mamba_ssm_dtype") or "float32"
    return conv, _DTYPE_BYTES.get(str(ssm_name).lower(), 4)


def _mamba_per_req(text: Mapping[str, Any], gdn: bool, attn_tp: int, dtypes: tuple[int, int]) -> tuple[int | None, str]:
    """Bytes of mamba state one request slot holds on one attention-TP rank (conv and ssm states,
    every mamba layer), as the release's Mamba2StateShape.create computes them (``attn_tp``: the
    ranks the state is split over; pools.toml [mamba_whole_tp] says where that is all of TP)."""
    conv_bytes, ssm_bytes = dtypes
    if gdn:
        split = _gdn_layers(text)
        v_heads, v_dim = _int(text, "linear_num_value_heads"), _int(text, "linear_value_head_dim")
        shape = (
            v_heads * v_dim if v_heads is not None and v_dim is not None else None,
            _int(text, "linear_num_key_heads"), v_heads, v_dim, _int(text, "linear_key_head_dim"),
            _int(text, "linear_conv_kernel_dim"), split[1] if split else None,
        )  # fmt: skip
        missing = "the config.json has no linear-attention shapes (linear_num_value_heads, ...)"
    else:
        hidden, ssm, expand = _int(text, "hidden_size"), _int(text, "mamba_d_ssm"), text.get("mamba_expand")
        intermediate = ssm if ssm is not None else int(expand * hidden) if hidden is not None and isinstance(expand, (int, float)) else None
        shape = (
            intermediate, _int(text, "mamba_n_groups"), _int(text, "mamba_n_heads"), _int(text, "mamba_d_head"),
            _int(text, "mamba_d_state"), _int(text, "mamba_d_conv"), _int(text, "num_hidden_layers"),
        )  # fmt: skip
        missing = "the config.json has no Mamba2 shapes (mamba_n_heads, mamba_d_state, ...)"
    if any(x is None for x in shape):
        return None, missing
    intermediate_, groups, heads, head_dim, state, kernel, layers = (int(x) for x in shape)  # type: ignore[arg-type]
    if groups % attn_tp:
        groups += attn_tp - groups  # the release replicates the groups a head shard needs
    conv_dim = intermediate_ + 2 * groups * state
    if conv_dim % attn_tp or heads % attn_tp:
        return None, f"the mamba state does not split evenly over {attn_tp} attention-TP ranks (SGLang refuses)"
    conv = conv_dim // attn_tp * (kernel - 1)
    temporal = heads // attn_tp * head_dim * state
    return (conv * conv_bytes + temporal * ssm_bytes) * layers, "conv + ssm states of every mamba layer"


def _kv_bytes(kv_dtype: Any, text: Mapping[str, Any], config: Mapping[str, Any]) -> int | None:
    if kv_dtype in (None, "auto"):
        quant = config.get("quantization_config")
        algo = quant.get("kv_cache_quant_algo") if isinstance(quant, Mapping) else None
        if isinstance(algo, str) and algo.upper() == "FP8":
            return 1
        dtype = str(text.get("torch_dtype") or text.get("dtype") or config.get("torch_dtype") or config.get("dtype") or "bfloat16")
        return 2 if dtype in ("bfloat16", "float16", "float32") else _DTYPE_BYTES.get(dtype)
    return _DTYPE_BYTES.get(str(kv_dtype))


def _value(situation: Situation, name: str, facts: _Facts, *, default: Any = None, key: str | None = None) -> Any:
    """A post-init value as the rules predict it (as ``known`` says, when it has it); unknown
    when the command leaves it unresolved."""
    value = facts.known[name] if name in facts.known else situation.effective_value(name)
    if is_unknown(value):
        facts.missing(key or name, f"{name} is not known ({', '.join(sorted(value.needs))})")
        return None
    return default if value is None else value


def _gather(situation: Situation, config: Mapping[str, Any], release: Version, known: Mapping[str, Any]) -> _Facts:
    facts = _Facts({}, {}, known)
    text = _text(config)
    v = facts.values
    env = situation.launch.env if situation.launch is not None else {}
    tp = _value(situation, "tp_size", facts, default=1)
    dp = _value(situation, "dp_size", facts, default=1)
    dp_attention = bool(_value(situation, "enable_dp_attention", facts, default=False))
    attn_dp_size = _value(situation, "attn_dp_size", facts) if release >= Version("0.5.22") else None
    attn_dp_size = attn_dp_size if isinstance(attn_dp_size, int) else 1
    v.update(dp_size=dp, enable_dp_attention=dp_attention, attn_dp_size=attn_dp_size, tokens_per_gib=GIB)
    attn_dp = max(attn_dp_size, dp if dp_attention and dp else 1) if isinstance(dp, int) else 1
    attn_tp = max((tp or 1) // max(attn_dp, 1), 1) if isinstance(tp, int) else 1
    for name, key, default in (
        ("mem_fraction_static", "mem_fraction_static", None), ("max_running_requests", "max_running_requests", None),
        ("max_total_tokens", "max_total_tokens", None), ("max_mamba_cache_size", "max_mamba_cache_size", None),
        ("mamba_full_memory_ratio", "mamba_full_memory_ratio", 0.9), ("page_size", "page_size", None),
        ("disable_radix_cache", "disable_radix_cache", False), ("disable_overlap_schedule", "disable_overlap_schedule", False),
        ("speculative_num_draft_tokens", "draft_tokens", None), ("speculative_num_steps", "num_steps", None),
        ("speculative_eagle_topk", "topk", None),
    ):  # fmt: skip
        v[key] = _value(situation, name, facts, default=default, key=key)
    if v.get("mem_fraction_static") is None and "mem_fraction_static" not in facts.why:
        facts.missing("mem_fraction_static", "mem_fraction_static is chosen at start-up and no rule predicts it here")
    strategy_field = "mamba_radix_cache_strategy" if release >= Version("0.5.14") else "mamba_scheduler_strategy"
    v["mamba_strategy"] = _value(situation, strategy_field, facts, default="no_buffer", key="mamba_strategy")
    if v.get("mamba_strategy") == "auto" and not v.get("disable_radix_cache") and _model_kind(_text(config))[0]:
        # Post-init resolves auto for a hybrid model; no rule decides it here: either way.
        why = f"SGLang resolves --{strategy_field.replace('_', '-')} auto at start-up (extra_buffer or no_buffer) and no rule decides it for this model"
        facts.alternatives["mamba_strategy"] = ("extra_buffer", "no_buffer", why)
    algorithm = _value(situation, "speculative_algorithm", facts, key="speculative")
    v["speculative"] = algorithm is not None
    v["eagle"] = algorithm in _EAGLE_LIKE
    if algorithm in ("DFLASH", "DSPARK"):  # the draft's own KV cost joins the cell, from its config
        facts.missing("attn_layers", f"a {algorithm} draft keeps its KV in the target's pool at a cost its own config.json sets, which is not sized here")
    # Context length: --context-length, else the model's.
    requested_context = _value(situation, "context_length", facts, key="context_len")
    context = requested_context or _context_len(text)
    if context is None:
        facts.missing("context_len", "the config.json gives no usable context length")
    else:
        v["context_len"] = context
    # The KV cache's shape.
    hybrid, gdn, mamba2 = _model_kind(text)
    v.update(hybrid=hybrid, gdn=gdn, mamba2=mamba2)
    layers = _int(text, "num_hidden_layers")
    if hybrid and gdn:
        split = _gdn_layers(text)
        layers = split[0] if split else None
    if layers is None:
        facts.missing("attn_layers", "the config.json gives no layer count (num_hidden_layers)")
    elif "attn_layers" not in facts.why:
        v["attn_layers"] = layers
    kv_lora, rope = _int(text, "kv_lora_rank"), _int(text, "qk_rope_head_dim")
    v["mla"] = kv_lora is not None
    v["dsa"] = text.get("index_topk") is not None
    if kv_lora is not None:
        v["cell_mla"] = kv_lora + (rope or 0)
        v["cell_mla_fp8"] = kv_lora + kv_lora // 128 * 4 + (rope or 0) * 2
        index_dim = _int(text, "index_head_dim") or 128
        v["dsa_index"] = index_dim + index_dim // 128 * 4
    heads = _int(text, "num_attention_heads")
    kv_heads = _int(text, "num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num") or heads
    head_dim = _int(text, "head_dim") or (_int(text, "hidden_size") // heads if heads and _int(text, "hidden_size") else None)  # type: ignore[operator]
    if kv_heads is None or head_dim is None:
        if kv_lora is None:
            facts.missing("cell_mha", "the config.json gives no attention heads (num_key_value_heads, head_dim)")
    else:
        v["cell_mha"] = max(1, kv_heads // attn_tp) * 2 * head_dim
    kv_dtype = _value(situation, "kv_cache_dtype", facts, default="auto", key="kv_bytes")
    v["kv_fp8_e4m3"] = kv_dtype == "fp8_e4m3"
    kv_bytes = _kv_bytes(kv_dtype, text, config) if "kv_bytes" not in facts.why else None
    if kv_bytes is None and "kv_bytes" not in facts.why:
        facts.missing("kv_bytes", f"the KV cache dtype {kv_dtype!r} is not sized here")
    elif kv_bytes is not None:
        v["kv_bytes"] = kv_bytes
        # Post-init may turn a DSA model's auto into fp8 or bf16: unless the release reported its
        # value, or is one whose post-init the rules transcribe for it (an auto left is the model's dtype).
        kept = within(release, *_data().dsa_auto_kept)
        if v["dsa"] and kv_dtype in (None, "auto") and "kv_cache_dtype" not in facts.known and not kept:
            why = "SGLang picks the KV cache dtype of a DSA model at start-up (fp8_e4m3 or bfloat16) and no rule decides it here"
            facts.alternatives["kv_bytes"] = (2, 1, why)
            facts.alternatives["kv_fp8_e4m3"] = (False, True, why)
    _page_size(situation, facts)
    _dsa_layout(situation, facts, release)
    if hybrid:
        archs, since, until = _data().mamba_whole_tp
        state_tp = max(tp or 1, 1) if (config.get("architectures") or [None])[0] in archs and within(release, since, until) and isinstance(tp, int) else attn_tp
        per_req, why = _mamba_per_req(text, gdn, state_tp, _mamba_dtype_bytes(text, env, _value(situation, "mamba_ssm_dtype", facts)))
        if per_req is None:
            facts.missing("mamba_per_req", why)
        else:
            v["mamba_per_req"] = per_req
    multimodal = situation.model.get("multimodal")
    v["multimodal"] = bool(multimodal.value) if multimodal is not None and multimodal.value is not None else ("vision_config" in config or "audio_config" in config)
    v["vlm_cache_mb"] = _env_int(env, "SGLANG_VLM_CACHE_SIZE_MB", 100)
    transport = _value(situation, "mm_feature_transport", facts)
    v["mm_gpu_cache_mb"] = _env_int(env, "SGLANG_MM_FEATURE_CACHE_MB", 1024) if transport in ("cuda_ipc", "cuda_vmm") else 0
    _draft_layers(situation, config, facts, algorithm)
    v["_attn_tp"], v["_attn_dp"] = attn_tp, attn_dp
    return facts


def _dsa_layout(situation: Situation, facts: _Facts, release: Version) -> None:
    """``dsa_trtllm`` / ``dsa_tilelang``: a DSA model's attention kernels that keep the raw MLA
    KV layout (no fp8 scales in the cell): trtllm for prefill or decode; tilelang for both."""
    v = facts.values
    v["dsa_trtllm"] = v["dsa_tilelang"] = False
    if not (v.get("dsa") and v.get("kv_fp8_e4m3") or "kv_fp8_e4m3" in facts.alternatives):
        return
    prefix = "dsa" if release >= Version("0.5.13") else "nsa"
    names = (f"{prefix}_prefill_backend", f"{prefix}_decode_backend")
    backends = [facts.known[n] if n in facts.known else situation.effective_value(n) for n in names]
    if any(b is None or is_unknown(b) for b in backends):
        why = "a DSA model's fp8 KV layout follows the DSA kernels SGLang picks at start-up, which no rule decides here"
        facts.alternatives["dsa_trtllm"] = (False, True, why)
        return
    v["dsa_trtllm"] = "trtllm" in backends
    v["dsa_tilelang"] = backends[0] == backends[1] == "tilelang"


def _page_size(situation: Situation, facts: _Facts) -> None:
    """The page size the pool is aligned to: post-init's, as the rules predict it; else what the
    attention backend forces (pools.toml [page_size]); else 1 once the backend is known, and
    either end of the backends' sizes when it is not."""
    v = facts.values
    table = _data().page_size
    page = v.get("page_size")
    backend = facts.known.get("attention_backend") if "attention_backend" in facts.known else situation.effective_value("attention_backend")
    decode = facts.known.get("decode_attention_backend") if "decode_attention_backend" in facts.known else situation.effective_value("decode_attention_backend")
    if "page_size" in facts.known and page is not None:
        return
    forced = [table["backends"][b] for b in (backend, decode) if isinstance(b, str) and b in table["backends"]]
    allowed = [table["allowed"].get(b) for b in (backend, decode) if isinstance(b, str) and b in table["backends"]]
    if v.get("dsa"):  # a DSA model runs paged at 64 on CUDA, whatever was asked
        v["page_size"] = table["dsa"]
    elif forced:
        ok = page is not None and all(a is None or page in a for a in allowed)
        v["page_size"] = page if ok else forced[0]
    elif page is None and (backend is None or is_unknown(backend)):
        v["page_size"] = 1
        facts.alternatives["page_size"] = (max(table["backends"].values()), 1, "the page size follows the attention backend SGLang picks at start-up, which no rule decides here")
    elif page is None:
        v["page_size"] = 1


def _draft_layers(situation: Situation, config: Mapping[str, Any], facts: _Facts, algorithm: Any) -> None:
    """``draft_path_set`` and ``draft_layers``: whether post-init gives the speculative draft a
    model path, and the layers the draft's KV cache holds as the runner counts them (its
    draft-mode config: ``num_nextn_predict_layers``, 1 for the architectures whose MTP head is
    one layer, else its layer count), for the eras that size the draft's KV with the target's."""
    v = facts.values
    lists = _data().lists
    arch = (config.get("architectures") or [None])[0]
    model_path = situation.launch.requested.get("model_path") if situation.launch is not None else None
    if "speculative_draft_model_path" in facts.known:
        draft_path = facts.known["speculative_draft_model_path"]
    else:
        draft_path = situation.effective_value("speculative_draft_model_path")
        if is_unknown(draft_path):
            draft_path = None
        if draft_path is None and algorithm in _EAGLE_LIKE and arch in lists["draft_path_is_target_archs"]:
            draft_path = model_path  # post-init: the target checkpoint carries the MTP head
    v["draft_path_set"] = bool(draft_path)
    text = _text(config)
    target_nextn = _int(text, "num_nextn_predict_layers")
    v["target_nextn_layers"] = target_nextn
    if "eagle_draft_num_layers" in facts.known:  # as the runner counted them
        v["draft_layers"], v["draft_path_set"] = facts.known["eagle_draft_num_layers"], True
        return
    if algorithm not in _EAGLE_LIKE:
        v["draft_layers"] = None
    elif draft_path and draft_path != model_path:
        facts.missing("draft_layers", "the speculative draft's layer count (its config.json) is not known")
    else:  # the target checkpoint, read as a draft
        if arch in lists["draft_single_layer_archs"]:
            v["draft_layers"] = 1
        elif target_nextn is not None:
            v["draft_layers"] = target_nextn
        else:
            layers = _int(text, "num_hidden_layers")
            v["draft_layers"] = layers if draft_path else None


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    try:
        return int(env.get(name, default))
    except (TypeError, ValueError):
        return default


# ---- the estimate ----------------------------------------------------------------------------


def release_of(situation: Situation) -> Version | None:
    """The release whose sizing applies: the situation's own where the knowledge base holds it
    (a post release too), else the known release it is read as (a development build: the
    release before its number)."""
    version = situation.version
    if version is None:
        return None
    releases = [str(r) for r in situation.kb.releases]
    return Version(nearest_release(version, releases))


def estimate_pools(
    situation: Situation,
    *,
    pre_load_free_bytes: int | None = None,
    weights_bytes: int | None = None,
    known: Mapping[str, Any] | None = None,
) -> PoolEstimate:
    """The pool sizing's figures for a situation whose rules have been evaluated (the effective
    values post-init gives are what the rules predicted). ``pre_load_free_bytes`` (free memory per
    GPU before the weights load) and ``weights_bytes`` (what loading takes per GPU) make every
    figure exact; without them they are estimated. ``known``: post-init values known otherwise
    (a running server's, or a release's own), by ServerArgs name, and
    ``eagle_draft_num_layers``; they replace the rules' predictions."""
    release = release_of(situation)
    names = ("max_total_num_tokens", "max_running_requests", "mamba_cache_size", "context_len", "max_req_input_len")
    if release is None:
        return PoolEstimate({}, {n: "the SGLang version is unknown: each release sizes its pools its own way" for n in names})
    era = _era(release)
    if era is None:
        why = f"SGLang {release}'s pool sizing is not transcribed yet (its own sizing agrees with no era of the knowledge base)"
        return PoolEstimate({}, {n: why for n in names}, release=str(release))
    config_fact = situation.model.get("config")
    config = config_fact.value if config_fact is not None and isinstance(config_fact.value, Mapping) else None
    if config is None:
        why = "the model's config.json is not given (its layer and head counts size the KV cache)"
        return PoolEstimate({}, {n: why for n in names}, release=str(release))
    unsized = _unsized(config, situation, known or {})
    if unsized is not None:
        return PoolEstimate({}, {n: unsized for n in names}, release=str(release))
    facts = _gather(situation, config, release, known or {})
    notes: list[str] = []
    unknown: dict[str, str] = {}
    if situation.launch is not None and situation.launch.env.get("SGLANG_ENABLE_POST_CAPTURE_KV_SIZING") not in (None, "", "0", "false", "False"):
        why = "SGLANG_ENABLE_POST_CAPTURE_KV_SIZING resizes the KV pool after CUDA graph capture, from the memory it then measures"
        unknown.update({"max_total_num_tokens": why, "max_running_requests": why})
    memory = _memory(situation, config, facts, release, pre_load_free_bytes, weights_bytes)
    if isinstance(memory, str):  # a figure that needs the memory says so; one that does not is computed
        facts.why["pre_gib"] = facts.why["post_gib"] = memory
        low_values, high_values = dict(facts.values), dict(facts.values)
        memory_why = ""
    else:
        (pre_low, post_low), (pre_high, post_high), memory_why = memory
        low_values = {**facts.values, "pre_gib": pre_low, "post_gib": post_low}
        high_values = {**facts.values, "pre_gib": pre_high, "post_gib": post_high}
    for name, (low_value, high_value, _) in facts.alternatives.items():
        low_values[name], high_values[name] = low_value, high_value
    open_why = "; ".join(dict.fromkeys(why for _, _, why in facts.alternatives.values()))
    given = pre_load_free_bytes is not None and weights_bytes is not None
    low, high = _run(era, low_values), _run(era, high_values)
    figures: dict[str, Bound] = {}
    context = facts.values.get("context_len")
    if context is not None:
        source = "--context-length" if situation.effective_value("context_length") else "the model's config.json"
        figures["context_len"] = Bound(context, context, f"{context} from {source}")
    else:
        unknown["context_len"] = facts.why.get("context_len", "unknown")
    hybrid = facts.values.get("hybrid")
    for step, name in FIGURES.items():
        if name in unknown:
            continue
        if step == "mamba" and hybrid is False:
            continue
        a, b = low.get(step), high.get(step)
        if isinstance(a, Unknown) or isinstance(b, Unknown) or a is None or b is None:
            missing = (a.needs if isinstance(a, Unknown) else frozenset()) | (b.needs if isinstance(b, Unknown) else frozenset())
            unknown[name] = _why_unknown(missing, facts)
            continue
        lo, hi = max(min(a, b), 0), max(a, b, 0)  # below zero SGLang refuses to start (the refusal, or a note)
        figures[name] = Bound(lo, hi, _why(lo == hi, given, memory_why, open_why, era, release))
    _input_limit(situation, figures, unknown)
    refusal = None
    ra, rb = low.get("refusal"), high.get("refusal")
    if isinstance(ra, str) and isinstance(rb, str):
        refusal = rb  # raised at the best memory figure too: certain
    elif isinstance(ra, str) and not is_unknown(rb):
        notes.append(f"SGLang {release} refuses to start if the memory left for the KV cache is at the low end of the estimate ({ra})")
    return PoolEstimate(figures, unknown, refusal, str(release), notes)


def _input_limit(situation: Situation, figures: dict[str, Bound], unknown: dict[str, str]) -> None:
    """The longest prompt the server accepts, as every release's TP worker computes it:
    ``min(context_len - 1, KV pool - 1) - 5`` (a pool smaller than the context length caps it)."""
    context, tokens = figures.get("context_len"), figures.get("max_total_num_tokens")
    for name, why in knowledge.MAX_REQ_INPUT_LEN_EXCEPTIONS.items():
        value = situation.effective_value(name)
        if not is_unknown(value) and value not in (None, 0, 1):
            unknown["max_req_input_len"] = f"{why} ({name}) changes the TP worker's input limit, which is not sized here"
            return
    if context is None or tokens is None:
        unknown["max_req_input_len"] = unknown.get("context_len") or unknown.get("max_total_num_tokens") or "the KV pool is not known"
        return
    low, high = (knowledge.max_req_input_len(context.low, t) for t in (tokens.low, tokens.high))
    pool_binds = tokens.low < context.low
    why = f"min(context_len - 1, max_total_num_tokens - 1) - 5; {'the KV pool' if pool_binds else 'the context length'} decides it" if low == high or not pool_binds else "min(context_len - 1, max_total_num_tokens - 1) - 5; the KV pool decides it where it is below the context length"
    figures["max_req_input_len"] = Bound(low, high, why)


def _run(era: _Era, values: dict[str, Any]) -> dict[str, Any]:
    scope = _Scope(values)
    for name, expression in era.steps:
        scope.values[name] = expression.evaluate(scope)
    return scope.values


def _why_unknown(needs: frozenset[str], facts: _Facts) -> str:
    reasons = [facts.why[n] for n in sorted(needs) if n in facts.why]
    if not reasons:
        reasons = [f"{', '.join(sorted(n for n in needs if not n.startswith('a value')))} is not known"]
    return "; ".join(dict.fromkeys(reasons))


def _why(exact: bool, given: bool, memory_why: str, open_why: str, era: _Era, release: Version) -> str:
    how = f"computed by SGLang {release}'s pool sizing ({era.source.split(' (')[0]})"
    if exact:
        return f"{how} from the given memory figures" if given else f"{how}; the same at both ends of the estimate ({memory_why})"
    return f"{how}; {'; '.join(w for w in (memory_why if not given else 'memory as given', open_why) if w)}"


def _reading(free_bytes: float, world: int) -> float:
    """A free-memory reading in GiB as get_available_gpu_memory returns it: with several GPUs in
    the TP group it is a minimum all-reduced as a float32 tensor, so the bytes are rounded to
    float32 first."""
    if world > 1:
        free_bytes = struct.unpack("f", struct.pack("f", free_bytes))[0]
    return free_bytes / GIB


def _memory(
    situation: Situation, config: Mapping[str, Any], facts: _Facts, release: Version, pre: int | None, weights: int | None
) -> tuple[tuple[float, float], tuple[float, float], str] | str:
    """((pre, post) at the low end, (pre, post) at the high end, why) in GiB, or why the memory
    is not known."""
    tp, pp = situation.effective_value("tp_size"), situation.effective_value("pp_size")
    world = (tp if isinstance(tp, int) else 1) * (pp if isinstance(pp, int) else 1)
    if pre is not None and weights is not None:
        exact = (_reading(pre, world), _reading(pre - weights, world))
        return exact, exact, "from the given memory figures"
    memory = situation.gpu.get("memory_mib")
    if pre is None and (memory is None or not isinstance(memory.value, (int, float))):
        return "the GPU memory is not known (give --gpu-memory, or a GPU name sold with one size)"
    data = _data()
    if pre is not None:
        pre_range = (pre / GIB, pre / GIB)
        pre_why = "free memory before loading as given"
    else:
        total = memory.value * (1 << 20) / GIB  # type: ignore[union-attr]
        count = max(world, 1)
        band = data.overhead_gib[min((k for k in data.overhead_gib if k >= count), default=max(data.overhead_gib))]
        pre_range = (total - band[1], total - band[0])
        pre_why = f"free memory before loading {pre_range[0]:.1f}-{pre_range[1]:.1f} GiB ({total:.1f} GiB less {band[0]}-{band[1]} GiB of CUDA context and distributed state)"
    if weights is not None:
        w_range = (weights / GIB, weights / GIB)
        w_why = "weights as given"
    else:
        estimated = _weights(situation, config, facts, release)
        if isinstance(estimated, str):
            return estimated
        w_range, w_why = estimated
    low = (pre_range[0], pre_range[0] - w_range[1])
    high = (pre_range[1], pre_range[1] - w_range[0])
    return low, high, f"{pre_why}; {w_why}"


# ---- the weights, from the config's shapes ---------------------------------------------------


def _weights(situation: Situation, config: Mapping[str, Any], facts: _Facts, release: Version) -> tuple[tuple[float, float], str] | str:
    """The weights each GPU holds after loading (GiB range, why): the checkpoint's published size
    when the situation has it, else the parameters the config's shapes give, at the bytes per
    parameter of its dtype and quantization; split over TP as SGLang shards them (attention over
    the attention-TP group, the rest over TP)."""
    text = _text(config)
    shares = _parameters(text, config)
    if shares is None:
        return "the model's weights cannot be sized from its config.json (no hidden_size, layer or head counts)"
    attention, other, bytes_per = shares
    tp = situation.effective_value("tp_size")
    tp = tp if isinstance(tp, int) and tp > 0 else 1
    attn_tp = facts.values.get("_attn_tp", tp)
    per_gpu_params = attention / attn_tp + other / tp
    total_params = attention + other
    published = situation.model.get("weights_bytes")
    low_t, high_t = _data().weights_tolerance
    if published is not None and isinstance(published.value, (int, float)) and published.value > 0 and total_params > 0:
        per_gpu = published.value * per_gpu_params / total_params / GIB
        why = f"weights {per_gpu:.1f} GiB per GPU from the checkpoint's published size ({published.source})"
        return (per_gpu * low_t, per_gpu * high_t), why
    per_gpu = per_gpu_params * bytes_per / GIB
    why = f"weights about {per_gpu:.1f} GiB per GPU from the config.json's shapes ({total_params / 1e9:.1f}B parameters)"
    return (per_gpu * low_t, per_gpu * high_t), why


def _parameters(text: Mapping[str, Any], config: Mapping[str, Any]) -> tuple[float, float, float] | None:
    """(attention parameters, other parameters, bytes per parameter) of the language model."""
    hidden, layers, heads = _int(text, "hidden_size"), _int(text, "num_hidden_layers"), _int(text, "num_attention_heads")
    vocab = _int(text, "vocab_size") or 0
    if hidden is None or layers is None or heads is None:
        return None
    kv_heads = _int(text, "num_key_value_heads") or heads
    head_dim = _int(text, "head_dim") or hidden // heads
    kv_lora = _int(text, "kv_lora_rank")
    if kv_lora is not None:
        q_lora = _int(text, "q_lora_rank")
        nope, rope, v_dim = _int(text, "qk_nope_head_dim") or 128, _int(text, "qk_rope_head_dim") or 64, _int(text, "v_head_dim") or 128
        q = hidden * q_lora + q_lora * heads * (nope + rope) if q_lora else hidden * heads * (nope + rope)
        attention_layer = q + hidden * (kv_lora + rope) + kv_lora * heads * (nope + v_dim) + heads * v_dim * hidden
        index_heads = _int(text, "index_n_heads")
        if index_heads:
            index_dim = _int(text, "index_head_dim") or 128
            attention_layer += (q_lora or hidden) * index_heads * index_dim + hidden * index_dim + hidden * index_heads
    else:
        attention_layer = hidden * head_dim * (heads + 2 * kv_heads) + heads * head_dim * hidden
    hybrid, gdn, mamba2 = _model_kind(text)
    full_layers, linear_layers = (_gdn_layers(text) or (layers, 0)) if gdn else (layers, 0)
    attention = attention_layer * full_layers
    if gdn and linear_layers:
        v_heads, v_dim = _int(text, "linear_num_value_heads") or 0, _int(text, "linear_value_head_dim") or 0
        k_heads, k_dim = _int(text, "linear_num_key_heads") or 0, _int(text, "linear_key_head_dim") or 0
        projections = hidden * (2 * k_heads * k_dim + 2 * v_heads * v_dim + 2 * v_heads) + v_heads * v_dim * hidden
        attention += projections * linear_layers
    if mamba2:
        inner = _int(text, "mamba_d_ssm") or 2 * hidden
        n_heads, state, groups = _int(text, "mamba_n_heads") or 1, _int(text, "mamba_d_state") or 128, _int(text, "mamba_n_groups") or 1
        attention += (hidden * (2 * inner + 2 * groups * state + n_heads) + inner * hidden) * layers
    mlp = _mlp_parameters(text, hidden, layers)
    embeddings = vocab * hidden * (1 if text.get("tie_word_embeddings") or config.get("tie_word_embeddings") else 2)
    bytes_per = 1.0 if _quantized_8bit(config) else 2.0
    return float(attention), float(mlp + embeddings), bytes_per


def _mlp_parameters(text: Mapping[str, Any], hidden: int, layers: int) -> float:
    experts = _int(text, "num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
    dense = _int(text, "intermediate_size") or 4 * hidden
    if not experts or experts <= 1:
        return 3.0 * hidden * dense * layers
    moe_inter = _int(text, "moe_intermediate_size") or dense
    shared = (_int(text, "shared_expert_intermediate_size") or 0) + (_int(text, "n_shared_experts") or 0) * moe_inter
    dense_layers = _int(text, "first_k_dense_replace") or 0
    moe_layer = 3.0 * hidden * moe_inter * experts + 3.0 * hidden * shared + hidden * experts
    return dense_layers * 3.0 * hidden * dense + (layers - dense_layers) * moe_layer


def _quantized_8bit(config: Mapping[str, Any]) -> bool:
    quant = config.get("quantization_config")
    if not isinstance(quant, Mapping):
        return False
    method = str(quant.get("quant_method", "")).lower()
    return method in ("fp8", "fbgemm_fp8", "compressed-tensors", "modelopt") and "4" not in str(quant.get("quant_algo", ""))


def describe(bound: Bound) -> str:
    """``409389`` or ``380000-420000``: a figure as explain prints it."""
    if bound.exact:
        return f"{int(bound.low)}" if float(bound.low).is_integer() else f"{bound.low}"
    return f"{math.floor(bound.low)}-{math.ceil(bound.high)}"
