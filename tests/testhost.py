"""A real test host on loopback for the plugin's host-access tests.

``start_test_host(root)`` builds everything under ``root`` and starts a real OpenSSH server on
127.0.0.1 (a free port) that the plugin logs into with paramiko, like a GPU node it manages:

* **sshd** runs as a child process with its own throwaway host key; only ``client_key`` is authorised.
  For every SSH command it sets ``PATH=<bin_dir>:/usr/local/bin:/usr/bin:/bin`` (``SetEnv``), and
  ``SHLVL=1`` + ``BASH_ENV=<root>/session_env.sh`` so the login shell (bash) neither reads
  ``~/.bashrc`` (Debian's bash reads it for SSH commands, and a developer's bashrc may prepend to
  PATH) nor runs the command before ``session_env.sh`` recorded it in ``ssh_commands.log``.
* **Fake tools** in ``bin_dir`` (POSIX sh): ``nvidia-smi`` (recorded tables of 4x RTX PRO 6000
  Blackwell), ``systemctl`` (read-only subset; changing verbs are refused and recorded in
  ``refused.log``) and ``journalctl`` (the REAL journalctl reading ``journal_dir``). Each call is
  recorded in ``calls.log``, one line per call, arguments shell-quoted.
* **Journal**: a real journal file made by ``systemd-journal-remote`` from export-format text with
  three runs of ``sglang.service`` (baseline, candidate, candidate without the FlashInfer fusion flag)
  plus another unit's entries; the newest entries are a few seconds old. ``log_file`` has the same
  runs as plain text.
* **Stand-in SGLang**: a real ``python3 -m sglang.launch_server ...`` process with four spawned
  "TP scheduler" children (pid in ``systemctl show -p MainPID``, children in
  ``nvidia-smi --query-compute-apps``).

``test_host`` is a session-scoped fixture; tests that change the host (``set_output``,
``remove_tool``, ``set_unit_property``) should use ``clean_test_host`` or call ``reset()``.
"""

from __future__ import annotations

import atexit
import base64
import ctypes
import hashlib
import json
import os
import pwd
import random
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parent / "testhost_data"
SERVER_ARGS_TEMPLATE = Path(__file__).resolve().parent.parent / "pytest_sglang" / "simulator" / "templates" / "0.5.12.json"

SSHD = Path("/usr/sbin/sshd")
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
FAKE_TOOLS = ("nvidia-smi", "systemctl", "journalctl")
# Programs of this machine that remove_tool can hide from SSH sessions too (a host without docker...).
SYSTEM_TOOLS = ("docker", "kubectl", "tac", "timeout")
UNIT = "sglang.service"
OTHER_UNIT = "other.service"
MODEL = "Qwen/Qwen3.5-122B-A10B"
GPU_NAME = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
GPU_MEMORY_MIB = 97887
DRIVER = "580.95.05"
GPU_UUIDS = [
    "GPU-3f8a1c52-7d4e-4b6a-9e21-5c0d8f7a9b13",
    "GPU-a61e9d07-2b3c-4f58-8d71-0e4b6c2a5f98",
    "GPU-5c2b7e94-1f0a-4d36-b8e5-97d3a1c60e42",
    "GPU-d09f4a38-6e5b-4c21-a7f4-3b8e2d1c9a65",
]
GPU_BUS_IDS = ["00000000:17:00.0", "00000000:3D:00.0", "00000000:99:00.0", "00000000:BD:00.0"]

# Secrets planted on the host; tests prove the plugin never shows them.
API_KEY_JOURNAL = "sk-journal-SECRET-123"  # api_key in run 2 and 3's server_args lines (journal, log_file)
API_KEY_PROCESS = "sk-proc-SECRET-456"  # --api-key in the running process's argv (/proc, systemctl)
HF_TOKEN = "hf_env_SECRET_789"  # in the running process's environment only

# The port the stand-in SGLang process listens on, as far as its command line says. Each xdist
# worker starts its own test host on this one machine, and the plugin picks the SGLang process by
# the target's port, so every worker's stand-in gets a port of its own (below the ephemeral range,
# where the real tier's servers listen).
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
STANDIN_PORT = 30000 + (int(_WORKER[2:]) if _WORKER[2:].isdigit() else 0)

STANDIN_ARGV = [
    "python3", "-m", "sglang.launch_server",
    "--model-path", MODEL, "--tp", "4", "--max-running-requests", "48",
    "--enable-fused-moe-sum-all-reduce",
    "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
    "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
    "--mamba-scheduler-strategy", "extra_buffer",
    "--host", "0.0.0.0", "--port", str(STANDIN_PORT), "--api-key", API_KEY_PROCESS,
]  # fmt: skip

# What an old driver answers when asked for compute_cap: set_output("nvidia-smi", "query-gpu:compute_cap", ...).
OLD_DRIVER_COMPUTE_CAP = 'Field "compute_cap" is not a valid field to query.\n'
OLD_DRIVER_CASE = "query-gpu:compute_cap"

# set_output cases per tool; "<field>" stands for any field name.
OUTPUT_CASES = {
    "nvidia-smi": (
        "all", "table", "list", "version", "query-gpu", "query-gpu:<field>",
        "query-compute-apps", "query-compute-apps:<field>",
    ),
    "systemctl": ("all", "show", "cat", "status", "is-active", "is-enabled", "is-failed"),
    "journalctl": ("all",),
}  # fmt: skip


def _first(*paths: str) -> Path | None:
    for p in paths:
        if p and Path(p).exists():
            return Path(p)
    return None


JOURNAL_REMOTE = _first("/lib/systemd/systemd-journal-remote", "/usr/lib/systemd/systemd-journal-remote")
JOURNALCTL = _first("/usr/bin/journalctl", "/bin/journalctl")
SSH_KEYGEN = _first(shutil.which("ssh-keygen") or "", "/usr/bin/ssh-keygen")


def missing_requirements() -> list[str]:
    """Why a test host cannot be built here (empty when it can), with the Debian package to install."""
    out = []
    if not SSHD.exists():
        out.append("/usr/sbin/sshd is missing (apt-get install openssh-server)")
    if SSH_KEYGEN is None:
        out.append("ssh-keygen is missing (apt-get install openssh-client)")
    if JOURNAL_REMOTE is None:
        out.append("systemd-journal-remote is missing (apt-get install systemd-journal-remote)")
    if JOURNALCTL is None:
        out.append("journalctl is missing (apt-get install systemd)")
    if shutil.which("bash") is None:
        out.append("bash is missing")
    return out


# ---- the host ----------------------------------------------------------------------------------


@dataclass
class TestHost:
    """A running test host. Paths are under ``root``; see the module docstring.

    ``runs`` (oldest first; ``runs[-1]`` is the current one, the stand-in process) are dicts with:
    name ("baseline", "candidate", "candidate-no-fi-allreduce-fusion"), current, invocation_id, pid,
    start/ready/stop (aware UTC datetimes; stop None for the current run), start_us/stop_us (journal
    realtime), start_local, argv (how that run was launched), api_key, server_args (the logged
    ServerArgs fields), server_args_max_running_requests (48 in all), max_running_requests (the
    scheduler's effective value: 48, 26, 26), disable_piecewise_cuda_graph, enable_flashinfer_allreduce_fusion,
    enable_fused_moe_sum_all_reduce, speculative_algorithm, max_mamba_cache_size, max_total_num_tokens,
    reset_to_48_warning (only run 2 logs it) and lines (what the process printed, as in ``log_file``).
    """

    __test__ = False  # not a pytest test class

    host: str
    port: int
    user: str
    client_key: Path
    wrong_key: Path
    known_hosts: Path
    bad_known_hosts: Path
    host_key_fingerprint: str
    bin_dir: Path
    journal_dir: Path
    unit: str
    sglang_pid: int
    sglang_argv: list[str]
    log_file: Path
    runs: list[dict]
    # more
    root: Path = Path()
    child_pids: list[int] = field(default_factory=list)  # the stand-in's 4 "TP scheduler" children (GPU 0-3)
    gpu_uuids: list[str] = field(default_factory=lambda: list(GPU_UUIDS))
    boot_id: str = ""
    calls_log: Path = Path()  # every fake-tool call, one shell-quoted line each
    refused_log: Path = Path()  # every refused (changing) systemctl call
    ssh_commands_log: Path = Path()  # every command run over SSH (NUL-separated)
    sshd_log: Path = Path()
    journal_export: Path = Path()  # the export-format text the journal was made from
    _sshd: subprocess.Popen | None = field(default=None, repr=False)
    _standin: subprocess.Popen | None = field(default=None, repr=False)
    _stopped: bool = field(default=False, repr=False)
    _removed_tools: set[str] = field(default_factory=set, repr=False)

    # -- configuration for clients ------------------------------------------------------------
    def ssh_config(self, path: Path, alias: str = "testhost", *, known_hosts: bool = True) -> Path:
        """Write an ~/.ssh/config style file: ``Host testhost`` -> 127.0.0.1, Port, User, IdentityFile."""
        path = Path(path)
        lines = [
            f"Host {alias}",
            f"    HostName {self.host}",
            f"    Port {self.port}",
            f"    User {self.user}",
            f"    IdentityFile {self.client_key}",
            "    IdentitiesOnly yes",
        ]
        if known_hosts:
            lines += [f"    UserKnownHostsFile {self.known_hosts}", "    StrictHostKeyChecking yes"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
        path.chmod(0o600)
        return path

    def ssh_argv(self, command: str, *, key: Path | None = None, known_hosts: Path | None = None) -> list[str]:
        """argv of the real OpenSSH client running ``command`` on the host (strict host key checking)."""
        return [
            "ssh", "-F", "/dev/null", "-i", str(key or self.client_key),
            "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={known_hosts or self.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "ConnectTimeout=5", "-o", "LogLevel=ERROR",
            "-p", str(self.port), f"{self.user}@{self.host}", command,
        ]  # fmt: skip

    def ssh(self, command: str, *, timeout: float = 15, **kw: Any) -> subprocess.CompletedProcess:
        """Run ``command`` on the host with the real ssh client; text output, never raises on exit codes."""
        return subprocess.run(self.ssh_argv(command, **kw), capture_output=True, text=True, timeout=timeout)

    def connect_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``paramiko.SSHClient.connect``."""
        return {
            "hostname": self.host,
            "port": self.port,
            "username": self.user,
            "key_filename": str(self.client_key),
            "look_for_keys": False,
            "allow_agent": False,
            "timeout": 5,
        }

    # -- changing the fake tools at run time -----------------------------------------------------
    def set_output(self, tool: str, case: str, text: str, exit_code: int = 0, stderr: str = "") -> None:
        """Make ``tool`` print ``text`` (stdout; ``stderr`` on stderr) and exit with ``exit_code`` for ``case``.

        Cases (``OUTPUT_CASES``): ``all`` (every call); nvidia-smi: ``table`` (no arguments), ``list``
        (-L), ``version``, ``query-gpu`` / ``query-compute-apps`` (every query of that kind),
        ``query-gpu:<field>`` (queries asking for that field; ``OLD_DRIVER_CASE`` with
        ``OLD_DRIVER_COMPUTE_CAP`` and exit 2 is an old driver without compute_cap); systemctl: one
        per read-only verb (refused verbs stay refused); journalctl: ``all``.
        """
        _check_case(tool, case)
        d = self.root / "fake" / "overrides" / tool
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{case}.rc").write_text(f"{int(exit_code)}\n")
        err = d / f"{case}.err"
        if stderr:
            err.write_text(stderr)
        else:
            err.unlink(missing_ok=True)
        tmp = d / f"{case}.out.tmp"
        tmp.write_text(text)
        os.replace(tmp, d / f"{case}.out")

    def clear_output(self, tool: str | None = None, case: str | None = None) -> None:
        """Undo set_output for one case, one tool or everything."""
        base = self.root / "fake" / "overrides"
        if tool is None:
            shutil.rmtree(base, ignore_errors=True)
            base.mkdir(parents=True, exist_ok=True)
            return
        if case is None:
            shutil.rmtree(base / tool, ignore_errors=True)
            return
        for suffix in (".out", ".rc", ".err"):
            (base / tool / f"{case}{suffix}").unlink(missing_ok=True)

    def remove_tool(self, tool: str) -> None:
        """Make ``tool`` missing for SSH commands (``command -v`` fails, running it gives exit 127).

        For a tool that also exists in /usr/bin here (systemctl, journalctl, and the machine's own
        ``SYSTEM_TOOLS``: docker, kubectl, tac, timeout), SSH sessions get PATH=<bin_dir>:<root>/sysbin,
        a folder of links to /usr/local/bin, /usr/bin and /bin without the removed tools, until
        ``restore_tool``/``reset``.
        """
        if tool not in FAKE_TOOLS + SYSTEM_TOOLS:
            raise ValueError(f"unknown tool {tool!r}; removable tools are {', '.join(FAKE_TOOLS + SYSTEM_TOOLS)}")
        (self.bin_dir / tool).unlink(missing_ok=True)
        self._removed().add(tool)
        self._write_session_path()

    def restore_tool(self, tool: str) -> None:
        if tool not in FAKE_TOOLS + SYSTEM_TOOLS:
            raise ValueError(f"unknown tool {tool!r}; removable tools are {', '.join(FAKE_TOOLS + SYSTEM_TOOLS)}")
        if tool in FAKE_TOOLS:
            dest = self.bin_dir / tool
            shutil.copy2(self.root / "fake" / "originals" / tool, dest)
            dest.chmod(0o755)
        self._removed().discard(tool)
        self._write_session_path()

    def set_unit_property(self, prop: str, value: str, unit: str = UNIT) -> None:
        """Change what ``systemctl show`` reports for one property (e.g. ActiveState=failed, MainPID=0)."""
        path = self.root / "fake" / "systemctl" / "units" / f"{unit}.props"
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.split("=", 1)[0] == prop:
                lines[i] = f"{prop}={value}"
                break
        else:
            lines.append(f"{prop}={value}")
        path.write_text("\n".join(lines) + "\n")

    def reset(self) -> None:
        """Undo every run-time change (outputs, removed tools, unit properties) and empty the logs."""
        self.clear_output()
        for tool in FAKE_TOOLS + SYSTEM_TOOLS:
            self.restore_tool(tool)
        units = self.root / "fake" / "systemctl" / "units"
        for pristine in units.glob("*.props.orig"):
            shutil.copy2(pristine, units / pristine.name[: -len(".orig")])
        self.clear_logs()

    # -- what happened on the host ---------------------------------------------------------------
    def calls(self, tool: str | None = None) -> list[list[str]]:
        """The fake-tool calls so far, as argv lists (tool name first), optionally of one tool."""
        out = []
        if self.calls_log.exists():
            for line in self.calls_log.read_text().splitlines():
                argv = shlex.split(line)
                if argv and (tool is None or argv[0] == tool):
                    out.append(argv)
        return out

    def refused(self) -> list[str]:
        """Refused (changing) systemctl command lines, shell-quoted."""
        return self.refused_log.read_text().splitlines() if self.refused_log.exists() else []

    def ssh_commands(self) -> list[str]:
        """Every command string run over SSH (exec requests), in order."""
        if not self.ssh_commands_log.exists():
            return []
        return [c for c in self.ssh_commands_log.read_text().split("\0") if c]

    def clear_logs(self) -> None:
        for log in (self.calls_log, self.refused_log, self.ssh_commands_log):
            log.write_text("")

    @property
    def current_run(self) -> dict:
        return self.runs[-1]

    # -- teardown --------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop sshd (and its sessions) and the stand-in SGLang process tree. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        for proc in (self._sshd, self._standin):
            if proc is not None:
                _kill_tree(proc)

    # -- internals -------------------------------------------------------------------------------
    def _removed(self) -> set[str]:
        return self._removed_tools

    def _write_session_path(self) -> None:
        hidden = {t for t in self._removed() if any(Path(d, t).exists() for d in SYSTEM_PATH.split(":"))}
        session_path = self.root / "session_path"
        sysbin = self.root / "sysbin"
        if not hidden:
            session_path.unlink(missing_ok=True)
            shutil.rmtree(sysbin, ignore_errors=True)
            return
        shutil.rmtree(sysbin, ignore_errors=True)
        sysbin.mkdir()
        for d in SYSTEM_PATH.split(":"):
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue
            for entry in entries:
                if entry.name in hidden or (sysbin / entry.name).is_symlink():
                    continue
                (sysbin / entry.name).symlink_to(entry.path)
        session_path.write_text(f"{self.bin_dir}:{sysbin}\n")


def _check_case(tool: str, case: str) -> None:
    if tool not in OUTPUT_CASES:
        raise ValueError(f"unknown tool {tool!r}; the fake tools are {', '.join(OUTPUT_CASES)}")
    if "/" in case or not case:
        raise ValueError(f"bad case name {case!r}")
    for known in OUTPUT_CASES[tool]:
        if known == case or (known.endswith(":<field>") and case.startswith(known[: -len("<field>")]) and
                             len(case) > len(known) - len("<field>")):  # fmt: skip
            return
    raise ValueError(f"unknown case {case!r} for {tool}; known: {', '.join(OUTPUT_CASES[tool])}")


# ---- building and starting -------------------------------------------------------------------------


def start_test_host(root: Path) -> TestHost:
    """Build everything under ``root``, start sshd and the stand-in; return once sshd accepts logins."""
    missing = missing_requirements()
    if missing:
        raise RuntimeError("cannot build a test host: " + "; ".join(missing))
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    user = pwd.getpwuid(os.getuid()).pw_name
    now_us = int(time.time() * 1_000_000)
    for name in ("calls.log", "refused.log", "ssh_commands.log"):
        (root / name).write_text("")

    keys = _make_keys(root / "keys")
    bin_dir = _install_tools(root)
    standin, python = _start_standin(root)
    try:
        child_pids = _wait_children(root, standin)
        boot_id = _boot_id()
        runs = _runs(now_us, standin.pid)
        journal_dir, export = _write_journal(root, runs, now_us, boot_id, python)
        log_file = _write_log_file(root, runs)
        _write_tool_data(root, runs, standin.pid, child_pids, python, now_us, boot_id)
        sshd, port = _start_sshd(root, keys, bin_dir, user)
    except BaseException:
        _kill_tree(standin)
        raise
    host_pub = (root / "keys" / "ssh_host_ed25519_key.pub").read_text().split()
    other_pub = (root / "keys" / "other_host_ed25519_key.pub").read_text().split()
    known_hosts = root / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    bad_known_hosts = root / "bad_known_hosts"
    bad_known_hosts.write_text(f"[127.0.0.1]:{port} {other_pub[0]} {other_pub[1]}\n")
    host = TestHost(
        host="127.0.0.1",
        port=port,
        user=user,
        client_key=keys["client"],
        wrong_key=keys["wrong"],
        known_hosts=known_hosts,
        bad_known_hosts=bad_known_hosts,
        host_key_fingerprint=_fingerprint(host_pub[1]),
        bin_dir=bin_dir,
        journal_dir=journal_dir,
        unit=UNIT,
        sglang_pid=standin.pid,
        sglang_argv=list(STANDIN_ARGV),
        log_file=log_file,
        runs=runs,
        root=root,
        child_pids=child_pids,
        boot_id=boot_id,
        calls_log=root / "calls.log",
        refused_log=root / "refused.log",
        ssh_commands_log=root / "ssh_commands.log",
        sshd_log=root / "sshd.log",
        journal_export=export,
        _sshd=sshd,
        _standin=standin,
    )
    atexit.register(host.stop)
    return host


@pytest.fixture(scope="session")
def test_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestHost]:
    """A running test host for the whole session (skipped when OpenSSH or journal tools are missing)."""
    missing = missing_requirements()
    if missing:
        from support import missing_packages_note  # "[missing system packages: ...]": the run's summary counts these skips

        pytest.skip(f"test host unavailable: {'; '.join(missing)} {missing_packages_note('; '.join(missing))}".rstrip())
    host = start_test_host(tmp_path_factory.mktemp("testhost"))
    try:
        yield host
    finally:
        host.stop()


@pytest.fixture
def clean_test_host(test_host: TestHost) -> Iterator[TestHost]:
    """The session's test host, reset (outputs, tools, unit properties, logs) before and after the test."""
    test_host.reset()
    try:
        yield test_host
    finally:
        test_host.reset()


# -- keys and sshd --------------------------------------------------------------------------------


def _make_keys(d: Path) -> dict[str, Path]:
    d.mkdir(parents=True, exist_ok=True)
    names = {
        "host": "ssh_host_ed25519_key",
        "other_host": "other_host_ed25519_key",
        "client": "client_key",
        "wrong": "wrong_key",
    }
    procs = []
    for role, name in names.items():
        path = d / name
        for p in (path, path.with_name(name + ".pub")):
            p.unlink(missing_ok=True)
        procs.append(
            subprocess.Popen(
                [str(SSH_KEYGEN), "-q", "-t", "ed25519", "-N", "", "-C", f"testhost-{role}", "-f", str(path)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            )  # fmt: skip
        )
    for p in procs:
        out, _ = p.communicate(timeout=10)
        if p.returncode:
            raise RuntimeError(f"ssh-keygen failed: {out.decode(errors='replace')}")
    (d.parent / "authorized_keys").write_text((d / "client_key.pub").read_text())
    return {role: d / name for role, name in names.items()}


def _fingerprint(b64_blob: str) -> str:
    digest = hashlib.sha256(base64.b64decode(b64_blob)).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def _start_sshd(root: Path, keys: dict[str, Path], bin_dir: Path, user: str) -> tuple[subprocess.Popen, int]:
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
    session_env = root / "session_env.sh"
    session_env.write_text(_fill((DATA / "tools" / "session_env.sh").read_text(), root))
    log = root / "sshd.log"
    last_error = ""
    for _attempt in range(5):
        port = _free_port()
        config = root / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    "# test host sshd (started by tests/testhost.py)",
                    "ListenAddress 127.0.0.1",
                    f"Port {port}",
                    f'HostKey "{keys["host"]}"',
                    f'PidFile "{root / "sshd.pid"}"',
                    f'AuthorizedKeysFile "{root / "authorized_keys"}"',
                    "PubkeyAuthentication yes",
                    "PermitRootLogin prohibit-password",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "HostbasedAuthentication no",
                    "UsePAM no",
                    "StrictModes no",
                    "PermitUserEnvironment no",
                    "PrintMotd no",
                    "PrintLastLog no",
                    "UseDNS no",
                    "X11Forwarding no",
                    "AllowAgentForwarding no",
                    "MaxStartups 64:30:128",
                    "MaxSessions 32",
                    "LoginGraceTime 30",
                    "LogLevel VERBOSE",
                    "Subsystem sftp internal-sftp",
                    f'SetEnv "PATH={bin_dir}:{SYSTEM_PATH}" "SHLVL=1" "BASH_ENV={session_env}"',
                    "",
                ]
            )
        )
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [str(SSHD), "-D", "-e", "-f", str(config)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                start_new_session=True, preexec_fn=_die_with_parent,
            )  # fmt: skip
        if _wait_banner(proc, port, timeout=5):
            return proc, port
        _kill_tree(proc)
        last_error = log.read_text(errors="replace")[-2000:]
        if "Address already in use" not in last_error and "Bind to port" not in last_error:
            break
    raise RuntimeError(f"sshd did not start; its log ({log}):\n{last_error}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_banner(proc: subprocess.Popen, port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.settimeout(2)
                if s.recv(256).startswith(b"SSH-"):
                    s.sendall(b"SSH-2.0-testhost-probe\r\n")
                    return True
        except OSError:
            pass
        time.sleep(0.02)
    return False


# -- processes ------------------------------------------------------------------------------------


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _children_map() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out.setdefault(ppid, []).append(int(entry))
    return out


def _descendants(pid: int) -> list[int]:
    children = _children_map()
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _kill_tree(proc: subprocess.Popen) -> None:
    """SIGTERM the process, its process group and every descendant; SIGKILL what is left after 3 s."""
    pids = [proc.pid] + _descendants(proc.pid)

    def signal_all(sig: int) -> None:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    signal_all(signal.SIGTERM)
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and any(_alive(p) for p in pids[1:]):
        time.sleep(0.02)
    signal_all(signal.SIGKILL)
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        pass


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _standin_python() -> str:
    return "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable


def _start_standin(root: Path) -> tuple[subprocess.Popen, str]:
    d = root / "standin"
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(DATA / "standin", d, ignore=shutil.ignore_patterns("__pycache__"))
    children_file = d / "children.json"
    (d / "standin.json").write_text(
        json.dumps({"tp": 4, "children_file": str(children_file), "watch_pid": os.getpid()})
    )
    python = _standin_python()
    env = {
        "PATH": SYSTEM_PATH if python == "/usr/bin/python3" else f"{Path(python).parent}:{SYSTEM_PATH}",
        "HOME": str(root),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(d),
        "CUDA_VISIBLE_DEVICES": "0,1,2,3",
        "HF_TOKEN": HF_TOKEN,
    }
    with open(d / "output.log", "ab") as out:
        proc = subprocess.Popen(
            STANDIN_ARGV, executable=python, env=env, cwd=str(d),
            stdin=subprocess.DEVNULL, stdout=out, stderr=out,
            start_new_session=True, preexec_fn=_die_with_parent,
        )  # fmt: skip
    return proc, python


def _wait_children(root: Path, proc: subprocess.Popen) -> list[int]:
    children_file = root / "standin" / "children.json"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if children_file.exists():
            return json.loads(children_file.read_text())
        if proc.poll() is not None:
            break
        time.sleep(0.01)
    out = (root / "standin" / "output.log").read_text(errors="replace")[-2000:]
    raise RuntimeError(f"the stand-in SGLang process did not start its children:\n{out}")


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")
    except OSError:
        return uuid.uuid4().hex


def _machine_id() -> str:
    try:
        text = Path("/etc/machine-id").read_text().strip()
        if len(text) == 32:
            return text
    except OSError:
        pass
    return "4b1d6f0e9a2c4f7db3e85a6c0f19d2e7"


# ---- the three runs ---------------------------------------------------------------------------------

# Seconds before "now" at which each run of sglang.service started; run 3 is the current one.
_RUN_STARTS = (11 * 3600, 5 * 3600 + 1800, 3900)
_READY_AFTER = 270.0  # seconds from "Started ..." to "The server is fired up and ready to roll!"
_NEWEST_AGE = 2.0  # seconds before "now" of the newest journal entry


def _argv_for(name: str) -> list[str]:
    head = ["python3", "-m", "sglang.launch_server", "--model-path", MODEL, "--tp", "4"]
    tail = ["--host", "0.0.0.0", "--port", str(STANDIN_PORT)]
    spec = [
        "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
        "--mamba-scheduler-strategy", "extra_buffer",
    ]  # fmt: skip
    if name == "baseline":
        return head + ["--max-running-requests", "48"] + tail
    if name == "candidate":
        return (
            head + ["--enable-fused-moe-sum-all-reduce", "--enable-flashinfer-allreduce-fusion"]
            + spec + tail + ["--api-key", API_KEY_JOURNAL]
        )  # fmt: skip
    return list(STANDIN_ARGV)


def _cuda_graph_bs(spec: bool) -> list[int]:
    if spec:
        return list(range(1, 33)) + list(range(36, 257, 4)) + list(range(264, 513, 8))
    return [1, 2, 4, 8, 12] + list(range(16, 257, 8)) + list(range(272, 513, 16))


def _server_args(name: str) -> dict[str, Any]:
    """The ServerArgs fields of a run as 0.5.12 logs them (template field set + this deployment)."""
    template = json.loads(SERVER_ARGS_TEMPLATE.read_text())["server_args"]
    args = dict(template)
    spec = name != "baseline"
    args.update(
        model_path=MODEL,
        tokenizer_path=MODEL,
        served_model_name=MODEL,
        host="0.0.0.0",
        port=STANDIN_PORT,
        tp_size=4,
        mem_fraction_static=0.7392700000000001 if spec else 0.77714,
        max_running_requests=48,
        chunked_prefill_size=8192,
        cuda_graph_max_bs=512,
        cuda_graph_bs=_cuda_graph_bs(spec),
        attention_backend="flashinfer",
        mamba_ssm_dtype="float32",
        random_seed={"baseline": 573019284, "candidate": 104872639}.get(name, 881245017),
        disable_piecewise_cuda_graph=spec,
        enable_flashinfer_allreduce_fusion=(name == "candidate"),
        enable_fused_moe_sum_all_reduce=spec,
        speculative_algorithm="EAGLE" if spec else None,
        speculative_num_steps=3 if spec else None,
        speculative_eagle_topk=1 if spec else None,
        speculative_num_draft_tokens=4 if spec else None,
        mamba_scheduler_strategy="extra_buffer" if spec else "no_buffer",
        disable_overlap_schedule=not spec,
        api_key=API_KEY_JOURNAL if spec else None,
    )
    return args


def _runs(now_us: int, current_pid: int) -> list[dict]:
    names = ("baseline", "candidate", "candidate-no-fi-allreduce-fusion")
    pids = (184233, 305117, current_pid)
    runs = []
    for i, name in enumerate(names):
        spec = name != "baseline"
        start_us = now_us - _RUN_STARTS[i] * 1_000_000
        stop_us = now_us - _RUN_STARTS[i + 1] * 1_000_000 - 15_000_000 if i < 2 else None
        args = _server_args(name)
        runs.append(
            {
                "name": name,
                "current": i == 2,
                "invocation_id": uuid.uuid4().hex,
                "pid": pids[i],
                "start": datetime.fromtimestamp(start_us / 1e6, timezone.utc),
                "start_us": start_us,
                "start_local": _local(start_us),  # the "[YYYY-MM-DD HH:MM:SS]" of its first SGLang lines is a few s later
                "ready": datetime.fromtimestamp((start_us + _READY_AFTER * 1e6) / 1e6, timezone.utc),
                "stop": datetime.fromtimestamp(stop_us / 1e6, timezone.utc) if stop_us else None,
                "stop_us": stop_us,
                "argv": _argv_for(name),
                "api_key": args["api_key"],
                "server_args": args,
                "server_args_max_running_requests": 48,
                "max_running_requests": 26 if spec else 48,  # the scheduler's line (effective)
                "disable_piecewise_cuda_graph": spec,
                "enable_flashinfer_allreduce_fusion": name == "candidate",
                "enable_fused_moe_sum_all_reduce": spec,
                "speculative_algorithm": "EAGLE" if spec else None,
                "max_mamba_cache_size": 132 if spec else 160,
                "max_total_num_tokens": 331776 if spec else 412160,
                "reset_to_48_warning": name == "candidate",
            }
        )
    return runs


def _local(us: int, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    return time.strftime(fmt, time.localtime(us / 1e6))


def _systemd_ts(us: int) -> str:
    return time.strftime("%a %Y-%m-%d %H:%M:%S %Z", time.localtime(us / 1e6))


def _run_lines(run: dict, rng: random.Random, end_us: int) -> list[tuple[int, str]]:
    """(realtime_us, line) of everything the SGLang process printed during ``run``."""
    spec = run["speculative_algorithm"] is not None
    base = run["start_us"] + 3_400_000
    out: list[tuple[int, str]] = []

    def add(t: float, text: str, ranks: tuple[int, ...] | None = None, raw: bool = False) -> None:
        us = base + int(t * 1_000_000)
        if raw:
            out.append((us, text))
            return
        if ranks is None:
            out.append((us, f"[{_local(us)}] {text}"))
            return
        for k, r in enumerate(ranks):
            u = us + k * 1700 + rng.randrange(900)
            out.append((u, f"[{_local(u)} TP{r}] {text}"))

    tp = (0, 1, 2, 3)
    mamba = (160, "0.42", "14.34") if not spec else (132, "0.35", "11.83")
    kv = "2.36" if not spec else "1.90"
    add(0.0, "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:63: FutureWarning: The pynvml package "
        "is deprecated. Please install nvidia-ml-py instead. If you did not install pynvml directly, please report "
        "this to the maintainers of the package that installed pynvml for you.", raw=True)  # fmt: skip
    add(0.0, "  import pynvml  # type: ignore[import]", raw=True)
    if run["reset_to_48_warning"]:
        add(0.9, "Max running requests is reset to 48 for speculative decoding. You can override this by "
            "explicitly setting --max-running-requests.")  # fmt: skip
    args = run["server_args"]
    add(1.0, "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")")
    add(1.6, "Using default HuggingFace chat template with detected content format: openai")
    add(7.2, "Init torch distributed begin.", tp)
    add(7.9, "Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs. To silence "
        "this warning, specify disable_custom_all_reduce=True explicitly.", tp)  # fmt: skip
    add(8.3, "Init torch distributed ends. mem usage=0.58 GB", tp)
    add(9.1, "Load weight begin. avail mem=94.33 GB", tp)
    add(9.6, "Using default MoE kernel config. Performance might be sub-optimal! Config file not found at "
        "/usr/local/lib/python3.12/dist-packages/sglang/srt/layers/moe/fused_moe_triton/configs/triton_3_5_1/"
        "E=256,N=256,device_name=NVIDIA_RTX_PRO_6000_Blackwell_Server_Edition.json, you can create them with "
        "https://github.com/sgl-project/sglang/tree/main/benchmark/kernels/fused_moe_triton", (0,))  # fmt: skip
    add(158.4, "Load weight end. type=Qwen3_5MoeForConditionalGeneration, dtype=torch.bfloat16, "
        "avail mem=32.80 GB, mem usage=61.53 GB.", tp)  # fmt: skip
    t = 159.0
    if spec:
        add(159.0, "Load weight begin. avail mem=32.61 GB", tp)
        add(164.2, "Load weight end. type=Qwen3_5ForCausalLMMTP, dtype=torch.bfloat16, avail mem=30.12 GB, "
            "mem usage=2.49 GB.", tp)  # fmt: skip
        t = 165.0
    add(t, f"Mamba Cache is allocated. max_mamba_cache_size: {mamba[0]}, conv_state size: {mamba[1]}GB, "
        f"ssm_state size: {mamba[2]}GB", tp)  # fmt: skip
    add(t + 0.2, f"KV Cache is allocated. #tokens: {run['max_total_num_tokens']}, K size: {kv} GB, V size: {kv} GB", tp)
    add(t + 0.4, "Memory pool end. avail mem=13.42 GB", tp)
    add(t + 1.0, "Capture cuda graph begin. This can take up to several minutes. avail mem=13.01 GB", tp)
    add(t + 1.1, f"Capture cuda graph bs {args['cuda_graph_bs']}", (0,))
    add(t + 39.3, "Capture cuda graph end. Time elapsed: 38.24 s. mem usage=1.87 GB. avail mem=11.14 GB.", tp)
    t += 40.0
    if spec:
        add(t, "Capture draft cuda graph begin. This can take up to several minutes. avail mem=11.12 GB", tp)
        add(t + 9.9, "Capture draft cuda graph end. Time elapsed: 9.87 s. mem usage=0.41 GB. avail mem=10.71 GB.", tp)
        add(t + 10.1, "Disable piecewise CUDA graph because --disable-piecewise-cuda-graph is set", tp)
        t += 11.0
        avail = "9.87"
    else:
        add(t, "Capture piecewise CUDA graph begin. avail mem=11.12 GB", tp)
        add(t + 52.4, "Capture piecewise CUDA graph end. Time elapsed: 52.31 s. mem usage=0.77 GB. "
            "avail mem=10.35 GB.", tp)  # fmt: skip
        t += 53.0
        avail = "10.35"
    add(t, f"max_total_num_tokens={run['max_total_num_tokens']}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        f"max_running_requests={run['max_running_requests']}, context_len=262144, available_gpu_mem={avail} GB", (0,))  # fmt: skip
    ready = _READY_AFTER - 3.4
    add(ready - 3.0, f"INFO:     Started server process [{run['pid']}]")
    add(ready - 2.99, "INFO:     Waiting for application startup.")
    add(ready - 2.98, "INFO:     Application startup complete.")
    add(ready - 2.97, f"INFO:     Uvicorn running on http://0.0.0.0:{STANDIN_PORT} (Press CTRL+C to quit)")
    add(ready - 1.9, 'INFO:     127.0.0.1:40112 - "GET /model_info HTTP/1.1" 200 OK')
    add(ready - 1.2, "Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, "
        "mamba usage: 0.01, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, "
        "input throughput (token/s): 0.00", (0,))  # fmt: skip
    add(ready - 0.3, 'INFO:     127.0.0.1:40126 - "POST /generate HTTP/1.1" 200 OK')
    add(ready, "The server is fired up and ready to roll!")

    # request traffic until the run ends (a few hundred lines for the current run)
    first = base + int((ready + 5) * 1_000_000)
    count = 330 if run["current"] else 40
    step = (end_us - first) / count
    cap = run["max_running_requests"]
    for i in range(count):
        us = first + int(i * step) + rng.randrange(int(step * 0.3) or 1)
        if us > end_us:
            us = end_us
        stamp = _local(us)
        running = rng.randint(max(1, cap // 2), cap)
        queue = rng.randint(0, 9) if running == cap else 0
        kind = rng.random()
        if kind < 0.7:
            extra = f"accept len: {rng.uniform(2.4, 3.1):.2f}, accept rate: {rng.uniform(0.6, 0.78):.2f}, " if spec else ""
            line = (
                f"[{stamp} TP0] Decode batch, #running-req: {running}, #token: {running * rng.randint(2400, 5200)}, "
                f"token usage: {rng.uniform(0.1, 0.6):.2f}, mamba usage: {running / cap * rng.uniform(0.9, 1.0):.2f}, "
                f"{extra}cuda graph: True, gen throughput (token/s): {rng.uniform(600, 1900):.2f}, #queue-req: {queue}"
            )
        elif kind < 0.9:
            new = rng.randint(300, 8192)
            line = (
                f"[{stamp} TP0] Prefill batch, #new-seq: {rng.randint(1, 3)}, #new-token: {new}, "
                f"#cached-token: {rng.randint(0, 4096)}, token usage: {rng.uniform(0.1, 0.6):.2f}, "
                f"mamba usage: {running / cap * rng.uniform(0.9, 1.0):.2f}, #running-req: {running}, "
                f"#queue-req: {queue}, #pending-token: {queue * rng.randint(500, 3000)}, cuda graph: False, "
                f"input throughput (token/s): {rng.uniform(4000, 21000):.2f}"
            )
        else:
            line = (
                f'[{stamp}] INFO:     10.0.0.{rng.randint(10, 60)}:{rng.randint(32768, 60999)} - '
                f'"POST /v1/chat/completions HTTP/1.1" 200 OK'
            )
        out.append((us, line))
    out.sort(key=lambda x: x[0])
    return out


def _write_journal(root: Path, runs: list[dict], now_us: int, boot_id: str, python: str) -> tuple[Path, Path]:
    rng = random.Random(20260516)
    machine_id = _machine_id()
    hostname = socket.gethostname()
    boot_us = now_us - 3 * 86400 * 1_000_000  # "booted" three days ago (monotonic clock)
    entries: list[tuple[int, dict[str, Any]]] = []
    common = {"_BOOT_ID": boot_id, "_MACHINE_ID": machine_id, "_HOSTNAME": hostname}
    newest = now_us - int(_NEWEST_AGE * 1_000_000)

    def systemd(us: int, run: dict, message: str, message_id: str, **extra: Any) -> None:
        entries.append((us, {
            **common, "PRIORITY": 6, "SYSLOG_FACILITY": 3, "SYSLOG_IDENTIFIER": "systemd", "_TRANSPORT": "journal",
            "_PID": 1, "_UID": 0, "_GID": 0, "_COMM": "systemd", "_EXE": "/usr/lib/systemd/systemd",
            "_CMDLINE": "/sbin/init", "_CAP_EFFECTIVE": "1ffffffffff", "_SYSTEMD_CGROUP": "/init.scope",
            "_SYSTEMD_UNIT": "init.scope", "_SYSTEMD_SLICE": "-.slice", "CODE_FILE": "src/core/job.c",
            "CODE_FUNC": "job_emit_done_message", "UNIT": UNIT, "INVOCATION_ID": run["invocation_id"],
            "MESSAGE_ID": message_id, "MESSAGE": message, **extra,
        }))  # fmt: skip

    description = f"SGLang server ({MODEL.split('/')[-1]})"
    for i, run in enumerate(runs):
        end_us = run["stop_us"] - 2_000_000 if run["stop_us"] else newest
        systemd(run["start_us"], run, f"Started {UNIT} - {description}.", "39f53479d3a045ac8e11786248231fbf",
                JOB_TYPE="start", JOB_RESULT="done")  # fmt: skip
        stream = uuid.uuid4().hex
        fields = {
            **common, "PRIORITY": 6, "SYSLOG_FACILITY": 3, "SYSLOG_IDENTIFIER": "python3", "_TRANSPORT": "stdout",
            "_STREAM_ID": stream, "_PID": run["pid"], "_UID": 0, "_GID": 0, "_COMM": "python3",
            "_EXE": os.path.realpath(python) if run["current"] else "/usr/bin/python3.12",
            "_CMDLINE": " ".join(run["argv"]),
            "_CAP_EFFECTIVE": "1ffffffffff", "_SYSTEMD_CGROUP": f"/system.slice/{UNIT}", "_SYSTEMD_UNIT": UNIT,
            "_SYSTEMD_SLICE": "system.slice", "_SYSTEMD_INVOCATION_ID": run["invocation_id"],
        }  # fmt: skip
        run["lines"] = []
        for us, line in _run_lines(run, rng, end_us):
            entries.append((us, {**fields, "MESSAGE": line}))
            run["lines"].append(line)
        if run["stop_us"]:
            stop = run["stop_us"]
            systemd(stop - 12_000_000, run, f"Stopping {UNIT} - {description}...", "de5b426a63be47a7b6ac3eaac82e2f6f",
                    JOB_TYPE="stop")  # fmt: skip
            systemd(stop - 1_000_000, run, f"{UNIT}: Deactivated successfully.", "7ad2d189f7e94e70a38c781354912448")
            systemd(stop - 990_000, run, f"Stopped {UNIT} - {description}.", "9d1aaa27d60140bd96365438aad20286",
                    JOB_TYPE="stop", JOB_RESULT="done")  # fmt: skip
            hours = (stop - run["start_us"]) // 3_600_000_000
            systemd(stop - 980_000, run, f"{UNIT}: Consumed {hours + 1}h {rng.randint(1, 59)}min "
                    f"{rng.uniform(1, 59):.3f}s CPU time.", "ae8f7b866b0347b9af31fe1c80b127c0")  # fmt: skip

    # another unit, interleaved (one line would fool a reader that forgets the unit filter)
    other = {
        **common, "PRIORITY": 6, "SYSLOG_FACILITY": 3, "SYSLOG_IDENTIFIER": "other-agent", "_TRANSPORT": "stdout",
        "_STREAM_ID": uuid.uuid4().hex, "_PID": 904, "_UID": 0, "_GID": 0, "_COMM": "other-agent",
        "_EXE": "/usr/local/bin/other-agent", "_CMDLINE": "/usr/local/bin/other-agent --interval 420",
        "_SYSTEMD_CGROUP": f"/system.slice/{OTHER_UNIT}", "_SYSTEMD_UNIT": OTHER_UNIT, "_SYSTEMD_SLICE": "system.slice",
        "_SYSTEMD_INVOCATION_ID": uuid.uuid4().hex,
    }  # fmt: skip
    t = runs[0]["start_us"] - 600_000_000
    n = 0
    while t < newest - 30_000_000:
        n += 1
        if n == 40:
            msg = "probe http://10.0.0.7:30000/server_info: max_running_requests=64, disable_piecewise_cuda_graph=False"
        else:
            msg = f"heartbeat {n}: 3 collectors ok, scrape took {rng.uniform(0.005, 0.04):.3f}s"
        entries.append((t, {**other, "MESSAGE": msg}))
        t += 420_000_000 + rng.randrange(10_000_000)
    entries.append((newest - 45_000_000, {**other, "MESSAGE": f"heartbeat {n + 1}: 3 collectors ok, scrape took 0.011s"}))

    entries.sort(key=lambda e: e[0])
    chunks = []
    for us, fields_ in entries:
        record = {"__REALTIME_TIMESTAMP": us, "__MONOTONIC_TIMESTAMP": us - boot_us, **fields_}
        lines = []
        for k, v in record.items():
            v = str(v)
            if "\n" in v:
                raise ValueError(f"journal field {k} must not contain a newline: {v!r}")
            lines.append(f"{k}={v}\n")
        chunks.append("".join(lines))
    export = root / "journal.export"
    export.write_text("\n".join(chunks) + "\n")
    journal_dir = root / "journal"
    shutil.rmtree(journal_dir, ignore_errors=True)
    journal_dir.mkdir()
    with open(export, "rb") as src:
        res = subprocess.run(
            [str(JOURNAL_REMOTE), "-o", str(journal_dir / "remote.journal"), "-"],
            stdin=src, capture_output=True, timeout=30,
        )  # fmt: skip
    if res.returncode != 0 or not (journal_dir / "remote.journal").exists():
        raise RuntimeError(f"systemd-journal-remote failed ({res.returncode}): {res.stderr.decode(errors='replace')}")
    return journal_dir, export


def _write_log_file(root: Path, runs: list[dict]) -> Path:
    log = root / "var" / "log" / "sglang" / "sglang.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("".join(line + "\n" for run in runs for line in run["lines"]))
    return log


# ---- the fake tools ---------------------------------------------------------------------------------


def _fill(text: str, root: Path) -> str:
    return (
        text.replace("@ROOT_Q@", shlex.quote(str(root)))
        .replace("@JOURNALCTL_Q@", shlex.quote(str(JOURNALCTL)))
        .replace("@JOURNAL_DIR_Q@", shlex.quote(str(root / "journal")))
    )


def _install_tools(root: Path) -> Path:
    fake = root / "fake"
    originals = fake / "originals"
    for d in (fake / "overrides", originals, fake / "nvidia-smi", fake / "systemctl" / "units"):
        d.mkdir(parents=True, exist_ok=True)
    src = DATA / "tools"
    (fake / "lib.sh").write_text(_fill((src / "lib.sh").read_text(), root))
    shutil.copy2(src / "query.awk", fake / "query.awk")
    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in FAKE_TOOLS:
        text = _fill((src / tool).read_text(), root)
        for dest in (originals / tool, bin_dir / tool):
            dest.write_text(text)
            dest.chmod(0o755)
    return bin_dir


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").decode(errors="replace").split("\0")
    except OSError:
        return []


def _process_group(pgid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid:
                    out.append(int(entry))
            except OSError:
                pass
    return sorted(out)


def _write_tool_data(
    root: Path, runs: list[dict], pid: int, child_pids: list[int], python: str, now_us: int, boot_id: str
) -> None:
    fake = root / "fake"
    # nvidia-smi
    nv = fake / "nvidia-smi"
    used = [91842, 91806, 91806, 91790]
    gpu_cols = [
        "index", "name", "compute_cap", "memory.total", "memory.used", "memory.free", "driver_version", "uuid",
        "pci.bus_id", "count", "persistence_mode", "pstate", "temperature.gpu", "utilization.gpu", "power.draw",
        "power.limit", "clocks.sm", "clocks.max.sm", "vbios_version", "serial", "mig.mode.current",
    ]  # fmt: skip
    rows = ["\t".join(gpu_cols)]
    for i in range(4):
        rows.append("\t".join(str(v) for v in [
            i, GPU_NAME, "12.0", GPU_MEMORY_MIB, used[i], GPU_MEMORY_MIB - used[i] - 239, DRIVER, GPU_UUIDS[i],
            GPU_BUS_IDS[i], 4, "Enabled", "P0", 41 + i, 87 - 3 * i, f"{412.37 - 11 * i:.2f}", "600.00",
            2617, 2617, "98.02.52.00.02", f"165242301{4187 + i}", "[N/A]",
        ]))  # fmt: skip
    (nv / "gpus.tsv").write_text("\n".join(rows) + "\n")
    apps = ["pid\tprocess_name\tgpu_uuid\tgpu_name\tgpu_bus_id\tused_memory"]
    for i, cpid in enumerate(child_pids):
        name = (_cmdline(cpid) or [python])[0]
        apps.append(f"{cpid}\t{name}\t{GPU_UUIDS[i]}\t{GPU_NAME}\t{GPU_BUS_IDS[i]}\t{used[i] - 930}")
    (nv / "apps.tsv").write_text("\n".join(apps) + "\n")
    fields = []
    for col in gpu_cols:
        unit = {"memory": "MiB", "power": "W", "clocks": "MHz", "utilization": "%"}.get(col.split(".")[0], "")
        fields.append(f"gpu\t{col}\t{col}\t{unit}")
    for alias, col in (("gpu_name", "name"), ("gpu_uuid", "uuid"), ("gpu_bus_id", "pci.bus_id"),
                       ("gpu_serial", "serial"), ("temperature.gpu", "temperature.gpu")):  # fmt: skip
        fields.append(f"gpu\t{alias}\t{col}\t")
    for alias, col, unit in (
        ("pid", "pid", ""), ("process_name", "process_name", ""), ("name", "process_name", ""),
        ("gpu_uuid", "gpu_uuid", ""), ("gpu_name", "gpu_name", ""), ("gpu_bus_id", "gpu_bus_id", ""),
        ("used_memory", "used_gpu_memory", "MiB"), ("used_gpu_memory", "used_gpu_memory", "MiB"),
    ):  # fmt: skip
        fields.append(f"apps\t{alias}\t{col}\t{unit}")
    (nv / "fields.tsv").write_text("\n".join(fields) + "\n")
    # apps.tsv's header names the column used_memory; map it
    (nv / "apps.tsv").write_text((nv / "apps.tsv").read_text().replace("\tused_memory\n", "\tused_gpu_memory\n", 1))
    (nv / "version.txt").write_text(
        f"NVIDIA-SMI version  : {DRIVER}\nNVML version        : 580.95\nDRIVER version      : {DRIVER}\n"
        "CUDA Version        : 13.0\n"
    )
    (nv / "table.txt").write_text(_nvidia_table(now_us, used, child_pids, python))

    # systemctl
    sc = fake / "systemctl"
    (sc / "version.txt").write_text(
        "systemd 252 (252.39-1~deb12u1)\n+PAM +AUDIT +SELINUX +APPARMOR +IMA +SMACK +SECCOMP +GCRYPT -GNUTLS +OPENSSL "
        "+ACL +BLKID +CURL +ELFUTILS +FIDO2 +IDN2 -IDN +IPTC +KMOD +LIBCRYPTSETUP +LIBFDISK +PCRE2 -PWQUALITY "
        "+P11KIT +QRENCODE +TPM2 +BZIP2 +LZ4 +XZ +ZLIB +ZSTD -BPF_FRAMEWORK -XKBCOMMON +UTMP +SYSVINIT "
        "default-hierarchy=unified\n"
    )
    current, previous = runs[-1], runs[-2]
    fragment = root / "etc" / "systemd" / "system" / UNIT
    fragment.parent.mkdir(parents=True, exist_ok=True)
    description = f"SGLang server ({MODEL.split('/')[-1]})"
    unit_text = "\n".join([
        "[Unit]",
        f"Description={description}",
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        "WorkingDirectory=/opt/sglang",
        "Environment=CUDA_VISIBLE_DEVICES=0,1,2,3",
        "EnvironmentFile=/etc/sglang/env",
        "ExecStart=" + " ".join(STANDIN_ARGV),
        "Restart=on-failure",
        "RestartSec=10",
        "LimitNOFILE=65535",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ])  # fmt: skip
    fragment.write_text(unit_text)
    (sc / "units" / f"{UNIT}.unit").write_text(unit_text)
    boot_us = now_us - 3 * 86400 * 1_000_000
    start_us = current["start_us"]
    ts = _systemd_ts(start_us)
    mono = start_us - boot_us
    argv = " ".join(STANDIN_ARGV)
    exec_start = (
        f"{{ path={python} ; argv[]={argv} ; ignore_errors=no ; start_time=[{ts}] ; stop_time=[n/a] ; "
        f"pid={pid} ; code=(null) ; status=0/0 }}"
    )
    exit_us = previous["stop_us"] - 12_000_000
    props = [
        ("Type", "simple"), ("ExitType", "main"), ("Restart", "on-failure"), ("NotifyAccess", "none"),
        ("RestartUSec", "10s"), ("TimeoutStartUSec", "1min 30s"), ("TimeoutStopUSec", "1min 30s"),
        ("TimeoutAbortUSec", "1min 30s"), ("TimeoutStartFailureMode", "terminate"),
        ("TimeoutStopFailureMode", "terminate"), ("RuntimeMaxUSec", "infinity"),
        ("RuntimeRandomizedExtraUSec", "0"), ("WatchdogUSec", "0"), ("WatchdogTimestampMonotonic", "0"),
        ("RootDirectoryStartOnly", "no"), ("RemainAfterExit", "no"), ("GuessMainPID", "yes"),
        ("MainPID", str(pid)), ("ControlPID", "0"), ("FileDescriptorStoreMax", "0"), ("NFileDescriptorStore", "0"),
        ("StatusErrno", "0"), ("Result", "success"), ("ReloadResult", "success"), ("CleanResult", "success"),
        ("UID", "[not set]"), ("GID", "[not set]"), ("NRestarts", "0"), ("OOMPolicy", "stop"),
        ("ReloadSignal", "1"), ("ExecMainStartTimestamp", ts), ("ExecMainStartTimestampMonotonic", str(mono)),
        ("ExecMainExitTimestampMonotonic", "0"), ("ExecMainPID", str(pid)), ("ExecMainCode", "0"),
        ("ExecMainStatus", "0"), ("ExecStart", exec_start),
        ("ExecStartEx", exec_start.replace(" ; ignore_errors=no ; ", " ; flags= ; ")),
        ("Slice", "system.slice"), ("ControlGroup", f"/system.slice/{UNIT}"), ("ControlGroupId", "4281"),
        ("MemoryCurrent", "10478632960"), ("MemoryAvailable", "infinity"), ("CPUUsageNSec", "3791204551000"),
        ("TasksCurrent", "212"), ("IPIngressBytes", "[no data]"), ("IPEgressBytes", "[no data]"),
        ("Delegate", "no"), ("CPUAccounting", "yes"), ("MemoryAccounting", "yes"), ("TasksAccounting", "yes"),
        ("TasksMax", "618543"), ("Environment", "CUDA_VISIBLE_DEVICES=0,1,2,3"),
        ("EnvironmentFiles", "/etc/sglang/env (ignore_errors=no)"), ("UMask", "0022"),
        ("LimitNOFILE", "65535"), ("LimitNOFILESoft", "65535"), ("WorkingDirectory", "/opt/sglang"),
        ("OOMScoreAdjust", "0"), ("Nice", "0"), ("StandardInput", "null"), ("StandardOutput", "journal"),
        ("StandardError", "inherit"), ("SyslogFacility", "3"), ("SyslogLevel", "6"), ("KillMode", "control-group"),
        ("KillSignal", "15"), ("FinalKillSignal", "9"), ("SendSIGKILL", "yes"), ("SendSIGHUP", "no"),
        ("Id", UNIT), ("Names", UNIT), ("Requires", "system.slice sysinit.target"),
        ("Wants", "network-online.target"), ("WantedBy", "multi-user.target"), ("Conflicts", "shutdown.target"),
        ("Before", "multi-user.target shutdown.target"),
        ("After", "systemd-journald.socket basic.target system.slice network-online.target sysinit.target"),
        ("Documentation", ""), ("Description", description), ("LoadState", "loaded"), ("ActiveState", "active"),
        ("FreezerState", "running"), ("SubState", "running"), ("FragmentPath", str(fragment)),
        ("UnitFileState", "enabled"), ("UnitFilePreset", "enabled"), ("StateChangeTimestamp", ts),
        ("StateChangeTimestampMonotonic", str(mono)), ("InactiveExitTimestamp", ts),
        ("InactiveExitTimestampMonotonic", str(mono)), ("ActiveEnterTimestamp", ts),
        ("ActiveEnterTimestampMonotonic", str(mono)), ("ActiveExitTimestamp", _systemd_ts(exit_us)),
        ("ActiveExitTimestampMonotonic", str(exit_us - boot_us)),
        ("InactiveEnterTimestamp", _systemd_ts(previous["stop_us"] - 990_000)),
        ("InactiveEnterTimestampMonotonic", str(previous["stop_us"] - 990_000 - boot_us)),
        ("CanStart", "yes"), ("CanStop", "yes"), ("CanReload", "no"), ("CanIsolate", "no"), ("CanFreeze", "yes"),
        ("StopWhenUnneeded", "no"), ("RefuseManualStart", "no"), ("RefuseManualStop", "no"),
        ("AllowIsolate", "no"), ("DefaultDependencies", "yes"), ("OnSuccessJobMode", "fail"),
        ("OnFailureJobMode", "replace"), ("IgnoreOnIsolate", "no"), ("NeedDaemonReload", "no"),
        ("JobTimeoutUSec", "infinity"), ("JobRunningTimeoutUSec", "infinity"), ("JobTimeoutAction", "none"),
        ("ConditionResult", "yes"), ("AssertResult", "yes"), ("ConditionTimestamp", ts),
        ("ConditionTimestampMonotonic", str(mono)), ("AssertTimestamp", ts), ("AssertTimestampMonotonic", str(mono)),
        ("Transient", "no"), ("Perpetual", "no"), ("StartLimitIntervalUSec", "10s"), ("StartLimitBurst", "5"),
        ("StartLimitAction", "none"), ("FailureAction", "none"), ("SuccessAction", "none"),
        ("InvocationID", current["invocation_id"]), ("CollectMode", "inactive"),
    ]  # fmt: skip
    text = "".join(f"{k}={v}\n" for k, v in props)
    (sc / "units" / f"{UNIT}.props").write_text(text)
    (sc / "units" / f"{UNIT}.props.orig").write_text(text)
    (sc / "units" / f"{UNIT}.since").write_text(f"{start_us // 1_000_000}\n")
    notfound = [
        ("Type", "simple"), ("Restart", "no"), ("MainPID", "0"), ("ControlPID", "0"), ("Result", "success"),
        ("ExecMainStartTimestamp", ""), ("ExecMainStartTimestampMonotonic", "0"), ("ExecMainPID", "0"),
        ("ExecMainCode", "0"), ("ExecMainStatus", "0"), ("ExecStart", ""), ("ExecStartEx", ""), ("Slice", ""),
        ("ControlGroup", ""), ("Environment", ""), ("EnvironmentFiles", ""), ("WorkingDirectory", ""),
        ("Id", "@UNIT@"), ("Names", "@UNIT@"), ("Description", "@UNIT@"), ("LoadState", "not-found"),
        ("ActiveState", "inactive"), ("FreezerState", "running"), ("SubState", "dead"), ("FragmentPath", ""),
        ("UnitFileState", ""), ("StateChangeTimestamp", ""), ("StateChangeTimestampMonotonic", "0"),
        ("InactiveExitTimestamp", ""), ("InactiveExitTimestampMonotonic", "0"), ("ActiveEnterTimestamp", ""),
        ("ActiveEnterTimestampMonotonic", "0"), ("ActiveExitTimestamp", ""), ("ActiveExitTimestampMonotonic", "0"),
        ("InactiveEnterTimestamp", ""), ("InactiveEnterTimestampMonotonic", "0"), ("CanStart", "no"),
        ("CanStop", "yes"), ("InvocationID", ""), ("CollectMode", "inactive"),
    ]  # fmt: skip
    (sc / "notfound.props").write_text("".join(f"{k}={v}\n" for k, v in notfound))
    group = _process_group(pid)
    tree = [f"{p} {' '.join(_cmdline(p))}" for p in group if _cmdline(p)]
    status = [
        f"\u25cf {UNIT} - {description}",
        f"     Loaded: loaded ({fragment}; enabled; preset: enabled)",
        f"     Active: active (running) since {ts}; @AGO@",
        f"   Main PID: {pid} (python3)",
        "      Tasks: 212 (limit: 618543)",
        "     Memory: 9.7G",
        "        CPU: 1h 3min 11.204s",
        f"     CGroup: /system.slice/{UNIT}",
    ]
    for k, line in enumerate(tree):
        status.append(f"             {'└─' if k == len(tree) - 1 else '├─'}{line}")
    (sc / "units" / f"{UNIT}.status").write_text("\n".join(status) + "\n")


def _nvidia_table(now_us: int, used: list[int], child_pids: list[int], python: str) -> str:
    stamp = time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(now_us / 1e6))
    sep = "+-----------------------------------------+------------------------+----------------------+"
    lines = [
        stamp,
        "+-----------------------------------------------------------------------------------------+",
        f"| NVIDIA-SMI {DRIVER}              Driver Version: {DRIVER}      CUDA Version: 13.0     |",
        sep,
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        sep.replace("-", "="),
    ]
    for i in range(4):
        lines += [
            f"|   {i}  NVIDIA RTX PRO 6000 Blac...    On  |   {GPU_BUS_IDS[i]} Off |                  Off |",
            f"| 30%   {41 + i}C    P0            {412 - 11 * i}W /  600W |  {used[i]:>5}MiB /  {GPU_MEMORY_MIB}MiB |"
            f"     {87 - 3 * i:>2}%      Default |",
            "|                                         |                        |                  N/A |",
            sep,
        ]
    lines += [
        "",
        "+-----------------------------------------------------------------------------------------+",
        "| Processes:                                                                              |",
        "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|=========================================================================================|",
    ]
    for i, cpid in enumerate(child_pids):
        name = (_cmdline(cpid) or [python])[0][-34:]
        lines.append(f"|    {i}   N/A  N/A          {cpid:>7}      C   {name:<34}  {used[i] - 930:>6}MiB |")
    lines.append("+-----------------------------------------------------------------------------------------+")
    return "\n".join(lines) + "\n"
