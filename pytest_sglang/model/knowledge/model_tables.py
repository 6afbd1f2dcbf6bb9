"""Each SGLang release's model tables (``models/sglang-models-VERSION.json``): data only.

A table holds the architectures the release's model registry knows (every ``EntryClass`` of
``sglang/srt/models/*.py``), the transformers version the release pins, and the architecture
lists its start-up code tests (the multimodal list, the multimodal opt-in list, the
piecewise-CUDA-graph blacklist, ...), each under the knowledge base's name for it with the
source it was read from. ``transformers-VERSION.json`` holds the model classes a pinned
transformers version exports, split by whether SGLang's Transformers fallback accepts them.
Both are written from the wheels by ``tests/real_sglang/model_tables_live.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from packaging.version import Version

_PREFIX = "sglang-models-"


@dataclass(frozen=True)
class ModelTable:
    sglang_version: str
    transformers: str  # the version the release pins
    architectures: frozenset[str]
    lists: dict[str, frozenset[str]]
    sources: dict[str, str]  # list name -> where the release defines it


@dataclass(frozen=True)
class TransformersTable:
    transformers: str
    backend_compatible: frozenset[str]
    not_backend_compatible: frozenset[str]


def _folder() -> Any:
    return resources.files(__name__.rsplit(".", 1)[0]).joinpath("models")


def _key(version: str) -> Version:
    return Version(version)


@lru_cache(maxsize=1)
def model_table_versions() -> tuple[str, ...]:
    """The releases with a model table, oldest first."""
    names = (p.name for p in _folder().iterdir() if p.name.startswith(_PREFIX) and p.name.endswith(".json"))
    return tuple(sorted((n[len(_PREFIX) : -len(".json")] for n in names), key=_key))


@lru_cache(maxsize=None)
def model_table(version: str) -> ModelTable | None:
    """The table of exactly this release (``"0.5.12"``), or None."""
    if version not in model_table_versions():
        return None
    data = json.loads(_folder().joinpath(f"{_PREFIX}{version}.json").read_text(encoding="utf-8"))
    lists = data.get("lists", {})
    return ModelTable(
        sglang_version=data["sglang_version"],
        transformers=data["transformers"],
        architectures=frozenset(data["architectures"]),
        lists={name: frozenset(entry["members"]) for name, entry in lists.items()},
        sources={name: entry["source"] for name, entry in lists.items()},
    )


@lru_cache(maxsize=None)
def transformers_table(version: str) -> TransformersTable | None:
    path = _folder().joinpath(f"transformers-{version}.json")
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return TransformersTable(
        transformers=data["transformers"],
        backend_compatible=frozenset(data["backend_compatible"]),
        not_backend_compatible=frozenset(data["not_backend_compatible"]),
    )
