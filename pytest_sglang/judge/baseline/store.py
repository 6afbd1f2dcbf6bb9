"""Baseline files: one JSON document per deployment key in a directory."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.files import DEFAULT_MAX_DEPTH, FileError, MiB, MissingFileError, check_nesting, read_text, write_text
from pytest_sglang.base.secrets import clip
from pytest_sglang.judge.baseline.compare import Policy
from pytest_sglang.judge.baseline.document import dumps

BASELINE_KIND = "pytest-sglang baseline"


# ---- where a deployment's baseline files are -------------------------------------------------

BENCH_SUFFIX = ".bench.json"


# A file name may be 255 bytes (NAME_MAX); the longest name made from a key is the benchmark
# baseline's lock, ".KEY.bench.json.lock" (17 bytes more than the key). A key that fits, made of
# letters, digits, '.', '_' and '-', is its own file name, as it always was.
NAME_MAX_BYTES = 255
MAX_PLAIN_KEY_BYTES = NAME_MAX_BYTES - len(f".{BENCH_SUFFIX}.lock")
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_UNSAFE_KEY_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_READABLE_PREFIX = 150
_DIGEST_CHARS = 16


def key_file_stem(key: str) -> str:
    """The file name stem of a deployment key's baseline files.

    A key of letters, digits, '.', '_' and '-' (not starting with '.' or '-') of at most
    ``MAX_PLAIN_KEY_BYTES`` (238) bytes is its own stem, so existing baselines keep their names.
    Any other key (too long for a file name, or with characters a file name must not have)
    becomes a readable prefix plus a digest of the whole key:
    ``Qwen...-long-model-name-...-3f2a9c41d0b7e615`` (at most 167 characters), the same on
    every machine."""
    if _PLAIN_KEY.fullmatch(key) and len(key.encode("utf-8")) <= MAX_PLAIN_KEY_BYTES:
        return key
    prefix = _UNSAFE_KEY_CHARS.sub("-", key)[:_READABLE_PREFIX].strip("-.") or "key"
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
    return f"{prefix}-{digest}"


def baseline_file(directory: Path, key: str, suffix: str = ".json") -> Path:
    """``DIR/KEY.json`` (or ``DIR/KEY.bench.json`` with ``suffix=BENCH_SUFFIX``), the key
    mapped to a safe file name by :func:`key_file_stem`."""
    return directory / f"{key_file_stem(key)}{suffix}"


def key_problem(key: str) -> str | None:
    """Why an ini or command-line deployment key cannot be used, or None. Keys name files, so
    they are letters, digits, '.', '_' and '-', not starting or ending with '.' or '-'; a long
    key is fine (its files get a digest name)."""
    if not key or _UNSAFE_KEY_CHARS.search(key) or key.strip("-.") != key:
        return "the key is a file name: use letters, digits, '.', '_' and '-' only"
    return None


def ci_set() -> bool:
    """Whether the CI environment variable is set to something true (as CI services set it)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing_line(host: str, shown: str, option: str = "--sglang-update-baseline") -> str:
    """What a check without its baseline file says."""
    return f"no baseline for {host}: expected {shown}; create it with {option}"




class BaselineError(SpecError):
    """A baseline file that cannot be read; the message names the file."""


# A baseline file is a reviewed JSON document of some tens of KiB; 16 MiB is far beyond any
# real one and small enough to parse at once. Nesting: a document is a few levels deep.
BASELINE_CAP_BYTES = 16 * MiB
BASELINE_MAX_DEPTH = DEFAULT_MAX_DEPTH


def load_baseline(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A baseline file's document (with its ``policy`` section checked).

    Read through :func:`pytest_sglang.base.files.read_text`: a regular file of at most
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
    """Write a baseline file (its folder is made) through :func:`pytest_sglang.base.files.write_text`:
    whole or not at all, never through a symbolic link; ``overwrite=False`` keeps an existing
    file (:class:`~pytest_sglang.base.files.FileExistsRefused`)."""
    write_text(path, dumps(content), what=what, overwrite=overwrite)
