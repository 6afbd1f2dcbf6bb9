"""Shell access to the host a target runs on: one small surface, one module per transport.

Every command is a POSIX ``sh`` script whose values are quoted (:func:`command` for an argv,
``host.assignments`` for the collection script's variables), run read-only and bounded in time:
at the timeout the whole process tree is killed (:func:`bounded_command` on an SSH host).
Transports: :mod:`.local` (the test machine) and :mod:`.ssh` (paramiko).
"""

from __future__ import annotations

import math
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


# Runs the script ($1) so that the host itself ends it after $2 seconds, whatever happens to the
# connection: closing an SSH channel does not stop a remote command that has no terminal.
# GNU (or a recent busybox) ``timeout`` signals its whole process group: the script and every
# process it started. Without it, a watchdog kills the process group of the session (sshd gives
# each command a session of its own); when the script ends first, the watchdog and its sleep go.
BOUNDED = """\
if timeout -k 1 1 true >/dev/null 2>&1; then exec timeout -k 2 "$2" sh -c "$1"; fi
(
  trap 'kill "$s" 2>/dev/null; exit 0' TERM
  sleep "$2" & s=$!
  wait "$s" && kill -KILL 0
) </dev/null >/dev/null 2>&1 &
w=$!
sh -c "$1"
status=$?
kill "$w" 2>/dev/null
exit "$status"
"""


def bounded_command(script: str, seconds: float) -> str:
    """The command line that runs ``script`` with ``sh`` and kills it, and everything it
    started, after ``seconds`` (rounded up to whole seconds) on the host itself."""
    return command("sh", "-c", BOUNDED, "sh", script, str(max(1, math.ceil(seconds))))


def command(*argv: str) -> str:
    """A command line with every argument quoted: ``command("cat", path)``. A unit named
    ``x; rm -rf /`` stays one harmless argument."""
    return " ".join(shlex.quote(str(a)) for a in argv)
