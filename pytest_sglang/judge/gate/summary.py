"""What the report says of one host, read from its Target: its summary (identity, version,
GPU, model), its effective values with where each was read, its explain findings, and the
figures its snapshot refused (which the verdict counts as open)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_sglang.base.errors import SGLangError
from pytest_sglang.base.secrets import clip
from pytest_sglang.judge.gate.models import Finding, HostFacts

if TYPE_CHECKING:
    from pytest_sglang.target.target import Target

FINDING_FIELDS = ("id", "rule", "severity", "status", "setting", "title", "summary", "requested", "effective", "predicted", "lint")


@dataclass(frozen=True)
class HostPart:
    """A host's part of the report before its tests are added: ``section`` holds its keys
    ``host`` to ``explain_error``, in the report's order."""

    host: str
    section: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def _json_value(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def summarize(target: Target) -> HostFacts:
    """The one summary of a target: its identity, SGLang version, GPU and model. The report's
    ``facts`` are this, the capture's provenance and the baseline document take theirs from it."""
    from pytest_sglang.base import reads as _reads

    with _reads.paused():
        e = target.effective
        host = target.facts.host
        gpu = None
        if e.gpu_name:
            gpu = f"{e.gpu_count}x {e.gpu_name}" if e.gpu_count else e.gpu_name
        elif e.sm:
            gpu = f"SM{e.sm}"
        return HostFacts(
            describe=target.describe(),
            origin=target.facts.origin,
            collected_at=target.facts.collected_at.isoformat(),
            profile=target.facts.profile,
            where=host.where if host else None,
            sglang_version=target.version,
            model=target.model_info.model_path or target.server_args.model_path,
            architecture=target.model_info.architecture,
            gpu=gpu,
            gpu_name=e.gpu_name,
            gpu_count=e.gpu_count,
            sm=e.sm,
            tp_size=e.tp_size,
            launch_command_known=target.launch_command is not None,
        )


def target_summary(target: Target) -> dict[str, Any]:
    """:func:`summarize` as the report's ``facts`` object, in the schema's key order."""
    return summarize(target).model_dump()


def effective_values(target: Target) -> dict[str, Any]:
    """Every effective value, with its source and what was requested."""
    from pytest_sglang.base import reads as _reads

    out: dict[str, Any] = {}
    with _reads.paused():
        e = target.effective
        for name, value in e.values().items():
            prov = e.provenance.get(name)
            out[name] = {
                "value": _json_value(value),
                "source": prov.source if prov else "unknown",
                "requested": _json_value(prov.requested) if prov and prov.requested_source else None,
                "requested_source": prov.requested_source if prov else None,
                "note": prov.note if prov else None,
            }
    return out


def findings(target: Target) -> tuple[list[dict[str, Any]], str | None]:
    """The explain findings as the report keeps them, or why explain failed."""
    try:
        from pytest_sglang.judge.explain import explain

        explanation = explain(target)
    except Exception as exc:  # the report still has everything else about the host
        return [], f"explain failed: {type(exc).__name__}: {clip(str(exc), 200)}"
    return [_json_value({k: getattr(f, k) for k in FINDING_FIELDS}) for f in explanation.findings], None


def read_host(display: str, open_target: Callable[[], Target]) -> HostPart:
    """A host's part of the report; a host that cannot be opened (an :class:`SGLangError`)
    has its error instead of facts."""
    section: dict[str, Any] = {"host": display, "error": None, "warnings": [], "facts": None, "effective": {}, "findings": [], "explain_error": None}
    try:
        target = open_target()
    except SGLangError as exc:
        section["error"] = str(exc)
        return HostPart(display, section)
    section["facts"] = target_summary(target)
    section["warnings"] = list(target.warnings)
    section["effective"] = effective_values(target)
    section["findings"], section["explain_error"] = findings(target)
    return HostPart(display, section, [Finding.model_validate(f) for f in section["findings"]], list(target.snapshot.refused))
