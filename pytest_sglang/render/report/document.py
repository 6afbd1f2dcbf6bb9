"""The report document's own words, shared by what builds it and what renders it: the
verdicts, pytest's outcome names, the report as typed data (:func:`report_of`, where every
renderer takes it in), and small readers of the document's parts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from pydantic import ValidationError

from pytest_sglang.base.secrets import clip
from pytest_sglang.judge.gate.models import CheckRecord, Counts, RunReport

# The verdicts and outcome names are the gate's (judge/gate/verdict.py), which decides them.
from pytest_sglang.judge.gate.verdict import COUNT_KEYS, FAILED_OUTCOMES, HOLD, INCONCLUSIVE, PROMOTE, VERDICTS, bench_name, rejudge, short_name


class ReportError(ValueError):
    """A report document the renderers cannot read: one line naming the field (``problem``)."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"the report does not fit the report schema: {problem}")
        self.problem = problem


def validation_problem(exc: ValidationError) -> str:
    """The first problem pydantic found, as ``$.hosts[0].verdict: Input should be ...``."""
    error = exc.errors()[0]
    where = "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"])
    return f"{where}: {clip(error['msg'], 120)}"


def report_of(document: RunReport | Mapping[str, Any]) -> RunReport:
    """The report as typed data: a :class:`RunReport` as it is, a JSON document (as the
    plugin builds it or a stored report holds it) read through the models once."""
    if isinstance(document, RunReport):
        return document
    try:
        return RunReport.model_validate(document)
    except ValidationError as exc:
        raise ReportError(validation_problem(exc)) from None


def summary_line(counts: Counts) -> str:
    """The counts as pytest's summary line words them: ``2 failed, 26 passed, 2 skipped``."""
    parts = []
    for key in COUNT_KEYS:
        n = getattr(counts, key)
        if n:
            parts.append(f"{n} {key}{'s' if key == 'error' and n != 1 else ''}")
    return ", ".join(parts) or "no tests ran"


@dataclass(frozen=True)
class FieldDifference:
    """One field that differs from a baseline, as a check record keeps it (a JSON object with
    ``baseline`` and ``live``: ``FieldDiff.to_dict`` in judge/baseline/compare.py); any other
    key it lacks reads as None."""

    path: Any
    field: Any  # what a record that has no ``path`` names the field by
    baseline: Any
    live: Any
    status: Any
    note: Any
    group: Any
    finding: Any
    failing: Any
    baseline_source: Any
    live_source: Any

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> FieldDifference:
        keys = ("path", "field", "baseline", "live", "status", "note", "group", "finding", "failing", "baseline_source", "live_source")
        return cls(*(record.get(key) for key in keys))

    @property
    def name(self) -> Any:
        return self.path or self.field


@dataclass(frozen=True)
class BaselineChange:
    """One change of a baseline check's ``groups``: the fields of one setting and what follows
    from it (``Change.to_dict`` in judge/baseline/compare.py); a key it lacks reads as None."""

    name: str
    title: Any
    line: Any
    status: Any
    failing: Any
    finding: Any
    finding_summary: Any
    follows_from: Any
    fields: Any

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> BaselineChange:
        keys = ("title", "line", "status", "failing", "finding", "finding_summary", "follows_from", "fields")
        return cls(str(record.get("name") or ""), *(record.get(key) for key in keys))


def baseline_diffs(check: CheckRecord) -> list[FieldDifference]:
    """The field-level baseline differences a check record carries (a list of objects with
    ``baseline`` and ``live``), whatever the field it uses (``diffs``, or one a check adds)."""
    out: list[FieldDifference] = []
    for key, value in check:
        if key in ("failures", "notes") or not isinstance(value, list):
            continue
        out += [FieldDifference.read(d) for d in value if isinstance(d, dict) and "baseline" in d and "live" in d]
    return out


def baseline_changes(check: CheckRecord) -> list[BaselineChange]:
    """A baseline check's changes (its ``groups``: one record per change; a fleet check keeps
    them by host instead, and has none of its own)."""
    return [BaselineChange.read(change) for change in check.groups] if isinstance(check.groups, list) else []


# ---- the verdict's lead --------------------------------------------------------------------------


def verdict_lead(doc: RunReport) -> str:
    """The words before the verdict's reasons: ``Held because: 1 of 2 host(s) on hold``."""
    if doc.verdict == HOLD:
        held = [h for h in doc.hosts if h.verdict == HOLD]
        return "Held because: " + (f"{len(held)} of {len(doc.hosts)} host(s) on hold" if held else "")
    if doc.verdict == INCONCLUSIVE:
        return "Not promotable until measured:"
    return "Nothing failed and nothing is open." if doc.verdict == PROMOTE else ""


def causes_and_counts(doc: RunReport) -> tuple[list[str], list[str]]:
    """The run's reasons as the gate orders them: its causes (one line per failing field,
    check or benchmark level), then the counts and what is open. A stored report whose reasons
    do not start with the causes its contents give has them all as counts."""
    causes = rejudge(doc).causes
    if causes and doc.reasons[: len(causes)] == causes:
        return list(causes), doc.reasons[len(causes) :]
    return [], list(doc.reasons)


__all__ = ["COUNT_KEYS", "FAILED_OUTCOMES", "HOLD", "INCONCLUSIVE", "PROMOTE", "VERDICTS", "BaselineChange", "FieldDifference", "ReportError", "baseline_changes", "baseline_diffs", "bench_name", "causes_and_counts", "report_of", "short_name", "summary_line", "validation_problem", "verdict_lead"]
