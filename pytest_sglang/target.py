"""A target: one SGLang deployment, its collected facts and its normalised configuration.

Works without pytest::

    from pytest_sglang import connect
    with connect("http://gpu1:30000", api_key=...) as target:
        print(target.effective.max_running_requests, target.effective.source_of("max_running_requests"))
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from . import _reads
from .collect.http import HttpClient, collect_http
from ._text import one_line
from .errors import SGLangError, SpecError, TargetError
from .facts import Facts, GpuFact
from .host import HostOptions, collect_host
from .launch import LaunchCommand
from .logs import LogSource, SGLangLogs
from .models import Effective, ModelInfo, ServerArgs
from .normaliser import Snapshot, normalise
from .options import TargetOptions
from .secrets import collecting, register
from .spec import HostSpec, check_host_name, parse_spec, verify_setting


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

    # ---- opening and closing --------------------------------------------------------------
    @classmethod
    def open(cls, spec: HostSpec | str, options: TargetOptions | None = None) -> Target:
        """Collect the target's facts and normalise them. Whatever goes wrong on the way is one
        :class:`~pytest_sglang.errors.SGLangError` naming the target: this is the one boundary
        between what a host sends and the caller (a pytest run keeps going with other hosts).
        Normalising happens here, inside the boundary, so facts no configuration can be made of
        (a capture whose ``server_info`` is a list) fail this target on open, not a later read."""
        spec = parse_spec(spec) if isinstance(spec, str) else spec
        register(*spec.secrets)
        try:
            with collecting():
                target = cls._open(spec, options or TargetOptions())
        except SGLangError as exc:
            raise exc.with_traceback(None) from None
        except Exception as exc:  # anything a host's answers or a transport library raised
            detail = one_line(f"{type(exc).__name__}: {exc}", 200)
            raise TargetError(f"{spec.display}: reading the target failed ({detail}); the other hosts are not affected") from None
        try:
            target.snapshot  # noqa: B018  (normalised now: a failure is this target's one line)
        except BaseException:
            target.close()
            raise
        return target

    @classmethod
    def _open(cls, spec: HostSpec, options: TargetOptions) -> Target:
        if spec.scheme == "replay":  # a capture file, read offline
            from .capture.replay import open_capture

            return open_capture(spec, options)
        api_key = _api_key_for(spec, options)
        overrides: dict[str, Any] = {"sm": options.sm} if options.sm is not None else {}
        if spec.is_simulated:
            return cls._open_simulated(spec, options, api_key, overrides)
        check_host_name(spec)
        client = HttpClient(
            spec.base_url,
            api_key=api_key,
            timeout=options.timeout,
            verify=verify_setting(spec),
            name=spec.display,
        )
        shell, host_options = _host_access(spec, options)
        try:
            try:
                if options.wait_ready > 0:
                    client.wait_ready(options.wait_ready)
                facts = collect_http(client, target=spec.display, overrides=overrides)
            except TargetError as exc:
                if shell is None:
                    raise
                # The host's logs can still say how the server was configured.
                facts = Facts(target=spec.display, base_url=client.base_url, overrides=overrides, problems=[f"HTTP: {exc}"])
            if shell is not None:
                host = collect_host(shell, host_options, where=shell.name)
                facts = facts.model_copy(update={"host": host.model_copy(update={"host_key_checked": not options.ssh_insecure})})
                if facts.problems and not any("server_args=" in line for line in host.log_lines):
                    raise TargetError(facts.problems[0].removeprefix("HTTP: "))
        except BaseException:
            client.close()
            if shell is not None:
                shell.close()
            raise
        return cls(spec, facts, client, shell=shell)

    @classmethod
    def _open_simulated(cls, spec: HostSpec, options: TargetOptions, api_key: str | None, overrides: dict[str, Any]) -> Target:
        from .sim.host import simulated_host
        from .sim.launcher import start_simulator
        from .sim.profile import load_profile

        profile = load_profile(spec.host)  # a bad profile fails here, before a process starts
        # sim://NAME?api_key=K starts the simulator with K and reads it with K (unless another key
        # is given, e.g. to see the simulator refuse a wrong one).
        sim_key = spec.options.get("api_key") or api_key
        process = start_simulator(spec.host, api_key=sim_key, admin_api_key=spec.options.get("admin_api_key"))
        client = HttpClient(process.url, api_key=api_key or sim_key, timeout=options.timeout, name=spec.display)
        try:
            client.wait_ready(max(options.wait_ready, 30.0))
            facts = collect_http(client, target=spec.display, origin="sim", overrides=overrides)
        except BaseException:
            client.close()
            process.stop()
            raise
        facts = facts.model_copy(update={"host": simulated_host(profile), "profile": profile.name})
        notes = [
            f"{option} is not used for a simulated target (its host is the profile's simulated one)"
            for option, value in (("--sglang-ssh", options.ssh), ("--sglang-unit", options.unit), ("--sglang-logs", options.logs))
            if value
        ]
        return cls(spec, facts, client, simulator=process, notes=notes)

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
        """The facts normalised. A failure is one :class:`~pytest_sglang.errors.TargetError`
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
            out.append("SSH host key NOT verified (--sglang-ssh-insecure)")
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
            return f"{server} and there is no host access: give --sglang-ssh USER@HOST (or local) so nvidia-smi can be read, or --sglang-sm=SM"
        if "nvidia-smi" in host.missing_tools:
            tried = f"nvidia-smi is not installed on {host.where}"
        elif not host.gpus:
            tried = f"nvidia-smi on {host.where} listed no GPU"
        else:
            names = ", ".join(sorted({g.name for g in host.gpus}))
            tried = f"nvidia-smi on {host.where} listed {len(host.gpus)} GPU(s) ({names}) without a compute capability this plugin knows"
        return f"{tried}; {server}; give --sglang-sm=SM if the architecture is known"

    def launch_unknown_reason(self) -> str:
        """Why the launch command is unknown: what was tried and what it found."""
        if self.snapshot.launch_command_refused:
            return self.snapshot.launch_command_refused
        host = self.facts.host
        http = f"SGLang {self.version or '?'} does not report it over HTTP (0.5.20 and later do)"
        if host is None:
            return f"{http}; give --sglang-ssh (and --sglang-unit) to read it from the host"
        if host.pid is None:
            found = f"no SGLang process was found on {host.where} (neither a --sglang-unit main process nor a sglang.launch_server / sglang serve process)"
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


def _host_access(spec: HostSpec, options: TargetOptions) -> tuple[Any, HostOptions]:
    """The shell to the target's host (None without host access) and what to read there."""
    ssh = spec.options.get("ssh") or options.ssh
    logs_text = spec.options.get("logs") or options.logs
    host_options = HostOptions(
        unit=spec.options.get("unit") or options.unit,
        logs=LogSource.parse(logs_text) if logs_text else None,
        timeout=options.command_timeout,
        # Only a port the spec names: behind a proxy on 80/443, SGLang's own port differs and
        # neither the process lookup nor the log's port check can use the URL's.
        port=spec.port,
    )
    if not ssh:
        if logs_text or host_options.unit:
            raise SpecError(f"{spec.display}: --sglang-logs and --sglang-unit need host access: give --sglang-ssh user@host (or local)")
        return None, host_options
    if ssh == "local":
        from .shell.local import LocalShell

        return LocalShell(), host_options
    from .shell.ssh import SSHShell

    shell = SSHShell(
        ssh,
        key_filename=options.ssh_key,
        insecure=options.ssh_insecure,
        connect_timeout=options.timeout,
        config_path=options.ssh_config,
        known_hosts=options.ssh_known_hosts,
    )
    return shell, host_options


def _api_key_for(spec: HostSpec, options: TargetOptions) -> str | None:
    var = spec.options.get("api_key_env")
    if var:
        value = os.environ.get(var)
        if not value:
            raise SpecError(f"{spec.display}: ?api_key_env={var} names an environment variable that is not set")
        register(value)
        return value
    return options.api_key


def connect(
    spec: HostSpec | str,
    *,
    api_key: str | None = None,
    timeout: float = 10.0,
    wait_ready: float = 0.0,
    sm: int | None = None,
    ssh: str | None = None,
    ssh_key: str | None = None,
    ssh_insecure: bool = False,
    ssh_known_hosts: str | None = None,
    ssh_config: str | None = None,
    unit: str | None = None,
    logs: str | None = None,
    command_timeout: float = 30.0,
) -> Target:
    """Open a target by spec and collect its facts. ``ssh`` ("user@host[:port]" or "local")
    adds host access: GPU facts, the launch command (``unit``) and the current run's ``logs``,
    as ``--sglang-ssh`` and its companions do in pytest."""
    options = TargetOptions(
        api_key=api_key,
        timeout=timeout,
        wait_ready=wait_ready,
        sm=sm,
        ssh=ssh,
        ssh_key=ssh_key,
        ssh_insecure=ssh_insecure,
        ssh_known_hosts=ssh_known_hosts,
        ssh_config=ssh_config,
        unit=unit,
        logs=logs,
        command_timeout=command_timeout,
    )
    options.validate()
    return Target.open(spec, options)
