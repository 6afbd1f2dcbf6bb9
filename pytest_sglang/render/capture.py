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

import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_sglang import __version__
from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.files import write_text
from pytest_sglang.base.lazy import lazy_exports
from pytest_sglang.base.secrets import scrub
from pytest_sglang.collect.capture import FORMAT, CaptureProvenance, read_capture

if TYPE_CHECKING:
    from pytest_sglang.target.sources.replay import ReplayClientError, ReplayTarget, open_capture
    from pytest_sglang.target.sources.replay import ReplayTarget as Target
    from pytest_sglang.target.target import Target as _Target

# The replay side loads the target stack only when used; Target is the target a replay:FILE spec opens.
_REPLAY = "pytest_sglang.target.sources.replay"
_EXPORTS = {"ReplayClientError": _REPLAY, "ReplayTarget": _REPLAY, "open_capture": _REPLAY, "Target": f"{_REPLAY}:ReplayTarget"}
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


def provenance_of(target: _Target) -> CaptureProvenance:
    from pytest_sglang.judge.gate.summary import summarize

    summary = summarize(target)
    return CaptureProvenance(
        captured_at=datetime.now(timezone.utc),
        target=target.spec.display,
        origin=summary.origin,
        host_access=summary.where,
        pytest_sglang_version=__version__,
        sglang_version=summary.sglang_version,
        summary=summary.describe,
    )


def capture_data(target: _Target) -> dict[str, Any]:
    """The capture of an open target as a JSON-able object, every string scrubbed. A replayed
    target gives back the capture it was read from (its provenance and facts unchanged)."""
    from pytest_sglang.target.sources.replay import ReplayTarget

    if isinstance(target, ReplayTarget):
        provenance, facts = target.provenance, target.captured_facts
    else:
        provenance, facts = provenance_of(target), target.facts
    data = {
        "format": FORMAT,
        "provenance": provenance.model_dump(mode="json"),
        "facts": facts.model_dump(mode="json"),
    }
    return _scrubbed(data)


def write_capture(target: _Target, path: str | os.PathLike[str]) -> CaptureProvenance:
    """Write the capture of an open target to ``path`` (its folder is created); returns its
    provenance. A path that cannot be written is a one-line :class:`SpecError`."""
    data = capture_data(target)
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    _write_text(Path(path), text)
    return CaptureProvenance.model_validate(data["provenance"])


def safe_file_name(display: str) -> str:
    """A file name for a host's capture: its display with everything but letters, digits,
    '.', '_' and '-' turned into '_' (``sim://NAME`` -> ``sim_NAME.json``)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", display).strip("._") or "host"
    return f"{stem[:150]}.json"


def _write_text(path: Path, text: str) -> None:
    """Written whole or not at all, never through a symbolic link
    (:func:`pytest_sglang.base.files.write_text`)."""
    if path.is_dir() and not path.is_symlink():
        raise SpecError(f"{path} is a directory: give the capture file's name")
    write_text(path, text, what="capture")


def _scrubbed(obj: Any) -> Any:
    """A copy with every registered secret removed from every string, keys included."""
    if isinstance(obj, str):
        return scrub(obj)
    if isinstance(obj, dict):
        return {scrub(str(k)): _scrubbed(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_scrubbed(v) for v in obj]
    return obj


