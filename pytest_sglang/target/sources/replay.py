"""``replay:FILE``: a target read from a capture file instead of a host.

Everything a test reads from a target (server_args, effective values, model info, GPU facts,
the launch command, the logs, explain findings) comes from the captured facts, so a suite gives
the same results as it did against the host. What needs the host itself (an HTTP client to send
requests) fails in one line saying the target is a replay.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_sglang.base.errors import TargetError
from pytest_sglang.base.settings import setting
from pytest_sglang.collect.capture import CaptureProvenance, read_capture
from pytest_sglang.model.facts import Facts
from pytest_sglang.target.core import Target
from pytest_sglang.target.options import TargetOptions
from pytest_sglang.target.sources import unused_host_access
from pytest_sglang.target.spec import HostSpec


class ReplayClientError(TargetError):
    """A replayed target was asked for what only a live host has (its HTTP client or URL)."""


class ReplayTarget(Target):
    """A :class:`~pytest_sglang.target.target.Target` whose facts come from a capture file."""

    def __init__(self, spec: HostSpec, facts: Facts, provenance: CaptureProvenance, captured_facts: Facts, notes: list[str] | None = None) -> None:
        super().__init__(spec, facts, notes=notes)
        self.provenance = provenance
        self.captured_facts = captured_facts

    @property
    def client(self) -> Any:
        raise ReplayClientError(self._no_host("HTTP client"))

    @client.setter
    def client(self, value: Any) -> None:  # Target.__init__ sets None: a replay never has one
        if value is not None:
            raise ValueError("a replayed target has no HTTP client")

    @property
    def url(self) -> str | None:
        raise ReplayClientError(self._no_host("URL"))

    def _no_host(self, what: str) -> str:
        p = self.provenance
        return (
            f"{self.name} is a replay of a capture of {p.target} (taken {p.captured_at:%Y-%m-%d %H:%M} UTC): it has no host, "
            f"so no {what}; a test that sends requests needs a live {setting('host')}"
        )

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<SGLang target {self.name} (replay of {self.provenance.target})>"


def open_capture(spec: HostSpec | str, options: TargetOptions | None = None) -> ReplayTarget:
    """Open ``replay:FILE`` (a relative FILE is read from the current directory). Errors are
    one-line :class:`~pytest_sglang.base.errors.SpecError` naming the file."""
    from pytest_sglang.target.spec import parse_spec

    spec = parse_spec(spec) if isinstance(spec, str) else spec
    if spec.scheme != "replay":
        raise ValueError(f"open_capture needs a replay:FILE spec, not {spec.display}")
    options = options or TargetOptions()
    # read_capture reads through pytest_sglang.base.files.read_text: a regular file of at most
    # 64 MiB (a FIFO or a device is refused at once, never read), JSON nested at most 100 deep.
    provenance, captured = read_capture(Path(spec.host), what=spec.display)
    overrides = dict(captured.overrides)
    if options.sm is not None:
        overrides["sm"] = options.sm
    facts = captured.model_copy(update={"target": spec.display, "origin": "replay", "overrides": overrides})
    summary = f"replay of {provenance.target} captured {provenance.captured_at:%Y-%m-%d %H:%M} UTC by pytest-sglang {provenance.pytest_sglang_version}; no request reaches a host"
    notes = [summary, *unused_host_access(options, "a replayed target (the capture holds what its host gave)")]
    return ReplayTarget(spec, facts, provenance, captured, notes=notes)


def open(spec: HostSpec, options: TargetOptions) -> ReplayTarget:  # noqa: A001  (the source interface's name)
    """The source interface: ``replay:FILE`` opened as :func:`open_capture` does."""
    return open_capture(spec, options)
