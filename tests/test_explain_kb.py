"""The knowledge base itself: it loads and validates as documented, bad rule files fail on load
in one line naming the file and rule, the rule language is safe and three-valued, and the
rules that need no GPU predict exactly what SGLang 0.5.23's own resolution produced."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_sglang.judge.explain import explain_launch, load
from pytest_sglang.judge.explain import kb as kb_module
from pytest_sglang.judge.explain.expr import ExpressionError, MappingScope, Unknown, compile_expression
from pytest_sglang.judge.explain.kb import KnowledgeError, load_from
from pytest_sglang.model import knowledge as _knowledge

KNOWLEDGE_DIR = Path(_knowledge.__file__).parent  # the knowledge base's data: rule files, lists, flag tables

DATA = json.loads((Path(__file__).parent / "data" / "sglang-0.5.23-resolutions.json").read_text())
ARCHS = {"llama": "LlamaForCausalLM", "qwen3moe": "Qwen3MoeForCausalLM"}
CONFIGS = {"config": DATA["config_yaml"], "config_underscore": DATA["config_underscore_yaml"]}
KNOWLEDGE = (KNOWLEDGE_DIR / "knowledge.toml").read_text()

GOOD_RULE = """
[[rule]]
id = "demo.rule"
title = "A demonstration rule"
since = "0.5.10"
setting = "max_running_requests"
kind = "override"
severity = "info"
when = "arg.tp_size > 1"
value = "48"
explanation = "A rule used to test how rule files are validated."
[[rule.sources]]
release = "0.5.12"
file = "sglang/srt/server_args.py"
lines = [10, 12]
anchor = "class ServerArgs"
"""


# ---- loading -----------------------------------------------------------------------------------


def test_the_packaged_knowledge_base_loads_and_every_rule_cites_its_source():
    kb = load()
    assert len(kb) >= 3
    for rule in kb.rules:
        assert rule.sources and all(s.anchor.strip() for s in rule.sources), rule.id
        assert rule.explanation.strip() and rule.title
    assert kb.order and {r.id for r in kb.order} == {r.id for r in kb.rules}


def test_the_parsed_copy_of_the_rule_files_is_current():
    knowledge, rules, _ = kb_module._texts()
    stored = (KNOWLEDGE_DIR / kb_module.PARSED).read_text().strip()
    assert stored == kb_module.parsed_copy(knowledge, rules), "regenerate: python -m pytest_sglang.judge.explain.kb"


def test_a_stale_parsed_copy_is_never_used(monkeypatch):
    knowledge, rules, lock = kb_module._texts()
    changed = dict(rules)
    name = sorted(changed)[0]
    changed[name] = changed[name].replace('title = "', 'title = "Edited: ', 1)
    monkeypatch.setattr(kb_module, "_texts", lambda: (knowledge, changed, lock))
    kb_module.load.cache_clear()
    try:
        assert any(rule.title.startswith("Edited: ") for rule in kb_module.load().rules)
    finally:
        kb_module.load.cache_clear()


def test_a_valid_rule_file_loads():
    kb = load_from(knowledge_text=KNOWLEDGE, rule_texts={"rules/demo.toml": GOOD_RULE})
    assert [r.id for r in kb.rules] == ["demo.rule"]


@pytest.mark.parametrize(
    "change, message",
    [
        (('when = "arg.tp_size > 1"', 'when = "__import__(\'os\').system(\'true\')"'), "is not allowed in a rule expression"),
        (('when = "arg.tp_size > 1"', 'when = "arg.tp_size >"'), "is not an expression"),
        (('when = "arg.tp_size > 1"', 'when = "secret.key == 1"'), "is not a fact"),
        (('when = "arg.tp_size > 1"', 'when = "arg.tp_size.__class__ == 1"'), "demo.rule"),
        (('kind = "override"', 'kind = "sometimes"'), "kind"),
        (('since = "0.5.10"', 'since = "soon"'), "not an SGLang version"),
        (('value = "48"\n', ""), "needs a value expression"),
        (('lines = [10, 12]', 'lines = [12, 10]'), "lines"),
        (("[[rule.sources]]", "[[rule.source]]"), "demo.rule"),
        (('when = "arg.tp_size > 1"', 'when = "model.arch in list.no_such_list"'), "not a list"),
        (('when = "arg.tp_size > 1"', 'when = "fired(\'no.such-rule\')"'), "names no rule"),
    ],
)
def test_a_malformed_rule_fails_on_load_in_one_line_naming_file_and_rule(change, message):
    text = GOOD_RULE.replace(*change)
    assert text != GOOD_RULE
    with pytest.raises(KnowledgeError) as info:
        load_from(knowledge_text=KNOWLEDGE, rule_texts={"rules/demo.toml": text})
    assert message in str(info.value) and "rules/demo.toml" in str(info.value) and "\n" not in str(info.value)


def test_the_same_rule_id_twice_and_rules_in_a_cycle_are_refused():
    with pytest.raises(KnowledgeError, match="also in rules/a.toml"):
        load_from(knowledge_text=KNOWLEDGE, rule_texts={"rules/a.toml": GOOD_RULE, "rules/b.toml": GOOD_RULE})
    first = GOOD_RULE.replace('when = "arg.tp_size > 1"', "when = \"fired('demo.other')\"")
    second = GOOD_RULE.replace("demo.rule", "demo.other").replace('when = "arg.tp_size > 1"', "when = \"fired('demo.rule')\"")
    with pytest.raises(KnowledgeError, match="cycle"):
        load_from(knowledge_text=KNOWLEDGE, rule_texts={"rules/a.toml": first + second})


def test_a_list_defined_twice_is_refused():
    with pytest.raises(KnowledgeError, match="defined twice"):
        load_from(knowledge_text=KNOWLEDGE, rule_texts={"rules/a.toml": '[lists]\nmultimodal_archs = ["X"]\n'})


# ---- the rule language -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, facts, expected",
    [
        ("gpu.sm in (90, 100) and arg.tp_size > 1", {"arg.tp_size": 1}, False),  # False and unknown
        ("gpu.sm in (90, 100) or arg.tp_size > 1", {"arg.tp_size": 4}, True),  # unknown or True
        ("gpu.sm in (90, 100) and arg.tp_size > 1", {"arg.tp_size": 4}, Unknown(frozenset({"gpu.sm"}))),
        ("not gpu.sm == 120", {}, Unknown(frozenset({"gpu.sm"}))),
        ("tier(gpu.memory_mib, [20480, 35840, 61440, 92160, 163840], [2048, 2048, 4096, 8192, 8192, 16384])", {"gpu.memory_mib": 97887}, 8192),
        ("runtime.mamba_cache_size // (3 + 2)", {"runtime.mamba_cache_size": 132}, 26),
        ("1 if arg.x else 2", {}, Unknown(frozenset({"arg.x"}))),
        ("min(arg.a, 48) if arg.b is None else 0", {"arg.a": 26, "arg.b": None}, 26),
        ("clamp(arg.a, 2048, 4096)", {"arg.a": 10}, 2048),
    ],
)
def test_the_rule_language_is_three_valued(text, facts, expected):
    assert compile_expression(text).evaluate(MappingScope(facts)) == expected


@pytest.mark.parametrize("text", ["open('x')", "arg.x.__class__", "(lambda: 1)()", "[x for x in arg.y]", "arg['x']", "f'{arg.x}'"])
def test_the_rule_language_refuses_anything_but_facts_and_its_functions(text):
    with pytest.raises(ExpressionError):
        compile_expression(text, known_roots={"arg"})


def test_a_fact_of_the_wrong_type_makes_the_expression_unknown_not_an_error():
    value = compile_expression("arg.tp_size > 1").evaluate(MappingScope({"arg.tp_size": "four"}))
    assert isinstance(value, Unknown)


# ---- proven against SGLang 0.5.23's own resolution ----------------------------------------------


def _resolved(case: dict[str, Any]) -> dict[str, Any]:
    resolved = json.loads(json.dumps(DATA["base"]["resolved"]))
    resolved.update(case.get("resolved_changes", {}))
    return resolved


def _path(mapping: dict[str, Any], dotted: str) -> Any:
    value: Any = mapping
    for part in dotted.split("."):
        value = value[part]
    return value


def _explain_case(case: dict[str, Any]):
    placeholders = re.findall(r"\{([\w-]+)\}", case["command"])
    arch = next((ARCHS[p] for p in placeholders if p in ARCHS), None)
    text = re.sub(r"\{([\w-]+)\}", lambda m: f"/configs/{m.group(1)}.yaml" if m.group(1) in CONFIGS else f"/models/{m.group(1)}", case["command"])
    if "sglang" not in text.split("--")[0]:
        text = "python -m sglang.launch_server " + text
    loader = lambda path: yaml.safe_load(CONFIGS[path.removeprefix("/configs/").removesuffix(".yaml")])  # noqa: E731
    return explain_launch(text, sglang_version=DATA["sglang_version"], model=arch, config_loader=loader)


RESOLVED_CASES = {name: case for name, case in DATA["cases"].items() if "error" not in case}


@pytest.mark.parametrize("name", sorted(RESOLVED_CASES))
def test_every_prediction_equals_what_sglang_0_5_23_resolved(name):
    case = RESOLVED_CASES[name]
    explanation = _explain_case(case)
    resolved = _resolved(case)
    for finding in explanation.findings:
        assert finding.severity != "error", f"{name}: SGLang resolved this command, but {finding.id} says it refuses it: {finding.summary}"
        if finding.predicted is None or finding.setting.startswith("runtime.") or finding.status == "undecided":
            continue
        assert _path(resolved, finding.setting) == finding.predicted, f"{name}: {finding.id} predicts {finding.setting} = {finding.predicted!r}; SGLang 0.5.23 resolved {_path(resolved, finding.setting)!r}"


def test_the_resolution_check_covers_the_gpu_free_rules_it_can():
    checked = set()
    for case in RESOLVED_CASES.values():
        checked |= {f.rule for f in _explain_case(case).findings if f.predicted is not None and not f.setting.startswith("runtime.")}
    eligible = {r.id for r in load().rules if not r.needs_gpu and r.kind == "override" and r.last is None}
    print(f"rules checked against SGLang 0.5.23's own resolution: {len(checked)} ({', '.join(sorted(checked))}); GPU-free override rules in 0.5.23: {len(eligible)}")
    assert checked, "no rule prediction was compared with SGLang's resolution"
