"""The hosts of a run side by side: short labels for tables (:func:`host_labels`), and the
fleet view (:func:`fleet_view`): the hosts by the fields where they differ from the fleet's
configuration, with the one count of differing fields every report gives (the fleet check's,
counted by :func:`pytest_sglang.judge.gate.models.differing_fields`)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_sglang.judge.gate.models import CheckRecord, HostSection, RunReport, differing_fields

# ---- short host labels ---------------------------------------------------------------------------

LABEL_CHARS = 20  # a label longer than this is no shorter to read than a number
_SEPARATORS = "-_./:@?=&,+~ "


def _label_starts(text: str) -> list[int]:
    """Where a suffix of ``text`` may start: its start, and after each separator (ends first)."""
    starts = [i for i in range(1, len(text)) if text[i - 1] in _SEPARATORS and text[i] not in _SEPARATORS]
    return sorted({0, *starts}, reverse=True)


def _common_tail(specs: Sequence[str]) -> int:
    """How many characters every spec ends with, cut to start at a separator (``:30000``)."""
    tail = 0
    while all(len(s) > tail for s in specs) and len({s[-tail - 1] for s in specs}) == 1:
        tail += 1
    while tail and specs[0][-tail] not in _SEPARATORS:
        tail -= 1
    return tail


def _label(text: str, others: Sequence[str]) -> str | None:
    """The shortest end of ``text`` no other ends with; one of digits alone (``0.2`` of an
    address) runs back to the address or port it is part of; a lone host's holds a letter."""
    for start in _label_starts(text):
        end = text[start:]
        if any(t == end or (t.endswith(end) and t[-len(end) - 1] in _SEPARATORS) for t in others):
            continue
        if not others and not re.search("[A-Za-z]", end):
            continue
        if not re.search("[A-Za-z]", end):
            start = max(text.rfind(c, 0, start) for c in "/:@") + 1
        return text[start:].strip(_SEPARATORS) or None
    return None


def host_labels(hosts: Sequence[str]) -> dict[str, str]:
    """A short label per host for tables and charts: the shortest end of its spec that no
    other spec ends with (once what every spec ends with, a shared port or file extension, is
    set aside), cut at a separator (``baseline``, ``gpu07``); when such ends are not short or
    not distinct, the host's number (``#1``, ``#2`` ... in the report's order)."""
    specs = list(dict.fromkeys(hosts))
    if len(specs) != len(hosts):
        return {h: f"#{i}" for i, h in enumerate(specs, 1)}
    tail = _common_tail(specs) if len(specs) > 1 else 0
    trimmed = [s[: len(s) - tail] if tail else s for s in specs]
    labels: dict[str, str] = {}
    for spec, text in zip(specs, trimmed):
        found = _label(text, [t for t in trimmed if t is not text])
        if found:
            labels[spec] = found
    values = list(labels.values())
    if len(labels) != len(specs) or len(set(values)) != len(values) or any(len(v) > LABEL_CHARS or not v for v in values):
        return {h: f"#{i}" for i, h in enumerate(specs, 1)}
    return labels


# ---- the fleet view ---------------------------------------------------------------------------------------

FLEET_CHECK = "sglang-fleet"
# Facts compared across hosts when the run has no fleet check, beside the effective values.
FLEET_FACTS = ("sglang_version", "model", "gpu")


@dataclass(frozen=True)
class FleetView:
    """The hosts of a run by the fields where they differ from the fleet's configuration.
    ``fields`` is the one count of differing fields every output gives; ``compared`` the
    number of fields compared; ``values`` per host (read), its value of each differing field;
    ``fleet`` the fleet's value of each; ``reference`` the host whose configuration is the
    fleet's; ``check`` the fleet check's record, when the run had one (``--sglang-fleet``)."""

    hosts: list[str]
    fields: list[str]
    compared: int
    reference: str | None
    fleet: dict[str, Any] = field(default_factory=dict)
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    check: CheckRecord | None = None

    def differs(self, host: str, name: str) -> bool:
        return _same(self.values[host].get(name)) != _same(self.fleet.get(name))


def _same(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def fleet_check(doc: RunReport) -> CheckRecord | None:
    """The run's fleet check record, when it compared the hosts."""
    return next((c for c in doc.run_checks if c.check == FLEET_CHECK and c.fields_compared is not None), None)


def fleet_view(doc: RunReport) -> FleetView | None:
    """The fleet of a run of two hosts or more: as its fleet check compared it (every field of
    the hosts' configuration documents), else by the effective values and facts the report
    keeps (the largest group of hosts that agree is the fleet, as the check groups them)."""
    if len(doc.hosts) < 2:
        return None
    check = fleet_check(doc)
    if check is not None:
        return _checked_fleet(doc, check)
    read = {h.host: _kept_values(h) for h in doc.hosts if h.facts}
    if not read:
        return FleetView(hosts=[], fields=[], compared=0, reference=None)
    groups: dict[str, list[str]] = {}
    for host, values in read.items():
        groups.setdefault(_same(values), []).append(host)
    reference = max(groups.values(), key=len)[0]
    names = sorted({name for values in read.values() for name in values})
    fleet = read[reference]
    fields = [n for n in names if any(_same(v.get(n)) != _same(fleet.get(n)) for v in read.values())]
    values = {host: {n: own.get(n) for n in fields} for host, own in read.items()}
    return FleetView(hosts=list(read), fields=fields, compared=len(names), reference=reference, fleet={n: fleet.get(n) for n in fields}, values=values)


def _kept_values(host: HostSection) -> dict[str, Any]:
    values = {f"facts.{name}": getattr(host.facts, name, None) for name in FLEET_FACTS}
    values.update({f"effective.{name}": entry.value for name, entry in host.effective.items()})
    return values


def _checked_fleet(doc: RunReport, check: CheckRecord) -> FleetView:
    differences = check.differences or {}
    fields = differing_fields(differences)
    fleet: dict[str, Any] = {}
    for records in differences.values():
        for d in records:
            fleet.setdefault(str(d.get("field")), d.get("fleet_value"))
    unread = set(check.unread or {}) | {h.host for h in doc.hosts if not h.facts}
    hosts = [h for h in (check.hosts or [h.host for h in doc.hosts]) if h not in unread]
    values = {}
    for host in hosts:
        own = {str(d.get("field")): d.get("value") for d in differences.get(host, ())}
        values[host] = {n: own[n] if n in own else fleet.get(n) for n in fields}
    return FleetView(hosts=hosts, fields=fields, compared=check.fields_compared or 0, reference=check.reference, fleet=fleet, values=values, check=check)


def field_section(name: str) -> tuple[str, str]:
    """A compared field's section and its name there: ``launch.requested.tp_size`` is
    (``launch.requested``, ``tp_size``), ``findings.capacity.mamba-cap`` (``findings``,
    ``capacity.mamba-cap``)."""
    found = re.match(r"(launch\.requested|[^.]+)\.(.+)", name)
    return (found[1], found[2]) if found else ("", name)


__all__ = ["FLEET_CHECK", "FleetView", "field_section", "fleet_check", "fleet_view", "host_labels"]
