"""One way to read a pytest-sglang setting, for the core plugin and every capability's own.

A setting is read from its command-line option, then its environment variable (where it has
one), then its ini key; the first that is given wins. Numbers are checked here, once: a value
that is not a finite number in range is a one-line usage error that names where it came from
(``--sglang-timeout``, ``SGLANG_...`` or ``ini sglang_timeout``) and what to give instead.
Every option with an ini twin defaults to None, so "not given" is never mistaken for a value.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from pytest_sglang.base import settings as _settings
from pytest_sglang.base.errors import SGLangError
from pytest_sglang.target.options import NumberProblem, checked_number

# The option of each setting the library's messages name (pytest_sglang.base.settings); the
# ini key is the option's name with underscores (sglang_ssh_key).
FLAGS = {name: "--sglang-" + name.replace("_", "-") for name in _settings.SETTINGS}


def spoken(text: str) -> str:
    """A library message with the settings it names given as this plugin's options."""
    return _settings.spoken(text, FLAGS)


def spoken_error(exc: SGLangError) -> SGLangError:
    """The same error, its message naming this plugin's options."""
    text = spoken(str(exc))
    if text == str(exc):
        return exc
    try:
        return type(exc)(text)
    except TypeError:  # a subclass that takes more than the message
        return exc


def _given(config: pytest.Config, name: str, env: str | None = None) -> tuple[Any, str]:
    """The value and where it came from; (None, option) when the setting is not given."""
    option = "--" + name.replace("_", "-")
    value = config.getoption(name)
    if value is not None:
        return value, option
    if env and os.environ.get(env):
        return os.environ[env], env
    text = config.getini(name)
    if isinstance(text, str):
        text = text.strip()
    return (text or None), (f"ini {name}" if text else option)


def setting(config: pytest.Config, name: str, env: str | None = None) -> Any:
    """The setting's value (option, then environment, then ini), or None when none is given."""
    return _given(config, name, env)[0]


def from_ini(config: pytest.Config, name: str, env: str | None = None) -> bool:
    """Whether the setting's value is the ini file's (no option or environment variable gives it)."""
    return _given(config, name, env)[1] == f"ini {name}"


def flag(config: pytest.Config, name: str) -> bool:
    """A switch such as ``--sglang-lint`` or ini ``sglang_lint = true``."""
    return bool(setting(config, name))


def number(
    config: pytest.Config,
    name: str,
    *,
    default: float | None = None,
    unit: str = "seconds",
    zero: bool = False,
    whole: bool = False,
    env: str | None = None,
) -> Any:
    """A finite number above 0 (or 0 too, with ``zero``), a whole one with ``whole``; the
    default when the setting is not given. The check is :func:`~pytest_sglang.target.options.checked_number`,
    the command line's too."""
    value, source = _given(config, name, env)
    if value is None:
        return default
    try:
        return checked_number(value, unit=unit, zero=zero, whole=whole)
    except NumberProblem as exc:
        raise pytest.UsageError(f"{source} {exc}") from None


def lines(config: pytest.Config, name: str) -> list[str]:
    """An ini key of one entry per line (``sglang_explain_accept``, a policy, a key mapping):
    its lines without blanks and ``#`` comments, stripped."""
    value = config.getini(name)
    raw = value if isinstance(value, list) else str(value or "").splitlines()
    return [line.strip() for line in raw if line.strip() and not line.strip().startswith("#")]
