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
from .errors import SpecError
from .facts import Facts, GpuFact, HostFacts
from .models import Effective, ModelInfo, ServerArgs
from .normaliser import Snapshot, normalise
from .spec import HostSpec, parse_spec


@dataclass(frozen=True)
class TargetOptions:
    api_key: str | None = None
    timeout: float = 10.0
    wait_ready: float = 0.0
    sm: int | None = None


class Target:
    """One SGLang deployment as tests see it. Facts are collected once, on open."""

    def __init__(self, spec: HostSpec, facts: Facts, client: HttpClient | None = None, simulator: Any = None) -> None:
        self.spec = spec
        self.facts = facts
        self.client = client
        self._simulator = simulator

    # ---- opening and closing --------------------------------------------------------------
    @classmethod
    def open(cls, spec: HostSpec | str, options: TargetOptions | None = None) -> Target:
        spec = parse_spec(spec) if isinstance(spec, str) else spec
        options = options or TargetOptions()
        api_key = _api_key_for(spec, options)
        overrides: dict[str, Any] = {"sm": options.sm} if options.sm is not None else {}
        if spec.is_simulated:
            return cls._open_simulated(spec, options, api_key, overrides)
        client = HttpClient(
            spec.base_url,
            api_key=api_key,
            timeout=options.timeout,
            verify=spec.options.get("verify", "true").lower() not in ("0", "false", "no"),
            name=spec.display,
        )
        try:
            if options.wait_ready > 0:
                client.wait_ready(options.wait_ready)
            facts = collect_http(client, target=spec.display, overrides=overrides)
        except BaseException:
            client.close()
            raise
        return cls(spec, facts, client)

    @classmethod
    def _open_simulated(cls, spec: HostSpec, options: TargetOptions, api_key: str | None, overrides: dict[str, Any]) -> Target:
        from .sim.launcher import start_simulator
        from .sim.profile import load_profile

        profile = load_profile(spec.host)  # a bad profile fails here, before a process starts
        sim_key = spec.options.get("api_key") or api_key
        process = start_simulator(spec.host, api_key=sim_key, admin_api_key=spec.options.get("admin_api_key"))
        client = HttpClient(process.url, api_key=api_key, timeout=options.timeout, name=spec.display)
        try:
            client.wait_ready(max(options.wait_ready, 30.0))
            facts = collect_http(client, target=spec.display, origin="sim", overrides=overrides)
        except BaseException:
            client.close()
            process.stop()
            raise
        host = HostFacts(
            gpus=[
                GpuFact(
                    index=i,
                    name=profile.gpu.name,
                    compute_capability=profile.gpu.compute_capability,
                    memory_mib=profile.gpu.memory_mib,
                    driver=profile.gpu.driver,
                )
                for i in range(profile.gpu.count)
            ]
            if profile.gpu
            else [],
            gpu_source=f"simulator profile {profile.name}",
            launch_command=profile.launch_command,
            launch_command_source=f"simulator profile {profile.name}" if profile.launch_command else None,
            log_lines=list(profile.log_lines),
            log_source=f"simulator profile {profile.name}" if profile.log_lines else None,
        )
        facts = facts.model_copy(update={"host": host, "profile": profile.name})
        return cls(spec, facts, client, simulator=process)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
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
        return normalise(self.facts)

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
    def raw(self) -> dict[str, Any]:
        """The (redacted) bodies as the server returned them, by endpoint name."""
        return {name: ep.body for name, ep in self.facts.endpoints.items() if ep.ok}

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


def _api_key_for(spec: HostSpec, options: TargetOptions) -> str | None:
    var = spec.options.get("api_key_env")
    if var:
        value = os.environ.get(var)
        if not value:
            raise SpecError(f"{spec.display}: ?api_key_env={var} names an environment variable that is not set")
        return value
    return options.api_key


def connect(
    spec: HostSpec | str,
    *,
    api_key: str | None = None,
    timeout: float = 10.0,
    wait_ready: float = 0.0,
    sm: int | None = None,
) -> Target:
    """Open a target by spec and collect its facts."""
    return Target.open(spec, TargetOptions(api_key=api_key, timeout=timeout, wait_ready=wait_ready, sm=sm))
