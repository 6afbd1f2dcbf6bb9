"""Shell access to the host a target runs on: one small surface, one module per transport.

Every command is a POSIX ``sh`` script built with :func:`command` (every argument quoted),
run read-only. Transports: :mod:`.local` (the test machine) and :mod:`.ssh` (paramiko).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class CommandResult:
    exit_status: int
    stdout: str
    stderr: str


class Shell(Protocol):
    """What host collection needs from a transport."""

    name: str
    round_trips: int

    def run(self, script: str, *, timeout: float) -> CommandResult: ...

    def close(self) -> None: ...


def command(*argv: str) -> str:
    """A command line with every argument quoted: ``command("cat", path)``. A unit named
    ``x; rm -rf /`` stays one harmless argument."""
    return " ".join(shlex.quote(str(a)) for a in argv)
