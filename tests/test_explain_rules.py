"""Every knowledge-base rule, proven on its own cases: at least one where it fires and one
where it stays silent (``tests/data/explain-cases/*.toml``, one file per rule file).

A case is a launch command with the facts a user would give ``pytest-sglang explain --launch``:

    [[case]]
    rule = "pcg.multimodal"
    expect = "fires"              # fires | silent | undecided
    why = "Qwen3.5 is multimodal: 0.5.12 disables piecewise CUDA graphs"
    command = "python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --tp 4"
    sglang_version = "0.5.12"
    sm = 120                      # or gpu = "RTX PRO 6000"; gpus = 4; gpu_memory = "96GiB"
    model = "Qwen3_5MoeForConditionalGeneration"
    predicted = true              # optional: the value the finding predicts
    severity = "info"             # optional
    needs = "gpu.sm"              # for undecided: the missing fact
    runtime = { mamba_cache_size = 132 }   # optional: values SGLang decides at start-up, as
                                           # a running server reports them (runtime.*)
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_sglang.judge.explain import explain_launch, load

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CASES_DIR = Path(__file__).parent / "data" / "explain-cases"
_KEYS = {"rule", "expect", "why", "command", "sglang_version", "sm", "gpu", "gpus", "gpu_memory", "model", "predicted", "severity", "needs", "lint", "runtime"}


def _cases() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(CASES_DIR.glob("*.toml")):
        for index, case in enumerate(tomllib.loads(path.read_text(encoding="utf-8")).get("case", [])):
            out.append((f"{path.stem}:{index + 1}:{case.get('rule')}:{case.get('expect')}", case))
    return out


CASES = _cases()


def _explain(case: dict[str, Any]):
    def run():
        return explain_launch(
            case["command"],
            sglang_version=case.get("sglang_version"),
            sm=case.get("sm"),
            gpu=case.get("gpu"),
            gpus=case.get("gpus"),
            gpu_memory=case.get("gpu_memory"),
            model=case.get("model"),
        )

    if "runtime" not in case:
        return run()
    # The start-up values (the mamba pool size...) a launch command cannot know: given to the
    # situation the launch command is judged in, as a running server would report them.
    from pytest_sglang.judge.explain import api

    judge = api.explain_situation

    def with_runtime(situation):
        situation.runtime = SimpleNamespace(**case["runtime"])
        return judge(situation)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(api, "explain_situation", with_runtime)
        return run()


def test_the_case_files_exist_and_are_well_formed():
    assert CASES, f"no cases in {CASES_DIR}"
    for name, case in CASES:
        assert set(case) <= _KEYS, f"{name}: unknown keys {sorted(set(case) - _KEYS)}"
        assert case.get("expect") in ("fires", "silent", "undecided"), name
        assert case.get("why"), f"{name}: say what the case shows"
        assert case.get("rule") in load().by_id, f"{name}: no rule {case.get('rule')!r}"


def test_every_rule_has_a_case_where_it_fires_and_one_where_it_is_silent():
    covered: dict[str, set[str]] = {}
    for _, case in CASES:
        covered.setdefault(case["rule"], set()).add(case["expect"])
    missing = [f"{rule.id} ({', '.join(sorted({'fires', 'silent'} - covered.get(rule.id, set())))})" for rule in load().rules if not {"fires", "silent"} <= covered.get(rule.id, set())]
    assert not missing, "rules without a positive and a negative case: " + "; ".join(missing)


@pytest.mark.parametrize("case", [c for _, c in CASES], ids=[n for n, _ in CASES])
def test_rule_case(case: dict[str, Any]) -> None:
    explanation = _explain(case)
    rule = case["rule"]
    mine = [f for f in explanation.findings if f.rule == rule]
    undecided = [f for f in explanation.findings if rule in f.related]
    if case["expect"] == "silent":
        assert not mine and not undecided, [f.summary for f in mine + undecided]
        return
    if case["expect"] == "undecided":
        assert not mine, [f.summary for f in mine]
        assert undecided, f"{rule} was decided: {[f.summary for f in explanation.findings]}"
        if "needs" in case:
            assert any(case["needs"] in f.needs for f in undecided), [f.needs for f in undecided]
        return
    assert mine, f"{rule} did not fire; findings: {[f.id for f in explanation.findings]}"
    finding = mine[0]
    assert finding.status != "undecided"
    if "predicted" in case:
        assert finding.predicted == case["predicted"], finding.summary
    if "severity" in case:
        assert finding.severity == case["severity"], finding.summary
    if "lint" in case:
        assert finding.lint is case["lint"], finding.summary
    assert finding.cause and finding.sources
