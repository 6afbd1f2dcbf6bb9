"""Every refusal is an ERROR for the releases that refuse, with SGLang's own message, and the
release range of a command whose version is unknown is the releases that accept every part of
it: its flags, their values (each release's types and choices) and the model's architecture
(each release's model registry, ``pytest_sglang/model/knowledge/models/``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.version import Version

from pytest_sglang.cli.main import main
from pytest_sglang.judge.explain import explain_launch
from pytest_sglang.judge.explain.releases import span
from pytest_sglang.model.knowledge.model_tables import model_table, model_table_versions, transformers_table
from pytest_sglang.parse.launch import flag_table, parse_launch_command, table_versions

sys.path.insert(0, str(Path(__file__).resolve().parent / "real_sglang"))

import differential  # noqa: E402

RELEASES = table_versions()
LAUNCH = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct"
TABLE_RULES = ("flags.unknown", "flags.refused")


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["explain", *args])
    return code, capsys.readouterr().out


def first_with(field: str, value: str) -> str:
    """The first release whose flag table has ``value`` among the choices of ``field``."""
    return next(v for v in RELEASES if value in (flag_table(v).fields.get(field, {}).get("choices") or ()))


# ---- each refusal class, with SGLang's own message ----------------------------------------------

# (class, the words after the model path, the release, what SGLang says)
REFUSALS = [
    ("invalid int", "--tp-size {5, 12, 32}", "0.5.23", "argument --tp-size/--tensor-parallel-size: invalid int value: '{5,'"),
    ("invalid float", "--mem-fraction-static 0.8f", "0.5.12", "argument --mem-fraction-static: invalid float value: '0.8f'"),
    ("converter", "--context-length 1.5Mi", "0.5.12", "argument --context-length: Decimals are not allowed with IEC suffixes like 'Mi'. Use an integer IEC value such as '1Mi', or an SI value such as '1.5M'."),
    ("converter", "--context-length 128K", "0.5.23", "argument --context-length: Invalid integer value: '128K'. Use a plain integer, SI suffixes (1k, 1M), or IEC suffixes (1Ki, 1Mi). Suffixes are case-sensitive."),
    ("invalid choice", "--speculative-algorithm DFLASH --speculative-draft-model-path d", "0.5.10", "argument --speculative-algorithm: invalid choice: 'DFLASH' (choose from 'EAGLE', 'EAGLE3', 'NEXTN', 'NGRAM', 'STANDALONE')"),
    ("missing value", "--tp", "0.5.12", "argument --tensor-parallel-size/--tp-size: expected one argument"),
    ("unquoted JSON", '--json-model-override-args {"rope_scaling": {"factor": 4}}', "0.5.23", "unrecognized arguments: {factor: 4}}"),
    ("explicit value of a switch", "--enable-dp-attention=true", "0.5.23", "argument --enable-dp-attention: ignored explicit argument 'true'"),
    ("ambiguous abbreviation", "--disable-cuda-gra", "0.5.20", "ambiguous option: --disable-cuda-gra could match --disable-cuda-graph, --disable-cuda-graph-padding"),
    ("retired flag", "--enable-expert-distribution-metrics", "0.5.18", "--enable-expert-distribution-metrics is no longer supported"),
    ("config file", "--config settings.txt", "0.5.23", "Config file must be YAML format, got: .txt"),
    ("unknown flag", "--no-such-flag 1", "0.5.23", "unrecognized arguments: --no-such-flag 1"),
]  # fmt: skip


@pytest.mark.parametrize("kind, words, release, said", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_each_refusal_is_an_error_with_sglangs_message(kind, words, release, said):
    explanation = explain_launch(f"{LAUNCH} {words}", sglang_version=release)
    errors = [f for f in explanation.errors if f.rule in TABLE_RULES]
    assert errors, [f.id for f in explanation.findings]
    assert any(said in f.summary for f in errors), [f.summary for f in errors]
    assert all(f.lint and f.status == "predicted" and f.sources for f in errors)


def test_a_missing_model_path_is_refused_as_argparse_words_it():
    (error,) = explain_launch("python -m sglang.launch_server --tp 2", sglang_version="0.5.23").errors
    assert error.summary == "SGLang 0.5.23 refuses to start: the following arguments are required: --model-path/--model"


def test_sglang_serve_refuses_a_backend_it_does_not_know():
    (error,) = explain_launch("sglang serve --model-path m --model-type vision", sglang_version="0.5.23").errors
    assert "Unknown serve backend 'vision'. Available values: auto, llm, diffusion." in error.summary


@pytest.mark.parametrize("kind, words, release, said", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_the_command_line_fails_on_a_refusal_of_the_release_given(capsys, kind, words, release, said):
    code, out = cli(capsys, "--launch", f"{LAUNCH} {words}", "--sglang-version", release)
    assert code == 1
    assert "ERROR" in out and said.splitlines()[0][:60] in out


def test_a_value_that_only_some_releases_refuse_names_them_when_the_version_is_unknown(capsys):
    since = first_with("speculative_algorithm", "DFLASH")
    command = f"{LAUNCH} --speculative-algorithm DFLASH --speculative-draft-model-path z-lab/dflash"
    explanation = explain_launch(command, model="LlamaForCausalLM")
    later = RELEASES[RELEASES.index(since) :]
    assert explanation.rules_version == span(later)  # DFLASH is not judged for the releases that refuse it
    assert explanation.errors == []
    assert f"SGLang {span(RELEASES[: RELEASES.index(since)])} refuse --speculative-algorithm 'DFLASH' (not one of its choices)" in explanation.notes[0]
    code, out = cli(capsys, "--launch", command, "--model", "LlamaForCausalLM")
    assert code == 0 and f"rules of {span(later)}" in out and "refuse --speculative-algorithm 'DFLASH'" in out
    # The same command for a release that refuses it: the refusal is the ERROR.
    code, out = cli(capsys, "--launch", command, "--model", "LlamaForCausalLM", "--sglang-version", RELEASES[RELEASES.index(since) - 1])
    assert code == 1 and "invalid choice: 'DFLASH'" in out


@pytest.mark.parametrize(
    "field, flag, value",
    [
        ("reasoning_parser", "--reasoning-parser", "deepseek-v4"),
        ("tool_call_parser", "--tool-call-parser", "deepseekv4"),
        ("moe_runner_backend", "--moe-runner-backend", "flashinfer_trtllm_routed"),
    ],
)
def test_a_parser_name_or_moe_runner_a_release_refuses_narrows_the_range(field, flag, value):
    since = first_with(field, value)
    assert since != RELEASES[0]  # the data: older releases do not have it
    explanation = explain_launch(f"{LAUNCH} --tp 2 {flag} {value}", model="LlamaForCausalLM")
    accepting = [v for v in RELEASES if value in (flag_table(v).fields.get(field, {}).get("choices") or ())]
    assert explanation.rules_version == span(accepting)
    older = explain_launch(f"{LAUNCH} --tp 2 {flag} {value}", model="LlamaForCausalLM", sglang_version=RELEASES[RELEASES.index(since) - 1])
    (error,) = older.errors
    assert f"invalid choice: {value!r}" in error.summary


def test_an_architecture_the_release_lacks_is_an_error_and_no_rule_of_its_lists_fires():
    arch = "Gemma4ForConditionalGeneration"
    has = [v for v in model_table_versions() if arch in model_table(v).architectures]
    lacks = [v for v in model_table_versions() if v not in has]
    assert "0.5.10" in lacks and has  # the registries, read from the wheels
    table = model_table("0.5.10")
    pinned = transformers_table(table.transformers)
    assert arch not in pinned.backend_compatible  # transformers cannot stand in either
    explanation = explain_launch(f"{LAUNCH} --tp 4", gpu="H100", gpus=4, sglang_version="0.5.10", model=arch)
    (error,) = explanation.errors
    assert error.rule == "model.unsupported-architecture" and error.lint
    assert "not in SGLang 0.5.10's model registry" in error.summary and f"transformers {table.transformers}" in error.summary
    assert f"run SGLang {span(has)}" in error.knobs[0]
    # The multimodal list of 0.5.10 is its own: the architecture is not on it, so no piecewise-graph rule reads it.
    assert not explanation.by_rule("pcg.multimodal")
    unknown = explain_launch(f"{LAUNCH} --tp 4", gpu="H100", gpus=4, model=arch)
    assert unknown.rules_version == span(has)
    assert f"refuse the architecture {arch} (not in its model registry)" in unknown.notes[0]


def test_an_architecture_transformers_serves_is_an_info_not_an_error():
    table = model_table(RELEASES[-1])
    served = sorted(transformers_table(table.transformers).backend_compatible - table.architectures)
    arch = served[0]
    explanation = explain_launch(f"{LAUNCH} --tp 2", sglang_version=RELEASES[-1], model=arch)
    assert explanation.errors == []
    (info,) = explanation.by_rule("model.unsupported-architecture")
    assert info.severity == "info" and "falls back to the Transformers implementation" in info.summary


def test_the_architecture_is_not_judged_with_another_implementation_or_its_own_code(tmp_path):
    assert not explain_launch(f"{LAUNCH} --model-impl transformers", sglang_version="0.5.10", model="Gemma4ForConditionalGeneration").errors
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"architectures": ["MyForCausalLM"], "auto_map": {"AutoModel": "modeling_my.MyModel"}}))
    assert not explain_launch(LAUNCH, sglang_version="0.5.23", model=str(config)).errors
    config.write_text(json.dumps({"architectures": ["MyForCausalLM"]}))
    (error,) = explain_launch(LAUNCH, sglang_version="0.5.23", model=str(config)).errors
    assert "Cannot find model module. 'MyForCausalLM' is not a registered model in the Transformers library" in error.summary


def test_a_value_every_release_refuses_is_an_error_for_all_of_them(capsys):
    command = f"{LAUNCH} --tp 2 --attention-backend no-such-backend"
    explanation = explain_launch(command, model="LlamaForCausalLM")
    (error,) = explanation.errors
    assert f"SGLang {RELEASES[0]}-{RELEASES[-1]}" in error.title
    assert "invalid choice: 'no-such-backend'" in error.summary
    assert "no release from" in explanation.notes[0]
    code, out = cli(capsys, "--launch", command, "--model", "LlamaForCausalLM")
    assert code == 1 and "invalid choice: 'no-such-backend'" in out


def test_parts_refused_by_different_releases_name_the_nearest_releases_and_what_each_refuses():
    older, newer = "--cuda-graph-bs", "--attn-dp-size"
    knows_older = [v for v in RELEASES if older in flag_table(v).by_flag]
    knows_newer = [v for v in RELEASES if newer in flag_table(v).by_flag]
    assert knows_older and knows_newer and not set(knows_older) & set(knows_newer)  # the flag tables say so
    explanation = explain_launch(f"{LAUNCH} --tp 2 {older} 1 2 {newer} 2")
    (error,) = explanation.errors
    assert error.id.endswith(":every-release") and f"every SGLang release from {RELEASES[0]} to {RELEASES[-1]} refuses" in error.title
    # The nearest releases refuse one part each: the newer flag's releases refuse the older flag.
    assert f"the nearest: SGLang {span(knows_newer)} refuse {older}" in error.summary
    assert f"SGLang {span(knows_older)} refuse {newer} (not one of its flags)" in error.summary


# ---- the parser's refusals, structured ------------------------------------------------------------


def test_refusals_are_structured_and_the_problems_still_say_them():
    launch = parse_launch_command(f"{LAUNCH} --tp-size {{5, 12, 32}} --attention-backend nope --tp", sglang_version="0.5.23")
    kinds = [(r.kind, r.flag, r.value) for r in launch.refusals]
    assert ("invalid-value", "--tp-size", "{5,") in kinds and ("invalid-choice", "--attention-backend", "nope") in kinds
    assert ("unrecognized", "12,", "12, 32}") in kinds and ("missing-value", "--tp", None) in kinds
    assert len(launch.problems) >= len(launch.refusals)
    assert all(r.message for r in launch.refusals)


def test_a_secret_never_reaches_a_refusal():
    launch = parse_launch_command(f"{LAUNCH} --api-key sk-live-SECRET-42 extra-word --hf-token=hf_SECRETsecret --tp x", sglang_version="0.5.23")
    text = json.dumps([r.__dict__ for r in launch.refusals])
    assert "SECRET" not in text and launch.refusals


def test_a_value_the_shell_text_does_not_give_is_never_refused():
    launch = parse_launch_command(f"{LAUNCH} --tp-size $TP --attention-backend $BACKEND", sglang_version="0.5.23")
    assert launch.refusals == []


# ---- the property: ERROR exactly where the release's argparse refused -----------------------------

ARGPARSE = json.loads((Path(__file__).parent / "data" / "sglang-argparse-releases.json").read_text())
ARGPARSE_CASES = [(version, name) for version in ARGPARSE["releases"] for name in ARGPARSE["commands"]]
DIFFERENTIAL = json.loads(differential.DATA.read_text())
DIFFERENTIAL_CASES = [(version, case) for version, release in DIFFERENTIAL["releases"].items() for case in release["cases"]]


def _table_errors(command: str, version: str, loader) -> list:  # type: ignore[no-untyped-def]
    explanation = explain_launch(command, sglang_version=version, config_loader=loader)
    return [f for f in explanation.errors if f.rule in TABLE_RULES]


@settings(max_examples=len(ARGPARSE_CASES), deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(ARGPARSE_CASES))
def test_an_error_exactly_where_the_releases_argparse_refused_the_command(pair):
    version, name = pair
    said = ARGPARSE["releases"][version]["commands"][name]
    text = ARGPARSE["commands"][name]
    for config, body in ARGPARSE["configs"].items():
        text = text.replace("{" + config + "}", f"/configs/{config}.yaml")
    text = text.replace("sglang serve ", "python -m sglang.launch_server ")  # this data is prepare_server_args's

    def loader(path: str):  # type: ignore[no-untyped-def]
        return yaml.safe_load(ARGPARSE["configs"][path.removeprefix("/configs/").removesuffix(".yaml")])

    errors = _table_errors(text, version, loader)
    assert bool(errors) == ("error" in said), (version, name, said, [f.summary for f in errors])
    if "error" in said and said["error"].startswith("_ArgparseError: unrecognized arguments"):
        assert any(said["error"].split(": ", 1)[1] in f.summary for f in errors)


# Commands with no argument at all explain_launch refuses as bad input (one line, exit 2).
def _has_arguments(case: dict, version: str) -> bool:
    try:
        parse_launch_command(case["text"], sglang_version=version).require_arguments()
    except Exception:  # noqa: BLE001 - SpecError: nothing to explain
        return False
    return True


@settings(max_examples=len(DIFFERENTIAL_CASES), deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(DIFFERENTIAL_CASES))
def test_an_error_exactly_where_the_release_refused_a_generated_command(pair):
    version, case = pair
    if not _has_arguments(case, version):
        return

    def loader(path: str):  # type: ignore[no-untyped-def]
        name = path[len(differential.TMP) + 1 :] if path.startswith(differential.TMP + "/") else path
        if name not in case["files"]:
            raise FileNotFoundError(path)
        return yaml.safe_load(case["files"][name])

    errors = _table_errors(case["text"], version, loader)
    refused = "error" in case["answer"]
    assert bool(errors) == refused, (version, case["text"], case["answer"], [f.summary for f in errors])
    said = case["answer"].get("error", "")
    if said.startswith("_ArgparseError: ") and "invalid choice" not in said and "ambiguous option" not in said:
        # argparse stops at its first refusal: its message is one of those explain gives (the
        # choices and the matches of an abbreviation are listed in another order)
        message = said.split(": ", 1)[1]
        assert any(message in f.summary for f in errors) or "--config" in case["text"] or " -- " in case["text"], (message, [f.summary for f in errors])


def test_the_stored_sets_hold_both_refused_and_accepted_commands():
    refused = sum("error" in case["answer"] for _, case in DIFFERENTIAL_CASES)
    assert 0 < refused < len(DIFFERENTIAL_CASES)
    assert any("error" in ARGPARSE["releases"][v]["commands"][n] for v, n in ARGPARSE_CASES)


# ---- each release's own lists ----------------------------------------------------------------------


def test_a_list_a_model_table_holds_is_read_per_release():
    from packaging.version import Version

    from pytest_sglang.judge.explain import load

    kb = load()
    for release in model_table_versions():
        table = model_table(release)
        for name, members in table.lists.items():
            assert kb.list_for(name, Version(release)) == members, (release, name)
    # A list a release does not define has no members there (0.5.5 has no piecewise-graph blacklist).
    assert "pcg_disabled_archs" not in model_table("0.5.5").lists
    assert kb.list_for("pcg_disabled_archs", Version("0.5.5")) == frozenset()
    # The knowledge files no longer hold a copy of a list the tables hold.
    assert not set(kb.knowledge.lists) & set(kb.release_lists)


def test_a_model_family_read_from_a_list_is_the_releases_own():
    # MiMo V2 is multimodal by name in 0.5.11; from 0.5.12 only with a vision and audio config.
    assert "MiMoV2ForCausalLM" in model_table("0.5.11").lists["multimodal_archs"]
    assert "MiMoV2ForCausalLM" in model_table("0.5.12").lists["multimodal_config_archs"]
    older = explain_launch(f"{LAUNCH} --tp 2", sglang_version="0.5.11", model="MiMoV2ForCausalLM", gpu="H100", gpus=2)
    newer = explain_launch(f"{LAUNCH} --tp 2", sglang_version="0.5.12", model="MiMoV2ForCausalLM", gpu="H100", gpus=2)
    assert older.facts["model.multimodal"]["value"] is True and "SGLang 0.5.11's multimodal_archs list" in older.facts["model.multimodal"]["source"]
    assert newer.facts["model.multimodal"]["value"] is None and "vision_config" in newer.facts["model.multimodal"]["source"]


def test_a_list_of_bad_values_is_one_refusal_as_argparse_stops_at_the_first():
    launch = parse_launch_command("python -m sglang.launch_server --model-path m --cuda-graph-bs {5, 12, 32}", sglang_version="0.5.12")
    assert [(r.kind, r.value) for r in launch.refusals] == [("invalid-value", "{5,")]
    assert [r.message for r in launch.refusals] == ["argument --cuda-graph-bs: invalid int value: '{5,'"]


def test_sglang_serve_narrows_the_range_to_the_releases_that_have_it():
    # No wheel before 0.5.5 ships sglang/cli/serve.py (the launch differential runs each one).
    first = next(v for v in RELEASES if Version(v) >= Version("0.5.5"))
    explanation = explain_launch("sglang serve --model-path m --tp 2", model="LlamaForCausalLM")
    assert explanation.rules_version == span(RELEASES[RELEASES.index(first) :])
    assert "refuse sglang serve (no such command)" in explanation.notes[0]
    (error,) = explain_launch("sglang serve --model-path m --tp 2", model="LlamaForCausalLM", sglang_version="0.5.4").errors
    assert error.title == "SGLang 0.5.4 has no sglang serve command" and "python -m sglang.launch_server" in error.knobs[0]
