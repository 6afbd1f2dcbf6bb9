"""Built-in checks: one pytest item per host (or per run) that a capability adds, and the one
channel their results travel on.

A capability (lint, baselines, fleet drift) defines a :class:`Check` and adds its items with
:func:`add_items`. Each item runs the check in whichever process runs the test (an xdist worker
or the main process) and records its structured result in the test report's
``user_properties`` under ``"sglang.check"``, so the controller's reports (JSON, Markdown,
JUnit) receive it the same way with or without xdist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from pytest_sglang.base.errors import SGLangError
from pytest_sglang.base.secrets import scrub, scrub_object

CHECK_PROPERTY = "sglang.check"


@dataclass
class Outcome:
    """What a check found: failing lines (empty: passed), notes shown either way, and a
    JSON-able record for reports."""

    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)
    hint: str | None = None
    heading: str | None = None  # the failure's first line, when the check's own says too little


@dataclass(frozen=True)
class Check:
    """``run(config, spec)`` -> :class:`Outcome`; ``spec`` is a HostSpec, or None for a check
    of the whole run (fleet drift)."""

    name: str  # "sglang-lint": the item is named NAME[HOST] (or NAME for a run-wide check)
    heading: str  # the failure's first line, with {n} the number of failures: "{n} finding(s) fail the SGLang lint"
    run: Callable[[pytest.Config, Any], Outcome]


class CheckFailed(Exception):
    def __init__(self, outcome: Outcome, heading: str) -> None:
        super().__init__(heading)
        self.outcome, self.heading = outcome, heading

    def render(self) -> str:
        lines = [(self.outcome.heading or self.heading.format(n=len(self.outcome.failures))) + ":"]
        lines += [f"  {line}" for line in self.outcome.failures]
        lines += [f"  note: {note}" for note in self.outcome.notes]
        if self.outcome.hint:
            lines.append(self.outcome.hint)
        return scrub("\n".join(lines))


class CheckItem(pytest.Item):
    def __init__(self, *, check: Check, spec: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check, self.spec = check, spec

    def runtest(self) -> None:
        try:
            outcome = self.check.run(self.config, self.spec)
        except SGLangError as exc:
            outcome = Outcome(failures=[str(exc)], record={"error": str(exc)})
        record = {
            "check": self.check.name,
            "host": getattr(self.spec, "display", None),
            "passed": not outcome.failures,
            "failures": outcome.failures,
            "notes": outcome.notes,
            **outcome.record,
        }
        self.user_properties.append((CHECK_PROPERTY, scrub_object(record)))
        if outcome.failures:
            raise CheckFailed(outcome, self.check.heading)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CheckFailed):
            return excinfo.value.render()
        return scrub(str(super().repr_failure(excinfo)))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, self.name


def add_items(session: pytest.Session, items: list[pytest.Item], check: Check, specs: list[Any] | None) -> None:
    """One item per spec (``specs``), or one for the run (``specs=None``)."""
    if specs is None:
        items.append(CheckItem.from_parent(session, name=check.name, check=check, spec=None))
        return
    for spec in specs:
        items.append(CheckItem.from_parent(session, name=f"{check.name}[{spec.display}]", check=check, spec=spec))


def session_state(config: pytest.Config) -> Any:
    """The session's host specs and targets (pytest_sglang.plugin.core.SGLangPlugin), or None."""
    from pytest_sglang.plugin.core import PLUGIN

    return config.stash.get(PLUGIN, None)
