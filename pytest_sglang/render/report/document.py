"""The report document's own words, shared by what builds it and what renders it: the
verdicts, pytest's outcome names, and small readers of the document's parts."""

from __future__ import annotations

from typing import Any

# The verdicts and outcome names are the gate's (judge/gate/verdict.py), which decides them.
from pytest_sglang.judge.gate.verdict import COUNT_KEYS, FAILED_OUTCOMES, HOLD, INCONCLUSIVE, PROMOTE, VERDICTS, bench_name, short_name


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


__all__ = ["COUNT_KEYS", "FAILED_OUTCOMES", "HOLD", "INCONCLUSIVE", "PROMOTE", "VERDICTS", "baseline_diffs", "bench_name", "short_name", "summary_line"]
