"""Smoke tests of the test host (tests/testhost.py): a real sshd on loopback, fake GPU/systemd tools,
a real journal and a real stand-in SGLang process, checked with the real OpenSSH client and paramiko."""

from __future__ import annotations

import shlex
import socket
import subprocess
import time
from pathlib import Path

import pytest
from testhost import (
    API_KEY_JOURNAL,
    HF_TOKEN,
    OLD_DRIVER_CASE,
    OLD_DRIVER_COMPUTE_CAP,
    TestHost,
    missing_requirements,
    start_test_host,
)

paramiko = pytest.importorskip("paramiko")


@pytest.fixture(scope="module")
def client(test_host: TestHost):
    """One paramiko connection (host key checked against known_hosts) for the read-only checks."""
    c = paramiko.SSHClient()
    c.set_missing_host_key_policy(paramiko.RejectPolicy())
    c.load_host_keys(str(test_host.known_hosts))
    c.connect(**test_host.connect_kwargs())
    yield c
    c.close()


def sh(client, command: str) -> tuple[int, str, str]:
    _, out, err = client.exec_command(command, timeout=15)
    text, errtext = out.read().decode(), err.read().decode()
    return out.channel.recv_exit_status(), text, errtext


def ok(client, command: str) -> str:
    rc, out, err = sh(client, command)
    assert rc == 0, f"{command!r} exited {rc}: {err}"
    return out


# ---- logging in --------------------------------------------------------------------------------------


def test_openssh_login_with_the_client_key(test_host: TestHost) -> None:
    res = test_host.ssh("id -un; echo logged-in")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [test_host.user, "logged-in"]
    assert res.stderr == ""  # no shell start-up noise, no sshd debug output in the session


def test_openssh_refuses_the_wrong_key(test_host: TestHost) -> None:
    res = test_host.ssh("true", key=test_host.wrong_key)
    assert res.returncode == 255
    assert "Permission denied (publickey)" in res.stderr


def test_openssh_refuses_a_changed_host_key(test_host: TestHost) -> None:
    res = test_host.ssh("true", known_hosts=test_host.bad_known_hosts)
    assert res.returncode == 255
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in res.stderr
    assert "Host key verification failed" in res.stderr


def test_host_key_fingerprint_is_what_ssh_keygen_prints(test_host: TestHost) -> None:
    out = subprocess.run(
        ["ssh-keygen", "-lf", str(test_host.known_hosts)], capture_output=True, text=True, check=True
    ).stdout
    assert out.split()[1] == test_host.host_key_fingerprint
    assert out.split()[2] == f"[127.0.0.1]:{test_host.port}"


def test_paramiko_checks_keys_both_ways(test_host: TestHost, client) -> None:
    key = client.get_transport().get_remote_server_key()
    assert key.fingerprint == test_host.host_key_fingerprint
    wrong = dict(test_host.connect_kwargs(), key_filename=str(test_host.wrong_key))
    c = paramiko.SSHClient()
    c.set_missing_host_key_policy(paramiko.RejectPolicy())
    c.load_host_keys(str(test_host.known_hosts))
    with pytest.raises(paramiko.AuthenticationException):
        c.connect(**wrong)
    c.close()
    c = paramiko.SSHClient()
    c.set_missing_host_key_policy(paramiko.RejectPolicy())
    c.load_host_keys(str(test_host.bad_known_hosts))
    with pytest.raises(paramiko.BadHostKeyException):
        c.connect(**test_host.connect_kwargs())
    c.close()


def test_ssh_config_alias(test_host: TestHost, tmp_path: Path) -> None:
    config = test_host.ssh_config(tmp_path / "config")
    res = subprocess.run(
        ["ssh", "-F", str(config), "-o", "BatchMode=yes", "testhost", "echo alias-ok"],
        capture_output=True, text=True, timeout=15,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout == "alias-ok\n"
    parsed = paramiko.SSHConfig.from_path(str(config)).lookup("testhost")
    assert (parsed["hostname"], parsed["port"], parsed["user"]) == ("127.0.0.1", str(test_host.port), test_host.user)


def test_fake_tools_come_first_on_path(test_host: TestHost) -> None:
    res = test_host.ssh("echo $PATH; command -v nvidia-smi systemctl journalctl")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == f"{test_host.bin_dir}:/usr/local/bin:/usr/bin:/bin"
    assert lines[1:] == [str(test_host.bin_dir / t) for t in ("nvidia-smi", "systemctl", "journalctl")]


def test_every_ssh_command_is_recorded(test_host: TestHost, client) -> None:
    marker = f"echo 'recorded \"{time.monotonic()}\"'"
    ok(client, marker)
    assert marker in test_host.ssh_commands()


# ---- the journal and the log file -------------------------------------------------------------------


def test_journal_has_all_three_runs(test_host: TestHost, client) -> None:
    out = ok(client, "journalctl -u sglang.service -o cat")
    starts = [line for line in out.splitlines() if "server_args=ServerArgs(" in line]
    assert len(starts) == 3
    assert "model_path='Qwen/Qwen3.5-122B-A10B'" in starts[0] and "tp_size=4" in starts[0]
    assert [("disable_piecewise_cuda_graph=True" in s) for s in starts] == [False, True, True]
    assert [("enable_flashinfer_allreduce_fusion=True" in s) for s in starts] == [False, True, False]
    assert "api_key=None" in starts[0] and f"api_key='{API_KEY_JOURNAL}'" in starts[2]
    caps = [line.split("max_running_requests=")[1].split(",")[0] for line in out.splitlines() if "max_total_num_tokens=" in line]
    assert caps == ["48", "26", "26"] == [str(r["max_running_requests"]) for r in test_host.runs]
    assert out.count("Max running requests is reset to 48 for speculative decoding") == 1
    assert out.count("The server is fired up and ready to roll!") == 3
    assert "heartbeat" not in out  # the other unit's entries are filtered out
    everything = ok(client, "journalctl -o cat | grep -c heartbeat")
    assert int(everything) > 50


def test_journal_filters_the_current_invocation(test_host: TestHost, client) -> None:
    current = test_host.runs[-1]
    out = ok(client, f"journalctl -u sglang.service _SYSTEMD_INVOCATION_ID={current['invocation_id']} -o cat")
    starts = [line for line in out.splitlines() if "server_args=ServerArgs(" in line]
    assert len(starts) == 1 and "enable_flashinfer_allreduce_fusion=False" in starts[0]
    assert "disable_piecewise_cuda_graph=True" in starts[0]
    assert "max_running_requests=26, context_len=262144" in out
    assert "Max running requests is reset" not in out
    assert len(out.splitlines()) > 300  # an hour of request lines after start-up
    assert out.splitlines()[0] == current["lines"][0]
    shown = ok(client, "systemctl show -p InvocationID --value sglang.service").strip()
    assert shown == current["invocation_id"]


def test_a_two_minute_window_misses_the_current_start_up(test_host: TestHost, client) -> None:
    out = ok(client, 'journalctl -u sglang.service --since "2 min ago" -o cat')
    assert "server_args=" not in out and "fired up" not in out
    start = test_host.runs[-1]["start"].timestamp()
    assert time.time() - start > 3600


def test_journal_boot_and_grep(test_host: TestHost, client) -> None:
    out = ok(client, "journalctl -b -u sglang.service --grep 'max_running_requests=\\d+, context_len' -o cat")
    assert len(out.splitlines()) == 3
    assert ok(client, "journalctl --list-boots --no-pager").count(test_host.boot_id) == 1


def test_log_file_has_the_same_runs(test_host: TestHost, client) -> None:
    text = ok(client, f"cat {shlex.quote(str(test_host.log_file))}")
    assert text.count("server_args=ServerArgs(") == 3
    assert "heartbeat" not in text and "Started sglang.service" not in text
    assert text.splitlines() == [line for run in test_host.runs for line in run["lines"]]
    last = ok(client, f"tac {shlex.quote(str(test_host.log_file))} | grep -m1 'server_args='")
    assert f"api_key='{API_KEY_JOURNAL}'" in last and "enable_flashinfer_allreduce_fusion=False" in last
    with client.open_sftp() as sftp, sftp.open(str(test_host.log_file)) as f:  # SFTP works too
        assert f.read().decode() == text


# ---- the stand-in process and systemctl ----------------------------------------------------------------


def test_stand_in_process_cmdline_and_environment(test_host: TestHost, client) -> None:
    out = ok(client, f"tr '\\0' ' ' < /proc/{test_host.sglang_pid}/cmdline")
    assert out == " ".join(test_host.sglang_argv) + " "
    assert test_host.sglang_argv[1:3] == ["-m", "sglang.launch_server"]
    env = ok(client, f"tr '\\0' '\\n' < /proc/{test_host.sglang_pid}/environ").splitlines()
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3" in env and f"HF_TOKEN={HF_TOKEN}" in env
    for pid in test_host.child_pids:
        assert ok(client, f"cat /proc/{pid}/status | awk '/^PPid:/ {{print $2}}'").strip() == str(test_host.sglang_pid)


def test_systemctl_show(test_host: TestHost, client) -> None:
    out = ok(client, "systemctl show -p MainPID -p InvocationID -p ActiveState -p ExecStart sglang.service")
    props = dict(line.split("=", 1) for line in out.splitlines())
    assert props["MainPID"] == str(test_host.sglang_pid)
    assert props["InvocationID"] == test_host.runs[-1]["invocation_id"]
    assert props["ActiveState"] == "active"
    assert "argv[]=" + " ".join(test_host.sglang_argv) + " ;" in props["ExecStart"]
    # like systemd, --value prints in systemd's property order, not in the order asked
    values = ok(client, "systemctl show -p InvocationID -p MainPID --value sglang.service").splitlines()
    assert values == [str(test_host.sglang_pid), test_host.runs[-1]["invocation_id"]]
    missing = ok(client, "systemctl show -p MainPID -p InvocationID nosuch.service").splitlines()
    assert missing == ["MainPID=0", "InvocationID="]


def test_systemctl_refuses_changes(clean_test_host: TestHost, client) -> None:
    rc, _, err = sh(client, "systemctl restart sglang.service")
    assert rc == 1 and "refusing: read-only test host" in err
    rc, _, _ = sh(client, "systemctl --no-block stop 'sglang.service'")
    assert rc == 1
    assert clean_test_host.refused() == ["systemctl restart sglang.service", "systemctl --no-block stop sglang.service"]
    assert ok(client, "systemctl show -P MainPID sglang").strip() == str(clean_test_host.sglang_pid)


# ---- nvidia-smi and the run-time switches --------------------------------------------------------------


def test_nvidia_smi_answers_queries(test_host: TestHost, client) -> None:
    q = "nvidia-smi --query-gpu=index,name,compute_cap,memory.total,driver_version,uuid --format=csv,noheader,nounits"
    rows = [line.split(", ") for line in ok(client, q).splitlines()]
    assert rows == [
        [str(i), "NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0", "97887", "580.95.05", test_host.gpu_uuids[i]]
        for i in range(4)
    ]
    out = ok(client, "nvidia-smi --query-gpu=memory.total,compute_cap --format=csv")
    assert out.splitlines()[:2] == ["memory.total [MiB], compute_cap", "97887 MiB, 12.0"]
    apps = ok(client, "nvidia-smi --query-compute-apps=pid,gpu_uuid --format=csv,noheader").splitlines()
    assert apps == [f"{pid}, {uuid}" for pid, uuid in zip(test_host.child_pids, test_host.gpu_uuids)]
    rc, out, _ = sh(client, "nvidia-smi --query-gpu=nonsense --format=csv")
    assert rc == 2 and out == 'Field "nonsense" is not a valid field to query.\n'
    rc, out, _ = sh(client, "nvidia-smi --frobnicate")
    assert rc == 2 and "Invalid combination of input arguments" in out
    assert "Processes:" in ok(client, "nvidia-smi")


def test_old_driver_and_missing_tools(clean_test_host: TestHost, client) -> None:
    host = clean_test_host
    host.set_output("nvidia-smi", OLD_DRIVER_CASE, OLD_DRIVER_COMPUTE_CAP, exit_code=2)
    rc, out, _ = sh(client, "nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader")
    assert (rc, out) == (2, OLD_DRIVER_COMPUTE_CAP)
    assert ok(client, "nvidia-smi --query-gpu=index --format=csv,noheader").split() == ["0", "1", "2", "3"]
    host.remove_tool("nvidia-smi")
    host.remove_tool("systemctl")  # also in /usr/bin here: must still be missing
    rc, out, err = sh(client, "command -v nvidia-smi; command -v systemctl; systemctl show sglang.service")
    assert (rc, out) == (127, "") and "systemctl: command not found" in err
    assert ok(client, "command -v tac journalctl").splitlines()[1] == str(host.bin_dir / "journalctl")
    host.reset()
    assert ok(client, "command -v systemctl").strip() == str(host.bin_dir / "systemctl")
    rc, out, _ = sh(client, "nvidia-smi --query-gpu=compute_cap --format=csv,noheader")
    assert (rc, out.split()) == (0, ["12.0"] * 4)
    with pytest.raises(ValueError):
        host.set_output("nvidia-smi", "no-such-case", "")


def test_fake_tool_calls_are_recorded_shell_quoted(clean_test_host: TestHost, client) -> None:
    ok(client, "journalctl -u sglang.service --grep 'fired up and' -o cat -n 1 >/dev/null; nvidia-smi -L >/dev/null")
    assert clean_test_host.calls() == [
        ["journalctl", "-u", "sglang.service", "--grep", "fired up and", "-o", "cat", "-n", "1"],
        ["nvidia-smi", "-L"],
    ]
    assert "--grep 'fired up and'" in clean_test_host.calls_log.read_text()


# ---- lifecycle ---------------------------------------------------------------------------------------


def test_start_runs_every_part_and_stop_leaves_nothing(tmp_path: Path) -> None:
    if missing_requirements():
        pytest.skip("; ".join(missing_requirements()))
    host = start_test_host(tmp_path / "host")
    try:
        pids = [host.sglang_pid, *host.child_pids, int((host.root / "sshd.pid").read_text())]
        assert all(Path(f"/proc/{p}").exists() for p in pids)
    finally:
        host.stop()
    for p in pids:
        assert not Path(f"/proc/{p}").exists() or "\tZ" in Path(f"/proc/{p}/status").read_text()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", host.port), timeout=1).close()
