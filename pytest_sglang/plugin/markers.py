"""Requirement markers, evaluated on a target: each returns None (met) or a skip reason
that names the host and the value found."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from pytest_sglang.base import reads as _reads
from pytest_sglang.base.errors import SpecError
from pytest_sglang.model.gpu import amd_gpu, capability_string, parse_sm_spec
from pytest_sglang.model.versions import parse_version, version_spec

if TYPE_CHECKING:
    from pytest_sglang.target.target import Target



@dataclass(frozen=True)
class Marker:
    name: str
    signature: str
    help: str
    check: Callable[[Target, tuple[Any, ...]], str | None]
    validate: Callable[[tuple[Any, ...]], None]


def _sm_check(target: Target, args: tuple[Any, ...]) -> str | None:
    spec = parse_sm_spec(*args)
    eff = target.effective
    amd = amd_gpu(eff.gpu_name) if eff.sm is None else None
    if amd is not None:  # an NVIDIA compute capability never matches an AMD GPU
        target_words = f"{amd.name}, ROCm" + (f", {amd.gfx}" if amd.gfx else "")
        return f"requires_sm({spec.text}): {target.name} runs on an AMD GPU ({target_words}; {eff.source_of('gpu_name')}), which has no NVIDIA compute capability"
    if eff.sm is None:
        return f"requires_sm({spec.text}): the GPU architecture of {target.name} is unknown: {target.gpu_unknown_reason()}"
    if spec.matches(eff.sm):
        return None
    return f"requires_sm({spec.text}): {target.name} has SM{eff.sm} ({capability_string(eff.sm)}, {eff.source_of('sm')})"


def _gpus_check(target: Target, args: tuple[Any, ...]) -> str | None:
    need = _gpus_arg(args)
    eff = target.effective
    if eff.gpu_count is None:
        return f"requires_gpus({need}): the number of GPUs {target.name} uses is unknown: {target.gpu_unknown_reason()}"
    if eff.gpu_count >= need:
        return None
    return f"requires_gpus({need}): {target.name} uses {eff.gpu_count} GPU(s) ({eff.source_of('gpu_count')})"


def call_text(name: str, args: tuple[Any, ...]) -> str:
    """A marker as it was written: ``requires_gpus('four')``."""
    return f"{name}({', '.join(repr(a) for a in args)})"


def _gpus_arg(args: tuple[Any, ...]) -> int:
    if len(args) != 1 or isinstance(args[0], bool) or not isinstance(args[0], int) or args[0] < 1:
        raise SpecError(f"{call_text('requires_gpus', args)}: give one whole number of GPUs (at least 1), e.g. requires_gpus(4)")
    return int(args[0])


def _sglang_check(target: Target, args: tuple[Any, ...]) -> str | None:
    spec = _version_arg(args)
    version = parse_version(target.version)
    if version is None:
        return f"requires_sglang({spec}): the SGLang version of {target.name} is unknown ({target.version!r})"
    if version in spec:
        return None
    return f"requires_sglang({spec}): {target.name} runs SGLang {target.version}"


def _version_arg(args: tuple[Any, ...]) -> Any:
    if len(args) != 1 or not isinstance(args[0], str) or not args[0].strip():
        raise SpecError(f"{call_text('requires_sglang', args)}: give one version range, e.g. requires_sglang('>=0.5.10')")
    return version_spec(args[0])


def _arch_check(target: Target, args: tuple[Any, ...]) -> str | None:
    _arch_arg(args)
    archs = target.effective.architectures
    if any(a in archs for a in args):
        return None
    wanted = " or ".join(str(a) for a in args)
    found = ", ".join(archs) if archs else "none reported"
    return f"requires_arch({wanted}): {target.name} serves {found}"


def _arch_arg(args: tuple[Any, ...]) -> None:
    if not args or not all(isinstance(a, str) and a for a in args):
        raise SpecError(f"{call_text('requires_arch', args)}: give architecture names, e.g. requires_arch('Qwen3_5MoeForConditionalGeneration')")


MARKERS: dict[str, Marker] = {
    m.name: m
    for m in (
        Marker("requires_sm", "requires_sm(120) or requires_sm('>=90')", "run only on targets whose GPU compute capability matches", _sm_check, lambda a: (parse_sm_spec(*a), None)[1]),
        Marker("requires_gpus", "requires_gpus(n)", "run only on targets using at least n GPUs", _gpus_check, lambda a: (_gpus_arg(a), None)[1]),
        Marker("requires_sglang", "requires_sglang('>=0.5.10')", "run only on targets whose SGLang version is in the range", _sglang_check, lambda a: (_version_arg(a), None)[1]),
        Marker("requires_arch", "requires_arch('Qwen3_5MoeForConditionalGeneration', ...)", "run only on targets serving one of these model architectures", _arch_check, _arch_arg),
    )
}


def unmet(target: Target, marks: list[tuple[str, tuple[Any, ...]]]) -> str | None:
    """The first unmet requirement's skip reason, or None when all are met."""
    with _reads.paused():
        for name, args in marks:
            reason = MARKERS[name].check(target, args)
            if reason:
                return reason
    return None
