"""The rules the knowledge base holds, as a table (``pytest-sglang explain --list-rules``,
and docs/explain-rules.md, which a test keeps equal to it)."""

from __future__ import annotations

from typing import Any

from pytest_sglang.judge.explain.kb import KnowledgeBase


def rows(kb: KnowledgeBase) -> list[dict[str, Any]]:
    return [
        {
            "id": rule.id,
            "versions": rule.range_text.removeprefix("SGLang "),
            "kind": rule.kind,
            "severity": rule.severity,
            "setting": rule.setting,
            "title": rule.title,
            "needs_gpu": rule.needs_gpu,
            "sources": [s.cite() for s in rule.sources if not s.absent],
        }
        for rule in sorted(kb.rules, key=lambda r: r.id)
    ]


def markdown(kb: KnowledgeBase) -> str:
    lines = [
        "# The rules explain knows",
        "",
        "Generated from the knowledge base (`pytest-sglang explain --list-rules --markdown`); a test",
        "keeps this page equal to it. How rules are written and proven: [explain.md](explain.md).",
        "",
        f"{len(kb.rules)} rules, SGLang {kb.oldest}-{kb.newest}.",
        "",
        "| rule | SGLang | kind | setting | what | source |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows(kb):
        cell = lambda s: str(s).replace("|", "\\|")  # noqa: E731
        lines.append(f"| `{row['id']}` | {row['versions']} | {row['kind']} | `{row['setting']}` | {cell(row['title'])} | {cell('; '.join(row['sources']))} |")
    return "\n".join(lines) + "\n"


def text(kb: KnowledgeBase) -> str:
    width = max((len(r.id) for r in kb.rules), default=10)
    out = [f"{len(kb.rules)} rules, SGLang {kb.oldest}-{kb.newest}"]
    for row in rows(kb):
        out.append(f"  {row['id']:<{width}}  {row['versions']:<15} {row['kind']:<12} {row['title']}")
    return "\n".join(out)
