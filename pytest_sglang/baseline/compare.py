"""Field-level comparison of two configuration documents, under a per-field policy.

A policy maps field paths (``effective.max_total_num_tokens``; shell-style patterns such as
``server_args.*_backend`` work too) to one rule each:

- ``ignore``: the field is not compared;
- a numeric tolerance: ``absolute`` and/or ``relative`` (a fraction, or ``5%``); a change within
  either passes;
- a waiver: the field is expected to differ, with a justification and an expiry date; after that
  date the difference fails again and says the waiver expired.

In a baseline file (``"policy"`` section)::

    "policy": {
      "server_args.cuda_graph_bs": "ignore",
      "effective.max_total_num_tokens": {"relative": "5%"},
      "effective.max_running_requests": {"waive": "mamba cache cap, ticket OPS-12", "until": "2026-12-31"}
    }

In the ini file (``sglang_baseline_policy``, one entry per line)::

    server_args.cuda_graph_bs = ignore
    effective.max_total_num_tokens = relative 5%
    effective.mem_fraction_static = absolute 0.01
    effective.max_running_requests = waive until 2026-12-31: mamba cache cap, ticket OPS-12
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Iterable, Mapping

from ..errors import SpecError
from .._text import one_line, short_repr

# Sections of a document that are compared, in order, and what is never compared.
COMPARED = ("sglang_version", "effective", "server_args", "model", "gpu", "launch", "findings")
NOT_COMPARED = frozenset({"format", "key", "policy", "volatile", "server_args_source"})


class PolicyError(SpecError):
    """A policy entry that cannot be understood; the message names the entry."""


@dataclass(frozen=True)
class Rule:
    pattern: str
    kind: str  # "ignore" | "tolerance" | "waiver"
    absolute: float | None = None
    relative: float | None = None
    justification: str | None = None
    until: _dt.date | None = None
    origin: str = ""  # where the entry was written: "ini sglang_baseline_policy", "baseline FILE"

    def describe(self) -> str:
        if self.kind == "ignore":
            return "ignored"
        if self.kind == "tolerance":
            parts = []
            if self.absolute is not None:
                parts.append(f"absolute {self.absolute:g}")
            if self.relative is not None:
                parts.append(f"relative {self.relative * 100:g}%")
            return "tolerance " + " or ".join(parts)
        return f"waived until {self.until}: {self.justification}"


@dataclass
class Policy:
    """Rules by field pattern. An exact path wins over a pattern; among patterns, the first
    given (baseline file before ini file) wins."""

    rules: list[Rule] = field(default_factory=list)

    def rule_for(self, path: str) -> Rule | None:
        for rule in self.rules:
            if rule.pattern == path:
                return rule
        for rule in self.rules:
            if fnmatchcase(path, rule.pattern):
                return rule
        return None

    def __add__(self, other: Policy) -> Policy:
        return Policy([*self.rules, *other.rules])

    @classmethod
    def from_mapping(cls, data: Any, origin: str = "baseline policy") -> Policy:
        """The ``"policy"`` section of a baseline file."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise PolicyError(f"{origin}: the policy section must be an object mapping field paths to rules, not {type(data).__name__}")
        return cls([_rule_from_json(str(k), v, origin) for k, v in data.items()])

    @classmethod
    def from_lines(cls, lines: Iterable[str], origin: str = "ini sglang_baseline_policy") -> Policy:
        """Entries ``PATH = RULE``, one per line (the ini file's ``sglang_baseline_policy``)."""
        rules = []
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            rules.append(_rule_from_line(line, origin))
        return cls(rules)

    def to_mapping(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for r in self.rules:
            if r.kind == "ignore":
                out[r.pattern] = "ignore"
            elif r.kind == "tolerance":
                out[r.pattern] = {k: v for k, v in (("absolute", r.absolute), ("relative", r.relative)) if v is not None}
            else:
                out[r.pattern] = {"waive": r.justification, "until": str(r.until)}
        return out


def _number(text: Any, entry: str, what: str, *, percent: bool = False) -> float:
    raw = text
    scale = 1.0
    if isinstance(text, str):
        text = text.strip()
        if percent and text.endswith("%"):
            text, scale = text[:-1], 0.01
    if isinstance(text, bool):
        raise PolicyError(f"{entry}: {what} must be a number, not {raw!r}")
    try:
        value = float(text) * scale
    except (TypeError, ValueError):
        raise PolicyError(f"{entry}: {what} must be a number{' (or N%)' if percent else ''}, not {raw!r}") from None
    if not math.isfinite(value) or value < 0:
        raise PolicyError(f"{entry}: {what} must be a number of 0 or more, not {raw!r}")
    return value


def _date(text: Any, entry: str) -> _dt.date:
    try:
        return _dt.date.fromisoformat(str(text).strip())
    except ValueError:
        raise PolicyError(f"{entry}: the expiry date must be YYYY-MM-DD, not {short_repr(text, 40)}") from None


def _check_pattern(pattern: str, entry: str) -> str:
    pattern = pattern.strip()
    if not pattern or " " in pattern:
        raise PolicyError(f"{entry}: the field path must be one word such as effective.max_running_requests, not {pattern!r}")
    head = pattern.split(".", 1)[0]
    if not any(fnmatchcase(section, head) for section in COMPARED):
        raise PolicyError(f"{entry}: the field path must start with one of {', '.join(COMPARED)} (or a pattern matching one), not {pattern!r}")
    return pattern


def _rule_from_json(pattern: str, value: Any, origin: str) -> Rule:
    entry = f"{origin} entry {pattern!r}"
    pattern = _check_pattern(pattern, entry)
    if value == "ignore" or value == {"ignore": True}:
        return Rule(pattern, "ignore", origin=origin)
    if not isinstance(value, Mapping):
        raise PolicyError(f"{entry}: a rule is \"ignore\", {{\"absolute\": N}}, {{\"relative\": N}} or {{\"waive\": \"why\", \"until\": \"YYYY-MM-DD\"}}, not {short_repr(value, 60)}")
    keys = set(value)
    if keys & {"waive", "until"}:
        unknown = keys - {"waive", "until"}
        if unknown or not {"waive", "until"} <= keys:
            raise PolicyError(f"{entry}: a waiver needs exactly \"waive\" (the justification) and \"until\" (YYYY-MM-DD)")
        why = value["waive"]
        if not isinstance(why, str) or not why.strip():
            raise PolicyError(f"{entry}: the waiver's justification (\"waive\") must be a non-empty text")
        return Rule(pattern, "waiver", justification=why.strip(), until=_date(value["until"], entry), origin=origin)
    aliases = {"absolute": "absolute", "abs": "absolute", "relative": "relative", "rel": "relative"}
    unknown = keys - set(aliases)
    if unknown or not keys:
        raise PolicyError(f"{entry}: unknown rule key(s) {', '.join(sorted(map(str, unknown))) or '(none)'}: use absolute, relative, waive+until or \"ignore\"")
    got = {aliases[k]: _number(v, entry, aliases[k], percent=aliases[k] == "relative") for k, v in value.items()}
    return Rule(pattern, "tolerance", absolute=got.get("absolute"), relative=got.get("relative"), origin=origin)


_WAIVE = re.compile(r"^waive\s+until\s+(\S+?)\s*:\s*(.*)$", re.I)


def _rule_from_line(line: str, origin: str) -> Rule:
    entry = f"{origin} entry {line!r}"
    if "=" not in line:
        raise PolicyError(f"{entry}: write PATH = ignore | absolute N | relative N% | waive until YYYY-MM-DD: why")
    pattern, _, rule = line.partition("=")
    pattern = _check_pattern(pattern, entry)
    rule = rule.strip()
    if rule.lower() == "ignore":
        return Rule(pattern, "ignore", origin=origin)
    waive = _WAIVE.match(rule)
    if waive:
        if not waive.group(2).strip():
            raise PolicyError(f"{entry}: a waiver needs a justification after the date: waive until YYYY-MM-DD: why")
        return Rule(pattern, "waiver", justification=waive.group(2).strip(), until=_date(waive.group(1), entry), origin=origin)
    if rule.lower().startswith("waive"):
        raise PolicyError(f"{entry}: write waive until YYYY-MM-DD: why")
    words = rule.split()
    got: dict[str, float] = {}
    if not words or len(words) % 2:
        raise PolicyError(f"{entry}: write PATH = ignore | absolute N | relative N% | waive until YYYY-MM-DD: why")
    for name, number in zip(words[::2], words[1::2]):
        kind = {"absolute": "absolute", "abs": "absolute", "relative": "relative", "rel": "relative"}.get(name.lower())
        if kind is None:
            raise PolicyError(f"{entry}: unknown rule {name!r}: use ignore, absolute N, relative N% or waive until YYYY-MM-DD: why")
        got[kind] = _number(number, entry, kind, percent=kind == "relative")
    return Rule(pattern, "tolerance", absolute=got.get("absolute"), relative=got.get("relative"), origin=origin)


# ---- diffs -------------------------------------------------------------------------------------
FAILING = ("differs", "waiver expired")


@dataclass
class FieldDiff:
    """One field that differs between a baseline and a live document.

    ``status``: ``differs`` (fails), ``waiver expired`` (fails), ``within tolerance`` or
    ``waived`` (pass; kept so a report shows them). ``change``: ``changed``, ``added`` (not in the
    baseline) or ``removed`` (not in the live document). ``finding``: the id of the live (else
    baseline) explain finding about this setting, which accounts for the change."""

    path: str
    baseline: Any
    live: Any
    baseline_source: str | None = None
    live_source: str | None = None
    finding: str | None = None
    finding_summary: str | None = None
    change: str = "changed"
    status: str = "differs"
    note: str | None = None

    @property
    def failing(self) -> bool:
        return self.status in FAILING

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["failing"] = self.failing
        return out

    def line(self) -> str:
        """One line: ``PATH: BASELINE -> LIVE (sources) [explained by ID: summary] - status: note``."""
        b = "(absent)" if self.change == "added" else _shown(self.baseline)
        v = "(absent)" if self.change == "removed" else _shown(self.live)
        text = f"{self.path}: {b} -> {v}"
        if not self.path.startswith("findings."):
            if self.baseline_source and self.baseline_source == self.live_source:
                text += f" (from {self.baseline_source})"
            else:
                sources = [f"{side} from {src}" for side, src in (("baseline", self.baseline_source), ("live", self.live_source)) if src]
                if sources:
                    text += f" ({'; '.join(sources)})"
            if self.finding:
                text += f" [explained by {self.finding}" + (f": {one_line(self.finding_summary, 100)}" if self.finding_summary else "") + "]"
        if self.status != "differs":
            text += f" - {self.status}" + (f": {self.note}" if self.note else "")
        elif self.note:
            text += f" - {self.note}"
        return text


def _shown(value: Any) -> str:
    if isinstance(value, Mapping) and {"severity", "summary"} <= set(value):  # an explain finding
        return f"{value.get('severity')} ({value.get('status')}): {one_line(value.get('summary'), 90)}"
    return short_repr(value, 80)


_ABSENT = object()


def flatten(doc: Mapping[str, Any]) -> dict[str, tuple[Any, str | None]]:
    """Compared fields of a document: path -> (value, source)."""
    out: dict[str, tuple[Any, str | None]] = {}
    if "sglang_version" in doc:
        out["sglang_version"] = (doc["sglang_version"], None)
    for name, entry in (doc.get("effective") or {}).items():
        if isinstance(entry, Mapping) and "value" in entry:
            out[f"effective.{name}"] = (entry["value"], entry.get("source"))
        else:
            out[f"effective.{name}"] = (entry, None)
    args_source = doc.get("server_args_source")
    for name, value in (doc.get("server_args") or {}).items():
        out[f"server_args.{name}"] = (value, args_source)
    for section in ("model", "gpu"):
        for name, value in (doc.get(section) or {}).items():
            out[f"{section}.{name}"] = (value, None)
    launch = doc.get("launch") or {}
    launch_source = launch.get("source")
    if launch:
        out["launch.entrypoint"] = (launch.get("entrypoint"), launch_source)
    for name, value in (launch.get("requested") or {}).items():
        out[f"launch.requested.{name}"] = (value, launch_source)
    for name, value in (launch.get("env") or {}).items():
        out[f"launch.env.{name}"] = (value, launch_source)
    for finding in doc.get("findings") or []:
        if isinstance(finding, Mapping) and "id" in finding:
            out[f"findings.{finding['id']}"] = ({k: finding.get(k) for k in ("severity", "status", "summary")}, "explain")
    return out


def _findings_by_setting(doc: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for f in doc.get("findings") or []:
        if not isinstance(f, Mapping) or not f.get("setting") or f.get("status") == "undecided":
            continue
        setting = str(f["setting"])
        for name in {setting, setting.rsplit(".", 1)[-1]}:
            out.setdefault(name, (str(f["id"]), str(f.get("summary") or "")))
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _within(rule: Rule, baseline: Any, live: Any) -> bool:
    if not (_is_number(baseline) and _is_number(live)):
        return False
    delta = abs(float(live) - float(baseline))
    if rule.absolute is not None and delta <= rule.absolute + 1e-12:
        return True
    if rule.relative is not None and delta <= rule.relative * abs(float(baseline)) + 1e-12:
        return True
    return False


def compare(baseline_doc: Mapping[str, Any], live_doc: Mapping[str, Any], policy: Policy | Mapping[str, Any] | None = None, *, today: _dt.date | None = None) -> list[FieldDiff]:
    """Typed field-level differences between a baseline and a live document.

    ``policy``: a :class:`Policy`, a policy mapping (as in a baseline file), or None for the
    baseline document's own ``"policy"`` section. Ignored fields are left out; differences
    within tolerance or under a valid waiver are returned with a passing status."""
    if policy is None:
        policy = Policy.from_mapping(baseline_doc.get("policy"), "baseline policy")
    elif not isinstance(policy, Policy):
        policy = Policy.from_mapping(policy)
    today = today or _dt.date.today()
    base, live = flatten(baseline_doc), flatten(live_doc)
    explained_live, explained_base = _findings_by_setting(live_doc), _findings_by_setting(baseline_doc)
    diffs: list[FieldDiff] = []
    for path in sorted(base.keys() | live.keys()):
        b_value, b_source = base.get(path, (_ABSENT, None))
        l_value, l_source = live.get(path, (_ABSENT, None))
        if b_value == l_value and type(b_value) is type(l_value) or (_is_number(b_value) and _is_number(l_value) and b_value == l_value):
            continue
        rule = policy.rule_for(path)
        if rule is not None and rule.kind == "ignore":
            continue
        change = "added" if b_value is _ABSENT else "removed" if l_value is _ABSENT else "changed"
        diff = FieldDiff(
            path=path,
            baseline=None if b_value is _ABSENT else b_value,
            live=None if l_value is _ABSENT else l_value,
            baseline_source=b_source,
            live_source=l_source,
            change=change,
        )
        if path.startswith("findings."):
            diff.finding = path.removeprefix("findings.")
        else:
            name = path.rsplit(".", 1)[-1]
            found = explained_live.get(name) or explained_base.get(name)
            if found:
                diff.finding, diff.finding_summary = found
        if rule is not None and rule.kind == "tolerance":
            if _within(rule, diff.baseline, diff.live):
                diff.status, diff.note = "within tolerance", rule.describe()
            else:
                diff.note = f"outside the {rule.describe()} ({rule.origin})"
        elif rule is not None and rule.kind == "waiver":
            assert rule.until is not None
            if today <= rule.until:
                diff.status, diff.note = "waived", f"until {rule.until}: {rule.justification} ({rule.origin})"
            else:
                diff.status = "waiver expired"
                diff.note = f"the waiver expired on {rule.until} ({rule.justification}; {rule.origin}): renew it or update the baseline"
        diffs.append(diff)
    return diffs


def expired_waivers(policy: Policy, today: _dt.date | None = None) -> list[Rule]:
    today = today or _dt.date.today()
    return [r for r in policy.rules if r.kind == "waiver" and r.until is not None and r.until < today]
