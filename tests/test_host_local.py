"""Host access with the local shell (SGLang on the test machine) and the simulated host."""

from __future__ import annotations

import pytest

from support import artefact
from pytest_sglang.host import HostOptions, collect_host
from pytest_sglang.logs import LogSource
from pytest_sglang.shell.local import LocalShell

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
    collect_host(LocalShell(), options, where="local")
    assert not marker.exists()


def test_missing_tools_are_named_not_fatal(two_runs):
    facts = collect_host(LocalShell(), HostOptions(logs=LogSource.parse(f"file:{two_runs}")), where="local")
    assert "nvidia-smi" in facts.missing_tools  # no GPU on this machine
    assert facts.gpus == []


def test_an_unreadable_log_file_is_reported(tmp_path):
    facts = collect_host(LocalShell(), HostOptions(logs=LogSource.parse(f"file:{tmp_path}/missing.log")), where="local")
    assert facts.log_lines == []
    assert facts.log_source == f"file:{tmp_path}/missing.log on local: not readable"


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
            "*the launch command of * is unknown: SGLang before 0.5.20 does not report it; give --sglang-ssh*",
            "*no GPU facts for * give --sglang-ssh so nvidia-smi can be read (or --sglang-sm)*",
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
