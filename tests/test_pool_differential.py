"""Explain's pool sizing (``pytest_sglang.judge.explain.pools``) against what every SGLang
release's own KV and mamba pool sizing made of the same launch commands on simulated GPU memory
(the pool differential's stored set), and its ranges before start.

``tests/data/sglang-pool-differential.json`` holds launch commands over the flags the sizing
reads, each with a model family, a simulated GPU and the two memory figures (free bytes before the
weights load, the weights' bytes), and what that release's post-init and pool sizing made of it,
or its one-line refusal. Written by ``tests/real_sglang/pool_differential.py --store``; the real
tier checks the answers are still the releases' own and compares a fresh sample. Given the two
memory figures, every figure explain computes from the post-init values the release read is exact
and equal (``figure``), and a refusal is where the release's sizing raised; from explain's own
predictions, each figure is the release's or a range holding it, except where a value the rules
predict differs (reported by field).
"""

from __future__ import annotations

import copy
import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "real_sglang"))

import pool_differential as differential  # noqa: E402

from pytest_sglang.judge.explain.pools import Bound, PoolEstimate, estimate_pools  # noqa: E402

DATA = json.loads(differential.DATA.read_text())
CASES = [(version, case) for version, release in DATA["releases"].items() for case in release["cases"]]
H100 = {"gpu": "NVIDIA H100 80GB HBM3", "sm": 90, "gpu_memory": 81559}


@pytest.mark.parametrize("version, case", CASES, ids=[case["name"] for _, case in CASES])
def test_each_figure_is_what_the_release_sized(version, case):
    bad, _, _ = differential.compare(case, version, case["answer"])
    open_ = [(cls, detail) for cls, detail in bad if not differential.known(cls, DATA["known"])]
    assert open_ == [], f"{differential.command_text(case)} on {case['gpu']} with {case['memory']} (SGLang {version}): {open_}"


def test_the_stored_set_covers_every_release_family_gpu_and_flag():
    assert list(DATA["releases"]) == differential.versions()
    assert {case["family"] for _, case in CASES} == set(differential.FAMILIES)
    assert {case["gpu"]["sm"] for _, case in CASES} == set(differential.GPUS)
    assert {case["gpu"]["count"] for _, case in CASES} == {1, 2, 4, 8}
    memory = [case["gpu"]["memory_mib"] for _, case in CASES]
    assert min(memory) < 32 * 1024 and max(memory) > 180 * 1024
    drawn = {flag for _, case in CASES for flag in case["flags"]}
    assert {"max_running_requests", "disable_radix_cache", "max_mamba_cache_size", "mamba_full_memory_ratio", "mem_fraction_static",
            "max_total_tokens", "context_length", "page_size", "kv_cache_dtype", "speculative_algorithm", "enable_dp_attention", "tp_size"} <= drawn  # fmt: skip
    assert drawn & {"mamba_scheduler_strategy", "mamba_radix_cache_strategy"}
    for version, release in DATA["releases"].items():
        sized = [c for c in release["cases"] if "pools" in c["answer"]]
        assert len(sized) >= len(release["cases"]) // 2, f"{version}: most stored commands must reach the pool sizing"
        # A family the release's model registry lacks is refused before any sizing: never drawn.
        assert {c["family"] for c in release["cases"]} <= set(differential.families(version)), version


def test_figures_and_refusals_of_every_kind_were_checked_against_an_execution():
    report = differential.check_stored(DATA)
    rows = differential.per_release(report)
    assert all(r["figures"] > 0 for r in rows.values())
    assert sum(r["refusals"] for r in rows.values()) > 0
    assert sum(r["exact"] for r in rows.values()) > sum(r["range"] for r in rows.values())
    hybrid = [c for _, c in CASES if "pools" in c["answer"] and "max_mamba_cache_size" in c["answer"]["pools"]]
    assert {c["family"] for c in hybrid} == differential.HYBRID


def test_the_comparison_catches_a_wrong_figure_and_a_missed_refusal():
    version, case = next((v, c) for v, c in CASES if "pools" in c["answer"] and "max_mamba_cache_size" in c["answer"]["pools"])
    for field in ("max_total_num_tokens", "max_running_requests", "max_mamba_cache_size"):
        wrong = copy.deepcopy(case["answer"])
        wrong["pools"][field] += 1
        classes = [cls for cls, _ in differential.compare(case, version, wrong)[0]]
        assert any(cls.startswith("figure: ") for cls in classes), field
    refused = {"error": "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", "stage": "pools", "read": case["answer"]["pools"]["read"]}
    assert any(cls.startswith("refusal: missed") for cls, _ in differential.compare(case, version, refused)[0])


def test_a_release_no_era_holds_is_an_open_disagreement(monkeypatch):
    # Explain gives no figure for a release whose sizing no era transcribes: the comparison must
    # fail it, never pass it as agreeing.
    import dataclasses

    from packaging.version import Version

    from pytest_sglang.judge.explain import pools

    version, case = next((v, c) for v, c in CASES if "pools" in c["answer"])
    data = pools._data()
    held = pools._era(Version(version))
    monkeypatch.setattr(pools, "_data", lambda: dataclasses.replace(data, eras=tuple(e for e in data.eras if e is not held)))
    bad = differential.compare(case, version, case["answer"])[0]
    assert [cls for cls, _ in bad] == ["untranscribed: no pool sizing era holds the release"]
    assert not differential.known(bad[0][0], DATA["known"])


def test_every_open_class_has_a_reason():
    for cls, reason in DATA["known"].items():
        assert len(reason) > 20, cls


def test_the_proof_page_tables_are_the_stored_set():
    assert differential.docs_block() == differential.docs_tables(DATA), "regenerate: python tests/real_sglang/pool_differential.py --docs"


# ---- before start: ranges --------------------------------------------------------------------


def _estimate(command: str, family: str, version: str, *, gpus: int = 1, **memory: int) -> PoolEstimate:
    return estimate_pools(_situation(command, family, version, gpus), **memory)


def _situation(command: str, family: str, version: str, gpus: int):  # type: ignore[no-untyped-def]
    from pytest_sglang.judge.explain import api

    seen: list = []
    original = api.explain_situation
    api.explain_situation = lambda one: (seen.append(one), original(one))[1]
    try:
        api.explain_launch(command, gpus=gpus, sglang_version=version, model=str(differential.MODELS / family / "config.json"), **H100)
    finally:
        api.explain_situation = original
    return seen[-1]


def test_a_running_request_cap_the_kv_pool_cannot_bind_is_seen_before_start():
    # Llama 3.1 8B on one H100 80GB with --max-running-requests 64 (SGLang 0.5.16): the KV pool
    # holds hundreds of thousands of tokens, so max_total_num_tokens // 2 can never cap 64.
    estimate = _estimate("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --max-running-requests 64", "llama", "0.5.16")
    tokens = estimate.figures["max_total_num_tokens"]
    assert not tokens.exact and tokens.low > 300_000 and tokens.high < 500_000, tokens
    assert tokens.low // 2 > 64 * 1000
    assert estimate.figures["max_running_requests"] == Bound(64, 64, estimate.figures["max_running_requests"].why)
    assert "free memory before loading" in tokens.why and "weights" in tokens.why
    assert estimate.refusal is None


def test_without_radix_cache_the_mamba_cache_is_the_request():
    # --disable-radix-cache: SGLang sizes the mamba pool from the request (ratio 1), so the mamba
    # cap equals the request per worker, whatever the memory.
    estimate = _estimate(
        "python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --tp 4 --max-running-requests 48 --disable-radix-cache",
        "qwen3.5-moe", "0.5.16", gpus=4,
    )  # fmt: skip
    assert estimate.figures["mamba_cache_size"].low == estimate.figures["mamba_cache_size"].high == 48
    dp = _estimate(
        "python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --tp 4 --dp 2 --enable-dp-attention --max-running-requests 48 --disable-radix-cache",
        "qwen3.5-moe", "0.5.16", gpus=4,
    )  # fmt: skip
    assert dp.figures["mamba_cache_size"].low == dp.figures["mamba_cache_size"].high == 24  # per attention-DP worker


def test_the_memory_figures_make_every_figure_exact():
    estimate = _estimate(
        "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --max-running-requests 64", "llama", "0.5.16",
        pre_load_free_bytes=84_000_000_000, weights_bytes=16_060_522_496,
    )  # fmt: skip
    assert all(bound.exact for bound in estimate.figures.values()), estimate.figures
    # rest = post - pre x (1 - 0.83), at 131072 bytes per token (8 KV heads x 2 x 128 x 32 layers x bf16)
    assert estimate.figures["max_total_num_tokens"].low == 409389


def test_a_figure_that_needs_a_missing_fact_is_unknown_with_why():
    from pytest_sglang.judge.explain import api

    seen: list = []
    original = api.explain_situation
    api.explain_situation = lambda one: (seen.append(one), original(one))[1]
    try:
        api.explain_launch("python -m sglang.launch_server --model-path m --max-running-requests 64", sglang_version="0.5.16", model="LlamaForCausalLM", **H100)
        api.explain_launch("python -m sglang.launch_server --model-path m", sglang_version="0.5.16", model=str(differential.MODELS / "llama" / "config.json"), gpu="H100", sm=90)
    finally:
        api.explain_situation = original
    no_config = estimate_pools(seen[0])
    assert not no_config.figures and "config.json" in no_config.unknown["max_total_num_tokens"]
    no_memory = estimate_pools(seen[1].variant(gpu={}))
    assert "GPU memory" in no_memory.unknown["max_total_num_tokens"]
    assert no_memory.figures["context_len"].exact


def test_no_version_no_sizing():
    situation = _situation("python -m sglang.launch_server --model-path m", "llama", "0.5.16", 1).variant(version=None)
    estimate = estimate_pools(situation)
    assert not estimate.figures and "version" in estimate.unknown["max_total_num_tokens"]


def test_every_release_has_one_sizing_era():
    from packaging.version import Version

    from pytest_sglang.judge.explain.pools import _data, _era

    eras = _data().eras
    for version in differential.versions():
        matching = [e for e in eras if e.since <= Version(version) and (e.until is None or Version(version) <= e.until)]
        assert len(matching) == 1, version
        assert {name for name, _ in matching[0].steps} >= {"tokens", "running", "mamba", "refusal"}  # every step compiles
    assert _era(Version(differential.versions()[-1])) is eras[-1]


def test_the_sizing_is_fast():
    situation = _situation("python -m sglang.launch_server --model-path m --tp 4 --max-running-requests 48", "qwen3-next", "0.5.23", 4)
    estimate_pools(situation)
    started = time.process_time()
    for _ in range(20):
        estimate_pools(situation)
        estimate_pools(situation, pre_load_free_bytes=84_000_000_000, weights_bytes=40_000_000_000)
    assert (time.process_time() - started) / 40 < 0.005
