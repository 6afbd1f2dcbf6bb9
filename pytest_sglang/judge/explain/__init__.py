"""Explain what SGLang changed and why, from a versioned knowledge base of its rules.

    from pytest_sglang import connect
    from pytest_sglang.judge.explain import explain, explain_launch, explain_startup_line

    with connect("sim://qwen35-122b-a10b-4xrtx6000-candidate") as target:
        for finding in explain(target).findings:
            print(finding.severity, finding.title)

    explain_launch("python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --tp 4 ...",
                   gpu="RTX PRO 6000", gpus=4, gpu_memory="96GiB", sglang_version="0.5.12",
                   model="Qwen3_5MoeForConditionalGeneration")

    explain_startup_line(open("server.log").read(), gpu="RTX PRO 6000", gpus=4,
                         model="Qwen3_5MoeForConditionalGeneration")

Each returns an :class:`Explanation` (findings as typed objects; ``.to_json()``); from a
start-up line, a :class:`StartupExplanation` that also says which values SGLang set (and by
which rule) and which were probably requested. Names are
imported on first use, so the pytest plugin costs nothing in a run that does not explain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_sglang.base.lazy import lazy_exports

_EXPORTS = {
    "explain": "api",
    "explain_launch": "api",
    "explain_startup_line": "startup",
    "execute_launch": "execute",
    "Execution": "execution",
    "ChangedField": "execution",
    "StartupExplanation": "startup",
    "StartupValue": "startup",
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
    "ChangedField",
    "Execution",
    "Explanation",
    "Fact",
    "Finding",
    "KnowledgeBase",
    "KnowledgeError",
    "Rule",
    "Situation",
    "StartupExplanation",
    "StartupValue",
    "explain",
    "explain_launch",
    "explain_startup_line",
    "execute_launch",
    "load",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # pragma: no cover
    from pytest_sglang.judge.explain.api import explain, explain_launch
    from pytest_sglang.judge.explain.execute import execute_launch
    from pytest_sglang.judge.explain.execution import ChangedField, Execution
    from pytest_sglang.judge.explain.findings import Explanation, Finding
    from pytest_sglang.judge.explain.kb import KnowledgeBase, KnowledgeError, Rule, load
    from pytest_sglang.judge.explain.situation import Fact, Situation
    from pytest_sglang.judge.explain.startup import StartupExplanation, StartupValue, explain_startup_line
