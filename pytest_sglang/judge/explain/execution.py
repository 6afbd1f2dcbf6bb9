"""What an installed SGLang's own post-init made of a launch command (``explain --execute``), as
typed data the explanation carries."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ChangedField(BaseModel):
    """One field post-init changed: what argparse made of the command (its default when the flag
    was not given) and the value after post-init, with the rules that explain it."""

    model_config = ConfigDict(frozen=True)

    field: str
    requested: Any = None
    value: Any = None
    rules: list[str] = Field(default_factory=list)
    """The rules of the findings about this field; empty when no rule explains it yet."""
    cause: str = ""
    """The findings' titles, or "changed by SGLang X, no rule explains it yet"."""


class Execution(BaseModel):
    """The installed release's answer: every field its post-init changed, or the one line it
    refused or crashed with (``error``)."""

    model_config = ConfigDict(frozen=True)

    sglang_version: str | None = None
    python: str
    seconds: float
    gpu: dict[str, Any] = Field(default_factory=dict)
    """The GPU simulated: compute capability, name, memory (MiB), count (and platform, gfx)."""
    model: str = ""
    """Where the model's config.json came from."""
    error: str | None = None
    changed: list[ChangedField] = Field(default_factory=list)

    def field(self, name: str) -> ChangedField | None:
        return next((c for c in self.changed if c.field == name), None)

    @property
    def unexplained(self) -> list[ChangedField]:
        return [c for c in self.changed if not c.rules]
