"""How the library names a setting in what it tells the user, and how a front end turns that
name into its own option.

Below the front ends, an error, a skip reason or a warning names a setting by its name in the
library (the keyword of :func:`~pytest_sglang.target.target.connect`, a field of
``TargetOptions``), between backquotes: ``give `ssh` USER@HOST``. A script calling ``connect``
reads it as the keyword it passes. Each front end rewrites those names with its one mapping
(the plugin's ``--sglang-ssh``, the command line's ``--ssh``), through :func:`spoken`, so a
message never tells a user of one front end to give the other's flag.
"""

from __future__ import annotations

import re
from typing import Mapping

# Every setting a message below the front ends may name; each front end maps all of them
# (a test holds the mappings to this set).
SETTINGS = frozenset(
    {
        "host",
        "api_key",
        "timeout",
        "wait_ready",
        "sm",
        "ssh",
        "ssh_key",
        "ssh_insecure",
        "ssh_known_hosts",
        "ssh_config",
        "unit",
        "logs",
        "command_timeout",
    }
)

_NAMED = re.compile(r"`([a-z_]+)`")


def setting(name: str) -> str:
    """How a message names the setting ``name`` (one of :data:`SETTINGS`)."""
    if name not in SETTINGS:
        raise ValueError(f"{name!r} is not a setting a message may name")
    return f"`{name}`"


def spoken(text: str, flags: Mapping[str, str]) -> str:
    """``text`` with each setting it names replaced by its option in ``flags`` (a front
    end's mapping); backquoted words that are not settings stay as they are."""
    return _NAMED.sub(lambda m: flags.get(m[1], m[0]) if m[1] in SETTINGS else m[0], text)
