"""Fleet drift: whether several hosts run the same effective configuration.

    from pytest_sglang.judge.fleet import documents, drift, open_targets
    opened = open_targets(specs, options)       # one thread per host: {display: Target or SGLangError}
    result = drift(documents({name: t for name, t in opened.items() if not isinstance(t, Exception)}))
    result.agree, result.reference, result.differences   # {host: [FieldDiff, ...]}

A host's document is the one a baseline file holds (:mod:`pytest_sglang.judge.baseline`), and the
comparison is the baselines' field-level one, with the fleet's configuration (what most hosts
run) in the baseline's place.

Loaded on first use (the pytest plugin imports it only when a run compares hosts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_sglang.base.lazy import lazy_exports

if TYPE_CHECKING:
    from pytest_sglang.judge.fleet.core import Drift, FieldDiff, documents, drift, open_targets

__all__ = [
    "Drift",
    "FieldDiff",
    "documents",
    "drift",
    "open_targets",
]
_EXPORTS = dict.fromkeys(__all__, "core")
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
