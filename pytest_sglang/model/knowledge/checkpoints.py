"""Public model checkpoints whose ``config.json`` is known (``checkpoints.json``): data only.

Each entry is one public model repository (``Qwen/Qwen3.5-122B-A10B``): its architecture, the
``config.json`` fields explain's rules and pool sizing read (copied from the public file, with
the source each was read from), and the SGLang releases whose model registry has the
architecture. Which model path names which entry is decided in
:mod:`pytest_sglang.judge.explain.checkpoint`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping

FILE = "checkpoints.json"


class CatalogError(ValueError):
    """checkpoints.json is malformed (a packaging error: the message names the entry)."""


@dataclass(frozen=True)
class Checkpoint:
    repo: str  # as the repository spells it: Qwen/Qwen3.5-122B-A10B
    family: str
    architecture: str  # config.json architectures[0]
    config: Mapping[str, Any]  # the fields kept, nesting (text_config, vision_config) as in the file
    source: str  # where the fields were read: a URL, or a path in this repository
    partial: str | None = None  # why only part of the file is known, when it is
    sglang_since: str | None = None  # the first release (of those known) whose registry has the architecture
    sglang_until: str | None = None  # the last one, when a later release dropped it


@lru_cache(maxsize=1)
def catalog() -> dict[str, Checkpoint]:
    """Every entry, keyed by its repository id in lower case (Hugging Face ids are matched
    without regard to case)."""
    data = json.loads(resources.files(__name__.rsplit(".", 1)[0]).joinpath(FILE).read_text(encoding="utf-8"))
    out: dict[str, Checkpoint] = {}
    for raw in data.get("entries", []):
        entry = _entry(raw)
        key = entry.repo.lower()
        if key in out:
            raise CatalogError(f"{FILE}: {entry.repo} is listed twice")
        out[key] = entry
    return out


def checkpoint(repo: str) -> Checkpoint | None:
    """The entry of a repository id (``ORG/NAME``, any case), or None."""
    return catalog().get(repo.strip().lower())


def _entry(raw: Any) -> Checkpoint:
    where = f"{FILE}: entry {raw.get('repo') if isinstance(raw, dict) else raw!r}"
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}: is not an object")
    repo, arch, config, source = raw.get("repo"), raw.get("architecture"), raw.get("config"), raw.get("source")
    if not isinstance(repo, str) or repo.count("/") != 1:
        raise CatalogError(f"{where}: 'repo' must be ORG/NAME")
    if not isinstance(config, dict) or not isinstance(source, str) or not source:
        raise CatalogError(f"{where}: needs a 'config' object and a 'source'")
    archs = config.get("architectures")
    if not isinstance(arch, str) or not isinstance(archs, list) or not archs or archs[0] != arch:
        raise CatalogError(f"{where}: 'architecture' must be config.architectures[0]")
    releases = raw.get("sglang") or {}
    return Checkpoint(
        repo=repo,
        family=str(raw.get("family") or ""),
        architecture=arch,
        config=config,
        source=source,
        partial=raw.get("partial"),
        sglang_since=releases.get("since"),
        sglang_until=releases.get("until"),
    )
