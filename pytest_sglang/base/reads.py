"""Which SGLang values the running test has read (set by the plugin around each test call)."""

from __future__ import annotations

from typing import Any

active: dict[tuple[int, str], tuple[Any, str, Any]] | None = None


def start() -> None:
    global active
    active = {}


def stop() -> dict[tuple[int, str], tuple[Any, str, Any]]:
    global active
    reads, active = active or {}, None
    return reads


def record(obj: Any, name: str, value: Any) -> None:
    if active is not None:
        active.setdefault((id(obj), name), (obj, name, value))


class paused:
    """Library code reading models for its own purposes is not the test reading them."""

    def __enter__(self) -> None:
        global active
        self._saved, active = active, None

    def __exit__(self, *exc: object) -> None:
        global active
        active = self._saved
