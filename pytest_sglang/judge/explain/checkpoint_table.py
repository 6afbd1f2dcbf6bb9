"""The public checkpoints explain recognises in a model path, as a table
(``pytest-sglang explain --list-checkpoints``, and docs/explain-checkpoints.md, which a test keeps
equal to it)."""

from __future__ import annotations

from typing import Any

from pytest_sglang.judge.explain.kb import KnowledgeBase
from pytest_sglang.judge.explain.situation import catalog_model, model_facts
from pytest_sglang.model.knowledge.checkpoints import Checkpoint, catalog


def families(kb: KnowledgeBase, entry: Checkpoint) -> dict[str, bool]:
    """The entry's model families, as explain decides them from it (its config.json fields,
    else the knowledge base's lists)."""
    archs, signals, where = catalog_model(entry.repo)
    facts = model_facts(kb, archs, where, signals)
    return {name: bool(facts[name].value) for name in kb.knowledge.families if name in facts}


def releases(entry: Checkpoint) -> str:
    """The releases (of those the package knows) whose registry has the entry's architecture."""
    if entry.sglang_since is None:
        return "none"
    return f"{entry.sglang_since}-{entry.sglang_until}" if entry.sglang_until else f"{entry.sglang_since} and newer"


def rows(kb: KnowledgeBase) -> list[dict[str, Any]]:
    out = []
    for entry in sorted(catalog().values(), key=lambda e: (e.family, e.repo.lower())):
        text = entry.config.get("text_config")
        layers = (text if isinstance(text, dict) else entry.config).get("num_hidden_layers")
        out.append({
            "repo": entry.repo,
            "family": entry.family,
            "architecture": entry.architecture,
            "sglang": releases(entry),
            "families": [name for name, member in families(kb, entry).items() if member],
            "layers": layers,
            "partial": entry.partial,
            "source": entry.source,
        })  # fmt: skip
    return out


def markdown(kb: KnowledgeBase) -> str:
    table = rows(kb)
    lines = [
        "# The public checkpoints explain recognises",
        "",
        "Generated from `pytest_sglang/model/knowledge/checkpoints.json` (`pytest-sglang explain --list-checkpoints",
        "--markdown`); a test keeps this page equal to it. A model path naming one of these repositories decides",
        "the model rules when no `--model` is given ([explain.md](explain.md#a-model-path-names-a-public-checkpoint)).",
        "",
        f"{len(table)} checkpoints. SGLang: the releases whose model registry has the architecture.",
        "",
        "| repository | family | architecture | SGLang | MoE, hybrid, multimodal | layers | source |",
        "|---|---|---|---|---|---|---|",
    ]
    cell = lambda s: str(s).replace("|", "\\|")  # noqa: E731
    for row in table:
        source = cell(row["source"]) + (f" (partial: {cell(row['partial'])})" if row["partial"] else "")
        kinds = ", ".join(row["families"]) or "-"
        lines.append(f"| `{row['repo']}` | {row['family']} | `{row['architecture']}` | {row['sglang']} | {kinds} | {row['layers']} | {source} |")
    return "\n".join(lines) + "\n"


def text(kb: KnowledgeBase) -> str:
    table = rows(kb)
    width = max((len(r["repo"]) for r in table), default=10)
    out = [f"{len(table)} public checkpoints"]
    for row in table:
        kinds = ", ".join(row["families"]) or "dense"
        out.append(f"  {row['repo']:<{width}}  {row['architecture']:<36} SGLang {row['sglang']:<22} {kinds}")
    return "\n".join(out)
