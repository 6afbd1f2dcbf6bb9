"""What explaining returns: findings as typed objects that serialise to JSON."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pytest_sglang.judge.explain.execution import Execution
from pytest_sglang.judge.explain.kb import SEVERITIES, Severity

Status = Literal["confirmed", "predicted", "contradicted", "undecided"]


class Finding(BaseModel):
    """One thing SGLang changed, will change, refuses, or ignores, and why.

    ``status``: *confirmed* (the target's reported value is what the rule produces),
    *predicted* (nothing reported to compare with: a launch command, or a value the target
    does not report), *contradicted* (the target reports a value the rule never produces in
    this release), *undecided* (a fact the rule needs is missing: ``needs`` names it and
    ``how_to_provide`` says how to give it).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    rule: str
    severity: Severity
    status: Status
    setting: str
    title: str
    summary: str
    requested: Any = None
    requested_source: str | None = None
    effective: Any = None
    effective_source: str | None = None
    predicted: Any = None
    predicted_range: tuple[Any, Any] | None = None
    """A value known only as a range before the server runs (a cap from explain's pool estimate)."""
    threshold: str | None = None
    """For a cap that may or may not bind: the figure it binds below ("binds only if the KV pool
    holds fewer than 128 tokens")."""
    cause: str = ""
    versions: str = ""
    knobs: list[str] = Field(default_factory=list)
    log_line: str | None = None
    log_source: str | None = None
    log_note: str | None = None
    not_cause_of: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    needs: list[str] = Field(default_factory=list)
    how_to_provide: list[str] = Field(default_factory=list)
    related: list[str] = Field(default_factory=list)
    """For an undecided (gap) finding: the rules that could not be decided."""
    lint: bool = False
    """Whether ``--sglang-lint`` fails on it: an error, or a requested flag that is a no-op
    or overridden on the target."""
    chain: list[dict[str, Any]] = Field(default_factory=list)
    """When several rules set the setting in turn: each step in order (``rule``, ``title``,
    ``value``); the last is the value this finding reports."""


class Explanation(BaseModel):
    """The findings for one target or one launch command, the facts they were decided
    from, and notes about the knowledge base used (version coverage)."""

    model_config = ConfigDict(frozen=True)

    target: str
    mode: Literal["target", "launch"]
    sglang_version: str | None = None
    rules_version: str | None = None
    notes: list[str] = Field(default_factory=list)
    facts: dict[str, Any] = Field(default_factory=dict)
    findings: list[Finding] = Field(default_factory=list)
    rules_evaluated: int = 0
    execution: Execution | None = None
    """With ``execute=True``: what the installed SGLang's own post-init changed."""

    def of_severity(self, severity: Severity) -> list[Finding]:
        return [f for f in self.findings if f.severity == severity]

    @property
    def errors(self) -> list[Finding]:
        return self.of_severity("error")

    @property
    def warnings(self) -> list[Finding]:
        return self.of_severity("warning")

    def by_rule(self, rule: str) -> list[Finding]:
        return [f for f in self.findings if f.rule == rule]

    def about(self, setting: str) -> list[Finding]:
        """The findings about one setting (``'max_running_requests'`` also matches the
        runtime value ``'runtime.max_running_requests'``)."""
        return [f for f in self.findings if f.setting in (setting, f"runtime.{setting}")]

    def counts(self) -> dict[str, int]:
        return {s: len(self.of_severity(s)) for s in SEVERITIES}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.model_dump(mode="json"), **({"indent": 2} | kwargs))

    def __len__(self) -> int:
        return len(self.findings)
