"""Options for opening a target: a plain record, cheap to import (no HTTP or SSH stack)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .errors import SpecError

# Longer than any run should wait, and short enough for every socket and clock API.
MAX_SECONDS = 86_400.0


@dataclass(frozen=True)
class TargetOptions:
    api_key: str | None = field(default=None, repr=False)  # never shown; see pytest_sglang.secrets
    timeout: float = 10.0
    wait_ready: float = 0.0
    sm: int | None = None
    # host access
    ssh: str | None = None  # user@host[:port], an ~/.ssh/config alias, or "local"
    ssh_key: str | None = None
    ssh_insecure: bool = False
    ssh_known_hosts: str | None = None
    ssh_config: str | None = None
    unit: str | None = None
    logs: str | None = None
    command_timeout: float = 30.0

    def __post_init__(self) -> None:
        from .secrets import Secret, register

        if self.api_key is not None and not isinstance(self.api_key, Secret):
            register(self.api_key)
            object.__setattr__(self, "api_key", Secret(self.api_key))

    def validate(self) -> None:
        """Check what can be checked before any host is contacted: numbers in range, the api
        key sendable, the files named for SSH present and of the right kind. One-line
        :class:`SpecError` otherwise."""
        from .secrets import checked_api_key

        for name, value in (("timeout", self.timeout), ("wait_ready", self.wait_ready), ("command_timeout", self.command_timeout)):
            if not 0 <= value <= MAX_SECONDS:
                raise SpecError(f"--sglang-{name.replace('_', '-')} must be at most {MAX_SECONDS:g} seconds (one day)")
        checked_api_key(self.api_key, "--sglang-api-key")
        if self.ssh_key:
            path = Path(self.ssh_key).expanduser()
            if not path.is_file():
                raise SpecError(f"--sglang-ssh-key {self.ssh_key}: no such file")
            from .shell.ssh import _check_private_key

            _check_private_key(path, f"--sglang-ssh-key {self.ssh_key}")
        for option, named in (("--sglang-ssh-known-hosts", self.ssh_known_hosts), ("--sglang-ssh-config", self.ssh_config)):
            if named:
                file = Path(named).expanduser()
                if file.is_dir():
                    raise SpecError(f"{option} {named} is a directory: give the file")
                if not file.is_file():
                    raise SpecError(f"{option} {named}: no such file")
