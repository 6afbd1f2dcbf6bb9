"""The typed model every target normalises into.

``ServerArgs`` is what SGLang reports as its arguments (every field, unknown ones kept);
``Effective`` is what is in force, each value with where it came from.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, Iterator

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, ValidationError
from typing_extensions import Self

from pytest_sglang.base import reads as _reads
from pytest_sglang.model.numbers import Count, FigureRange

log = logging.getLogger(__name__)


_UNRECORDED = frozenset({"target", "provenance"})


class _Recorded(BaseModel):
    """Reads of declared fields during a test are recorded, so a failing test can show
    every SGLang value it looked at and where that value came from."""

    model_config = ConfigDict(extra="allow", frozen=True, protected_namespaces=())

    # What this object is called in messages ("server_args") and where its values came from.
    _label: str = PrivateAttr(default="")
    _origin: str = PrivateAttr(default="")
    _target: str = PrivateAttr(default="")

    def bind(self, label: str, origin: str, target: str) -> Any:
        self._label, self._origin, self._target = label, origin, target
        return self

    @classmethod
    def from_mapping(cls, data: Any) -> Self:
        """Validate leniently: a field whose type changed in some SGLang version (or that a
        damaged source garbled) is kept as reported, under its own name, instead of failing
        the whole model; the attribute shows that value too, never a silent default."""
        if not isinstance(data, dict):
            data = {}
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            drifted = {str(err["loc"][0]) for err in exc.errors() if err["loc"]}
            clean = {k: v for k, v in data.items() if k not in drifted}
            model = cls.model_validate(clean)
            for name in sorted(drifted):
                log.debug("%s.%s has an unexpected type; kept as reported", cls.__name__, name)
                object.__setattr__(model, "__pydantic_extra__", {**(model.__pydantic_extra__ or {}), f"{name}": data[name]})
                if name in cls.model_fields:
                    model.__dict__[name] = data[name]
            return model

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        if value is None and name[:1] != "_" and name in type(self).model_fields:
            __tracebackhide__ = True  # the test's own line is the one pytest shows
            self._unreported(name)
        if _reads.active is not None and not name.startswith("_") and name in type(self).model_fields and name not in _UNRECORDED:
            _reads.record(self, name, value)
        return value

    def _unreported(self, name: str) -> None:
        """A declared field the source did not report: raise when the release lacks it."""


class FieldNotInRelease(AttributeError, KeyError):
    """A test read a field its host's SGLang release does not have. The message is one line:
    the field, the release, the releases that have it, and its name there if it was renamed.
    An AttributeError (``getattr(server_args, name, None)`` and ``hasattr`` keep working) and
    a KeyError (``server_args[name]``)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class PhaseConfig(BaseModel):
    """One phase of ``cuda_graph_config`` (0.5.14+): decode or prefill."""

    model_config = ConfigDict(extra="allow", frozen=True)

    backend: str | None = None
    max_bs: int | None = None
    bs: list[int] | None = None


class CudaGraphConfig(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    decode: PhaseConfig | None = None
    prefill: PhaseConfig | None = None


class ServerArgs(_Recorded):
    """Every field SGLang reports. Typed fields for what suites assert on most; every other
    field (including ones a newer SGLang adds) is kept and reachable as an attribute,
    with ``server_args["name"]`` or ``server_args.get("name")``."""

    # model
    model_path: str | None = None
    served_model_name: str | None = None
    tokenizer_path: str | None = None
    dtype: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    context_length: int | None = None
    trust_remote_code: bool | None = None
    enable_multimodal: bool | None = None
    device: str | None = None
    # parallelism
    tp_size: int | None = None
    pp_size: int | None = None
    dp_size: int | None = None
    ep_size: int | None = None
    enable_dp_attention: bool | None = None
    nnodes: int | None = None
    # capacity and scheduling
    max_running_requests: int | None = None
    max_total_tokens: int | None = None
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int | None = None
    mem_fraction_static: float | None = None
    page_size: int | None = None
    schedule_policy: str | None = None
    disable_radix_cache: bool | None = None
    disable_overlap_schedule: bool | None = None
    # CUDA graphs, every era
    disable_cuda_graph: bool | None = None
    cuda_graph_max_bs: int | None = None
    cuda_graph_bs: list[int] | None = None
    enable_piecewise_cuda_graph: bool | None = None  # <= 0.5.9
    disable_piecewise_cuda_graph: bool | None = None  # 0.5.10-0.5.13
    enforce_piecewise_cuda_graph: bool | None = None
    cuda_graph_config: CudaGraphConfig | None = None  # 0.5.14+
    # kernels and backends
    attention_backend: str | None = None
    prefill_attention_backend: str | None = None
    decode_attention_backend: str | None = None
    sampling_backend: str | None = None
    moe_runner_backend: str | None = None
    moe_a2a_backend: str | None = None
    enable_flashinfer_allreduce_fusion: bool | None = None  # <= 0.5.13 meaningful
    flashinfer_allreduce_fusion_backend: str | None = None  # 0.5.14+
    enable_fused_moe_sum_all_reduce: bool | None = None
    # speculative decoding
    speculative_algorithm: str | None = None
    speculative_draft_model_path: str | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None
    # hybrid (mamba-like) models
    mamba_scheduler_strategy: str | None = None
    max_mamba_cache_size: int | None = None
    # serving
    host: str | None = None
    port: int | None = None
    enable_metrics: bool | None = None
    api_key: str | None = None
    admin_api_key: str | None = None
    random_seed: int | None = None

    # The host's SGLang release, which says what a field the host did not report means.
    _release: str | None = PrivateAttr(default=None)

    def for_release(self, version: str | None) -> Self:
        self._release = version
        return self

    def _missing(self, name: str, *, declared: bool = False) -> str | None:
        """The one-line error for reading a field the host did not report, or None when its
        release has the field (the value is then None: it was not reported), or when a
        declared field's release is unknown (None, as it may well have it)."""
        if not self._label:  # not read from a host (a start-up line parsed on its own)
            return None
        from pytest_sglang.model.knowledge.fields import has_field, missing_field

        has = has_field(self._release, name)
        if has or (has is None and declared):
            return None
        return missing_field(self._label, self._release, name)

    def _unreported(self, name: str) -> None:
        if name not in self.model_fields_set:
            problem = self._missing(name, declared=True)
            if problem:
                __tracebackhide__ = True
                raise FieldNotInRelease(problem)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)  # type: ignore[misc]
        except AttributeError:
            problem = None if name.startswith("_") else self._missing(name)
            if problem is None:
                if name.startswith("_") or not self._label:
                    raise
                return None  # the release has the field; the host did not report it
        __tracebackhide__ = True
        raise FieldNotInRelease(problem)

    # Mapping-like access to every field, typed or not.
    def as_dict(self) -> dict[str, Any]:
        out = self.model_dump(exclude_unset=True)
        out.update(self.__pydantic_extra__ or {})
        return out

    def get(self, name: str, default: Any = None) -> Any:
        extra = self.__pydantic_extra__ or {}
        if name in extra:
            return extra[name]
        if name in type(self).model_fields and name in self.model_fields_set:
            return getattr(self, name)
        return default

    def __getitem__(self, name: str) -> Any:
        marker = object()
        value = self.get(name, marker)
        if value is marker:
            problem = self._missing(name)
            raise FieldNotInRelease(problem) if problem else KeyError(f"server_args has no field {name!r}: the host did not report it")
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self.model_fields_set or name in (self.__pydantic_extra__ or {}))

    def keys(self) -> Iterator[str]:
        return iter(self.as_dict())

    def __len__(self) -> int:
        return len(self.model_fields_set)  # pydantic counts extra fields as set fields too

    def __repr__(self) -> str:
        return f"ServerArgs(<{len(self)} fields>, model_path={self.model_path!r}, tp_size={self.tp_size})"


class ModelInfo(_Recorded):
    """``/model_info`` (``/get_model_info`` before 0.5.9)."""

    model_path: str | None = None
    served_model_name: str | None = None
    tokenizer_path: str | None = None
    is_generation: bool | None = None
    model_type: str | None = None
    architectures: list[str] = Field(default_factory=list)
    has_image_understanding: bool | None = None
    has_audio_understanding: bool | None = None
    weight_version: str | None = None

    @property
    def architecture(self) -> str | None:
        archs = self.architectures
        return archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None

    def __repr__(self) -> str:
        return f"ModelInfo(model_path={self.model_path!r}, architectures={self.architectures!r})"


class Provenance(BaseModel):
    """Where one effective value came from, and what was asked for."""

    model_config = ConfigDict(frozen=True)

    source: str
    requested: Any = None
    requested_source: str | None = None
    note: str | None = None

    def describe(self) -> str:
        parts = [f"from {self.source}"]
        if self.requested_source is not None:
            parts.append(f"requested {self.requested!r} ({self.requested_source})")
        if self.note:
            parts.append(self.note)
        return "; ".join(parts)


UNKNOWN = "unknown"
# SGLang reports chunked_prefill_size -1 when chunked prefill is off.
ChunkSize = Annotated[int, BeforeValidator(FigureRange(minimum=-1, whole=True))]


class Effective(_Recorded):
    """The values in force on the target, normalised across SGLang versions.

    Each value's origin is in ``effective.provenance[name]`` (see :meth:`source_of`).
    """

    target: str = ""
    sglang_version: str | None = None
    # capacity (a count from 0 to 2^53: a server answering NaN, -1 or 1e308 here is refused)
    max_running_requests: Count | None = None
    max_running_requests_total: Count | None = None
    max_total_num_tokens: Count | None = None
    max_req_input_len: Count | None = None
    chunked_prefill_size: ChunkSize | None = None
    context_len: Count | None = None
    # parallelism
    tp_size: Count | None = None
    pp_size: Count | None = None
    dp_size: Count | None = None
    ep_size: Count | None = None
    # memory layout
    page_size: Count | None = None
    # PD disaggregation: the role of this server ("null" when it is not in a PD pair)
    disaggregation_mode: str | None = None
    # CUDA graphs
    decode_cuda_graph: bool | None = None
    decode_cuda_graph_max_bs: Count | None = None
    # Some decode batches the server admits run without a graph: the decode graph is off, or
    # max_running_requests is above decode_cuda_graph_max_bs.
    decode_eager_batches: bool | None = None
    prefill_cuda_graph: bool | None = None
    prefill_cuda_graph_backend: str | None = None
    # communication and kernels
    flashinfer_allreduce_fusion_requested: bool | None = None
    flashinfer_allreduce_fusion: bool | None = None
    attention_backend: str | None = None
    moe_runner_backend: str | None = None
    shared_experts_fusion: bool | None = None
    # scheduling
    mixed_chunk: bool | None = None
    # speculative decoding
    speculative_algorithm: str | None = None
    speculative_num_draft_tokens: Count | None = None
    # hybrid models
    mamba_cache_size: Count | None = None
    # model
    architectures: list[str] = Field(default_factory=list)
    is_multimodal: bool | None = None
    is_hybrid: bool | None = None
    # hardware
    gpu_name: str | None = None
    gpu_count: Count | None = None
    sm: Count | None = None

    provenance: dict[str, Provenance] = Field(default_factory=dict)

    def source_of(self, name: str) -> str:
        prov = self.provenance.get(name)
        return prov.source if prov else UNKNOWN

    def requested(self, name: str) -> Any:
        prov = self.provenance.get(name)
        return prov.requested if prov else None

    def describe(self, name: str) -> str:
        """``effective.NAME = VALUE (where it came from; what was requested; notes)``; for a
        value the target could not tell, what to give so it can."""
        value = getattr(self, name)
        prov = self.provenance.get(name)
        tail = prov.describe() if prov else "source unknown"
        hint = _UNKNOWN_HINTS.get(name) if value is None else None
        if hint == _SM_HINT and (SM_GIVEN in tail or "`sm`" in tail or (name != "sm" and self.sm is not None)):
            hint = None  # already said, or the SM is known and not what is missing
        if hint:
            tail = f"{tail}; {hint}"
        return f"effective.{name} = {value!r} ({tail})"

    def values(self) -> dict[str, Any]:
        return self.model_dump(exclude={"provenance", "target"})

    def __repr__(self) -> str:
        return f"<effective config of {self.target or 'target'}>"

    __str__ = __repr__


# What to give when a value is unknown because the GPU is: HTTP names it only from SGLang 0.5.18
# (/v1/loads accelerator), and never its compute capability for a GPU the name table lacks.
# The hints name settings (base/settings.py): each front end gives them as its own options.
_SM_HINT = "give `sm` (the compute capability, e.g. 120)"
_GPU_HINT = "give host access (`ssh` USER@HOST, or local) to read the GPUs with nvidia-smi"
# Where a compute capability the user gave is said to come from.
SM_GIVEN = "the sm setting"
_UNKNOWN_HINTS = {
    "sm": _SM_HINT,
    "flashinfer_allreduce_fusion": _SM_HINT,  # whether it runs depends on the SM
    "gpu_name": _GPU_HINT,
    "gpu_count": _GPU_HINT,
}
