"""Options for opening a target: a plain record, cheap to import (no HTTP or SSH stack)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TargetOptions:
    api_key: str | None = None
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
