"""Host access with the local shell (SGLang on the test machine) and the simulated host."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import uuid

import pytest
from support import artefact

from pytest_sglang.base.errors import TargetError
from pytest_sglang.collect.host import HostOptions, collect_host, parse_output
from pytest_sglang.collect.shell.local import LocalShell
from pytest_sglang.parse.logs import LogSource

CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"
NEW = "sim://qwen35-122b-a10b-4xrtx6000-0.5.23"


@pytest.fixture
def two_runs(tmp_path):
    """A log file holding two runs of the real 0.5.23 server; the older one said 1111."""
    real = artefact("server.log")
    path = tmp_path / "sglang.log"
    path.write_text(real.replace("max_running_requests=2048", "max_running_requests=1111") + real)
    return path


def test_a_log_file_gives_only_the_current_runs_lines(two_runs):
    facts = collect_host(LocalShell(), HostOptions(logs=LogSource.parse(f"file:{two_runs}")), where="local")
    capacity = [line for line in facts.log_lines if "max_total_num_tokens=" in line]
    assert len(capacity) == 1 and "max_running_requests=2048" in capacity[0]
    assert sum("server_args=" in line for line in facts.log_lines) == 1
    assert facts.log_source == f"file:{two_runs} on local, from the last start-up"


def test_everything_the_host_is_asked_is_one_round_trip(two_runs):
    shell = LocalShell()
    collect_host(shell, HostOptions(unit="sglang.service", logs=LogSource.parse(f"file:{two_runs}")), where="local")
    assert shell.round_trips == 1


@pytest.mark.parametrize(
    "unit, logs",
    [
        ("x; touch {marker}", None),
        ("$(touch {marker})", None),
        ("`touch {marker}`", None),
        (None, "file:/nonexistent; touch {marker}"),
        (None, "file:$(touch {marker})"),
        (None, "journald:x' ; touch {marker} ; '"),
        (None, "kubectl:ns/pod$(touch {marker})"),
    ],
)
def test_hostile_names_are_data_never_run(tmp_path, monkeypatch, unit, logs):
    monkeypatch.chdir(tmp_path)  # the shell runs here; a command that ran would leave ./pwned
    marker = tmp_path / "pwned"
    options = HostOptions(
        unit=unit.format(marker="pwned") if unit else None,
        logs=LogSource.parse(logs.format(marker="pwned")) if logs else None,
    )
    with contextlib.suppress(TargetError):  # no such file, unit or pod: an error, and nothing ran
        collect_host(LocalShell(), options, where="local")
    assert not marker.exists()


def test_missing_tools_are_named_not_fatal(two_runs):
    facts = collect_host(LocalShell(), HostOptions(logs=LogSource.parse(f"file:{two_runs}")), where="local")
    assert "nvidia-smi" in facts.missing_tools  # no GPU on this machine
    assert facts.gpus == []


def test_a_log_file_named_with_a_quote_and_a_space_gives_its_lines(tmp_path):
    log = tmp_path / "bob's sglang.log"
    log.write_text(artefact("server.log"))
    facts = collect_host(LocalShell(), HostOptions(logs=LogSource.parse(f"file:{log}")), where="local")
    assert sum("server_args=" in line for line in facts.log_lines) == 1
    assert any("max_total_num_tokens=" in line for line in facts.log_lines)
    assert facts.log_source == f"file:{log} on local, from the last start-up"


def _path_without(tmp_path, *tools: str) -> str:
    """A PATH of links to every program on this PATH except ``tools``."""
    bin_dir = tmp_path / "path-without"
    bin_dir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            if entry.name not in tools and not (bin_dir / entry.name).exists():
                (bin_dir / entry.name).symlink_to(entry.path)
    return str(bin_dir)


def _fake_tool(tmp_path, monkeypatch, tool: str, script: str) -> None:
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / tool).write_text("#!/bin/sh\n" + script)
    (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def _logs_error(source: str, **options) -> str:
    with pytest.raises(TargetError) as info:
        collect_host(LocalShell(), HostOptions(logs=LogSource.parse(source), **options), where="local")
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_missing_log_file_is_an_error_naming_it_not_empty_logs():
    assert _logs_error("file:/nonexistent.log") == (
        "`logs` file:/nonexistent.log on local: no such file (give the path of the SGLang log on that host)"
    )


def test_a_directory_as_log_file_is_an_error(tmp_path):
    assert _logs_error(f"file:{tmp_path}") == (
        f"`logs` file:{tmp_path} on local: a directory, not a file (give the path of the SGLang log file)"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_log_file_is_an_error(tmp_path):
    log = tmp_path / "sglang.log"
    log.write_text("x\n")
    log.chmod(0)
    assert "the file is not readable by the user the plugin runs as there" in _logs_error(f"file:{log}")


def test_an_unreadable_log_file_marker_is_an_error():
    """What the script says when [ -r ] fails (this test may run as root, who reads anything)."""
    text = "\n@@pytest-sglang:logs@@\n@@log-unreadable\n"
    with pytest.raises(TargetError, match=r"^`logs` file:/var/log/sglang.log on ssh://gpu1: the file is not readable by the user"):
        parse_output(text, where="ssh://gpu1", options=HostOptions(logs=LogSource.parse("file:/var/log/sglang.log")))


@pytest.mark.parametrize(
    "source, tool, message",
    [
        ("docker:sglang", "docker", "docker is not installed there (or not on the PATH of a non-interactive shell): install it, or read the log another way"),
        ("journald:sglang.service", "journalctl", "journalctl is not installed there (or not on the PATH of a non-interactive shell): read the log another way"),
        ("kubectl:serving/sglang-0", "kubectl", "kubectl is not installed there (or not on the PATH of a non-interactive shell): reach the pod from a host that has kubectl"),
        ("file:/var/log/sglang.log", "tac", "tac is not installed there (or not on the PATH of a non-interactive shell): give `logs` cmd:COMMAND"),
    ],
)
def test_a_log_source_whose_tool_is_missing_is_an_error_naming_the_tool(tmp_path, monkeypatch, source, tool, message):
    monkeypatch.setenv("PATH", _path_without(tmp_path, tool))
    assert _logs_error(source).startswith(f"`logs` {source} on local: {message}")


def test_a_container_docker_cannot_inspect_is_an_error_with_dockers_words(tmp_path, monkeypatch):
    _fake_tool(tmp_path, monkeypatch, "docker", 'for a; do last=$a; done; echo "Error: No such container: $last" >&2; exit 1\n')
    assert _logs_error("docker:sglang") == (
        "`logs` docker:sglang on local: docker inspect failed: Error: No such container: sglang "
        "(is the container name right, and may that user use docker?)"
    )


def test_a_failing_log_command_is_an_error_with_its_last_words(tmp_path, monkeypatch):
    _fake_tool(tmp_path, monkeypatch, "kubectl", 'echo \'Error from server (NotFound): pods "sglang-0" not found\' >&2; exit 1\n')
    assert _logs_error("kubectl:serving/sglang-0") == (
        '`logs` kubectl:serving/sglang-0 on local: kubectl logs failed (exit 1: Error from server (NotFound): pods "sglang-0" not found)'
    )
    assert _logs_error("cmd:no-such-program-here") .startswith(
        "`logs` cmd:no-such-program-here on local: the command failed (exit 127: "
    )


def test_a_log_command_that_fails_after_printing_start_up_lines_keeps_them_with_a_warning(tmp_path):
    log = tmp_path / "sglang.log"
    log.write_text(artefact("server.log"))
    facts = collect_host(LocalShell(), HostOptions(logs=LogSource.parse(f"cmd:cat '{log}'; echo; echo broken pipe; exit 3")), where="local")
    assert any("server_args=" in line for line in facts.log_lines)
    assert facts.log_warnings == [f"`logs` cmd:cat '{log}'; echo; echo broken pipe; exit 3 on local: the command failed (exit 3: broken pipe); the lines it printed before are used"]


def test_a_log_of_another_port_is_flagged(two_runs):
    source = LogSource.parse(f"file:{two_runs}")
    facts = collect_host(LocalShell(), HostOptions(logs=source, port=30001), where="local")
    assert facts.log_warnings == [
        "the log's start-up line is for port 30000, not the target's port 30001: `logs` may point at another server's log"
    ]
    assert collect_host(LocalShell(), HostOptions(logs=source, port=30000), where="local").log_warnings == []


def _running(marker: str) -> list[str]:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()


def test_a_hung_command_is_killed_with_everything_it_started_at_the_timeout():
    marker = f"sleep 300.{uuid.uuid4().int % 10**9}"  # one process, unique to this test
    options = HostOptions(logs=LogSource.parse(f"cmd:{marker} & {marker}"), timeout=1.0)
    started = time.monotonic()
    with pytest.raises(TargetError, match=r"^a command on the local host did not finish within 1s \(`command_timeout`\)$"):
        collect_host(LocalShell(), options, where="local")
    assert time.monotonic() - started < 10
    assert _running(marker) == []


LOG_SUITE = """
def test_logs(sglang_logs, effective):
    assert sglang_logs.capacity["max_running_requests"] == effective.max_running_requests
    assert sglang_logs.startup_line.fields["model_path"] == "/models/tiny-llama"
    assert sglang_logs.ready
"""


def test_the_sglang_logs_fixture_through_the_local_shell(pytester, canned, real_server_info, real_model_info, two_runs):
    server = canned().serve_sglang(real_server_info, real_model_info)
    pytester.makepyfile(LOG_SUITE)
    result = pytester.runpytest("--sglang-host", server.url, "--sglang-ssh", "local", "--sglang-logs", f"file:{two_runs}")
    result.assert_outcomes(passed=1)


def test_a_log_file_named_bobs_sglang_log_through_the_local_shell(pytester, canned, real_server_info, real_model_info, tmp_path):
    log = tmp_path / "bob's sglang.log"
    log.write_text(artefact("server.log"))
    server = canned().serve_sglang(real_server_info, real_model_info)
    pytester.makepyfile(LOG_SUITE)
    result = pytester.runpytest("--sglang-host", server.url, "--sglang-ssh=local", f"--sglang-logs=file:{log}")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("where", ["option", "spec"])
def test_a_log_source_that_injects_a_command_runs_nothing_and_is_one_error_line(pytester, canned, real_server_info, real_model_info, where):
    server = canned().serve_sglang(real_server_info, real_model_info)
    pytester.makepyfile(LOG_SUITE)
    hostile = "file:/nope'; touch PWNED; echo '"
    if where == "option":
        result = pytester.runpytest("--sglang-host", server.url, "--sglang-ssh=local", f"--sglang-logs={hostile}")
    else:
        result = pytester.runpytest("--sglang-host", f"{server.url}?ssh=local&logs={hostile}")
    assert not (pytester.path / "PWNED").exists()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*--sglang-logs {hostile} on local: no such file (give the path of the SGLang log on that host)*"])


def test_log_options_without_host_access_are_one_line(pytester, canned, real_server_info, real_model_info):
    server = canned().serve_sglang(real_server_info, real_model_info)
    pytester.makepyfile(LOG_SUITE)
    result = pytester.runpytest("--sglang-host", server.url, "--sglang-logs", "file:/x.log")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*--sglang-logs and --sglang-unit need host access: give --sglang-ssh user@host (or local)*"])


def test_a_bad_log_source_is_a_usage_error(pytester):
    pytester.makepyfile(LOG_SUITE)
    result = pytester.runpytest("--sglang-host", "http://127.0.0.1:9", "--sglang-logs", "syslog:x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --sglang-logs 'syslog:x': write journald:UNIT, file:PATH, docker:NAME, kubectl:NAMESPACE/POD or cmd:COMMAND"])


def test_without_logs_the_fixtures_skip_saying_what_to_give(pytester, canned, real_server_info, real_model_info):
    info = {k: v for k, v in real_server_info.items() if k != "launch_command"}
    server = canned().serve_sglang(info, real_model_info)
    pytester.makepyfile(
        """
        def test_logs(sglang_logs): pass
        def test_requested(requested): pass
        def test_gpu(gpu): pass
        """
    )
    result = pytester.runpytest("--sglang-host", server.url, "-rs")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(
        [
            "*no logs for * give --sglang-logs journald:UNIT|file:PATH|*",
            "*the launch command of * is unknown: *give --sglang-ssh*",
            "*no GPU facts for * give --sglang-ssh*so nvidia-smi can be read*--sglang-sm*",
        ],
        consecutive=False,
    )


SIM_HOST_SUITE = """
import pytest

@pytest.mark.requires_sm(120)
def test_gpu(gpu):
    assert (gpu.name, gpu.sm, gpu.count, gpu.in_use) == ("NVIDIA RTX PRO 6000 Blackwell Server Edition", 120, 4, [0, 1, 2, 3])

def test_requested(requested, effective):
    assert requested["max_running_requests"] == 48
    assert requested["enable_flashinfer_allreduce_fusion"] is True
    assert effective.max_running_requests == 26

def test_logs(sglang_logs, server_args):
    line = sglang_logs.startup_line
    assert line.complete and line.fields["disable_piecewise_cuda_graph"] is True
    assert sglang_logs.capacity["max_running_requests"] == 26
    assert sglang_logs.mamba_pool and "max_mamba_cache_size: 132" in sglang_logs.mamba_pool[0]
    assert any("Disable piecewise CUDA graph" in a for a in sglang_logs.adjustments)
    assert line.fields["tp_size"] == server_args.tp_size
"""


def test_the_simulated_host_gives_gpu_launch_command_and_logs(pytester):
    pytester.makepyfile(SIM_HOST_SUITE)
    pytester.runpytest("--sglang-host", CANDIDATE).assert_outcomes(passed=3)


def test_the_dict_era_simulated_log_parses_to_the_served_configuration(pytester):
    pytester.makepyfile(
        """
        def test_dict_line(sglang_logs, sglang):
            line = sglang_logs.startup_line
            assert line.era == "dict" and line.complete
            assert line.fields["cuda_graph_config"]["prefill"]["backend"] == "breakable"
            assert set(line.fields) == set(sglang.server_args.keys())
        """
    )
    pytester.runpytest("--sglang-host", NEW).assert_outcomes(passed=1)


def test_the_report_header_warns_when_the_log_is_for_another_port(pytester, two_runs, canned, real_server_info, real_model_info):
    server = canned().serve_sglang(real_server_info, real_model_info)  # on a random port, not the log's 30000
    pytester.makepyfile("def test_logs(sglang_logs):\n    assert sglang_logs.startup_line is not None\n")
    result = pytester.runpytest("--sglang-host", server.url, "--sglang-ssh", "local", "--sglang-logs", f"file:{two_runs}")
    result.assert_outcomes(passed=1)
    port = server.url.rsplit(":", 1)[1]
    result.stdout.fnmatch_lines(
        [f"sglang: {server.url}: WARNING the log's start-up line is for port 30000, not the target's port {port}: --sglang-logs may point at another server's log"]
    )
