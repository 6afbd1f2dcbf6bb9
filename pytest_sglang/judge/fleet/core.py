"""Fleet drift: reading hosts in parallel and comparing what replicas must agree on.

Each host is reduced to its configuration document (:func:`pytest_sglang.judge.baseline.document`:
effective values with sources, server arguments, model, GPU, launch command, explain
findings; host-specific fields such as ports, addresses, per-host paths and seeds left out).
The hosts are grouped by identical documents; the largest group (the first host's on a tie)
is the fleet's configuration, and every other host is compared with it field by field
(:func:`pytest_sglang.judge.baseline.compare`, under the same per-field policy syntax: ignore,
tolerances, waivers), the fields grouped into changes as for baselines: one setting's fields,
and what follows from it, are one change (:func:`pytest_sglang.judge.baseline.compare.changes`).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from pytest_sglang.base.errors import SGLangError

if TYPE_CHECKING:
    from pytest_sglang.judge.baseline.compare import Change, Policy
    from pytest_sglang.target.options import TargetOptions
    from pytest_sglang.target.spec import HostSpec
    from pytest_sglang.target.target import Target


def open_targets(specs: Sequence[HostSpec], options: TargetOptions | None = None) -> dict[str, Target | SGLangError]:
    """Open every spec at once, one thread per host. Each host keeps its own result: a
    :class:`~pytest_sglang.target.target.Target`, or the one-line error that host raised."""
    from pytest_sglang.target.target import Target, open_target  # noqa: F401  (Target: the annotation below)

    def one(spec: HostSpec) -> Target | SGLangError:
        try:
            return open_target(spec, options)
        except SGLangError as exc:
            return exc

    if not specs:
        return {}
    if len(specs) == 1:
        return {specs[0].display: one(specs[0])}
    with ThreadPoolExecutor(max_workers=len(specs), thread_name_prefix="sglang-open") as pool:
        results = list(pool.map(one, specs))
    return {spec.display: result for spec, result in zip(specs, results)}


@dataclass
class FieldDiff:
    """One field where a host differs from the fleet's configuration."""

    field: str
    value: Any
    fleet_value: Any
    source: str | None = None
    fleet_source: str | None = None
    finding: str | None = None
    status: str = "differs"
    note: str | None = None
    group: str | None = None  # the name of the change it belongs to (its first field's path)
    change: str | None = None  # "added" (the fleet has no such field) or "removed" (this host has none), as a baseline diff says it

    @property
    def failing(self) -> bool:
        return self.status in ("differs", "waiver expired")

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "value": self.value,
            "fleet_value": self.fleet_value,
            "source": self.source,
            "fleet_source": self.fleet_source,
            "finding": self.finding,
            "status": self.status,
            "note": self.note,
            "group": self.group,
        }

    def line(self, *, explained: bool = True) -> str:
        value = "(absent)" if self.change == "removed" else _short(self.value)
        fleet = "(absent)" if self.change == "added" else _short(self.fleet_value)
        text = f"{self.field} = {value} (fleet: {fleet})"
        if self.source:
            text += f" from {self.source}"
        if self.finding and explained and not self.field.startswith("findings."):
            text += f" [explained by {self.finding}]"
        if self.status != "differs":
            text += f" - {self.status}" + (f": {self.note}" if self.note else "")
        return text


@dataclass
class Drift:
    """The fleet's verdict: which host holds the fleet's configuration, and per host the fields
    that differ from it (failing) and those a policy tolerates."""

    hosts: list[str]
    reference: str | None
    groups: list[list[str]] = field(default_factory=list)
    differences: dict[str, list[FieldDiff]] = field(default_factory=dict)
    tolerated: dict[str, list[FieldDiff]] = field(default_factory=dict)
    changes: dict[str, list[Change]] = field(default_factory=dict)
    fields_compared: int = 0

    def lines(self, host: str, *, failing: bool = True) -> list[str]:
        """A host's changes from the fleet's configuration (``failing=False``: those a policy
        lets pass), each as one text: the change, then its fields under it."""
        by_field = {d.field: d for d in (*self.differences.get(host, ()), *self.tolerated.get(host, ()))}
        out = []
        for change in self.changes.get(host, ()):
            if change.failing == failing:
                out.append(change.text("fleet", lambda d, c=change: by_field[d.path].line(explained=d.finding != c.finding)))
        return out

    @property
    def agree(self) -> bool:
        return not any(self.differences.values())

    @property
    def fields(self) -> list[str]:
        """Every field some host differs in (failing)."""
        from pytest_sglang.judge.gate.models import differing_fields

        return differing_fields({host: [d.to_dict() for d in diffs] for host, diffs in self.differences.items()})



def documents(targets: Mapping[str, Target]) -> dict[str, dict[str, Any]]:
    """Each host's configuration document (what a baseline file holds)."""
    from pytest_sglang.judge.baseline.document import document

    return {name: document(target) for name, target in targets.items()}


def drift(docs: Mapping[str, Mapping[str, Any]], policy: Policy | None = None) -> Drift:
    """Compare hosts' configuration documents: the largest group of identical documents is the
    fleet's configuration; every other host is listed with the fields it differs in."""
    from pytest_sglang.judge.baseline.compare import changes, flatten

    hosts = list(docs)
    if not hosts:
        return Drift(hosts=[], reference=None)
    flat = {host: flatten(doc) for host, doc in docs.items()}
    by_content: dict[str, list[str]] = {}
    for host in hosts:
        values = {path: value for path, (value, _source) in flat[host].items()}
        by_content.setdefault(json.dumps(values, sort_keys=True, default=str), []).append(host)
    groups = sorted(by_content.values(), key=lambda members: (-len(members), hosts.index(members[0])))
    reference = groups[0][0]
    result = Drift(hosts=hosts, reference=reference, groups=groups)
    result.fields_compared = len(set().union(*(set(f) for f in flat.values())))
    for members in groups[1:]:
        found = changes(docs[reference], docs[members[0]], policy)
        diffs = sorted((d for c in found for d in c.members), key=lambda d: d.path)
        for host in members:
            converted = [
                FieldDiff(
                    field=d.path,
                    value=d.live,
                    fleet_value=d.baseline,
                    source=d.live_source,
                    fleet_source=d.baseline_source,
                    finding=d.finding,
                    status=d.status,
                    note=d.note,
                    group=d.group,
                    change=d.change,
                )
                for d in diffs
            ]
            result.differences[host] = [d for d in converted if d.failing]
            result.tolerated[host] = [d for d in converted if not d.failing]
            result.changes[host] = found
    return result


def _short(value: Any, limit: int = 60) -> str:
    from pytest_sglang.base.text import one_line, short_repr

    if isinstance(value, Mapping) and {"severity", "summary"} <= set(value):  # an explain finding
        return f"{value.get('severity')} ({value.get('status')}): {one_line(value.get('summary'), 90)}"
    return short_repr(value, limit)
