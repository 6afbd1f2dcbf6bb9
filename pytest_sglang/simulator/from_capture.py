"""A capture as a simulated deployment: ``sim:///path/to/capture.json``.

The simulator reads a profile (pytest_sglang/simulator/profile.py). A capture holds the facts a
simulated target is read into, so the profile is taken from them: the arguments exactly as the
server reported them (template fields it did not report are dropped), the scheduler's own values,
the runtime figures, the model, the GPUs and the launch command and log lines of the host.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from packaging.version import Version

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.secrets import REDACTED
from pytest_sglang.collect.capture import parse_capture
from pytest_sglang.model.facts import SERVER_INFO_EXTRA_KEYS
from pytest_sglang.model.versions import parse_version
from pytest_sglang.simulator.templates import load_template, template_names

# Start-up lines the simulator writes itself from the profile (sim/host.py startup_log).
_GENERATED = re.compile(
    r"server_args=|Load weight end|KV Cache is allocated|Mamba Cache is allocated|max_total_num_tokens=|"
    r"fired up and ready|Disable piecewise CUDA graph because"
)
_STAMP = re.compile(r"^\[[^\]]*\]\s*")
# The simulator serves with the key it is started with (sim://...?api_key=K), never a captured one.
_KEYS = ("api_key", "admin_api_key", "ssl_keyfile_password")


def profile_from_capture(data: Any, where: str) -> dict[str, Any]:
    """The profile (as JSON data, validated by the caller) of a loaded capture file."""
    _, facts = parse_capture(data, where)
    info: dict[str, Any] = facts.body("server_info")
    version = str(info.get("version") or "")
    parsed = parse_version(version)
    if parsed is None:
        raise SpecError(f"capture {where} has no SGLang version in its /server_info: it cannot become a simulated deployment")
    args = {k: v for k, v in info.items() if k not in SERVER_INFO_EXTRA_KEYS}
    for key in _KEYS:
        if args.get(key) == REDACTED:
            args[key] = None
    states = info.get("internal_states")
    state = states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {}
    scheduler = {k: v for k, v in state.items() if k != "last_gen_throughput" and args.get(k, _MISSING) != v}

    templates = sorted(template_names(), key=lambda name: Version(name))
    base = Version(parsed.base_version)
    template = next((t for t in reversed(templates) if Version(t) <= base), templates[0])
    tmpl = load_template(template)
    tmpl_args = {k for k in tmpl["server_info"] if k not in SERVER_INFO_EXTRA_KEYS} if "server_info" in tmpl else set(tmpl["server_args"])

    model_info = facts.body("model_info") or {}
    architectures = model_info.get("architectures")
    if not isinstance(architectures, list) or not architectures:
        raise SpecError(f"capture {where} names no model architecture (/model_info architectures): it cannot become a simulated deployment")
    memory_usage = state.get("memory_usage")
    memory: dict[str, Any] = memory_usage if isinstance(memory_usage, dict) else {}
    graph = memory.get("graph")
    if isinstance(graph, dict):
        graph = graph.get("decode")
    host = facts.host
    lines = [_STAMP.sub("", line) for line in (host.log_lines if host else []) if not _GENERATED.search(line)]
    return {
        "name": Path(where).stem,
        "description": f"a capture of {data['provenance'].get('target')} taken {data['provenance'].get('captured_at')}",
        "sglang_version": version,
        "template": template,
        "gpu": _gpu(facts),
        "model": {
            "model_path": model_info.get("model_path") or args.get("model_path") or "unknown",
            "served_model_name": args.get("served_model_name"),
            "architectures": architectures,
            "model_type": model_info.get("model_type") or "",
            "has_image_understanding": bool(model_info.get("has_image_understanding")),
            "has_audio_understanding": bool(model_info.get("has_audio_understanding")),
            "context_len": _context_len(facts, info),
        },
        "launch_command": _launch_command(facts, info),
        "server_args": args,
        "drop_fields": sorted(tmpl_args - set(args)),
        "scheduler_args": scheduler,
        "runtime": {
            "effective_max_running_requests_per_dp": _first_int(
                state.get("effective_max_running_requests_per_dp"), _loads(facts, "max_running_requests"), args.get("max_running_requests"), 1
            ),
            "max_total_num_tokens": _first_int(info.get("max_total_num_tokens"), state.get("max_total_num_tokens"), _loads(facts, "max_total_num_tokens"), 0),
            "max_req_input_len": _first_int(info.get("max_req_input_len"), None),
            "weight_gb": _number(memory.get("weight")),
            "kvcache_gb": _number(memory.get("kvcache")),
            "graph_gb": _number(graph),
        },
        "log_lines": lines,
    }


_MISSING = object()


def _gpu(facts: Any) -> dict[str, Any] | None:
    gpus = facts.host.gpus if facts.host is not None else []
    if gpus:
        first = gpus[0]
        return {"name": first.name, "count": len(gpus), "compute_capability": first.compute_capability, "memory_mib": first.memory_mib, "driver": first.driver}
    loads = facts.body("loads") or {}
    if isinstance(loads, dict) and isinstance(loads.get("accelerator"), str):
        return {"name": loads["accelerator"], "count": _first_int(loads.get("num_accelerators"), 1)}
    return None


def _context_len(facts: Any, info: dict[str, Any]) -> int:
    models = facts.body("models") or {}
    data = models.get("data") if isinstance(models, dict) else None
    served = data[0].get("max_model_len") if isinstance(data, list) and data and isinstance(data[0], dict) else None
    max_input = info.get("max_req_input_len")
    return _first_int(served, max_input + 6 if isinstance(max_input, int) else None, info.get("context_length"), 32768)


def _launch_command(facts: Any, info: dict[str, Any]) -> str | None:
    if facts.host is not None and facts.host.launch_command:
        return str(facts.host.launch_command)
    argv = info.get("launch_command")  # 0.5.20+: the arguments after the module
    return f"python -m sglang.launch_server {argv}" if isinstance(argv, str) and argv else None


def _loads(facts: Any, key: str) -> Any:
    loads = facts.body("loads") or {}
    ranks = loads.get("loads") if isinstance(loads, dict) else None
    return ranks[0].get(key) if isinstance(ranks, list) and ranks and isinstance(ranks[0], dict) else None


def _first_int(*values: Any) -> Any:
    return next((v for v in values if isinstance(v, int) and not isinstance(v, bool)), None)


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
