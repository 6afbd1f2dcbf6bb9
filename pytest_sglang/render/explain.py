"""Render explanations: terminal text (the findings that matter first) and Markdown."""

from __future__ import annotations

import textwrap
from typing import Iterable

from pytest_sglang.base.secrets import scrub
from pytest_sglang.base.text import short_repr
from pytest_sglang.judge.explain.execution import Execution
from pytest_sglang.judge.explain.findings import Explanation, Finding

_LABEL = {"error": "ERROR", "warning": "WARNING", "info": "INFO"}


def headline(explanation: Explanation) -> str:
    counts = explanation.counts()
    parts = [f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n]
    version = f"SGLang {explanation.sglang_version}" if explanation.sglang_version else "SGLang version unknown"
    rules = f", rules of {explanation.rules_version}" if explanation.rules_version and explanation.rules_version != explanation.sglang_version else ""
    return f"{explanation.target} ({version}{rules}): {', '.join(parts) if parts else 'nothing SGLang changed that the rules know of'}"


def _findings_text(explanation: Explanation, *, verbose: bool = False, width: int = 100, accepted: Iterable[str] = ()) -> str:
    """Readable at a glance: one block per finding, errors first; ``verbose`` adds the
    explanation, the facts used and the source references."""
    accepted = set(accepted)
    lines = [headline(explanation)]
    # A note that is a warning (a GPU name the catalog does not hold) says so itself.
    lines += [f"  {note}" if note.startswith("warning: ") else f"  note: {note}" for note in explanation.notes]
    indent = " " * 11
    for finding in explanation.findings:
        mark = " (accepted)" if finding.lint and is_accepted(finding, accepted) else ""
        lines.append(f"  {_LABEL[finding.severity]:<8} {finding.title} [{finding.id}]{mark}")
        lines.append(f"{indent}{finding.summary}")
        if finding.requested_source and finding.status != "undecided" and finding.requested is not None:
            lines.append(f"{indent}requested: {short_repr(finding.requested, 60)} ({finding.requested_source})")
        if finding.effective_source:
            lines.append(f"{indent}reported: {short_repr(finding.effective, 60)} ({finding.effective_source})")
        if finding.log_line:
            lines.append(f"{indent}log: {_clip(finding.log_line, 240)}")
        if finding.log_note:
            lines.append(f"{indent}misleading log: {finding.log_note}")
        if finding.chain:
            steps = [f"{'unknown' if s['value'] is None else short_repr(s['value'], 40)} [{s['rule']}]" for s in finding.chain]
            lines.append(f"{indent}set in turn: {', then '.join(steps)}")
        if finding.not_cause_of:
            lines.append(f"{indent}not the cause of: {', '.join(finding.not_cause_of)}")
        if finding.knobs:
            lines.append(f"{indent}change it: {'; '.join(finding.knobs)}")
        for how in finding.how_to_provide:
            lines.append(f"{indent}to decide: {how}")
        if verbose:
            for para in textwrap.wrap(finding.cause, width - len(indent)):
                lines.append(f"{indent}{para}")
            if finding.sources:
                lines.append(f"{indent}source: {'; '.join(finding.sources)} ({finding.versions})")
    if verbose:
        lines.append("  facts:")
        for name, fact in explanation.facts.items():
            if isinstance(fact, dict) and fact.get("value") is not None:
                lines.append(f"    {name} = {short_repr(fact['value'], 70)} ({fact.get('source') or 'given'})")
    return scrub("\n".join(lines))


def execution_text(execution: Execution) -> str:
    """What the installed SGLang's own post-init changed (``explain --execute``): each field, the
    rules that explain it, or that none does yet."""
    gpu = execution.gpu
    release = f"SGLang {execution.sglang_version or '(release unknown)'}"
    ran = f"{gpu.get('count')}x {gpu.get('name')} (SM{gpu.get('sm')}, {gpu.get('memory_mib')} MiB) simulated, {execution.model}, {execution.seconds:g} s"
    if execution.error is not None:
        return scrub(f"  executed by {release}'s own post-init ({ran}): no fields, it stopped:\n    {execution.error}")
    lines = [f"  executed by {release}'s own post-init ({ran}): {len(execution.changed)} fields changed, {len(execution.unexplained)} that no rule explains yet"]
    for field in execution.changed:
        why = f"[{', '.join(field.rules)}]" if field.rules else field.cause
        lines.append(f"    {field.field}: {short_repr(field.requested, 40)} -> {short_repr(field.value, 50)}  {why}")
    return scrub("\n".join(lines))


def _clip(line: str, limit: int) -> str:
    from pytest_sglang.base.secrets import clip

    return clip(line, limit)


def markdown(explanation: Explanation) -> str:
    out = [f"### {headline(explanation)}", ""]
    out += [f"> {note}" for note in explanation.notes]
    if explanation.findings:
        out += ["| severity | finding | what | change it |", "|---|---|---|---|"]
        for f in explanation.findings:
            cell = lambda s: s.replace("|", "\\|").replace("\n", " ")  # noqa: E731
            out.append(f"| {f.severity} | {cell(f.title)} (`{f.id}`) | {cell(f.summary)} | {cell('; '.join(f.knobs))} |")
    return scrub("\n".join(out) + "\n")


def is_accepted(finding: Finding, accepted: set[str]) -> bool:
    """An ini entry accepts a finding by its id (``flags.deprecated:--foo``) or its rule id."""
    return finding.id in accepted or finding.rule in accepted


def text(explanation: Explanation, *, verbose: bool = False, width: int = 100, accepted: Iterable[str] = ()) -> str:
    """The findings, one block each; for a start-up line's explanation
    (:class:`~pytest_sglang.judge.explain.startup.StartupExplanation`), then the values SGLang
    set (with the rule) and those probably requested."""
    from pytest_sglang.judge.explain.startup import StartupExplanation

    out = _findings_text(explanation, verbose=verbose, width=width, accepted=accepted)
    if explanation.execution is not None:
        out = "\n".join([out, execution_text(explanation.execution)])
    if not isinstance(explanation, StartupExplanation):
        return out
    release = explanation.rules_version or explanation.sglang_version
    lines = [out, f"  values that differ from SGLang {explanation.defaults_release}'s defaults ({explanation.startup_source}):"]
    if explanation.explained:
        lines.append("    set by SGLang (the rule that sets the value here):")
        lines += [f"      {value.sentence(release)}" for value in explanation.explained]
    groups = (
        (False, f"requested (SGLang {explanation.defaults_release}'s start-up never sets these fields):"),
        (True, "requested, or set at start-up by SGLang code no rule covers:"),
        (None, "probably requested (no rule explains the value):"),
    )
    for kind, heading in groups:
        members = [v for v in explanation.probably_requested if v.set_at_startup is kind]
        if members:
            lines.append(f"    {heading}")
            lines += [f"      {value.sentence(release)}" for value in members]
    if not explanation.explained and not explanation.probably_requested:
        lines.append("    none")
    return scrub("\n".join(lines))
