"""Pool sizing proven by execution: ``estimate_pools`` against each SGLang release's own KV and
mamba pool sizing, on simulated GPU memory.

Hypothesis writes launch commands over the flags the pool sizing reads (``--max-running-requests``,
``--disable-radix-cache``, ``--max-mamba-cache-size``, ``--mamba-full-memory-ratio``,
``--mem-fraction-static``, ``--max-total-tokens``, ``--context-length``, ``--page-size``,
``--kv-cache-dtype``, speculative decoding with its step, top-k and draft-token flags, the mamba
strategy, DP attention and ``--tp``) for the model families of ``tests/data/model-configs``
(dense, MoE, gated delta net, Mamba2, MLA, DSA; those the release's model registry holds), on a simulated GPU (SM80-SM120, 24-192 GB, 1-8
GPUs) with the free memory before loading and the weights' size drawn too. Each release
(0.5.0rc2-0.5.23, post releases included) runs its own post-init and pool sizing on that (``sglang_pools.py``), and explain,
given the same two memory figures, must give the same figures twice:

- ``figure``: from the post-init values the release's sizing read (so the sizing itself is
  proven, whatever the rules predicted): ``max_total_num_tokens``, ``max_running_requests`` (per
  attention-DP worker), ``mamba_cache_size`` and ``context_len`` exact and equal, and a refusal
  exactly where the release's sizing raised;
- ``input``: from explain's own predictions of those post-init values, as ``explain_launch`` has
  them: a value the rules predict differently is reported by field, with the figures it moved.

``KNOWN`` lists the open classes, each with its reason; the run fails on any other.

    python tests/real_sglang/pool_differential.py                   # a fresh sample per release
    python tests/real_sglang/pool_differential.py --examples 30 0.5.23 0.5.12
    python tests/real_sglang/pool_differential.py --store           # rewrite tests/data/sglang-pool-differential.json
    python tests/real_sglang/pool_differential.py --check-stored    # the stored set against the current explain
    python tests/real_sglang/pool_differential.py --docs            # rewrite the tables of docs/explain-proof.md
"""

from __future__ import annotations

import json
import random
import re
import shlex
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable

from packaging.version import Version

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = ROOT / "tests" / "data" / "sglang-pool-differential.json"
MODELS = ROOT / "tests" / "data" / "model-configs"
DOCS = ROOT / "docs" / "explain-proof.md"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

STORED_PER_RELEASE = 16
PLACEHOLDER = "{models}"
GIB = 1 << 30

# The families drawn: dense, MoE, gated delta net (hybrid), Mamba2 (hybrid), MLA, DSA.
FAMILIES = {
    "llama": "dense (LlamaForCausalLM)",
    "qwen3-moe": "MoE (Qwen3MoeForCausalLM)",
    "qwen3-next": "gated delta net hybrid MoE (Qwen3NextForCausalLM)",
    "qwen3.5-moe": "gated delta net hybrid multimodal MoE (Qwen3_5MoeForConditionalGeneration)",
    "falcon-h1": "Mamba2 hybrid (FalconH1ForCausalLM)",
    "deepseek-v3": "MLA MoE (DeepseekV3ForCausalLM)",
    "deepseek-v3.2": "MLA with a DSA indexer (DeepseekV32ForCausalLM)",
}
HYBRID = {"qwen3-next", "qwen3.5-moe", "falcon-h1"}
# Families whose checkpoint carries MTP layers (speculative decoding as NEXTN), and the ones that
# take an EAGLE draft (its config: the family's own, as the post-init differential does).
NEXTN = {"qwen3-next", "qwen3.5-moe", "deepseek-v3", "deepseek-v3.2"}
GPUS = {80: "NVIDIA A100-SXM4-80GB", 89: "NVIDIA L40S", 90: "NVIDIA H100 80GB HBM3", 100: "NVIDIA B200", 120: "NVIDIA RTX PRO 6000 Blackwell Server Edition"}
MEMORY_MIB = [24564, 32607, 46068, 81559, 97887, 143771, 183359, 196608]
COUNTS = [1, 2, 4, 8]
# CUDA context and distributed state before the weights load (GiB), and the share of the free
# memory the weights then take: drawn, so a command meets roomy and tight cards.
OVERHEAD_GIB = [0.4, 0.9, 1.6, 3.1]
WEIGHT_SHARES = [0.05, 0.2, 0.4, 0.6, 0.75, 0.9, 0.97]

# The flags drawn, by ServerArgs field, with the values written (each is left out of a release
# whose flag table lacks it or the value).
VALUES: dict[str, list[Any]] = {
    "max_running_requests": [4, 48, 64, 200, 1024, 4096],
    "disable_radix_cache": [True],
    "max_mamba_cache_size": [16, 100, 600],
    "mamba_full_memory_ratio": [0.5, 2.0],
    "mem_fraction_static": [0.6, 0.8, 0.9],
    "max_total_tokens": [4000, 100000, 10000000],
    "context_length": [4096, 32768],
    "page_size": [1, 16, 64],
    "kv_cache_dtype": ["fp8_e4m3", "bfloat16"],
    "mamba_scheduler_strategy": ["no_buffer", "extra_buffer"],
    "mamba_radix_cache_strategy": ["no_buffer", "extra_buffer"],
}
SPECULATIVE = [
    [],
    ["--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"],
    ["--speculative-num-steps", "2", "--speculative-eagle-topk", "2", "--speculative-num-draft-tokens", "6"],
]

# Commands stored for every release besides the drawn ones (on one H100, memory fixed): the
# issue's examples and the paths a random draw of a few flags rarely takes together.
PINNED_GPU = {"sm": 90, "name": GPUS[90], "memory_mib": 81559, "count": 1}
PINNED: list[tuple[str, int, list[str], float]] = [
    # (family, GPUs, words, weight share)
    ("llama", 1, ["--max-running-requests", "64"], 0.2),  # the KV pool holds hundreds of thousands of tokens
    ("qwen3.5-moe", 4, ["--tp", "4", "--max-running-requests", "48", "--disable-radix-cache"], 0.55),  # mamba sized from the request
    ("qwen3-next", 4, ["--tp", "4", "--max-running-requests", "48"], 0.5),
    ("qwen3-next", 4, ["--tp", "4", "--max-running-requests", "48", "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"], 0.5),
    ("qwen3-next", 4, ["--tp", "4", "--max-mamba-cache-size", "300", "--mamba-full-memory-ratio", "2.0"], 0.5),
    ("falcon-h1", 1, [], 0.2),
    ("falcon-h1", 1, ["--max-running-requests", "32", "--disable-radix-cache"], 0.2),
    ("deepseek-v3", 8, ["--tp", "8", "--dp", "8", "--enable-dp-attention", "--max-running-requests", "512"], 0.6),
    ("deepseek-v3.2", 8, ["--tp", "8", "--kv-cache-dtype", "fp8_e4m3"], 0.6),
    ("qwen3-moe", 2, ["--tp", "2", "--max-total-tokens", "20000", "--page-size", "16"], 0.4),
]  # fmt: skip

# Open disagreement classes, each with its reason: the fast tier accepts exactly these.
KNOWN: dict[str, str] = {}


def versions() -> list[str]:
    import differential

    return differential.versions()


def _key(version: str) -> Version:
    return Version(version)


# ---- the commands ---------------------------------------------------------------------------------


def _fields(version: str) -> dict:
    import differential

    return differential.table(version)["fields"]


def _words(version: str, field: str, value: Any) -> list[str] | None:
    """The words that ask for ``value`` with this release's flag, or None when it has none."""
    entry = _fields(version).get(field)
    if entry is None or entry.get("deprecated"):
        return None
    flag = entry["flags"][0]
    if entry["kind"] in ("store_true", "boolean_optional"):
        return [flag] if value is True else None
    if entry.get("choices") and str(value) not in entry["choices"]:
        return None
    return [flag, str(value)]


def families(version: str) -> list[str]:
    """The families whose architecture the release's model registry holds (its model table): a
    checkpoint it lacks is refused before any pool is sized, so drawing it proves nothing of the
    sizing (0.5.0rc2-0.5.1.post3 load four of the seven)."""
    from pytest_sglang.model.knowledge.model_tables import model_table

    table = model_table(version)
    archs = {family: json.loads((MODELS / family / "config.json").read_text())["architectures"][0] for family in FAMILIES}
    return sorted(f for f in FAMILIES if table is None or archs[f] in table.architectures)


def memory_of(gpu: dict, overhead_gib: float, share: float) -> dict:
    """The two memory figures of a case: free bytes before loading, and what the weights take."""
    pre = int(gpu["memory_mib"] * 2**20 - overhead_gib * GIB)
    return {"pre_load_free_bytes": pre, "weights_bytes": int(pre * share)}


def pool_cases(version: str):  # type: ignore[no-untyped-def]
    """A Hypothesis strategy: one case (argv, GPU, family, memory) for ``version``."""
    from hypothesis import strategies as st

    loadable = families(version)

    @st.composite
    def case(draw):  # type: ignore[no-untyped-def]
        family = draw(st.sampled_from(loadable))
        sm = draw(st.sampled_from(sorted(GPUS)))
        count = draw(st.sampled_from(COUNTS))
        gpu = {"sm": sm, "name": GPUS[sm], "memory_mib": draw(st.sampled_from(MEMORY_MIB)), "count": count}
        argv = ["--model-path", f"{PLACEHOLDER}/{family}"]
        flags: list[str] = []
        tp = draw(st.sampled_from([c for c in COUNTS if c <= count]))
        if tp > 1:
            argv += ["--tp", str(tp)]
            flags.append("tp_size")
            dp = draw(st.sampled_from([1] + [d for d in (2, 4, 8) if d <= tp]))
            if dp > 1 and _words(version, "enable_dp_attention", True):
                argv += ["--dp", str(dp), "--enable-dp-attention"]
                flags.append("enable_dp_attention")
        for field in draw(st.lists(st.sampled_from(sorted(VALUES)), max_size=3, unique=True)):
            words = _words(version, field, draw(st.sampled_from(VALUES[field])))
            if words:
                argv += words
                flags.append(field)
        spec = draw(st.sampled_from(["none", "none", "EAGLE", "NEXTN"]))
        if spec == "NEXTN" and family in NEXTN or spec == "EAGLE" and family not in NEXTN:
            argv += ["--speculative-algorithm", spec]
            if spec == "EAGLE":
                argv += ["--speculative-draft-model-path", f"{PLACEHOLDER}/{family}"]
            argv += draw(st.sampled_from(SPECULATIVE))
            flags.append("speculative_algorithm")
        memory = memory_of(gpu, draw(st.sampled_from(OVERHEAD_GIB)), draw(st.sampled_from(WEIGHT_SHARES)))
        return {"family": family, "gpu": gpu, "argv": argv, "flags": sorted(flags), "memory": memory}

    return case()


def generate(version: str, count: int, *, derandomize: bool, seed: int | None = None) -> list[dict]:
    """``count`` distinct cases for a release (the same every time when ``derandomize``): every
    family first, then every flag, then spread over the draw."""
    from hypothesis import HealthCheck, Phase, given, settings

    drawn: list[dict] = []

    @settings(max_examples=count * 30, derandomize=derandomize, database=None, phases=[Phase.generate], deadline=None, suppress_health_check=list(HealthCheck))
    @given(pool_cases(version))
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
    for marks_of in (lambda c: {f"family:{c['family']}"}, lambda c: {f"flag:{f}" for f in c["flags"]}, lambda c: {f"sm:{c['gpu']['sm']}"}):
        for case in distinct:
            if len(chosen) < count and case not in chosen and marks_of(case) - seen:
                chosen.append(case)
                seen |= {f"family:{case['family']}", f"sm:{case['gpu']['sm']}", *(f"flag:{f}" for f in case["flags"])}
    rest = [c for c in distinct if c not in chosen]
    step = max(len(rest) / max(count - len(chosen), 1), 1.0)
    chosen += [rest[int(i * step)] for i in range(min(count - len(chosen), len(rest)))]
    return [{"name": f"{version}-{i:03d}", **case} for i, case in enumerate(chosen)]


def stored_seed(version: str) -> int:
    """The stored set's seed for a release: fixed, and another for each release, so the
    releases' stored commands differ."""
    import zlib

    return zlib.crc32(f"pool-differential {version}".encode())


def pinned(version: str) -> list[dict]:
    """The :data:`PINNED` commands this release's flag table accepts, of the families it loads, as cases."""
    by_flag = {flag for entry in _fields(version).values() for spelling in (entry, *entry.get("aliases", ())) for flag in spelling["flags"]}
    out = []
    loadable = families(version)
    for i, (family, count, words, share) in enumerate(PINNED):
        if family not in loadable:
            continue  # refused before the sizing (see families)
        if not all(w in by_flag or sum(f.startswith(w) for f in by_flag) == 1 for w in words if w.startswith("--")):
            continue  # a flag this release lacks (argparse takes a unique prefix, as for --tp)
        gpu = {**PINNED_GPU, "count": count}
        memory = memory_of(gpu, 0.9 if count == 1 else 2.0, share)
        out.append({"name": f"{version}-pinned-{i}", "family": family, "gpu": gpu, "argv": ["--model-path", f"{PLACEHOLDER}/{family}", *words], "flags": [], "memory": memory})
    return out


# ---- the release's answers ----------------------------------------------------------------------


def real_answers(version: str, python: Path, cases: list[dict]) -> dict:
    """What the release's own post-init and pool sizing made of each case, from one import of
    the release: ``{name: {"pools": {...}} | {"error", "stage"}}``."""
    import postinit_differential

    requests = [{k: c[k] for k in ("name", "argv", "gpu", "memory")} for c in cases]
    return postinit_differential.run_in_release(version, python, "sglang_pools.py", requests, cache_var="SGLANG_POOLS_CACHE", tag="pools-")


# ---- explain's side -----------------------------------------------------------------------------


def command(case: dict) -> str:
    argv = [w.replace(PLACEHOLDER, str(MODELS)) for w in case["argv"]]
    return "python -m sglang.launch_server " + shlex.join(argv)


def command_text(case: dict) -> str:
    return "python -m sglang.launch_server " + shlex.join(case["argv"])


def situation(case: dict, version: str):  # type: ignore[no-untyped-def]
    """The facts ``explain_launch`` decides the case from, after its rules ran (the
    situation it builds, kept as it passes it to the engine)."""
    from pytest_sglang.judge.explain import api

    seen: list = []
    original = api.explain_situation

    def keep(one):  # type: ignore[no-untyped-def]
        seen.append(one)
        return original(one)

    api.explain_situation = keep
    try:
        gpu = case["gpu"]
        api.explain_launch(
            command(case), gpu=gpu["name"], sm=gpu["sm"], gpus=gpu["count"], gpu_memory=gpu["memory_mib"],
            sglang_version=version, model=str(MODELS / case["family"] / "config.json"),
        )  # fmt: skip
    finally:
        api.explain_situation = original
    return seen[-1]


# The post-init values the sizing reads (as the release reported them), by explain's name.
INPUTS = (
    "mem_fraction_static", "page_size", "max_running_requests", "max_total_tokens", "context_length", "kv_cache_dtype",
    "disable_radix_cache", "max_mamba_cache_size", "mamba_full_memory_ratio", "mamba_scheduler_strategy",
    "mamba_radix_cache_strategy", "disable_overlap_schedule", "speculative_algorithm", "speculative_num_steps",
    "speculative_eagle_topk", "speculative_num_draft_tokens", "dp_size", "enable_dp_attention", "tp_size", "attn_dp_size",
    "mamba_ssm_dtype", "mm_feature_transport", "attention_backend", "decode_attention_backend", "dsa_prefill_backend",
    "dsa_decode_backend", "nsa_prefill_backend", "nsa_decode_backend", "speculative_draft_model_path", "pp_size",
)  # fmt: skip


def estimates(case: dict, version: str, read: dict | None, draft_layers: int | None = None):  # type: ignore[no-untyped-def]
    """(explain's estimate from the release's post-init values (and the draft layers its runner
    counted), from its own predictions, the situation)."""
    from pytest_sglang.judge.explain.pools import estimate_pools

    memory = case["memory"]
    own = situation(case, version)
    figures_own = estimate_pools(own, pre_load_free_bytes=memory["pre_load_free_bytes"], weights_bytes=memory["weights_bytes"])
    if read is None:
        return None, figures_own, own
    values = {k: v.replace(PLACEHOLDER, str(MODELS)) if isinstance(v, str) else v for k, v in read.items() if k in INPUTS}
    values["eagle_draft_num_layers"] = draft_layers
    figures_given = estimate_pools(own, pre_load_free_bytes=memory["pre_load_free_bytes"], weights_bytes=memory["weights_bytes"], known=values)
    return figures_given, figures_own, own


def release_figures(pools: dict) -> dict[str, Any]:
    out = {"max_total_num_tokens": pools["max_total_num_tokens"], "max_running_requests": pools["max_running_requests"], "context_len": pools["context_len"]}
    if "max_mamba_cache_size" in pools:
        out["mamba_cache_size"] = pools["max_mamba_cache_size"]
    if "max_req_input_len" in pools:  # answers stored before the TP worker's input limit was asked lack it
        out["max_req_input_len"] = pools["max_req_input_len"]
    return out


def _shape(message: str) -> str:
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'V'", message)
    text = re.sub(r"\b\d+(\.\d+)*\b", "N", text)
    return text[:90]


def _same_input(field: str, explain_value: Any, release_value: Any, hybrid: bool) -> bool:
    """Whether explain's post-init value sizes the pools as the release's does."""
    if field in ("mamba_scheduler_strategy", "mamba_radix_cache_strategy", "mamba_ssm_dtype", "max_mamba_cache_size", "mamba_full_memory_ratio") and not hybrid:
        return True
    if field in ("attention_backend", "decode_attention_backend", "dsa_prefill_backend", "dsa_decode_backend", "nsa_prefill_backend", "nsa_decode_backend"):
        return explain_value is None or explain_value == release_value  # none predicted: the sizing takes either end
    if field == "speculative_draft_model_path":
        return True  # its layers are compared through the figures
    if field == "pp_size":
        return (explain_value or 1) == (release_value or 1)
    if field == "kv_cache_dtype":
        bytes_of = {"auto": 2, None: 2, "bfloat16": 2, "bf16": 2, "float16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1}
        return bytes_of.get(explain_value) == bytes_of.get(release_value) and (explain_value == "fp8_e4m3") == (release_value == "fp8_e4m3")
    if field == "page_size":
        return (explain_value or 1) == (release_value or 1)
    if field == "speculative_algorithm":  # post-init turns NEXTN into EAGLE; both size alike
        return {explain_value, release_value} <= {"NEXTN", "EAGLE"} or explain_value == release_value
    if field == "mm_feature_transport":  # no GPU transport either way
        return (explain_value or "cpu") == (release_value or "cpu")
    if field == "mamba_ssm_dtype":
        return (explain_value or "float32") == (release_value or "float32")
    return _equal_value(explain_value, release_value)


def _equal_value(explain_value: Any, release_value: Any) -> bool:
    if explain_value is None or release_value is None:
        return explain_value is release_value or (explain_value in (None, "auto") and release_value in (None, "auto"))
    if isinstance(release_value, float) or isinstance(explain_value, float):
        try:
            return abs(float(explain_value) - float(release_value)) < 1e-9
        except (TypeError, ValueError):
            return False
    return explain_value == release_value


def compare(case: dict, version: str, answer: dict) -> tuple[list[tuple[str, str]], list[tuple[str, str]], dict[str, list[str]]]:
    """(disagreements, reported, agreed): disagreements and reported as (class, detail); agreed
    maps each check (``figure``, ``refusal``, ``input``) to the figures or fields that agreed."""
    bad: list[tuple[str, str]] = []
    reported: list[tuple[str, str]] = []
    agreed: dict[str, list[str]] = defaultdict(list)
    if "error" in answer and answer.get("stage") == "post-init":
        reported.append((f"refused in post-init: {_shape(answer['error'])}", answer["error"]))
        return bad, reported, dict(agreed)
    if "error" in answer and answer.get("stage") == "model":
        reported.append(("refused: architecture not in this release", answer["error"]))
        return bad, reported, dict(agreed)
    pools = answer.get("pools")
    read = pools["read"] if pools else answer.get("read")
    try:
        given, own, facts = estimates(case, version, read, pools.get("eagle_draft_num_layers") if pools else (read or {}).get("eagle_draft_num_layers"))
    except Exception as exc:  # noqa: BLE001 - explain must never raise on a valid command
        return [(f"crash: estimate_pools raised {type(exc).__name__}", str(exc)[:300])], reported, dict(agreed)
    untranscribed = next((why for why in (given.unknown.values() if given is not None else ()) if "pool sizing is not transcribed" in why), None)
    if untranscribed is not None:  # a release no era holds: explain gives no figure, so nothing of its sizing is proven
        bad.append(("untranscribed: no pool sizing era holds the release", untranscribed))
        return bad, reported, dict(agreed)
    if "error" in answer:  # the release's sizing refused
        if given is None or given.refusal is None:
            shown = {k: f"{b.low}-{b.high}" for k, b in (given or own).figures.items()}
            bad.append((f"refusal: missed ({_shape(answer['error'])})", f"SGLang {version}: {answer['error']} | explain: {shown}"))
        else:
            agreed["refusal"].append(answer["error"].split(":")[0])
        return bad, reported, dict(agreed)
    assert given is not None and pools is not None
    expected = release_figures(pools)
    if given.refusal is not None:
        bad.append(("refusal: explain refuses", f"explain: {given.refusal} | SGLang {version} sized {expected}"))
    for name, value in expected.items():
        bound = given.figures.get(name)
        if bound is None:
            bad.append((f"figure: {name} (unknown)", f"explain: {given.unknown.get(name)} | SGLang {version}: {value}"))
        elif not (bound.low == bound.high == value):
            bad.append((f"figure: {name}", f"explain {bound.low}-{bound.high}, SGLang {version} {value} ({case['family']})"))
        else:
            agreed["figure"].append(name)
    # Explain's own predictions of the post-init values the sizing read: a figure must be the
    # release's, or a range holding it; where it is not, the values predicted differently say why.
    wrong = []
    for name, value in expected.items():
        bound = own.figures.get(name)
        if bound is not None and bound.low == bound.high == value:
            agreed["exact"].append(name)
        elif bound is not None and bound.low <= value <= bound.high:
            agreed["range"].append(name)
        elif bound is None:
            agreed["unknown"].append(name)
        else:
            wrong.append(name)
    if not wrong:
        return bad, reported, dict(agreed)
    differing = [f for f in INPUTS if f in read and not _same_input(f, facts.effective_value(f), read[f], case["family"] in HYBRID)]
    for field in differing:
        reported.append((f"input: {field}", f"explain {facts.effective_value(field)!r}, SGLang {version} {read[field]!r}; figures not holding the release's: {', '.join(wrong)}"))
    if not differing:
        for name in wrong:
            bad.append((f"figure from explain's own values: {name}", f"{case['family']}: {own.figures.get(name)} vs {expected[name]}"))
    return bad, reported, dict(agreed)


def known(cls: str, known_classes: dict[str, str]) -> str | None:
    return next((reason for prefix, reason in known_classes.items() if cls == prefix or cls.startswith(prefix + " ")), None)


# ---- the run and its report ---------------------------------------------------------------------


def empty_report() -> dict:
    return {"generated": {}, "refused": {}, "classes": defaultdict(list), "reported": defaultdict(list), "agreed": defaultdict(lambda: defaultdict(int)), "seconds": {}}


def add(report: dict, version: str, case: dict, answer: dict) -> None:
    bad, reported, agreed = compare(case, version, answer)
    for cls, detail in bad:
        report["classes"][cls].append({"release": version, "name": case["name"], "command": command_text(case), "gpu": case["gpu"], "memory": case["memory"], "detail": detail})
    for cls, detail in reported:
        report["reported"][cls].append({"release": version, "name": case["name"], "detail": detail})
    for kind, names in agreed.items():
        report["agreed"][version][kind] += len(names)


def run(releases: Iterable[str], cases_of: Callable[[str], list[dict]], python: Path, *, log: Callable[[str], None] = print) -> dict:
    report = empty_report()
    for version in releases:
        started = time.monotonic()
        cases = cases_of(version)
        answers = real_answers(version, python, cases)
        report["generated"][version] = len(cases)
        report["refused"][version] = sum("error" in answers[c["name"]] for c in cases)
        for case in cases:
            add(report, version, case, answers[case["name"]])
        report["seconds"][version] = time.monotonic() - started
        log(f"{version}: {len(cases)} commands, {report['refused'][version]} refused, {report['seconds'][version]:.0f} s")
    return report


def per_release(report: dict) -> dict[str, dict[str, int]]:
    """Commands, refusals, agreements and disagreements per release."""
    known_classes = report.get("known", KNOWN)
    out = {
        v: {"commands": n, "refused": report["refused"].get(v, 0), "figures": report["agreed"][v].get("figure", 0),
            "refusals": report["agreed"][v].get("refusal", 0), "exact": report["agreed"][v].get("exact", 0),
            "range": report["agreed"][v].get("range", 0), "unknown": report["agreed"][v].get("unknown", 0),
            "disagreements": 0, "known": 0, "inputs": 0}
        for v, n in report["generated"].items()
    }  # fmt: skip
    for cls, items in report["classes"].items():
        for item in items:
            out[item["release"]]["known" if known(cls, known_classes) else "disagreements"] += 1
    for cls, items in report["reported"].items():
        if cls.startswith("input:"):
            for item in items:
                out[item["release"]]["inputs"] += 1
    return dict(sorted(out.items(), key=lambda kv: _key(kv[0])))


def render(report: dict) -> str:
    rows = per_release(report)
    lines = ["release  commands  refused  figures  refusals  own:exact  range  unknown  disagreements  known  inputs"]
    lines += [
        f"{v:8} {r['commands']:9} {r['refused']:8} {r['figures']:8} {r['refusals']:9} {r['exact']:10} {r['range']:6} {r['unknown']:8} {r['disagreements']:14} {r['known']:6} {r['inputs']:7}"
        for v, r in rows.items()
    ]
    known_classes = report.get("known", KNOWN)
    for title, classes in (("disagreements", report["classes"]), ("reported (post-init refusals, inputs the rules predict differently)", report["reported"])):
        total = sum(len(v) for v in classes.values())
        lines.append(f"\n{title}: {total} in {len(classes)} classes")
        for cls, items in sorted(classes.items(), key=lambda kv: -len(kv[1])):
            releases = sorted({i["release"] for i in items}, key=_key)
            reason = known(cls, known_classes) if classes is report["classes"] else None
            lines.append(f"[{len(items)}x, {releases[0]}..{releases[-1]}] {cls}" + (f"  (known: {reason})" if reason else ""))
            lines.append(f"    e.g. {items[0]['release']} {items[0]['name']}: {items[0]['detail'][:300]}")
            if "command" in items[0]:
                lines.append(f"    {items[0]['command']}  gpu={items[0]['gpu']} memory={items[0]['memory']}")
    if report.get("seconds"):
        lines.append(f"\ntime: {sum(report['seconds'].values()):.0f} s ({', '.join(f'{v} {s:.0f}' for v, s in report['seconds'].items())})")
    return "\n".join(lines)


def stored() -> dict:
    return json.loads(DATA.read_text())


def stored_answer(answer: dict) -> dict:
    """The part of an answer the comparison and the docs read."""
    if "error" in answer:
        out = {"error": answer["error"], "stage": answer.get("stage")}
        if "read" in answer:
            out["read"] = {k: v for k, v in answer["read"].items() if k in INPUTS or k == "eagle_draft_num_layers"}
        return out
    pools = dict(answer["pools"])
    pools["read"] = {k: v for k, v in pools["read"].items() if k in INPUTS}
    return {"pools": pools}


def write_stored(python: Path, releases: list[str] | None = None) -> dict:
    """The fixed set: STORED_PER_RELEASE cases per release (drawn with its fixed seed) and the pinned ones,
    with each release's answers (releases not named keep their stored cases)."""
    import hypothesis

    data = stored() if DATA.exists() and releases else {"releases": {}}
    out: dict[str, Any] = {
        "about": (
            "Launch commands over the flags SGLang's pool sizing reads, crossed with model families, simulated GPUs "
            "and memory figures (free bytes per GPU before the weights load, and the weights' bytes), Hypothesis-drawn "
            "(a fixed seed per release) and pinned, with what each release's own post-init and KV/mamba pool sizing made of them "
            "(max_total_num_tokens, max_running_requests per attention-DP worker, context_len, max_mamba_cache_size, "
            "mamba_cache_per_req, cell_size, and the post-init values the sizing read) or its one-line refusal. "
            "{models} is tests/data/model-configs. Written by tests/real_sglang/pool_differential.py --store; checked "
            "by tests/test_pool_differential.py and by the real tier. 'known' lists the open classes with their reasons."
        ),
        "hypothesis": hypothesis.__version__,
        "known": KNOWN,
        "releases": dict(data.get("releases", {})),
    }
    for version in releases or versions():
        started = time.monotonic()
        cases = generate(version, STORED_PER_RELEASE, derandomize=False, seed=stored_seed(version)) + pinned(version)
        answers = real_answers(version, python, cases)
        out["releases"][version] = {"cases": [{**case, "answer": stored_answer(answers[case["name"]])} for case in cases]}
        # No time is stored: a second --store of the same release writes the same bytes.
        print(f"{version}: {len(cases)} stored ({time.monotonic() - started:.1f} s)", file=sys.stderr)
    out["releases"] = dict(sorted(out["releases"].items(), key=lambda kv: _key(kv[0])))
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

BEGIN, END = "<!-- pool tables: written by pool_differential.py --docs -->", "<!-- end of pool tables -->"


def docs_tables(data: dict | None = None) -> str:
    """The generated part of the pool section of docs/explain-proof.md, from the stored set."""
    data = data or stored()
    report = check_stored(data)
    rows = per_release(report)
    lines = [
        "| release | commands | not sized (refused by post-init or the model registry) | refused by the sizing | explain gives the refusal | sized | figures | equal | explain's own values: exact | a range holding it | unknown | neither | disagreements | open |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    keys = ("commands", "excluded", "sizing_refused", "refusals", "sized", "compared", "figures", "exact", "range", "unknown", "wrong", "disagreements", "known")
    for v, r in rows.items():
        cases = data["releases"][v]["cases"]
        r["excluded"] = sum(1 for c in cases if c["answer"].get("stage") in ("post-init", "model"))
        r["sizing_refused"] = sum(1 for c in cases if c["answer"].get("stage") == "pools")
        r["sized"] = sum(1 for c in cases if "pools" in c["answer"])
        r["compared"] = sum(len(release_figures(c["answer"]["pools"])) for c in cases if "pools" in c["answer"])
        r["wrong"] = r["compared"] - r["exact"] - r["range"] - r["unknown"]
        lines.append(f"| {v} | " + " | ".join(str(r[k]) for k in keys) + " |")
    lines.append("| all | " + " | ".join(str(sum(r[k] for r in rows.values())) for k in keys) + " |")
    lines += [
        "",
        "A sized command gives three figures (`max_total_num_tokens`, `max_running_requests`, `context_len`), four for a "
        "hybrid model (`mamba_cache_size`), and `max_req_input_len` (the longest prompt, by the TP worker's own statements) "
        "where the stored answer has it. *Equal*: exact and the release's, computed from the post-init values the "
        "release read. *Explain's own values*: computed from the post-init values explain's rules predict, as "
        "`explain_launch` has them.",
    ]
    why_unknown: dict[str, int] = defaultdict(int)
    for version, release in data["releases"].items():
        for case in release["cases"]:
            if "pools" in case["answer"]:
                compared = release_figures(case["answer"]["pools"])
                for name, why in estimates(case, version, None)[1].unknown.items():
                    if name in compared:  # a figure the release gave (answers stored before max_req_input_len lack it)
                        why_unknown[why] += 1
    if why_unknown:
        lines += ["", "Why explain's own figures were unknown:", "", "| reason | figures |", "|---|---|"]
        lines += [f"| {why} | {n} |" for why, n in sorted(why_unknown.items(), key=lambda kv: -kv[1])]
    lines += ["", "Post-init values explain's rules predicted differently from the release (the figures then follow the rules' value):", ""]
    inputs = {cls: items for cls, items in report["reported"].items() if cls.startswith("input:")}
    if inputs:
        lines += ["| value | cases | releases |", "|---|---|---|"]
        for cls, items in sorted(inputs.items()):
            lines.append(f"| `{cls.removeprefix('input: ')}` | {len(items)} | {_span({i['release'] for i in items})} |")
    else:
        lines.append("None.")
    lines += ["", "Open disagreement classes:", ""]
    if data.get("known"):
        lines += ["| class | reason |", "|---|---|"] + [f"| `{cls}` | {reason} |" for cls, reason in sorted(data["known"].items())]
    else:
        lines.append("None.")
    return "\n".join(lines) + "\n"


def _span(releases: Iterable[str]) -> str:
    known_releases = versions()
    chosen = sorted(set(releases), key=_key)
    runs: list[list[str]] = []
    for v in chosen:
        if runs and known_releases.index(v) == known_releases.index(runs[-1][-1]) + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return ", ".join(r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def write_docs() -> None:
    text = DOCS.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    DOCS.write_text(f"{head}{BEGIN}\n\n{docs_tables()}\n{END}{tail}")


def docs_block() -> str:
    text = DOCS.read_text()
    return text.partition(BEGIN)[2].partition(END)[0].strip("\n") + "\n"


if __name__ == "__main__":
    import argparse

    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("releases", nargs="*", help="releases to compare (default: every release with a flag table)")
    cli.add_argument("--examples", type=int, default=12, help="fresh commands per release (default 12)")
    cli.add_argument("--seed", type=int, default=None, help="a fixed seed for the fresh sample")
    cli.add_argument("--store", action="store_true", help="rewrite the stored fixed set (of the releases named, or all)")
    cli.add_argument("--check-stored", action="store_true", help="check the stored set against the current explain")
    cli.add_argument("--docs", action="store_true", help="rewrite the generated tables of docs/explain-proof.md")
    options = cli.parse_args()
    if options.docs:
        write_docs()
        sys.exit(0)
    if options.check_stored:
        result = check_stored()
    else:
        import harness

        python = harness.ensure_environment()
        if options.store:
            write_stored(python, options.releases or None)
            result = check_stored()
        else:
            chosen = options.releases or versions()
            result = run(chosen, lambda v: generate(v, options.examples, derandomize=False, seed=options.seed) + pinned(v), python, log=lambda m: print(m, file=sys.stderr))
    print(render(result))
    sys.exit(1 if any(not known(c, result.get("known", KNOWN)) for c in result["classes"]) else 0)
