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

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from .files import FORMAT, CaptureProvenance, capture_data, read_capture, safe_file_name, write_capture

if TYPE_CHECKING:
    from .replay import ReplayClientError, ReplayTarget, open_capture
    from .replay import ReplayTarget as Target

# The replay side loads the target stack only when used; Target is the target a replay:FILE spec opens.
_EXPORTS = {"ReplayClientError": "replay", "ReplayTarget": "replay", "open_capture": "replay", "Target": "replay:ReplayTarget"}
__all__ = [
    "CaptureProvenance",
    "FORMAT",
    "ReplayClientError",
    "ReplayTarget",
    "Target",
    "capture_data",
    "open_capture",
    "read_capture",
    "safe_file_name",
    "write_capture",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
