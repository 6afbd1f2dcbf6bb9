"""docs/ci.md is executed as written: its recipe block runs, command by command, in an empty
folder against the simulator (capture, a starter suite with its baseline, a baseline update, the
gate replaying the captures, the verdict check), and the CI jobs on the page run the recipe's
commands, not others.

Which block is the recipe: the fenced block (info string ``sh``) right after the HTML comment
line ``<!-- ci-recipe: ... -->`` (invisible on the rendered page). A command may continue over
lines with a trailing backslash; ``#`` lines are comments. The one substitution: the
``pip install`` line is not run (the package under test is installed already); the test only
checks that it installs from a path or a git URL, since pytest-sglang is not on a package index.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_sglang.render.report.schema import validate

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "ci.md"
MARK = "<!-- ci-recipe"
FENCE = re.compile(r"^```(\w*)\s*$")
# Commands the CI jobs run that the recipe must hold too (posting comments and uploads are CI-only).
RECIPE_TOOLS = ("pip", "pytest", "pytest-sglang", "python")


def _recipe_blocks(text: str) -> list[str]:
    lines = text.splitlines()
    blocks = []
    for i, line in enumerate(lines):
        if not line.startswith(MARK):
            continue
        opening = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        assert opening and opening.group(1) == "sh", f"docs/ci.md line {i + 2}: a ci-recipe marker must be followed by a ```sh block"
        body = []
        for inner in lines[i + 2:]:
            if inner.strip() == "```":
                break
            body.append(inner)
        else:
            raise AssertionError(f"docs/ci.md: the recipe block after line {i + 1} is not closed")
        blocks.append("\n".join(body))
    return blocks


def _commands(block: str) -> list[str]:
    """One string per command: continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def _normal(command: str) -> str:
    return " ".join(command.split())


def _recipe() -> list[str]:
    blocks = _recipe_blocks(PAGE.read_text(encoding="utf-8"))
    assert blocks, "docs/ci.md has no block marked <!-- ci-recipe ... --> before a ```sh fence"
    return [c for block in blocks for c in _commands(block)]


def _clean_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a developer's shell: this interpreter's scripts first on PATH, no CI
    (the recipe's baseline update is the one made outside CI), nothing of the outer pytest run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SGLANG_")) and k != "CI"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(tmp_path / "home")
    return env


@pytest.mark.slow
def test_the_recipe_runs_as_written_and_the_gate_promotes(tmp_path: Path) -> None:
    commands = _recipe()
    installs = [c for c in commands if c.startswith("pip install")]
    assert len(installs) == 1, installs
    (source,) = shlex.split(installs[0])[2:]
    # Not on a package index: a path (a checkout) or a git URL, never the bare name.
    assert source.startswith(("./", "/", "../", "git+")) or " @ git+" in source, f"docs/ci.md installs {source!r}: pytest-sglang is not published; install from a path or a git URL"
    assert any(c.startswith("pytest-sglang capture ") for c in commands), "the recipe captures the hosts"
    assert any(" replay:" in c for c in commands if c.startswith("pytest ")), "the recipe's gate replays the captures"

    work = tmp_path / "gate"
    work.mkdir()
    env = _clean_env(tmp_path)
    for command in commands:
        if command in installs:
            continue
        done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"docs/ci.md: `{command}` exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"

    # What the recipe promises: the gate read the captures, the baseline init wrote, lint and
    # the fleet check, and wrote the three reports; the verdict is promote.
    doc = json.loads((work / "sglang-report.json").read_text())
    assert validate(doc) == []
    assert doc["verdict"] == "promote" and doc["exit_status"] == 0
    assert [h["host"] for h in doc["hosts"]] == ["replay:captures/gpu1.json", "replay:captures/gpu2.json"]
    for host in doc["hosts"]:
        assert host["facts"]["origin"] == "replay"
        assert sorted((c["check"], c["passed"]) for c in host["checks"]) == [("sglang-baseline", True), ("sglang-lint", True)]
        assert host["counts"]["passed"] > 0 and host["counts"]["failed"] == 0
    assert [(c["check"], c["passed"]) for c in doc["run_checks"]] == [("sglang-fleet", True)]
    (baseline,) = (work / "sglang_suite" / "baselines").glob("*.json")
    assert all(c.get("file") == baseline.name for h in doc["hosts"] for c in h["checks"] if c["check"] == "sglang-baseline")
    assert (work / "sglang-report.md").read_text().startswith("## SGLang promotion gate: ✅ PROMOTE\n")
    assert "sglang_host" in (work / "sglang-junit.xml").read_text()


def _run(command: str, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_stale_or_planted_report_never_promotes(tmp_path: Path) -> None:
    """The recipe's gate and verdict step, as written, in a workspace where an earlier run left
    a promoting report, and where a link to a promoting report is planted at the report path:
    a run that is killed, or stopped by a usage error, leaves no promote behind, and the link
    fails the gate in one line and the verdict step, even on its own."""
    commands = [c for c in _recipe() if not c.startswith("pip install")]
    gate = next(c for c in commands if c.startswith("pytest "))
    verdict = commands[commands.index(gate) + 1]
    assert "sglang-report.json" in verdict
    work = tmp_path / "gate"
    work.mkdir()
    env = _clean_env(tmp_path)
    for command in commands:  # the whole recipe once: the report it leaves promotes
        done = _run(command, work, env)
        assert done.returncode == 0, f"`{command}` exited {done.returncode}\n{done.stderr[-3000:]}"
    report, summary = work / "sglang-report.json", work / "sglang-report.md"
    promoting, promoting_summary = report.read_bytes(), summary.read_bytes()
    assert json.loads(promoting)["verdict"] == "promote"

    # 1. The next run is killed once it has started: the earlier report does not survive it.
    runner = subprocess.Popen(["bash", "-c", f"exec {gate}"], cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while (report.read_bytes() == promoting or summary.read_bytes() == promoting_summary) and runner.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        runner.kill()
        runner.wait()
    assert runner.returncode == -9, "the gate ended before it could be killed"
    left = json.loads(report.read_bytes())
    assert left["verdict"] == "hold" and "has not written its report" in left["reasons"][0]
    assert _run(verdict, work, env).returncode != 0
    assert summary.read_text().startswith("## SGLang promotion gate: ❌ HOLD\n")

    # 2. The next run stops on a usage error (an api key that cannot be sent) before any test.
    report.write_bytes(promoting)
    stopped = _run(gate, work, {**env, "SGLANG_API_KEY": "bad\x01key"})
    assert stopped.returncode == 4, stopped.stdout[-2000:]
    assert json.loads(report.read_bytes())["verdict"] == "hold"
    assert _run(verdict, work, env).returncode != 0

    # 3. A link to a promoting report planted at the report path: the gate refuses it in one
    # line before anything runs, writes nothing through it, and the verdict step fails too.
    (work / "promote.json").write_bytes(promoting)
    report.unlink()
    report.symlink_to("promote.json")
    refused = _run(gate, work, env)
    assert refused.returncode == 4
    errors = [line for line in (refused.stdout + refused.stderr).splitlines() if line.startswith("ERROR")]
    assert errors == [f"ERROR: --sglang-report-json: {report} is a symbolic link: refusing to write the report through it (remove the link; pytest-sglang writes no file through one)"]
    assert (work / "promote.json").read_bytes() == promoting and report.is_symlink()
    assert _run(verdict, work, env).returncode != 0


def _yaml_blocks(text: str) -> list[Any]:
    return [yaml.safe_load(body) for body in re.findall(r"^```yaml\n(.*?)^```$", text, re.S | re.M)]


def _job_commands(job: Any) -> list[str]:
    """Every shell command of a GitHub Actions job (``steps[].run``) or a GitLab job
    (``script``, ``after_script``)."""
    out: list[str] = []
    for step in job.get("steps") or ():
        if isinstance(step, dict) and "run" in step:
            out.append(step["run"])
    for key in ("before_script", "script", "after_script"):
        out += [str(line) for line in job.get(key) or ()]
    return out


def test_the_ci_jobs_on_the_page_run_the_recipes_commands() -> None:
    recipe = {_normal(c) for c in _recipe()}
    pipelines = _yaml_blocks(PAGE.read_text(encoding="utf-8"))
    github = next(p for p in pipelines if "jobs" in p)
    gitlab = next(p for p in pipelines if "sglang-gate" in p)
    jobs = {"GitHub Actions": github["jobs"]["gate"], "GitLab CI": gitlab["sglang-gate"]}
    for name, job in jobs.items():
        commands = [_normal(c) for c in _job_commands(job)]
        ours = [c for c in commands if c.split(" ", 1)[0] in RECIPE_TOOLS]
        assert len(ours) == 3, f"{name}: install, gate and verdict check expected, found {ours}"
        for command in ours:
            assert command in recipe, f"docs/ci.md, {name} job runs a command the recipe does not: {command}"
