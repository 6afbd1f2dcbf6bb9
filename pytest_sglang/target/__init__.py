"""A target: one deployment, opened from one of its sources (a live server, the simulator, a
capture replay) that its spec names, its facts collected once and normalised. ``Target`` and ``connect`` live in
:mod:`pytest_sglang.target.target`; they are named here too, on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_sglang.base.lazy import lazy_exports

__all__ = ["GpuInfo", "Target", "connect"]
__getattr__, __dir__ = lazy_exports(__name__, {name: "target" for name in __all__}, globals())

if TYPE_CHECKING:
    from pytest_sglang.target.target import GpuInfo, Target, connect
