"""Judge: evaluate the knowledge base's rules on a situation and say what SGLang did and why."""

from __future__ import annotations

import re
from typing import Any

from packaging.version import Version

from pytest_sglang.base.text import short_repr
from pytest_sglang.judge.explain.binding import CapBound, cap_bound, shown, threshold
from pytest_sglang.judge.explain.expr import NOT_COMPUTABLE, Unknown, is_unknown
from pytest_sglang.judge.explain.findings import Explanation, Finding, Status
from pytest_sglang.judge.explain.kb import SEVERITIES, KnowledgeBase, Rule
from pytest_sglang.judge.explain.platforms import not_judged
from pytest_sglang.judge.explain.refusals import architecture_findings, refusal_findings
from pytest_sglang.judge.explain.situation import _MISSING, Situation
from pytest_sglang.judge.explain.unresolved import unresolved_gap, unresolved_help
from pytest_sglang.model.versions import nearest_release, outside_note
from pytest_sglang.parse.launch import flag_table

_ORDER = {s: i for i, s in enumerate(SEVERITIES)}
_STATUS_ORDER = {"contradicted": 0, "confirmed": 1, "predicted": 2, "undecided": 3}


def rules_release(kb: KnowledgeBase, situation: Situation) -> tuple[Version | None, list[str]]:
    """The release whose rules apply, and what to tell the user about that choice."""
    version = situation.version
    if version is None:
        return None, [
            "the SGLang version is unknown: only rules that hold in every release are applied; "
            + _help(kb, "version")
        ]
    known = [str(r) for r in kb.releases]
    note = outside_note(version, known)
    return Version(nearest_release(version, known)), [note] if note is not None else []


def explain_situation(situation: Situation) -> Explanation:
    kb = situation.kb
    release, notes = rules_release(kb, situation)
    notes = [*situation.notes, *notes]
    findings: list[Finding] = []
    undecided: dict[str, list[Rule]] = {}
    fired: list[tuple[Rule, Any]] = []  # the rules that hold, in order, with the value each gives
    evaluated = 0
    for rule in kb.applicable(release):
        evaluated += 1
        if rule.kind in ("deprecated", "unknown-flag", "refused", "unknown-arch"):
            findings += _flag_findings(rule, situation, release)
            continue
        situation.before = rule.setting
        try:
            outcome = rule.condition.evaluate(situation)
        finally:
            situation.before = None
        situation.fired[rule.id] = outcome
        if is_unknown(outcome):
            for need in sorted(outcome.needs - {NOT_COMPUTABLE}):
                undecided.setdefault(_fact_key(need), []).append(rule)
            continue
        if not outcome:
            continue
        fired.append((rule, _predict(rule, situation)))
    # A value a later rule changes again is a step, not what the server ends with: only the last
    # rule that sets a field is compared with the value the target reports.
    last = {rule.setting: rule.id for rule, _ in fired}
    # A cap binds only if it is below the request, and decides the value only if no other cap on
    # the same setting is certainly lower (binding.py).
    bounds = {rule.id: cap_bound(situation, rule, predicted) for rule, predicted in fired if rule.kind == "cap"}
    chains = _chains(fired)
    chains_last = {rule.setting: predicted for rule, predicted in fired}
    for rule, predicted in fired:
        chain = chains.get(rule.setting)
        if chain is not None and last[rule.setting] != rule.id and not _same_step(predicted, chains_last[rule.setting]):
            continue  # a step: the last rule's finding reports the final value, and every step
        tighter = rule.kind == "cap" and _certainly_tighter(rule, fired, bounds)
        finding = _finding(rule, situation, release, predicted, final=last[rule.setting] == rule.id, bound=bounds.get(rule.id), tighter=tighter)
        if finding is not None:
            findings.append(finding if chain is None or last[rule.setting] != rule.id else finding.model_copy(update={"chain": chain}))
    findings += [_gap(kb, fact, rules, situation) for fact, rules in sorted(undecided.items())]
    off_platform = not_judged(situation, kb.applicable(release))  # an NPU, XPU or CPU: one line
    if off_platform is not None:
        findings.append(off_platform)
    findings.sort(key=lambda f: (_ORDER[f.severity], _STATUS_ORDER[f.status], f.rule))
    return Explanation(
        target=situation.target,
        mode="target" if situation.mode == "target" else "launch",
        sglang_version=str(situation.version) if situation.version else None,
        rules_version=str(release) if release else None,
        notes=notes,
        facts=situation.facts(),
        findings=findings,
        rules_evaluated=evaluated,
    )


def _chains(fired: list[tuple[Rule, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The settings several rules set in turn to different values (a start-up value overridden
    again, e.g. the GPU-memory chunked prefill size, then DP attention's division of it): each
    step in order, its rule and the value it gave. Rules that agree on one value are not steps;
    caps and ``runtime.`` values are limits, not steps."""
    steps: dict[str, list[tuple[Rule, Any]]] = {}
    for rule, predicted in fired:
        steps.setdefault(rule.setting, []).append((rule, predicted))
    return {
        setting: [{"rule": r.id, "title": r.title, "value": None if is_unknown(v) else v} for r, v in chain]
        for setting, chain in steps.items()
        if not setting.startswith("runtime.") and all(r.kind == "override" for r, _ in chain)
        and any(not _same_step(v, chain[-1][1]) for _, v in chain)
    }


def _same_step(a: Any, b: Any) -> bool:
    """Two rules' values agree (an unknown value agrees only with another unknown one)."""
    if is_unknown(a) or is_unknown(b):
        return is_unknown(a) and is_unknown(b)
    return _same(a, b)


def _certainly_tighter(rule: Rule, fired: list[tuple[Rule, Any]], bounds: dict[str, CapBound]) -> bool:
    """Whether another cap on the same setting is certainly lower than this one, so this one
    does not decide the value."""
    mine = bounds[rule.id]
    if mine.low is None:
        return False
    return any(
        other.kind == "cap" and other.id != rule.id and other.setting == rule.setting
        and bounds[other.id].high is not None and bounds[other.id].high < mine.low  # type: ignore[operator]
        for other, _ in fired
    )


def _fact_key(need: str) -> str:
    root = need.split(".", 1)[0]
    if need in ("gpu.sm", "gpu.count", "gpu.memory_mib", "gpu.name", "model.arch", "model.config"):
        return need
    return {"arg": "requested", "requested": "requested", "model": "model.arch", "effective": "server", "runtime": "runtime"}.get(root, need)


def _known(situation: Situation, fact: str) -> bool:
    """Whether a fact (as :func:`_fact_key` names it) was given or read."""
    if fact == "requested":
        return situation.launch is not None
    if fact.startswith("gpu."):
        return fact.removeprefix("gpu.") in situation.gpu
    if fact == "model.arch":
        return "arch" in situation.model
    if fact == "server":
        return situation.reported is not None
    return False


def _help(kb: KnowledgeBase, fact: str) -> str:
    if fact.startswith("unresolved."):
        return unresolved_help(fact)
    entry = kb.knowledge.facts.get(fact)
    if entry is None:
        return f"give {fact}"
    return f"{entry.what}: {entry.pytest} (pytest), {entry.cli} (command line), {entry.library} (library)"


def _gap(kb: KnowledgeBase, fact: str, rules: list[Rule], situation: Situation | None = None) -> Finding:
    if fact.startswith("unresolved.") and situation is not None and situation.launch is not None:
        return unresolved_gap(fact, [r.id for r in rules], situation.launch)
    entry = kb.knowledge.facts.get(fact)
    what = entry.what if entry else fact
    ids = [r.id for r in rules]
    shown = ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
    return Finding(
        id=f"gap.{fact}",
        rule=f"gap.{fact}",
        severity="info",
        status="undecided",
        setting=fact,
        title=f"{len(ids)} rule{'s' if len(ids) != 1 else ''} undecided: {what} is unknown",
        summary=f"{what} is unknown, so {len(ids)} rule{'s' if len(ids) != 1 else ''} could not be decided ({shown})",
        cause="A rule that needs a missing fact is neither applied nor assumed away.",
        needs=[fact],
        how_to_provide=[_help(kb, fact)],
        related=ids,
    )


def _show(value: Any) -> str:
    if is_unknown(value):
        return "unknown"
    return short_repr(value, 60)


def _predict(rule: Rule, situation: Situation) -> Any:
    """The value a rule that holds gives, from the value before it; it becomes the value the
    rules after it read."""
    situation.before = rule.setting
    try:
        predicted = rule.value_expression.evaluate(situation) if rule.value_expression is not None else None
    finally:
        situation.before = None
    if rule.kind in ("override", "cap") and not rule.setting.startswith("runtime."):
        situation.predicted[rule.setting] = predicted
    return predicted


def _finding(
    rule: Rule, situation: Situation, release: Version | None, predicted: Any, *, final: bool = True, bound: CapBound | None = None, tighter: bool = False
) -> Finding | None:
    setting = rule.setting
    observed, observed_source = situation.observed(setting) if final else (_MISSING, None)
    flag = rule.requested_flag
    requested, requested_source = _requested(situation, flag)
    given = situation.launch is not None and flag in situation.launch.requested
    # What would decide the value: the facts it read that nobody gave (never one that was given).
    needs = sorted(n for n in predicted.needs if n != NOT_COMPUTABLE and not _known(situation, _fact_key(n))) if isinstance(predicted, Unknown) else []
    status: Status = "predicted"
    severity = rule.severity
    lint = False
    if rule.kind in ("override", "cap") and observed is not _MISSING and not is_unknown(predicted):
        if rule.kind == "cap":
            status = "confirmed" if observed == predicted else ("contradicted" if observed > predicted else "predicted")
            if status == "predicted" and observed < predicted:
                return None  # another, tighter limit binds: this cap does not explain the value
        else:
            status = "confirmed" if _same(observed, predicted) else "contradicted"
    elif rule.kind in ("override", "cap") and observed is _MISSING and situation.mode == "target" and setting.startswith("runtime."):
        status = "predicted"
    # The severity contract (docs/explain.md): an error is a refusal; a warning says a requested
    # value is certainly changed, ignored or a no-op; everything else, a value SGLang chooses or
    # an effect that depends on figures known only once the server runs, is info.
    number = requested if isinstance(requested, (int, float)) and not isinstance(requested, bool) else None
    if rule.kind == "cap" and number is not None and rule.requested_as_expression is not None:
        as_setting = rule.requested_as_expression.evaluate(situation)  # the request in the setting's terms
        number = as_setting if isinstance(as_setting, (int, float)) and not isinstance(as_setting, bool) else None
    binds = uncertain = False
    limit_text: str | None = None
    predicted_range: tuple[Any, Any] | None = None
    if rule.kind == "cap" and bound is not None:
        if number is not None and bound.low is not None and bound.low >= number:
            return None  # the cap never reaches the request: it does not bind
        if tighter:
            return None  # another cap is certainly lower: this one does not decide the value
        binds = number is not None and bound.high is not None and bound.high < number
        uncertain = not bound.exact
        if bound.low is not None and not bound.exact and is_unknown(predicted) and bound.figures:
            predicted_range = (bound.low, bound.high)
        elif bound.exact and is_unknown(predicted):
            predicted = bound.low  # the pool estimate (or the cap's own clamp) fixes it before start
        if number is not None and not binds and observed is _MISSING:
            limit_text = threshold(situation, rule, number, bound)
    if rule.kind == "error":
        severity, lint = "error", True
    elif rule.kind == "noop":
        severity = "warning"
        lint = given
    elif rule.kind == "override" and given and not is_unknown(predicted) and not is_unknown(requested) and not _same(requested, predicted):
        severity, lint = "warning", True
    elif rule.kind == "cap" and given and number is not None:
        # Certain only when a running server reports the capped value, or the cap's highest
        # value under the facts given is below the request.
        reported = status == "confirmed" and isinstance(observed, (int, float)) and observed < number
        if reported or (observed is _MISSING and binds):
            severity, lint = "warning", True
        else:
            severity = "info"
    elif rule.kind in ("override", "cap"):
        severity = "info"
    if status == "contradicted":
        severity = "info"  # the rule and the server disagree: a fact to check, not a change SGLang made
    log_line, log_note = _logs(rule, situation, given)
    summary = _summary(rule, status, requested, requested_source, observed, predicted, _readable(rule, situation), predicted_range=predicted_range, limit=limit_text, binds=binds)
    title = rule.title
    if rule.kind == "cap" and status != "confirmed" and not binds and (uncertain or number is None):
        title = _MAY.sub(r"\1 may be \2", title, count=1)
    gpu = _gpu_words(situation) if "gpu.sm" in situation.kb.reads_all.get(rule.id, ()) else None
    if gpu is not None:  # a GPU gate says which GPU, and where the feature does run
        title = title.replace("this GPU", gpu)
        if rule.kind == "noop":
            summary = summary.replace("no effect here", f"no effect on {gpu}") + (f"; it runs on {rule.runs_on} only" if rule.runs_on else "")
    cause = rule.explanation.strip()
    knobs = list(rule.knobs)
    if status == "contradicted":
        title = f"inconsistent: {setting} = {_show(observed)} is reported, but {rule.range_text} sets {_show(predicted)} here"
        cause = (
            f"In {rule.range_text} this rule always gives {setting} = {_show(predicted)} when {rule.when}, and it holds here. "
            f"The target reports {_show(observed)}: it may run a patched SGLang, report a wrong version, or run with "
            f"a flag its launch command does not show. The rule: {cause}"
        )
        knobs = ["check which SGLang build the server runs (pip show sglang; the image tag)", "compare the launch command with the process's own (host access)"]
    return Finding(
        id=rule.id,
        rule=rule.id,
        severity=severity,
        status=status,
        setting=setting,
        title=title,
        summary=summary,
        requested=None if is_unknown(requested) else requested,
        requested_source=requested_source,
        effective=None if observed is _MISSING else observed,
        effective_source=observed_source,
        predicted=None if is_unknown(predicted) else predicted,
        predicted_range=predicted_range,
        threshold=limit_text,
        cause=cause,
        versions=rule.range_text,
        knobs=knobs,
        log_line=log_line,
        log_source=situation.log_source if log_line or log_note else None,
        log_note=log_note,
        not_cause_of=list(rule.not_cause_of),
        sources=_citations(situation.kb, rule, release),
        needs=needs,
        how_to_provide=[_help(situation.kb, _fact_key(n)) for n in needs if not (n == "runtime" and situation.mode != "target")],
        lint=lint,
    )


def _gpu_words(situation: Situation) -> str | None:
    """``SM120 (RTX PRO 6000)``: the compute capability, and the GPU's name when given."""
    sm = situation.gpu.get("sm")
    if sm is None or sm.value is None:
        return None
    name = situation.gpu.get("name")
    return f"SM{sm.value}" + (f" ({name.value})" if name is not None and name.value else "")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a) is bool(b) if a is not None and b is not None else a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) < 1e-9
    return a == b


def _requested(situation: Situation, flag: str) -> tuple[Any, str | None]:
    launch = situation.launch
    if launch is None:
        return Unknown(frozenset({"requested"})), None
    if flag in launch.requested:
        spelled = launch.spelled.get(flag) or launch.flags.get(flag) or flag
        return launch.requested[flag], _where(f"launch command {spelled}", situation)
    return None, _where("not in the launch command", situation)


def _where(text: str, situation: Situation) -> str:
    source = situation.launch_source
    return f"{text} ({source})" if source and source != "given" else text


_SIMPLE = re.compile(r"[\w.']+(\s*(//|\*|/|\+|-)\s*[\w.']+)*")
_WORDS = {"gpu.memory_mib": "the GPU memory", "gpu.count": "the number of GPUs", "gpu.sm": "the GPU architecture", "runtime.mamba_cache_size": "the mamba state cache"}


def _readable(rule: Rule, situation: Situation) -> str:
    """A value expression as a user reads it: a short formula with the known derived values put
    in (``max_mamba_cache_size // 5``), or, for anything longer, the facts it is computed from
    in words; never the rule language itself."""
    text = rule.value or ""
    for name in sorted(rule.reads, key=len, reverse=True):
        if name.startswith("derived."):
            value = situation.lookup(name)
            if not is_unknown(value):
                text = text.replace(name, short_repr(value))
    for prefix, plain in (("runtime.mamba_cache_size", "max_mamba_cache_size"), ("runtime.", ""), ("effective.", ""), ("arg.", ""), ("requested.", "")):
        text = text.replace(prefix, plain)
    if _SIMPLE.fullmatch(text.strip()) and "derived." not in text:
        return text.strip()
    if rule.value_words:
        return rule.value_words
    value_names = rule.value_expression.names if rule.value_expression is not None else frozenset()
    names = sorted(n for n in value_names if not n.startswith(("list.", "fired:", "given:")))
    words = list(dict.fromkeys(_WORDS.get(n, n.split(".", 1)[-1].replace("_", " ")) for n in names))
    return "a formula of " + (", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words))


_MAY = re.compile(r"^(.*?) is (capped|limited)\b")


def _summary(
    rule: Rule, status: str, requested: Any, requested_source: str | None, observed: Any, predicted: Any, readable: str = "",
    *, predicted_range: tuple[Any, Any] | None = None, limit: str | None = None, binds: bool = False,
) -> str:
    name = rule.setting.removeprefix("runtime.")
    asked = "not requested" if requested is None else ("requested: unknown (no launch command)" if is_unknown(requested) else f"requested {_show(requested)}")
    if rule.kind == "noop":
        return f"{rule.requested_flag} {asked}, but it has no effect here"
    if rule.kind == "error":
        return f"{rule.requested_flag} {asked}: SGLang refuses to start"
    if status == "confirmed":
        return f"{name}: {asked}, in effect {_show(observed)}"
    if status == "contradicted":
        return f"{name}: reported {_show(observed)}, but the rule gives {_show(predicted)}"
    if predicted_range is not None:
        low, high = predicted_range
        verb = "caps it at" if binds else "'s cap is"
        text = f"{name}: {asked}, SGLang{' ' if binds else ''}{verb} {shown(low)}-{shown(high)} here ({readable}, from explain's pool estimate)"
        return text + (f"; it {limit}" if limit else "")
    if is_unknown(predicted):
        verb = "caps it at" if rule.kind == "cap" else "sets it from"
        return f"{name}: {asked}; SGLang {verb} {readable}" + (f", which {limit}" if limit else "") + " (known once the server runs)"
    return f"{name}: {asked}, SGLang makes it {_show(predicted)}"


def _logs(rule: Rule, situation: Situation, given: bool) -> tuple[str | None, str | None]:
    line = note = None
    if rule.log and situation.log_lines:
        regex = re.compile(rule.log)
        line = next((l.strip() for l in situation.log_lines if regex.search(l)), None)
    if rule.misleading_log and situation.log_lines:
        regex = re.compile(rule.misleading_log.pattern)
        found = next((l.strip() for l in situation.log_lines if regex.search(l)), None)
        if found is not None:
            line = line or found
            if situation.launch is None:
                note = f"{rule.misleading_log.note} (unless the launch command gave the flag: it is unknown here)"
            elif not given:
                note = rule.misleading_log.note
    return line, note


def _citations(kb: KnowledgeBase, rule: Rule, release: Version | None) -> list[str]:
    out = []
    for source in rule.sources:
        text = str(release) if release else None
        line = kb.line_of(source, text) if text else None
        out.append(source.cite(line, text) if line is not None else source.cite())
    return out


def refusals_of(situation: Situation) -> list[Finding]:
    """The ERRORs the per-release flag and model tables give (flags, values and words argparse
    refuses, an architecture the registry lacks), with no other rule evaluated: enough to tell
    that a release refuses the command, and why."""
    release, _ = rules_release(situation.kb, situation)
    kinds = ("unknown-flag", "refused", "unknown-arch")
    return [f for rule in situation.kb.applicable(release) if rule.kind in kinds for f in _flag_findings(rule, situation, release) if f.severity == "error"]


def _flag_findings(rule: Rule, situation: Situation, release: Version | None) -> list[Finding]:
    """The rules the per-release flag and model tables carry: deprecated flags, flags a release
    does not know (argparse refuses them), values and words it refuses, and an architecture its
    model registry lacks (:mod:`.refusals`)."""
    if rule.kind == "refused":
        return refusal_findings(rule, situation, release)
    if rule.kind == "unknown-arch":
        return architecture_findings(rule, situation, release)
    launch = situation.launch
    if launch is None:
        return []
    table = flag_table(launch.flag_table_version)
    out: list[Finding] = []
    if rule.kind == "deprecated":
        for flag, instead in sorted(launch.deprecated.items()):
            dest, _ = table.lookup(flag)
            ignored = bool(dest and table.fields.get(dest, {}).get("kind") == "ignored")
            what = "ignored: it does nothing" if ignored else (f"use {instead}" if instead else "it may be removed")
            out.append(
                Finding(
                    id=f"{rule.id}:{flag}",
                    rule=rule.id,
                    # A deprecated spelling that still sets its value is information; one the
                    # release ignores is a no-op, a warning (the severity contract).
                    severity="warning" if ignored else "info",
                    status="predicted" if situation.mode != "target" else "confirmed",
                    setting=dest or flag,
                    title=f"{flag} is deprecated in SGLang {launch.flag_table_version}",
                    summary=f"{flag} is deprecated in SGLang {launch.flag_table_version}; {what}",
                    requested=launch.requested.get(dest) if dest else None,
                    requested_source=f"launch command {flag} ({situation.launch_source or 'given'})",
                    cause=rule.explanation.strip(),
                    versions=f"SGLang {launch.flag_table_version} flag table",
                    knobs=[f"replace {flag} with {instead}"] if instead else [f"remove {flag}"],
                    sources=_citations(situation.kb, rule, release),
                    lint=ignored,
                )
            )
    elif situation.mode != "target":  # a server that started had no unknown flag
        ambiguous = {r.flag for r in launch.refusals if r.kind == "ambiguous-flag"}  # flags.refused says so, in argparse's words
        said = {r.flag: r.message for r in launch.refusals if r.kind == "unknown-flag"}
        for flag, value in sorted(launch.unknown.items()):
            if flag in ambiguous:
                continue
            out.append(
                Finding(
                    id=f"{rule.id}:{flag}",
                    rule=rule.id,
                    severity="error",
                    status="predicted" if situation.mode != "target" else "confirmed",
                    setting=flag,
                    title=f"SGLang {launch.flag_table_version} does not know {flag}",
                    summary=f"{flag} is not an option of SGLang {launch.flag_table_version}: argparse refuses to start ({said.get(flag) or 'unrecognized arguments'})",
                    requested=value,
                    requested_source=f"launch command ({situation.launch_source or 'given'})",
                    cause=rule.explanation.strip(),
                    versions=f"SGLang {launch.flag_table_version} flag table",
                    knobs=[f"remove {flag}, or check its spelling against `python -m sglang.launch_server --help`"],
                    sources=_citations(situation.kb, rule, release),
                    lint=True,
                )
            )
    return out
