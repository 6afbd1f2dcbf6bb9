"""Every bundled simulator profile is a deployment its SGLang release produces.

``tests/data/sglang-profile-proof.json`` holds what each profile's release made of the profile's
launch command on its simulated GPU and memory (``tests/real_sglang/profile_proof.py``): every
field after the release's own post-init, and its pool sizing. Each field the profile reports must
have the release's value; the fields the profile lists in ``after_post_init`` must equal the pool
sizing where it computes them. The real tier asks each release again.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "real_sglang"))

import profile_proof as proof  # noqa: E402

from pytest_sglang.sim import bundled_profiles, load_profile  # noqa: E402

STORED = proof.stored()


@pytest.mark.parametrize("name", bundled_profiles())
def test_the_stored_answer_is_for_the_profile_as_it_stands(name):
    stored = STORED["profiles"].get(name)
    assert stored is not None, f"{name} has no stored answer: run tests/real_sglang/profile_proof.py --store"
    assert stored["case"] == proof.case_of(load_profile(name)), f"{name}'s launch command, GPU or memory changed: run tests/real_sglang/profile_proof.py --store"


@pytest.mark.parametrize("name", bundled_profiles())
def test_each_reported_field_is_what_its_release_sets(name):
    profile = load_profile(name)
    result = proof.compare(profile, STORED["profiles"][name])
    assert not result["differences"], "\n".join(result["differences"])
    assert result["equal"] == result["compared"] > 300


@pytest.mark.parametrize("name", bundled_profiles())
def test_the_fields_set_after_post_init_are_listed_and_sized(name):
    profile = load_profile(name)
    assert set(proof.SIZED) - {"scheduler_args.max_mamba_cache_size"} <= set(profile.after_post_init)
    excepted = proof.compare(profile, STORED["profiles"][name])["excepted"]
    assert not set(excepted) & set(proof.SIZED), f"{name}: the pool sizing computes {sorted(set(excepted) & set(proof.SIZED))}, yet they are excepted"


def test_a_field_its_release_does_not_set_is_a_difference():
    profile = load_profile("qwen35-122b-a10b-4xrtx6000-baseline")
    wrong = profile.model_copy(update={"server_args": {**profile.server_args, "disable_piecewise_cuda_graph": True}})
    wrong_runtime = profile.model_copy(update={"runtime": profile.runtime.model_copy(update={"max_total_num_tokens": 412160})})
    assert proof.compare(wrong, STORED["profiles"][profile.name])["differences"] == [
        "disable_piecewise_cuda_graph: reported True, SGLang 0.5.12 sets False"
    ]
    assert proof.compare(wrong_runtime, STORED["profiles"][profile.name])["differences"] == [
        "runtime.max_total_num_tokens: the profile says 412160, SGLang 0.5.12's pool sizing gives 550484"
    ]


def test_the_seed_story_is_what_sglang_0_5_12_does():
    """Before: 48 running requests and a piecewise (prefill) CUDA graph; after: 26 (132 mamba
    slots, 5 per request) and no piecewise graph, both by the release's own code."""
    before = STORED["profiles"]["qwen35-122b-a10b-4xrtx6000-baseline"]["answer"]
    after = STORED["profiles"]["qwen35-122b-a10b-4xrtx6000-candidate"]["answer"]
    assert before["fields"]["disable_piecewise_cuda_graph"] is False
    assert before["pools"]["max_running_requests"] == 48
    assert after["fields"]["disable_piecewise_cuda_graph"] is True
    assert (after["pools"]["max_running_requests"], after["pools"]["max_mamba_cache_size"]) == (26, 132)
