"""Raw facts about one target: the single format that live, simulated and replayed targets share.

Collectors fill a :class:`Facts`; the normaliser reads only a :class:`Facts`. Everything in
it has already been redacted (see :mod:`pytest_sglang.parse.redact`), so it can be printed,
written to disk and replayed.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

FACTS_FORMAT = 1

# The HTTP endpoints read from every target, in order; each with its fallback path.
ENDPOINTS: dict[str, tuple[str, ...]] = {
    "server_info": ("/server_info", "/get_server_info"),
    "model_info": ("/model_info", "/get_model_info"),
    "loads": ("/v1/loads",),
    "models": ("/v1/models",),
}


# Keys /server_info puts next to the server arguments: scheduler info and bookkeeping
# (0.5.13+ kv_events, 0.5.18+ startup_time, 0.5.20+ launch_command, 0.5.22+ frontend).
SERVER_INFO_EXTRA_KEYS = frozenset(
    {
        "status",
        "max_total_num_tokens",
        "max_req_input_len",
        "internal_states",
        "version",
        "kv_events",
        "startup_time",
        "launch_command",
        "frontend",
        "scheduler_pids",
        "hicache_object_layout",
        "kv_event_sources",
    }
)


class Endpoint(BaseModel):
    """One HTTP read: which path answered, its status and its (JSON or text) body."""

    model_config = ConfigDict(frozen=True)

    path: str
    status: int | None = None
    body: Any = None
    error: str | None = None
    elapsed_ms: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.error is None


class GpuFact(BaseModel):
    """One GPU of the target's host."""

    model_config = ConfigDict(frozen=True)

    index: int
    name: str
    compute_capability: str | None = None
    memory_mib: int | None = None
    driver: str | None = None
    uuid: str | None = None


class HostFacts(BaseModel):
    """What the host (not the HTTP server) says: GPUs, the launch command, log lines."""

    model_config = ConfigDict(frozen=True)

    where: str | None = None  # "ssh://root@gpu1:22", "local", "simulator profile NAME"
    gpus: list[GpuFact] = Field(default_factory=list)
    gpu_source: str | None = None
    gpus_in_use: list[int] = Field(default_factory=list)  # indices the SGLang process runs on
    cuda_visible_devices: str | None = None
    pid: int | None = None
    invocation_id: str | None = None
    launch_command: str | None = None
    launch_command_source: str | None = None
    log_lines: list[str] = Field(default_factory=list)
    log_source: str | None = None
    # What makes the logs doubtful without stopping collection (e.g. a start-up line for another port).
    log_warnings: list[str] = Field(default_factory=list)
    missing_tools: list[str] = Field(default_factory=list)
    host_key_checked: bool = True


class Facts(BaseModel):
    """Everything collected about one target, once per session."""

    model_config = ConfigDict(frozen=True)

    format: int = FACTS_FORMAT
    target: str
    origin: Literal["http", "sim", "replay"] = "http"
    collected_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    base_url: str | None = None
    endpoints: dict[str, Endpoint] = Field(default_factory=dict)
    host: HostFacts | None = None
    # Values the user supplied because the target cannot tell them (e.g. --sglang-sm).
    overrides: dict[str, Any] = Field(default_factory=dict)
    profile: str | None = None
    # What could not be read but did not stop collection (e.g. HTTP down, logs used instead).
    problems: list[str] = Field(default_factory=list)

    def body(self, name: str) -> Any:
        endpoint = self.endpoints.get(name)
        return endpoint.body if endpoint is not None and endpoint.ok else None

    def where(self, name: str) -> str:
        endpoint = self.endpoints.get(name)
        return endpoint.path if endpoint is not None else ENDPOINTS.get(name, (name,))[0]
