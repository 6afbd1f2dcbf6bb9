"""``pytest-sglang init``: a starter suite generated from a known-good host passes against that
host and catches the seed candidate's regressions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess[str]:
    # A developer's run: under CI (as services set it) init refuses to write without --force.
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    return subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", *args], capture_output=True, text=True, timeout=180, cwd=cwd, env=env)


@pytest.mark.parametrize("origin", [BASELINE, "sim://llama31-8b-1xh100-0.5.9", "sim://qwen35-122b-a10b-4xrtx6000-0.5.23"])
def test_the_generated_suite_passes_against_the_host_it_came_from(pytester, origin):
    done = cli("init", origin, "-o", str(pytester.path), "--force")
    assert done.returncode == 0, done.stderr
    result = pytester.runpytest("-p", "no:benchmark")  # the generated pytest.ini names the host
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 8 and "failed" not in outcomes and "error" not in outcomes, result.stdout.str()


def test_generated_from_the_seed_baseline_it_fails_against_the_seed_candidate(pytester):
    assert cli("init", BASELINE, "-o", str(pytester.path), "--force").returncode == 0
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={CANDIDATE}")
    failed = {line.split("::")[1].split("[")[0] for line in result.stdout.lines if line.startswith("FAILED")}
    assert {"test_max_running_requests", "test_prefill_cuda_graph"} <= failed


def test_init_refuses_to_overwrite_and_says_how(tmp_path):
    assert cli("init", BASELINE, "-o", str(tmp_path)).returncode == 0
    again = cli("init", BASELINE, "-o", str(tmp_path))
    assert again.returncode == 2 and "--force" in again.stderr and len(again.stderr.strip().splitlines()) == 1


def test_init_json_names_what_it_pinned(tmp_path):
    done = cli("init", BASELINE, "-o", str(tmp_path), "--json")
    data = json.loads(done.stdout)
    assert "max_running_requests >= 48" in data["pinned"] and data["values"]["tp_size"] == 4


def test_init_of_an_unreachable_host_is_exit_3(tmp_path, free_port):
    done = cli("init", f"http://127.0.0.1:{free_port}", "-o", str(tmp_path), "--timeout", "2")
    assert done.returncode == 3 and "Traceback" not in done.stderr


def test_no_api_key_reaches_the_generated_files(tmp_path):
    assert cli("init", f"{BASELINE}?api_key=sk-init-4242", "-o", str(tmp_path)).returncode == 0
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert "sk-init-4242" not in path.read_text() and "redacted" not in path.read_text(), path
    assert "SGLANG_API_KEY" in (tmp_path / "pytest.ini").read_text()


def test_with_a_baseline_the_suite_also_gates_on_every_other_field(pytester):
    done = cli("init", BASELINE, "-o", str(pytester.path), "--force", "--baseline-dir", "baselines")
    assert done.returncode == 0, done.stderr
    assert list((pytester.path / "baselines").glob("*.json"))
    assert "sglang_baseline = baselines" in (pytester.path / "pytest.ini").read_text()
    same = pytester.runpytest("-p", "no:benchmark")
    assert "failed" not in same.parseoutcomes(), same.stdout.str()
    key = next((pytester.path / "baselines").glob("*.json")).stem
    other = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={CANDIDATE}", "-o", f"sglang_baseline_key={CANDIDATE} = {key}")
    assert any("sglang-baseline[" in line and line.startswith("FAILED") for line in other.stdout.lines), other.stdout.str()


def test_a_suite_generated_from_a_capture_replays_it_from_any_directory(pytester, tmp_path):
    capture = tmp_path / "cap.json"
    assert cli("capture", BASELINE, "-o", str(capture)).returncode == 0
    done = cli("init", "replay:cap.json", "-o", str(pytester.path / "suite"), "--baseline-dir", "baselines", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = pytester.runpytest("-p", "no:benchmark", "suite", "-c", str(pytester.path / "suite" / "pytest.ini"))
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 8 and "failed" not in outcomes and "error" not in outcomes, result.stdout.str()


def test_a_capture_is_named_relative_to_the_ini_file_so_the_suite_moves_with_it(pytester):
    (pytester.path / "captures").mkdir()
    assert cli("capture", BASELINE, "-o", "captures/cap.json", cwd=pytester.path).returncode == 0
    done = cli("init", "replay:captures/cap.json", "-o", "suite", cwd=pytester.path)
    assert done.returncode == 0, done.stderr
    ini = (pytester.path / "suite" / "pytest.ini").read_text()
    assert "sglang_hosts = replay:../captures/cap.json\n" in ini and str(pytester.path) not in ini, ini
    moved = pytester.path / "elsewhere" / "project"
    moved.mkdir(parents=True)
    for name in ("suite", "captures"):
        (pytester.path / name).rename(moved / name)
    # Run from a directory that is neither the ini file's nor the capture's.
    result = pytester.runpytest("-p", "no:benchmark", str(moved / "suite"), "-c", str(moved / "suite" / "pytest.ini"))
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 8 and "failed" not in outcomes and "error" not in outcomes, result.stdout.str()
    assert "sglang: replay:elsewhere/project/captures/cap.json: SGLang 0.5.12" in result.stdout.str()
