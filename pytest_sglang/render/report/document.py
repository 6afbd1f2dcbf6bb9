"""The report document's own words, shared by what builds it and what renders it: the
verdicts, pytest's outcome names, and small readers of the document's parts."""

from __future__ import annotations

from typing import Any

PROMOTE, HOLD, INCONCLUSIVE = "promote", "hold", "inconclusive"
VERDICTS = (PROMOTE, HOLD, INCONCLUSIVE)
FAILED_OUTCOMES = ("failed", "error")
# pytest's own outcome categories, in the order its summary line names them.
COUNT_KEYS = ("failed", "passed", "skipped", "xfailed", "xpassed", "error")


def summary_line(counts: dict[str, int]) -> str:
    """The counts as pytest's summary line words them: ``2 failed, 26 passed, 2 skipped``."""
    parts = []
    for key in COUNT_KEYS:
        n = counts.get(key) or 0
        if n:
            parts.append(f"{n} {key}{'s' if key == 'error' and n != 1 else ''}")
    return ", ".join(parts) or "no tests ran"


def baseline_diffs(check: dict[str, Any]) -> list[dict[str, Any]]:
    """The field-level baseline differences a check record carries (a list of objects with
    ``baseline`` and ``live``), whatever the key it uses."""
    out: list[dict[str, Any]] = []
    for key, value in check.items():
        if key in ("failures", "notes") or not isinstance(value, list):
            continue
        out += [d for d in value if isinstance(d, dict) and "baseline" in d and "live" in d]
    return out


def short_name(nodeid: str) -> str:
    return nodeid.rsplit("::", 1)[-1]


def bench_name(nodeid: str) -> str:
    """``test_x[sim://h]`` -> ``test_x``: the host is said once, before the reason."""
    name = short_name(nodeid)
    return name.split("[", 1)[0] if name.endswith("]") else name
