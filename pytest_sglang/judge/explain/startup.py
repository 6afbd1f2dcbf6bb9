"""Explain a start-up line: which of its values SGLang set, by which rule, and which were
probably requested.

A start-up line (``server_args=ServerArgs(...)`` or ``server_args={...}``; a target's
``/server_info`` reports the same values) holds the values *after* SGLang's start-up
adjustments, not what was asked for. For each value that differs from the release's default,
every rule of that release that sets the field is evaluated under the hypothesis "this field
was not requested" (``requested.X`` is None and ``arg.X`` the default; every other argument
is the line's value). A rule whose value is then the line's value explains it::

    disable_piecewise_cuda_graph = True: what SGLang 0.5.12 sets here [pcg.multimodal]

A differing value no rule explains is listed as probably requested. The findings are then
decided once more with those values taken as requested, so they read as for a target.

    from pytest_sglang.judge.explain import explain_startup_line

    result = explain_startup_line(open("server.log").read(), gpu="RTX PRO 6000", gpus=4,
                                  model="Qwen3_5MoeForConditionalGeneration")
    for value in result.explained:
        print(value.field, value.value, value.rules)
    for value in result.probably_requested:
        print(value.field, value.value, "default", value.default)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping, Sequence

from packaging.version import Version
from pydantic import BaseModel, ConfigDict, Field

from pytest_sglang.base.errors import ParseError, SpecError
from pytest_sglang.base.secrets import REDACTED, collecting
from pytest_sglang.base.text import short_repr
from pytest_sglang.judge.explain.engine import explain_situation, rules_release
from pytest_sglang.judge.explain.findings import Explanation, Finding
from pytest_sglang.judge.explain.kb import SEVERITIES, KnowledgeBase, load
from pytest_sglang.judge.explain.situation import Situation, gpu_facts, model_facts, read_model
from pytest_sglang.model.config import Effective, Provenance
from pytest_sglang.model.versions import nearest_release, parse_version
from pytest_sglang.parse.launch import LaunchCommand, flag_table, table_versions
from pytest_sglang.parse.logs import SGLangLogs, current_run
from pytest_sglang.parse.redact import is_secret_key, redact_log_line, redact_mapping

DEFAULTS_FILE = "sglang-defaults.json"
_SETTING_KINDS = ("override", "cap")
_STATUS_ORDER = {"contradicted": 0, "confirmed": 1, "predicted": 2, "undecided": 3}  # as the engine orders them
_ALWAYS_GIVEN = frozenset({"model_path"})  # required: no release has a default for it
_NOT_ASKED = "not requested: a rule explains the value"
_ASKED = "probably requested: the start-up line's value, which no rule explains"


class StartupValue(BaseModel):
    """One value of a start-up line that differs from the release's default."""

    model_config = ConfigDict(frozen=True)

    field: str
    value: Any = None
    default: Any = None
    rules: list[str] = Field(default_factory=list)
    """The rules that set this value here (empty: no rule explains it)."""
    because: list[str] = Field(default_factory=list)
    """Each rule's title, in the order of ``rules``."""
    set_at_startup: bool | None = None
    """Whether the release's start-up code ever assigns this field (False: a changed value
    was requested; None: not known for this release)."""

    def sentence(self, release: str | None) -> str:
        where = f"SGLang {release}" if release else "SGLang"
        shown = f"{self.field} = {short_repr(self.value, 60)}"
        if self.rules:
            reasons = "; ".join(f"{why} [{rule}]" for rule, why in zip(self.rules, self.because))
            return f"{shown}: what {where} sets here ({reasons})"
        return f"{shown} (default {short_repr(self.default, 40)})"


class StartupExplanation(Explanation):
    """An :class:`Explanation` of values read after start-up (a start-up line, or a target
    without a launch command): the findings, and for each value that differs from the
    release's default, the rules that set it (``explained``) or none (``probably_requested``)."""

    startup_source: str = ""
    defaults_release: str | None = None
    explained: list[StartupValue] = Field(default_factory=list)
    probably_requested: list[StartupValue] = Field(default_factory=list)
    not_judged: list[str] = Field(default_factory=list)
    """Fields the release's defaults do not hold (a newer or patched SGLang): not compared."""


@dataclass
class Reported:
    """What :func:`explain_reported` returns: the explanation and the facts it was decided from."""

    explanation: StartupExplanation
    situation: Situation


# ---- release defaults -------------------------------------------------------------------------


def _expand(stored: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each release after the first is stored as what changed since the one before."""
    out: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] = {}
    for version in sorted(stored, key=Version):
        change = stored[version]
        removed = set(change.get("removed", ()))
        current = {k: v for k, v in current.items() if k not in removed} | dict(change.get("set", {}))
        out[version] = current
    return out


@lru_cache(maxsize=1)
def _defaults_data() -> tuple[dict[str, dict[str, Any]], dict[str, frozenset[str]]]:
    """(argparse defaults per release, the fields each release's start-up may assign)."""
    text = resources.files("pytest_sglang.model.knowledge").joinpath("flags").joinpath(DEFAULTS_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    postinit = {v: frozenset(fields) for v, fields in _expand(data.get("postinit", {})).items()}
    return _expand(data["releases"]), postinit


def assigned_at_startup(release: str | None) -> frozenset[str] | None:
    """The fields SGLang's start-up code of a release may assign (from a walk of its
    source), or None when the package does not hold them for that release."""
    _, postinit = _defaults_data()
    if not postinit or release is None:
        return None
    return postinit.get(nearest_release(Version(release), list(postinit)))


def release_defaults(release: str | None) -> tuple[str, dict[str, Any]]:
    """(the release whose argparse defaults are used, its default per field): the release's
    own, else the nearest older one the package holds; fields its flag table adds are filled
    when their default is certain (a switch is off)."""
    data, _ = _defaults_data()
    known = sorted(data, key=Version)
    wanted = parse_version(release) if release else None
    chosen = known[-1] if wanted is None else nearest_release(wanted, known)
    defaults = dict(data[chosen])
    table = flag_table(release or chosen)
    for name, entry in table.fields.items():
        if name not in defaults and entry.get("kind") == "store_true":
            defaults[name] = False
    return chosen, defaults


def release_of_fields(fields: Mapping[str, Any]) -> tuple[str, bool, int]:
    """The release whose ServerArgs fields are closest to the line's: (release, exact, how
    many fields differ). A release adds and removes fields, so the set names it closely."""
    keys = set(fields)
    scored = sorted((len(keys ^ set(flag_table(v).fields)), -Version(v).release[-1], v) for v in table_versions())
    differ, _, version = scored[0]
    exact = differ == 0 and (len(scored) < 2 or scored[1][0] > 0)
    return version, exact, differ


# ---- comparing ---------------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (a is not None and b is not None and not isinstance(a, str) and not isinstance(b, str) and bool(a) is bool(b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) if math.isfinite(a) and math.isfinite(b) else a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _leaf(value: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _differing(line: Mapping[str, Any], defaults: Mapping[str, Any], nested: Mapping[str, set[str]]) -> tuple[dict[str, tuple[Any, Any]], list[str]]:
    """{field or dotted leaf: (value, default)} for the values that differ, and the fields
    without a known default. A mapping (``cuda_graph_config``) is compared leaf by leaf where
    rules set its leaves; SGLang builds the rest at start-up."""
    out: dict[str, tuple[Any, Any]] = {}
    unknown: list[str] = []
    for name, value in line.items():
        if name in _ALWAYS_GIVEN:
            continue
        if name not in defaults:
            unknown.append(name)
            continue
        default = defaults[name]
        if isinstance(value, Mapping) and not isinstance(default, Mapping):
            for path in sorted(nested.get(name, ())):
                leaf = _leaf(value, path.removeprefix(f"{name}."))
                if leaf is not None:
                    out[path] = (leaf, None)
            continue
        if is_secret_key(name) and value not in (None, "", False):
            value = REDACTED
        if not _same(value, default):
            out[name] = (value, default)
    return out, sorted(unknown)


# ---- the hypotheses ----------------------------------------------------------------------------


def _launch(requested: Mapping[str, Any], version: str) -> LaunchCommand:
    table = flag_table(version)
    spelled = {name: table.fields[name]["flags"][0] for name in requested if name in table.fields and table.fields[name].get("flags")}
    return LaunchCommand(text="", entrypoint=None, env={}, argv=[], requested=dict(requested), spelled=spelled, flag_table_version=table.sglang_version)


def _with(situation: Situation, requested: Mapping[str, Any], version: str) -> Situation:
    """The situation with ``requested`` taken as the launch command, evaluation state fresh."""
    return situation.variant(launch=_launch(requested, version), launch_source=None, notes=list(situation.notes))


def _top(path: str) -> str:
    return path.split(".", 1)[0]


def _setting_finding(finding: Finding, path: str, kinds: Mapping[str, str]) -> bool:
    return finding.setting == path and finding.status == "confirmed" and kinds.get(finding.rule) in _SETTING_KINDS


def explain_reported(situation: Situation, *, source: str | None = None) -> Reported:
    """Explain the values a situation reports (``situation.reported``: a start-up line's
    fields, or a target's server_args) with no launch command known."""
    kb = situation.kb
    line = dict(situation.reported or {})
    if situation.version is None and line:
        situation = _versioned(situation, line)
    release, _ = rules_release(kb, situation)
    table_version = str(release) if release else None
    defaults_release, defaults = release_defaults(table_version)
    version = flag_table(table_version or defaults_release).sglang_version
    covering = [r for r in kb.rules if r.kind in _SETTING_KINDS and not r.setting.startswith("runtime.") and (r.covers(release) if release else (r.first <= kb.oldest and r.last is None))]
    kinds = {r.id: r.kind for r in kb.rules}
    nested: dict[str, set[str]] = {}
    for rule in covering:
        if "." in rule.setting:
            nested.setdefault(_top(rule.setting), set()).add(rule.setting)
    differing, unknown = _differing(line, defaults, nested)
    requested_all = {name: line[name] for name in {_top(p) for p in differing}}
    setters: dict[str, list[str]] = {}
    for rule in covering:
        if rule.setting in differing:
            setters.setdefault(rule.setting, []).append(rule.id)
    # One hypothesis per field some rule sets: that field not requested, every other as on the line.
    explained: dict[str, list[Finding]] = {}
    for path in sorted(setters):
        trial = explain_situation(_with(situation, {k: v for k, v in requested_all.items() if k != _top(path)}, version))
        found = [f for f in trial.findings if _setting_finding(f, path, kinds)]
        if found:
            explained[path] = found
    asked = {name: value for name, value in requested_all.items() if any(_top(p) == name and p not in explained for p in differing)}
    final_situation = _with(situation, asked, version)
    final = explain_situation(final_situation)
    assigned = assigned_at_startup(defaults_release)
    # Lint only what is certain: a field the release's start-up never assigns was requested.
    certain = {name for name in asked if assigned is not None and name not in assigned}
    findings = _merged(final.findings, explained, kinds, certain)
    values = [StartupValue(field=p, value=differing[p][0], default=differing[p][1], rules=[f.rule for f in explained[p]], because=[f.title for f in explained[p]]) for p in sorted(explained)]
    unexplained = [
        StartupValue(field=p, value=v, default=d, set_at_startup=None if assigned is None else _top(p) in assigned)
        for p, (v, d) in sorted(differing.items())
        if p not in explained
    ]
    facts = dict(final.facts)
    facts["launch_command"] = {"value": None, "source": "unknown: the values no rule explains are taken as requested"}
    facts["startup_line"] = {"value": f"{len(line)} fields", "source": source or situation.reported_source}
    notes = list(final.notes)
    if defaults_release != (table_version or defaults_release):
        notes.append(f"defaults: SGLang {table_version}'s are not in the package; {defaults_release}'s are used")
    if unknown:
        notes.append(f"{len(unknown)} field(s) have no default in SGLang {defaults_release} and are not compared ({', '.join(unknown[:5])}{', ...' if len(unknown) > 5 else ''})")
    explanation = StartupExplanation(
        **{**final.model_dump(), "findings": findings, "facts": facts, "notes": notes},
        startup_source=source or situation.reported_source or "",
        defaults_release=defaults_release,
        explained=values,
        probably_requested=unexplained,
        not_judged=unknown,
    )
    return Reported(explanation=explanation, situation=final_situation)


def _versioned(situation: Situation, line: Mapping[str, Any]) -> Situation:
    """Without a version: the release whose ServerArgs fields the values have."""
    release, exact, differ = release_of_fields(line)
    if exact:
        return situation.variant(version=Version(release), version_source=f"the start-up line's fields are SGLang {release}'s")
    note = (
        f"the SGLang version is not given: the line's fields are closest to SGLang {release}'s ({differ} field(s) differ), "
        "whose rules and defaults are used; give the version (--sglang-version) if it is another"
    )
    return situation.variant(version=Version(release), version_source=f"closest to the start-up line's fields ({differ} differ)", notes=[*situation.notes, note])


def _merged(findings: Sequence[Finding], explained: Mapping[str, list[Finding]], kinds: Mapping[str, str], certain: set[str]) -> list[Finding]:
    """The final findings, with each explaining finding as its own hypothesis decided it
    (the final run takes some values as requested, which can keep a rule from holding)."""
    by_id = {f.id: f for f in findings}
    for found in explained.values():
        for finding in found:
            by_id[finding.id] = finding
    ordered = sorted(by_id.values(), key=lambda f: (SEVERITIES.index(f.severity), _STATUS_ORDER[f.status], f.rule))
    return [_worded(f, kinds, certain) for f in ordered]


def _worded(finding: Finding, kinds: Mapping[str, str], certain: set[str]) -> Finding:
    """Where a requested value came from, said as it was found; ``lint`` kept only for an
    error, or for a flag certainly requested (a field SGLang's start-up never assigns)."""
    source = finding.requested_source
    update: dict[str, Any] = {}
    if source is not None and source.startswith("launch command"):
        update["requested_source"] = _ASKED
    elif source is not None and source.startswith("not in the launch command"):
        update["requested_source"] = _NOT_ASKED
    if finding.lint and kinds.get(finding.rule) != "error" and finding.setting not in certain:
        update["lint"] = False
    return finding.model_copy(update=update) if update else finding


# ---- a start-up line given as text ---------------------------------------------------------------


def _runtime(logs: SGLangLogs) -> Effective | None:
    """The values the rest of the log says SGLang ran with (the scheduler's capacity line,
    the mamba state cache), for the rules that read them."""
    values: dict[str, Any] = {}
    provenance: dict[str, Provenance] = {}
    capacity = logs.capacity
    if capacity is not None:
        for name in ("max_running_requests", "max_total_num_tokens", "chunked_prefill_size", "context_len"):
            value = capacity.get(name)
            if isinstance(value, int):
                values[name] = value
                provenance[name] = Provenance(source=f"scheduler capacity line ({logs.source})")
    mamba = logs.mamba_cache_size
    if mamba is not None:
        values["mamba_cache_size"] = mamba
        provenance["mamba_cache_size"] = Provenance(source=f"'Mamba Cache is allocated' line ({logs.source})")
    return Effective(**values, provenance=provenance) if values else None


def explain_startup_line(
    text: str | Sequence[str],
    *,
    gpu: str | None = None,
    sm: int | str | None = None,
    gpus: int | None = None,
    gpu_memory: int | str | None = None,
    sglang_version: str | None = None,
    model: str | Mapping[str, Any] | None = None,
    source: str = "the text given",
    kb: KnowledgeBase | None = None,
    platform: str | None = None,
) -> StartupExplanation:
    """Explain a start-up line (a log's text or its lines; the last ``server_args=`` line of
    the last run is read): for each value that differs from the release's default, the rule
    that sets it, or none (probably requested).

    ``gpu``, ``sm``, ``gpus``, ``gpu_memory``, ``platform`` and ``model`` as for :func:`explain_launch`.
    ``sglang_version``: the release; without it, the release whose ServerArgs fields the line
    has (a note says how close). The rest of the log, when given, is read for the lines rules
    cite and for the capacity SGLang logged. Raises :class:`~pytest_sglang.base.errors.ParseError`
    when there is no start-up line.
    """
    knowledge = kb or load()
    if sglang_version is not None and parse_version(sglang_version) is None:
        raise SpecError(f"SGLang version {sglang_version!r} is not a version: write e.g. 0.5.12")
    raw = text.splitlines() if isinstance(text, str) else [str(line) for line in text]
    with collecting():  # secrets the line carries are scrubbed from everything printed later
        lines = [redact_log_line(line) for line in current_run(raw)]
        given = len(raw)
        del raw  # the lines as given are not held while the redacted ones are read (memory)
        logs = SGLangLogs(source=source, lines=lines)
        startup = logs.startup_line
        if startup is None:
            raise ParseError(f"{source}: no SGLang start-up line (server_args=ServerArgs(...) or server_args={{...}}) in {given} line(s); give the server's log or the line itself")
        fields = redact_mapping(dict(startup.fields))
    situation = Situation(kb=knowledge, target=f"start-up line ({source})", mode="target")
    situation.reported = fields
    situation.reported_source = f"start-up line ({source})"
    notes: list[str] = []
    if not startup.complete:
        notes.append(f"the start-up line is {startup.describe()}: the fields after the break are not judged")
    if sglang_version is not None:
        situation.version, situation.version_source = parse_version(sglang_version), "given"
    situation.gpu = gpu_facts(gpu=gpu, sm=sm, count=gpus, memory=gpu_memory, platform=platform, device=fields.get("device"), device_where="on the start-up line", notes=notes)
    archs, signals, where = read_model(model)
    if logs.mamba_cache_size is not None and "hybrid" not in signals:
        signals["hybrid"] = (True, f"the log's 'Mamba Cache is allocated' line ({source})")
    situation.model = model_facts(knowledge, archs, where, signals)
    situation.runtime = _runtime(logs)
    situation.log_lines = lines
    situation.log_source = source
    situation.notes = notes
    return explain_reported(situation, source=f"start-up line ({source})").explanation


__all__ = ["Reported", "StartupExplanation", "StartupValue", "explain_reported", "explain_startup_line", "release_defaults", "release_of_fields"]
