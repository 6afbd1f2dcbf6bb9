"""Options for opening a target: a plain record, cheap to import (no HTTP or SSH stack)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_sglang.base.errors import SpecError

# Longer than any run should wait, and short enough for every socket and clock API.
MAX_SECONDS = 86_400.0


class NumberProblem(ValueError):
    """Why a value is not the number a setting takes, phrased to follow the setting's name
    (``must be more than 0 seconds, not '-1'``): the caller puts the name in front, as its
    own error (a pytest usage error, an argparse error, a :class:`SpecError`)."""


def checked_number(value: Any, *, unit: str = "seconds", zero: bool = False, whole: bool = False, maximum: float | None = None) -> Any:
    """``value`` (a number or its text) as a finite number above 0 (or 0 too, with ``zero``),
    a whole one with ``whole`` (an ``int`` then), at most ``maximum``: the one check of a
    number setting, for pytest's options, the command line and the library alike. Raises
    :class:`NumberProblem` otherwise: ``nan``, ``inf``, ``-1`` and ``0`` each say what is
    accepted."""
    kind = "a whole number" if whole else "a number"
    what = f"{kind} of {unit}" if unit else kind
    shown = repr(str(value))
    try:
        parsed = float(value)
    except (TypeError, ValueError, OverflowError):
        raise NumberProblem(f"must be {what}, not {shown}") from None
    if not math.isfinite(parsed):
        raise NumberProblem(f"must be a finite {what.removeprefix('a ')}, not {shown}")
    if whole and not parsed.is_integer():
        raise NumberProblem(f"must be {what}, not {shown}")
    if parsed < 0 or (parsed == 0 and not zero):
        bound = "0 or more" if zero else "more than 0"
        raise NumberProblem(f"must be {bound}{' ' + unit if unit else ''}, not {shown}")
    if maximum is not None and parsed > maximum:
        day = " (one day)" if maximum == MAX_SECONDS and unit == "seconds" else ""
        raise NumberProblem(f"must be at most {maximum:g} {unit}{day}, not {shown}")
    return int(parsed) if whole else parsed


@dataclass(frozen=True)
class TargetOptions:
    api_key: str | None = field(default=None, repr=False)  # never shown; see pytest_sglang.base.secrets
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
        from pytest_sglang.base.secrets import Secret, register

        if self.api_key is not None and not isinstance(self.api_key, Secret):
            register(self.api_key)
            object.__setattr__(self, "api_key", Secret(self.api_key))

    def validate(self) -> None:
        """Check what can be checked before any host is contacted: numbers in range, the api
        key sendable, the files named for SSH present and of the right kind. One-line
        :class:`SpecError` otherwise."""
        from pytest_sglang.collect.http import checked_api_key

        for name, value in (("timeout", self.timeout), ("wait_ready", self.wait_ready), ("command_timeout", self.command_timeout)):
            try:
                checked_number(value, zero=name == "wait_ready", maximum=MAX_SECONDS)
            except NumberProblem as exc:
                raise SpecError(f"--sglang-{name.replace('_', '-')} {exc}") from None
        checked_api_key(self.api_key, "--sglang-api-key")
        if self.ssh_key:
            path = Path(self.ssh_key).expanduser()
            from pytest_sglang.collect.shell.ssh import _check_private_key

            _check_private_key(path, f"--sglang-ssh-key {self.ssh_key}")
        for option, named in (("--sglang-ssh-known-hosts", self.ssh_known_hosts), ("--sglang-ssh-config", self.ssh_config)):
            if named:
                file = Path(named).expanduser()
                if named.strip() == "-":
                    raise SpecError(f"{option} -: give the file (standard input is not read)")
                if file.is_dir():
                    raise SpecError(f"{option} {named} is a directory: give the file")
                if not file.exists():
                    raise SpecError(f"{option} {named}: no such file")
                if not file.is_file():  # a FIFO would block paramiko's read, a device feed it forever
                    from pytest_sglang.base.files import kind_of

                    raise SpecError(f"{option} {named} is not a regular file ({kind_of(file.stat().st_mode)}): give the file")
