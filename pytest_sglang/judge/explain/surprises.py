"""The surprises users report, class by class, with the rule families that explain each
(``model/knowledge/surprises.toml``): ``pytest-sglang explain --list-surprises`` and
docs/surprises.md, which a test keeps equal to it. A class's rules are ids or shell patterns; a
pattern that names no rule is an error, so a rule that disappears fails the test."""

from __future__ import annotations

import fnmatch
import re
import sys
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

from pytest_sglang.judge.explain.kb import KnowledgeBase, Rule


class Report(BaseModel):
    """A public report that shows a class: an issue or a pull request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ref: str = Field(pattern=r"^[\w.-]+/[\w.-]+#\d+$")  # owner/repo#N
    kind: Literal["issue", "pull request"]
    title: str

    @property
    def url(self) -> str:
        repo, number = self.ref.split("#")
        return f"https://github.com/{repo}/{'pull' if self.kind == 'pull request' else 'issues'}/{number}"


class SurpriseClass(BaseModel):
    """One class of surprise: what SGLang does, and the rules that say it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    title: str
    what: str
    rules: list[str] = []
    test: str | None = None
    scope: str | None = None  # why explain does not judge it, when it does not
    reports: list[Report] = []


@lru_cache(maxsize=1)
def classes() -> tuple[SurpriseClass, ...]:
    text = resources.files("pytest_sglang.model.knowledge").joinpath("surprises.toml").read_text(encoding="utf-8")
    return tuple(SurpriseClass.model_validate(entry) for entry in tomllib.loads(text)["class"])


def rules_of(kb: KnowledgeBase, surprise: SurpriseClass) -> list[Rule]:
    """The rules a class names, in the knowledge base's order; ``ValueError`` for a pattern
    that names none."""
    out: list[Rule] = []
    for pattern in surprise.rules:
        found = [rule for rule in kb.rules if fnmatch.fnmatchcase(rule.id, pattern)]
        if not found:
            raise ValueError(f"surprise class {surprise.id}: {pattern!r} names no rule of the knowledge base")
        out += [rule for rule in found if rule not in out]
    return out


def _releases(kb: KnowledgeBase, rules: list[Rule]) -> str:
    """The releases at least one of the rules covers, as runs: ``0.5.5-0.5.9, 0.5.11+``."""
    known = list(kb.releases)
    covered = [any(rule.covers(release) for rule in rules) for release in known]
    runs: list[str] = []
    i = 0
    while i < len(known):
        if not covered[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(known) and covered[j + 1]:
            j += 1
        open_ended = j == len(known) - 1 and any(rule.last is None for rule in rules)
        runs.append(f"{known[i]}+" if open_ended else str(known[i]) if i == j else f"{known[i]}-{known[j]}")
        i = j + 1
    return ", ".join(runs)


def _shown_log(pattern: str) -> str:
    """A rule's log pattern as the line reads: ``\\S+`` and ``\\d+`` as ``…``, escapes dropped."""
    shown = re.sub(r"\\[SdDwW][+*]?|\.\*|\.\+", "…", pattern)
    return re.sub(r"\\(.)", r"\1", shown).strip("^$")


def rows(kb: KnowledgeBase) -> list[dict[str, Any]]:
    out = []
    for surprise in classes():
        found = rules_of(kb, surprise)
        out.append({
            "id": surprise.id,
            "title": surprise.title,
            "what": surprise.what,
            "judged": surprise.scope is None,
            "scope": surprise.scope,
            "rules": [rule.id for rule in found],
            "releases": _releases(kb, found),
            "logs": list(dict.fromkeys(_shown_log(rule.log) for rule in found if rule.log)),
            "knobs": list(dict.fromkeys(knob for rule in found for knob in rule.knobs[:1]))[:3],
            "test": surprise.test,
            "reports": [{**report.model_dump(), "url": report.url} for report in surprise.reports],
        })  # fmt: skip
    return out


def _md_text(text: str) -> str:
    """A report's title as Markdown text: code spans and link brackets kept literal."""
    return re.sub(r"([\\`*_\[\]<>|])", r"\\\1", text)


def text(kb: KnowledgeBase) -> str:
    lines = []
    for row in rows(kb):
        state = f"{len(row['rules'])} rules, SGLang {row['releases']}" if row["judged"] else row["scope"]
        lines.append(f"{row['id']:<24} {row['title']} ({state})")
    return "\n".join(lines)


def class_table(kb: KnowledgeBase, *, link: str) -> list[str]:
    """The classes, the releases and the number of rules that cover each: docs/surprises.md's
    table, and docs/explain-coverage.md's (``link`` is the page the class titles link to)."""
    out = ["| class | releases | rules |", "|---|---|---|"]
    for row in rows(kb):
        rules = f"{len(row['rules'])}" if row["judged"] else row["scope"]
        out.append(f"| [{row['title']}]({link}#{row['id']}) | {row['releases'] or '-'} | {rules} |")
    return out


def markdown(kb: KnowledgeBase) -> str:
    """docs/surprises.md."""
    table = rows(kb)
    out = [
        "# What SGLang changes behind your back",
        "",
        "SGLang rewrites its configuration at start-up. These are the classes of change teams report",
        "most, each with the releases it happens in, the line SGLang logs (or that it logs none), the",
        "explain rules that say it, the knob that changes it and a test a team can copy. The page is",
        "made from `pytest_sglang/model/knowledge/surprises.toml` and the rules",
        "(`pytest-sglang explain --list-surprises --markdown`); a test keeps it equal to them.",
        "",
    ]
    out += class_table(kb, link="")
    for row in table:
        out += ["", f'<a id="{row["id"]}"></a>', "", f"## {row['title']}", "", row["what"], ""]
        reported = "- **Reported in:** " + "; ".join(f"[{r['ref']}]({r['url']}) ({_md_text(r['title'])})" for r in row["reports"])
        if not row["judged"]:
            out += [f"explain does not judge it ({row['scope']}).", ""] + ([reported, ""] if row["reports"] else [])
            continue
        out.append(f"- **Releases:** SGLang {row['releases']}")
        out.append("- **SGLang logs:** " + ("; ".join(f"`{log}`" for log in row["logs"]) if row["logs"] else "nothing"))
        out.append("- **Rules:** " + ", ".join(f"`{rule}`" for rule in row["rules"]))
        if row["knobs"]:
            out.append("- **To change it:** " + "; ".join(row["knobs"]))
        if row["reports"]:
            out.append(reported)
        if row["test"]:
            out += ["", "A test to copy (run with `pytest --sglang-host=...`):", "", "```python",
                    f"def test_{row['id'].replace('-', '_')}(effective, server_args, sglang_explain):", f"    {row['test']}", "```"]
    out += ["", "## Where these come from", "",
            "The classes were drawn from public reports of SGLang changing a launch configuration; each",
            "section links the ones that show it. A report is an example of the mechanism, not a proof:",
            "each rule's releases come from that release's own code ([explain-proof.md](explain-proof.md)).", ""]
    return "\n".join(out)
