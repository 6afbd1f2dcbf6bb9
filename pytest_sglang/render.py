"""Render values for people: report headers and the 'SGLang values read' failure section."""

from __future__ import annotations

from typing import Any

from .models import Effective, _Recorded


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def values_read(reads: dict[tuple[int, str], tuple[Any, str, Any]]) -> str:
    """One line per SGLang value a test read: name, value, where it came from."""
    rows: list[tuple[str, str, str]] = []
    for obj, name, value in reads.values():
        if not isinstance(obj, _Recorded) or name == "provenance":
            continue
        label = f"{obj._label or type(obj).__name__.lower()}.{name}"
        if isinstance(obj, Effective):
            prov = obj.provenance.get(name)
            where = prov.describe() if prov else "source unknown"
        else:
            where = f"from {obj._origin} {name}" if obj._origin else "source unknown"
        target = f" [{obj._target}]" if obj._target else ""
        rows.append((label, _short(value), where + target))
    if not rows:
        return ""
    width = max(len(f"{label} = {value}") for label, value, _ in rows)
    return "\n".join(f"{f'{label} = {value}':<{width}}  {where}" for label, value, where in rows)
