"""The capture file: one JSON object holding what was collected from one host.

    {"format": "pytest-sglang-capture/1",
     "provenance": {"captured_at": ..., "target": "http://gpu1:30000", ...},
     "facts": <pytest_sglang.model.facts.Facts as JSON>}

The facts are the ones live, simulated and replayed targets share (HTTP bodies, host facts,
launch command, log lines), already redacted by the collector. This module reads the format;
:mod:`pytest_sglang.render.capture` writes it. See docs/capture.md.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.files import DEFAULT_MAX_DEPTH, FileError, MiB, MissingFileError, check_nesting, read_text
from pytest_sglang.base.secrets import clip
from pytest_sglang.base.version import __version__
from pytest_sglang.model.facts import FACTS_FORMAT, Facts

FORMAT = "pytest-sglang-capture/1"
_FORMAT_PREFIX = "pytest-sglang-capture/"


class CaptureProvenance(BaseModel):
    """Where a capture comes from: when, from which host (the spec's display, never a key),
    read how, by which pytest-sglang, and the SGLang version the host reported."""

    model_config = ConfigDict(frozen=True, extra="allow")

    captured_at: datetime
    target: str
    origin: str = "http"  # "http" (a live server) or "sim" (a simulated deployment)
    host_access: str | None = None  # "ssh://root@gpu1:22", "local", "simulator profile NAME"
    pytest_sglang_version: str
    sglang_version: str | None = None
    summary: str | None = None  # Target.describe(): version, model, GPU, tp


def read_capture(path: str | os.PathLike[str], *, what: str | None = None) -> tuple[CaptureProvenance, Facts]:
    """The provenance and facts of a capture file. A missing, unreadable, corrupt or
    wrong-format file is a one-line :class:`SpecError` naming the file (as ``what``, default
    ``capture file PATH``) and what to do."""
    return parse_capture(load_capture_json(path, what=what), str(path))


# A capture holds one host's HTTP answers, host facts and a bounded tail of log lines: tens to
# hundreds of KiB. 64 MiB is far beyond a real one and still parses in memory at once.
CAPTURE_CAP_BYTES = 64 * MiB
# Captured HTTP bodies nest a few levels; the checks and the scrubber recurse once per level.
CAPTURE_MAX_DEPTH = DEFAULT_MAX_DEPTH


def load_capture_json(path: str | os.PathLike[str], *, what: str | None = None) -> Any:
    """The JSON of a capture file (not yet checked to be one), read through
    :func:`pytest_sglang.base.files.read_text`: a regular file (a FIFO, device or directory is one
    line, and nothing blocks) of at most ``CAPTURE_CAP_BYTES`` (64 MiB) of UTF-8 JSON nested at
    most ``CAPTURE_MAX_DEPTH`` (100) deep."""
    file = Path(path).expanduser()
    shown = str(path)
    what = what or f"capture file {shown}"
    try:
        text = read_text(file, cap_bytes=CAPTURE_CAP_BYTES, what=what)
    except MissingFileError:
        where = "" if file.is_absolute() else f" (a relative path is read from the current directory, {Path.cwd()})"
        raise SpecError(f"capture file {shown} does not exist{where}: write one with pytest-sglang capture TARGET -o {shown}") from None
    except FileError as exc:
        if os.path.isdir(file):
            raise SpecError(f"capture {shown} is a directory: give a capture file (pytest-sglang capture TARGET -o FILE writes one)") from None
        if "UTF-8" in str(exc):
            raise SpecError(f"capture file {shown} is not text: a capture is JSON written by pytest-sglang capture") from None
        raise SpecError(f"{exc}: a capture is a JSON file written by pytest-sglang capture") from None
    if not text.strip():
        raise SpecError(f"capture file {shown} is empty: capture the host again")
    check_nesting(text, what=what, limit=CAPTURE_MAX_DEPTH)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        line = getattr(exc, "lineno", None)
        at = f" at line {line}" if line else ""
        raise SpecError(f"capture file {shown} is not valid JSON{at} (truncated or edited?): capture the host again") from None


def parse_capture(data: Any, shown: str) -> tuple[CaptureProvenance, Facts]:
    """Check a loaded capture object: its format, provenance and facts."""
    if not isinstance(data, dict):
        raise SpecError(f"capture file {shown} is not a pytest-sglang capture: it must hold one JSON object with \"format\": \"{FORMAT}\"")
    fmt = data.get("format")
    if not isinstance(fmt, str) or not fmt.startswith(_FORMAT_PREFIX):
        if "template" in data and "runtime" in data:
            raise SpecError(f"{shown} is a simulator profile, not a capture: run it with sim://{shown}")
        raise SpecError(f"capture file {shown} is not a pytest-sglang capture (no \"format\": \"{FORMAT}\"): write one with pytest-sglang capture TARGET -o FILE")
    if fmt != FORMAT:
        raise SpecError(f"capture file {shown} has format {clip(fmt, 40, ellipsis='...')!r}; this pytest-sglang {__version__} reads {FORMAT!r}: upgrade pytest-sglang or capture the host again")
    try:
        provenance = CaptureProvenance.model_validate(data.get("provenance"))
    except ValidationError as exc:
        raise SpecError(f"capture file {shown}: provenance is not valid ({_first_error(exc)}): capture the host again") from None
    facts_data = data.get("facts")
    if isinstance(facts_data, dict) and facts_data.get("format", FACTS_FORMAT) != FACTS_FORMAT:
        raise SpecError(f"capture file {shown}: facts have format {clip(facts_data.get('format'), 20, ellipsis='...')}, this pytest-sglang reads {FACTS_FORMAT}: capture the host again")
    try:
        facts = Facts.model_validate(facts_data)
    except ValidationError as exc:
        raise SpecError(f"capture file {shown}: facts are not valid ({_first_error(exc)}): capture the host again") from None
    if facts.body("server_info") is None:
        raise SpecError(f"capture file {shown} holds no /server_info answer: it cannot stand for a server; capture the host again")
    return provenance, facts


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return "not valid"
    first = errors[0]
    field = ".".join(str(p) for p in first.get("loc", ())) or "the object"
    message = " ".join(str(first.get("msg", "is not valid")).split())
    more = f"; and {len(errors) - 1} more" if len(errors) > 1 else ""
    return f"{field}: {message[:1].lower()}{message[1:]}{more}"
