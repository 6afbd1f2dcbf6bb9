"""Baseline files: one JSON document per deployment key in a directory."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .._files import DEFAULT_MAX_DEPTH, FileError, MiB, MissingFileError, check_nesting, read_text, write_text
from ..errors import SpecError
from ..secrets import clip
from .compare import Policy
from .document import dumps

BASELINE_KIND = "pytest-sglang baseline"


class BaselineError(SpecError):
    """A baseline file that cannot be read; the message names the file."""


# A baseline file is a reviewed JSON document of some tens of KiB; 16 MiB is far beyond any
# real one and small enough to parse at once. Nesting: a document is a few levels deep.
BASELINE_CAP_BYTES = 16 * MiB
BASELINE_MAX_DEPTH = DEFAULT_MAX_DEPTH


def load_baseline(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A baseline file's document (with its ``policy`` section checked).

    Read through :func:`pytest_sglang._files.read_text`: a regular file of at most
    ``BASELINE_CAP_BYTES`` (16 MiB) of UTF-8, JSON nested at most ``BASELINE_MAX_DEPTH`` (100)
    deep; anything else is one :class:`BaselineError` line naming the file."""
    p = Path(path)
    try:
        text = read_text(p, cap_bytes=BASELINE_CAP_BYTES, what=f"baseline {p}")
        check_nesting(text, what=f"baseline {p}", limit=BASELINE_MAX_DEPTH)
    except MissingFileError:
        raise BaselineError(f"baseline {p}: no such file") from None
    except FileError as exc:
        raise BaselineError(str(exc)) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"baseline {p}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); fix the file or rewrite it with --sglang-update-baseline") from None
    except (ValueError, RecursionError) as exc:  # an integer of thousands of digits; nesting the scan missed
        raise BaselineError(f"baseline {p}: not valid JSON ({str(exc).split(':')[0]}); fix the file or rewrite it with --sglang-update-baseline") from None
    if not isinstance(doc, dict) or "effective" not in doc:
        raise BaselineError(f"baseline {p}: not a pytest-sglang baseline (no \"effective\" section)")
    try:
        Policy.from_mapping(doc.get("policy"), f"baseline {p.name} policy")
    except SpecError:
        raise
    except (ArithmeticError, TypeError, ValueError, RecursionError) as exc:  # {"absolute": <a 400-digit integer>}
        raise BaselineError(f"baseline {p}: policy section: a value out of range or of the wrong kind ({clip(str(exc), 80)}); fix the file") from None
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


def write_baseline(path: Path, content: dict[str, Any], *, overwrite: bool = True, what: str = "baseline") -> None:
    """Write a baseline file (its folder is made) through :func:`pytest_sglang._files.write_text`:
    whole or not at all, never through a symbolic link; ``overwrite=False`` keeps an existing
    file (:class:`~pytest_sglang._files.FileExistsRefused`)."""
    write_text(path, dumps(content), what=what, overwrite=overwrite)
