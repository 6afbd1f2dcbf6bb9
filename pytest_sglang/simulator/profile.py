"""Declarative profiles of simulated SGLang deployments, and the JSON they answer with.

A profile names an SGLang version, the GPUs, the model, the arguments as SGLang reports
them and the runtime values the scheduler decided. The responses take the shapes of that
SGLang version, built on field sets taken from real servers (``templates/``).
"""

from __future__ import annotations

import copy
import difflib
import functools
import json
import time
import typing
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from packaging.version import Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.files import FileError, MiB, MissingFileError, check_nesting, read_text
from pytest_sglang.model.facts import SERVER_INFO_EXTRA_KEYS
from pytest_sglang.model.versions import parse_version
from pytest_sglang.parse.shellwords import split_words
from pytest_sglang.simulator.from_capture import profile_from_capture
from pytest_sglang.simulator.templates import load_template, template_names

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
    # Known only from a real 0.5.23 server (tests/data/real-0.5.23-shapes.json and the shared
    # artefacts), so gated there until an older release is shown to have them.
    "weight_versions": "0.5.23",  # meta_info.weight_versions; OpenAI `metadata` on completions too
    # meta_info cached_tokens_details, dp_rank, response_sent_to_client_ts; timings with --enable-metrics
    "request_time_stats": "0.5.23",
    "completion_tokens_details": "0.5.23",  # usage.completion_tokens_details: null
    # chat chunks without `usage: null`, deltas with `reasoning_content: null`, no null tool_calls
    "lean_chat_answers": "0.5.23",
    "finish_on_last_completion_chunk": "0.5.23",  # /v1/completions streams no separate empty finish chunk
    "model_echo": "0.5.23",  # OpenAI answers name the request's model ("default" if none); unknown ones are served
    "validation_errors": "0.5.23",  # an unreadable body is a 400 `{"object": "error", "type": "Bad Request", ...}`
    "load_counters": "0.5.23",  # /v1/loads per-rank timestamp, prefill/decode counters, disaggregation, queues
}


def _copied(values: dict[str, Any]) -> dict[str, Any]:
    """A copy that shares nothing mutable with ``values``: ``copy.deepcopy`` of the few nested
    values, the hundreds of scalars as they are (a whole deepcopy was most of a host's set-up)."""
    return {key: copy.deepcopy(value) if isinstance(value, (dict, list, set)) else value for key, value in values.items()}


@functools.lru_cache(maxsize=256)
def _version_has(sglang_version: str, feature: str) -> bool | None:
    """Whether that version has the feature; None if it is no version. Cached: streams ask
    once per chunk, and parsing versions would cost more than the chunk."""
    parsed = parse_version(sglang_version)
    if parsed is None:
        return None
    return Version(parsed.base_version) >= Version(_SINCE[feature])

# Per-rank /v1/loads keys that arrive with the "load_counters" feature.
_LOAD_COUNTER_KEYS = frozenset(
    {
        "timestamp",
        "num_active_tokens",
        "num_prealloc_ready_tokens",
        "total_prefill_uncached_tokens",
        "total_prefill_busy_us",
        "decode_moments",
        "disaggregation",
        "queues",
    }
)

# Per-rank /v1/loads sections of a server that is neither a prefill nor a decode node.
_NO_DISAGGREGATION = {
    "mode": "null",
    "prefill_bootstrap_queue_reqs": 0,
    "prefill_inflight_queue_reqs": 0,
    "decode_prealloc_queue_reqs": 0,
    "decode_transfer_queue_reqs": 0,
    "decode_retracted_queue_reqs": 0,
    "kv_transfer_speed_gb_s": 0.0,
    "kv_transfer_latency_ms": 0.0,
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
    # Fields decided after SGLang's post-init (``runtime.X``, ``scheduler_args.X``, or a
    # reported field): the profile proof holds them to the pool sizing, not to post-init.
    after_post_init: list[str] = Field(default_factory=list)
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
        if feature not in _SINCE:
            raise ValueError(f"unknown simulator feature {feature!r}; known: {', '.join(sorted(_SINCE))}")
        found = _version_has(self.sglang_version, feature)
        return found if found is not None else self.version >= Version(_SINCE[feature])  # raises: no version

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
        base = _copied(base)
        served = self.model.served_model_name or self.model.model_path
        base.update(
            {
                "model_path": self.model.model_path,
                "tokenizer_path": self.model.model_path,
                "served_model_name": served,
            }
        )
        base.update(_copied(self.server_args))
        for name in self.drop_fields:
            base.pop(name, None)
        return base

    @property
    def metrics_enabled(self) -> bool:
        """Launched with --enable-metrics: /metrics exists and meta_info carries request timings."""
        return bool(self.server_args.get("enable_metrics"))

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

    def loads(
        self,
        *,
        running: int,
        waiting: int,
        used_tokens: int,
        throughput: float,
        waiting_tokens: int = 0,
        prefill_tokens: int = 0,
        prefill_busy_us: int = 0,
        decode_moments: Sequence[float] = (0.0,) * 6,
    ) -> dict[str, Any]:
        """The /v1/loads body. ``prefill_*`` and ``decode_moments`` are the scheduler's
        cumulative step counters: decode_moments is (steps, sum of batch sizes, sum of step
        microseconds, sum of squared batch sizes, sum of batch size x microseconds, tokens)."""
        body: dict[str, Any] = {"timestamp": datetime.now(timezone.utc).isoformat(), "version": self.sglang_version}
        figures = self._load_figures(running, used_tokens, throughput)
        if not self.has("accelerator"):
            total = running + waiting
            counts = {"num_running_reqs": running, "num_waiting_reqs": waiting, "num_used_tokens": used_tokens}
            body["dp_rank_count"] = 1
            body["loads"] = [{"dp_rank": 0, **counts, **figures, "num_total_reqs": total}]
            body["aggregate"] = {"total_running_reqs": running, "total_waiting_reqs": waiting, "total_reqs": total}
            return body
        args = self.args()
        # The GPU's marketing name; null on a machine without CUDA, as SGLang reports it.
        body["accelerator"] = self.gpu.name if self.gpu is not None else None
        body["num_accelerators"] = (args.get("tp_size") or 1) * (args.get("pp_size") or 1)
        rt = self.runtime
        load: dict[str, Any] = {
            "timestamp": time.time(),
            "dp_rank": 0,
            "num_running_reqs": running,
            "num_waiting_reqs": waiting,
            "num_waiting_uncached_tokens": waiting_tokens,  # no prefix cache: all of it is uncached
            "num_used_tokens": used_tokens,
            "num_total_tokens": used_tokens,
            # Everything held belongs to a running request; only a decode node preallocates.
            "num_active_tokens": used_tokens,
            "num_prealloc_ready_tokens": 0,
            **figures,
            "total_prefill_uncached_tokens": prefill_tokens,
            "total_prefill_busy_us": prefill_busy_us,
            "decode_moments": [float(m) for m in decode_moments],
            "memory": {
                "weight_gb": rt.weight_gb,
                "kv_cache_gb": rt.kvcache_gb,
                "graph_gb": rt.graph_gb,
                "token_capacity": rt.max_total_num_tokens,
            },
            "disaggregation": dict(_NO_DISAGGREGATION),
            "queues": {"waiting": waiting, "grammar": 0, "paused": 0, "retracted": 0, "prealloc_ready": 0},
        }
        if not self.has("load_counters"):
            load = {key: value for key, value in load.items() if key not in _LOAD_COUNTER_KEYS}
        body["loads"] = [load]
        return body

    def _load_figures(self, running: int, used_tokens: int, throughput: float) -> dict[str, Any]:
        """The capacity and usage figures every /v1/loads version reports per rank."""
        capacity = self.runtime.max_total_num_tokens
        max_running = self.runtime.effective_max_running_requests_per_dp
        return {
            "max_total_num_tokens": capacity,
            "max_running_requests": max_running,
            "token_usage": round(used_tokens / capacity, 4) if capacity else 0.0,
            "gen_throughput": throughput,
            "cache_hit_rate": 0.0,
            "utilization": round(running / max(max_running, 1), 4),
        }


def _argv_of(command: str | None) -> str | None:
    """``launch_command`` in /server_info is argv[1:] joined, without the interpreter and module."""
    if not command:
        return None
    words = split_words(command)  # shlex.split's words, in time linear in the command
    for i, word in enumerate(words):
        if word in ("sglang.launch_server", "serve"):
            return " ".join(words[i + 1 :])
    return " ".join(words)


def bundled_profiles() -> list[str]:
    folder = resources.files("pytest_sglang.simulator").joinpath("profiles")
    return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))


def unknown_profile(name: str) -> str | None:
    """Why ``sim://NAME`` names no bundled profile (with the closest names), or None when it
    names one or is a profile file (``.json``). The bundled profiles are known without starting
    anything, so a front end can refuse a misspelt name once, before it opens any target."""
    if name.endswith(".json"):
        return None
    known = bundled_profiles()
    if name in known:
        return None
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(f'sim://{c}' for c in close)}?)" if close else ""
    return (
        f"sim://{name}: unknown simulator profile {name!r}{hint}; bundled profiles: {', '.join(known)} "
        "(or a profile file: sim:///path/to/profile.json)"
    )


# A profile is a few KiB; a capture given as a profile (sim://capture.json) may be as large as a
# capture file may be (pytest_sglang.collect.capture.CAPTURE_CAP_BYTES).
PROFILE_CAP_BYTES = 64 * MiB


def _read_profile_file(path: Path, shown: str) -> str:
    """A profile (or capture) file's text through :func:`pytest_sglang.base.files.read_text`: a
    regular file only (a FIFO or a device is refused at once, never read), at most
    ``PROFILE_CAP_BYTES`` (64 MiB) of UTF-8, JSON nested at most 100 deep."""
    what = f"simulator profile file {shown}"
    try:
        text = read_text(path, cap_bytes=PROFILE_CAP_BYTES, what=what)
    except MissingFileError:
        raise SpecError(f"simulator profile file {shown} does not exist") from None
    except FileError as exc:
        raise SpecError(str(exc)) from None
    check_nesting(text, what=what)
    return text


def load_profile(name_or_path: str) -> Profile:
    """A bundled profile by name, or a profile JSON file by path."""
    if name_or_path.endswith(".json"):
        path = Path(name_or_path)
        text = _read_profile_file(path, name_or_path)
        where = str(path)
    else:
        names = bundled_profiles()
        if name_or_path not in names:
            raise SpecError(f"unknown simulator profile {name_or_path!r}; bundled profiles: {', '.join(names)}")
        text = resources.files("pytest_sglang.simulator").joinpath("profiles").joinpath(f"{name_or_path}.json").read_text()
        where = name_or_path
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise SpecError(f"simulator profile {where} is not valid JSON: {exc}") from None
    if isinstance(data, dict) and str(data.get("format", "")).startswith("pytest-sglang-capture/"):
        data = profile_from_capture(data, where)  # a capture becomes a simulated deployment
    try:
        profile = Profile.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"simulator profile {where} is not valid: {_errors_in_one_line(exc)} (see docs/simulator.md)") from None
    if parse_version(profile.sglang_version) is None:
        raise SpecError(f"simulator profile {where} is not valid: sglang_version: {profile.sglang_version!r} is not a version (write e.g. \"0.5.23\")")
    try:
        load_template(profile.template)
    except SpecError:
        raise SpecError(f"simulator profile {where} is not valid: template: {profile.template!r} does not exist (use one of {', '.join(template_names())})") from None
    return profile


_SHOWN_ERRORS = 3


def _errors_in_one_line(exc: ValidationError) -> str:
    """Each of pydantic's errors as ``field: what is wrong (what to do)``, on one line."""
    errors = exc.errors(include_url=False, include_input=False)
    parts = [_error_text(error) for error in errors[:_SHOWN_ERRORS]]
    if len(errors) > _SHOWN_ERRORS:
        parts.append(f"and {len(errors) - _SHOWN_ERRORS} more")
    return "; ".join(parts)


def _error_text(error: Any) -> str:
    loc = [str(part) for part in error.get("loc", ())]
    field = ".".join(loc) or "the file"
    kind = error.get("type", "")
    if kind == "missing":
        return f"{field}: missing (add it)"
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1])
        known = sorted(model.model_fields) if model is not None else []
        close = difflib.get_close_matches(loc[-1], known, n=1)
        hint = f"did you mean {close[0]}?" if close else f"known keys: {', '.join(known)}"
        return f"{field}: not a profile key ({hint})"
    if not loc and kind in ("model_type", "dict_type"):
        return "the file must hold one JSON object"
    message = " ".join(str(error.get("msg", "is not valid")).split())
    return f"{field}: {message[:1].lower()}{message[1:]}"


def _model_at(loc: list[str]) -> type[BaseModel] | None:
    """The profile section (a model) that a location points into."""
    model: type[BaseModel] = Profile
    for part in loc:
        info = model.model_fields.get(part)
        if info is None:
            return None
        inner = next((a for a in typing.get_args(info.annotation) or (info.annotation,) if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if inner is None:
            return None
        model = inner
    return model
