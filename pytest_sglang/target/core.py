"""The target as tests and scripts read it: one deployment's collected facts and their
normalised configuration. A target is made by its source (:mod:`pytest_sglang.target.sources`)
and opened through :func:`pytest_sglang.target.target.open_target` (or ``connect``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pytest_sglang.base import reads as _reads
from pytest_sglang.base.errors import SGLangError, TargetError
from pytest_sglang.base.settings import setting
from pytest_sglang.base.text import one_line
from pytest_sglang.collect.http import HttpClient
from pytest_sglang.model.config import Effective, ModelInfo, ServerArgs
from pytest_sglang.model.facts import Facts, GpuFact
from pytest_sglang.normaliser.snapshot import Snapshot, normalise
from pytest_sglang.parse.launch import LaunchCommand
from pytest_sglang.parse.logs import SGLangLogs
from pytest_sglang.target.spec import HostSpec


@dataclass(frozen=True)
class GpuInfo:
    """What the ``gpu`` fixture gives: the GPUs the server runs on, and where that was read."""

    name: str | None
    sm: int | None
    count: int | None
    devices: list[GpuFact]
    in_use: list[int]
    source: str

    @classmethod
    def of(cls, target: Target) -> GpuInfo | None:
        e = target.effective
        if e.gpu_name is None and e.sm is None:
            return None
        host = target.facts.host
        return cls(
            name=e.gpu_name,
            sm=e.sm,
            count=e.gpu_count,
            devices=list(host.gpus) if host else [],
            in_use=list(host.gpus_in_use) if host else [],
            source=e.source_of("sm") if e.sm is not None else e.source_of("gpu_name"),
        )


class Target:
    """One SGLang deployment as tests see it. Facts are collected once, on open."""

    def __init__(
        self,
        spec: HostSpec,
        facts: Facts,
        client: HttpClient | None = None,
        simulator: Any = None,
        shell: Any = None,
        notes: list[str] | None = None,
    ) -> None:
        self.spec = spec
        self.facts = facts
        self.client = client
        self.shell = shell
        self._simulator = simulator
        self._notes = list(notes or [])

    # ---- closing ------------------------------------------------------------------------------
    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.shell is not None:
            self.shell.close()
        if self._simulator is not None:
            self._simulator.stop()
            self._simulator = None

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- what tests read --------------------------------------------------------------------
    @cached_property
    def snapshot(self) -> Snapshot:
        """The facts normalised. A failure is one :class:`~pytest_sglang.base.errors.TargetError`
        naming the target (its facts, not the caller, are at fault), never a traceback."""
        try:
            return normalise(self.facts)
        except SGLangError as exc:
            error: SGLangError = exc if self.name in str(exc) else TargetError(f"{self.name}: {exc}")
        except RecursionError:
            error = TargetError(f"{self.name}: its facts are nested too deeply to normalise; the other hosts are not affected")
        except Exception as exc:  # facts of a shape no SGLang answers with (a capture edited by hand)
            detail = one_line(f"{type(exc).__name__}: {exc}", 200)
            error = TargetError(f"{self.name}: its configuration could not be normalised ({detail}); the other hosts are not affected")
        raise error.with_traceback(None)

    @property
    def name(self) -> str:
        return self.spec.display

    @property
    def url(self) -> str | None:
        return self.client.base_url if self.client else self.facts.base_url

    @property
    def version(self) -> str | None:
        return self.snapshot.version

    @property
    def server_args(self) -> ServerArgs:
        return self.snapshot.server_args

    @property
    def effective(self) -> Effective:
        return self.snapshot.effective

    @property
    def model_info(self) -> ModelInfo:
        return self.snapshot.model_info

    @property
    def launch_command(self) -> str | None:
        return self.snapshot.launch_command

    @property
    def internal_states(self) -> list[dict[str, Any]]:
        return self.snapshot.internal_states

    @property
    def requested(self) -> LaunchCommand | None:
        """The launch command, parsed: what was asked for (None when unknown)."""
        return self.snapshot.requested

    @property
    def logs(self) -> SGLangLogs | None:
        """The lines of the current run's log that matter (None without a log source)."""
        host = self.facts.host
        if host is None or host.log_source is None:
            return None
        return SGLangLogs(source=host.log_source, lines=list(host.log_lines))

    @property
    def gpus(self) -> list[GpuFact]:
        return list(self.facts.host.gpus) if self.facts.host else []

    @property
    def raw(self) -> dict[str, Any]:
        """The (redacted) bodies as the server returned them, by endpoint name."""
        return {name: ep.body for name, ep in self.facts.endpoints.items() if ep.ok}

    @property
    def warnings(self) -> list[str]:
        """What a reader of the results should know about how this target was read."""
        out = list(self._notes)
        host = self.facts.host
        if host is not None and not host.host_key_checked:
            out.append(f"SSH host key NOT verified ({setting('ssh_insecure')})")
        if host is not None:
            out += host.log_warnings
        out += [f"{problem}; configuration read from the logs" for problem in self.facts.problems]
        out += self.snapshot.warnings  # how the facts were read: a value passed over, a command not read
        return out

    def gpu_unknown_reason(self) -> str:
        """Why the GPU is unknown: what was tried and what it found (for skip reasons)."""
        host = self.facts.host
        server = f"SGLang {self.version or '?'} reports no GPU model over HTTP"
        if host is None:
            return f"{server} and there is no host access: give {setting('ssh')} USER@HOST (or local) so nvidia-smi can be read, or {setting('sm')}=SM"
        if "nvidia-smi" in host.missing_tools:
            tried = f"nvidia-smi is not installed on {host.where}"
        elif not host.gpus:
            tried = f"nvidia-smi on {host.where} listed no GPU"
        else:
            names = ", ".join(sorted({g.name for g in host.gpus}))
            tried = f"nvidia-smi on {host.where} listed {len(host.gpus)} GPU(s) ({names}) without a compute capability this plugin knows"
        return f"{tried}; {server}; give {setting('sm')}=SM if the architecture is known"

    def launch_unknown_reason(self) -> str:
        """Why the launch command is unknown: what was tried and what it found."""
        if self.snapshot.launch_command_refused:
            return self.snapshot.launch_command_refused
        host = self.facts.host
        http = f"SGLang {self.version or '?'} does not report it over HTTP (0.5.20 and later do)"
        if host is None:
            return f"{http}; give {setting('ssh')} (and {setting('unit')}) to read it from the host"
        if host.pid is None:
            found = f"no SGLang process was found on {host.where} (neither a {setting('unit')} main process nor a sglang.launch_server / sglang serve process)"
        else:
            found = f"process {host.pid} on {host.where} gave no command line (is /proc/{host.pid}/cmdline readable by that user?)"
        return f"{http}; {found}"

    def describe(self) -> str:
        """One line for report headers: version, model, GPU, tp."""
        with _reads.paused():
            return self._describe()

    def _describe(self) -> str:
        e = self.effective
        parts = [f"SGLang {self.version or '?'}"]
        model = self.model_info.model_path or self.server_args.model_path or "?"
        arch = f" ({self.model_info.architecture})" if self.model_info.architecture else ""
        parts.append(f"{model}{arch}")
        if e.gpu_name:
            count = f"{e.gpu_count}x " if e.gpu_count else ""
            sm = f" (SM{e.sm})" if e.sm else ""
            parts.append(f"{count}{e.gpu_name}{sm}")
        elif e.sm:
            parts.append(f"SM{e.sm}")
        else:
            parts.append("GPU unknown")
        parts.append(f"tp {e.tp_size if e.tp_size is not None else '?'}")
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"<SGLang target {self.name}>"
