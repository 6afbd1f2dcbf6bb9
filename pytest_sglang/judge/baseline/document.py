"""A target's configuration document: what a baseline file holds, and what ``show --json`` prints.

The document is plain JSON (sorted keys), made to be read in a review: the effective values
with their sources, the server arguments, the model and GPU facts, the requested launch
command and the explain findings. Secrets are removed (everything goes through
:func:`~pytest_sglang.base.secrets.scrub_object`) and the fields that differ from one host or one
start to the next (ports, host names, per-host paths, seeds, timestamps, process ids) are left
out unless ``include_volatile=True``, which adds them under ``"volatile"`` (never compared).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from pytest_sglang.base.secrets import scrub_object

if TYPE_CHECKING:
    from pytest_sglang.target.target import Target

DOCUMENT_FORMAT = 1

# Server arguments that differ per host or per start, not per configuration. A name matches
# when it is in VOLATILE_ARGS or matches one of VOLATILE_ARG_PATTERNS.
VOLATILE_ARGS = frozenset(
    {
        "host",
        "port",
        "nccl_port",
        "random_seed",
        "dist_init_addr",
        "node_rank",
        "api_key",
        "admin_api_key",
        "ssl_keyfile",
        "ssl_certfile",
        "ssl_ca_certs",
        "ssl_keyfile_password",
        "download_dir",
        "crash_dump_folder",
        "file_storage_path",
        "export_metrics_to_file_dir",
        "otlp_traces_endpoint",
        "forward_pass_metrics_ipc_name",
        "debug_tensor_dump_output_folder",
        "debug_tensor_dump_input_file",
        "remote_instance_weight_loader_seed_instance_ip",
        "remote_instance_weight_loader_seed_instance_service_port",
        "remote_instance_weight_loader_send_weights_group_ports",
        "encoder_urls",
        "decrypted_config_file",
        "decrypted_draft_config_file",
        "kv_events_config",
        "modelopt_checkpoint_save_path",
        "modelopt_export_path",
    }
)
VOLATILE_ARG_PATTERNS = (re.compile(r"(^|_)port(s)?$"), re.compile(r"_(ip|addr|address|url)$"), re.compile(r"(^|_)seed$"))

# Environment variables of the launch command that name host-specific things.
VOLATILE_ENV = re.compile(r"^(PATH|HOME|HOSTNAME|PWD|USER|LD_LIBRARY_PATH|CUDA_VISIBLE_DEVICES|.*_(DIR|HOME|PATH|CACHE|ADDR|PORT|HOST))$")

MODEL_FIELDS = ("model_path", "served_model_name", "tokenizer_path", "model_type", "architectures", "is_generation", "has_image_understanding", "has_audio_understanding", "weight_version")


def is_volatile_arg(name: str) -> bool:
    return name in VOLATILE_ARGS or any(p.search(name) for p in VOLATILE_ARG_PATTERNS)


def _json(value: Any) -> Any:
    """JSON-normal form (tuples -> lists, models -> dicts, odd objects -> str), so a document
    read back from disk compares equal to one built live."""
    return json.loads(json.dumps(value, default=_default, sort_keys=True))


def _default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return str(value)


def _placeholders(target: Target) -> list[tuple[str, str]]:
    """Host-specific strings that appear inside sources, each with what replaces it."""
    out: list[tuple[str, str]] = []
    host = target.facts.host
    if host is not None and host.where and not host.where.startswith("simulator profile"):
        out.append((host.where, "<host>"))
    url = _url(target)
    if url:
        out.append((url.rstrip("/"), "<target>"))
    if not target.spec.is_simulated:
        out.append((target.spec.display.rstrip("/"), "<target>"))
    if host is not None and host.pid is not None:
        out.append((f"/proc/{host.pid}/", "/proc/<pid>/"))
        out.append((f"pid {host.pid}", "pid <pid>"))
        out.append((f"process {host.pid}", "process <pid>"))
    return sorted(set(out), key=lambda p: len(p[0]), reverse=True)


def _url(target: Target) -> str | None:
    from pytest_sglang.base.errors import SGLangError

    try:
        return target.url
    except SGLangError:  # a replayed capture has no URL
        return None


def _clean(text: Any, placeholders: list[tuple[str, str]]) -> Any:
    if not isinstance(text, str):
        return text
    for old, new in placeholders:
        if old:
            text = text.replace(old, new)
    return text


def document(target: Target, *, include_volatile: bool = False) -> dict[str, Any]:
    """The configuration document of a collected target (``connect(...)``, the ``sglang``
    fixture, a simulated or replayed target). Deterministic: reading the same deployment
    twice, or two replicas of it on different hosts, gives the same document."""
    from pytest_sglang.base import reads as _reads

    with _reads.paused():
        return _document(target, include_volatile)


def _document(target: Target, include_volatile: bool) -> dict[str, Any]:
    from pytest_sglang.judge.gate.summary import summarize

    marks = _placeholders(target)
    effective = target.effective
    eff: dict[str, Any] = {}
    for name, value in effective.values().items():
        prov = effective.provenance.get(name)
        entry: dict[str, Any] = {"value": value, "source": _clean(prov.source, marks) if prov else "unknown"}
        if prov is not None and prov.requested_source is not None:
            entry["requested"] = prov.requested
            entry["requested_source"] = _clean(prov.requested_source, marks)
        if prov is not None and prov.note:
            entry["note"] = _clean(prov.note, marks)
        eff[name] = entry

    all_args = target.server_args.as_dict()
    args = {k: v for k, v in all_args.items() if not is_volatile_arg(k)}

    info = target.model_info
    model = {name: getattr(info, name) for name in MODEL_FIELDS}
    if isinstance(model.get("model_path"), str) and model["model_path"].startswith("/"):
        model["model_path"] = "<local path>/" + model["model_path"].rstrip("/").rsplit("/", 1)[-1]
    if isinstance(model.get("tokenizer_path"), str) and model["tokenizer_path"].startswith("/"):
        model["tokenizer_path"] = "<local path>/" + model["tokenizer_path"].rstrip("/").rsplit("/", 1)[-1]

    gpus = target.gpus
    host = target.facts.host
    in_use = set(host.gpus_in_use) if host is not None and host.gpus_in_use else {g.index for g in gpus}
    summary = summarize(target)
    gpu = {
        "name": summary.gpu_name,
        "count": summary.gpu_count,
        "sm": summary.sm,
        "devices": [
            {"name": g.name, "compute_capability": g.compute_capability, "memory_mib": g.memory_mib, "driver": g.driver}
            for g in sorted(gpus, key=lambda g: g.index)
            if g.index in in_use
        ],
    }

    launch: dict[str, Any] | None = None
    requested = target.requested
    if requested is not None:
        launch = {
            "entrypoint": requested.entrypoint,
            "requested": {k: v for k, v in requested.requested.items() if not is_volatile_arg(k)},
            "env": {k: v for k, v in requested.env.items() if not VOLATILE_ENV.match(k)},
            "source": _clean(target.snapshot.launch_command_source, marks),
        }

    doc: dict[str, Any] = {
        "format": DOCUMENT_FORMAT,
        "sglang_version": summary.sglang_version,
        "effective": eff,
        "server_args": args,
        "server_args_source": _clean(target.snapshot.server_args_source, marks),
        "model": model,
        "gpu": gpu,
        "launch": launch,
        "findings": _findings(target),
    }
    if include_volatile:
        doc["volatile"] = {
            "target": target.name,
            "url": _url(target),
            "origin": target.facts.origin,
            "collected_at": target.facts.collected_at.isoformat(),
            "host": host.where if host is not None else None,
            "pid": host.pid if host is not None else None,
            "gpu_uuids": [g.uuid for g in gpus if g.index in in_use],
            "gpus_in_use": sorted(in_use),
            "launch_command": target.launch_command,
            "server_args": {k: v for k, v in all_args.items() if is_volatile_arg(k)},
        }
    return scrub_object(_json(doc))


def _findings(target: Target) -> list[dict[str, Any]]:
    from pytest_sglang.base.errors import SGLangError
    from pytest_sglang.judge.explain import explain

    try:
        explanation = explain(target)
    except SGLangError as exc:  # the knowledge base cannot judge this target: say so, keep the rest
        return [{"id": "explain.unavailable", "severity": "info", "status": "undecided", "setting": "", "summary": str(exc)}]
    marks = _placeholders(target)
    return sorted(
        (
            {"id": f.id, "severity": f.severity, "status": f.status, "setting": f.setting, "summary": _clean(f.summary, marks)}
            for f in explanation.findings
        ),
        key=lambda f: f["id"],
    )


def dumps(doc: dict[str, Any]) -> str:
    """The file form: sorted, indented, newline-terminated, scrubbed."""
    return json.dumps(scrub_object(doc), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str) -> str:
    """A file-system-safe name: letters, digits, '.', '_' and '-' only."""
    name = _UNSAFE.sub("-", text).strip("-.")
    return name[:150] or "unnamed"


def default_key(doc: dict[str, Any]) -> str:
    """model x GPU x SGLang version x tp, as a file name: ``Qwen3.5-122B-A10B__4xRTX-PRO-6000__sglang-0.5.12__tp4``."""
    model = (doc.get("model") or {}).get("model_path") or ((doc.get("server_args") or {}).get("model_path")) or "unknown-model"
    model = str(model).replace("<local path>/", "").rstrip("/").rsplit("/", 1)[-1]
    gpu = doc.get("gpu") or {}
    gpu_name = str(gpu.get("name") or "unknown-gpu")
    for noise in ("NVIDIA ", " Blackwell Server Edition", " Server Edition", " Workstation Edition"):
        gpu_name = gpu_name.replace(noise, "")
    count = gpu.get("count")
    gpu_part = f"{count}x{gpu_name}" if count else gpu_name
    tp = ((doc.get("effective") or {}).get("tp_size") or {}).get("value")
    version = doc.get("sglang_version") or "unknown"
    return "__".join(safe_name(part) for part in (model, gpu_part, f"sglang-{version}", f"tp{tp if tp is not None else '?'}"))
