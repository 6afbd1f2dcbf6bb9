"""The test machine itself, for SGLang running next to pytest."""

from __future__ import annotations

import os
import signal
import subprocess

from pytest_sglang.base.errors import TargetError
from pytest_sglang.base.settings import setting
from pytest_sglang.collect.shell import CommandResult


class LocalShell:
    name = "local"

    def __init__(self) -> None:
        self.round_trips = 0

    def run(self, script: str, *, timeout: float) -> CommandResult:
        """Run a POSIX sh script in a session of its own; at ``timeout`` the whole process group
        (sh and everything it started: a hung ``journalctl``, a ``cmd:`` log source) is killed."""
        self.round_trips += 1
        proc = subprocess.Popen(
            ["sh", "-c", script],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise TargetError(f"a command on the local host did not finish within {timeout:g}s ({setting('command_timeout')})") from None
        except BaseException:  # KeyboardInterrupt: leave nothing running either
            _kill_group(proc)
            raise
        finally:
            # A child that left the group may still hold the pipes: they are not waited for.
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        return CommandResult(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))

    def close(self) -> None:
        pass


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the group's id is sh's pid (start_new_session)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
