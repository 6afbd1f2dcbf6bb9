"""Predictions proven by execution: ``explain_launch`` against each SGLang release's own post-init.

Hypothesis writes launch commands over the flags the knowledge base's rules read (``arg.X``,
``requested.X``, through the derived values too), with values that make their conditions true
and false (the literals the rules compare with, the members of the lists they test, numbers
either side of a bound), for a model of each family the rules name (``tests/data/model-configs``),
on a simulated GPU (SM80, SM89, SM90, SM100, SM120; 24 to 192 GB; 1 to 8 of them). Each release
0.5.5-0.5.23 runs its own ``prepare_server_args`` (post-init and its handlers; 0.5.19+ also the
resolution pipeline) on that GPU (``sglang_postinit.py``), and ``explain_launch(command,
sm=..., gpu=..., gpus=..., gpu_memory=..., sglang_version=RELEASE, model=config.json)`` must
agree with what it produced or raised:

- ``value``: every override or cap finding whose value is known (not a ``runtime.`` one, which
  is decided after post-init) names the value the release's field has;
- ``error``: every error finding is a command the release refuses (argparse's refusals, from the
  flag tables, and post-init's); an architecture the model registry lacks is refused when the
  weights load, after post-init, and is proven against the registry table instead (``at-load``);
- ``noop``: every no-op finding is a command the release accepts.

Reported, not failed on: ``miss`` (a setting a rule covers that the release changed with no
finding saying so) and ``refused`` (a refusal no rule predicts: the values of that command
cannot be compared), (fields the release changed that no rule covers are not compared). The
report counts, per release, the refused commands explain gave an ERROR for and those it did not.
About a quarter of the drawn commands are made to be refused (``REFUSALS``).
Disagreement classes are named by their mechanism (``value: RULE``, ``error: RULE``, ...);
``KNOWN`` lists the open ones, each with its reason, and is stored with the set.

    python tests/real_sglang/postinit_differential.py                    # 12 fresh commands per release
    python tests/real_sglang/postinit_differential.py --examples 30 0.5.23 0.5.12
    python tests/real_sglang/postinit_differential.py --store            # rewrite tests/data/sglang-postinit-differential.json
    python tests/real_sglang/postinit_differential.py --store-pinned     # rewrite only its pinned commands (PINNED)
    python tests/real_sglang/postinit_differential.py --check-stored     # the stored set against the current explain
    python tests/real_sglang/postinit_differential.py --docs             # rewrite the tables of docs/explain-proof.md
"""

from __future__ import annotations

import ast
import json
import math
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable

from packaging.version import Version

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = ROOT / "tests" / "data" / "sglang-postinit-differential.json"
MODELS = ROOT / "tests" / "data" / "model-configs"
DOCS = ROOT / "docs" / "explain-proof.md"
RUNNERS = ROOT / "pytest_sglang" / "judge" / "explain" / "run_in_sglang"  # what runs in the release's environment
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

STORED_PER_RELEASE = 15
PLACEHOLDER = "{models}"

# The GPUs drawn: compute capability -> the name nvidia-smi gives (SGLang reads the name for
# a few gates, e.g. the H20 allreduce exception), and memory sizes (MiB) drawn independently.
GPUS = {
    80: "NVIDIA A100-SXM4-80GB",
    89: "NVIDIA L40S",
    90: "NVIDIA H100 80GB HBM3",
    100: "NVIDIA B200",
    120: "NVIDIA RTX PRO 6000 Blackwell Server Edition",
}
MEMORY_MIB = [24564, 32607, 40960, 46068, 81559, 97887, 143771, 183359, 196608]
# AMD Instinct GPUs (a ROCm build of torch, simulated by sglang_postinit.py): the capability torch
# reports there (gfx942 9.4, gfx950 9.5) -> the name and gfx target.
AMD_GPUS = {94: ("AMD Instinct MI300X", "gfx942"), 95: ("AMD Instinct MI355X", "gfx950")}
GPUS.update({sm: name for sm, (name, _) in AMD_GPUS.items()})
DRAWN_SMS: list[int] = sorted(GPUS)  # --platform hip|cuda narrows the draw


def gpu_case(sm: int, memory_mib: int, count: int) -> dict:
    """A simulated GPU: an AMD one carries its platform and gfx target."""
    gpu: dict = {"sm": sm, "name": GPUS[sm], "memory_mib": memory_mib, "count": count}
    if sm in AMD_GPUS:
        gpu |= {"platform": "hip", "gfx": AMD_GPUS[sm][1]}
    return gpu
COUNTS = [1, 2, 4, 8]

# Model families (tests/data/model-configs/<family>/config.json), as the rules name them.
FAMILIES = {
    "llama": "dense (LlamaForCausalLM)",
    "qwen3-moe": "MoE (Qwen3MoeForCausalLM)",
    "qwen3.5-moe": "hybrid multimodal MoE (Qwen3_5MoeForConditionalGeneration)",
    "qwen3-next": "hybrid MoE (Qwen3NextForCausalLM)",
    "deepseek-v3": "MLA MoE (DeepseekV3ForCausalLM)",
    "deepseek-v3.2": "NSA MoE (DeepseekV32ForCausalLM)",
    "gemma3": "multimodal (Gemma3ForConditionalGeneration)",
    "llama4": "multimodal MoE (Llama4ForConditionalGeneration)",
    "falcon-h1": "mamba/SSM hybrid (FalconH1ForCausalLM)",
    "glm4-moe": "MoE (Glm4MoeForCausalLM)",
    "gpt-oss": "MXFP4 MoE, attention sinks (GptOssForCausalLM)",
    "deepseek-v4": "DeepSeek V4 (DeepseekV4ForCausalLM)",
}

# Flags the rules read that a post-init on this machine cannot take as given: they name files,
# nodes or packages that do not exist here (a LoRA adapter, a second node, a GGUF file, a
# disaggregation peer), or leave CUDA.
NOT_DRAWN = {
    "lora_paths", "enable_lora", "nnodes", "load_format", "dllm_algorithm", "disaggregation_mode", "device",
    "model_path", "speculative_draft_model_path", "cuda_graph_config", "cpu_offload_gb",
}  # fmt: skip
SPECULATIVE_NEEDS_DRAFT = {"EAGLE", "EAGLE3", "STANDALONE", "DFLASH"}
# Refused commands, drawn in about a quarter of the cases (None: none): a value not among the
# release's choices (another release's, when one has it), a value its int or float converter
# refuses, a flag given no value, unquoted JSON the shell split into words, and a model whose
# config.json names an architecture no registry has (``UNREGISTERED``).
REFUSALS = ("choice", "int", "float", "missing", "json", "arch")
REFUSAL_DRAW: list[str | None] = [None] * 16 + list(REFUSALS)
UNREGISTERED = "unregistered"  # tests/data/model-configs/unregistered: Llama with architectures ["NoSuchModelForCausalLM"]
BAD_INTS = ["{5,", "two", "1.5"]
# Values users write for the flags whose rule literals alone would be unrealistic (a bound
# plus or minus one, ``None``); the strings the rules compare with are drawn as well.
REALISTIC: dict[str, list[Any]] = {
    "tp_size": [1, 2, 4, 8], "dp_size": [1, 2, 4], "pp_size": [1, 2], "attn_cp_size": [1, 2], "attn_dp_size": [1, 2],
    "page_size": [1, 16, 64], "chunked_prefill_size": [2048, 8192, -1], "cuda_graph_max_bs": [8, 64, 256],
    "cuda_graph_max_bs_decode": [8, 64], "max_running_requests": [16, 48, 4096], "mem_fraction_static": [0.7, 0.85],
    "schedule_conservativeness": [0.5, 1.3], "speculative_num_steps": [1, 3, 5], "speculative_num_draft_tokens": [2, 4, 8],
    "speculative_eagle_topk": [1, 2, 4], "attention_backend": ["triton", "flashinfer", "fa3", "trtllm_mha", "trtllm_mla", "flashmla", "tokenspeed_mla"],
    "decode_attention_backend": ["triton", "fa3", "trtllm_mla", "tokenspeed_mla"], "prefill_attention_backend": ["triton", "fa3"],
    "kv_cache_dtype": ["auto", "fp8_e4m3", "fp8_e5m2"], "moe_runner_backend": ["auto", "triton", "flashinfer_trtllm", "flashinfer_cutlass", "cutlass"],
    "moe_a2a_backend": ["none", "deepep"], "mamba_scheduler_strategy": ["auto", "no_buffer", "extra_buffer"],
    "mamba_radix_cache_strategy": ["auto", "no_buffer", "extra_buffer"], "flashinfer_allreduce_fusion_backend": ["auto", "trtllm"],
    "quantization": ["fp8", "modelopt_fp4", "unquant"], "fp8_gemm_runner_backend": ["auto", "flashinfer_trtllm", "flashinfer_cutlass", "flashinfer_deepgemm"],
    "cuda_graph_backend_prefill": ["breakable", "disabled"], "cuda_graph_backend_decode": ["full", "disabled"],
}  # fmt: skip

# Commands stored for every release besides the drawn ones, on one GPU: each pins rules whose
# condition a random draw of at most three flags rarely meets (speculative decoding and the
# overlap schedule: the EAGLE shape, NGRAM, DFLASH, a hybrid model's extra_buffer with NEXTN), a
# plain GLM-4.5 Air, the MoE runner a family gets on its own, or a refusal of a flag the draw
# leaves out (``--disaggregation-mode``).
# A command with a flag or choice the release does not have is left out for that release.
PINNED_GPU = {"sm": 90, "name": GPUS[90], "memory_mib": 81559, "count": 4}
PINNED: list[tuple[str, list[str]]] = [
    ("llama", ["--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", f"{PLACEHOLDER}/llama"]),
    (
        "llama",
        ["--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", f"{PLACEHOLDER}/llama",
         "--speculative-num-steps", "3", "--speculative-eagle-topk", "4", "--speculative-num-draft-tokens", "8"],
    ),
    ("llama", ["--speculative-algorithm", "NGRAM"]),
    ("llama", ["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", f"{PLACEHOLDER}/llama"]),
    ("qwen3-next", ["--speculative-algorithm", "NEXTN", "--mamba-scheduler-strategy", "extra_buffer"]),
    ("glm4-moe", []),  # GLM-4.5 Air: 0.5.8 runs its mamba no_buffer check and loses the overlap schedule
    # AMD Instinct (ROCm): the aiter default and its 0.85 memory derate (a requested fraction too), MLA
    # by KV heads per GPU (16 at TP 8: aiter; 32 at TP 4: triton), the extra_buffer refusal of 0.5.14-0.5.15
    # on a hybrid model, 0.5.6's Llama 4 probe, and a quantization ROCm refuses.
    ("llama", [], gpu_case(94, 196592, 8)),
    ("llama", ["--mem-fraction-static", "0.9"], gpu_case(95, 294896, 8)),
    ("deepseek-v3", ["--tp-size", "8"], gpu_case(94, 196592, 8)),
    ("deepseek-v3", ["--tp-size", "4"], gpu_case(95, 294896, 8)),
    ("qwen3-next", ["--tp-size", "4"], gpu_case(94, 196592, 8)),
    ("llama4", [], gpu_case(95, 294896, 8)),
    ("llama", ["--quantization", "modelopt_fp4"], gpu_case(94, 196592, 8)),
    # NVIDIA: the attention backend of families with their own choice (gpt-oss, Llama 4 off Hopper,
    # Qwen3.5 and Falcon-H1 on SM10x, DeepSeek V3.2), gpt-oss's fa3 given up for an fp8_e5m2 KV cache,
    # and the GPU-memory chunked prefill size that DP attention divides again (the final value).
    ("gpt-oss", [], gpu_case(100, 183359, 8)),
    ("gpt-oss", ["--kv-cache-dtype", "fp8_e5m2"], gpu_case(90, 81559, 8)),
    ("llama4", [], gpu_case(120, 97887, 4)),
    ("qwen3.5-moe", ["--disable-radix-cache"], gpu_case(100, 183359, 8)),
    ("falcon-h1", [], gpu_case(100, 183359, 4)),
    ("deepseek-v3.2", [], gpu_case(90, 81559, 8)),
    ("deepseek-v3", ["--tp-size", "8", "--dp-size", "8", "--enable-dp-attention"], gpu_case(90, 81559, 8)),
    # Mixed chunked prefill under speculative decoding: off for every algorithm to 0.5.18, kept
    # for EAGLE (and EAGLE3, DFLASH) from 0.5.19, off for NGRAM in every release.
    ("llama", ["--enable-mixed-chunk", "--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", "{models}/llama"], gpu_case(90, 81559, 8)),
    ("llama", ["--enable-mixed-chunk", "--speculative-algorithm", "NGRAM"], gpu_case(90, 81559, 8)),
    # The MoE runner each family gets on B200 (and gpt-oss on SM120), which turns shared-experts
    # fusion off: Qwen3 MoE BF16 (0.5.8+) and FP8 (0.5.6+), GLM-4.5 NVFP4 (0.5.10+) and BF16
    # (0.5.15+), DeepSeek V3.2 (0.5.6+), gpt-oss MXFP4 (flashinfer_mxfp4).
    ("qwen3-moe", [], gpu_case(100, 183359, 8)),
    ("qwen3-moe", ["--quantization", "fp8"], gpu_case(100, 183359, 8)),
    ("glm4-moe", ["--quantization", "modelopt_fp4"], gpu_case(100, 183359, 8)),
    ("glm4-moe", [], gpu_case(100, 183359, 8)),
    ("deepseek-v3.2", [], gpu_case(100, 183359, 8)),
    ("gpt-oss", [], gpu_case(120, 97887, 4)),
    # Start-up refusals: DeepSeek V4 with NEXTN, and with EAGLE but no topk 1; tokenspeed_mla
    # without an FP8 KV cache (B200) and off Blackwell (H100); the decode radix cache on the
    # default transfer backend (0.5.11: NIXL only), on the fake one, and with speculative decoding.
    ("deepseek-v4", ["--speculative-algorithm", "NEXTN"], gpu_case(100, 183359, 8)),
    ("deepseek-v4", ["--speculative-algorithm", "EAGLE"], gpu_case(100, 183359, 8)),
    ("deepseek-v3", ["--attention-backend", "tokenspeed_mla"], gpu_case(100, 183359, 8)),
    ("deepseek-v3", ["--attention-backend", "tokenspeed_mla", "--kv-cache-dtype", "fp8_e4m3"], gpu_case(90, 81559, 8)),
    ("llama", ["--disaggregation-mode", "decode", "--disaggregation-decode-enable-radix-cache"]),
    ("llama", ["--disaggregation-mode", "decode", "--disaggregation-decode-enable-radix-cache", "--disaggregation-transfer-backend", "fake"]),
    ("llama", ["--disaggregation-mode", "decode", "--disaggregation-decode-enable-radix-cache", "--disaggregation-transfer-backend", "nixl", "--speculative-algorithm", "NGRAM"]),
    ("llama", ["--disaggregation-mode", "decode", "--disaggregation-decode-enable-radix-cache", "--disaggregation-transfer-backend", "nixl", "--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", f"{PLACEHOLDER}/llama"]),
]  # fmt: skip

# Open disagreement classes, each with its reason: the fast tier accepts exactly these.
KNOWN: dict[str, str] = {}  # none open: every class found so far is fixed at its mechanism


def versions() -> list[str]:
    import differential

    return differential.versions()


def _key(version: str) -> Version:
    return Version(version)


# ---- what the rules read ------------------------------------------------------------------------


def _kb():  # type: ignore[no-untyped-def]
    from pytest_sglang.judge.explain import load

    return load()


def _literals(node: ast.AST, lists: dict[str, list]) -> list[Any]:
    """The values a comparison's other side stands for."""
    if isinstance(node, ast.Constant):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [v for e in node.elts for v in _literals(e, lists)]
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "list":
        return list(lists.get(node.attr, []))
    if isinstance(node, ast.Name) and node.id in ("None", "True", "False"):
        return [{"None": None, "True": True, "False": False}[node.id]]
    return []


def _flag_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("arg", "requested"):
        return node.attr
    return None


def rule_flags() -> dict[str, list[Any]]:
    """Every argument the rules read (directly or through derived values), with the values
    their comparisons name: equal and unequal to a literal, inside and outside a list, either
    side of a bound."""
    kb = _kb()
    texts = [r.when for r in kb.order] + [r.value or "" for r in kb.order] + [e.text for e in kb.derived.values()]
    found: dict[str, set] = defaultdict(set)
    for text in texts:
        if not text:
            continue
        tree = ast.parse(text.strip(), mode="eval")
        for node in ast.walk(tree):
            name = _flag_name(node)
            if name is not None:
                found.setdefault(name, set())
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                for i, side in enumerate(sides):
                    flag = _flag_name(side)
                    if flag is None:
                        continue
                    for other in sides[:i] + sides[i + 1 :]:
                        for value in _literals(other, kb.lists):
                            if isinstance(value, bool) or value is None or isinstance(value, str):
                                found[flag].add(value)
                            elif isinstance(value, (int, float)):
                                found[flag] |= {value, value + 1, max(value - 1, 1)}
    return {k: sorted(v, key=repr) for k, v in sorted(found.items()) if k not in NOT_DRAWN}


# ---- Hypothesis: launch commands ---------------------------------------------------------------


def _table(version: str) -> dict:
    import differential

    return differential.table(version)["fields"]


def _flag_words(entry: dict, value: Any) -> list[str] | None:
    """The words that ask for ``value`` with this flag-table entry, or None when it cannot."""
    flag, kind = entry["flags"][0], entry["kind"]
    if kind in ("store_true", "boolean_optional"):
        return [flag] if value is True else None
    if kind != "store" or value is None or isinstance(value, bool):
        return None
    if entry.get("choices") and str(value) not in entry["choices"]:
        return None
    if entry.get("type") in ("int", "human_readable_int") and not (isinstance(value, int) and value >= 1):
        return None
    if entry.get("type") == "float" and not isinstance(value, (int, float)):
        return None
    nargs = entry.get("nargs")
    if nargs in ("+", "*") or isinstance(nargs, int):
        return [flag, str(value)]
    return [flag, str(value)]


def _candidates(version: str) -> dict[str, list[list[str]]]:
    """flag -> the word groups that can ask for it in this release."""
    fields = _table(version)
    out: dict[str, list[list[str]]] = {}
    for name, values in rule_flags().items():
        entry = fields.get(name)
        if entry is None or entry.get("deprecated"):
            continue
        if name in REALISTIC:
            values = REALISTIC[name] + [v for v in values if isinstance(v, str) and v not in REALISTIC[name]]
        groups = [w for w in (_flag_words(entry, v) for v in values) if w]
        if entry["kind"] in ("store_true", "boolean_optional") and not groups:
            groups = [[entry["flags"][0]]]
        if groups:
            out[name] = groups
    return out


def pinned(version: str) -> list[dict]:
    """The :data:`PINNED` commands this release's flag table accepts, as cases."""
    by_flag = {flag: entry for entry in _table(version).values() for flag in entry["flags"]}
    out = []
    for i, (family, words, *on) in enumerate(PINNED):
        pairs = [(w, words[j + 1] if j + 1 < len(words) and not words[j + 1].startswith("--") else True) for j, w in enumerate(words) if w.startswith("--")]
        if all(flag in by_flag and (PLACEHOLDER in str(value) or _flag_words(by_flag[flag], _typed(value)) is not None) for flag, value in pairs):
            argv = ["--model-path", f"{PLACEHOLDER}/{family}", *words]
            out.append({"name": f"{version}-pinned-{i}", "family": family, "gpu": dict(on[0] if on else PINNED_GPU), "argv": argv, "flags": []})
    return out


def _typed(word: Any) -> Any:
    if isinstance(word, str) and word.isdigit():
        return int(word)
    if isinstance(word, str) and word.replace(".", "", 1).isdigit():
        return float(word)
    return word


def postinit_cases(version: str):  # type: ignore[no-untyped-def]
    """A Hypothesis strategy: one case (argv, GPU, family) for ``version``."""
    from hypothesis import strategies as st

    candidates = _candidates(version)
    names = sorted(candidates)

    @st.composite
    def case(draw):  # type: ignore[no-untyped-def]
        family = draw(st.sampled_from(sorted(FAMILIES)))
        sm = draw(st.sampled_from(DRAWN_SMS))
        gpu = gpu_case(sm, draw(st.sampled_from(MEMORY_MIB)), draw(st.sampled_from(COUNTS)))
        argv = ["--model-path", f"{PLACEHOLDER}/{family}"]
        chosen = draw(st.lists(st.sampled_from(names), max_size=3, unique=True))
        for name in chosen:
            words = draw(st.sampled_from(candidates[name]))
            if name in ("tp_size", "dp_size", "pp_size") and int(words[-1]) > gpu["count"]:
                words = [words[0], str(gpu["count"])]
            argv += words
            if name == "speculative_algorithm" and words[-1] in SPECULATIVE_NEEDS_DRAFT:
                argv += ["--speculative-draft-model-path", f"{PLACEHOLDER}/{family}"]
        refusal = draw(st.sampled_from(REFUSAL_DRAW))
        drawn = {"family": family, "gpu": gpu, "argv": argv, "flags": sorted(chosen)}
        return drawn if refusal is None else {**drawn, **refused_variant(draw, refusal, drawn, version, names)}

    return case()


def refused_variant(draw, refusal: str, case: dict, version: str, names: list[str]) -> dict:  # type: ignore[no-untyped-def]
    """What a refusal changes in a drawn case (its argv, or its model), and its ``refusal`` tag."""
    from hypothesis import strategies as st

    fields = _table(version)
    argv = list(case["argv"])
    usable = [n for n in names if n in fields and fields[n]["kind"] == "store" and fields[n].get("nargs") is None] or ["tp_size"]
    if refusal == "arch":
        argv[1] = f"{PLACEHOLDER}/{UNREGISTERED}"
        return {"family": UNREGISTERED, "argv": argv, "refusal": refusal}
    if refusal == "choice":
        with_choices = [n for n in usable if fields[n].get("choices")]
        name = draw(st.sampled_from(with_choices or ["attention_backend"]))
        others = sorted({c for v in versions() for c in (_table(v).get(name, {}).get("choices") or ())} - set(fields[name].get("choices") or ()))
        value = draw(st.sampled_from(others or ["no-such-choice"]))
        return {"argv": argv + [fields[name]["flags"][0], value], "refusal": refusal}
    if refusal in ("int", "float"):
        typed = [n for n in usable if fields[n].get("type") in (("int", "human_readable_int") if refusal == "int" else ("float",))]
        name = draw(st.sampled_from(typed or (["tp_size"] if refusal == "int" else ["mem_fraction_static"])))
        value = draw(st.sampled_from(BAD_INTS)) if refusal == "int" else "0.8f"
        return {"argv": argv + [fields[name]["flags"][0], value], "refusal": refusal}
    if refusal == "missing":
        name = draw(st.sampled_from(usable))
        return {"argv": argv + [fields[name]["flags"][0]], "refusal": refusal}
    # json: the shell leaves {"rope_theta": 1000000} unquoted as two words without their quotes
    return {"argv": argv + ["--json-model-override-args", "{rope_theta:", "1000000}"], "refusal": refusal}


def generate(version: str, count: int, *, derandomize: bool, seed: int | None = None) -> list[dict]:
    """``count`` distinct cases for a release (the same ones every time when ``derandomize``),
    every family and every SM first, then spread over the draw."""
    from hypothesis import HealthCheck, Phase, given, settings

    drawn: list[dict] = []

    @settings(max_examples=count * 40, derandomize=derandomize, database=None, phases=[Phase.generate], deadline=None, suppress_health_check=list(HealthCheck))
    @given(postinit_cases(version))
    def collect(case: dict) -> None:
        drawn.append(case)

    if seed is not None and not derandomize:
        from hypothesis import seed as fixed

        collect = fixed(seed)(collect)
    collect()
    distinct = list({json.dumps(c, sort_keys=True): c for c in drawn}.values())
    random.Random(len(distinct)).shuffle(distinct)
    chosen: list[dict] = []
    seen: set[str] = set()
    for marks_of in (
        lambda c: {f"family:{c['family']}"}, lambda c: {f"sm:{c['gpu']['sm']}"}, lambda c: {f"refusal:{c['refusal']}"} if "refusal" in c else set(),
        lambda c: {f"flag:{f}" for f in c["flags"]},
    ):  # fmt: skip
        for case in distinct:  # every family first, then every SM, every kind of refusal, every flag
            if len(chosen) < count and case not in chosen and marks_of(case) - seen:
                chosen.append(case)
                seen |= marks_of(case) | {f"family:{case['family']}", f"sm:{case['gpu']['sm']}", *(f"flag:{f}" for f in case["flags"])}
                seen |= {f"refusal:{case['refusal']}"} if "refusal" in case else set()
    rest = [c for c in distinct if c not in chosen]
    step = max(len(rest) / max(count - len(chosen), 1), 1.0)
    chosen += [rest[int(i * step)] for i in range(min(count - len(chosen), len(rest)))]
    return [{"name": f"{version}-{i:03d}", **case} for i, case in enumerate(chosen)]


# ---- the release's answers ---------------------------------------------------------------------


def release_environment(version: str, src: Path) -> dict[str, str]:
    """The environment that runs ``version`` from its wheel: its sources unpacked in ``src``,
    beside the transformers release it pins (model configs are read by that transformers: a
    newer one reads some of them differently, e.g. Qwen3.5's vision config a dict for 0.5.10's
    own config class). The pinned transformers' import-time check of its neighbours' versions
    is left out: the harness environment's tokenizers and huggingface_hub are newer, and only
    configs are read."""
    import flag_table_live
    import model_tables_live

    with zipfile.ZipFile(flag_table_live.wheel(version)) as whl:
        whl.extractall(src)
    try:  # "5.0.0rc0" (0.5.6.post1) whole, not its "5.0.0"
        pin: str | None = model_tables_live.transformers_pin(model_tables_live.Wheel(flag_table_live.wheel(version)))
    except LookupError:
        pin = None
    if pin:
        with zipfile.ZipFile(model_tables_live._transformers_wheel(pin)) as whl:
            whl.extractall(src, [n for n in whl.namelist() if n.startswith("transformers/")])
        (src / "transformers" / "dependency_versions_check.py").write_text("def dep_version_check(pkg, hint=None):\n    pass\n")
    # A copy beside the sources: 0.5.3's DeepSeek V3.2 fallback writes into the model's directory.
    models = src.parent / "model-configs"
    if not models.exists():
        shutil.copytree(MODELS, models)
    return {
        **os.environ, "PYTHONPATH": str(src), "SGLANG_FROM_WHEEL": version, "SGLANG_MODEL_CONFIGS": str(models),
        "SGLANG_TRANSFORMERS_PIN": pin or "",
    }  # fmt: skip


def run_in_release(version: str, python: Path, script: str, requests: list[dict], *, cache_var: str, tag: str = "",
                   transform: Callable[[dict, Path], None] | None = None) -> dict:
    """``script`` (a file beside this one) run on ``requests`` in one import of the release's own
    code, with its pinned transformers; ``transform(answers, src)`` sees the unpacked sources.
    The answers are kept in the directory ``$cache_var`` names, keyed by the release, the
    requests and the script's text."""
    import hashlib

    cache = os.environ.get(cache_var)  # a directory keeping answers between runs
    # The scripts are shims of the package's runners: their text is part of the key too.
    texts = [(HERE / script).read_text(), *(p.read_text() for p in sorted(RUNNERS.glob("*.py")))]
    key = hashlib.sha256(json.dumps([version, requests, texts, "pinned transformers"], sort_keys=True).encode()).hexdigest()[:16]
    cached = Path(cache) / f"{tag}{version}-{key}.json" if cache else None
    if cached is not None and cached.exists():
        return json.loads(cached.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        env = release_environment(version, src)
        out = subprocess.run([str(python), str(HERE / script)], input=json.dumps(requests), env=env, capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"sglang {version}: {script} failed: {out.stderr.strip().splitlines()[-1:]}")
        answers = json.loads(out.stdout)
        if transform is not None:
            transform(answers, src)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(answers))
    return answers


def real_answers(version: str, python: Path, cases: list[dict]) -> dict:
    """What the release's own post-init made of each case on its simulated GPU, from one import
    of the release: ``{name: {"fields", "parsed"} | {"error"}}`` (field names as SGLang reports
    them: ``from_cli_args`` renames applied to the parsed namespace)."""
    import flag_table_live

    def renamed(answers: dict, src: Path) -> None:
        moved = flag_table_live.renames((src / "sglang" / "srt" / "server_args.py").read_text())
        for answer in answers.values():
            if "parsed" in answer:
                answer["parsed"] = flag_table_live._renamed(answer["parsed"], moved)

    requests = [{"name": c["name"], "argv": c["argv"], "gpu": c["gpu"], **({"env": c["env"]} if c.get("env") else {})} for c in cases]
    return run_in_release(version, python, "sglang_postinit.py", requests, cache_var="SGLANG_POSTINIT_CACHE", transform=renamed)


_MISSING = object()


def _path(mapping: Any, dotted: str) -> Any:
    value = mapping
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return _MISSING
    return value


def settings() -> list[str]:
    """The settings the rules predict a post-init value for."""
    return sorted({r.setting for r in _kb().order if r.kind in ("override", "cap") and not r.setting.startswith("runtime.")})


def stored_answer(answer: dict) -> dict:
    """The part of an answer the comparison reads: the refusal, or each rule setting's value
    after post-init and the rule settings post-init changed."""
    if "error" in answer:
        return {"error": answer["error"]}
    fields, parsed = answer["fields"], answer["parsed"]
    names = settings()
    values = {s: v for s in names if (v := _path(fields, s)) is not _MISSING}
    changed = sorted(s for s in values if (before := _path(parsed, s)) is not _MISSING and before != values[s])
    return {"values": values, "changed": changed}


# ---- the comparison ----------------------------------------------------------------------------


def command(case: dict) -> str:
    argv = [w.replace(PLACEHOLDER, str(MODELS)) for w in case["argv"]]
    return "python -m sglang.launch_server " + shlex.join(argv)


def explain(case: dict, version: str):  # type: ignore[no-untyped-def]
    from pytest_sglang.judge.explain import explain_launch

    gpu = case["gpu"]
    return explain_launch(
        command(case), gpu=gpu["name"], sm=None if gpu.get("platform") == "hip" else gpu["sm"], gpus=gpu["count"], gpu_memory=gpu["memory_mib"],
        sglang_version=version, model=str(MODELS / case["family"] / "config.json"),
    )  # fmt: skip


def _same(predicted: Any, actual: Any) -> bool:
    if isinstance(predicted, bool) or isinstance(actual, bool):
        return predicted is actual or (predicted is not None and actual is not None and bool(predicted) == bool(actual) and {type(predicted), type(actual)} <= {bool, int})
    if isinstance(predicted, (int, float)) and isinstance(actual, (int, float)):
        return math.isclose(predicted, actual, rel_tol=1e-6, abs_tol=1e-9)
    return predicted == actual


# The server arguments' handlers, and the model config post-init builds (get_model_config).
POSTINIT_SOURCES = ("sglang/srt/server_args.py", "sglang/srt/arg_groups/", "sglang/srt/configs/model_config.py")


def refuses_in_post_init(rule) -> bool:  # type: ignore[no-untyped-def]
    """Whether an error rule's refusal is raised by post-init (a source is in the server
    arguments' handlers or the model config they build; another source may name the probe it
    calls); the others refuse later (building the attention backend, loading the weights) and
    are proven by source only."""
    return any(source.file.startswith(POSTINIT_SOURCES) for source in rule.sources)


def compare(case: dict, version: str, answer: dict) -> tuple[list[tuple[str, str]], list[tuple[str, str]], dict[str, list[str]]]:
    """(disagreements, reported, agreed): disagreements and reported findings as (class,
    detail); ``agreed`` maps each check kind (value, error, noop) to the rules that agreed."""
    kb = _kb()
    kinds = {r.id: r.kind for r in kb.order}
    later = {r.id for r in kb.order if r.kind == "error" and not refuses_in_post_init(r)}
    try:
        explanation = explain(case, version)
    except Exception as exc:  # noqa: BLE001 - explain must never raise on a valid command
        return [(f"crash: explain_launch raised {type(exc).__name__}", str(exc)[:300])], [], {}
    findings = [f for f in explanation.findings if f.rule in kinds]
    bad: list[tuple[str, str]] = []
    reported: list[tuple[str, str]] = []
    agreed: dict[str, list[str]] = defaultdict(list)
    # Refusals prepare_server_args raises: argparse's (the flag tables) and post-init's (error
    # rules whose sources are the argument handlers). An architecture the registry lacks is
    # refused when the weights load, after post-init: proven against the registry table.
    errors = [f for f in findings if f.severity == "error" and kinds[f.rule] in ("error", "unknown-flag", "refused") and f.rule not in later]
    at_load = [f for f in findings if f.severity == "error" and kinds[f.rule] == "unknown-arch"]
    if "error" in answer:
        if errors:
            agreed["error"] += [f.rule for f in errors]
        elif at_load:
            reported.append((f"refused: {_shape(answer['error'])} (explain names only the architecture, refused at model load)", answer["error"]))
        else:
            reported.append((f"refused: {_shape(answer['error'])}", answer["error"]))
        return bad, reported, dict(agreed)
    for f in errors:
        bad.append((f"error: {f.rule}", f"explain: {f.summary} | SGLang {version} accepted the command"))
    for f in at_load:  # post-init accepted it; the registry the table holds refuses it at model load
        agreed["at-load"].append(f.rule)
    for f in findings:
        if kinds[f.rule] == "noop":  # the command starts; that the flag then does nothing is by source
            agreed["noop"].append(f.rule)
    values = answer["values"]
    predicted_settings: set[str] = set()
    for f in findings:
        if kinds[f.rule] not in ("override", "cap") or f.setting.startswith("runtime.") or f.predicted is None:
            continue
        predicted_settings.add(f.setting)
        if f.setting not in values:
            bad.append((f"value: {f.rule} (no such field)", f"{f.setting} is not a field of SGLang {version}"))
        elif _same(f.predicted, values[f.setting]):
            agreed["value"].append(f.rule)
        else:
            bad.append((f"value: {f.rule}", f"{f.setting}: explain {f.predicted!r}, SGLang {version} {values[f.setting]!r}"))
    for setting in answer["changed"]:
        if setting not in predicted_settings:
            reported.append((f"miss: {setting}", f"SGLang {version} set {setting}={values[setting]!r}; no finding says so"))
    return bad, reported, dict(agreed)


def _shape(message: str) -> str:
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'V'", message)
    text = re.sub(r"\b\d+(\.\d+)*\b", "N", text)
    return text[:100]


def known(cls: str, known_classes: dict[str, str]) -> str | None:
    """The reason a disagreement class is open, when it is listed."""
    return next((reason for prefix, reason in known_classes.items() if cls == prefix or cls.startswith(prefix + " ")), None)


# ---- the run and its report --------------------------------------------------------------------


def empty_report() -> dict:
    return {
        "generated": {}, "refused": {}, "classes": defaultdict(list), "reported": defaultdict(list), "agreed": defaultdict(lambda: defaultdict(set)),
        # per release: refusals explain predicted (an ERROR) and did not; what post-init did with an unregistered architecture
        "predicted": defaultdict(int), "unpredicted": defaultdict(int), "architecture": defaultdict(list),
    }  # fmt: skip


def add(report: dict, version: str, case: dict, answer: dict) -> None:
    bad, reported, agreed = compare(case, version, answer)
    if "error" in answer:
        report["predicted" if agreed.get("error") else "unpredicted"][version] += 1
    if case["family"] == UNREGISTERED:
        report["architecture"][version].append("refused" if "error" in answer else "accepted")
    for cls, detail in bad:
        report["classes"][cls].append({"release": version, "name": case["name"], "command": command_text(case), "gpu": case["gpu"], "detail": detail})
    for cls, detail in reported:
        report["reported"][cls].append({"release": version, "name": case["name"], "detail": detail})
    for kind, rules in agreed.items():
        for rule in rules:
            report["agreed"][rule][kind].add(version)


def command_text(case: dict) -> str:
    return "python -m sglang.launch_server " + shlex.join(case["argv"])


def run(releases: Iterable[str], cases_of: Callable[[str], list[dict]], python: Path, *, log: Callable[[str], None] = print) -> dict:
    report = empty_report()
    for version in releases:
        started = time.monotonic()
        cases = cases_of(version)
        answers = {name: stored_answer(a) for name, a in real_answers(version, python, cases).items()}
        report["generated"][version] = len(cases)
        report["refused"][version] = sum("error" in answers[c["name"]] for c in cases)
        for case in cases:
            add(report, version, case, answers[case["name"]])
        log(f"{version}: {len(cases)} commands, {report['refused'][version]} refused, {time.monotonic() - started:.0f} s")
    return report


def per_release(report: dict) -> dict[str, dict[str, int]]:
    """Commands, refusals (predicted by an ERROR of explain, and not), disagreements, misses per release."""
    out = {
        v: {"commands": n, "refused": report["refused"].get(v, 0), "predicted": report["predicted"].get(v, 0), "unpredicted": report["unpredicted"].get(v, 0), "disagreements": 0, "known": 0, "misses": 0}
        for v, n in report["generated"].items()
    }
    known_classes = report.get("known", KNOWN)
    for cls, items in report["classes"].items():
        for item in items:
            out[item["release"]]["known" if known(cls, known_classes) else "disagreements"] += 1
    for cls, items in report["reported"].items():
        if cls.startswith("miss:"):
            for item in items:
                out[item["release"]]["misses"] += 1
    return dict(sorted(out.items(), key=lambda kv: _key(kv[0])))


def render(report: dict) -> str:
    rows = per_release(report)
    lines = ["release  commands  refused  predicted  unpredicted  disagreements  known  misses"]
    lines += [f"{v:8} {r['commands']:9} {r['refused']:8} {r['predicted']:10} {r['unpredicted']:12} {r['disagreements']:14} {r['known']:6} {r['misses']:7}" for v, r in rows.items()]
    unpredicted = {cls: items for cls, items in report["reported"].items() if cls.startswith("refused:")}
    if unpredicted:
        lines.append("\nrefusals explain does not predict, by release and class:")
        for v in rows:
            here = {cls: sum(1 for i in items if i["release"] == v) for cls, items in unpredicted.items()}
            lines += [f"  {v}: {n}x {cls}" for cls, n in sorted(here.items(), key=lambda kv: -kv[1]) if n]
    if report["architecture"]:
        said = {v: sorted(set(a)) for v, a in report["architecture"].items()}
        refusing = [v for v, a in said.items() if "refused" in a]
        lines.append(
            f"\nan architecture no registry has ({UNREGISTERED}): post-init refused it in {_span(refusing) or 'no release'}, "
            f"accepted it in {_span([v for v, a in said.items() if 'accepted' in a]) or 'no release'} (the registry refuses it when the weights load)"
        )
    known_classes = report.get("known", KNOWN)
    checks = {kind: sum(1 for kinds in report["agreed"].values() if kind in kinds) for kind in ("value", "error", "noop")}
    lines.append(f"\nrules that agreed with an execution: {len(report['agreed'])} (value {checks['value']}, error {checks['error']}, noop {checks['noop']})")
    reported = report["reported"]
    for title, classes in (("disagreements", report["classes"]), ("reported (misses, unpredicted refusals)", reported)):
        total = sum(len(v) for v in classes.values())
        lines.append(f"\n{title}: {total} in {len(classes)} classes")
        for cls, items in sorted(classes.items(), key=lambda kv: -len(kv[1])):
            releases = sorted({i["release"] for i in items}, key=_key)
            reason = known(cls, known_classes) if classes is report["classes"] else None
            lines.append(f"[{len(items)}x, {releases[0]}..{releases[-1]}] {cls}" + (f"  (known: {reason})" if reason else ""))
            if True:
                lines.append(f"    e.g. {items[0]['release']} {items[0]['name']}: {items[0]['detail'][:300]}")
                if "command" in items[0]:
                    lines.append(f"    {items[0]['command']}  gpu={items[0]['gpu']}")
    return "\n".join(lines)


def stored() -> dict:
    return json.loads(DATA.read_text())


def write_stored(python: Path, releases: list[str] | None = None, *, pinned_only: bool = False) -> dict:
    """The fixed set: STORED_PER_RELEASE derandomized cases per release and the
    :data:`PINNED` commands, with their answers (releases not named keep their stored cases;
    ``pinned_only`` rewrites the pinned commands alone)."""
    import hypothesis

    data = stored() if DATA.exists() and (releases or pinned_only) else {"releases": {}}
    out: dict[str, Any] = {
        "about": (
            "Launch commands over the flags the explain rules read, crossed with simulated GPUs and model families "
            "(Hypothesis, derandomized), and what each SGLang release's own prepare_server_args (post-init and its "
            "handlers; 0.5.19+ also resolve_once) made of them: each rule setting's value, the rule settings it changed, "
            "the other fields it changed, or the one-line refusal. {models} is tests/data/model-configs. Written by "
            "tests/real_sglang/postinit_differential.py --store; checked by tests/test_postinit_differential.py and by the "
            "real tier. 'known' lists the open disagreement classes with their reasons."
        ),
        "hypothesis": hypothesis.__version__,
        "known": KNOWN,
        "releases": dict(data.get("releases", {})),
    }
    for version in releases or versions():
        if pinned_only:
            kept = [c for c in out["releases"].get(version, {}).get("cases", []) if "-pinned-" not in c["name"]]
            cases = pinned(version)
            answers = real_answers(version, python, cases)
            out["releases"][version] = {"cases": kept + [{**case, "answer": stored_answer(answers[case["name"]])} for case in cases]}
            print(f"{version}: {len(cases)} pinned stored", file=sys.stderr)
            continue
        cases = generate(version, STORED_PER_RELEASE, derandomize=True) + pinned(version)
        answers = real_answers(version, python, cases)
        out["releases"][version] = {"cases": [{**case, "answer": stored_answer(answers[case["name"]])} for case in cases]}
        print(f"{version}: {len(cases)} stored", file=sys.stderr)
    out["releases"] = dict(sorted(out["releases"].items(), key=lambda kv: _key(kv[0])))
    # One case a line: a modest file whose diffs show which answers changed.
    text = json.dumps({k: v for k, v in out.items() if k != "releases"}, indent=1)[:-2] + ',\n "releases": {\n'
    text += ",\n".join(
        f"  {json.dumps(v)}: {{\"cases\": [\n" + ",\n".join("   " + json.dumps(c, sort_keys=True) for c in r["cases"]) + "\n  ]}"
        for v, r in out["releases"].items()
    )
    DATA.write_text(text + "\n }\n}\n")
    return out


def check_stored(data: dict | None = None) -> dict:
    data = data or stored()
    report = empty_report()
    report["known"] = data.get("known", {})
    for version, release in data["releases"].items():
        report["generated"][version] = len(release["cases"])
        report["refused"][version] = sum("error" in c["answer"] for c in release["cases"])
        for case in release["cases"]:
            add(report, version, case, case["answer"])
    return report


# ---- the docs page's tables ---------------------------------------------------------------------

BEGIN, END = "<!-- tables: written by postinit_differential.py --docs -->", "<!-- end of tables -->"


def _span(releases: Iterable[str]) -> str:
    """``0.5.5-0.5.9, 0.5.12`` for a set of releases (runs of consecutive known releases)."""
    known_releases = versions()
    chosen = sorted(set(releases), key=_key)
    runs: list[list[str]] = []
    for v in chosen:
        if runs and known_releases.index(v) == known_releases.index(runs[-1][-1]) + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return ", ".join(r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def docs_tables(data: dict | None = None) -> str:
    """The generated part of docs/explain-proof.md, from the stored set and the current rules."""
    data = data or stored()
    report = check_stored(data)
    kb = _kb()
    lines = [
        "### Commands and disagreements per release", "",
        "| release | commands | refused by SGLang | of them, an ERROR of explain | not predicted | disagreements | known (open) | misses |",
        "|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    columns = ("commands", "refused", "predicted", "unpredicted", "disagreements", "known", "misses")
    for v, r in per_release(report).items():
        lines.append(f"| {v} | " + " | ".join(str(r[c]) for c in columns) + " |")
    total = per_release(report).values()
    lines.append("| all | " + " | ".join(str(sum(r[c] for r in total)) for c in columns) + " |")
    unpredicted = {cls: items for cls, items in report["reported"].items() if cls.startswith("refused:")}
    lines += ["", "### Refusals explain does not predict", ""]
    if unpredicted:
        lines += ["| class | releases | commands |", "|---|---|---|"]
        lines += [f"| `{cls.removeprefix('refused: ')}` | {_span(i['release'] for i in items)} | {len(items)} |" for cls, items in sorted(unpredicted.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    else:
        lines.append("None.")
    if report["architecture"]:
        said = report["architecture"]
        lines += [
            "",
            f"An architecture no registry has (`{UNREGISTERED}`): post-init refused it in {_span(v for v, a in said.items() if 'refused' in a) or 'no release'} "
            f"and accepted it in {_span(v for v, a in said.items() if 'accepted' in a) or 'no release'}.",
        ]
    lines += ["", "### Rules proven by execution", "", "Each rule below fired in the stored set and its prediction agreed with what the release did (the releases listed).", "", "| rule | check | releases |", "|---|---|---|"]
    proven = {rule: kinds for rule, kinds in report["agreed"].items() if kinds.keys() & {"value", "error"}}
    for rule in sorted(proven):
        for kind, releases in sorted(proven[rule].items()):
            if kind == "noop":
                continue
            lines.append(f"| `{rule}` | {kind} | {_span(releases)} |")
    lines += ["", "### Rules proven by source only", "", "The other rules: their `runtime.` value is decided after post-init, or no stored command made them fire. Each is tied to the release's source by its anchors (`tests/real_sglang/test_kb_sources.py`).", "", "| rule | why not by execution |", "|---|---|"]
    for rule in kb.order:
        if rule.id in proven or rule.kind in ("deprecated", "unknown-flag"):
            continue
        if rule.setting.startswith("runtime."):
            why = "decided after post-init (runtime)"
        elif rule.kind == "error" and not refuses_in_post_init(rule):
            why = "refuses after post-init (" + ", ".join(sorted({s.file.removeprefix("sglang/srt/") for s in rule.sources})) + ")"
        elif rule.kind == "noop":
            why = "no effect at run time (" + ", ".join(sorted({s.file.removeprefix("sglang/srt/") for s in rule.sources})) + ")"
        else:
            why = "did not fire in the stored set"
        lines.append(f"| `{rule.id}` | {why} |")
    lines += ["", "### Open disagreement classes", ""]
    if data.get("known"):
        lines += ["| class | reason |", "|---|---|"] + [f"| `{cls}` | {reason} |" for cls, reason in sorted(data["known"].items())]
    else:
        lines.append("None.")
    return "\n".join(lines) + "\n"


def write_docs() -> None:
    text = DOCS.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    DOCS.write_text(f"{head}{BEGIN}\n\n{docs_tables()}\n{END}{tail}")


def docs_block() -> str:
    """The generated block as the docs page holds it."""
    text = DOCS.read_text()
    return text.partition(BEGIN)[2].partition(END)[0].strip("\n") + "\n"


if __name__ == "__main__":
    import argparse

    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("releases", nargs="*", help="releases to compare (default: every release with a flag table)")
    cli.add_argument("--examples", type=int, default=12, help="fresh commands per release (default 12)")
    cli.add_argument("--seed", type=int, default=None, help="a fixed seed for the fresh sample")
    cli.add_argument("--store", action="store_true", help="rewrite the stored fixed set (of the releases named, or all)")
    cli.add_argument("--store-pinned", action="store_true", help="rewrite only the pinned commands of the stored set (of the releases named, or all)")
    cli.add_argument("--check-stored", action="store_true", help="check the stored set against the current explain")
    cli.add_argument("--docs", action="store_true", help="rewrite the generated tables of docs/explain-proof.md")
    cli.add_argument("--platform", choices=("cuda", "hip"), help="draw only NVIDIA (cuda) or only AMD (hip) GPUs")
    options = cli.parse_args()
    if options.platform:
        DRAWN_SMS[:] = [sm for sm in sorted(GPUS) if (sm in AMD_GPUS) == (options.platform == "hip")]
    if options.docs:
        write_docs()
        sys.exit(0)
    if options.check_stored:
        result = check_stored()
    else:
        import harness

        python = harness.ensure_environment()
        if options.store or options.store_pinned:
            write_stored(python, options.releases or None, pinned_only=options.store_pinned)
            result = check_stored()
        else:
            chosen = options.releases or versions()
            result = run(chosen, lambda v: generate(v, options.examples, derandomize=False, seed=options.seed), python, log=lambda m: print(m, file=sys.stderr))
    print(render(result))
    sys.exit(1 if any(not known(c, result.get("known", KNOWN)) for c in result["classes"]) else 0)
