"""explain_launch against what every SGLang release's own post-init made of the same launch
commands on a simulated GPU (the post-init differential's stored set).

``tests/data/sglang-postinit-differential.json`` holds launch commands Hypothesis wrote over the
flags the rules read, each with a model family and a simulated GPU, and what that release's
``prepare_server_args`` (post-init and its handlers; 0.5.19+ also ``resolve_once``) made of it:
every rule setting's value, the rule settings it changed, or the one-line refusal. Written by
``tests/real_sglang/postinit_differential.py --store``; the real tier checks the answers are
still the releases' own and compares a fresh sample. Every value explain predicts must be the
release's, every error it predicts a refusal, every no-op an accepted command; the open classes
the stored set lists (``known``, each with its reason) are the only exceptions.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "real_sglang"))

import postinit_differential as differential  # noqa: E402

DATA = json.loads(differential.DATA.read_text())
CASES = [(version, case) for version, release in DATA["releases"].items() for case in release["cases"]]


@pytest.mark.parametrize("version, case", CASES, ids=[case["name"] for _, case in CASES])
def test_each_prediction_is_what_the_release_did(version, case):
    bad, _, _ = differential.compare(case, version, case["answer"])
    open_ = [(cls, detail) for cls, detail in bad if not differential.known(cls, DATA["known"])]
    assert open_ == [], f"{differential.command_text(case)} on {case['gpu']} (SGLang {version}): {open_}"


def test_the_stored_set_covers_every_release_family_and_gpu():
    assert list(DATA["releases"]) == differential.versions()
    assert {case["family"] for _, case in CASES if "-pinned-" not in case["name"]} - {differential.UNREGISTERED} == set(differential.FAMILIES)
    assert {case["gpu"]["sm"] for _, case in CASES} == set(differential.GPUS)
    memory = [case["gpu"]["memory_mib"] for _, case in CASES]
    assert min(memory) < 32 * 1024 and max(memory) > 180 * 1024
    assert {case["gpu"]["count"] for _, case in CASES} == {1, 2, 4, 8}
    for version, release in DATA["releases"].items():
        accepted = [c for c in release["cases"] if "values" in c["answer"]]
        assert len(accepted) >= len(release["cases"]) // 2, f"{version}: most stored commands must run through post-init"


def test_predictions_of_every_kind_were_checked_against_an_execution():
    report = differential.check_stored(DATA)
    kinds = {kind for by_kind in report["agreed"].values() for kind in by_kind}
    assert {"value", "error"} <= kinds
    assert len(report["agreed"]) >= 20, sorted(report["agreed"])
    proven = {rule for rule, by_kind in report["agreed"].items() if "value" in by_kind}
    assert any(r.startswith("gpumem.") for r in proven) and any(r.startswith("capacity.") for r in proven)


def test_every_open_class_has_a_reason():
    for cls, reason in DATA["known"].items():
        assert cls.split(":")[0] in ("value", "error", "noop") and len(reason) > 20, cls


def test_the_comparison_catches_a_wrong_prediction():
    # A stored value the release set, altered, must disagree with the explain finding that
    # predicted it; a refusal explain predicts for an accepted command must disagree too.
    report = differential.check_stored(DATA)
    rule = next(r for r, kinds in sorted(report["agreed"].items()) if "value" in kinds and not r.startswith("runtime."))
    version, case = next((v, c) for v, c in CASES if "values" in c["answer"] and rule in differential.compare(c, v, c["answer"])[2].get("value", []))
    setting = next(r.setting for r in differential._kb().order if r.id == rule)
    wrong = copy.deepcopy(case["answer"])
    value = wrong["values"][setting]
    wrong["values"][setting] = (not value) if isinstance(value, bool) else ("another" if isinstance(value, str) or value is None else value * 3 + 7)
    classes = [cls for cls, _ in differential.compare(case, version, wrong)[0]]
    assert f"value: {rule}" in classes
    refusing = next((v, c) for v, c in CASES if "error" in c["answer"] and differential.compare(c, v, c["answer"])[2].get("error"))
    accepted = {"values": {}, "changed": []}
    assert any(cls.startswith("error: ") for cls, _ in differential.compare(refusing[1], refusing[0], accepted)[0])


def test_the_proof_page_tables_are_the_stored_set():
    assert differential.docs_block() == differential.docs_tables(DATA), "regenerate: python tests/real_sglang/postinit_differential.py --docs"


# Rules a release's own post-init proves through the pinned commands; spec.overlap-off-env
# reads SGLANG_ENABLE_SPEC_V2 from the launch environment, which the stored executions do not
# vary (its source is checked by tests/real_sglang/test_kb_sources.py).
PINNED_RULES = (
    "spec.overlap-off.v0",
    "spec.overlap-off.beta",
    "spec.overlap-off",
    "spec.overlap-off-topk",
    "spec.ngram-overlap-off",
    "spec.ngram-overlap-off.v2",
    "spec.dflash-overlap-off",
    "spec.dflash-overlap-off.v2",
    "capacity.glm4moe-overlap-0508",
)


@pytest.mark.parametrize("rule_id", PINNED_RULES)
def test_each_overlap_rule_is_proven_in_every_release_it_covers(rule_id):
    from packaging.version import Version

    rule = next(r for r in differential._kb().order if r.id == rule_id)
    covered = {v for v in differential.versions() if rule.covers(Version(v))}
    proven = differential.check_stored(DATA)["agreed"].get(rule_id, {}).get("value", set())
    assert proven == covered, f"{rule_id}: proven in {sorted(proven)}, covers {sorted(covered)}"


def test_no_release_changes_the_overlap_schedule_of_a_pinned_command_unexplained():
    pinned = [(v, c) for v, c in CASES if "-pinned-" in c["name"]]
    assert {v for v, _ in pinned} == set(differential.versions())
    misses = [(v, c["name"]) for v, c in pinned if "values" in c["answer"] for cls, _ in differential.compare(c, v, c["answer"])[1] if cls == "miss: disable_overlap_schedule"]
    assert misses == []
