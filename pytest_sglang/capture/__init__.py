"""Capture what was collected from a host, and replay it offline (``replay:FILE``).

    from pytest_sglang import connect
    from pytest_sglang.capture import read_capture, write_capture

    with connect("http://gpu1:30000", ssh="root@gpu1", unit="sglang.service") as target:
        write_capture(target, "captures/gpu1.json")
    provenance, facts = read_capture("captures/gpu1.json")
    with connect("replay:captures/gpu1.json") as target:   # offline, the same values
        print(target.effective.max_running_requests)

A capture can also become a simulated deployment: ``sim:///path/to/capture.json``.
See docs/capture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .files import FORMAT, CaptureProvenance, capture_data, read_capture, safe_file_name, write_capture

if TYPE_CHECKING:
    from .replay import ReplayClientError, ReplayTarget, open_capture

__all__ = [
    "FORMAT",
    "CaptureProvenance",
    "ReplayClientError",
    "ReplayTarget",
    "Target",
    "capture_data",
    "open_capture",
    "read_capture",
    "safe_file_name",
    "write_capture",
]


def __getattr__(name: str) -> Any:  # the replay side loads the target stack only when used
    if name in ("ReplayClientError", "ReplayTarget", "open_capture"):
        from . import replay

        return getattr(replay, name)
    if name == "Target":  # the target a replay:FILE spec opens
        from .replay import ReplayTarget

        return ReplayTarget
    raise AttributeError(f"module 'pytest_sglang.capture' has no attribute {name!r}")
