"""Field-level comparison of two configuration documents, under a per-field policy, grouped
into changes: the fields of one setting and what follows from it (:func:`changes`).

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

An ``ignore`` or a waiver written for one field of a change covers the whole change (see
:class:`Change`).
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Iterable, Mapping

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.text import one_line, short_repr
from pytest_sglang.model.knowledge.settings import SAME_SETTING, SIZED_FROM

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
        return self.exact(path) or next((rule for rule in self.rules if fnmatchcase(path, rule.pattern)), None)

    def exact(self, path: str) -> Rule | None:
        """The rule written for exactly this path (no pattern)."""
        return next((rule for rule in self.rules if rule.pattern == path), None)

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
    baseline) explain finding about this field's setting, which accounts for the change (the same
    on every field of one setting). ``group``: the name of the :class:`Change` the field belongs
    to. ``policy``: the policy entry (its path or pattern) that decided the status, if any."""

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
    group: str | None = None
    policy: str | None = None

    @property
    def failing(self) -> bool:
        return self.status in FAILING

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["failing"] = self.failing
        return out

    def values(self) -> str:
        """``BASELINE -> LIVE``, ``(absent)`` for a side without the field."""
        b = "(absent)" if self.change == "added" else _shown(self.baseline)
        v = "(absent)" if self.change == "removed" else _shown(self.live)
        return f"{b} -> {v}"

    def line(self, *, explained: bool = True) -> str:
        """One line: ``PATH: BASELINE -> LIVE (sources) [explained by ID: summary] - status: note``
        (``explained=False`` leaves out the finding, when the line is shown under its change)."""
        text = f"{self.path}: {self.values()}"
        if not self.path.startswith("findings."):
            if self.baseline_source and self.baseline_source == self.live_source:
                text += f" (from {self.baseline_source})"
            else:
                sources = [f"{side} from {src}" for side, src in (("baseline", self.baseline_source), ("live", self.live_source)) if src]
                if sources:
                    text += f" ({'; '.join(sources)})"
            if self.finding and explained:
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


def _section(doc: Mapping[str, Any], name: str, out: dict[str, tuple[Any, str | None]], source: str | None = None, path: str | None = None) -> Mapping[str, Any]:
    """The mapping a document holds under ``name`` ({} when absent or empty). Anything else there
    (a baseline edited by hand: ``"effective": [1, 2]``) is compared whole, as the one field
    ``path`` (``name`` by default), so it shows as a difference instead of breaking the comparison."""
    value = doc.get(name)
    if isinstance(value, Mapping):
        return value
    if value not in (None, "", [], {}):
        out[path or name] = (value, source)
    return {}


def _source(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def flatten(doc: Mapping[str, Any]) -> dict[str, tuple[Any, str | None]]:
    """Compared fields of a document: path -> (value, source). A section of the wrong type is
    compared whole, under its own name (see :func:`_section`)."""
    out: dict[str, tuple[Any, str | None]] = {}
    if not isinstance(doc, Mapping):
        raise SpecError(f"a configuration document is a JSON object, not a {type(doc).__name__}: rewrite it with --sglang-update-baseline")
    if "sglang_version" in doc:
        out["sglang_version"] = (doc["sglang_version"], None)
    for name, entry in _section(doc, "effective", out).items():
        if isinstance(entry, Mapping) and "value" in entry:
            out[f"effective.{name}"] = (entry["value"], _source(entry.get("source")))
        else:
            out[f"effective.{name}"] = (entry, None)
    args_source = _source(doc.get("server_args_source"))
    for name, value in _section(doc, "server_args", out, args_source).items():
        out[f"server_args.{name}"] = (value, args_source)
    for section in ("model", "gpu"):
        for name, value in _section(doc, section, out).items():
            out[f"{section}.{name}"] = (value, None)
    launch = _section(doc, "launch", out)
    launch_source = _source(launch.get("source"))
    if launch:
        out["launch.entrypoint"] = (launch.get("entrypoint"), launch_source)
    for name, value in _section(launch, "requested", out, launch_source, "launch.requested").items():
        out[f"launch.requested.{name}"] = (value, launch_source)
    for name, value in _section(launch, "env", out, launch_source, "launch.env").items():
        out[f"launch.env.{name}"] = (value, launch_source)
    findings = doc.get("findings")
    if isinstance(findings, list):
        for finding in findings:
            if isinstance(finding, Mapping) and "id" in finding:
                out[f"findings.{finding['id']}"] = ({k: finding.get(k) for k in ("severity", "status", "summary")}, "explain")
    elif findings not in (None, {}, ""):
        out["findings"] = (findings, None)
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


# ---- one change, several fields ----------------------------------------------------------------
#
# A document reports one setting in several places: the server argument, the value in force
# (``effective``), what the launch command asked for, the explain finding about it; and SGLang
# derives further values from it. A difference is therefore grouped into a :class:`Change`:
#
# 1. fields of one *setting* (``server_args.X``, ``effective.X``, ``launch.requested.X`` are all
#    the setting X; ``findings.ID`` is the setting its finding is about; SAME_SETTING joins
#    the effective fields the normaliser derives from a field of another name; it and SIZED_FROM
#    are in the knowledge base, pytest_sglang/model/knowledge/settings.py);
# 2. settings that *follow* from another difference: an explain finding's rule reads the other
#    setting to decide its own (the knowledge base's ``when``/``value`` expressions), or SGLang sizes
#    the value from it at start-up (SIZED_FROM). A setting that follows from exactly one change,
#    and that the launch command does not ask for, is folded into that change; one the launch
#    command asks for (a value requested but not in effect) stays a change of its own, and says
#    what it follows from.

# How a change is named when its first field is one of these (booleans then read on/off, and a
# switch's None reads off).
LABELS: dict[str, str] = {
    "prefill_cuda_graph": "prefill CUDA graph",
    "decode_cuda_graph": "decode CUDA graph",
    "flashinfer_allreduce_fusion_requested": "FlashInfer allreduce fusion requested",
    "flashinfer_allreduce_fusion": "FlashInfer allreduce fusion in effect",
    "speculative_algorithm": "speculative decoding",
}
_SWITCHES = frozenset({"speculative_algorithm"})

# Fields of the documents' model and gpu sections, and facts the knowledge base reads, by the
# setting name they are elsewhere.
_SECTION_NAMES = {"gpu.name": "gpu_name", "gpu.count": "gpu_count", "gpu.sm": "sm", "gpu.devices": "gpu_devices"}
_READ_NAMES = {
    "model.arch": "architectures",
    "model.multimodal": "is_multimodal",
    "model.hybrid": "is_hybrid",
    "gpu.sm": "sm",
    "gpu.name": "gpu_name",
    "gpu.memory_mib": "gpu_devices",
}
_SEVERITY = {"error": 0, "warning": 1, "info": 2}
# Change kinds, in the order they are shown: what SGLang changed by itself (nothing in the diff
# accounts for it, or a requested value is not in effect), what the launch command asks
# differently, and settings that follow from several of those.
KINDS = ("sglang", "requested", "follows")


def _ancestors() -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}

    def walk(name: str, seen: frozenset[str]) -> frozenset[str]:
        if name in out:
            return out[name]
        found: set[str] = set()
        for parent in SAME_SETTING.get(name, ()):
            if parent not in seen:
                found |= {parent, *walk(parent, seen | {parent})}
        out[name] = frozenset(found)
        return out[name]

    for name in SAME_SETTING:
        walk(name, frozenset({name}))
    return out


_ANCESTORS = _ancestors()


def _related(a: str, b: str) -> bool:
    return a == b or b in _ANCESTORS.get(a, ()) or a in _ANCESTORS.get(b, ())


def _setting_name(setting: str) -> str:
    """``runtime.max_running_requests`` -> ``max_running_requests``; ``cuda_graph_config.decode.max_bs`` -> ``cuda_graph_config``."""
    return setting.removeprefix("runtime.").split(".", 1)[0]


def _setting_of(path: str, finding_settings: Mapping[str, str]) -> str:
    """The setting a field path is about."""
    if path.startswith("findings."):
        fid = path.removeprefix("findings.")
        return finding_settings.get(fid) or path
    if path in _SECTION_NAMES:
        return _SECTION_NAMES[path]
    for prefix in ("effective.", "server_args.", "launch.requested.", "model."):
        if path.startswith(prefix):
            return path.removeprefix(prefix)
    if path.startswith("launch.env."):
        return "env." + path.removeprefix("launch.env.")
    return path


def _read_name(read: str) -> str | None:
    """A fact a knowledge-base rule reads (``arg.X``, ``effective.X``, ``model.arch``) as a setting name."""
    if read in _READ_NAMES:
        return _READ_NAMES[read]
    root, _, rest = read.partition(".")
    if root in ("arg", "effective", "requested", "runtime") and rest:
        return rest.split(".", 1)[0]
    if root == "env" and rest:
        return read
    return None


def _knowledge() -> Any:
    from pytest_sglang.base.errors import SGLangError

    try:
        from pytest_sglang.judge.explain.kb import load

        return load()
    except SGLangError:  # the knowledge base cannot load: group without its rules
        return None


def _rule_of(kb: Any, fid: str) -> Any:
    if kb is None:
        return None
    return kb.by_id.get(fid) or kb.by_id.get(fid.split(":", 1)[0])


def _findings(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    findings = doc.get("findings")
    return [f for f in findings if isinstance(f, Mapping) and f.get("id")] if isinstance(findings, list) else []


def _requests(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What a document says was requested, by setting name: the launch command's values, and the
    ``requested`` an effective value carries."""
    out: dict[str, Any] = {}
    ignored: dict[str, tuple[Any, str | None]] = {}  # sections of the wrong type: flatten reports them
    for name, entry in _section(doc, "effective", ignored).items():
        if isinstance(entry, Mapping) and entry.get("requested") is not None:
            out[name] = entry["requested"]
    for name, value in _section(_section(doc, "launch", ignored), "requested", ignored).items():
        out[name] = value
    return out


_SECTION_RANK = ("effective.", "sglang_version", "server_args.", "model.", "gpu.", "launch.requested.", "launch.", "findings.")


def _section_rank(path: str) -> int:
    return next((i for i, prefix in enumerate(_SECTION_RANK) if path.startswith(prefix)), len(_SECTION_RANK))


@dataclass
class _Setting:
    """The differing fields of one setting, and what the grouping knows about it."""

    key: str
    paths: list[str] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    causes: set[str] = field(default_factory=set)  # keys of the settings it follows from
    requested: bool = False  # the launch command (or an effective value) names a requested value
    requested_changed: bool = False
    finding: tuple[str, str] | None = None
    severity: int = len(_SEVERITY)

    @property
    def head(self) -> str:
        effective = {p.removeprefix("effective.") for p in self.paths if p.startswith("effective.")}

        def derived(path: str) -> bool:  # an effective field derived from another one that differs too
            name = path.removeprefix("effective.")
            return path.startswith("effective.") and any(other in _ANCESTORS.get(name, ()) for other in effective - {name})

        return min(self.paths, key=lambda p: (_section_rank(p), derived(p), p))


def _settings(diffs: Mapping[str, FieldDiff], baseline_doc: Mapping[str, Any], live_doc: Mapping[str, Any], reported: Iterable[str]) -> dict[str, _Setting]:
    """The differing fields by setting (SAME_SETTING joins the effective fields derived from
    fields of other names), each with the settings it follows from. ``reported``: every field
    path of the two documents."""
    kb = _knowledge()
    live_findings, base_findings = _findings(live_doc), _findings(baseline_doc)
    finding_settings: dict[str, str] = {}
    for f in base_findings + live_findings:  # the live document's wins
        rule = _rule_of(kb, str(f["id"]))
        setting = f.get("setting") or (rule.setting if rule is not None else "")
        if setting:
            finding_settings[str(f["id"])] = _setting_name(str(setting))
    names = {path: _setting_of(path, finding_settings) for path in diffs}
    same = {_setting_of(path, finding_settings) for path in reported} - set(names.values())
    parent = {name: name for name in names.values()}

    def find(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    present = sorted(parent)
    for name in present:
        for other in present:
            if other < name and _related(name, other):
                a, b = find(name), find(other)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    settings: dict[str, _Setting] = {}
    for path in diffs:
        key = find(names[path])
        s = settings.setdefault(key, _Setting(key))
        s.paths.append(path)
        s.names.add(names[path])

    def setting_for(name: str | None) -> str | None:
        if name is None:
            return None
        if name in parent:
            return find(name)
        if name in same:  # reported alike on both sides: nothing follows from it
            return None
        related = [n for n in present if _related(n, name)]
        return find(related[0]) if related else None

    # What each setting follows from: the findings' rules (what they read to decide their
    # setting), then the sizes SGLang computes at start-up.
    for f in live_findings + base_findings:
        if f.get("status") == "undecided":
            continue
        target = setting_for(finding_settings.get(str(f["id"])))
        rule = _rule_of(kb, str(f["id"]))
        if target is None or rule is None:
            continue
        for read in sorted(kb.reads_all.get(rule.id, ())):
            cause = setting_for(_read_name(read))
            if cause is not None and cause != target:
                settings[target].causes.add(cause)
    for name, sources in SIZED_FROM.items():
        target = setting_for(name) if name in parent else None
        if target is None:
            continue
        for source in sources:
            cause = setting_for(source)
            if cause is not None and cause != target:
                settings[target].causes.add(cause)

    asked_base, asked_live = _requests(baseline_doc), _requests(live_doc)
    for s in settings.values():
        head = s.head
        s.paths.sort(key=lambda p: (p != head, _section_rank(p), p))
        s.requested = any(n in asked_base or n in asked_live for n in s.names)
        s.requested_changed = any(p.startswith("launch.requested.") for p in s.paths) or any(
            asked_base.get(n) != asked_live.get(n) for n in s.names if f"effective.{n}" in diffs
        )
        for doc_findings in (live_findings, base_findings):
            about = [f for f in doc_findings if f.get("status") != "undecided" and setting_for(finding_settings.get(str(f["id"]))) == s.key]
            about.sort(key=lambda f: (_SEVERITY.get(str(f.get("severity")), len(_SEVERITY)), str(f["id"])))
            if about:
                s.severity = min(s.severity, _SEVERITY.get(str(about[0].get("severity")), len(_SEVERITY)))
                if s.finding is None:
                    s.finding = (str(about[0]["id"]), str(about[0].get("summary") or ""))
    return settings


def _roots(settings: Mapping[str, _Setting]) -> dict[str, str]:
    """Each setting's change: its own, or the one change it follows from when it follows from
    exactly one and was not requested."""
    memo: dict[str, str] = {}

    def root(key: str, stack: frozenset[str]) -> str:
        if key in memo:
            return memo[key]
        s = settings[key]
        if s.requested or not s.causes:
            memo[key] = key
            return key
        found = {root(c, stack | {key}) for c in sorted(s.causes) if c not in stack} - {key}
        result = found.pop() if len(found) == 1 else key
        if not stack:
            memo[key] = result
        return result

    return {key: root(key, frozenset()) for key in sorted(settings)}


@dataclass
class Change:
    """One change and its consequences: the differing fields of one setting (its server
    argument, effective value, requested value, explain finding) and of the settings that follow
    from it. A policy entry naming any field of the change's own setting (or ``name``) covers
    every field of the change; one naming a consequence's field covers that consequence.

    ``kind``: ``sglang`` (SGLang changed it: nothing else in the diff accounts for it, or a value
    the launch command asks for is not in effect), ``requested`` (the launch command asks
    differently) or ``follows`` (it follows from several other changes, named in
    ``follows_from``). ``finding``: the explain finding about the change's setting."""

    name: str
    title: str
    baseline: Any
    live: Any
    kind: str
    members: list[FieldDiff]
    consequences: list[str] = field(default_factory=list)  # paths of members that follow from the change
    finding: str | None = None
    finding_summary: str | None = None
    findings: list[str] = field(default_factory=list)
    follows_from: list[str] = field(default_factory=list)
    severity: int = len(_SEVERITY)

    @property
    def failing(self) -> bool:
        return any(d.failing for d in self.members)

    @property
    def fields(self) -> list[str]:
        return [d.path for d in self.members]

    @property
    def status(self) -> str:
        failing = [d.status for d in self.members if d.failing]
        if failing:
            return "waiver expired" if all(s == "waiver expired" for s in failing) else "differs"
        return "waived" if any(d.status == "waived" for d in self.members) else "within tolerance"

    @property
    def note(self) -> str | None:
        status = self.status
        if status == "differs":
            return None
        return next((d.note for d in self.members if d.status == status and d.note), None)

    def headline(self, style: str = "diff") -> str:
        """``TITLE: BASELINE -> LIVE [finding: summary] (N fields)`` (``style="fleet"``:
        ``TITLE = LIVE (fleet: BASELINE) ...``), with the status when it is not ``differs``."""
        if style == "fleet":
            text = f"{self.title} = {self.live} (fleet: {self.baseline})"
        else:
            text = f"{self.title}: {self.baseline} -> {self.live}"
        if self.finding:
            text += f" [{self.finding}" + (f": {one_line(self.finding_summary, 100)}" if self.finding_summary else "") + "]"
        if len(self.members) > 1:
            text += f" ({len(self.members)} fields)"
        status = self.status
        if status != "differs":
            text += f" - {status}" + (f": {self.note}" if self.note else "")
        return text

    def lines(self, style: str = "diff", member_line: Any = None) -> list[str]:
        """The headline, then what it follows from and one line per field (the consequences
        after ``and what follows from it:``), indented under it."""
        show = member_line or (lambda d: d.line(explained=d.finding != self.finding))
        out = [self.headline(style)]
        if self.follows_from:
            out.append(f"    follows from: {', '.join(self.follows_from)}")
        out += [f"    {show(d)}" for d in self.members if d.path not in self.consequences]
        rest = [d for d in self.members if d.path in self.consequences]
        if rest:
            out.append("    and what follows from it:")
            out += [f"      {show(d)}" for d in rest]
        return out

    def text(self, style: str = "diff", member_line: Any = None) -> str:
        return "\n".join(self.lines(style, member_line))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able; the fields themselves are the ``diffs`` (each names its change in ``group``)."""
        return {
            "name": self.name,
            "title": self.title,
            "line": self.headline(),
            "kind": self.kind,
            "status": self.status,
            "failing": self.failing,
            "note": self.note,
            "finding": self.finding,
            "finding_summary": self.finding_summary,
            "findings": self.findings,
            "follows_from": self.follows_from,
            "baseline_value": self.baseline,
            "live_value": self.live,
            "fields": self.fields,
            "consequences": [p for p in self.consequences if p in self.fields],
        }


def _title_values(d: FieldDiff) -> tuple[str, str, str]:
    name = _setting_of(d.path, {}) if not d.path.startswith("findings.") else d.path
    label = LABELS.get(name)

    def word(value: Any, absent: bool) -> str:
        if absent:
            return "(absent)"
        if label is not None and isinstance(value, bool):
            return "on" if value else "off"
        if label is not None and value is None and name in _SWITCHES:
            return "off"
        return _shown(value)

    return label or name, word(d.baseline, d.change == "added"), word(d.live, d.change == "removed")


def _setting_rule(policy: Policy, setting: _Setting, kinds: tuple[str, ...]) -> Rule | None:
    """The rule written for a setting: for one of its differing fields, else a waiver or a
    tolerance written for a field of the same setting, or of the setting it derives from, that
    does not differ (a waiver written for ``effective.max_running_requests`` when only the total
    differs; an ``ignore`` is never stretched that far). Patterns do not count."""
    for path in setting.paths:
        rule = policy.exact(path)
        if rule is not None and rule.kind in kinds:
            return rule
    names = set(setting.names).union(*(_ANCESTORS.get(n, ()) for n in setting.names))
    for rule in policy.rules:
        if rule.kind in kinds and rule.kind != "ignore" and not any(c in rule.pattern for c in "*?[") and not rule.pattern.startswith("findings."):
            if _setting_of(rule.pattern, {}) in names:
                return rule
    return None


def _judge(diff: FieldDiff, rule: Rule, today: _dt.date, inherited: bool) -> None:
    via = f", set for {rule.pattern}" if inherited else ""
    diff.policy = rule.pattern
    if rule.kind == "tolerance":
        if _within(rule, diff.baseline, diff.live):
            diff.status, diff.note = "within tolerance", rule.describe() + (f" (set for {rule.pattern})" if inherited else "")
        else:
            diff.status = "differs"
            diff.note = f"outside the {rule.describe()} ({rule.origin}{via})"
    elif rule.kind == "waiver":
        assert rule.until is not None
        if today <= rule.until:
            diff.status, diff.note = "waived", f"until {rule.until}: {rule.justification} ({rule.origin}{via})"
        else:
            diff.status = "waiver expired"
            diff.note = f"the waiver expired on {rule.until} ({rule.justification}; {rule.origin}{via}): renew it or update the baseline"


def changes(baseline_doc: Mapping[str, Any], live_doc: Mapping[str, Any], policy: Policy | Mapping[str, Any] | None = None, *, today: _dt.date | None = None) -> list[Change]:
    """The differences between a baseline and a live document, one :class:`Change` per change
    with its consequences, SGLang's own changes first (see :func:`compare` for ``policy``)."""
    for doc in (baseline_doc, live_doc):
        if not isinstance(doc, Mapping):  # a file edited by hand: one line, not an AttributeError
            raise SpecError(f"a configuration document is a JSON object, not a {type(doc).__name__}: rewrite it with --sglang-update-baseline")
    if policy is None:
        policy = Policy.from_mapping(baseline_doc.get("policy"), "baseline policy")
    elif not isinstance(policy, Policy):
        policy = Policy.from_mapping(policy)
    today = today or _dt.date.today()
    base, live = flatten(baseline_doc), flatten(live_doc)
    raw: dict[str, FieldDiff] = {}
    for path in sorted(base.keys() | live.keys()):
        b_value, b_source = base.get(path, (_ABSENT, None))
        l_value, l_source = live.get(path, (_ABSENT, None))
        if b_value == l_value and type(b_value) is type(l_value) or (_is_number(b_value) and _is_number(l_value) and b_value == l_value):
            continue
        raw[path] = FieldDiff(
            path=path,
            baseline=None if b_value is _ABSENT else b_value,
            live=None if l_value is _ABSENT else l_value,
            baseline_source=b_source,
            live_source=l_source,
            change="added" if b_value is _ABSENT else "removed" if l_value is _ABSENT else "changed",
        )
    if not raw:
        return []
    settings = _settings(raw, baseline_doc, live_doc, base.keys() | live.keys())
    roots = _roots(settings)
    out: list[Change] = []
    for key in sorted({roots[k] for k in settings}):
        own = settings[key]
        parts = [own] + sorted((settings[k] for k in settings if roots[k] == key and k != key), key=lambda s: s.head)
        head = raw[own.head]
        title, before, after = _title_values(head)
        # A policy entry naming the change's own setting covers the whole change.
        entry_rule = _setting_rule(policy, own, ("ignore", "waiver"))
        members: list[FieldDiff] = []
        for part in parts:
            setting_rule = _setting_rule(policy, part, ("ignore", "waiver", "tolerance"))
            judged: list[tuple[FieldDiff, Rule | None]] = []
            for path in part.paths:
                d = raw[path]
                if path.startswith("findings."):
                    d.finding, d.finding_summary = path.removeprefix("findings."), None
                elif part.finding:
                    d.finding, d.finding_summary = part.finding
                d.group = own.head
                exact = policy.exact(path)
                rule = exact or setting_rule or entry_rule or policy.rule_for(path)
                inherited = rule is not None and exact is None and rule in (setting_rule, entry_rule)
                if rule is not None and rule.kind == "ignore":
                    continue
                judged.append((d, rule if inherited else None))
                if rule is not None:
                    _judge(d, rule, today, inherited)
            # A tolerance set for one field of a setting holds for its numeric fields; the others
            # (its finding) pass when those do.
            for d, inherited_rule in judged:
                if inherited_rule is not None and inherited_rule.kind == "tolerance" and not (_is_number(d.baseline) and _is_number(d.live)):
                    numeric = [x for x, _ in judged if x.policy == inherited_rule.pattern and _is_number(x.baseline) and _is_number(x.live)]
                    if numeric and all(x.status == "within tolerance" for x in numeric):
                        d.status, d.note = "within tolerance", f"{inherited_rule.describe()} (set for {inherited_rule.pattern})"
            members += [d for d, _ in judged]
        if not members:
            continue
        kind = "requested" if own.requested_changed else "follows" if own.causes and not own.requested else "sglang"
        follows = []
        for cause in sorted(own.causes, key=lambda k: settings[k].head):
            c_title, c_before, c_after = _title_values(raw[settings[cause].head])
            under = roots[cause]
            where = f" (with {_title_values(raw[settings[under].head])[0]})" if under != cause else ""
            follows.append(f"{c_title} {c_before} -> {c_after}{where}")
        findings = list(dict.fromkeys(d.finding for d in members if d.finding))
        change = Change(
            name=own.head,
            title=title,
            baseline=before,
            live=after,
            kind=kind,
            members=members,
            consequences=[p for part in parts[1:] for p in part.paths],
            finding=own.finding[0] if own.finding else None,
            finding_summary=own.finding[1] if own.finding else None,
            findings=findings,
            follows_from=follows,
            severity=own.severity,
        )
        out.append(change)
    out.sort(key=lambda c: (not c.failing, KINDS.index(c.kind), c.severity, -len(c.members), c.name))
    return out


def compare(baseline_doc: Mapping[str, Any], live_doc: Mapping[str, Any], policy: Policy | Mapping[str, Any] | None = None, *, today: _dt.date | None = None) -> list[FieldDiff]:
    """Typed field-level differences between a baseline and a live document, by path.

    ``policy``: a :class:`Policy`, a policy mapping (as in a baseline file), or None for the
    baseline document's own ``"policy"`` section. Ignored fields are left out; differences
    within tolerance or under a valid waiver are returned with a passing status. Each field
    names its :class:`Change` in ``group`` (:func:`changes` gives the changes themselves)."""
    return sorted((d for c in changes(baseline_doc, live_doc, policy, today=today) for d in c.members), key=lambda d: d.path)


def summary(found: list[Change]) -> str:
    """``7 changes (32 fields)``: the failing changes and fields."""
    failing = [c for c in found if c.failing]
    fields = sum(1 for c in failing for d in c.members if d.failing)
    return f"{len(failing)} change(s) ({fields} field(s))"


def expired_waivers(policy: Policy, today: _dt.date | None = None) -> list[Rule]:
    today = today or _dt.date.today()
    return [r for r in policy.rules if r.kind == "waiver" and r.until is not None and r.until < today]
