"""Where a target's facts come from: one module a source, each with one function,

    def open(spec: HostSpec, options: TargetOptions) -> Target

that collects the facts (through :mod:`pytest_sglang.collect`) and returns the
:class:`~pytest_sglang.target.core.Target` holding them and whatever stays open (an HTTP
client, a shell, a simulator). :func:`pytest_sglang.target.target.open_target` picks the source
by the spec's scheme, and is the one error boundary around all of them.

Adding a source: a module (or a folder, as the simulator is) here with ``open``, and its
scheme in :data:`SOURCES`.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Protocol

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.secrets import register

if TYPE_CHECKING:
    from pytest_sglang.target.spec import HostSpec
    from pytest_sglang.target.core import Target
    from pytest_sglang.target.options import TargetOptions

# A spec's scheme -> the module (in this package) that opens it.
SOURCES = {"http": "live", "https": "live", "sim": "sim.source", "replay": "replay"}


class Source(Protocol):
    """What each source module is."""

    def open(self, spec: HostSpec, options: TargetOptions) -> Target: ...


def source_for(spec: HostSpec) -> Source:
    """The source module that opens ``spec`` (imported on first use: a run without replays
    never loads the capture reader)."""
    name = SOURCES.get(spec.scheme)
    if name is None:  # parse_spec admits only the schemes above
        raise SpecError(f"{spec.display}: no source opens {spec.scheme}:// targets; use one of {', '.join(sorted(SOURCES))}")
    module: Source = importlib.import_module(f"{__name__}.{name}")
    return module


def api_key_for(spec: HostSpec, options: TargetOptions) -> str | None:
    """The api key to send: the variable ``?api_key_env=VAR`` in the spec names, else the options'."""
    var = spec.options.get("api_key_env")
    if var:
        value = os.environ.get(var)
        if not value:
            raise SpecError(f"{spec.display}: ?api_key_env={var} names an environment variable that is not set")
        register(value)
        return value
    return options.api_key
