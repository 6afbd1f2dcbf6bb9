"""The cause of a value a failing test read, in one line, from the target's findings.

The failure section "SGLang values read by this test" lists each value a test read; when a
finding explains one (a rule that sets, caps or ignores it, confirmed on the target), this
adds the cause under it::

    effective.max_running_requests = 26
        ...
        capped by the mamba state cache (max_mamba_cache_size 132 // 5) [capacity.mamba-cap]

Explaining a target is computed once per target (:func:`pytest_sglang.judge.explain.explain`
caches it), so a second failing test on the same host costs a dictionary lookup.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pytest_sglang.base import reads as _reads
from pytest_sglang.base.secrets import scrub
from pytest_sglang.base.text import short_repr
from pytest_sglang.judge.explain.expr import is_unknown

if TYPE_CHECKING:
    from pytest_sglang.judge.explain.findings import Explanation, Finding
    from pytest_sglang.judge.explain.kb import KnowledgeBase, Rule
    from pytest_sglang.judge.explain.situation import Situation
    from pytest_sglang.target.target import Target

# The settings an effective value is derived from, where its name is not the setting's own
# (see normaliser.py): a finding about any of them explains the effective value.
_EFFECTIVE_SETTINGS: dict[str, tuple[str, ...]] = {
    "max_running_requests": ("runtime.max_running_requests", "max_running_requests"),
    "max_running_requests_total": ("runtime.max_running_requests", "max_running_requests"),
    "prefill_cuda_graph": ("disable_piecewise_cuda_graph", "enable_piecewise_cuda_graph", "cuda_graph_config.prefill.backend", "disable_cuda_graph"),
    "prefill_cuda_graph_backend": ("disable_piecewise_cuda_graph", "enable_piecewise_cuda_graph", "cuda_graph_config.prefill.backend", "disable_cuda_graph"),
    "decode_cuda_graph": ("disable_cuda_graph", "cuda_graph_config.decode.backend"),
    "decode_cuda_graph_max_bs": ("cuda_graph_max_bs", "cuda_graph_config.decode.max_bs", "cuda_graph_bs"),
    "flashinfer_allreduce_fusion": ("enable_flashinfer_allreduce_fusion", "flashinfer_allreduce_fusion_backend"),
    "flashinfer_allreduce_fusion_requested": ("enable_flashinfer_allreduce_fusion", "flashinfer_allreduce_fusion_backend"),
    "mamba_cache_size": ("runtime.mamba_cache_size", "max_mamba_cache_size"),
}
# What a rule expression's name reads as in a cause line (as the start-up log names it).
_SHOWN = (("runtime.mamba_cache_size", "max_mamba_cache_size"), ("runtime.", ""), ("effective.", ""), ("arg.", ""), ("requested.", ""))
_EXPLAINING_KINDS = ("override", "cap", "noop")
_LONGEST_FORMULA = 80


def settings_read(label: str, name: str) -> tuple[str, ...]:
    """The settings whose findings explain ``LABEL.NAME`` as a test read it (``effective``,
    ``server_args``); nothing for other objects (``model_info``)."""
    if label == "effective":
        return _EFFECTIVE_SETTINGS.get(name, (f"runtime.{name}", name))
    if label == "server_args":
        return (name,)
    return ()


def explaining(explanation: Explanation, kb: KnowledgeBase, settings: tuple[str, ...], value: Any = None, name: str | None = None) -> list[Finding]:
    """The findings that explain a value: a rule that sets, caps or ignores one of
    ``settings``, confirmed on the target (or, with nothing reported to compare, one whose
    prediction is the value read). A finding about the argument of the same name as the value
    read explains it only when its value is the one read (the argument 48 does not explain
    the 26 in effect)."""
    by_id = kb.by_id
    out = []
    for finding in explanation.findings:
        if not _covers(finding.setting, settings):
            continue
        if name is not None and finding.setting == name and value is not None:
            shown = finding.effective if finding.status == "confirmed" else finding.predicted
            if shown is not None and shown != value:
                continue
        rule = by_id.get(finding.rule)
        if rule is None or rule.kind not in _EXPLAINING_KINDS:
            continue
        if finding.status == "confirmed" or (finding.status == "predicted" and (rule.kind == "noop" or (finding.predicted is not None and finding.predicted == value))):
            out.append(finding)
    return out


def _covers(setting: str, settings: tuple[str, ...]) -> bool:
    return any(setting == s or setting.startswith(f"{s}.") for s in settings)


def line(finding: Finding, rule: Rule | None = None, situation: Situation | None = None) -> str:
    """``capped by the mamba state cache (max_mamba_cache_size 132 // 5) [capacity.mamba-cap]``:
    the rule's title (without the setting's name it starts with), how the value came about,
    and the rule id."""
    words = _words(finding)
    detail = _detail(finding, rule, situation) if rule is not None else None
    return scrub(f"{words}{f' ({detail})' if detail else ''} [{finding.rule}]")


def _words(finding: Finding) -> str:
    title = finding.title
    for name in (finding.setting.removeprefix("runtime."), finding.setting):
        prefix = f"{name} is "
        if title.startswith(prefix):
            return title[len(prefix):]
    return title


def _detail(finding: Finding, rule: Rule, situation: Situation | None) -> str | None:
    if rule.kind == "noop":
        return None
    expression = rule.value_expression
    if expression is not None and situation is not None and expression.names:
        text = rule.value or ""
        for name in sorted(expression.names, key=len, reverse=True):
            shown = _shown(name, situation)
            text = re.sub(rf"(?<![\w.]){re.escape(name)}(?!\w)", shown.replace("\\", "\\\\"), text)
        if len(text) <= _LONGEST_FORMULA:
            return text
    value = finding.effective if finding.status == "confirmed" else finding.predicted
    if value is None and finding.predicted is None:
        return None
    return f"{finding.setting.removeprefix('runtime.')} = {short_repr(value, 40)}"


def _shown(name: str, situation: Situation) -> str:
    readable = name
    for prefix, shown in _SHOWN:
        if readable.startswith(prefix):
            readable = shown + readable[len(prefix):]
            break
    if name.startswith("list."):
        return readable
    try:
        value = situation.lookup(name)
    except Exception:  # noqa: BLE001 - a value that cannot be read is shown by name
        return readable
    if is_unknown(value):
        return readable
    if name.startswith("derived."):
        return short_repr(value, 30)
    return f"{readable} {short_repr(value, 30)}"


def causes(target: Target, label: str, name: str, value: Any = None) -> list[str]:
    """One line per finding that explains ``LABEL.NAME`` on ``target`` (the rule that set,
    capped or ignored it); empty when none does."""
    from pytest_sglang.judge.explain.api import explain, situation_of
    from pytest_sglang.judge.explain.kb import load

    settings = settings_read(label, name)
    if not settings:
        return []
    knowledge = load()
    with _reads.paused():
        explanation = explain(target, kb=knowledge)
        situation = situation_of(target, kb=knowledge)
        return [line(f, knowledge.by_id.get(f.rule), situation) for f in explaining(explanation, knowledge, settings, value, name)]
