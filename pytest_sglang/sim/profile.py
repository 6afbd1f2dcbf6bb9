"""Declarative profiles of simulated SGLang deployments, and the JSON they answer with.

A profile names an SGLang version, the GPUs, the model, the arguments as SGLang reports
them and the runtime values the scheduler decided. The responses take the shapes of that
SGLang version, built on field sets taken from real servers (``templates/``).
"""

from __future__ import annotations

import copy
import json
import shlex
import time
from datetime import datetime, timezone
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import SpecError
from ..facts import SERVER_INFO_EXTRA_KEYS
from ..versions import parse_version
from packaging.version import Version


_STARTUP_TIME = {"load_weight": 41.2, "kv_cache_allocation": 2.1, "scheduler_e2e": 63.5}

# The SGLang release that first had each feature the simulator varies by version.
_SINCE = {
    "server_info_path": "0.5.9",  # /server_info next to /get_server_info
    "model_info_path": "0.5.9",
    "v1_loads": "0.5.9",
    "effective_mrr": "0.5.9",
    "kv_events": "0.5.13",
    "startup_time": "0.5.18",
    "accelerator": "0.5.18",
    "resolved_dict": "0.5.19",
    "launch_command": "0.5.20",
    "frontend": "0.5.22",
    "ready": "0.5.20",
}


class SimGpu(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    count: int = 1
    compute_capability: str | None = None
    memory_mib: int | None = None
    driver: str | None = None


class SimModel(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model_path: str
    served_model_name: str | None = None
    architectures: list[str]
    model_type: str
    has_image_understanding: bool = False
    has_audio_understanding: bool = False
    context_len: int = 32768


class SimPerformance(BaseModel):
    """A deliberately simple serving model: at most ``max_running_requests`` run at once,
    the rest queue; prefill grows with prompt tokens, each decode step with batch size."""

    model_config = ConfigDict(extra="forbid")

    prefill_ms_per_1k_tokens: float = 4.0
    prefill_base_ms: float = 1.0
    decode_step_base_ms: float = 2.0
    decode_step_ms_per_request: float = 0.05
    default_max_new_tokens: int = 16


class SimRuntime(BaseModel):
    model_config = ConfigDict(extra="forbid")

    effective_max_running_requests_per_dp: int
    max_total_num_tokens: int
    max_req_input_len: int | None = None
    weight_gb: float = 0.0
    kvcache_gb: float = 0.0
    graph_gb: float = 0.0


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    name: str
    description: str = ""
    sglang_version: str
    template: str
    gpu: SimGpu | None = None
    model: SimModel
    launch_command: str | None = None
    server_args: dict[str, Any] = Field(default_factory=dict)
    # Fields of the template that this SGLang version does not have.
    drop_fields: list[str] = Field(default_factory=list)
    scheduler_args: dict[str, Any] = Field(default_factory=dict)
    runtime: SimRuntime
    performance: SimPerformance = Field(default_factory=SimPerformance)
    log_lines: list[str] = Field(default_factory=list)

    # ---- version features -------------------------------------------------------------
    @property
    def version(self) -> Version:
        parsed = parse_version(self.sglang_version)
        if parsed is None:
            raise SpecError(f"profile {self.name}: sglang_version {self.sglang_version!r} is not a version")
        return parsed

    def has(self, feature: str) -> bool:
        v = Version(self.version.base_version)
        if feature not in _SINCE:
            raise ValueError(f"unknown simulator feature {feature!r}; known: {', '.join(sorted(_SINCE))}")
        return v >= Version(_SINCE[feature])

    # ---- the arguments as SGLang reports them ------------------------------------------
    @property
    def _template(self) -> dict[str, Any]:
        return load_template(self.template)

    def args(self) -> dict[str, Any]:
        tmpl = self._template
        if "server_info" in tmpl:
            base = {k: v for k, v in tmpl["server_info"].items() if k not in SERVER_INFO_EXTRA_KEYS}
        else:
            base = dict(tmpl["server_args"])
        base = copy.deepcopy(base)
        served = self.model.served_model_name or self.model.model_path
        base.update(
            {
                "model_path": self.model.model_path,
                "tokenizer_path": self.model.model_path,
                "served_model_name": served,
            }
        )
        base.update(copy.deepcopy(self.server_args))
        for name in self.drop_fields:
            base.pop(name, None)
        return base

    @property
    def api_key(self) -> str | None:
        return self.server_args.get("api_key")

    @property
    def admin_api_key(self) -> str | None:
        return self.server_args.get("admin_api_key")

    def server_info(self, *, gen_throughput: float = 0.0) -> dict[str, Any]:
        args = self.args()
        if self.has("launch_command"):
            args.pop("launch_command", None)
        rt = self.runtime
        state = {**args, **copy.deepcopy(self.scheduler_args)}
        memory: dict[str, Any] = {
            "weight": rt.weight_gb,
            "kvcache": rt.kvcache_gb,
            "token_capacity": rt.max_total_num_tokens,
            "graph": rt.graph_gb,
        }
        if self.has("resolved_dict"):
            memory["startup_available"] = 0.0
            memory["token_capacity_swa"] = None
            memory["graph"] = {"prefill": 0.0, "decode": rt.graph_gb}
            state["world_size"] = (args.get("tp_size") or 1) * (args.get("pp_size") or 1)
            # The scheduler's copy drops the Engine-only callable; it adds its graph facts.
            state.pop("custom_sigquit_handler", None)
            decode = (args.get("cuda_graph_config") or {}).get("decode") or {}
            state["decode_cuda_graph_bs"] = list(decode.get("bs") or []) if decode.get("backend") != "disabled" else []
            state["decode_cuda_graph_memory_gb"] = rt.graph_gb
        if self.has("startup_time"):
            state["startup_time"] = _STARTUP_TIME
        state["last_gen_throughput"] = gen_throughput
        state["memory_usage"] = memory
        if self.has("effective_mrr"):
            state["effective_max_running_requests_per_dp"] = rt.effective_max_running_requests_per_dp
        body: dict[str, Any] = dict(args)
        if self.has("launch_command"):
            body["launch_command"] = _argv_of(self.launch_command)
        body.update(
            {
                "status": "ready",
                "max_total_num_tokens": rt.max_total_num_tokens,
                "max_req_input_len": rt.max_req_input_len or self.model.context_len - 6,
            }
        )
        if self.has("resolved_dict") and "hicache_object_layout" in self._template.get("server_info", {}):
            body["hicache_object_layout"] = self._template["server_info"]["hicache_object_layout"]
        if self.has("startup_time"):
            body["startup_time"] = _STARTUP_TIME
        if self.has("kv_events"):
            body["kv_events"] = None
        body["internal_states"] = [state]
        body["version"] = self.sglang_version
        if self.has("frontend"):
            body["frontend"] = "python"
        if self.has("resolved_dict"):
            # 0.5.22+ redact watermark secrets in /server_info; earlier ones have none set.
            for key in ("watermark_key", "watermark_key_b", "watermark_config"):
                if key in body:
                    body[key] = "<redacted>"
                    state[key] = "<redacted>"
        return body

    def model_info(self) -> dict[str, Any]:
        m = self.model
        info: dict[str, Any] = {
            "model_path": m.model_path,
            "tokenizer_path": m.model_path,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "has_image_understanding": m.has_image_understanding,
            "has_audio_understanding": m.has_audio_understanding,
            "model_type": m.model_type,
            "architectures": list(m.architectures),
        }
        if self.has("resolved_dict"):
            tmpl = copy.deepcopy(self._template.get("model_info") or {})
            tmpl.update(info)
            tmpl["served_model_name"] = m.served_model_name or m.model_path
            return tmpl
        return info

    def models(self) -> dict[str, Any]:
        served = self.model.served_model_name or self.model.model_path
        return {
            "object": "list",
            "data": [
                {
                    "id": served,
                    "object": "model",
                    "created": int(time.time()),
                    "owned_by": "sglang",
                    "root": served,
                    "parent": None,
                    "max_model_len": self.model.context_len,
                }
            ],
        }

    def loads(self, *, running: int, waiting: int, used_tokens: int, throughput: float) -> dict[str, Any]:
        rt = self.runtime
        load = {
            "dp_rank": 0,
            "num_running_reqs": running,
            "num_waiting_reqs": waiting,
            "num_used_tokens": used_tokens,
            "max_total_num_tokens": rt.max_total_num_tokens,
            "max_running_requests": rt.effective_max_running_requests_per_dp,
            "token_usage": round(used_tokens / rt.max_total_num_tokens, 4) if rt.max_total_num_tokens else 0.0,
            "gen_throughput": throughput,
            "cache_hit_rate": 0.0,
            "utilization": round(running / max(rt.effective_max_running_requests_per_dp, 1), 4),
        }
        body: dict[str, Any] = {
            "timestamp": datetime.now(timezone.utc).isoformat(),
            "version": self.sglang_version,
        }
        if self.has("accelerator") and self.gpu is not None:
            body["accelerator"] = self.gpu.name
            args = self.args()
            tp = args.get("tp_size") or 1
            pp = args.get("pp_size") or 1
            body["num_accelerators"] = tp * pp
        if self.has("accelerator"):
            load["num_waiting_uncached_tokens"] = 0
            load["num_total_tokens"] = used_tokens
            load["memory"] = {
                "weight_gb": rt.weight_gb,
                "kv_cache_gb": rt.kvcache_gb,
                "graph_gb": rt.graph_gb,
                "token_capacity": rt.max_total_num_tokens,
            }
            body["loads"] = [load]
        else:
            load["num_total_reqs"] = running + waiting
            body["dp_rank_count"] = 1
            body["loads"] = [load]
            body["aggregate"] = {
                "total_running_reqs": running,
                "total_waiting_reqs": waiting,
                "total_reqs": running + waiting,
            }
        return body



def _argv_of(command: str | None) -> str | None:
    """``launch_command`` in /server_info is argv[1:] joined, without the interpreter and module."""
    if not command:
        return None
    words = shlex.split(command)
    for i, word in enumerate(words):
        if word in ("sglang.launch_server", "serve"):
            return " ".join(words[i + 1 :])
    return " ".join(words)


@lru_cache(maxsize=None)
def load_template(name: str) -> dict[str, Any]:
    """A template's field set; shared between calls, so callers copy before changing it."""
    try:
        text = resources.files("pytest_sglang.sim").joinpath("templates").joinpath(f"{name}.json").read_text()
    except FileNotFoundError:
        raise SpecError(f"simulator template {name!r} does not exist") from None
    return json.loads(text)


def bundled_profiles() -> list[str]:
    folder = resources.files("pytest_sglang.sim").joinpath("profiles")
    return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))


def load_profile(name_or_path: str) -> Profile:
    """A bundled profile by name, or a profile JSON file by path."""
    if name_or_path.endswith(".json"):
        path = Path(name_or_path)
        if not path.is_file():
            raise SpecError(f"simulator profile file {name_or_path} does not exist")
        text = path.read_text()
        where = str(path)
    else:
        names = bundled_profiles()
        if name_or_path not in names:
            raise SpecError(f"unknown simulator profile {name_or_path!r}; bundled profiles: {', '.join(names)}")
        text = resources.files("pytest_sglang.sim").joinpath("profiles").joinpath(f"{name_or_path}.json").read_text()
        where = name_or_path
    try:
        data = json.loads(text)
        return Profile.model_validate(data)
    except (ValueError, TypeError) as exc:
        first = str(exc).splitlines()
        detail = " ".join(first[:3])
        raise SpecError(f"simulator profile {where} is not valid: {detail}") from None
