"""``explain --execute`` bounded, as users meet it when the SGLang run cannot answer: a python
without SGLang, a run that does not finish, one that crashes or runs out of its memory. The
real tier runs an installed SGLang (``tests/real_sglang/test_explain_execute_real.py``).

The stand-ins for an SGLang environment's python are small scripts that behave as such a python
can (sleep, raise, allocate); none of them pretends to answer."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_sglang.base.errors import SpecError
from pytest_sglang.judge.explain.execute import RUNNER, execute_launch

ROOT = Path(__file__).resolve().parents[1]

COMMAND = "python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --tp 4"
GPU = {"gpu": "RTX PRO 6000", "gpus": 4, "gpu_memory": "96GiB"}


def stand_in(tmp_path: Path, body: str) -> str:
    """An executable standing in for an SGLang environment's python: it runs ``body`` (Python)."""
    script = tmp_path / "python"
    script.write_text(f"#!{sys.executable}\n{body}\n")
    script.chmod(0o755)
    return str(script)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", "explain", *args], capture_output=True, text=True, timeout=120)


def test_the_runner_is_run_by_path_and_never_imported_by_the_package():
    # The user's SGLang environment may lack pytest_sglang: the runner needs only what is beside it.
    assert RUNNER.is_file() and not (RUNNER.parent / "__init__.py").exists()
    imported = set()
    for file in RUNNER.parent.glob("*.py"):
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module.split(".")[0])
    assert "offline" in imported and "pytest_sglang" not in imported


@pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="this python has SGLang installed")
def test_a_python_without_sglang_is_one_line_naming_sglang_python():
    done = cli("--launch", COMMAND, "--gpu", "RTX PRO 6000", "--gpus", "4", "--gpu-memory", "96GiB", "--execute")
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "cannot import sglang" in done.stderr and "--sglang-python PATH" in done.stderr and sys.executable in done.stderr


def test_a_python_that_does_not_exist_is_one_line(tmp_path):
    with pytest.raises(SpecError, match=r"--sglang-python .*nothing-here.*cannot be run"):
        execute_launch(COMMAND, python=str(tmp_path / "nothing-here"), **GPU)


def test_a_run_that_does_not_finish_is_stopped_with_everything_it_started(tmp_path):
    child = tmp_path / "child.pid"
    python = stand_in(tmp_path, f"import subprocess, time\nopen({str(child)!r}, 'w').write(str(subprocess.Popen(['sleep', '60']).pid))\ntime.sleep(60)")
    started = time.monotonic()
    execution = execute_launch(COMMAND, python=python, timeout=2, **GPU)
    assert time.monotonic() - started < 20
    assert execution.error == "SGLang's post-init did not finish within 2 s (stopped)" and execution.changed == []
    status = Path(f"/proc/{int(child.read_text())}/status")
    time.sleep(0.2)
    # The process group went with it: the child is gone, or dead and not yet reaped by its new parent.
    assert not status.exists() or "State:\tZ" in status.read_text()


def test_a_crash_is_one_line_naming_the_exception(tmp_path):
    python = stand_in(tmp_path, "def post_init():\n    raise ValueError('tp_size 3 must divide 4 attention heads\\nsecond line')\npost_init()")
    execution = execute_launch(COMMAND, python=python, **GPU)
    assert execution.error == "ValueError: tp_size 3 must divide 4 attention heads"
    assert execution.sglang_version is None and execution.changed == []


def test_a_run_past_its_memory_bound_fails_with_the_bound_named(tmp_path):
    python = stand_in(tmp_path, "block = bytearray(2 * 2**30)")
    execution = execute_launch(COMMAND, python=python, memory=512 * 2**20, **GPU)
    assert execution.error.startswith("MemoryError") and "at most 0.5 GiB" in execution.error


def test_the_simulated_gpu_needs_its_facts():
    with pytest.raises(SpecError, match=r"give --gpus N, --gpu-memory SIZE"):
        execute_launch(COMMAND, sm=120)


def test_a_model_with_no_config_to_run_is_one_line_naming_model():
    with pytest.raises(SpecError, match=r"--execute needs the model's config.json.*give --model path/to/config.json"):
        execute_launch("python -m sglang.launch_server --model-path acme/private-model", **GPU)


def test_sglang_python_without_execute_is_refused():
    done = cli("--launch", COMMAND, "--sglang-python", sys.executable)
    assert done.returncode == 2 and "--sglang-python is for --execute" in done.stderr


def test_each_changed_field_gets_the_rules_of_the_findings_about_it_and_the_rest_say_none_does():
    # What a release's post-init changed (as 0.5.12 changes the seed command; real tier:
    # tests/real_sglang/test_explain_execute_real.py) against what explain's findings are about.
    from pytest_sglang.judge.explain import ChangedField, Execution, explain_launch
    from pytest_sglang.judge.explain.execute import attach
    from pytest_sglang.simulator.profile import load_profile

    command = load_profile("qwen35-122b-a10b-4xrtx6000-candidate").launch_command
    explanation = explain_launch(command, gpu="RTX PRO 6000", gpus=4, gpu_memory="97887MiB", sglang_version="0.5.12", model="Qwen3_5MoeForConditionalGeneration")
    changed = [ChangedField(field=f, requested=a, value=b) for f, a, b in (("disable_piecewise_cuda_graph", False, True), ("speculative_algorithm", "NEXTN", "EAGLE"))]
    execution = attach(Execution(sglang_version="0.5.12", python="python", seconds=1.0, changed=changed), explanation)
    assert execution.field("disable_piecewise_cuda_graph").rules == ["pcg.multimodal"]
    assert execution.field("disable_piecewise_cuda_graph").cause == "Piecewise CUDA graph is disabled because the model is multimodal"
    assert [c.field for c in execution.unexplained] == ["speculative_algorithm"]
    assert execution.field("speculative_algorithm").cause == "changed by SGLang 0.5.12, no rule explains it yet"


def test_a_refusal_finding_is_no_cause_of_a_value():
    # On SM120 0.5.23's rules call FlashInfer allreduce fusion a start-up error; its post-init
    # still sets flashinfer_allreduce_fusion_backend, which the deprecation rule explains.
    from pytest_sglang.judge.explain import ChangedField, Execution, explain_launch
    from pytest_sglang.judge.explain.execute import attach

    explanation = explain_launch(COMMAND + " --enable-flashinfer-allreduce-fusion", **GPU, sglang_version="0.5.23")
    assert explanation.by_rule("allreduce.fusion-sm-error")
    field = ChangedField(field="flashinfer_allreduce_fusion_backend", requested=None, value="auto")
    execution = attach(Execution(sglang_version="0.5.23", python="python", seconds=1.0, changed=[field]), explanation)
    assert execution.changed[0].rules == ["allreduce.fusion-deprecated-flag.v2"]


# ---- a host whose release the knowledge base lacks says so in pytest's header ------------------


def _profile_at(tmp_path: Path, version: str) -> str:
    profile = json.loads((ROOT / "pytest_sglang" / "simulator" / "profiles" / "llama31-8b-1xh100-0.5.9.json").read_text())
    profile["sglang_version"] = version
    path = tmp_path / f"llama-{version}.json"
    path.write_text(json.dumps(profile))
    return f"sim://{path}"


@pytest.mark.parametrize(
    "version, note",
    [
        ("0.5.24", "SGLang 0.5.24 is newer than the knowledge base (0.5.23): the newest rules are used"),
        ("0.4.9", "SGLang 0.4.9 is older than the knowledge base (0.5.0rc2): the oldest rules are used"),
        ("0.5.13.dev7", "SGLang 0.5.13.dev7 is a development build, newer than 0.5.12.post1: the rules of 0.5.12.post1 are used"),
    ],
)
def test_pytest_s_header_says_whose_rules_a_release_outside_the_knowledge_base_is_read_with(pytester, tmp_path, version, note):
    pytester.makepyfile("def test_x(sglang):\n    pass\n")
    host = _profile_at(tmp_path, version)
    result = pytester.runpytest(f"--sglang-host={host}", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([f"sglang: {host}: NOTE {note}*; where SGLang {version} is installed, pytest-sglang explain --execute runs its own post-init*(--sglang-python PATH)"])
    # explain says the same of the same host
    from pytest_sglang import connect
    from pytest_sglang.judge.explain.api import explain

    with connect(host) as target:
        assert any(n.startswith(note) for n in explain(target).notes)


def test_a_release_the_knowledge_base_has_gets_no_note_and_the_two_release_lists_agree(pytester):
    from pytest_sglang.judge.explain.kb import load
    from pytest_sglang.model.knowledge.fields import release_fields

    assert [str(r) for r in load().releases] == list(release_fields())  # the header reads the flag tables', explain the rules'
    pytester.makepyfile("def test_x(sglang):\n    pass\n")
    result = pytester.runpytest("--sglang-host=sim://llama31-8b-1xh100-0.5.9", "-p", "no:cacheprovider")
    assert "NOTE" not in result.stdout.str()
