"""The pool-sizing differential against every release (run with --real-sglang): each release's own
post-init and KV/mamba pool sizing, on simulated GPU memory, still gives the stored answers
(tests/data/sglang-pool-differential.json), and a fresh sample of launch commands per release
agrees with explain's pool sizing (pool_differential.py: every figure exact and equal from the
release's post-init values, a refusal where the release's sizing raised).

``SGLANG_POOLS_EXAMPLES`` (default 6) sets the sample per release; ``SGLANG_POOLS_SEED`` picks it
(default a fixed seed, so CI cannot fail by chance; ``random`` draws a new one, and every failure
message names its seed). Each release is imported once for its stored and fresh cases.
"""

from __future__ import annotations

import os
import random
from functools import lru_cache
from pathlib import Path

import pool_differential as differential
import pytest
from differential import executed_versions

EXAMPLES = int(os.environ.get("SGLANG_POOLS_EXAMPLES", "6"))
_SEED_TEXT = os.environ.get("SGLANG_POOLS_SEED", "20261205")
SEED = random.randrange(2**32) if _SEED_TEXT == "random" else int(_SEED_TEXT)
STORED = differential.stored()


@lru_cache(maxsize=None)
def _release(version: str, python: Path) -> tuple[list[dict], list[dict], dict]:
    """(stored cases, sample cases, answers) from one import of the release."""
    stored = STORED["releases"][version]["cases"]
    sample = [{**case, "name": f"sample-{case['name']}"} for case in differential.generate(version, EXAMPLES, derandomize=False, seed=SEED)]
    answers = differential.real_answers(version, python, stored + sample)
    return stored, sample, {name: differential.stored_answer(a) for name, a in answers.items()}


@pytest.mark.parametrize("version", executed_versions())
def test_the_stored_answers_are_what_each_release_says(sglang_python, version):
    stored, _, answers = _release(version, sglang_python)
    for case in stored:
        assert answers[case["name"]] == case["answer"], f"{case['name']}: run tests/real_sglang/pool_differential.py --store {version}"


@pytest.mark.parametrize("version", executed_versions())
def test_a_fresh_sample_agrees_with_explain(sglang_python, version):
    _, sample, answers = _release(version, sglang_python)
    report = differential.empty_report()
    report["known"] = STORED["known"]
    report["generated"][version] = len(sample)
    report["refused"][version] = sum("error" in answers[c["name"]] for c in sample)
    for case in sample:
        differential.add(report, version, case, answers[case["name"]])
    open_ = [cls for cls in report["classes"] if not differential.known(cls, STORED["known"])]
    assert not open_, f"SGLANG_POOLS_SEED={SEED}\n" + differential.render(report)
