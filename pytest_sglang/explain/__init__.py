"""Explain what SGLang changed and why, from a versioned knowledge base of its rules.

    from pytest_sglang import connect
    from pytest_sglang.explain import explain, explain_launch

    with connect("sim://qwen35-122b-a10b-4xrtx6000-candidate") as target:
        for finding in explain(target).findings:
            print(finding.severity, finding.title)

    explain_launch("python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --tp 4 ...",
                   gpu="RTX PRO 6000", gpus=4, gpu_memory="96GiB", sglang_version="0.5.12",
                   model="Qwen3_5MoeForConditionalGeneration")

Both return an :class:`Explanation` (findings as typed objects; ``.to_json()``). Names are
imported on first use, so the pytest plugin costs nothing in a run that does not explain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "explain": "api",
    "explain_launch": "api",
    "Explanation": "findings",
    "Finding": "findings",
    "KnowledgeBase": "kb",
    "KnowledgeError": "kb",
    "Rule": "kb",
    "load": "kb",
    "Fact": "situation",
    "Situation": "situation",
}

__all__ = [
    "Explanation",
    "Fact",
    "Finding",
    "KnowledgeBase",
    "KnowledgeError",
    "Rule",
    "Situation",
    "explain",
    "explain_launch",
    "load",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # pragma: no cover
    from .api import explain, explain_launch
    from .findings import Explanation, Finding
    from .kb import KnowledgeBase, KnowledgeError, Rule, load
    from .situation import Fact, Situation
