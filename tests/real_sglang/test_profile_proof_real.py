"""Every bundled simulator profile through its release's own post-init and pool sizing (run with
--real-sglang): each release still gives the stored answer (tests/data/sglang-profile-proof.json),
and the profile reports what that release sets (profile_proof.py).
"""

from __future__ import annotations

import profile_proof as proof
import pytest

from pytest_sglang.sim import bundled_profiles, load_profile

STORED = proof.stored()


@pytest.mark.parametrize("name", bundled_profiles())
def test_each_profile_is_what_its_release_produces(sglang_python, name):
    profile = load_profile(name)
    fresh = proof.ask(proof.case_of(profile), sglang_python)
    assert fresh["answer"] == STORED["profiles"][name]["answer"], f"SGLang {profile.sglang_version} answers differently for {name}: run tests/real_sglang/profile_proof.py --store"
    result = proof.compare(profile, fresh)
    assert not result["differences"], "\n".join(result["differences"])
