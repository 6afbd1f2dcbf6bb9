"""The test machine itself, for SGLang running next to pytest."""

from __future__ import annotations

import subprocess

from ..errors import TargetError
from . import CommandResult


class LocalShell:
    name = "local"

    def __init__(self) -> None:
        self.round_trips = 0

    def run(self, script: str, *, timeout: float) -> CommandResult:
        self.round_trips += 1
        try:
            done = subprocess.run(["sh", "-c", script], capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise TargetError(f"a command on the local host did not finish within {timeout:g}s (--sglang-command-timeout)") from None
        return CommandResult(done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))

    def close(self) -> None:
        pass
