"""parse_launch_command against what the real SGLang 0.5.23 made of the same commands.

``tests/data/sglang-0.5.23-resolutions.json`` holds, for each command, SGLang's own argparse
result and its resolved configuration (``prepare_server_args(argv).resolve_once()``), written
by ``tests/real_sglang/generate_data.py``; the real tier checks it is still what SGLang says.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from support import corpus_files, corpus_text
from pytest_sglang import Facts, normalise
from pytest_sglang.facts import Endpoint
from pytest_sglang.launch import parse_launch_command, split_command
from pytest_sglang.redact import REDACTED

DATA = json.loads((Path(__file__).parent / "data" / "sglang-0.5.23-resolutions.json").read_text())
BASE = DATA["base"]
CASES = DATA["cases"]
CONFIGS = {"{config}": DATA["config_yaml"], "{config_underscore}": DATA["config_underscore_yaml"]}


def _parse(command: str):
    return parse_launch_command(command, sglang_version="0.5.23", config_loader=lambda path: yaml.safe_load(CONFIGS[path]))


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
    assert launch.entrypoint in ("python -m sglang.launch_server", "sglang serve")
    assert launch.requested["model_path"]
    assert "port" in launch.requested or "tp_size" in launch.requested


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
    [("0.5.8.post1", "0.5.8"), ("0.5.10", "0.5.10"), ("0.5.18", "0.5.18"), ("0.5.19", "0.5.19"), ("0.5.23rc1", "0.5.23"), ("0.6.0", "0.5.23"), (None, "0.5.23")],
)
def test_each_release_has_its_table_and_a_newer_one_uses_the_newest(version, table):
    assert parse_launch_command("--model-path m", sglang_version=version).flag_table_version == table


@pytest.mark.parametrize(
    "version, note",
    [
        ("0.5.3", "no flag table for SGLang 0.5.3: read with 0.5.5's, the oldest"),
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
    from pytest_sglang.launch import flag_table

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
    words = error.split(":", 2)[-1].split()
    return next((w for w in words if w.startswith("--")), words[0] if words else "")


@pytest.mark.parametrize("version, name", RELEASE_CASES, ids=[f"{v}-{n}" for v, n in RELEASE_CASES])
def test_each_release_is_read_as_its_own_argparse_reads_it(version, name):
    release = RELEASES["releases"][version]
    said = release["commands"][name]
    configs = RELEASES["configs"]
    launch = parse_launch_command(
        RELEASES["commands"][name], sglang_version=version, config_loader=lambda path: yaml.safe_load(configs[path.strip("{}")])
    )
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
