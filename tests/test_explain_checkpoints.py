"""A model path that names a public checkpoint decides the model rules, offline: the catalog
(pytest_sglang/model/knowledge/checkpoints.json), how a path is matched to an entry, and explain
as users run it (explain_launch, the command line, a target that does not report its model)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from packaging.version import Version
from support import ROOT, artefact

from pytest_sglang import connect
from pytest_sglang.judge.explain import explain, explain_launch
from pytest_sglang.judge.explain.api import situation_of
from pytest_sglang.judge.explain.checkpoint import match_model_path
from pytest_sglang.judge.explain.checkpoint_table import families, markdown
from pytest_sglang.judge.explain.kb import load
from pytest_sglang.model.knowledge.checkpoints import FILE, catalog, checkpoint
from pytest_sglang.model.versions import within

DATA = json.loads((ROOT / "pytest_sglang" / "model" / "knowledge" / FILE).read_text())
MODELS = ROOT / "pytest_sglang" / "model" / "knowledge" / "models"
QWEN35 = "Qwen/Qwen3.5-122B-A10B"
# The class 7 command: the seed deployment, with its model path and no --model.
CLASS7 = (
    "python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --tp 4 --max-running-requests 48 "
    "--enable-fused-moe-sum-all-reduce --enable-flashinfer-allreduce-fusion --speculative-algorithm NEXTN "
    "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --mamba-scheduler-strategy extra_buffer"
)
SEED = {"gpu": "RTX PRO 6000", "gpus": 4, "gpu_memory": "96GiB", "sglang_version": "0.5.12"}


def gap(explanation, fact="model.arch"):
    return next((f for f in explanation.findings if f.id == f"gap.{fact}"), None)


def decided(explanation):
    return {(f.id, f.severity, f.summary, repr(f.predicted)) for f in explanation.findings if not f.id.startswith("gap.")}


# ---- the catalog -------------------------------------------------------------------------------

# What each entry is, as a user knows the model: MoE, hybrid (linear attention or mamba layers),
# multimodal. A new entry needs its line here.
EXPECTED_FAMILIES = {
    "meta-llama/Llama-3.1-8B-Instruct": set(),
    "meta-llama/Llama-3.1-70B-Instruct": set(),
    "meta-llama/Meta-Llama-3.1-8B": set(),
    "meta-llama/Meta-Llama-3.1-70B": set(),
    "meta-llama/Meta-Llama-3.1-405B": set(),
    "meta-llama/Llama-3.2-1B-Instruct": set(),
    "meta-llama/Llama-3.3-70B-Instruct": set(),
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": {"moe", "multimodal"},
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": {"moe", "multimodal"},
    "Qwen/Qwen2.5-7B-Instruct": set(),
    "Qwen/Qwen2.5-7B": set(),
    "Qwen/Qwen2.5-72B": set(),
    "Qwen/Qwen3-8B": set(),
    "Qwen/Qwen3-32B": set(),
    "Qwen/Qwen3-32B-FP8": set(),
    "Qwen/Qwen3-30B-A3B": {"moe"},
    "Qwen/Qwen3-30B-A3B-FP8": {"moe"},
    "Qwen/Qwen3-235B-A22B": {"moe"},
    "Qwen/Qwen3-235B-A22B-FP8": {"moe"},
    "Qwen/Qwen3-Coder-480B-A35B-Instruct": {"moe"},
    "Qwen/Qwen3-Next-80B-A3B-Instruct": {"moe", "hybrid"},
    "Qwen/Qwen3-Next-80B-A3B-Thinking": {"moe", "hybrid"},
    "Qwen/Qwen3.5-27B": {"hybrid", "multimodal"},
    "Qwen/Qwen3.5-35B-A3B": {"moe", "hybrid", "multimodal"},
    "Qwen/Qwen3.5-122B-A10B": {"moe", "hybrid", "multimodal"},
    "Qwen/Qwen3.5-397B-A17B": {"moe", "hybrid", "multimodal"},
    "deepseek-ai/DeepSeek-V3": {"moe"},
    "deepseek-ai/DeepSeek-R1": {"moe"},
    "deepseek-ai/DeepSeek-V3.1": {"moe"},
    "deepseek-ai/DeepSeek-V3.2-Exp": {"moe"},
    "deepseek-ai/DeepSeek-V3.2": {"moe"},
    "deepseek-ai/DeepSeek-V4-Flash": {"moe"},
    "deepseek-ai/DeepSeek-V4-Pro": {"moe"},
    "zai-org/GLM-4.5-Air": {"moe"},
    "zai-org/GLM-4.7-FP8": {"moe"},
    "zai-org/GLM-4.7-Flash": {"moe"},
    "zai-org/GLM-5": {"moe"},
    "zai-org/GLM-5-FP8": {"moe"},
    "zai-org/GLM-5.1": {"moe"},
    "zai-org/GLM-5.1-FP8": {"moe"},
    "moonshotai/Kimi-K2-Instruct": {"moe"},
    "moonshotai/Kimi-K2-Thinking": {"moe"},
    "moonshotai/Kimi-K2.5": {"moe", "multimodal"},
    "openai/gpt-oss-20b": {"moe"},
    "openai/gpt-oss-120b": {"moe"},
    "google/gemma-3-27b-it": {"multimodal"},
    "google/gemma-4-26B-A4B": {"moe", "multimodal"},
    "mistralai/Mistral-Nemo-Instruct-2407": set(),
    "mistralai/Mixtral-8x7B-v0.1": {"moe"},
    "mistralai/Mixtral-8x22B-v0.1": {"moe"},
    "MiniMaxAI/MiniMax-M2.5": {"moe"},
    "MiniMaxAI/MiniMax-M2.7": {"moe"},
    "tiiuae/Falcon-H1-7B-Instruct": {"hybrid"},
}


def test_every_entry_parses_names_its_architecture_and_its_source():
    entries = catalog()
    assert len(entries) == len(DATA["entries"]) > 0
    kept = set(DATA["config_fields"])
    for entry in entries.values():
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", entry.repo), entry.repo
        assert re.fullmatch(r"[A-Z]\w+", entry.architecture) and entry.config["architectures"][0] == entry.architecture
        assert entry.source.startswith(("https://github.com/", "tests/data/")), entry.source
        # Only the fields the catalog keeps, at the top and in a nested text_config.
        assert set(entry.config) <= kept, (entry.repo, set(entry.config) - kept)
        assert set(entry.config.get("text_config", {})) <= kept, entry.repo


def test_each_entry_names_its_layers_and_heads():
    # A public config.json may leave out what transformers defaults (Gemma 3 has no vocab_size);
    # the shape of its layers it always states.
    for entry in catalog().values():
        text = entry.config.get("text_config", entry.config)
        needed = {"num_hidden_layers", "hidden_size", "num_attention_heads"}
        assert needed <= set(text), (entry.repo, needed - set(text))


def test_the_families_of_every_entry_come_out_as_users_know_the_model():
    kb = load()
    assert set(EXPECTED_FAMILIES) == {e.repo for e in catalog().values()}, "every entry needs its families in EXPECTED_FAMILIES"
    for repo, expected in EXPECTED_FAMILIES.items():
        got = {name for name, member in families(kb, checkpoint(repo)).items() if member}
        assert got == expected, repo


def test_entries_agree_with_the_config_json_copies_in_tests_data():
    # tests/data/README.md "Model configs" names the repository of each copy.
    readme = (ROOT / "tests" / "data" / "README.md").read_text()
    copies = dict(re.findall(r"^\| `([\w.-]+)` \| \[([\w.-]+/[\w.-]+)\]\(https://huggingface\.co/", readme, re.M))
    compared = 0
    for folder, repo in copies.items():
        entry = checkpoint(repo)
        if entry is None:
            continue
        config = json.loads((ROOT / "tests" / "data" / "model-configs" / folder / "config.json").read_text())
        for part in (None, "text_config", "vision_config"):
            ours = entry.config.get(part, {}) if part else entry.config
            theirs = config.get(part, {}) if part else config
            for key in set(ours) & set(theirs) - {"text_config", "vision_config", "audio_config"}:
                assert ours[key] == theirs[key], (repo, part, key)
                compared += 1
    assert compared > 50


def test_the_docs_list_the_catalog_as_it_is():
    page = (ROOT / "docs" / "explain-checkpoints.md").read_text()
    assert page == markdown(load()), "regenerate: pytest-sglang explain --list-checkpoints --markdown > docs/explain-checkpoints.md"


# ---- matching a model path ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "Qwen/Qwen3.5-122B-A10B",
        "qwen/qwen3.5-122b-a10b",
        "/models/Qwen/Qwen3.5-122B-A10B",
        "/models/Qwen/Qwen3.5-122B-A10B/",
        "~/.cache/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B/snapshots/0123abcd",
        "/root/.cache/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B",
    ],
)
def test_a_path_naming_the_repository_finds_its_entry(path):
    assert match_model_path(path).entry is checkpoint(QWEN35)


@pytest.mark.parametrize(
    "path, names",
    [
        ("Qwen/Qwen3.5-122B-A10B-AWQ", "Qwen/Qwen3.5-122B-A10B-AWQ"),
        ("Qwen/Qwen3.5-122B-A10B-FP8", "Qwen/Qwen3.5-122B-A10B-FP8"),
        ("unsloth/Qwen3.5-122B-A10B-GGUF", "unsloth/Qwen3.5-122B-A10B-GGUF"),
        ("~/.cache/huggingface/hub/models--someone--my-finetune/snapshots/1", "someone/my-finetune"),
    ],
)
def test_a_repository_the_catalog_lacks_is_not_guessed_from_a_similar_one(path, names):
    match = match_model_path(path)
    assert match.entry is None and match.repo == names
    assert "is not in the catalog" in match.note()


@pytest.mark.parametrize("path", ["/models/Qwen3.5-122B-A10B", "/data/ckpt/final", "m", "./model", ""])
def test_a_local_folder_that_names_no_known_repository_says_nothing(path):
    match = match_model_path(path)
    assert match.entry is None and match.note() is None


# ---- explain as users run it -------------------------------------------------------------------


def test_class_7_the_model_path_decides_the_rules_that_were_undecided():
    before = explain_launch(CLASS7.replace("Qwen/Qwen3.5-122B-A10B", "/models/my-model"), **SEED)
    waiting = set(gap(before).related)
    assert {"pcg.multimodal", "capacity.mamba-cap"} <= waiting
    after = explain_launch(CLASS7, **SEED)
    assert gap(after) is None and gap(after, "model.config") is None
    assert {"pcg.multimodal", "capacity.mamba-cap", "mem.vlm-factor"} <= {f.rule for f in after.findings}
    assert any(n.startswith(f"the model path names the public checkpoint {QWEN35}: the model facts are its catalog entry") for n in after.notes)
    assert after.facts["model.arch"] == {"value": "Qwen3_5MoeForConditionalGeneration", "source": f"catalog entry {QWEN35}"}


def test_the_entry_judges_as_the_public_config_json_does():
    with_entry = explain_launch(CLASS7, **SEED)
    with_file = explain_launch(CLASS7, model=str(ROOT / "tests" / "data" / "model-configs" / "qwen3.5-moe" / "config.json"), **SEED)
    assert decided(with_entry) == decided(with_file)


@pytest.mark.parametrize(
    "command",
    [
        "sglang serve Qwen/Qwen3.5-122B-A10B --tp 4",
        "python -m sglang.launch_server --model Qwen/Qwen3.5-122B-A10B --tp 4",
        "python -m sglang.launch_server --model-path /models/Qwen/Qwen3.5-122B-A10B --tp 4",
        "python -m sglang.launch_server --model-path ~/.cache/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B/snapshots/ab12 --tp 4",
    ],
)
def test_every_way_a_command_names_the_model_path(command):
    # 0.5.23: SGLang 0.5.12's `sglang serve` takes no positional model.
    explanation = explain_launch(command, sm=120, sglang_version="0.5.23")
    assert gap(explanation) is None
    assert explanation.facts["model.arch"]["source"] == f"catalog entry {QWEN35}"
    assert explanation.facts["model.multimodal"]["value"] is True and explanation.facts["model.hybrid"]["value"] is True


def test_an_explicit_model_wins_over_the_model_path():
    explanation = explain_launch("python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --tp 4", sm=120, sglang_version="0.5.12", model="LlamaForCausalLM")
    assert explanation.facts["model.arch"] == {"value": "LlamaForCausalLM", "source": "given architecture"}
    assert not any("catalog" in n for n in explanation.notes)
    assert "pcg.multimodal" not in {f.rule for f in explanation.findings}


@pytest.mark.parametrize("path", ["Qwen/Qwen3.5-122B-A10B-AWQ", "/srv/models/final"])
def test_an_unknown_repository_stays_undecided(path):
    explanation = explain_launch(f"python -m sglang.launch_server --model-path {path} --tp 4", sm=120, sglang_version="0.5.12")
    assert gap(explanation) is not None and "model.arch" not in explanation.facts
    said = [n for n in explanation.notes if "catalog" in n]
    assert said == ([f"the model path names {path}, which is not in the catalog of known checkpoints, so the model is unknown (give --model ARCH or --model path/to/config.json)"] if "/srv" not in path else [])


def test_the_model_path_decides_with_the_release_unknown():
    explanation = explain_launch("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8", gpu="H200", gpus=8)
    assert explanation.sglang_version is None and gap(explanation) is None
    assert any("catalog entry" in n and "deepseek-ai/DeepSeek-V3" in n for n in explanation.notes)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", *args], capture_output=True, text=True, timeout=120)


def test_the_command_line_decides_class_7_from_the_model_path():
    done = cli("explain", "--launch", CLASS7, "--gpu", "RTX PRO 6000", "--gpus", "4", "--gpu-memory", "96GiB", "--sglang-version", "0.5.12")
    assert done.returncode == 0, done.stderr
    assert f"note: the model path names the public checkpoint {QWEN35}" in done.stdout
    assert "[pcg.multimodal]" in done.stdout and "[capacity.mamba-cap]" in done.stdout
    assert "gap.model" not in done.stdout and "undecided" not in done.stdout


def test_the_command_line_lists_the_checkpoints():
    done = cli("explain", "--list-checkpoints", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert {r["repo"] for r in rows} == {e.repo for e in catalog().values()}
    done = cli("explain", "--list-checkpoints", "--launch", "python -m sglang.launch_server --model-path m")
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "--list-checkpoints takes no" in done.stderr


def test_a_target_that_does_not_report_its_architecture_is_judged_by_its_model_path(canned):
    server_info = json.loads(artefact("server_info.json")) | {"model_path": QWEN35}
    model_info = {"model_path": QWEN35, "is_generation": True}
    server = canned().serve_sglang(server_info, model_info)
    with connect(server.url) as target:
        explanation = explain(target)
        situation = situation_of(target)
    assert situation is not None
    assert situation.model["arch"].value == "Qwen3_5MoeForConditionalGeneration"
    assert situation.model["arch"].source == f"catalog entry {QWEN35}"
    assert situation.model["hybrid"].value is True and situation.model["multimodal"].value is True
    assert any(n.startswith(f"the model path names the public checkpoint {QWEN35}") for n in explanation.notes)


def test_a_target_reporting_another_architecture_keeps_its_own(canned):
    server_info = json.loads(artefact("server_info.json")) | {"model_path": QWEN35}
    model_info = json.loads(artefact("model_info.json")) | {"model_path": QWEN35}  # says LlamaForCausalLM
    server = canned().serve_sglang(server_info, model_info)
    with connect(server.url) as target:
        explanation = explain(target)
        situation = situation_of(target)
    assert situation is not None and situation.model["arch"].value == "LlamaForCausalLM"
    assert "catalog entry" not in situation.model["arch"].source
    assert not any("catalog" in n for n in explanation.notes)


# ---- the releases each entry claims ------------------------------------------------------------


def test_each_entry_claims_the_releases_whose_model_table_has_its_architecture():
    # The model tables are each wheel's EntryClass registry (the real tier's test_model_tables
    # reads every wheel), so an entry's claimed releases are proven against the wheels here.
    tables = sorted(MODELS.glob("sglang-models-*.json"))
    assert tables, f"no model tables in {MODELS} (python tests/real_sglang/model_tables_live.py writes them)"
    for path in tables:
        table = json.loads(path.read_text())
        release, archs = table["sglang_version"], set(table["architectures"])
        for entry in catalog().values():
            claimed = entry.sglang_since is not None and within(Version(release), Version(entry.sglang_since), Version(entry.sglang_until) if entry.sglang_until else None)
            assert claimed == (entry.architecture in archs), (entry.repo, entry.architecture, release)


@pytest.mark.parametrize("path", [None, "", "/", "//", "models--", "models----x", "a/b/../..", "~", "x" * 5000, "Qwen/\x00", "C:\\models\\Qwen\\Qwen3.5-122B-A10B", 42])
def test_any_model_path_gives_an_answer_never_an_error(path):
    match = match_model_path(path)
    assert match.entry is None or match.entry is checkpoint(QWEN35)
    assert match.note() is None or isinstance(match.note(), str)
