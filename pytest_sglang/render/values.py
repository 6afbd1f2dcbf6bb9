"""Render values for people: the 'SGLang values read by this test' failure section."""

from __future__ import annotations

from typing import Any, Callable

from pytest_sglang.base.text import short_repr
from pytest_sglang.model.config import Effective, _Recorded

# What explains one value read: (the object it was read from, its name, the value) -> lines.
Causes = Callable[[Any, str, Any], list[str]]


def values_read(reads: dict[tuple[int, str], tuple[Any, str, Any]], causes: Causes | None = None) -> str:
    """Each SGLang value a test read, grouped by target: name = value, then where it came
    from and, for effective values, what was requested; then, when ``causes`` names one,
    the rule that set the value (``capped by the mamba state cache (...) [capacity.mamba-cap]``).
    A cause that cannot be found leaves the section as it is, never breaks it."""
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
        lines += [f"      {cause}" for cause in _causes(causes, obj, name, value)]
        by_target.setdefault(obj._target or "target", []).extend(lines)
    return "\n".join(f"{target}\n" + "\n".join(lines) for target, lines in by_target.items())


def _causes(causes: Causes | None, obj: Any, name: str, value: Any) -> list[str]:
    if causes is None:
        return []
    try:
        return [str(line) for line in causes(obj, name, value)]
    except Exception:  # noqa: BLE001 - the failure report is never broken by explaining it
        return []
