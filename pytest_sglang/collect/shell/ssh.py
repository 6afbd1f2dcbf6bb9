"""SSH with paramiko: ~/.ssh/config (HostName, User, Port, IdentityFile, ProxyJump), the
ssh agent, host keys verified against known_hosts unless the user opts out, connect and
per-command timeouts, and one connection per host reused for every command."""

from __future__ import annotations

import base64
import hashlib
import os
import select
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_sglang.base.errors import SpecError, TargetError
from pytest_sglang.base.secrets import clip
from pytest_sglang.base.settings import setting
from pytest_sglang.collect.shell import CommandResult, bounded_command

DEFAULT_CONFIG = Path("~/.ssh/config")
DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts")
_GRACE = 5.0  # seconds past the timeout to wait for the host's own kill (see SSHShell.run)


def fingerprint(key: Any) -> str:
    """``SHA256:...`` as ``ssh-keygen -lf`` prints it."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode().rstrip("=")


@dataclass(frozen=True)
class Destination:
    """``user@host[:port]`` (``[::1]:22`` for IPv6), or a Host alias of ~/.ssh/config."""

    host: str
    user: str | None = None
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> Destination:
        raw = text.strip()
        if not raw or any(c.isspace() for c in raw):
            raise SpecError(f"{setting('ssh')} {text!r}: write user@host or user@host:port")
        user, at, rest = raw.rpartition("@")
        if at and not user:
            raise SpecError(f"{setting('ssh')} {text!r} has an empty user name before '@': write user@host, or just host")
        port: int | None = None
        if rest.startswith("["):
            host, _, tail = rest[1:].partition("]")
            if tail.startswith(":"):
                port = _port(tail[1:], text)
        elif rest.count(":") == 1:
            host, _, port_text = rest.partition(":")
            port = _port(port_text, text)
        else:
            host = rest
        if not host:
            raise SpecError(f"{setting('ssh')} {text!r} has no host name")
        return cls(host=host, user=user or None, port=port)

    def __str__(self) -> str:
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{user}{self.host}{port}"


def _port(text: str, spec: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) < 65536:
        raise SpecError(f"{setting('ssh')} {spec!r}: the port must be a number in 1-65535")
    return int(text)


class SSHShell:
    """One SSH connection to a host, opened on first use and kept for the session."""

    def __init__(
        self,
        destination: Destination | str,
        *,
        key_filename: str | None = None,
        insecure: bool = False,
        connect_timeout: float = 10.0,
        config_path: Path | str | None = None,
        known_hosts: Path | str | None = None,
        _via: SSHShell | None = None,
    ) -> None:
        self.destination = Destination.parse(destination) if isinstance(destination, str) else destination
        self.key_filename = key_filename
        self.insecure = insecure
        self.connect_timeout = connect_timeout
        self.config_path = Path(config_path).expanduser() if config_path else DEFAULT_CONFIG.expanduser()
        self.known_hosts = Path(known_hosts).expanduser() if known_hosts else DEFAULT_KNOWN_HOSTS.expanduser()
        self.round_trips = 0
        self._client: Any = None
        self._jump: SSHShell | None = _via
        self.resolved = self._resolve()
        self.name = f"ssh://{self.resolved.user + '@' if self.resolved.user else ''}{self.resolved.host}:{self.resolved.port}"

    # ---- configuration ------------------------------------------------------------------
    def _resolve(self) -> Destination:
        cfg = self._config()
        user = self.destination.user or cfg.get("user") or os.environ.get("USER") or "root"
        port = self.destination.port or int(cfg.get("port", 22))
        return Destination(host=cfg.get("hostname", self.destination.host), user=user, port=port)

    def _config(self) -> dict[str, Any]:
        import paramiko

        if not self.config_path.is_file():
            return {}
        try:
            return dict(paramiko.SSHConfig.from_path(str(self.config_path)).lookup(self.destination.host))
        except Exception as exc:  # a config paramiko cannot read
            raise SpecError(f"cannot read SSH config {self.config_path}: {' '.join(str(exc).split())}") from None

    def _identity_files(self) -> list[str] | None:
        if self.key_filename:
            path = Path(self.key_filename).expanduser()
            check_private_key(path, f"{setting('ssh_key')} {self.key_filename}")
            return [str(path)]
        files = [str(Path(f).expanduser()) for f in self._config().get("identityfile", [])]
        found = [f for f in files if Path(f).is_file()]
        for f in found:
            check_private_key(Path(f), f"IdentityFile {f} (from {self.config_path})")
        return found or None

    # ---- connecting ------------------------------------------------------------------------
    def connect(self) -> Any:
        if self._client is not None:
            return self._client
        import paramiko

        dest = self.resolved
        client = paramiko.SSHClient()
        if self.known_hosts.is_file():
            client.load_system_host_keys(str(self.known_hosts))
        # _RejectUnknown has MissingHostKeyPolicy's one method; paramiko is imported lazily.
        policy: Any = paramiko.AutoAddPolicy() if self.insecure else _RejectUnknown(self)
        client.set_missing_host_key_policy(policy)
        sock = self._proxy_sock()
        try:
            client.connect(
                dest.host,
                port=dest.port or 22,
                username=dest.user,
                key_filename=self._identity_files(),  # type: ignore[arg-type]  # paramiko takes a list too
                timeout=self.connect_timeout,
                banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout,
                allow_agent=True,
                look_for_keys=self.key_filename is None,
                sock=sock,
            )
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise TargetError(
                f"the SSH host key of {dest.host}:{dest.port} has CHANGED: known_hosts has {fingerprint(exc.expected_key)}, "
                f"the host offers {fingerprint(exc.key)}; if the host was reinstalled, run ssh-keygen -R '[{dest.host}]:{dest.port}' "
                "(a changed key can also mean someone is in the middle)"
            ) from None
        except _UnknownHost as exc:
            client.close()
            raise TargetError(str(exc)) from None
        except paramiko.PasswordRequiredException:
            client.close()
            raise TargetError(f"the SSH key for {self} is encrypted: load it into ssh-agent (ssh-add) and run again") from None
        except paramiko.AuthenticationException:
            client.close()
            keys = f" with {self.key_filename}" if self.key_filename else ""
            raise TargetError(
                f"SSH login to {dest.user}@{dest.host}:{dest.port}{keys} was refused: the key is not authorized there "
                f"(give {setting('ssh_key')}, or add the key to ssh-agent)"
            ) from None
        except (socket.timeout, TimeoutError):
            client.close()
            raise TargetError(f"SSH connection to {dest.host}:{dest.port} timed out after {self.connect_timeout:g}s") from None
        except socket.gaierror:
            client.close()
            raise TargetError(f"cannot resolve the SSH host name {dest.host!r}: check {setting('ssh')}") from None
        except paramiko.ssh_exception.NoValidConnectionsError:
            client.close()
            raise TargetError(f"cannot connect to {dest.host}:{dest.port} over SSH (connection refused): is sshd running, and is the port right?") from None
        except (paramiko.SSHException, OSError) as exc:
            client.close()
            raise TargetError(f"SSH to {dest.host}:{dest.port} failed: {clip(str(exc), 160)} (is it an SSH server?)") from None
        transport = client.get_transport()
        if transport is not None:
            transport.set_keepalive(30)
        self._client = client
        return client

    def _proxy_sock(self) -> Any:
        jump = self._config().get("proxyjump")
        if not jump or jump.lower() == "none":
            return None
        first, _, rest = jump.partition(",")
        if self._jump is None:
            self._jump = SSHShell(first, insecure=self.insecure, connect_timeout=self.connect_timeout, config_path=self.config_path, known_hosts=self.known_hosts)
        transport = self._jump.connect().get_transport()
        dest = self.resolved
        try:
            return transport.open_channel("direct-tcpip", (dest.host, dest.port or 22), ("127.0.0.1", 0), timeout=self.connect_timeout)
        except Exception as exc:
            raise TargetError(f"the ProxyJump host {first} could not reach {dest.host}:{dest.port}: {clip(str(exc), 120)}") from None

    # ---- commands ------------------------------------------------------------------------
    def run(self, script: str, *, timeout: float) -> CommandResult:
        """Run a POSIX sh script; the whole of it, output included, within ``timeout``.

        The host ends the script itself at ``timeout`` (see :func:`bounded_command`): closing
        the channel alone would leave a hung command running there."""
        client = self.connect()
        self.round_trips += 1
        transport = client.get_transport()
        channel = transport.open_session(timeout=self.connect_timeout)
        started = time.monotonic()
        # Always through sh, whatever the login shell of the remote user is.
        channel.exec_command(bounded_command(script, timeout))
        out, err = bytearray(), bytearray()
        # The host's own kill comes first; the grace covers its kill-after and the way back.
        deadline = started + timeout + _GRACE
        try:
            while True:
                while channel.recv_ready():
                    out += channel.recv(1 << 16)
                while channel.recv_stderr_ready():
                    err += channel.recv_stderr(1 << 16)
                if channel.exit_status_ready() and not channel.recv_ready() and not channel.recv_stderr_ready():
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._timed_out(timeout)
                select.select([channel], [], [], min(remaining, 1.0))
            status = channel.recv_exit_status()
        finally:
            channel.close()
        if time.monotonic() - started >= timeout:  # ended by the host's kill, or just too late
            raise self._timed_out(timeout)
        return CommandResult(status, out.decode(errors="replace"), err.decode(errors="replace"))

    def _timed_out(self, timeout: float) -> TargetError:
        return TargetError(f"a command on {self.resolved.host} did not finish within {timeout:g}s ({setting('command_timeout')})")

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._jump is not None:
            self._jump.close()

    def __str__(self) -> str:
        return str(self.destination)


class _UnknownHost(Exception):
    pass


# A private key is some KiB (an RSA key of 16384 bits, about 12 KiB).
KEY_CAP_BYTES = 1024 * 1024


def check_private_key(path: Path, named: str) -> None:
    """A key file paramiko cannot read is the user's to fix: say so before connecting. A path
    that is missing, not a regular file (a FIFO, a device) or over :data:`KEY_CAP_BYTES` is
    refused before paramiko opens it."""
    import paramiko

    from pytest_sglang.base.files import FileError, MissingFileError, read_bytes

    # Through pytest_sglang.base.files first: paramiko would block on a FIFO and read /dev/zero
    # forever; a regular file of at most KEY_CAP_BYTES only, refused in one line naming it.
    try:
        head = read_bytes(path, cap_bytes=KEY_CAP_BYTES, what=named)[:4]
    except MissingFileError:
        raise SpecError(f"{named}: no such file") from None
    except FileError as exc:
        said = str(exc)
        raise SpecError(said if said.endswith("?") else f"{said}: give the SSH private key file") from None
    try:
        paramiko.PKey.from_path(str(path))
    except (paramiko.PasswordRequiredException, TypeError):
        # Encrypted (cryptography raises TypeError for a passphrase-protected OpenSSH key): the
        # agent may hold it, and connect() says what to do if not.
        return
    except (paramiko.SSHException, ValueError, OSError):
        if head in (b"ssh-", b"ecds"):
            raise SpecError(f"{named} is a public key: give the private one (without .pub)") from None
        raise SpecError(f"{named} is not a private key (an OpenSSH or PEM private key file is expected)") from None


class _RejectUnknown:
    """Refuse a host key not in known_hosts, naming host and fingerprint."""

    def __init__(self, shell: SSHShell) -> None:
        self.shell = shell

    def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
        known = self.shell.known_hosts
        missing = "" if known.is_file() else (" (a directory, not a file)" if known.is_dir() else " (no such file)")
        raise _UnknownHost(
            f"the SSH host key of {hostname} ({key.get_name()} {fingerprint(key)}) is not in {known}{missing}: "
            f"check the fingerprint and add it (ssh-keyscan -p {self.shell.resolved.port} {self.shell.resolved.host} >> ~/.ssh/known_hosts), "
            f"or pass {setting('ssh_insecure')} to skip the check"
        )
