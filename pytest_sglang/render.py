"""Render values for people: the 'SGLang values read by this test' failure section."""

from __future__ import annotations

from typing import Any

from ._text import short_repr
from .models import Effective, _Recorded


def values_read(reads: dict[tuple[int, str], tuple[Any, str, Any]]) -> str:
    """Each SGLang value a test read, grouped by target: name = value, then where it came
    from and, for effective values, what was requested."""
    by_target: dict[str, list[str]] = {}
    for obj, name, value in reads.values():
        if not isinstance(obj, _Recorded):
            continue
        lines = [f"  {obj._label or type(obj).__name__}.{name} = {short_repr(value)}"]
        if isinstance(obj, Effective):
            prov = obj.provenance.get(name)
            if prov is None:
                lines.append("      source unknown")
            else:
                lines.append(f"      from {prov.source}")
                if prov.requested_source is not None:
                    asked = "nothing" if prov.requested is None else short_repr(prov.requested)
                    lines.append(f"      requested {asked}: {prov.requested_source}")
                if prov.note:
                    lines.append(f"      {prov.note}")
        elif obj._origin:
            lines.append(f"      from {obj._origin} {name}")
        by_target.setdefault(obj._target or "target", []).extend(lines)
    return "\n".join(f"{target}\n" + "\n".join(lines) for target, lines in by_target.items())
