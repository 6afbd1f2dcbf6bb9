"""Fleet drift: whether several hosts run the same effective configuration.

    from pytest_sglang.fleet import open_targets, comparable, drift
    opened = open_targets(specs, options)       # one thread per host: {display: Target or SGLangError}
    result = drift({name: comparable(t) for name, t in opened.items() if not isinstance(t, Exception)})
    result.agree, result.differences            # {host: [FieldDiff, ...]}

Loaded on first use (the pytest plugin imports it only when a run compares hosts)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core import HOST_SPECIFIC, Drift, FieldDiff, comparable, drift, open_targets, sources

__all__ = ["HOST_SPECIFIC", "Drift", "FieldDiff", "comparable", "drift", "open_targets", "sources"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import core

        return getattr(core, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
