"""parse_launch_command against what the real SGLang 0.5.23 made of the same commands.

``tests/data/sglang-0.5.23-resolutions.json`` holds, for each command, SGLang's own argparse
result and its resolved configuration (``prepare_server_args(argv).resolve_once()``), written
by ``tests/real_sglang/generate_data.py``; the real tier checks it is still what SGLang says.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.version import Version
from support import corpus_files, corpus_text

from pytest_sglang import Facts, normalise
from pytest_sglang.model.facts import Endpoint
from pytest_sglang.parse.launch import parse_launch_command, split_command
from pytest_sglang.parse.redact import REDACTED

DATA = json.loads((Path(__file__).parent / "data" / "sglang-0.5.23-resolutions.json").read_text())
BASE = DATA["base"]
CASES = DATA["cases"]
CONFIGS = {"{config}": DATA["config_yaml"], "{config_underscore}": DATA["config_underscore_yaml"]}


def with_config_files(command: str, configs: dict[str, str]) -> tuple[str, Any]:
    """The stored command with its config placeholders ({name}) as the .yaml files the real
    run wrote, and a loader that reads them back."""
    text = re.sub(r"\{([\w-]+)\}", lambda m: f"/configs/{m.group(1)}.yaml" if m.group(1) in configs else m.group(0), command)
    return text, lambda path: yaml.safe_load(configs[path.removeprefix("/configs/").removesuffix(".yaml")])


def _parse(command: str):
    text, loader = with_config_files(command, {k.strip("{}"): v for k, v in CONFIGS.items()})
    return parse_launch_command(text, sglang_version="0.5.23", config_loader=loader)


def _sglang_said(case: dict, part: str) -> dict:
    return {**BASE[part], **case[f"{part}_changes"]}


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if "parsed_changes" in c))
def test_requested_values_are_what_sglangs_own_argparse_made_of_the_command(name):
    case = CASES[name]
    launch = _parse(case["command"])
    sglang = _sglang_said(case, "parsed")
    assert launch.problems == []
    for field, value in launch.requested.items():
        assert sglang[field] == value, field
    # Every value SGLang's parser set differently from the base command is requested.
    assert set(case["parsed_changes"]) <= set(launch.requested)


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.get("error", "").startswith("_ArgparseError")))
def test_a_command_sglang_refuses_to_parse_is_a_problem_here_too(name):
    case = CASES[name]
    launch = _parse(case["command"])
    assert launch.problems, case["error"]
    # The problem names the same flag SGLang named.
    flag = next(w.strip(":,") for w in case["error"].split() if w.startswith("--"))
    assert any(flag in problem for problem in launch.problems), (launch.problems, case["error"])


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if "resolved_changes" in c))
def test_normalised_answers_agree_with_the_resolved_configuration(name):
    resolved = _sglang_said(CASES[name], "resolved")
    info = {**resolved, "version": "0.5.23", "internal_states": [dict(resolved, effective_max_running_requests_per_dp=2048)]}
    e = normalise(Facts(target=name, endpoints={"server_info": Endpoint(path="/server_info", status=200, body=info)})).effective
    graphs = resolved["cuda_graph_config"]
    assert e.tp_size == resolved["tp_size"] and e.dp_size == resolved["dp_size"]
    assert e.chunked_prefill_size == resolved["chunked_prefill_size"]
    assert e.prefill_cuda_graph == (graphs["prefill"]["backend"] != "disabled")
    assert e.decode_cuda_graph == (graphs["decode"]["backend"] != "disabled")
    assert e.decode_cuda_graph_max_bs == graphs["decode"]["max_bs"]
    assert e.flashinfer_allreduce_fusion_requested == (resolved["flashinfer_allreduce_fusion_backend"] is not None)
    assert e.speculative_algorithm == resolved["speculative_algorithm"]


def test_requested_versus_resolved_shows_what_sglang_changed():
    # The deprecated boolean is requested; 0.5.23 folds it into the backend and resets it.
    case = CASES["fi-fusion-deprecated-flag"]
    assert _parse(case["command"]).requested["enable_flashinfer_allreduce_fusion"] is True
    resolved = _sglang_said(case, "resolved")
    assert resolved["enable_flashinfer_allreduce_fusion"] is False
    assert resolved["flashinfer_allreduce_fusion_backend"] == "auto"
    # --disable-cuda-graph is requested; resolution turns it into both graph backends disabled.
    case = CASES["disable-cuda-graph-deprecated"]
    assert _parse(case["command"]).requested == {"model_path": "{llama}", "device": "cpu", "disable_cuda_graph": True}
    graphs = _sglang_said(case, "resolved")["cuda_graph_config"]
    assert graphs["decode"]["backend"] == graphs["prefill"]["backend"] == "disabled"
    # NGRAM speculative decoding without --max-running-requests: SGLang sets 48.
    case = CASES["speculative-ngram"]
    assert "max_running_requests" not in _parse(case["command"]).requested
    assert _sglang_said(case, "resolved")["max_running_requests"] == 48


def test_secrets_in_a_launch_command_are_redacted():
    launch = _parse(CASES["api-keys"]["command"])
    assert launch.requested["api_key"] == launch.requested["admin_api_key"] == REDACTED
    assert "sk-offline-1" not in launch.text + " ".join(launch.argv)


@pytest.mark.parametrize("path", corpus_files("launch_commands"), ids=lambda p: p.name)
def test_every_corpus_launch_command_parses(path):
    launch = parse_launch_command(corpus_text(path))
    # A compose file may run SGLang from an entrypoint merged in from elsewhere (<<: *anchor):
    # its command is then the arguments alone.
    assert launch.entrypoint in ("python -m sglang.launch_server", "sglang serve") or launch.argv[0].startswith("--")
    assert launch.requested.get("model_path") or "model_path" in launch.unresolved  # ${MODEL_ID}: not known
    assert {"port", "tp_size"} & (set(launch.requested) | set(launch.unresolved))


def test_the_shapes_of_command_lines_people_write():
    launch = parse_launch_command(
        "CUDA_VISIBLE_DEVICES=0,1 HF_TOKEN=hf_abc python3 -m sglang.launch_server \\\n"
        "  --model Qwen/Qwen3.5-122B-A10B --tp 2 \\\n  --cuda-graph-bs-decode 1 2 4 --speculative-algo NEXTN```"
    )
    assert launch.entrypoint == "python -m sglang.launch_server"
    assert launch.env == {"CUDA_VISIBLE_DEVICES": "0,1", "HF_TOKEN": REDACTED}
    assert launch.requested == {
        "model_path": "Qwen/Qwen3.5-122B-A10B",
        "tp_size": 2,
        "cuda_graph_bs_decode": [1, 2, 4],
        "speculative_algorithm": "NEXTN",
    }
    assert launch.spelled["tp_size"] == "--tp" and launch.spelled["model_path"] == "--model"


def test_a_systemd_unit_gives_its_execstart_and_environment():
    unit = corpus_text(next(p for p in corpus_files("launch_commands") if p.name == "12.txt"))
    assert "[Service]" in unit
    words, env, problems = split_command(unit)
    assert problems == [] and env["PATH"].startswith("/usr/local/cuda/bin")
    assert parse_launch_command(unit).requested["port"] == 30000


def test_flags_the_table_does_not_know_are_kept_and_named():
    launch = parse_launch_command("sglang serve --model-path m --nsa-prefill-backend tilelang --enable-foo", sglang_version="0.5.23")
    assert launch.unknown == {"--nsa-prefill-backend": "tilelang", "--enable-foo": True}
    assert launch.problems == ["--nsa-prefill-backend is not a flag of SGLang 0.5.23", "--enable-foo is not a flag of SGLang 0.5.23"]
    assert launch.requested == {"model_path": "m"}


def test_an_old_flag_that_is_now_an_ambiguous_prefix_is_named():
    # 0.5.16 took --cuda-graph-max-bs; in 0.5.23 argparse reads it as a prefix of two flags.
    launch = parse_launch_command("sglang serve --model-path m --cuda-graph-max-bs 256", sglang_version="0.5.23")
    assert launch.problems == [
        "--cuda-graph-max-bs is ambiguous in SGLang 0.5.23 (could be --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill): SGLang refuses to start"
    ]


def test_the_server_info_launch_command_has_no_entry_point():
    launch = parse_launch_command("--model-path /m --device cpu --tp 2 --api-key sk-9")
    assert launch.entrypoint is None and launch.problems == []
    assert launch.requested == {"model_path": "/m", "device": "cpu", "tp_size": 2, "api_key": REDACTED}


SEED_COMMAND = (
    "python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --tp 4 --cuda-graph-max-bs 256 "
    "--disable-piecewise-cuda-graph --enable-flashinfer-allreduce-fusion --speculative-algo NEXTN"
)


def test_a_command_is_read_with_the_flag_table_of_its_sglang_version():
    era = parse_launch_command(SEED_COMMAND, sglang_version="0.5.12")
    assert era.flag_table_version == "0.5.12" and era.problems == []
    assert era.requested == {
        "model_path": "Qwen/Qwen3.5-122B-A10B",
        "tp_size": 4,
        "cuda_graph_max_bs": 256,
        "disable_piecewise_cuda_graph": True,
        "enable_flashinfer_allreduce_fusion": True,
        "speculative_algorithm": "NEXTN",
    }
    # The same command on 0.5.23 would not start: one flag is gone, one is now ambiguous.
    newest = parse_launch_command(SEED_COMMAND, sglang_version="0.5.23")
    assert newest.problems == [
        "--cuda-graph-max-bs is ambiguous in SGLang 0.5.23 (could be --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill): SGLang refuses to start",
        "--disable-piecewise-cuda-graph is not a flag of SGLang 0.5.23",
    ]


@pytest.mark.parametrize(
    "version, table",
    [("0.5.8.post1", "0.5.8.post1"), ("0.5.8.post2", "0.5.8.post1"), ("0.5.1", "0.5.1"), ("0.5.10", "0.5.10"), ("0.5.18", "0.5.18"), ("0.5.19", "0.5.19"), ("0.5.23rc1", "0.5.23"), ("0.6.0", "0.5.23"), (None, "0.5.23")],
)
def test_each_release_has_its_table_and_a_newer_one_uses_the_newest(version, table):
    assert parse_launch_command("--model-path m", sglang_version=version).flag_table_version == table


@pytest.mark.parametrize(
    "version, note",
    [
        ("0.4.9", "no flag table for SGLang 0.4.9: read with 0.5.0rc2's, the oldest"),
        ("0.5.8.post2", "no flag table for SGLang 0.5.8.post2: read with 0.5.8.post1's"),
        ("banana", "SGLang version 'banana' is not a version: read with 0.5.23's flag table"),
        ("", "SGLang version '' is not a version: read with 0.5.23's flag table"),
    ],
)
def test_a_version_a_server_reported_without_a_table_is_read_with_the_nearest_and_said(version, note):
    launch = parse_launch_command("--model-path m", sglang_version=version, strict_version=False)
    assert launch.problems == [note]


@pytest.mark.parametrize("version, corpus_file", [("0.5.12", "26.txt"), ("0.5.9", "02.txt")])
def test_a_flag_table_knows_the_fields_its_era_prints_at_start_up(version, corpus_file):
    from support import CORPUS

    from pytest_sglang import parse_startup_line
    from pytest_sglang.parse.launch import flag_table

    printed = set(parse_startup_line(corpus_text(CORPUS / "server_args" / corpus_file)).fields)
    known = set(flag_table(version).fields)
    # Fields no flag sets (Engine-only) and a dev build's extras aside, every printed field has its flag.
    unknown = printed - known - {"admin_api_key", "custom_sigquit_handler"}
    assert len(unknown) <= 5, sorted(unknown)


# ---- every release's own argparse -----------------------------------------------------------------
# tests/data/sglang-argparse-releases.json: what the argparse of ten SGLang releases (0.5.5 to
# 0.5.23, each imported from its own wheel) made of the same commands; written by
# tests/real_sglang/argparse_releases.py and checked by the real tier.
RELEASES = json.loads((Path(__file__).parent / "data" / "sglang-argparse-releases.json").read_text())
RELEASE_CASES = [(version, name) for version in RELEASES["releases"] for name in RELEASES["commands"]]


def _named_in_error(error: str) -> str:
    """The first flag or word SGLang's argparse complained about."""
    flag = re.search(r"--[\w-]+", error)  # "argument --tool-call-parser: invalid choice: ..."
    if flag:
        return flag.group(0)
    words = error.split(":", 2)[-1].split()
    return words[0] if words else ""


@pytest.mark.parametrize("version, name", RELEASE_CASES, ids=[f"{v}-{n}" for v, n in RELEASE_CASES])
def test_each_release_is_read_as_its_own_argparse_reads_it(version, name):
    release = RELEASES["releases"][version]
    said = release["commands"][name]
    text, loader = with_config_files(RELEASES["commands"][name], RELEASES["configs"])
    # This data is what each release's prepare_server_args made of the arguments (the launch_server
    # path); sglang serve's own checks before it are compared in test_launch_differential.py.
    text = text.replace("sglang serve ", "python -m sglang.launch_server ")
    launch = parse_launch_command(text, sglang_version=version, config_loader=loader)
    assert launch.flag_table_version == version
    if "error" in said:
        named = _named_in_error(said["error"])
        assert any(named in problem for problem in launch.problems), (said["error"], launch.problems)
        return
    assert launch.problems == [] and launch.unknown == {}
    parsed = {**release["defaults"], **said["changes"]}
    assert {k: parsed[k] for k in launch.requested} == launch.requested
    assert set(said["changes"]) <= set(launch.requested)


def test_deprecated_spellings_land_in_the_newer_field_and_are_named():
    launch = parse_launch_command(SEED_COMMAND, sglang_version="0.5.18")
    assert launch.requested["cuda_graph_max_bs_decode"] == 256
    assert launch.requested["cuda_graph_backend_prefill"] == "disabled"  # the seed's flag, as 0.5.18 reads it
    assert launch.deprecated == {
        "--cuda-graph-max-bs": "--cuda-graph-max-bs-decode",
        "--disable-piecewise-cuda-graph": "--cuda-graph-backend-prefill=disabled",
    }
    assert launch.spelled["cuda_graph_backend_prefill"] == "--disable-piecewise-cuda-graph"


# ---- read as SGLang reads them: --config, sglang serve, converters, argparse's '-' rules, shell text ----


def _yaml(text: str):
    return lambda path: yaml.safe_load(text)


def test_only_the_separate_word_config_merges_a_file():
    good = "tp-size: 2\nport: 31000\n"
    merged = parse_launch_command("sglang serve --model-path m --config good.yaml", sglang_version="0.5.23", config_loader=_yaml(good))
    assert merged["tp_size"] == 2 and merged["port"] == 31000 and merged.problems == []
    inline = parse_launch_command("sglang serve --model-path m --config=good.yaml", sglang_version="0.5.23", config_loader=_yaml(good))
    assert "tp_size" not in inline and "port" not in inline
    assert inline.config_file is None
    assert any("--config=good.yaml: SGLang merges a config file only when --config and the file are separate words" in p for p in inline.problems)


@pytest.mark.parametrize(
    "command, problem",
    [
        ("--model-path m --config a.yaml --config b.yaml", "--config is given more than once: SGLang refuses to start"),
        ("--model-path m --config", "--config has no file after it: SGLang refuses to start"),
        ("--model-path m --config settings.json", "--config settings.json: SGLang reads only .yaml or .yml files and refuses to start"),
        ("--model-path m --config settings", "--config settings: SGLang reads only .yaml or .yml files"),
    ],
    ids=["twice", "trailing", "json", "no-suffix"],
)
def test_config_files_sglang_refuses(command, problem):
    launch = parse_launch_command(command, sglang_version="0.5.23", config_loader=_yaml("tp-size: 2\n"))
    assert any(problem in p for p in launch.problems), launch.problems
    assert "tp_size" not in launch


def test_a_config_file_that_is_missing_or_not_a_mapping_is_refused():
    def missing(path):
        raise FileNotFoundError(path)

    launch = parse_launch_command("--model-path m --config gone.yaml", sglang_version="0.5.23", config_loader=missing)
    assert any("--config gone.yaml: no such file: SGLang refuses to start" in p for p in launch.problems)
    launch = parse_launch_command("--model-path m --config list.yaml", sglang_version="0.5.23", config_loader=_yaml("- 1\n- 2\n"))
    assert any("Config file must contain a dictionary at root level" in p for p in launch.problems)


def test_config_mappings_are_written_as_each_release_writes_them():
    config = "json-model-override-args:\n  rope_scaling: 2\n"
    new = parse_launch_command("--model-path m --config c.yaml", sglang_version="0.5.23", config_loader=_yaml(config))
    old = parse_launch_command("--model-path m --config c.yaml", sglang_version="0.5.12", config_loader=_yaml(config))
    assert new["json_model_override_args"] == '{"rope_scaling": 2}'  # JSON from 0.5.14 on
    assert old["json_model_override_args"] == "{'rope_scaling': 2}"  # Python's repr before


def test_config_booleans_before_0_5_8_are_flags_when_true():
    config = "enable-metrics: true\ntrust-remote-code: false\n"
    launch = parse_launch_command("--model-path m --config c.yaml", sglang_version="0.5.5", config_loader=_yaml(config))
    assert launch["enable_metrics"] is True and "trust_remote_code" not in launch and launch.problems == []


@pytest.mark.parametrize(
    "version, command, model, problems",
    [
        ("0.5.23", "sglang serve Qwen/Qwen3-8B --tp 2", "Qwen/Qwen3-8B", []),
        ("0.5.16", "sglang serve Qwen/Qwen3-8B --tp 2", "Qwen/Qwen3-8B", []),
        ("0.5.23", "sglang serve --model-type llm Qwen/Qwen3-8B --tp 2", "Qwen/Qwen3-8B", []),
        ("0.5.12", "sglang serve --model-type=llm --model-path Qwen/Qwen3-8B --tp 2", "Qwen/Qwen3-8B", []),
    ],
    ids=["positional-0.5.23", "positional-0.5.16", "model-type-and-positional", "model-type-0.5.12"],
)
def test_sglang_serve_rewrites_its_argv_as_that_release_does(version, command, model, problems):
    launch = parse_launch_command(command, sglang_version=version)
    assert launch["model_path"] == model and launch["tp_size"] == 2
    assert launch.problems == problems and launch.unknown == {}


@pytest.mark.parametrize(
    "version, command, problem",
    [
        ("0.5.12", "sglang serve Qwen/Qwen3-8B --tp 2", "stray word 'Qwen/Qwen3-8B'"),  # no positional model before 0.5.16
        ("0.5.9", "sglang serve --model-type llm --model-path m", "--model-type is not a flag of SGLang 0.5.9"),
        ("0.5.23", "sglang serve --model-type banana --model-path m", "--model-type 'banana' is not one of SGLang 0.5.23's serve backends"),
        ("0.5.23", "sglang serve --model-path m --model-type", "--model-type needs a value: sglang serve refuses to start"),
    ],
    ids=["positional-too-early", "model-type-too-early", "unknown-backend", "model-type-without-value"],
)
def test_what_sglang_serve_refuses(version, command, problem):
    launch = parse_launch_command(command, sglang_version=version)
    assert any(problem in p for p in launch.problems), launch.problems


@pytest.mark.parametrize(
    "version, flag, value, expected",
    [
        ("0.5.23", "--context-length", "128k", 128000),
        ("0.5.23", "--context-length", "25.6k", 25600),
        ("0.5.23", "--max-total-tokens", "1Mi", 1048576),
        ("0.5.23", "--max-total-tokens", "4096", 4096),
        ("0.5.23", "--cuda-graph-config", '{"decode": {"max_bs": 64}}', {"decode": {"max_bs": 64}}),
        ("0.5.23", "--json-model-override-args", '{"a": [1, 2]}', '{"a": [1, 2]}'),
    ],
)
def test_values_are_converted_as_the_release_converts_them(version, flag, value, expected):
    from pytest_sglang.parse.launch import flag_table

    launch = parse_launch_command(["--model-path", "m", flag, value], sglang_version=version)
    assert launch.problems == []
    dest, _ = flag_table(version).lookup(flag)
    assert dest is not None and launch[dest] == expected


@pytest.mark.parametrize(
    "version, flag, value, problem",
    [
        ("0.5.9", "--context-length", "128k", "--context-length '128k' is not a valid whole number: SGLang refuses to start"),
        ("0.5.23", "--max-total-tokens", "1.5Mi", "decimals are not allowed with IEC suffixes like 'Mi'"),
        ("0.5.23", "--cuda-graph-config", "[1, 2]", "--cuda-graph-config must be a JSON object, got list"),
        ("0.5.23", "--cuda-graph-config", "{not json", "is not a valid CUDA graph configuration"),
        ("0.5.23", "--tp-size", "two", "--tp-size 'two' is not a valid whole number"),
    ],
)
def test_values_a_release_refuses_are_problems(version, flag, value, problem):
    launch = parse_launch_command(["--model-path", "m", flag, value], sglang_version=version)
    assert any(problem in p for p in launch.problems), launch.problems


def test_nullable_strings_read_none_as_none():
    from pytest_sglang.parse.launch import CONVERTERS

    assert CONVERTERS["nullable_str"]("None") is None and CONVERTERS["nullable_str"]("") is None
    assert CONVERTERS["nullable_str"]("x") == "x"


@pytest.mark.parametrize(
    "argv, field, value",
    [
        (["--model-path", "m", "--mem-fraction-static", "-.5"], "mem_fraction_static", -0.5),
        (["--model-path", "m", "--mem-fraction-static", "-1.5"], "mem_fraction_static", -1.5),
        (["--model-path", "m", "--served-model-name", "-x y"], "served_model_name", "-x y"),
    ],
    ids=["dot-five", "negative", "dash-with-space"],
)
def test_argparse_takes_these_dash_words_as_values(argv, field, value):
    launch = parse_launch_command(argv, sglang_version="0.5.23")
    assert launch[field] == value and launch.problems == [], launch.problems


def test_double_dash_ends_the_flags_and_what_follows_is_refused():
    launch = parse_launch_command(["--model-path", "m", "--", "--tp", "2"], sglang_version="0.5.23")
    assert "tp_size" not in launch and "port" not in launch
    assert any("stray '--'" in p and "unrecognized arguments" in p for p in launch.problems)
    assert any("stray word '--tp' after '--'" in p and "SGLang refuses to start" in p for p in launch.problems)
    assert not any("ambiguous" in p for p in launch.problems)
    # A flag never takes '--' as its value (argparse drops '-' from a flag's nargs pattern).
    launch = parse_launch_command(["--model-path", "--", "m"], sglang_version="0.5.23")
    assert any("--model-path needs a value" in p for p in launch.problems)


@pytest.mark.parametrize(
    "text",
    [
        "`CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server --model-path m --tp 2 --port 30000`",
        "CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server --model-path m --tp 2 --port 30000; echo done",
        "CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server --model-path m --tp 2 --port 30000 && tail -f log",
        "CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server --model-path m --tp 2 --port 30000 | tee server.log",
        "CUDA_VISIBLE_DEVICES=0,1 nohup python -m sglang.launch_server --model-path m --tp 2 --port 30000 > server.log 2>&1 &",
        "CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server --model-path m --tp 2 --port 30000  # the seed config",
        "export CUDA_VISIBLE_DEVICES=0,1\npython -m sglang.launch_server \\\n  --model-path m --tp 2 \\\n  --port 30000",
        "$ CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server --model-path m --tp 2 --port 30000",
        "Start it with `CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server --model-path m --tp 2 --port 30000` on gpu1.",
    ],
    ids=["backticks", "semicolon", "and-chain", "pipe", "redirect-background", "comment", "export-continuation", "prompt", "inline-code"],
)
def test_pasted_shell_text_reads_as_the_command_the_shell_runs(text):
    launch = parse_launch_command(text, sglang_version="0.5.23")
    assert launch.requested == {"model_path": "m", "tp_size": 2, "port": 30000}
    assert launch.env == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert launch.problems == [] and launch.unknown == {}


def test_a_redacted_value_is_a_value_not_a_shell_redirection():
    launch = parse_launch_command("python -m sglang.launch_server --model-path m --api-key <redacted> --tp 2", sglang_version="0.5.23")
    assert launch.problems == [] and launch["tp_size"] == 2 and launch["api_key"] == REDACTED


def test_an_optional_value_left_out_stores_the_flags_constant():
    launch = parse_launch_command("python -m sglang.launch_server --model-path m --model-checksum", sglang_version="0.5.23")
    assert launch["model_checksum"] == "" and launch.problems == []
    launch = parse_launch_command("python -m sglang.launch_server --model-path m --model-checksum abc", sglang_version="0.5.23")
    assert launch["model_checksum"] == "abc"


def test_config_mappings_are_json_from_0_5_14():
    config = "limit-mm-data-per-request:\n  image: 1\n"
    for version, expected in (("0.5.13", None), ("0.5.14", {"image": 1}), ("0.5.15", {"image": 1})):
        launch = parse_launch_command("--model-path m --config c.yaml", sglang_version=version, config_loader=_yaml(config))
        if expected is None:  # repr text, which json.loads refuses: SGLang 0.5.13 does not start
            assert any("is not a valid JSON value" in p for p in launch.problems)
        else:
            assert launch["limit_mm_data_per_request"] == expected and launch.problems == []


def test_a_flag_that_only_looks_secret_keeps_its_values():
    # --prompt-token is argparse's prefix of --prompt-tokens-buckets, not a token
    launch = parse_launch_command("python -m sglang.launch_server --model-path m --prompt-token -.5 x=y", sglang_version="0.5.12")
    assert launch["prompt_tokens_buckets"] == ["-.5", "x=y"]
    secret = parse_launch_command("python -m sglang.launch_server --model-path m --api-k sk-LOOKS-1 --tp 2", sglang_version="0.5.12")
    assert secret["api_key"] == REDACTED and "sk-LOOKS-1" not in repr(secret)


# ---- SGLang's own argparse actions ----------------------------------------------------------------


def test_every_action_class_of_every_release_is_modelled():
    # Each table records the release's own action classes (an entry's "action", their source under
    # "actions"); a class launch.py does not model would be read as a plain store. A new one fails here.
    from pytest_sglang.parse.launch import ACTIONS, flag_table, table_versions

    used: set[str] = set()
    for version in table_versions():
        table = flag_table(version)
        named = {e["action"] for f in table.fields.values() for e in [f, *f.get("aliases", [])] if "action" in e}
        assert named == set(table.action_sources), version
        assert all(source.startswith("class ") for source in table.action_sources.values()), version
        used |= named
    assert used == set(ACTIONS)


def test_the_lora_path_action_model_is_the_source_of_every_release():
    # lora_paths() models one LoRAPathAction; every release's table holds that same source.
    from pytest_sglang.parse.launch import flag_table, table_versions

    # 0.5.0rc2's keeps {name: path}, modelled by lora_paths_by_name, chosen by that source.
    sources = {flag_table(v).action_sources["LoRAPathAction"]: v for v in reversed(table_versions())}
    assert len(sources) == 2
    newer, older = (s for s, v in sorted(sources.items(), key=lambda item: Version(item[1]), reverse=True))
    for step in ("lora_path.strip()", 'startswith("{") and lora_path.endswith("}")', "json.loads(lora_path)", '"lora_path" in obj and "lora_name" in obj'):
        assert step in newer
    assert "getattr(namespace, self.dest)[name] = path" in older and "json" not in older


def test_the_first_lora_path_action_keeps_a_mapping_of_name_to_path():
    launch = parse_launch_command(["--model-path", "m", "--lora-paths", "a=/loras/a", " b ", "c=x=y"], sglang_version="0.5.0rc2")
    assert launch.problems == []
    assert launch["lora_paths"] == {"a": "/loras/a", " b ": " b ", "c": "x=y"}
    assert parse_launch_command(["--model-path", "m", "--lora-paths", "{not json}"], sglang_version="0.5.0rc2")["lora_paths"] == {"{not json}": "{not json}"}


@pytest.mark.parametrize("version", ["0.5.5", "0.5.12", "0.5.23"])
def test_lora_paths_are_stripped_and_json_objects_parsed(version):
    launch = parse_launch_command(
        ["--model-path", "m", "--lora-paths", " a ", '{"lora_name":"x","lora_path":"/p"}', " b=/loras/b ", ' {"lora_name": "y", "lora_path": "/q"} '],
        sglang_version=version,
    )
    assert launch.problems == []
    assert launch["lora_paths"] == ["a", {"lora_name": "x", "lora_path": "/p"}, "b=/loras/b", {"lora_name": "y", "lora_path": "/q"}]
    # Text that does not both start with '{' and end with '}' stays text, as SGLang leaves it.
    assert parse_launch_command(["--model-path", "m", "--lora-paths", "[1]", "{x", "x}"], sglang_version=version)["lora_paths"] == ["[1]", "{x", "x}"]
    assert parse_launch_command(["--model-path", "m", "--lora-paths"], sglang_version=version)["lora_paths"] == []


@pytest.mark.parametrize(
    "value, problem",
    [
        ('{"lora_name": "x"}', "--lora-paths: '{\"lora_name\": \"x\"}' looks like a JSON str, but it does not contain 'lora_name' and 'lora_path' keys."),
        (" {} ", "--lora-paths: '{}' looks like a JSON str"),
        ("{not json}", "--lora-paths: '{not json}' is not valid JSON (Expecting property name enclosed in double quotes"),
    ],
    ids=["missing-path", "empty-object", "bad-json"],
)
def test_lora_paths_sglang_refuses_are_problems(value, problem):
    launch = parse_launch_command(["--model-path", "m", "--lora-p", value], sglang_version="0.5.23")
    assert any(p.startswith(problem.replace("--lora-paths:", "--lora-p (--lora-paths):")) and p.endswith("SGLang refuses to start") for p in launch.problems), launch.problems


# ---- a launch command written as a list: Python, YAML (Kubernetes, compose) -----------------------

SHELL_FORM = "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 4 --lora-paths ' a ' --api-key sk-LIST-1"
LIST_FORMS = {
    "python-list": '["python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B", "--tp", "4", "--lora-paths", " a ", "--api-key", "sk-LIST-1"]',
    "prepare-server-args": (
        "from sglang.srt.server_args import prepare_server_args\n"
        "server_args = prepare_server_args(\n"
        '    ["--model-path", "Qwen/Qwen3-8B", "--tp", "4",  # four GPUs\n'
        "     '--lora-paths', ' a ', '--api-key', 'sk-LIST-1']\n)\n"
    ),
    "prepare-server-args-snippet": 'server_args = prepare_server_args(["--model-path", "Qwen/Qwen3-8B", "--tp", "4", "--lora-paths", " a ", "--api-key", "sk-LIST-1"])\n...',
    "popen": '```python\nsubprocess.Popen(["python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B", "--tp", "4", "--lora-paths", " a ", "--api-key", "sk-LIST-1"])\n```',
    "kubernetes-block": (
        "spec:\n  containers:\n  - name: sidecar\n    command: [\"sleep\", \"infinity\"]\n  - name: sglang\n    image: lmsysorg/sglang:latest\n"
        '    command: ["python3", "-m", "sglang.launch_server"]\n    args:\n    - --model-path\n    - Qwen/Qwen3-8B\n    - --tp\n'
        '    - "4"  # four GPUs\n    - --lora-paths\n    - \' a \'\n    - --api-key\n    - "sk-LIST-1"\n'
    ),
    "kubernetes-flow": 'command:\n- python3\n- -m\n- sglang.launch_server\nargs: ["--model-path", "Qwen/Qwen3-8B",\n       "--tp", "4", "--lora-paths", " a ", --api-key, sk-LIST-1]\n',
    "kubernetes-shell": (
        "containers:\n- name: sglang\n  command: [\"/bin/bash\", \"-c\"]\n  args:\n  - >-\n    python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B\n"
        "    --tp 4 --lora-paths ' a ' --api-key sk-LIST-1\n"
    ),
    "compose": "services:\n  sglang:\n    image: lmsysorg/sglang\n    command: python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 4 --lora-paths ' a ' --api-key sk-LIST-1\n",
    "args-only": "args:\n  - --model-path\n  - Qwen/Qwen3-8B\n  - --tp\n  - '4'\n  - --lora-paths\n  - ' a '\n  - --api-key\n  - sk-LIST-1\n",
    "bare-yaml": "- --model-path\n- Qwen/Qwen3-8B\n- --tp\n- '4'\n- --lora-paths\n- \" a \"\n- --api-key\n- 'sk-LIST-1'\n",
}


@pytest.mark.parametrize("name", sorted(LIST_FORMS))
def test_a_command_written_as_a_list_reads_as_the_same_command_line(name):
    shell = parse_launch_command(SHELL_FORM, sglang_version="0.5.23")
    launch = parse_launch_command(LIST_FORMS[name], sglang_version="0.5.23")
    assert launch.form == ("Python list" if name.startswith(("python", "prepare", "popen")) else "YAML list")
    assert launch.requested == shell.requested and launch.requested["lora_paths"] == ["a"]
    assert launch.problems == [] and launch.unknown == {}
    assert launch.entrypoint == (shell.entrypoint if "sglang.launch_server" in LIST_FORMS[name] else None)
    assert "sk-LIST-1" not in repr(launch)


def test_a_kubernetes_container_gives_its_environment_without_secrets():
    manifest = (
        "containers:\n- name: sglang\n  command: [python3, -m, sglang.launch_server]\n  args: [--model-path, m]\n"
        "  env:\n  - name: HF_TOKEN\n    value: hf_LIST_2\n  - name: NCCL_DEBUG\n    value: \"INFO\"\n"
        "  - name: FROM_SECRET\n    valueFrom:\n      secretKeyRef: {name: s, key: k}\n"
    )
    launch = parse_launch_command(manifest, sglang_version="0.5.23")
    assert launch.env == {"HF_TOKEN": REDACTED, "NCCL_DEBUG": "INFO"}
    assert launch.requested == {"model_path": "m"} and "hf_LIST_2" not in repr(launch)


@pytest.mark.parametrize(
    "text, field, value, note",
    [
        ('prepare_server_args(["--model-path", "m", "--tp", 4])', "tp_size", 4, "list item 4 is not a string: SGLang's argparse fails on it"),
        ('prepare_server_args(["--model-path", model, "--tp", "4"])', "model_path", "{model}", "list item 'model' is not a literal: read as {model}"),
        ('prepare_server_args(["--model-path", "m", f"--served-model-name={name}"])', "served_model_name", "{name}", "is not a literal: read with its {...} as written"),
        ("args: [--model-path, m, --tp, 4]", "tp_size", 4, 'list item 4 is not a string in YAML: Kubernetes refuses it in command and args (quote it: "4")'),
        ("args:\n- --model-path\n- m\n- --enable-metrics\n- --tp\n- 4\n", "tp_size", 4, "list item 4 is not a string in YAML"),
    ],
    ids=["python-number", "python-name", "python-f-string", "yaml-flow-number", "yaml-block-number"],
)
def test_a_list_item_that_is_not_a_string_is_read_as_its_text_and_named(text, field, value, note):
    launch = parse_launch_command(text, sglang_version="0.5.23")
    assert launch[field] == value
    assert any(note in p for p in launch.problems), launch.problems


def test_prepare_server_args_with_a_computed_list_names_what_is_not_read():
    launch = parse_launch_command('prepare_server_args(["--model-path", "m"] + sys.argv[1:])', sglang_version="0.5.23")
    assert launch.requested == {"model_path": "m"}
    assert launch.problems == ["'sys.argv[1:]' is not a list literal: its words are not read"]


@pytest.mark.parametrize(
    "text",
    [
        "[ -f /models/m ] && python -m sglang.launch_server --model-path m --tp 2",
        "- start it: python -m sglang.launch_server --model-path m --tp 2",
        "python -m sglang.launch_server --model-path m --tp 2 --json-model-override-args '[\"a\"]'",
    ],
    ids=["shell-test-bracket", "markdown-bullet", "json-value"],
)
def test_shell_text_that_only_looks_like_a_list_is_read_as_shell(text):
    launch = parse_launch_command(text, sglang_version="0.5.23")
    assert launch.form == "shell" and launch.entrypoint == "python -m sglang.launch_server"
    assert launch.requested["tp_size"] == 2 and launch.problems == []


@pytest.mark.parametrize(
    "text, error",
    [
        ('["--tp"' + ', "1"' * 10_001 + "]", "the Python list cannot be read: it has more than 10000 items"),
        ("args: [" + ", ".join(["x"] * 10_001) + "]", "the YAML list cannot be read: it has more than 10000 items"),
        ("[" * 5000 + "]" * 5000, "its brackets are nested more than 50 deep"),
        ("prepare_server_args(" + "[" * 60 + "]" * 60 + ")", "its brackets are nested more than 50 deep"),
        ('["--model-path", "' + "m" * 300_000 + '"]', "it is longer than 262144 characters"),
        ("args:\n- --model-path\n- 'unclosed\n", "an unbalanced single quote"),
        ('args: ["--model-path", m', "the [ ... ] list is not closed"),
        ('args: ["' + "\n" * 200_000, "the [ ... ] list is not closed"),  # read in one pass, not once a line
        ("args:\n- --model-path\n- {a: 1}\n", "is not a string (quote it)"),
        ('args: ["\\q"]', "'\\\\q' is not a YAML escape"),
    ],
    ids=["python-items", "yaml-items", "deep-python", "deep-call", "long", "yaml-quote", "yaml-flow-open", "yaml-flow-open-lines", "yaml-mapping", "yaml-escape"],
)
def test_a_list_that_cannot_be_read_is_one_line_and_a_usage_error(text, error):
    from pytest_sglang.base.errors import SpecError

    launch = parse_launch_command(text, sglang_version="0.5.23")
    assert launch.read_error is not None and error in launch.read_error and "\n" not in launch.read_error
    assert launch.requested == {} and launch.problems[0] == launch.read_error
    with pytest.raises(SpecError, match="the launch command cannot be read: the (Python|YAML) list cannot be read") as raised:
        launch.require_arguments()
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "text",
    ["...", "  …  ", "", "python -m sglang.launch_server", "python -m sglang.launch_server ...", "sglang serve ...", "prepare_server_args([...])",
     "prepare_server_args([])", 'args: ["..."]', "command: [python3, -m, sglang.launch_server]\nargs: []\n", "echo hello", "[]"],
)  # fmt: skip
def test_a_command_without_sglang_arguments_is_a_usage_error(text):
    from pytest_sglang.base.errors import SpecError

    launch = parse_launch_command(text, sglang_version="0.5.23")
    with pytest.raises(SpecError, match="has no SGLang arguments: give the whole command") as raised:
        launch.require_arguments()
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "text",
    ["--model-path m", "python -m sglang.launch_server --model-path m ...", 'prepare_server_args(["--tp", "2"])', "sglang serve --tp 2",
     "--disable-piecewise-cuda-graph", "--no-such-flag 1"],
)  # fmt: skip
def test_a_command_with_sglang_arguments_is_not_a_usage_error(text):
    # A flag the newest release does not know may be an older release's (or none's): the
    # command has arguments, and which releases accept them is judged after.
    parse_launch_command(text, sglang_version="0.5.23").require_arguments()


def test_sglang_serve_before_it_existed_starts_no_server():
    # 0.5.0rc2-0.5.4.post3 ship no sglang/cli/serve.py (the launch differential runs each wheel).
    launch = parse_launch_command("sglang serve --model-path m --tp 2", sglang_version="0.5.4.post3")
    assert launch.problems == ["sglang serve: SGLang 0.5.4.post3 has no 'sglang serve' command, so this command starts no server (use python -m sglang.launch_server)"]
    assert [r.kind for r in launch.refusals] == ["no-serve"]
    assert parse_launch_command("sglang serve --model-path m --tp 2", sglang_version="0.5.5").problems == []


def test_a_config_file_before_the_merger_existed_is_an_unknown_flag():
    # The table records that 0.5.2 has no ConfigArgumentMerger (config.merger false).
    older = parse_launch_command("python -m sglang.launch_server --model-path m --config a.yaml", sglang_version="0.5.2", config_loader=lambda path: {"tp_size": 4})
    assert [r.kind for r in older.refusals] == ["unknown-flag"] and older.config_file is None and "tp_size" not in older.requested
    newer = parse_launch_command("python -m sglang.launch_server --model-path m --config a.yaml", sglang_version="0.5.3", config_loader=lambda path: {"tp-size": 4})
    assert newer.refusals == [] and newer.config_file == "a.yaml" and newer["tp_size"] == 4


def test_a_deprecated_moe_flag_of_0_5_3_refuses_with_its_own_message():
    launch = parse_launch_command("python -m sglang.launch_server --model-path m --enable-ep-moe", sglang_version="0.5.4")
    (refusal,) = launch.refusals
    assert refusal.kind == "deprecated" and refusal.message == "NOTE: --enable-ep-moe is deprecated. Please set `--ep-size` to the same value as `--tp-size` instead."
