"""Host access over SSH against a real sshd on loopback and the real journalctl.

The test host (``tests/testhost.py``) runs OpenSSH with throwaway keys, a real journal holding
three runs of the seed deployment (the unit restarted twice), a real stand-in SGLang process,
and recorded ``nvidia-smi``/``systemctl`` outputs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from testhost import API_KEY_JOURNAL, API_KEY_PROCESS, HF_TOKEN, OLD_DRIVER_CASE, OLD_DRIVER_COMPUTE_CAP, STANDIN_PORT

from pytest_sglang import TargetError
from pytest_sglang.collect.host import HostOptions, collect_host
from pytest_sglang.collect.shell.ssh import SSHShell
from pytest_sglang.parse.logs import LogSource, SGLangLogs
from pytest_sglang.simulator import load_profile

SECRETS = (API_KEY_JOURNAL, API_KEY_PROCESS, HF_TOKEN)


def shell_for(host, **kw) -> SSHShell:
    kw.setdefault("key_filename", str(host.client_key))
    kw.setdefault("known_hosts", str(host.known_hosts))
    return SSHShell(f"{host.user}@{host.host}:{host.port}", **kw)


def journald(host) -> HostOptions:
    return HostOptions(unit=host.unit, logs=LogSource.parse(f"journald:{host.unit}"))


def test_every_host_fact_in_one_round_trip_over_one_connection(clean_test_host):
    host = clean_test_host
    shell = shell_for(host)
    facts = collect_host(shell, journald(host), where=shell.name)
    assert shell.round_trips == 1
    assert [(g.index, g.name, g.compute_capability) for g in facts.gpus] == [(i, "NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0") for i in range(4)]
    assert facts.gpus_in_use == [0, 1, 2, 3] and facts.cuda_visible_devices == "0,1,2,3"
    assert facts.pid == host.sglang_pid
    assert facts.invocation_id == host.runs[-1]["invocation_id"]
    assert facts.launch_command_source == f"/proc/{host.sglang_pid}/cmdline on {shell.name}"
    assert "--api-key <redacted>" in facts.launch_command
    # A second collection reuses the connection.
    transport = shell.connect().get_transport()
    collect_host(shell, journald(host), where=shell.name)
    assert shell.connect().get_transport() is transport and shell.round_trips == 2
    shell.close()


def test_journald_gives_the_current_invocation_even_when_it_is_older_than_a_time_window(clean_test_host):
    host = clean_test_host
    # What the engineer ran: the restart is older than the window, so the start-up line is missed.
    window = host.ssh(f"journalctl -u {host.unit} --since '2 min ago' -o cat").stdout
    assert "server_args=" not in window
    shell = shell_for(host)
    facts = collect_host(shell, journald(host), where=shell.name)
    logs = SGLangLogs(source=facts.log_source, lines=facts.log_lines)
    current = host.runs[-1]
    assert facts.log_source.endswith(f"invocation {current['invocation_id']}")
    assert sum("server_args=" in line for line in logs.lines) == 1  # earlier runs excluded
    line = logs.startup_line
    assert line.complete and line.fields["enable_flashinfer_allreduce_fusion"] is current["enable_flashinfer_allreduce_fusion"] is False
    assert line.fields["disable_piecewise_cuda_graph"] is True
    assert logs.capacity["max_running_requests"] == current["max_running_requests"] == 26
    assert "max_mamba_cache_size: 132" in logs.mamba_pool[0]
    assert line.fields["api_key"] == "<redacted>"
    assert not any(secret in " ".join(facts.log_lines) for secret in SECRETS)


def test_the_plain_log_file_gives_the_same_current_run(clean_test_host):
    host = clean_test_host
    shell = shell_for(host)
    facts = collect_host(shell, HostOptions(logs=LogSource.parse(f"file:{host.log_file}")), where=shell.name)
    logs = SGLangLogs(source=facts.log_source, lines=facts.log_lines)
    assert sum("server_args=" in line for line in logs.lines) == 1
    assert logs.capacity["max_running_requests"] == 26
    assert logs.startup_line.fields["enable_flashinfer_allreduce_fusion"] is False


SUITE = """
import pytest

@pytest.mark.requires_sm(120)
@pytest.mark.requires_gpus(4)
def test_gpu(gpu):
    assert (gpu.sm, gpu.count, gpu.in_use) == (120, 4, [0, 1, 2, 3])
    assert gpu.source.startswith("nvidia-smi on ssh://")

def test_requested_versus_effective(requested, effective, server_args):
    assert requested["max_running_requests"] == 48
    assert "enable_flashinfer_allreduce_fusion" not in requested
    assert effective.max_running_requests == 26

def test_logs(sglang_logs, server_args):
    assert sglang_logs.startup_line.fields["tp_size"] == server_args.tp_size == 4
    assert sglang_logs.capacity["max_running_requests"] == 26

def test_prints_everything(sglang, requested, sglang_logs):
    print(sglang.facts.model_dump_json(), requested.text, requested.env, sglang_logs.lines)
    assert False, "show the output"
"""


@pytest.fixture
def seed_server(canned):
    """The HTTP side of the seed deployment (SGLang 0.5.12: no launch_command over HTTP)."""
    profile = load_profile("qwen35-122b-a10b-4xrtx6000-candidate")
    return canned().serve_sglang(profile.server_info(), profile.model_info())


def ssh_args(host, *extra: str) -> list[str]:
    return [
        "--sglang-ssh", f"{host.user}@{host.host}:{host.port}",
        "--sglang-ssh-key", str(host.client_key),
        "--sglang-ssh-known-hosts", str(host.known_hosts),
        "--sglang-unit", host.unit,
        "--sglang-logs", f"journald:{host.unit}",
        *extra,
    ]


def test_the_plugin_over_ssh_with_no_secret_in_its_output(pytester, clean_test_host, seed_server):
    host = clean_test_host
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("--sglang-host", seed_server.url, *ssh_args(host), "-vv", "-rA")
    result.assert_outcomes(passed=3, failed=1)
    out = result.stdout.str() + result.stderr.str()
    for secret in SECRETS:
        assert secret not in out
    assert host.refused() == []  # nothing that changes the host was ever run


def test_the_plugin_reads_configuration_from_the_logs_when_http_is_down(pytester, clean_test_host, free_port):
    host = clean_test_host
    pytester.makepyfile(
        """
        def test_from_logs(server_args, effective):
            assert server_args.tp_size == 4 and server_args.disable_piecewise_cuda_graph is True
            assert effective.max_running_requests == 26
            assert effective.source_of("max_running_requests").startswith("scheduler capacity line (journald:sglang.service")
        """
    )
    result = pytester.runpytest("--sglang-host", f"http://127.0.0.1:{free_port}", *ssh_args(host))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"sglang: http://127.0.0.1:{free_port}: WARNING HTTP: cannot connect to * (connection refused)*; configuration read from the logs"])


@pytest.mark.parametrize(
    "change, message",
    [
        ({"known_hosts": "empty"}, "the SSH host key of [[]127.0.0.1[]]:{port} (ssh-ed25519 {fingerprint}) is not in *: check the fingerprint and add it*or pass --sglang-ssh-insecure"),
        ({"known_hosts": "bad"}, "the SSH host key of 127.0.0.1:{port} has CHANGED: known_hosts has SHA256:*, the host offers {fingerprint}*"),
        ({"key": "wrong"}, "SSH login to root@127.0.0.1:{port} with * was refused: the key is not authorized there*"),
        ({"key": "public"}, "--sglang-ssh-key *client_key.pub is a public key: give the private one (without .pub)"),
        ({"key": "garbage"}, "--sglang-ssh-key *garbage is not a private key (an OpenSSH or PEM private key file is expected)"),
        ({"known_hosts": "missing"}, "--sglang-ssh-known-hosts *missing: no such file"),
        ({"port": "closed"}, "cannot connect to 127.0.0.1:{closed} over SSH (connection refused): is sshd running, and is the port right?"),
    ],
    ids=["unknown-host-key", "changed-host-key", "wrong-key", "public-key", "not-a-key", "no-known-hosts", "refused"],
)
def test_ssh_problems_are_one_clear_line(pytester, clean_test_host, seed_server, free_port, tmp_path, change, message):
    host = clean_test_host
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    known = {"empty": empty, "bad": host.bad_known_hosts, "missing": tmp_path / "missing"}.get(change.get("known_hosts"), host.known_hosts)
    garbage = tmp_path / "garbage"
    garbage.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nnot base64 at all\n")
    key = {"wrong": host.wrong_key, "public": f"{host.client_key}.pub", "garbage": garbage}.get(change.get("key"), host.client_key)
    port = free_port if change.get("port") else host.port
    pytester.makepyfile("def test_x(sglang):\n    pass\n")
    result = pytester.runpytest(
        "--sglang-host", seed_server.url,
        "--sglang-ssh", f"root@127.0.0.1:{port}", "--sglang-ssh-key", str(key), "--sglang-ssh-known-hosts", str(known),
    )
    expected = message.format(port=host.port, fingerprint=host.host_key_fingerprint, closed=free_port)
    if change.get("key") in ("public", "garbage") or change.get("known_hosts") == "missing":
        # A key or known_hosts file that cannot be used is an option error, before any test.
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["ERROR: " + expected])
    else:
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["*" + expected + "*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


GPU_COUNT_SUITE = """
import pytest

def test_count(effective):
    print("COUNT", effective.gpu_count, "FROM", effective.source_of("gpu_count"))

@pytest.mark.requires_gpus(8)
def test_needs_eight():
    pass
"""


@pytest.mark.parametrize(
    "apps, count, source",
    [
        (None, 4, "the SGLang process uses GPU 0, 1, 2, 3"),
        ("", 4, "CUDA_VISIBLE_DEVICES=0,1,2,3 of the SGLang process"),
    ],
    ids=["compute-apps", "no-compute-apps"],
)
def test_requires_gpus_counts_the_gpus_the_server_uses(pytester, clean_test_host, seed_server, apps, count, source):
    host = clean_test_host
    if apps is not None:  # a driver or container that lists no compute apps
        host.set_output("nvidia-smi", "query-compute-apps", apps)
    pytester.makepyfile(GPU_COUNT_SUITE)
    result = pytester.runpytest("--sglang-host", seed_server.url, *ssh_args(host), "-s", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines([f"*COUNT {count} FROM *{source}", f"*requires_gpus(8): * uses {count} GPU(s) (*{source}*)*"])


def test_insecure_skips_the_host_key_check_and_the_header_says_so(pytester, clean_test_host, seed_server, tmp_path):
    host = clean_test_host
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    pytester.makepyfile("def test_x(gpu):\n    assert gpu.sm == 120\n")
    result = pytester.runpytest("--sglang-host", seed_server.url, *ssh_args(host, "--sglang-ssh-known-hosts", str(empty), "--sglang-ssh-insecure"))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"sglang: {seed_server.url}: WARNING SSH host key NOT verified (--sglang-ssh-insecure)"])
    assert empty.read_text() == ""  # nothing was written to known_hosts


def test_ssh_config_gives_hostname_port_user_and_identity(pytester, clean_test_host, seed_server, tmp_path):
    host = clean_test_host
    config = host.ssh_config(tmp_path / "config")
    pytester.makepyfile("def test_x(gpu):\n    assert gpu.count == 4\n")
    result = pytester.runpytest(
        "--sglang-host", seed_server.url, "--sglang-ssh", "testhost", "--sglang-ssh-config", str(config), "--sglang-ssh-known-hosts", str(host.known_hosts)
    )
    result.assert_outcomes(passed=1)


def test_proxyjump_through_a_jump_host(clean_test_host, tmp_path):
    host = clean_test_host
    config = tmp_path / "config"
    config.write_text(
        f"Host jump\n  HostName 127.0.0.1\n  Port {host.port}\n  User {host.user}\n  IdentityFile {host.client_key}\n"
        f"Host inner\n  HostName 127.0.0.1\n  Port {host.port}\n  User {host.user}\n  IdentityFile {host.client_key}\n  ProxyJump jump\n"
    )
    shell = SSHShell("inner", config_path=config, known_hosts=host.known_hosts)
    facts = collect_host(shell, journald(host), where=shell.name)
    assert shell._jump is not None and shell._jump.round_trips == 0  # the jump host only forwards
    assert facts.pid == host.sglang_pid
    shell.close()


@pytest.fixture
def ssh_agent(tmp_path_factory, monkeypatch):
    """A real ssh-agent on a socket of its own, and a home directory without keys."""
    agent = shutil.which("ssh-agent")
    if agent is None:
        pytest.skip("ssh-agent is not installed (apt-get install openssh-client)")
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    sock = Path(tempfile.mkdtemp(prefix="agent-", dir="/tmp")) / "s"
    proc = subprocess.Popen([agent, "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if sock.exists():
            break
        time.sleep(0.05)
    monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
    yield sock
    proc.terminate()
    proc.wait(timeout=10)
    shutil.rmtree(sock.parent, ignore_errors=True)


def _encrypted_copy(key: Path, where: Path) -> Path:
    copy = where / "encrypted_key"
    shutil.copy(key, copy)
    copy.chmod(0o600)
    subprocess.run(["ssh-keygen", "-q", "-p", "-P", "", "-N", "a passphrase", "-f", str(copy)], check=True, capture_output=True)
    return copy


def test_the_ssh_agent_holds_the_key(clean_test_host, ssh_agent, tmp_path):
    host = clean_test_host
    encrypted = _encrypted_copy(host.client_key, tmp_path)
    # Without the key in the agent, an encrypted key is one line that says what to do.
    with pytest.raises(TargetError, match=r"^the SSH key for .* is encrypted: load it into ssh-agent \(ssh-add\) and run again$"):
        shell_for(host, key_filename=str(encrypted)).connect()
    subprocess.run(["ssh-add", "-q", str(host.client_key)], check=True, capture_output=True, env={**os.environ, "SSH_AUTH_SOCK": str(ssh_agent)})
    # No key file at all: the agent's key logs in.
    shell = SSHShell(f"{host.user}@{host.host}:{host.port}", known_hosts=str(host.known_hosts))
    assert collect_host(shell, journald(host), where=shell.name).pid == host.sglang_pid
    shell.close()
    # The encrypted key file names the identity; the agent signs with it.
    shell = shell_for(host, key_filename=str(encrypted))
    assert collect_host(shell, journald(host), where=shell.name).pid == host.sglang_pid
    shell.close()


def test_an_unauthorized_key_in_the_agent_is_one_line(clean_test_host, ssh_agent):
    host = clean_test_host
    subprocess.run(["ssh-add", "-q", str(host.wrong_key)], check=True, capture_output=True, env={**os.environ, "SSH_AUTH_SOCK": str(ssh_agent)})
    shell = SSHShell(f"{host.user}@{host.host}:{host.port}", known_hosts=str(host.known_hosts))
    with pytest.raises(TargetError) as info:
        shell.connect()
    message = str(info.value)
    assert "\n" not in message and "refused" in message and "ssh-agent" in message


def _running(marker: str) -> list[str]:
    """Process ids whose command line holds ``marker`` (the test host is this machine)."""
    return subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()


def _gone(marker: str, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while _running(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_a_command_that_hangs_is_cut_off(clean_test_host):
    host = clean_test_host
    _fake(host, "nvidia-smi", "sleep 30.417\n")
    try:
        shell = shell_for(host)
        with pytest.raises(TargetError, match=r"^a command on 127.0.0.1 did not finish within 1s \(`command_timeout`\)$"):
            collect_host(shell, HostOptions(unit=host.unit, timeout=1.0), where=shell.name)
        shell.close()
        assert _gone("sleep 30.417")
    finally:
        host.reset()


@pytest.mark.parametrize("timeout_tool", [True, False], ids=["timeout-utility", "watchdog"])
def test_a_hung_log_command_is_killed_on_the_host_at_the_timeout(clean_test_host, timeout_tool):
    """Closing the channel does not stop a remote command (no pty): the host ends it itself,
    with the timeout utility, or without it with a watchdog that kills the session's processes."""
    host = clean_test_host
    if not timeout_tool:
        host.remove_tool("timeout")
        assert host.ssh("command -v timeout").returncode != 0
    marker = f"sleep 300.{123 if timeout_tool else 124}"  # its own: the two cases may run at once on two workers
    assert _running(marker) == []
    shell = shell_for(host)
    started = time.monotonic()
    with pytest.raises(TargetError) as info:
        collect_host(shell, HostOptions(logs=LogSource.parse(f"cmd:{marker}"), timeout=2.0), where=shell.name)
    elapsed = time.monotonic() - started
    shell.close()
    assert str(info.value) == "a command on 127.0.0.1 did not finish within 2s (`command_timeout`)"
    assert 2.0 <= elapsed < 10
    # Killed by the host at the timeout, before the error came back (a second for the signal).
    assert _gone(marker, within=1.0)


@pytest.mark.parametrize(
    "source, tool, message",
    [
        ("journald:sglang.service", "journalctl", "journalctl is not installed there (or not on the PATH of a non-interactive shell): read the log another way"),
        ("docker:sglang", "docker", "docker is not installed there"),
        ("kubectl:serving/sglang-0", "kubectl", "kubectl is not installed there"),
        ("file:/var/log/sglang.log", "tac", "tac is not installed there"),
        ("file:/nonexistent.log", None, "no such file (give the path of the SGLang log on that host)"),
    ],
)
def test_a_log_source_that_cannot_be_read_over_ssh_is_one_error_line(clean_test_host, source, tool, message):
    host = clean_test_host
    if tool:
        host.remove_tool(tool)
    shell = shell_for(host)
    with pytest.raises(TargetError) as info:
        collect_host(shell, HostOptions(unit=host.unit, logs=LogSource.parse(source)), where=shell.name)
    shell.close()
    assert str(info.value).startswith(f"`logs` {source} on {shell.name}: {message}")


def test_an_old_driver_without_compute_cap_uses_the_name_table(clean_test_host):
    host = clean_test_host
    host.set_output("nvidia-smi", OLD_DRIVER_CASE, OLD_DRIVER_COMPUTE_CAP, 2)
    shell = shell_for(host)
    facts = collect_host(shell, HostOptions(unit=host.unit), where=shell.name)
    assert [g.compute_capability for g in facts.gpus] == [None] * 4
    assert facts.gpu_source.endswith("(no compute_cap: name table)")
    shell.close()


def test_missing_tools_are_named_and_the_process_is_found_without_systemd(clean_test_host):
    host = clean_test_host
    host.remove_tool("nvidia-smi")
    host.remove_tool("systemctl")
    shell = shell_for(host)
    # Other SGLang servers may run on the same machine (the real tier's): the target's port picks.
    facts = collect_host(shell, HostOptions(unit=host.unit, port=STANDIN_PORT), where=shell.name)
    assert facts.missing_tools == ["nvidia-smi", "systemctl"]
    assert facts.gpus == []
    assert facts.pid == host.sglang_pid  # found by its command line
    assert facts.launch_command.startswith("python3 -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B")
    shell.close()


@pytest.mark.parametrize("unit", ["x; touch {marker}", "$(touch {marker})", "`touch {marker}`", "sglang.service' ; touch {marker} ; '"])
def test_hostile_unit_names_are_data_on_the_remote_side_too(clean_test_host, tmp_path, unit):
    host = clean_test_host
    marker = tmp_path / "pwned"
    shell = shell_for(host)
    collect_host(shell, HostOptions(unit=unit.format(marker=marker), logs=LogSource.parse(f"journald:{unit.format(marker=marker)}")), where=shell.name)
    shell.close()
    assert not marker.exists()
    assert host.refused() == []


def test_an_empty_or_rotated_log_file(clean_test_host, tmp_path):
    host = clean_test_host
    rotated = tmp_path / "rotated.log"
    # logrotate moved the start-up to sglang.log.1: only request lines remain here.
    rotated.write_text("".join(line + "\n" for line in host.runs[-1]["lines"] if "Decode batch" in line or "Prefill batch" in line))
    empty = tmp_path / "empty.log"
    empty.write_text("")
    shell = shell_for(host)
    facts = collect_host(shell, HostOptions(logs=LogSource.parse(f"file:{rotated}")), where=shell.name)
    assert SGLangLogs(source=facts.log_source, lines=facts.log_lines).startup_line is None
    facts = collect_host(shell, HostOptions(logs=LogSource.parse(f"file:{empty}")), where=shell.name)
    assert facts.log_lines == []
    shell.close()


def _fake(host, tool: str, script: str) -> None:
    path = host.bin_dir / tool
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


@pytest.mark.parametrize(
    "source, tool, script, expected_call",
    [
        (
            "docker:sglang-server",
            "docker",
            'echo "docker $*" >> "$HOME/.docker-calls"\n'
            'case "$1" in inspect) echo 2026-12-02T10:00:00.123456789Z;; logs) cat "$LOG";; *) exit 1;; esac\n',
            "docker logs --since 2026-12-02T10:00:00.123456789Z -- sglang-server",
        ),
        ("kubectl:serving/sglang-0/server", "kubectl", 'echo "kubectl $*" >> "$HOME/.docker-calls"\ncat "$LOG"\n', "kubectl logs -n serving -c server -- sglang-0"),
        ("cmd:cat \"$LOG\"", None, None, None),
    ],
    ids=["docker", "kubectl", "cmd"],
)
def test_container_and_command_log_sources(clean_test_host, tmp_path, monkeypatch, source, tool, script, expected_call):
    host = clean_test_host
    current = tmp_path / "current.log"
    current.write_text("".join(line + "\n" for line in host.runs[-1]["lines"]))
    home = tmp_path
    if tool:
        _fake(host, tool, f'LOG={current}\nHOME={home}\n' + script)
    try:
        shell = shell_for(host)
        options = HostOptions(logs=LogSource.parse(source.replace('"$LOG"', str(current))))
        facts = collect_host(shell, options, where=shell.name)
        shell.close()
    finally:
        if tool:
            (host.bin_dir / tool).unlink()
    logs = SGLangLogs(source=facts.log_source, lines=facts.log_lines)
    assert logs.capacity["max_running_requests"] == 26
    assert not any("Decode batch" in line for line in logs.lines)  # filtered on the host
    if expected_call:
        assert expected_call in (home / ".docker-calls").read_text()


def test_the_example_suite_against_the_seed_deployments_host(pytester, clean_test_host, seed_server):
    """The seed case end to end: GPU facts over SSH (SM120), the current run's journal, and the
    two silent changes caught while the no-op allreduce flag is shown to change nothing."""
    import shutil

    from support import ROOT

    shutil.copytree(ROOT / "example_suite", pytester.path, dirs_exist_ok=True)
    result = pytester.runpytest("--sglang-host", seed_server.url, *ssh_args(clean_test_host), "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=12, failed=2, skipped=1)  # the benchmark, off unless --sglang-bench
    result.stdout.fnmatch_lines(["*PASSED*test_flashinfer_allreduce_fusion_is_not_in_effect_on_sm120*"], consecutive=False)
    result.stdout.fnmatch_lines(["SKIPPED*serving benchmarks are off*"], consecutive=False)
    result.stdout.fnmatch_lines(["FAILED*test_effective_running_requests_meet_the_sizing*", "FAILED*test_prefill_cuda_graph_is_on*"], consecutive=False)


@pytest.mark.parametrize(
    "text, message",
    [
        ("root@", "`ssh` 'root@' has no host name"),
        ("@gpu1", "`ssh` '@gpu1' has an empty user name before '@': write user@host, or just host"),
        ("root@gpu1:ssh", "`ssh` 'root@gpu1:ssh': the port must be a number in 1-65535"),
        ("root@gpu1:70000", "`ssh` 'root@gpu1:70000': the port must be a number in 1-65535"),
        ("root@gpu 1", "`ssh` 'root@gpu 1': write user@host or user@host:port"),
    ],
)
def test_an_odd_ssh_destination_is_one_line_before_any_connection(text, message):
    from pytest_sglang.base.errors import SpecError
    from pytest_sglang.collect.shell.ssh import Destination

    with pytest.raises(SpecError) as info:
        Destination.parse(text)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "text, parsed",
    [
        ("gpu1", ("gpu1", None, None)),
        ("root@gpu1", ("gpu1", "root", None)),
        ("root@gpu1:2222", ("gpu1", "root", 2222)),
        ("admin@[fe80::1]:2222", ("fe80::1", "admin", 2222)),
        ("me@corp.example@gpu1", ("gpu1", "me@corp.example", None)),
    ],
)
def test_ssh_destinations_as_users_write_them(text, parsed):
    from pytest_sglang.collect.shell.ssh import Destination

    d = Destination.parse(text)
    assert (d.host, d.user, d.port) == parsed
