"""``explain --execute`` against real SGLang (run with --real-sglang): the installed 0.5.23, and
0.5.12 from its wheel in front of the same environment (as a user's environment of that release),
on the seed case's command (Qwen3.5-122B-A10B on 4x RTX PRO 6000). The runner's refusal of the
network is tested with the entry-point runner's, which is the same code
(``test_differential.py``, ``test_every_network_connection_is_refused_in_the_release_process``)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import postinit_differential as differential

from pytest_sglang.judge.explain import explain_launch
from pytest_sglang.simulator.profile import load_profile

QWEN35 = "Qwen3_5MoeForConditionalGeneration"
GPU = {"gpu": "RTX PRO 6000", "gpus": 4, "gpu_memory": "97887MiB"}
SEED = load_profile("qwen35-122b-a10b-4xrtx6000-candidate").launch_command
# 0.5.23 no longer has --mamba-scheduler-strategy (it became --mamba-radix-cache-strategy).
SEED_FOR_0_5_23 = SEED.replace(" --mamba-scheduler-strategy extra_buffer", "")


def test_the_seed_command_on_0_5_12_disables_the_piecewise_graph_by_the_multimodal_rule(sglang_python, tmp_path, monkeypatch):
    env = differential.release_environment("0.5.12", tmp_path / "src")
    for name in ("PYTHONPATH", "SGLANG_FROM_WHEEL", "SGLANG_TRANSFORMERS_PIN"):
        monkeypatch.setenv(name, env[name])
    explanation = explain_launch(SEED, **GPU, model=QWEN35, execute=True, sglang_python=str(sglang_python))
    execution = explanation.execution
    assert execution is not None and execution.error is None
    assert execution.sglang_version == explanation.sglang_version == "0.5.12"  # the release asked, not given
    pcg = execution.field("disable_piecewise_cuda_graph")
    assert (pcg.requested, pcg.value, pcg.rules) == (False, True, ["pcg.multimodal"])
    unexplained = execution.field("speculative_algorithm")
    assert (unexplained.requested, unexplained.value, unexplained.rules) == ("NEXTN", "EAGLE", [])
    assert unexplained.cause == "changed by SGLang 0.5.12, no rule explains it yet"
    assert execution.field("mem_fraction_static") is None  # given (0.838), and kept


def test_the_installed_0_5_23_through_the_command_line(sglang_python):
    args = ["--launch", SEED_FOR_0_5_23, "--gpu", "RTX PRO 6000", "--gpus", "4", "--gpu-memory", "97887MiB", "--model", QWEN35]
    run = [sys.executable, "-m", "pytest_sglang.cli.main", "explain", *args, "--execute", "--sglang-python", str(sglang_python), "--fail-on", "never"]
    text = subprocess.run(run, capture_output=True, text=True, timeout=600)
    assert text.returncode == 0, text.stderr
    assert "launch command (SGLang 0.5.23" in text.stdout
    assert "executed by SGLang 0.5.23's own post-init (4x RTX PRO 6000 (SM120, 97887 MiB) simulated" in text.stdout
    assert "    attention_backend: None -> 'flashinfer'  [attention.default-mha.v5]" in text.stdout
    assert "    speculative_algorithm: 'NEXTN' -> 'EAGLE'  changed by SGLang 0.5.23, no rule explains it yet" in text.stdout
    data = json.loads(subprocess.run([*run, "--json"], capture_output=True, text=True, timeout=600).stdout)
    changed = {c["field"]: c for c in data["execution"]["changed"]}
    assert changed["mamba_radix_cache_strategy"]["rules"] == ["capacity.mamba-auto-extra-buffer"]
    assert data["execution"]["sglang_version"] == "0.5.23"


def test_a_command_the_release_refuses_is_one_line_naming_the_exception(sglang_python):
    execution = explain_launch(SEED, **GPU, model=QWEN35, execute=True, sglang_python=str(sglang_python)).execution
    assert execution.error == "_ArgparseError: unrecognized arguments: --mamba-scheduler-strategy extra_buffer"
    assert execution.sglang_version == "0.5.23" and execution.changed == []


def test_the_manual_shows_what_execute_prints(sglang_python):
    # docs/explain.md, "Explain by execution": its command, with this environment's python, prints
    # the lines shown, in order ("..." leaves lines out; the time and the random seed vary).
    page = (Path(__file__).resolve().parents[2] / "docs" / "explain.md").read_text()
    block = re.search(r"```console\n\$ (pytest-sglang explain [^\n]*--execute[^\n]*\\\n[^\n]*)\n(.*?)```", page, re.S)
    assert block, "docs/explain.md has no --execute console block"
    words = shlex.split(block.group(1).replace("\\\n", " "))
    words[words.index("--sglang-python") + 1] = str(sglang_python)
    done = subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", *words[1:]], capture_output=True, text=True, timeout=600)
    varying = lambda line: re.sub(r"random_seed: None -> \d+", "random_seed: None -> N", re.sub(r", [\d.]+ s\)", ", N s)", line))  # noqa: E731
    printed = iter(varying(line) for line in done.stdout.splitlines())
    for shown in block.group(2).rstrip("\n").splitlines():
        if shown != "...":
            assert varying(shown) in printed, f"docs/explain.md is stale: {shown!r} is not printed (in this order)\n{done.stdout}"
