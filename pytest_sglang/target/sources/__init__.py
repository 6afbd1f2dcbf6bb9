"""Where a target's facts come from: one module a source, each with one function,

    def open(spec: HostSpec, options: TargetOptions) -> Target

that collects the facts (through :mod:`pytest_sglang.collect`) and returns the
:class:`~pytest_sglang.target.core.Target` holding them and whatever stays open (an HTTP
client, a shell, a simulator). :func:`pytest_sglang.target.target.open_target` picks the source
by the spec's scheme, and is the one error boundary around all of them.

Adding a source: a module here with ``open``, imported by the opener and named by its scheme
in :data:`pytest_sglang.target.target.SOURCES` (a module is a :class:`Source` as it stands,
so mypy checks its ``open``). The sources do not import each other, nor the opener.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from pytest_sglang.base.settings import setting
from pytest_sglang.target.options import api_key_for

if TYPE_CHECKING:
    from pytest_sglang.target.core import Target
    from pytest_sglang.target.options import TargetOptions
    from pytest_sglang.target.spec import HostSpec

__all__ = ["Source", "api_key_for", "unused_host_access"]


class Source(Protocol):
    """What each source module is."""

    def open(self, spec: HostSpec, options: TargetOptions) -> Target: ...


def unused_host_access(options: TargetOptions, why: str) -> list[str]:
    """A note for each host-access setting given to a target that has no host to read
    (a replay, a simulator): named as settings, each front end gives its own flag."""
    given = (("ssh", options.ssh), ("unit", options.unit), ("logs", options.logs))
    return [f"{setting(name)} is not used for {why}" for name, value in given if value]
