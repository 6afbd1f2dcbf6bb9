"""Explain judges a deployment by its own release: a launch command whose version is unknown is
judged across the releases that accept it, a development build by the release before it, and
rules are evaluated in the order of everything they read (through derived values too)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_sglang.judge.explain import explain_launch
from pytest_sglang.judge.explain.kb import KnowledgeError, load_from
from pytest_sglang.judge.explain.releases import span
from pytest_sglang.model import knowledge as _knowledge
from pytest_sglang.parse.launch import parse_launch_command, table_versions

KNOWLEDGE_DIR = Path(_knowledge.__file__).parent  # the knowledge base's data: rule files, lists, flag tables

KNOWLEDGE = (KNOWLEDGE_DIR / "knowledge.toml").read_text()
QWEN35 = "Qwen3_5MoeForConditionalGeneration"
RELEASES = table_versions()
# A launch command of December 2025 (SGLang 0.5.6 era), pasted without its version.
DECEMBER_2025 = (
    "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --dp 8 "
    "--enable-dp-attention --cuda-graph-bs 1 2 4 8 16 32 --mem-fraction-static 0.85"
)


def _accepting(flag_words: str) -> list[str]:
    return [v for v in RELEASES if not parse_launch_command(f"python -m sglang.launch_server --model-path m {flag_words}", sglang_version=v).unknown]


# ---- an unknown version ------------------------------------------------------------------------


def test_a_flag_valid_in_older_releases_is_no_error_when_the_version_is_unknown():
    explanation = explain_launch(DECEMBER_2025, gpu="H200", gpus=8, model="DeepseekV3ForCausalLM")
    accepted = _accepting("--cuda-graph-bs 1 2 --enable-dp-attention")
    assert accepted and accepted[0] == RELEASES[0] and accepted[-1] != RELEASES[-1]  # the table data says so
    assert explanation.errors == [] and not any(f.lint for f in explanation.findings)
    assert f"accepted by SGLang {span(accepted)}" in explanation.notes[0]
    assert explanation.rules_version == span(accepted)
    # Deprecated in only some of those releases: an info line naming them, never a warning.
    deprecated = explanation.by_rule("flags.deprecated")
    assert deprecated and all(f.severity == "info" for f in deprecated)
    for finding in deprecated:
        flag = finding.id.split(":", 1)[1]
        where = [v for v in accepted if flag in parse_launch_command(DECEMBER_2025, sglang_version=v).deprecated]
        assert f"SGLang {span(where)}" in finding.title


def test_a_flag_no_release_knows_is_an_error_naming_every_release():
    explanation = explain_launch("python -m sglang.launch_server --model-path m --tp 2 --no-such-flag-anywhere 1")
    (error,) = explanation.errors
    assert "--no-such-flag-anywhere" in error.summary and f"SGLang {RELEASES[0]}-{RELEASES[-1]}" in error.title
    assert error.lint


def test_flags_that_no_single_release_accepts_together_are_an_error():
    older, newer = "--cuda-graph-bs 1 2", "--attn-dp-size 2"
    assert _accepting(older) and _accepting(newer) and not set(_accepting(older)) & set(_accepting(newer))
    explanation = explain_launch(f"python -m sglang.launch_server --model-path m --tp 2 {older} {newer}")
    (error,) = explanation.errors
    assert "no single release knows every flag" in error.summary
    assert f"--attn-dp-size is known to SGLang {span(_accepting(newer))}" in error.summary


def test_a_rule_that_holds_in_part_of_the_range_is_an_info_line_naming_those_releases():
    # The multimodal architecture disables piecewise CUDA graphs in 0.5.10-0.5.13 only.
    explanation = explain_launch("python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --tp 4", gpu="RTX PRO 6000", gpus=4, model=QWEN35)
    (pcg,) = explanation.by_rule("pcg.multimodal")
    assert pcg.severity == "info" and not pcg.lint
    fired = [v for v in _accepting("--tp 4") if explain_launch("python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --tp 4", gpu="RTX PRO 6000", gpus=4, model=QWEN35, sglang_version=v).by_rule("pcg.multimodal")]
    assert fired and f"in SGLang {span(fired)}: " in pcg.title


FLAGS = [
    "--enable-dp-attention --dp 2", "--cuda-graph-bs 1 2 4", "--cuda-graph-max-bs 64", "--max-running-requests 32",
    "--speculative-algorithm EAGLE", "--enable-flashinfer-allreduce-fusion", "--disable-radix-cache",
    "--chunked-prefill-size 4096", "--mem-fraction-static 0.8", "--attention-backend triton", "--enable-torch-compile",
    "--disable-cuda-graph", "--enable-mixed-chunk", "--quantization fp8", "--kv-cache-dtype fp8_e4m3", "--page-size 32",
]  # fmt: skip


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    flags=st.lists(st.sampled_from(FLAGS), min_size=1, max_size=4, unique=True),
    model=st.sampled_from([QWEN35, "LlamaForCausalLM", "DeepseekV3ForCausalLM", "Qwen3MoeForCausalLM"]),
    gpu_name=st.sampled_from(["H100", "RTX PRO 6000", "B200", "A100"]),
)
def test_with_an_unknown_version_every_warning_and_error_holds_in_every_accepting_release(flags, model, gpu_name):
    command = f"python -m sglang.launch_server --model-path m --tp 4 {' '.join(flags)}"
    unknown = explain_launch(command, gpu=gpu_name, gpus=4, model=model)
    # The releases that accept every part of it: no ERROR when judged as that release.
    own_of = {release: explain_launch(command, gpu=gpu_name, gpus=4, model=model, sglang_version=release) for release in RELEASES}
    accepted = [release for release, own in own_of.items() if not own.errors]
    if accepted:
        assert f"accepted by SGLang {span(accepted)}" in unknown.notes[0]
    for finding in unknown.findings:
        if finding.severity == "info" or finding.id.endswith(":every-release"):
            continue
        for release in accepted or RELEASES:
            own = own_of[release]
            same = [f for f in own.findings if f.rule == finding.rule or (f.setting == finding.setting and f.predicted == finding.predicted)]
            assert any(f.severity == finding.severity for f in same), f"{finding.id} ({finding.severity}) is not what SGLang {release} gives"


# ---- development builds ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "version, release",
    [("0.0.0.dev1+g1a2b3c4", RELEASES[-1]), ("0.5.12.dev5+g1234abc", "0.5.11"), ("0.6.1.dev2", RELEASES[-1])],
)
def test_a_development_build_is_newer_than_the_release_before_it(version, release):
    explanation = explain_launch("python -m sglang.launch_server --model-path m --tp 2", sglang_version=version)
    assert explanation.rules_version == release
    assert any("development build" in note and release in note for note in explanation.notes)
    assert parse_launch_command("python -m sglang.launch_server --model-path m", sglang_version=version, strict_version=False).flag_table_version == release


@pytest.mark.parametrize(
    "version, release",
    [("0.5.8.post1", "0.5.8.post1"), ("0.5.8.post2", "0.5.8.post1"), ("0.5.8", "0.5.8"), ("0.5.9rc1", "0.5.9"), ("0.5.0rc2", "0.5.0rc2"), ("0.5.0", "0.5.0rc2")],
)
def test_a_post_or_rc_release_with_data_of_its_own_is_read_with_it(version, release):
    from packaging.version import Version

    from pytest_sglang.model.versions import nearest_release

    assert nearest_release(Version(version), ["0.5.0rc2", "0.5.5", "0.5.8", "0.5.8.post1", "0.5.9"]) == release


# ---- facts given are never asked for -----------------------------------------------------------


@pytest.mark.parametrize("gpu_name, mib", [("RTX PRO 6000", 97887), ("H100", 81559), ("H200", 143771), ("B200", 183359)])
def test_a_named_gpu_implies_the_memory_nvidia_smi_reports_for_it(gpu_name, mib):
    explanation = explain_launch("python -m sglang.launch_server --model-path m --tp 4", gpu=gpu_name, gpus=4, sglang_version="0.5.12", model="LlamaForCausalLM")
    assert explanation.facts["gpu.memory_mib"]["value"] == mib
    assert not any("gpu.memory_mib" in f.needs for f in explanation.findings)


def test_a_gpu_name_sold_with_several_memory_sizes_implies_none():
    explanation = explain_launch("python -m sglang.launch_server --model-path m --tp 4", gpu="A100", gpus=4, sglang_version="0.5.12", model="LlamaForCausalLM")
    assert "gpu.memory_mib" not in explanation.facts
    assert explanation.by_rule("gap.gpu.memory_mib")


@settings(max_examples=30, deadline=None, derandomize=True)
@given(flags=st.lists(st.sampled_from(FLAGS), max_size=4, unique=True), release=st.sampled_from(RELEASES))
def test_a_launch_command_given_is_never_asked_for(flags, release):
    explanation = explain_launch(f"python -m sglang.launch_server --model-path m --tp 4 {' '.join(flags)}", gpu="H100", gpus=4, model=QWEN35, sglang_version=release)
    for finding in explanation.findings:
        assert not any(n.startswith(("requested", "arg.", "gpu.")) or n == "model.arch" for n in finding.needs), finding
        assert not any("launch command" in how or "--gpu" in how for how in finding.how_to_provide), finding


# ---- evaluation order --------------------------------------------------------------------------

SETTER = """
[[rule]]
id = "demo.setter"
title = "sets the strategy"
since = "0.5.10"
setting = "mamba_radix_cache_strategy"
kind = "override"
severity = "info"
when = "arg.tp_size > 1"
value = "'extra_buffer'"
explanation = "Sets the strategy the reader divides by."
[[rule.sources]]
release = "0.5.12"
file = "sglang/srt/server_args.py"
lines = [10, 12]
anchor = "class ServerArgs"
"""
READER = SETTER.replace("demo.setter", "demo.reader").replace('setting = "mamba_radix_cache_strategy"', 'setting = "max_running_requests"').replace(
    "value = \"'extra_buffer'\"", 'value = "derived.demo_slots"'
)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(depth=st.integers(1, 4), reader_first=st.booleans(), names=st.permutations(["z1", "a2", "m3", "b4"]))
def test_a_rule_reading_through_derived_values_follows_the_rule_that_sets_them(depth, reader_first, names):
    # derived.demo_slots -> derived.<n1> -> ... -> effective.mamba_radix_cache_strategy, in any
    # naming (so no alphabetical order can pass by chance) and with the reader listed first.
    chain = [f"demo_{n}" for n in names[:depth]]
    derived = {"demo_slots": f"derived.{chain[0]}"}
    for here, there in zip(chain, chain[1:]):
        derived[here] = f"derived.{there}"
    derived[chain[-1]] = "5 if effective.mamba_radix_cache_strategy == 'extra_buffer' else 3"
    table = "[derived]\n" + "".join(f'{k} = "{v}"\n' for k, v in derived.items())
    rules = table + (READER + SETTER if reader_first else SETTER + READER)
    kb = load_from(knowledge_text=KNOWLEDGE, rule_texts={"rules/demo.toml": rules})
    order = [r.id for r in kb.order]
    assert order.index("demo.setter") < order.index("demo.reader")
    explanation = explain_launch("python -m sglang.launch_server --model-path m --tp 2", sglang_version="0.5.12", kb=kb)
    (reader,) = explanation.by_rule("demo.reader")
    assert reader.predicted == 5


def test_derived_values_that_read_each_other_are_refused_on_load():
    table = '[derived]\ndemo_a = "derived.demo_b + 1"\ndemo_b = "derived.demo_a + 1"\n'
    with pytest.raises(KnowledgeError, match="cycle") as info:
        load_from(knowledge_text=KNOWLEDGE, rule_texts={"rules/demo.toml": table + READER.replace("derived.demo_slots", "derived.demo_a")})
    assert "\n" not in str(info.value)


def test_rules_of_releases_that_never_meet_do_not_order_each_other():
    # v1 (0.5.5-0.5.9) and v2 (0.5.10+) read and set the same field: no release runs both.
    v1 = SETTER.replace("demo.setter", "demo.v1").replace('since = "0.5.10"', 'since = "0.5.5"\nuntil = "0.5.9"').replace("value = \"'extra_buffer'\"", "value = \"effective.mamba_radix_cache_strategy\"")
    v2 = SETTER.replace("demo.setter", "demo.v2").replace("value = \"'extra_buffer'\"", "value = \"effective.mamba_radix_cache_strategy\"")
    kb = load_from(knowledge_text=KNOWLEDGE, rule_texts={"rules/demo.toml": v1 + v2})
    assert {"demo.v1", "demo.v2"} <= {r.id for r in kb.order}


@pytest.mark.parametrize("release", ["0.5.15", "0.5.23"])
def test_the_seed_models_mamba_cap_divides_by_the_slots_of_the_strategy_sglang_chose(release):
    explanation = explain_launch("python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --tp 4", gpu="RTX PRO 6000", gpus=4, model=QWEN35, sglang_version=release)
    (strategy,) = explanation.about("mamba_radix_cache_strategy")
    assert strategy.predicted == "extra_buffer"
    (cap,) = [f for f in explanation.about("max_running_requests") if "mamba" in f.rule]
    assert "// 5" in cap.summary and "// 3" not in cap.summary


def test_on_a_target_a_rule_judges_the_value_before_it_not_the_one_it_made():
    # A server with DP attention reports chunked_prefill_size already divided (8192 // 2). The
    # rule divides the value before it: reading the reported 4096 would predict 2048 and call
    # the server inconsistent.
    from pytest_sglang.judge.explain.engine import explain_situation
    from pytest_sglang.judge.explain.kb import load
    from pytest_sglang.judge.explain.situation import Situation, gpu_facts, model_facts
    from pytest_sglang.model.versions import parse_version

    kb = load()
    launch = parse_launch_command("python -m sglang.launch_server --model-path m --tp 2 --dp 2 --enable-dp-attention", sglang_version="0.5.12")
    reported = {**{k: v for k, v in launch.requested.items()}, "chunked_prefill_size": 4096, "schedule_conservativeness": 0.3}
    situation = Situation(kb=kb, target="t", mode="target", version=parse_version("0.5.12"), launch=launch, reported=reported)
    situation.gpu = gpu_facts(gpu="H100", count=2)
    situation.model = model_facts(kb, ["LlamaForCausalLM"], "given")
    explanation = explain_situation(situation)
    (chunked,) = explanation.by_rule("capacity.dp-attention-chunked")
    assert (chunked.status, chunked.predicted, chunked.effective) == ("confirmed", 4096, 4096)
    assert not [f for f in explanation.findings if f.status == "contradicted"]


def _releases_in(text: str) -> list[str]:
    """``0.5.5-0.5.6, 0.5.8`` -> every release it names."""
    out: list[str] = []
    for part in text.split(", "):
        low, _, high = part.partition("-")
        out += list(RELEASES[RELEASES.index(low) : RELEASES.index(high or low) + 1])
    return out


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    flags=st.lists(st.sampled_from(FLAGS), max_size=3, unique=True),
    model=st.sampled_from([QWEN35, "Qwen3NextForCausalLM", "DeepseekV3ForCausalLM", "LlamaForCausalLM"]),
)
def test_what_an_unknown_version_says_of_a_release_is_what_that_release_says_alone(flags, model):
    # Each release is judged on its own: no outcome, prediction or derived value of one release
    # may leak into another's (they once shared them, and a 0.5.9 divisor showed for 0.5.23).
    command = f"python -m sglang.launch_server --model-path m --tp 4 {' '.join(flags)}"
    unknown = explain_launch(command, gpu="H200", gpus=4, model=model)
    accepted = _releases_in(unknown.rules_version or "")
    for finding in unknown.findings:
        if finding.id.startswith("gap.") or finding.rule.startswith("flags."):
            continue
        prefix = "if the server runs SGLang "
        if finding.summary.startswith(prefix):
            where, _, summary = finding.summary[len(prefix) :].partition(": ")
            releases = _releases_in(where)
        else:
            releases, summary = accepted, finding.summary
        for release in releases:
            own = explain_launch(command, gpu="H200", gpus=4, model=model, sglang_version=release)
            assert summary in [f.summary for f in own.findings], f"{finding.id} on {release}: {summary}"
