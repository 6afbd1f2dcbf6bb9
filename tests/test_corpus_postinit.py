"""Every real launch command and start-up line in tests/data, through each release's own post-init.

``tests/data/sglang-corpus-postinit.json`` holds the cases ``tests/real_sglang/corpus_postinit.py``
makes of the corpus launch commands and start-up lines, the artefacts, the explain cases and the
launch configurations (each with a model family, a stated or representative GPU, and its releases),
and what each release's own post-init made of them. explain_launch must agree with every answer,
as in the post-init differential: a value it predicts is the release's, an error it predicts is a
refusal; the stored set's ``known`` classes, each with its reason, are the only exceptions. The
real tier checks the answers are still the releases' own.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "real_sglang"))

import corpus_postinit as corpus  # noqa: E402
import postinit_differential as differential  # noqa: E402

DATA = json.loads(corpus.DATA.read_text())
BY_RELEASE: dict[str, list[dict]] = defaultdict(list)
for _case in DATA["cases"]:
    BY_RELEASE[_case["release"]].append(_case)


@pytest.mark.parametrize("version", sorted(BY_RELEASE, key=differential._key))
def test_explain_agrees_with_each_release_on_every_real_command(version):
    wrong = []
    for case in BY_RELEASE[version]:
        bad, _, _ = corpus.compare(case, case["answer"])
        wrong += [f"{case['item']}: {cls}: {detail}" for cls, detail in bad if not differential.known(cls, DATA["known"])]
    assert not wrong, "\n".join(wrong[:20])


def test_every_command_and_line_in_tests_data_is_run_or_left_out_with_its_reason():
    cases, skipped = corpus.all_cases(corpus.default_releases())
    stored = {json.dumps([c["item"], c["release"], c["gpu"], c["argv"], c["env"]], sort_keys=True) for c in DATA["cases"]}
    now = {json.dumps([c["item"], c["release"], c["gpu"], c["argv"], c["env"]], sort_keys=True) for c in cases}
    assert now == stored, "run: python tests/real_sglang/corpus_postinit.py --store"
    assert [s["item"] for s in skipped] == [s["item"] for s in DATA["skipped"]]
    assert all(s["why"] for s in DATA["skipped"])
    items = {c["item"] for c in DATA["cases"]} | {s["item"] for s in DATA["skipped"]}
    for folder in ("launch_commands", "server_args"):
        for path in (corpus.CORPUS / folder).glob("*.txt"):
            assert f"corpus/{folder}/{path.name}" in items, path
    assert len([i for i in items if i.startswith("explain-cases/")]) == sum(
        len(__import__("tomllib").loads(p.read_text()).get("case", [])) for p in corpus.CASES.glob("*.toml")
    )


def test_the_stored_set_runs_every_release_and_checks_predictions_against_them():
    # every release the real tier runs, and the releases files state (where a case is not left out)
    from differential import executed_versions

    assert set(executed_versions()) <= set(BY_RELEASE) <= set(corpus.default_releases())
    assert {"0.5.3.post1", "0.5.8.post1"} <= set(BY_RELEASE)  # releases the files state, judged by their own release
    result = corpus.check_stored(DATA)
    assert sum(r["agreed"] for r in result["per_release"].values()) > 1000
    accepted = [c for c in DATA["cases"] if "values" in c["answer"]]
    assert len(accepted) > len(DATA["cases"]) // 2


def test_every_open_class_has_a_reason():
    assert DATA["known"] == corpus.KNOWN
    assert all(reason.strip() for reason in DATA["known"].values())


# ---- how a real command becomes a case ----------------------------------------------------------


@pytest.mark.parametrize(
    "notes, name, count",
    [
        ("main branch (per page: 'SGLang Version: main branch', H200x8)", "NVIDIA H200", 8),
        ("gemma-4-31B-AWQ TP2 on 2x RTX 3090, ...", "NVIDIA GeForce RTX 3090", 2),
        ("GLM-5-FP8 TP8 on MI355X ROCm", "AMD Instinct MI355X", 8),
        ("DGX Spark GB10 (sm_121a), poolside/Laguna", "NVIDIA GB10", 8),
    ],
)
def test_the_gpu_a_file_states_is_the_one_simulated(notes, name, count):
    gpu = corpus.stated_gpu(notes)
    assert (gpu["name"], gpu["count"]) == (name, count)


def test_a_file_that_states_no_gpu_runs_on_one_gpu_per_sm_family():
    gpus = corpus.gpus_of({"gpu": None}, 8)
    assert sorted(g["sm"] for g in gpus) == [80, 90, 100, 120]


@pytest.mark.parametrize(
    "arch, family",
    [
        ("LlamaForCausalLM", "llama"),
        ("GptOssForCausalLM", "gpt-oss"),
        ("GlmMoeDsaForCausalLM", "deepseek-v3.2"),
        ("KimiK25ForConditionalGeneration", "deepseek-v3"),
        ("Qwen3ForCausalLM", "llama"),
    ],
)
def test_an_architecture_runs_as_its_own_family_or_the_family_of_its_kind(arch, family):
    assert corpus.family_of(arch)[0] == family


def test_a_launch_command_keeps_its_words_and_environment_with_the_model_swapped():
    item = {"id": "t", "kind": "launch", "model": None, "gpu": None, "release": None,
            "text": """SGLANG_ENABLE_SPEC_V2=0 python -m sglang.launch_server --model Qwen/Qwen3-30B-A3B --json-model-override-args '{"a": 1}' --tp 2"""}
    cases, why = corpus.cases_of(item, ["0.5.12"])
    assert why is None and len(cases) == 4
    assert cases[0]["argv"] == ["--model", "{models}/qwen3-moe", "--json-model-override-args", '{"a": 1}', "--tp", "2"]
    assert cases[0]["env"] == {"SGLANG_ENABLE_SPEC_V2": "0"}


def test_a_start_up_line_runs_as_the_command_that_produced_it():
    line = ("server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', tp_size=2, port=30000, "
            "chunked_prefill_size=4096, disable_radix_cache=True, api_key='sk-x')")
    cases, why = corpus.startup_cases({"id": "t", "kind": "startup", "text": line, "release": "0.5.12", "gpu": None, "model": None}, ["0.5.12"])
    assert why is None
    argv = cases[0]["argv"]
    assert argv[:2] == ["--model-path", "{models}/llama"]
    assert {"--tensor-parallel-size", "--chunked-prefill-size", "--disable-radix-cache"} <= set(argv)
    assert not any(w in argv for w in ("--port", "--api-key", "sk-x"))


def test_a_line_of_a_release_the_harness_does_not_run_is_left_out_with_its_reason():
    cases, why = corpus.startup_cases({"id": "t", "kind": "startup", "text": "server_args=ServerArgs(model_path='m', tp_size=2)",
                                       "release": "0.4.9", "gpu": None, "model": None}, differential.versions())
    assert cases == [] and "0.4.9" in why


def test_a_command_for_a_device_the_harness_does_not_simulate_is_left_out():
    item = {"id": "t", "kind": "launch", "model": "LlamaForCausalLM", "gpu": None, "release": None,
            "text": "python -m sglang.launch_server --model-path m --device cpu"}
    cases, why = corpus.cases_of(item, ["0.5.12"])
    assert cases == [] and "--device cpu" in why


def test_the_cpu_artefact_runs_as_a_gpu_launch():
    assert corpus._no_cpu_device("--device cpu --host 127.0.0.1 --model-path m") == " --host 127.0.0.1 --model-path m"
    assert corpus._no_cpu_device("python -m sglang.launch_server --model-path m --device=cpu --tp 2") == (
        "python -m sglang.launch_server --model-path m --tp 2")
    launch = next(i for i in corpus.launch_items() if i["id"] == "artefacts/server_info.json launch_command")
    assert "--device" not in launch["text"]
