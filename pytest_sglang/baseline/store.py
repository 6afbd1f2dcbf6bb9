"""Baseline files: one JSON document per deployment key in a directory."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..errors import SpecError
from .compare import Policy
from .document import dumps

BASELINE_KIND = "pytest-sglang baseline"


class BaselineError(SpecError):
    """A baseline file that cannot be read; the message names the file."""


def load_baseline(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A baseline file's document (with its ``policy`` section checked)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BaselineError(f"baseline {p}: no such file") from None
    except OSError as exc:
        raise BaselineError(f"baseline {p}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise BaselineError(f"baseline {p}: is not UTF-8 text") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"baseline {p}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); fix the file or rewrite it with --sglang-update-baseline") from None
    if not isinstance(doc, dict) or "effective" not in doc:
        raise BaselineError(f"baseline {p}: not a pytest-sglang baseline (no \"effective\" section)")
    Policy.from_mapping(doc.get("policy"), f"baseline {p.name} policy")
    return doc


def file_content(doc: dict[str, Any], key: str, previous: dict[str, Any] | None) -> dict[str, Any]:
    """What a baseline file holds: the document, its key, and the policy it already had."""
    out = {k: v for k, v in doc.items() if k != "volatile"}
    out["kind"] = BASELINE_KIND
    out["key"] = key
    out["policy"] = (previous or {}).get("policy") or {}
    return out


def content_changed(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    return old is None or {k: v for k, v in old.items() if k != "policy"} != {k: v for k, v in new.items() if k != "policy"}


def write_baseline(path: Path, content: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(dumps(content), encoding="utf-8")
    os.replace(tmp, path)
