"""Judge a launch command whose SGLang version is unknown, across the releases it could run on.

A pasted command rarely says its release. Judging it by the newest release's flag table calls a
flag that was valid for a year "unknown" and a flag deprecated last month "deprecated" for every
older deployment. Instead: the releases that accept every part of the command are the
candidates (``accepted by SGLang 0.5.14-0.5.19``): every flag is one of theirs, every value one
their argparse reads (its type, its choices), the model's architecture is in their model
registry, and no rule of theirs says they refuse to start. The command is explained once per
candidate, with that release's flag table and rules; a finding that every candidate gives is kept
as it is, and one that only some give becomes an info line naming those releases. The releases
that refuse it are named, with what each refuses. When no release accepts the command, that is
the error, naming the nearest releases and what each of them refuses.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

from packaging.version import Version

from pytest_sglang.judge.explain.engine import explain_situation, refusals_of
from pytest_sglang.judge.explain.findings import Explanation, Finding
from pytest_sglang.judge.explain.refusals import short_reason
from pytest_sglang.judge.explain.situation import Situation
from pytest_sglang.parse.launch import LaunchCommand, parse_launch_command, split_command, table_versions

_FLAG_RULES = ("flags.deprecated", "flags.unknown", "flags.refused", "model.unsupported-architecture")
# What the table rules' findings are about, in the words a reason is given in.
_TABLE_RULES = ("flags.unknown", "flags.refused")


def span(releases: Sequence[str], known: Sequence[str] | None = None) -> str:
    """Releases as runs of consecutive known releases: ``0.5.5-0.5.13, 0.5.16``."""
    order = list(known or table_versions())
    index = sorted(order.index(r) for r in releases if r in order)
    runs: list[tuple[int, int]] = []
    for i in index:
        if runs and i == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return ", ".join(order[a] if a == b else f"{order[a]}-{order[b]}" for a, b in runs)


def parse_per_release(
    command: str | Sequence[str], config_loader: Callable[[str], Mapping[str, Any]] | None = None
) -> dict[str, LaunchCommand]:
    """The command as each release's own flag table reads it (a ``--config`` file read once)."""
    loader = config_loader
    if config_loader is not None:
        seen: dict[str, Mapping[str, Any]] = {}

        def loader(path: str) -> Mapping[str, Any]:
            if path not in seen:
                seen[path] = config_loader(path)
            return seen[path]

    known = table_versions()
    if not isinstance(command, str):
        return {v: parse_launch_command(command, sglang_version=v, config_loader=loader) for v in known}
    # Pasted text is split once (as a shell reads it); each table reads the same words.
    words, env, problems = split_command(command)
    first = parse_launch_command(command, sglang_version=known[-1], config_loader=loader)
    out = {known[-1]: first}
    for v in known[:-1]:
        one = parse_launch_command(words, sglang_version=v, config_loader=loader, marked=True)
        out[v] = replace(one, text=first.text, env=first.env, form=first.form, read_error=first.read_error, problems=[*problems, *one.problems])
    return {v: out[v] for v in known}


def explain_unknown_release(parsed: Mapping[str, LaunchCommand], situation_for: Callable[[LaunchCommand, Version], Situation]) -> Explanation:
    """Explain once per candidate release and keep what holds across them (module docstring)."""
    known = list(parsed)
    situations = {v: situation_for(parsed[v], Version(v)) for v in known}
    # What each release refuses: its tables first (cheap); a release they accept is explained
    # whole, and refuses the command when a rule of its own says it does not start.
    refused = {v: refusals_of(situations[v]) for v in known}
    per: dict[str, Explanation] = {}
    for v in known:
        if not refused[v]:
            per[v] = explain_situation(situations[v])
            refused[v] = [f for f in per[v].findings if f.severity == "error" and f.status != "undecided"]
    accepted = [v for v in known if not refused[v]]
    judged = accepted or known
    for v in judged:
        if v not in per:
            per[v] = explain_situation(situations[v])
    reasons = {v: _reasons(parsed[v], refused[v]) for v in known}
    everywhere = span(judged, known)
    groups: dict[Any, dict[str, Finding]] = {}
    for v in judged:
        for finding in per[v].findings:
            groups.setdefault(_key(finding), {})[v] = finding
    findings: list[Finding] = []
    for by_release in groups.values():
        holds = [v for v in judged if v in by_release]
        newest = by_release[holds[-1]]
        if newest.id.startswith("gap."):
            related = sorted({r for f in by_release.values() for r in f.related})
            findings.append(newest.model_copy(update={"related": related}))
        elif newest.rule in _FLAG_RULES:
            findings.append(_flag_finding(newest, holds[-1], span(holds, known), whole=len(holds) == len(judged)))
        elif len(holds) == len(judged):
            findings.append(newest)
        else:
            where = span(holds, known)
            findings.append(
                newest.model_copy(
                    update={
                        "severity": "info",
                        "lint": False,
                        # The rules say what these releases do; they do not prove the others never do it.
                        "title": f"in SGLang {where}: {newest.title}",
                        "summary": f"if the server runs SGLang {where}: {newest.summary}",
                    }
                )
            )
    if not accepted and not any(f.severity == "error" for f in findings):
        # Each release refuses a part of the command, but no part is refused by every release.
        findings.append(_refused_everywhere(parsed, reasons, known))
    newest_explanation = per[judged[-1]]
    if accepted:
        lead = f"the SGLang version is unknown: every part of the command (its flags, their values, the model's architecture) is accepted by SGLang {everywhere}"
        refusing = [v for v in known if v not in accepted]
        if refusing:
            lead += f" ({_who_refuses(refusing, reasons, known)})"
    else:
        lead = "the SGLang version is unknown, and no release from {} to {} accepts every part of the command".format(known[0], known[-1])
    notes = [
        f"{lead}; findings hold for each of those releases, and what holds for some is an info line naming those "
        "(give --sglang-version to judge one release)",
        *dict.fromkeys(n for v in judged for n in per[v].notes if "version" not in n and "flag table" not in n),
    ]
    order = {"error": 0, "warning": 1, "info": 2}
    findings.sort(key=lambda f: (order[f.severity], f.id.startswith("gap."), f.rule))
    return newest_explanation.model_copy(
        update={"sglang_version": None, "rules_version": everywhere, "notes": notes, "findings": findings, "rules_evaluated": max(e.rules_evaluated for e in per.values())}
    )


def _reasons(launch: LaunchCommand, refused: list[Finding]) -> tuple[str, ...]:
    """What a release refuses, in words the same in every release (so releases group)."""
    out = [short_reason(r) for r in launch.refusals]
    for finding in refused:
        if finding.rule in _TABLE_RULES:
            continue  # the launch command's refusals above
        if finding.rule == "model.unsupported-architecture":
            out.append(f"the architecture {finding.requested} (not in its model registry)")
        else:
            out.append(finding.title)
    return tuple(dict.fromkeys(out))


def _who_refuses(releases: list[str], reasons: Mapping[str, tuple[str, ...]], known: list[str], *, most: int = 3) -> str:
    """``SGLang 0.5.5-0.5.10 refuse --speculative-algorithm 'DFLASH' (not one of its choices)``,
    releases grouped by what they refuse, the fewest refusals first."""
    by_reasons: dict[tuple[str, ...], list[str]] = {}
    for v in releases:
        by_reasons.setdefault(reasons[v], []).append(v)
    ordered = sorted(by_reasons.items(), key=lambda kv: (len(kv[0]), -known.index(kv[1][-1])))
    parts = []
    for why, where in ordered[:most]:
        verb = "refuses" if len(where) == 1 else "refuse"
        parts.append(f"SGLang {span(where, known)} {verb} {', '.join(why) if why else 'it'}")
    if len(ordered) > most:
        parts.append(f"and {len(ordered) - most} more groups of releases refuse other parts")
    return "; ".join(parts)


def _key(finding: Finding) -> Any:
    if finding.rule in _FLAG_RULES or finding.id.startswith("gap."):
        return finding.id
    return (finding.setting, finding.title, finding.summary, repr(finding.predicted), finding.status)


def _flag_finding(finding: Finding, release: str, where: str, *, whole: bool) -> Finding:
    """A flag-table finding restated for the releases it holds in (its text names one)."""
    said = f"SGLang {release}"

    def restate(text: str) -> str:
        return text.replace(f"{said} flag table", f"SGLang {where} flag tables").replace(said, f"SGLang {where}")

    update: dict[str, Any] = {"title": restate(finding.title), "summary": restate(finding.summary), "versions": restate(finding.versions)}
    if not whole:
        update |= {"severity": "info", "lint": False, "summary": restate(finding.summary) + " (other releases that accept the command do not)"}
    return finding.model_copy(update=update)


def _refused_everywhere(parsed: Mapping[str, LaunchCommand], reasons: Mapping[str, tuple[str, ...]], known: list[str]) -> Finding:
    """No release accepts every part of the command: the nearest releases (the fewest parts
    refused) and what each refuses."""
    flags = sorted({flag for launch in parsed.values() for flag in launch.unknown})
    # Flags only (none a value, a word or the architecture): said as the flags each release knows.
    flag_kinds = ("unknown-flag", "ambiguous-flag")
    only_flags = all(all(r.kind in flag_kinds for r in launch.refusals) and len(reasons[v]) == len(launch.refusals) for v, launch in parsed.items())
    fewest = min(len(r) for r in reasons.values())
    nearest = [v for v in known if len(reasons[v]) == fewest]
    said = f"the nearest: {_who_refuses(nearest, reasons, known)}"
    if only_flags and flags:
        where = "; ".join(f"{flag} is known to SGLang {span([v for v, launch in parsed.items() if flag not in launch.unknown], known) or 'no release'}" for flag in flags)
        summary = f"no single release knows every flag: {where}; argparse refuses to start (unrecognized arguments); {said}"
        rule = "flags.unknown"
    else:
        summary = f"no release accepts every part of the command; {said}"
        rule = "flags.refused"
    return Finding(
        id=f"{rule}:every-release",
        rule=rule,
        severity="error",
        status="predicted",
        setting="launch_command",
        title=f"every SGLang release from {known[0]} to {known[-1]} refuses this command",
        summary=summary,
        cause=(
            "Each release refuses a different part of the command: argparse refuses a flag its parser does not define "
            "or a value it cannot read, and a release loads only the architectures of its model registry."
        ),
        versions=f"SGLang {known[0]}-{known[-1]} flag and model tables",
        knobs=[f"change what the nearest release refuses, or run it: SGLang {span(nearest, known)}", "check the command against the deployment's own release: `python -m sglang.launch_server --help`"],
        lint=True,
    )
