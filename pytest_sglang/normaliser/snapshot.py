"""Facts -> one typed model. Every SGLang version difference in how values are reported
is handled here (and in :mod:`pytest_sglang.model.knowledge`), nowhere else."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from pytest_sglang.base import reads as _reads
from pytest_sglang.base.errors import SpecError, TargetError
from pytest_sglang.base.settings import setting
from pytest_sglang.base.text import short_repr
from pytest_sglang.model import knowledge
from pytest_sglang.model.config import SM_GIVEN, Effective, ModelInfo, Provenance, ServerArgs
from pytest_sglang.model.facts import SERVER_INFO_EXTRA_KEYS, Facts
from pytest_sglang.model.gpu import sm_from_capability, sm_from_name
from pytest_sglang.model.numbers import checked_copy, field_range
from pytest_sglang.parse.launch import LaunchCommand, parse_launch_command
from pytest_sglang.parse.logs import SGLangLogs
from pytest_sglang.parse.redact import MAX_COMMAND, is_refused_command

SI = "/server_info"


@dataclass
class Snapshot:
    """A target's configuration, normalised: what tests read."""

    target: str
    version: str | None
    server_args: ServerArgs
    model_info: ModelInfo
    effective: Effective
    server_args_source: str
    launch_command: str | None = None
    launch_command_source: str | None = None
    requested: LaunchCommand | None = None
    internal_states: list[dict[str, Any]] = field(default_factory=list)
    loads: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    # Why a launch command the target gave was not read (too long), when it was not.
    launch_command_refused: str | None = None
    # Figures the target answered that are none (NaN, an infinity, out of range, a string where
    # a count is read), each naming where it was read and the value; none of them is used.
    refused: list[str] = field(default_factory=list)


class _Pick:
    """Collects effective values and their provenance. A candidate whose value does not fit the
    field's type (a server or log that says ``tp_size='four'``) is passed over, and the next
    candidate is used; the provenance names what was passed over."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.provenance: dict[str, Provenance] = {}
        self.refused: list[str] = []
        # Where a body held a number that is no figure (its fault by where it was read): a
        # candidate read from there is passed over with that fault, so its provenance says why.
        self.refused_at: dict[str, str] = {}
        self.release: str | None = None  # the SGLang version, to say which release lacks a field
        self.server_info = "/server_info"  # where the server's arguments were read

    def set(self, name: str, *candidates: tuple[Any, str], requested: tuple[Any, str] | None = None, note: str | None = None) -> Any:
        passed_over: list[str] = []

        def provenance(source: str) -> Provenance:
            return Provenance(
                source=source,
                requested=requested[0] if requested else None,
                requested_source=requested[1] if requested else None,
                note="; ".join([*passed_over, *([note] if note else [])]) or None,
            )

        for value, source in candidates:
            if value is None:
                if source in self.refused_at:
                    passed_over.append(f"{self.refused_at[source]}: refused")
                continue
            fitted, ok = _fit(name, value)
            if not ok:
                checks = field_range(Effective, name)
                fault = checks.refusal(source, value) if checks is not None else None
                if fault is not None:  # a figure out of its range: refused, and said so
                    passed_over.append(f"{fault}: refused")
                    self.refused.append(fault)
                    continue
                passed_over.append(f"{source} = {short_repr(value, 60)} is not of type {_type_name(name)}: ignored")
                continue
            self.values[name] = fitted
            self.provenance[name] = provenance(source)
            return fitted
        if requested is not None or note or passed_over:
            self.provenance[name] = provenance("not reported by this target")
        elif (unset := self._unset(candidates)) is not None:
            self.provenance[name] = provenance(unset)
        return None

    def _unset(self, candidates: tuple[tuple[Any, str], ...]) -> str | None:
        """Why a value read from /server_info is None: the release does not report the field,
        or reports it unset. None when the candidates came from elsewhere."""
        sources = [source for _, source in candidates]
        if not sources or not all(source.startswith(self.server_info + " ") for source in sources):
            return None
        present = [source for source in sources if not source.endswith(" (absent)")]
        if present:
            return f"{present[0]} = None (not set)"
        return f"not reported by SGLang {self.release}" if self.release else "not reported by this target"


@lru_cache(maxsize=None)
def _adapter(name: str) -> TypeAdapter[Any] | None:
    field_info = Effective.model_fields.get(name)
    if field_info is None or field_info.annotation is None:
        return None
    return TypeAdapter(field_info.annotation)


def _fit(name: str, value: Any) -> tuple[Any, bool]:
    """(the value as the Effective field holds it, whether it fits at all)."""
    adapter = _adapter(name)
    if adapter is None:
        return value, True
    try:
        return adapter.validate_python(value), True
    except ValidationError:
        return None, False


def _type_name(name: str) -> str:
    annotation = Effective.model_fields[name].annotation
    text = getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
    return text.removesuffix(" | None")


def normalise(facts: Facts) -> Snapshot:
    with _reads.paused():
        return _normalise(facts)


def _checked_bodies(facts: Facts) -> tuple[dict[str, Any], list[str]]:
    """Every body with each number that is no figure (NaN, an infinity, beyond 2^53 either way)
    replaced by null, and the fault line of each: nothing below reads one."""
    bodies: dict[str, Any] = {}
    refused: list[str] = []
    for name in facts.endpoints:
        bodies[name], found = checked_copy(facts.body(name), facts.where(name))
        refused += found
    return bodies, refused


def _normalise(facts: Facts) -> Snapshot:
    warnings: list[str] = []
    bodies, refused_figures = _checked_bodies(facts)
    where_si = facts.where("server_info")
    info = bodies.get("server_info")
    if info is None:
        info = {}
    elif not isinstance(info, dict):  # a capture edited by hand, a proxy's answer: no configuration in it
        raise TargetError(
            f"{facts.target}: {where_si} is a JSON {type(info).__name__}, not an object: no configuration can be read from it "
            "(not an SGLang answer, or a capture edited by hand: capture the host again)"
        )
    reported_states = info.get("internal_states")
    states = [s for s in reported_states if isinstance(s, dict)] if isinstance(reported_states, list) else []
    state0: dict[str, Any] = states[0] if states else {}
    loads = bodies.get("loads") if isinstance(bodies.get("loads"), dict) else None
    model_body = bodies.get("model_info")
    rows = loads.get("loads") if loads else None
    load0: dict[str, Any] = rows[0] if isinstance(rows, list) and rows and isinstance(rows[0], dict) else {}
    host = facts.host

    # server_args: /server_info, else the start-up line from the host's log.
    args_source = where_si
    arg_fields = {k: v for k, v in info.items() if k not in SERVER_INFO_EXTRA_KEYS}
    logs = SGLangLogs(source=host.log_source or "log", lines=list(host.log_lines)) if host else SGLangLogs(source="log")
    startup = logs.startup_line if not arg_fields else None
    if startup is not None:
        args_source = f"start-up log ({logs.source})"
        arg_fields, found = checked_copy(dict(startup.fields), args_source)
        refused_figures += found
        if not startup.complete:
            warnings.append(f"start-up line is {startup.describe()}")
    server_args = ServerArgs.from_mapping(arg_fields).bind("server_args", args_source, facts.target)
    model_info = ModelInfo.from_mapping(model_body if isinstance(model_body, dict) else {}).bind(
        "model_info", facts.where("model_info"), facts.target
    )
    capacity_line = logs.capacity
    capacity = capacity_line.values if capacity_line else None
    cap_src = f"scheduler capacity line ({host.log_source})" if host and host.log_source else "scheduler capacity line"

    def arg(name: str) -> tuple[Any, str]:
        """An argument as the scheduler holds it (internal_states[0]), else top level."""
        if name in state0:
            return state0[name], f"{where_si} internal_states[0].{name}"
        if name in info:
            return info[name], f"{where_si} {name}"
        return None, f"{where_si} {name} (absent)"

    version = info.get("version") or (loads or {}).get("version")
    server_args.for_release(str(version) if version else None)  # what an unreported field means
    launch_command, launch_source = _launch(info, where_si, host)
    refused = None
    if launch_command is not None and (len(launch_command) > MAX_COMMAND or is_refused_command(launch_command)):
        # Neither read nor kept (the redactor already left only a note in place of a long /server_info one).
        length = launch_command.split()[3] if is_refused_command(launch_command) else str(len(launch_command))
        refused = f"the launch command ({launch_source}) has {length} characters, over the {MAX_COMMAND} a launch command is read up to: it is not read"
        warnings.append(refused)
        launch_command = None
    # A version the server reports is read with the nearest flag table (and says so), never refused.
    requested = parse_launch_command(launch_command, sglang_version=str(version) if version else None, strict_version=False) if launch_command else None

    def asked(name: str, fallback: str | None = None) -> tuple[Any, str] | None:
        """What was requested for a field: the launch command, else the reported argument."""
        if requested is not None:
            flag = requested.spelled.get(name)
            where = f"launch command {flag}" if flag else "the launch command leaves SGLang's default"
            full = flag and requested.flags.get(name)
            if full in requested.deprecated:
                instead = requested.deprecated[full]
                where += f" (deprecated in SGLang {requested.flag_table_version}{': use ' + instead if instead else ''})"
            return requested.get(name), f"{where}, {launch_source}"
        if fallback is not None and fallback in info:
            return info[fallback], f"{where_si} {fallback} (the argument after start-up adjustments)"
        return None

    pick = _Pick()
    pick.release, pick.server_info = (str(version) if version else None), where_si
    pick.refused_at = {fault.split(" = ", 1)[0]: fault for fault in refused_figures}
    if version:
        pick.set("sglang_version", (str(version), f"{where_si} version" if info.get("version") else "/v1/loads version"))

    # --- capacity ---------------------------------------------------------------------
    _capacity(pick, arg, asked, info, state0, load0, capacity, cap_src, where_si, bodies.get("models"))
    _input_limit(pick, info, where_si, arg)
    for name in ("tp_size", "pp_size", "dp_size", "ep_size"):
        pick.set(name, arg(name))
    pick.set("page_size", arg("page_size"), requested=asked("page_size"), note=_changed_note(arg("page_size")[0], asked("page_size")))
    role = pick.set(
        "disaggregation_mode",
        (state0.get("disaggregation_mode"), f"{where_si} internal_states[0].disaggregation_mode (the role the scheduler runs)"),
        arg("disaggregation_mode"),
    )

    # --- CUDA graphs: three eras of fields ----------------------------------------------
    _cuda_graphs(pick, arg, asked, state0, where_si, role)
    _eager_decode(pick)

    # --- kernels, communication ---------------------------------------------------------
    pick.set("attention_backend", arg("attention_backend"))
    pick.set("moe_runner_backend", arg("moe_runner_backend"))
    _shared_experts_fusion(pick, arg, asked, logs)
    mixed = asked("enable_mixed_chunk")
    pick.set("mixed_chunk", arg("enable_mixed_chunk"), requested=mixed, note=_changed_note(arg("enable_mixed_chunk")[0], mixed))
    pick.set("speculative_algorithm", arg("speculative_algorithm"))
    pick.set("speculative_num_draft_tokens", arg("speculative_num_draft_tokens"))
    pick.set(
        "mamba_cache_size",
        (state0.get("max_mamba_cache_size"), f"{where_si} internal_states[0].max_mamba_cache_size"),
        (info.get("max_mamba_cache_size"), f"{where_si} max_mamba_cache_size"),
        (logs.mamba_cache_size, "start-up log 'Mamba Cache is allocated' line"),
    )

    # --- model --------------------------------------------------------------------------
    _model(pick, model_info, facts.where("model_info"))

    # --- hardware -----------------------------------------------------------------------
    _gpus(pick, facts, loads, arg, warnings)

    # --- allreduce fusion: requested field differs by era; in effect only on SM90/SM10x --
    _allreduce_fusion(pick, arg, info, state0)

    effective = Effective(target=facts.target, **pick.values, provenance=pick.provenance).bind(
        "effective", "normalised", facts.target
    )
    refused_figures = list(dict.fromkeys(refused_figures + pick.refused))
    warnings += [f"{fault}: refused, not used" for fault in refused_figures]
    return Snapshot(
        target=facts.target,
        version=str(version) if version else None,
        server_args=server_args,
        model_info=model_info,
        effective=effective,
        server_args_source=args_source,
        launch_command=launch_command,
        launch_command_source=launch_source,
        requested=requested,
        internal_states=states,
        loads=loads,
        warnings=warnings,
        launch_command_refused=refused,
        refused=refused_figures,
    )


def _capacity(pick: _Pick, arg: Any, asked: Any, info: dict[str, Any], state0: dict[str, Any], load0: dict[str, Any],
              capacity: dict[str, Any] | None, cap_src: str, where_si: str, models: Any) -> None:
    """Running requests (per data-parallel worker and in all), the KV pool, chunked prefill and
    the context length: the scheduler's figures first, then /v1/loads, then its capacity line."""
    mrr = pick.set(
        "max_running_requests",
        (state0.get("effective_max_running_requests_per_dp"), f"{where_si} internal_states[0].effective_max_running_requests_per_dp"),
        (load0.get("max_running_requests"), "/v1/loads loads[0].max_running_requests"),
        (capacity.get("max_running_requests") if capacity else None, cap_src),
        requested=asked("max_running_requests", "max_running_requests"),
        note="per data-parallel worker",
    )
    dp_size = arg("dp_size")[0]
    if mrr is not None:
        attn_dp = bool(arg("enable_dp_attention")[0])
        workers = dp_size if isinstance(dp_size, int) and dp_size > 1 else 1
        pick.set(
            "max_running_requests_total",
            (mrr * workers, f"effective.max_running_requests × dp_size ({workers}{', attention DP' if attn_dp else ''})"),
        )
    memory_usage = state0.get("memory_usage")
    usage: dict[str, Any] = memory_usage if isinstance(memory_usage, dict) else {}
    pick.set(
        "max_total_num_tokens",
        (info.get("max_total_num_tokens"), f"{where_si} max_total_num_tokens"),
        (usage.get("token_capacity"), f"{where_si} internal_states[0].memory_usage.token_capacity"),
        (load0.get("max_total_num_tokens"), "/v1/loads loads[0].max_total_num_tokens"),
        (capacity.get("max_total_num_tokens") if capacity else None, cap_src),
    )
    pick.set(
        "chunked_prefill_size",
        arg("chunked_prefill_size"),
        (capacity.get("chunked_prefill_size") if capacity else None, cap_src),
    )
    model_len = None
    if isinstance(models, dict) and isinstance(models.get("data"), list) and models["data"]:
        first = models["data"][0]
        model_len = first.get("max_model_len") if isinstance(first, dict) else None
    pick.set(
        "context_len",
        (model_len, "/v1/models data[0].max_model_len"),
        (capacity.get("context_len") if capacity else None, cap_src),
        arg("context_length"),
    )


def _model(pick: _Pick, model_info: ModelInfo, where: str) -> None:
    """The architectures, and whether the model is multimodal or hybrid (the server's answer,
    else the known architecture lists)."""
    reported = model_info.architectures
    archs = [a for a in reported if isinstance(a, str)] if isinstance(reported, list) else []
    if archs:
        pick.set("architectures", (archs, f"{where} architectures"))
    if model_info.has_image_understanding is not None or model_info.has_audio_understanding is not None:
        pick.set(
            "is_multimodal",
            (
                bool(model_info.has_image_understanding or model_info.has_audio_understanding),
                f"{where} has_image_understanding/has_audio_understanding",
            ),
        )
    elif archs:
        pick.set("is_multimodal", (any(a in knowledge.MULTIMODAL_ARCHS for a in archs), "known multimodal architectures"))
    if archs or pick.values.get("mamba_cache_size") is not None:
        hybrid = any(a in knowledge.HYBRID_ARCHS for a in archs) or pick.values.get("mamba_cache_size") is not None
        pick.set("is_hybrid", (hybrid, "known hybrid (mamba-state) architectures and the mamba cache"))


def _launch(info: dict[str, Any], where_si: str, host: Any) -> tuple[str | None, str | None]:
    """The launch command: /server_info (0.5.20+), else what the host shows. A command given
    as an argv list is joined; anything else is not a launch command."""
    reported = info.get("launch_command")
    if isinstance(reported, list) and reported and all(isinstance(w, str) for w in reported):
        reported = shlex.join(reported)
    if isinstance(reported, str) and reported.strip():
        return reported, f"{where_si} launch_command"
    if host is not None and host.launch_command:
        return host.launch_command, host.launch_command_source
    return None, None


def _changed_note(effective: Any, asked: tuple[Any, str] | None) -> str | None:
    """A note when SGLang runs a value other than the one the launch command asked for."""
    if asked is None or asked[0] is None or effective is None or asked[0] == effective or "leaves SGLang's default" in asked[1]:
        return None
    return f"SGLang changed it at start-up from the {asked[0]!r} asked for (pytest-sglang explain names why)"


def _input_limit(pick: _Pick, info: dict[str, Any], where_si: str, arg: Any) -> None:
    """The longest prompt: what the server reports, else the TP worker's formula on the figures
    it reported (not for a diffusion LLM or decode context parallelism, which size it otherwise)."""
    context, tokens = pick.values.get("context_len"), pick.values.get("max_total_num_tokens")
    predicted: int | None = None
    if isinstance(context, int) and isinstance(tokens, int) and context > 0 and tokens > 0:
        special = [n for n in knowledge.MAX_REQ_INPUT_LEN_EXCEPTIONS if arg(n)[0] not in (None, 0, 1)]
        predicted = None if special else max(knowledge.max_req_input_len(context, tokens), 0)
    reported = info.get("max_req_input_len")
    value = pick.set(
        "max_req_input_len",
        (reported, f"{where_si} max_req_input_len"),
        (predicted, f"predicted: {knowledge.MAX_REQ_INPUT_LEN_FORMULA}, from context_len {context} and max_total_num_tokens {tokens}"),
    )
    if isinstance(value, int) and isinstance(context, int) and isinstance(tokens, int) and tokens - 1 < context - 1 and value < context - 6:
        prov = pick.provenance["max_req_input_len"]
        why = f"below context_len {context}: the KV pool ({tokens} tokens) caps it, and a longer prompt is refused"
        pick.provenance["max_req_input_len"] = prov.model_copy(update={"note": "; ".join(filter(None, [prov.note, why]))})


def _shared_experts_fusion(pick: _Pick, arg: Any, asked: Any, logs: SGLangLogs) -> None:
    """Off when the flag is set in the scheduler's copy of the arguments: post-init sets it for
    some MoE runners and all-to-all backends, and the model loader writes it back when the model
    cannot fuse (and logs why). It matters only for a model with shared experts."""
    disabled, source = arg("disable_shared_experts_fusion")
    wanted = asked("disable_shared_experts_fusion")
    requested = (not wanted[0], wanted[1]) if wanted is not None and isinstance(wanted[0], bool) else None
    off_line = logs.shared_experts_fusion_off
    pick.set(
        "shared_experts_fusion",
        (False if off_line else None, f"start-up log: {_tail(off_line or '', 160)!r}"),
        (not disabled if isinstance(disabled, bool) else None, f"{source} = {disabled!r}"),
        requested=requested,
        note="applies to models with shared experts (DeepSeek V2/V3, GLM-4.5, Qwen MoE and others)",
    )


def _tail(text: str, limit: int) -> str:
    """The end of a log line, where SGLang says what it did (the reason comes first)."""
    return text if len(text) <= limit else "…" + text[-(limit - 1):]


def _eager_decode(pick: _Pick) -> None:
    """Whether some decode batches the server admits run without a CUDA graph."""
    on, max_bs, mrr = (pick.values.get(n) for n in ("decode_cuda_graph", "decode_cuda_graph_max_bs", "max_running_requests"))
    if on is False:
        pick.set("decode_eager_batches", (True, "effective.decode_cuda_graph is False: every decode batch runs without a graph"))
    elif on and isinstance(max_bs, int) and isinstance(mrr, int):
        above = mrr > max_bs
        how = f"batches of {max_bs + 1}-{mrr} requests run without a graph" if above else "every batch up to it has a graph"
        pick.set("decode_eager_batches", (above, f"effective.max_running_requests {mrr} against decode_cuda_graph_max_bs {max_bs}: {how}"))


def _role_note(role: Any) -> str | None:
    return f"on a PD {role} server (SGLang sets the CUDA graphs per role)" if role in ("prefill", "decode") else None


def _cuda_graphs(pick: _Pick, arg: Any, asked: Any, state0: dict[str, Any], where_si: str, role: Any) -> None:
    config, config_src = arg("cuda_graph_config")
    disabled_all, disabled_src = arg("disable_cuda_graph")
    role_note = _role_note(role)
    # 0.5.23 with disaggregation: the decode batch sizes the worker captured, for its role.
    captured = state0.get("decode_cuda_graph_bs")
    if isinstance(captured, list) and all(isinstance(b, int) and not isinstance(b, bool) for b in captured):
        where = f"{where_si} internal_states[0].decode_cuda_graph_bs (the batch sizes captured)"
        pick.set("decode_cuda_graph", (bool(captured), f"{where} = {short_repr(captured, 60)}"), note=role_note)
        if captured:
            pick.set("decode_cuda_graph_max_bs", (max(captured), f"max({where})"))
        else:  # a CPU server, or a prefill server before a role switch: no batch has a graph
            pick.provenance["decode_cuda_graph_max_bs"] = Provenance(source=f"{where} = []: no decode batch size is captured")
    if isinstance(config, dict):  # 0.5.14+: CudaGraphConfig(decode=PhaseConfig, prefill=PhaseConfig)
        decode: dict[str, Any] = config["decode"] if isinstance(config.get("decode"), dict) else {}
        prefill: dict[str, Any] = config["prefill"] if isinstance(config.get("prefill"), dict) else {}
        d_backend, p_backend = decode.get("backend"), prefill.get("backend")
        if d_backend is not None and "decode_cuda_graph" not in pick.values:
            pick.set("decode_cuda_graph", (d_backend != "disabled", f"{config_src}.decode.backend = {d_backend!r}"), note=role_note)
        if "decode_cuda_graph_max_bs" not in pick.provenance:
            pick.set("decode_cuda_graph_max_bs", (decode.get("max_bs"), f"{config_src}.decode.max_bs"))
        if p_backend is not None:
            pick.set(
                "prefill_cuda_graph",
                (p_backend != "disabled", f"{config_src}.prefill.backend = {p_backend!r}"),
                requested=asked("cuda_graph_backend_prefill"),
                note=role_note,
            )
            pick.set("prefill_cuda_graph_backend", (p_backend, f"{config_src}.prefill.backend"))
        return
    if disabled_all is not None:
        pick.set("decode_cuda_graph", (not disabled_all, f"{disabled_src} = {disabled_all!r}"), note=role_note)
    max_bs, max_bs_src = arg("cuda_graph_max_bs")
    bs, bs_src = arg("cuda_graph_bs")
    pick.set(
        "decode_cuda_graph_max_bs",
        (max_bs, max_bs_src),
        (max(bs) if isinstance(bs, list) and bs and all(isinstance(b, int) for b in bs) else None, f"max({bs_src})"),
    )
    disable_pcg, disable_src = arg("disable_piecewise_cuda_graph")
    enable_pcg, enable_src = arg("enable_piecewise_cuda_graph")
    if disable_pcg is not None:  # 0.5.10-0.5.13: piecewise on by default
        on = not disable_pcg
        pick.set("prefill_cuda_graph", (on, f"{disable_src} = {disable_pcg!r}"), requested=asked("disable_piecewise_cuda_graph"))
        pick.set("prefill_cuda_graph_backend", ("piecewise" if on else "disabled", f"{disable_src} = {disable_pcg!r}"))
    elif enable_pcg is not None:  # <= 0.5.9: piecewise opt-in
        on = bool(enable_pcg)
        pick.set("prefill_cuda_graph", (on, f"{enable_src} = {enable_pcg!r}"), requested=asked("enable_piecewise_cuda_graph"))
        pick.set("prefill_cuda_graph_backend", ("piecewise" if on else "disabled", f"{enable_src} = {enable_pcg!r}"))


def _allreduce_fusion(pick: _Pick, arg: Any, info: dict[str, Any], state0: dict[str, Any]) -> None:
    backend, backend_src = arg("flashinfer_allreduce_fusion_backend")
    if "flashinfer_allreduce_fusion_backend" in info or "flashinfer_allreduce_fusion_backend" in state0:
        requested = backend is not None  # 0.5.14+: the old bool is always reset to False
        pick.set("flashinfer_allreduce_fusion_requested", (requested, f"{backend_src} = {backend!r}"))
    else:
        flag, flag_src = arg("enable_flashinfer_allreduce_fusion")
        if flag is None:
            return
        requested = bool(flag)
        pick.set("flashinfer_allreduce_fusion_requested", (requested, f"{flag_src} = {flag!r}"))
    if not requested:
        pick.set("flashinfer_allreduce_fusion", (False, pick.provenance["flashinfer_allreduce_fusion_requested"].source + " (not requested)"))
        return
    sm = pick.values.get("sm")
    tp = pick.values.get("tp_size") or 1
    attn_dp = bool(arg("enable_dp_attention")[0])
    if sm is None:
        pick.set(
            "flashinfer_allreduce_fusion",
            note=f"requested, but the GPU architecture is unknown; give {setting('sm')} to decide",
        )
        return
    runs = knowledge.flashinfer_allreduce_fusion_runs_on(sm) and tp > 1 and not attn_dp
    why = f"requested; SM{sm}, tp {tp}{', attention DP' if attn_dp else ''}: {knowledge.FLASHINFER_ALLREDUCE_FUSION_GATE}"
    pick.set("flashinfer_allreduce_fusion", (runs, why))


def _gpus(pick: _Pick, facts: Facts, loads: dict[str, Any] | None, arg: Any, warnings: list[str]) -> None:
    host = facts.host
    override = facts.overrides.get("sm")
    if host and host.gpus:
        used = [g for g in host.gpus if g.index in host.gpus_in_use]
        first = (used or host.gpus)[0]
        src = host.gpu_source or "host"
        pick.set("gpu_name", (first.name, f"{src} GPU {first.index} name"))
        if used:
            pick.set("gpu_count", (len(used), f"{src}: the SGLang process uses GPU {', '.join(str(g.index) for g in used)}"))
        elif host.cuda_visible_devices:
            visible = [d for d in host.cuda_visible_devices.split(",") if d.strip()]
            pick.set("gpu_count", (len(visible), f"CUDA_VISIBLE_DEVICES={host.cuda_visible_devices} of the SGLang process"))
        if first.compute_capability and _sm_or_none(first.compute_capability) is not None:
            pick.set("sm", (_sm_or_none(first.compute_capability), f"{src} compute_cap {first.compute_capability}"))
        else:
            pick.set("sm", (sm_from_name(first.name), f"GPU name {first.name!r} ({src}) in the name table"))
    elif loads and loads.get("accelerator"):
        name = str(loads["accelerator"])
        pick.set("gpu_name", (name, "/v1/loads accelerator"))
        pick.set("sm", (sm_from_name(name), f"/v1/loads accelerator {name!r} in the name table"))
    if override is not None:
        given = _sm_or_none(override)
        if given is not None:
            pick.values.pop("sm", None)
            pick.set("sm", (given, SM_GIVEN))
        else:  # a capture edited by hand ("sm": "abc"): what the GPU says is kept
            warnings.append(f"the {setting('sm')} override {short_repr(override, 40)} is not a compute capability (write 120, 'sm120' or '12.0'): ignored")
    if "gpu_count" not in pick.values:
        tp, pp, dp = (arg(n)[0] for n in ("tp_size", "pp_size", "dp_size"))
        if not isinstance(tp, int) and host and host.gpus:
            pick.set("gpu_count", (len(host.gpus), f"{host.gpu_source}: GPUs on the host"))
        if isinstance(tp, int):
            pp = pp if isinstance(pp, int) else 1
            dp = dp if isinstance(dp, int) and not arg("enable_dp_attention")[0] else 1
            device = arg("device")[0]
            if device in (None, "cuda"):
                pick.set("gpu_count", (tp * pp * dp, "tp_size × pp_size × dp_size from /server_info"))


def _sm_or_none(value: Any) -> int | None:
    """A compute capability as an SM number (``'9.0'``, ``90``, ``'sm_120'``), or None for
    anything else (``'abc'``, ``True``, a number of 400 digits)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    try:
        return sm_from_capability(value)
    except (SpecError, ValueError):
        return None
