"""The bundled templates: the field sets of ``/server_info`` of each SGLang era.

A module of its own so that both the profile loader (:mod:`.profile`) and the capture
converter (:mod:`.from_capture`) can read them without importing each other.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from pytest_sglang.base.errors import SpecError

__all__ = ["load_template", "template_names"]


@lru_cache(maxsize=None)
def load_template(name: str) -> dict[str, Any]:
    """A template's field set; shared between calls, so callers copy before changing it."""
    try:
        text = resources.files("pytest_sglang.simulator").joinpath("templates").joinpath(f"{name}.json").read_text()
    except FileNotFoundError:
        raise SpecError(f"simulator template {name!r} does not exist") from None
    return json.loads(text)


def template_names() -> list[str]:
    """The bundled template names (SGLang versions), sorted as text."""
    folder = resources.files("pytest_sglang.simulator").joinpath("templates")
    return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))
