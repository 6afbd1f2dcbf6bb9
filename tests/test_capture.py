"""Capture and replay: the capture file, replay:FILE, --sglang-capture DIR, pytest-sglang capture,
and a capture served as a simulated deployment (sim:///path/to/capture.json)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

from pytest_sglang import connect
from pytest_sglang.base.errors import SpecError
from pytest_sglang.render.capture import FORMAT, read_capture, safe_file_name, write_capture

BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"
LLAMA = "sim://llama31-8b-1xh100-0.5.9"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def outcomes(recorder: pytest.HookRecorder, host: str) -> dict[str, str]:
    """Each test's outcome (failed > skipped > passed over its phases), by test id with the
    host part replaced by HOST."""
    rank = {"passed": 0, "skipped": 1, "failed": 2}
    out: dict[str, str] = {}
    for report in recorder.getreports("pytest_runtest_logreport"):
        test_id = report.nodeid.replace(f"[{host}]", "[HOST]")
        assert "[HOST]" in test_id, report.nodeid
        if rank[report.outcome] >= rank[out.get(test_id, "passed")]:
            out[test_id] = report.outcome
    return out


def run_example_suite(pytester: pytest.Pytester, host: str, *extra: str) -> dict[str, str]:
    recorder = pytester.inline_run("-p", "no:benchmark", "example_suite", f"--sglang-host={host}", *extra)
    return outcomes(recorder, host)


# ---- replay fidelity -------------------------------------------------------------------------


@pytest.mark.parametrize("live", [CANDIDATE, LLAMA])
def test_the_example_suite_replayed_from_a_capture_agrees_with_the_live_run_test_by_test(pytester, live):
    shutil.copytree(ROOT / "example_suite", pytester.path / "example_suite")
    live_results = run_example_suite(pytester, live, "--sglang-capture", "captures")
    assert "passed" in live_results.values() and "failed" in live_results.values()  # a comparison that can fail
    capture = Path("captures") / safe_file_name(live)
    assert (pytester.path / capture).is_file()

    replayed = run_example_suite(pytester, f"replay:{capture}")  # relative to the current directory
    assert replayed == live_results

    simulated = run_example_suite(pytester, f"sim://{pytester.path / capture}")  # the capture as a simulated deployment
    assert simulated == live_results


def test_a_replayed_target_reads_the_same_configuration_findings_and_logs_as_the_live_one(tmp_path):
    from pytest_sglang.judge.explain import explain

    path = tmp_path / "candidate.json"
    with connect(CANDIDATE) as live:
        write_capture(live, path)
        expected = (live.effective.model_dump(exclude={"target"}), live.server_args.model_dump(), [f.id for f in explain(live).findings])
        logs = live.logs.lines if live.logs else None
        launch = live.launch_command
    with connect(f"replay:{path}") as replay:
        got = (replay.effective.model_dump(exclude={"target"}), replay.server_args.model_dump(), [f.id for f in explain(replay).findings])
        assert replay.logs is not None and replay.logs.lines == logs
        assert replay.launch_command == launch
        assert replay.facts.origin == "replay" and replay.name == f"replay:{path}"
        assert replay.provenance.target == CANDIDATE
    assert got[0]["provenance"] == expected[0]["provenance"]
    assert got == expected



def test_a_capture_served_as_a_simulated_deployment_answers_requests_and_requires_the_key_it_is_given(tmp_path):
    import requests

    path = tmp_path / "candidate.json"
    with connect(CANDIDATE) as live:
        write_capture(live, path)
    with connect(f"sim://{path}?api_key=sk-sim-789") as sim:
        assert sim.effective.max_running_requests == 26 and sim.version == "0.5.12"
        answer = sim.client.post("/generate", json={"text": "hello", "sampling_params": {"max_new_tokens": 4}})
        assert answer.status_code == 200 and answer.json()["text"]
        assert requests.get(sim.client.url("/v1/models"), timeout=5).status_code == 401

def test_a_test_that_needs_the_http_client_fails_in_one_line_saying_it_is_a_replay(pytester, tmp_path):
    path = tmp_path / "baseline.json"
    with connect(BASELINE) as live:
        write_capture(live, path)
    pytester.makepyfile(
        """
        def test_sends_a_request(sglang):
            sglang.client.get("/v1/models")

        def test_reads_a_value(effective):
            assert effective.tp_size == 4
        """
    )
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host=replay:{path}")
    result.assert_outcomes(passed=1, failed=1)
    text = result.stdout.str()
    failure = text.split("_ test_sends_a_request", 1)[1].split("short test summary", 1)[0]
    lines = [line for line in failure.splitlines()[1:] if line.strip() and not line.startswith(("=", "-", "_"))]
    assert len(lines) == 1, failure
    assert f"replay:{path} is a replay of a capture of {BASELINE}" in lines[0] and "live --sglang-host" in lines[0]
    assert "Traceback" not in text


# ---- capture files ---------------------------------------------------------------------------


def test_pytest_sglang_capture_writes_a_capture_without_the_api_key_and_prints_its_provenance(tmp_path):
    key = "sk-cap-123"
    out = tmp_path / "deep" / "cap.json"
    done = cli("capture", f"{CANDIDATE}?api_key={key}", "-o", str(out), "--json")
    assert done.returncode == 0, done.stderr
    provenance = json.loads(done.stdout)
    assert provenance["target"] == CANDIDATE and provenance["sglang_version"] == "0.5.12" and provenance["origin"] == "sim"
    assert provenance["pytest_sglang_version"] and provenance["captured_at"]
    text = out.read_text()
    assert key not in text and key not in done.stdout + done.stderr
    data = json.loads(text)
    assert data["format"] == FORMAT and set(data) == {"format", "provenance", "facts"}
    # The simulator reported its key (as SGLang does); the capture holds only the redaction.
    assert data["facts"]["endpoints"]["server_info"]["body"]["api_key"] == "<redacted>"
    provenance_read, facts = read_capture(out)
    assert provenance_read.target == CANDIDATE and facts.host is not None and facts.host.log_lines
    with connect(f"replay:{out}") as replay:
        assert replay.effective.max_running_requests == 26


def test_pytest_sglang_capture_says_where_the_file_went_and_how_to_replay_it(tmp_path):
    done = cli("capture", BASELINE, "-o", "cap.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"captured {BASELINE} (SGLang 0.5.12," in done.stdout
    assert "pytest --sglang-host=replay:cap.json" in done.stdout
    assert (tmp_path / "cap.json").is_file()


@pytest.mark.parametrize(
    "args, code, message",
    [
        ((BASELINE,), 2, "the following arguments are required: -o/--output"),
        (("sim://no-such-profile", "-o", "x.json"), 2, "unknown simulator profile 'no-such-profile'"),
        (("replay:x.json", "-o", "y.json"), 2, "replay:x.json is already a capture"),
        ((BASELINE, "-o", "."), 2, "is a directory: give the capture file's name"),
    ],
)
def test_pytest_sglang_capture_bad_input_is_one_line_and_exit_2(tmp_path, args, code, message):
    done = cli("capture", *args, cwd=tmp_path)
    assert done.returncode == code
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "x.json").exists()


def test_pytest_sglang_capture_of_an_unreachable_host_exits_3(free_port, tmp_path):
    done = cli("capture", f"http://127.0.0.1:{free_port}", "-o", "x.json", cwd=tmp_path)
    assert done.returncode == 3
    assert "connection refused" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.json").exists()


def _good_capture(tmp_path: Path) -> dict:
    path = tmp_path / "good.json"
    with connect(BASELINE) as live:
        write_capture(live, path)
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("missing.json", None, "capture file {path} does not exist"),
        ("empty.json", "", "capture file {path} is empty"),
        ("truncated.json", lambda good: json.dumps(good)[:500], "capture file {path} is not valid JSON at line 1 (truncated or edited?)"),
        ("list.json", "[1, 2]", "capture file {path} is not a pytest-sglang capture: it must hold one JSON object"),
        ("other.json", '{"hello": 1}', 'capture file {path} is not a pytest-sglang capture (no "format": "pytest-sglang-capture/1")'),
        ("future.json", lambda good: json.dumps({**good, "format": "pytest-sglang-capture/2"}), "has format 'pytest-sglang-capture/2'; this pytest-sglang 0.1.0 reads 'pytest-sglang-capture/1'"),
        ("nofacts.json", lambda good: json.dumps({**good, "facts": {"target": "x"}}), "holds no /server_info answer"),
        ("badfacts.json", lambda good: json.dumps({**good, "facts": {"target": "x", "endpoints": 3}}), "facts are not valid (endpoints:"),
        ("noprov.json", lambda good: json.dumps({**good, "provenance": {}}), "provenance is not valid (captured_at: field required"),
        ("binary.json", b"\xff\xfe\x00garbage", "is not text"),
    ],
)
def test_missing_corrupt_and_wrong_format_captures_are_one_line_errors(tmp_path, name, content, message):
    path = tmp_path / name
    if callable(content):
        content = content(_good_capture(tmp_path))
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(SpecError) as caught:
        read_capture(path)
    text = str(caught.value)
    assert message.format(path=path) in text and "\n" not in text
    with pytest.raises(SpecError) as opened:
        connect(f"replay:{path}")
    assert message.format(path=path) in str(opened.value)


def test_a_simulator_profile_given_as_a_capture_says_to_use_sim(tmp_path):
    profile = tmp_path / "profile.json"
    shutil.copy(ROOT / "pytest_sglang" / "simulator" / "profiles" / "qwen35-122b-a10b-4xrtx6000-baseline.json", profile)
    with pytest.raises(SpecError, match="is a simulator profile, not a capture: run it with sim://"):
        read_capture(profile)


def test_a_bad_replay_file_fails_its_host_s_tests_in_one_line_and_the_cli_exits_2(pytester, tmp_path):
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"format": "pytest-sglang-capture/1", "provenance": ')
    pytester.makepyfile("def test_reads(effective):\n    assert effective.tp_size\n")
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host=replay:{corrupt}", "--sglang-host=replay:missing.json")
    result.assert_outcomes(errors=2)
    text = result.stdout.str()
    assert f"capture file {corrupt} is not valid JSON at line 1" in text
    assert "capture file missing.json does not exist (a relative path is read from the current directory" in text
    assert "Traceback" not in text
    done = cli("explain", f"replay:{corrupt}")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "is not valid JSON" in done.stderr


@pytest.mark.parametrize(
    "spec, message",
    [("replay:", "replay: takes a capture file and no options"), ("replay:cap.json?api_key=sk-never-shown", "replay: takes a capture file and no options")],
)
def test_replay_specs_take_a_file_and_nothing_else(spec, message):
    from pytest_sglang.target.spec import parse_spec

    with pytest.raises(SpecError) as caught:
        parse_spec(spec)
    assert message in str(caught.value) and "sk-never-shown" not in str(caught.value)
    assert parse_spec("replay:///tmp/c.json").display == "replay:/tmp/c.json"
    assert parse_spec("replay:caps/c.json").display == "replay:caps/c.json"


# ---- --sglang-capture during a run -----------------------------------------------------------


@pytest.mark.slow
def test_sglang_capture_under_xdist_with_two_hosts_writes_exactly_two_files_without_the_key(pytester):
    key = "sk-xdist-456"
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("n", range(4))
        def test_reads(effective, n):
            assert effective.tp_size == 4
        """
    )
    result = pytester.runpytest(
        "-p", "no:benchmark", "-p", "xdist", "-n", "2", f"--sglang-host={BASELINE}?api_key={key}", f"--sglang-host={CANDIDATE}", "--sglang-capture", "caps"
    )
    result.assert_outcomes(passed=8)
    files = sorted(p.name for p in (pytester.path / "caps").iterdir())
    assert files == [safe_file_name(BASELINE), safe_file_name(CANDIDATE)] == ["sim_qwen35-122b-a10b-4xrtx6000-baseline.json", "sim_qwen35-122b-a10b-4xrtx6000-candidate.json"]
    for name, host in zip(files, (BASELINE, CANDIDATE)):
        assert read_capture(pytester.path / "caps" / name)[0].target == host
    for written in pytester.path.rglob("*"):
        if written.is_file():
            assert key.encode() not in written.read_bytes(), written
    text = result.stdout.str()
    assert key not in text
    assert f"{BASELINE}: captured to caps/{files[0]}" in text and f"{CANDIDATE}: captured to caps/{files[1]}" in text


def test_sglang_capture_names_a_host_it_could_not_read_and_refuses_a_file_as_its_folder(pytester, free_port):
    pytester.makepyfile("def test_reads(effective):\n    assert effective.tp_size\n")
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host=http://127.0.0.1:{free_port}", f"--sglang-host={BASELINE}", "--sglang-capture", "caps")
    result.assert_outcomes(passed=1, errors=1)
    assert f"http://127.0.0.1:{free_port}: not captured: cannot connect" in result.stdout.str()
    assert [p.name for p in (pytester.path / "caps").iterdir()] == [safe_file_name(BASELINE)]
    (pytester.path / "afile").write_text("")
    refused = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={BASELINE}", "--sglang-capture", "afile")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "--sglang-capture afile: is a file; give a folder" in refused.stderr.str()
