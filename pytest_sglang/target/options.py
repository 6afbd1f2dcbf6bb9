"""Options for opening a target: a plain record, cheap to import (no HTTP or SSH stack)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.secrets import Secret, register
from pytest_sglang.base.settings import setting

if TYPE_CHECKING:
    from pytest_sglang.target.spec import HostSpec

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
        object.__setattr__(self, "api_key", secret_key(self.api_key))

    def validate(self) -> None:
        """Check what can be checked before any host is contacted: numbers in range, the api
        key sendable, the files named for SSH present and of the right kind. One-line
        :class:`SpecError` otherwise."""
        from pytest_sglang.collect.http import checked_api_key

        for name, value in (("timeout", self.timeout), ("wait_ready", self.wait_ready), ("command_timeout", self.command_timeout)):
            try:
                checked_number(value, zero=name == "wait_ready", maximum=MAX_SECONDS)
            except NumberProblem as exc:
                raise SpecError(f"{setting(name)} {exc}") from None
        checked_api_key(self.api_key, setting("api_key"))
        if self.ssh_key:
            path = Path(self.ssh_key).expanduser()
            from pytest_sglang.collect.shell.ssh import check_private_key

            check_private_key(path, f"{setting('ssh_key')} {self.ssh_key}")
        for name, named in (("ssh_known_hosts", self.ssh_known_hosts), ("ssh_config", self.ssh_config)):
            option = setting(name)
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


# The environment variable both front ends read the api key from (the CLI's --api-key-env
# names another).
API_KEY_ENV = "SGLANG_API_KEY"


def secret_key(value: str | None) -> Secret | None:
    """An api key made a secret: the one place a key a run sends is registered with the
    scrubber (:class:`TargetOptions` passes every key through here, and so does
    :func:`api_key_for`), so no later output shows it."""
    if value is None or isinstance(value, Secret):
        return value
    register(value)
    return Secret(value)


def resolve_api_key(option: str | None = None, *, env: str = API_KEY_ENV, ini: str | None = None) -> Secret | None:
    """The api key a run sends, from the first of these that is given: the option (pytest's
    ``--sglang-api-key``), the environment variable ``env`` (``SGLANG_API_KEY``, or the one the
    command line's ``--api-key-env`` names), the ini key (``sglang_api_key``). The order is
    docs/options.md's; both front ends resolve the key here, once."""
    if option is not None:
        return secret_key(option)
    if os.environ.get(env):
        return secret_key(os.environ[env])
    return secret_key(ini.strip()) if ini and ini.strip() else None


def api_key_for(spec: HostSpec, options: TargetOptions) -> str | None:
    """The api key a source sends to ``spec``: the variable its ``?api_key_env=VAR`` names,
    else the options' (:func:`resolve_api_key`)."""
    var = spec.options.get("api_key_env")
    if var:
        value = os.environ.get(var)
        if not value:
            raise SpecError(f"{spec.display}: ?api_key_env={var} names an environment variable that is not set")
        return secret_key(value)
    return options.api_key
