"""GPU identity: marketing names to platform, compute capability, gfx target and memory, and
compute-capability specs.

SGLang reports no compute capability over HTTP; ``/v1/loads.accelerator`` (0.5.18+) has the
name from ``torch.cuda.get_device_name()``. These tables map those names to what SGLang reads:
the platform its build runs on (``cuda`` for NVIDIA, ``hip`` for AMD ROCm, ``npu``, ``xpu``,
``cpu``), the SM number (NVIDIA), the gfx target (AMD) and the memory the vendor's tool reports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_sglang.base.errors import SpecError

# Most specific patterns first: "rtx pro 6000 blackwell" must win over "rtx 6000".
_NAME_TO_SM: list[tuple[str, int]] = [
    (r"gb10\b|dgx spark", 121),
    (r"rtx pro \d+ blackwell|rtx pro 6000", 120),
    (r"rtx 50\d0", 120),
    (r"gb300|b300", 103),
    (r"gb200|b200|b100", 100),
    (r"gh200|h200|h100|h800|h20\b", 90),
    (r"rtx 6000 ada|rtx 4000 ada|rtx 40\d0|l40s?\b|l4\b|l20\b", 89),
    (r"rtx a6000|rtx a5000|rtx a4000|a40\b|a10g?\b|rtx 30\d0|a16\b|a2\b", 86),
    (r"a100|a800|a30\b", 80),
    (r"t4\b|rtx 20\d0|quadro rtx", 75),
    (r"v100", 70),
]
_COMPILED = [(re.compile(p), sm) for p, sm in _NAME_TO_SM]


def sm_from_name(name: str | None) -> int | None:
    """``'NVIDIA RTX PRO 6000 Blackwell Server Edition'`` -> 120; unknown or non-NVIDIA -> None."""
    if not name:
        return None
    key = " ".join(name.lower().replace("_", " ").replace("-", " ").split())
    if any(vendor in key for vendor in ("amd", "instinct", "radeon", " mi3", "mi2", "gaudi", "intel")):
        return None
    if any(pattern.search(_key(name)) for pattern, platform in _VENDOR_PLATFORM if platform != "cuda"):
        return None  # an Ascend "Atlas 800I A2" is no NVIDIA A2
    for pattern, sm in _COMPILED:
        if pattern.search(key):
            return sm
    return None


# What nvidia-smi reports as memory.total (MiB) for a GPU name that has one memory size; SGLang's
# tiers compare that figure (e.g. ``gpu_mem < 96 * 1024``), so the nominal "96 GB" would be wrong.
# A name sold with several sizes (A100, V100, GH200, H20) implies none unless the name says it.
_NAME_TO_MEMORY_MIB: list[tuple[str, int]] = [
    (r"rtx pro 6000", 97887),
    (r"\bb200\b", 183359),
    (r"h200", 143771),
    (r"h100 nvl", 95830),
    (r"h100|h800", 81559),
    (r"a100.*80\s?gb|a800.*80\s?gb", 81920),
    (r"a100.*40\s?gb", 40960),
    (r"rtx 6000 ada|rtx a6000", 49140),
    (r"\ba40\b|\bl40s?\b|\bl20\b", 46068),
    (r"rtx 5090", 32607),
    (r"rtx 4090", 24564),
    (r"\bl4\b", 23034),
    (r"\ba10g?\b", 23028),
    (r"\bt4\b", 15360),
]
_MEMORY_COMPILED = [(re.compile(p), mib) for p, mib in _NAME_TO_MEMORY_MIB]


def memory_mib_from_name(name: str | None) -> int | None:
    """``'H100'`` -> 81559 (MiB, as nvidia-smi reports it); ``'MI300X'`` -> 196592 (as rocminfo
    reports it); a name with several memory sizes (``'A100'``), one whose figure has no public
    record, or an unknown one -> None."""
    amd = amd_gpu(name)
    if amd is not None:
        return amd.memory_mib
    if not name or sm_from_name(name) is None:
        return None
    key = _key(name)
    for pattern, mib in _MEMORY_COMPILED:
        if pattern.search(key):
            return mib
    return None


def _key(name: str) -> str:
    return " ".join(name.lower().replace("_", " ").replace("-", " ").replace("/", " ").split())


# ---- AMD Instinct GPUs (ROCm, SGLang's HIP build) ---------------------------------------------
#
# gfx target (the LLVM target name) and nominal memory: AMD's GPU specifications table,
# https://rocm.docs.amd.com/en/latest/reference/gpu-specs.html (MI355X, MI350X: gfx950, 288 GiB;
# MI325X: gfx942, 256 GiB; MI300X: gfx942, 192 GiB; MI300A: gfx942, 128 GiB shared with the CPU;
# MI250X, MI250: gfx90a, 128 GiB in two GCDs; MI210: gfx90a, 64 GiB).
# The capability torch reports on ROCm (``get_device_capability``) is the gfx version: gfx90a
# 9.0, gfx942 9.4, gfx950 9.5 (https://github.com/vllm-project/vllm/issues/40620; hipBLASLt prints
# "AMD Instinct MI300X gfx942 ... compute capability 9.4", https://github.com/ROCm/hipBLASLt/pull/1539).
# Memory is what SGLang reads on ROCm: ``rocminfo``'s first memory pool of the GPU agent, in KiB,
# divided by 1024 (utils/common.py get_amdgpu_memory_capacity). Only figures seen in a public
# rocminfo or rocm-smi listing are kept:
# - MI300X: Pool 1 201310208 KB = 196592 MiB (https://github.com/ROCm/rocm-examples/issues/187;
#   rocm-smi "VRAM Total Memory (B): 206141652992", https://github.com/ROCm/ROCm/issues/4750);
# - MI250X/MI250 (each GCD is one GPU to ROCm, named "AMD Instinct MI250X/MI250"): Pool 1
#   67092480 KB = 65520 MiB (https://github.com/ROCm/TheRock/issues/1395, gfx90a; the name as
#   rocminfo prints it, https://github.com/ROCm/aiter/issues/179);
# - MI210: 67092480 KB = 65520 MiB (https://github.com/ROCm/ROCm/issues/3460).
# MI308X (a CDNA3 part AMD publishes no specification table for), MI325X, MI350X and MI355X have
# no public listing of that figure, and MI300A's GPU pool is the memory the OS shares with it:
# their memory is not implied (give it, e.g. --gpu-memory 288GiB).


@dataclass(frozen=True)
class AmdGpu:
    """One AMD Instinct GPU as ROCm reports it."""

    name: str  # as torch.cuda.get_device_name() and rocminfo's Marketing Name report it
    gfx: str | None  # the LLVM target name (torch's gcnArchName starts with it)
    memory_mib: int | None  # rocminfo Pool 1 size / 1024, what SGLang reads; None: not public

    @property
    def capability(self) -> tuple[int, int] | None:
        """What ``torch.cuda.get_device_capability()`` reports on ROCm: gfx942 -> (9, 4)."""
        return _gfx_capability(self.gfx) if self.gfx else None


def _gfx_capability(gfx: str) -> tuple[int, int]:
    """``gfx942`` -> (9, 4), ``gfx90a`` -> (9, 0), ``gfx950`` -> (9, 5): HIP's major is the gfx
    number's leading digits, its minor the next digit (the stepping letter or digit is dropped)."""
    digits = gfx.removeprefix("gfx")
    return int(digits[:-2]), int(digits[-2])


# Most specific first: "mi300a" and "mi308x" before "mi300x", "mi350x" before "mi355x".
AMD_GPUS: list[tuple[str, AmdGpu]] = [
    (r"\bmi355x?\b", AmdGpu("AMD Instinct MI355X", "gfx950", None)),
    (r"\bmi350x?\b", AmdGpu("AMD Instinct MI350X", "gfx950", None)),
    (r"\bmi325x?\b", AmdGpu("AMD Instinct MI325X", "gfx942", None)),
    (r"\bmi308x?\b", AmdGpu("AMD Instinct MI308X", None, None)),
    (r"\bmi300a\b", AmdGpu("AMD Instinct MI300A", "gfx942", None)),
    (r"\bmi300x?\b", AmdGpu("AMD Instinct MI300X", "gfx942", 196592)),
    (r"\bmi250x?\b", AmdGpu("AMD Instinct MI250X/MI250", "gfx90a", 65520)),
    (r"\bmi210\b", AmdGpu("AMD Instinct MI210", "gfx90a", 65520)),
]
_AMD_COMPILED = [(re.compile(p), gpu) for p, gpu in AMD_GPUS]


def amd_gpu(name: str | None) -> AmdGpu | None:
    """``'MI300X'``, ``'AMD Instinct MI300X'``, ``'AMD Instinct MI300X VF'`` -> the MI300X entry;
    any other name -> None."""
    if not name:
        return None
    key = _key(name)
    for pattern, gpu in _AMD_COMPILED:
        if pattern.search(key):
            return gpu
    return None


# ---- platforms ---------------------------------------------------------------------------------

# What SGLang's build runs on, in the words explain prints.
PLATFORMS: dict[str, str] = {
    "cuda": "an NVIDIA GPU (CUDA)",
    "hip": "an AMD GPU (ROCm, HIP)",
    "npu": "an Ascend NPU",
    "xpu": "an Intel GPU (XPU)",
    "cpu": "the CPU",
    "hpu": "an Intel Gaudi (HPU)",
    "musa": "a Moore Threads GPU (MUSA)",
    "mps": "an Apple GPU (MPS)",
}

# Vendor words in a device name, for names the catalog does not hold.
_VENDOR_PLATFORM: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bnvidia\b|\bgeforce\b|\btesla\b|\bquadro\b"), "cuda"),
    (re.compile(r"\bamd\b|\binstinct\b|\bradeon\b|\bmi\d{2,3}[a-z]?\b"), "hip"),
    (re.compile(r"ascend|\batlas \d|\b910[a-z]?\d*\b"), "npu"),
    (re.compile(r"\bgaudi\b|\bhabana\b"), "hpu"),
    (re.compile(r"\bintel\b|\bdata center gpu max\b|\barc\b"), "xpu"),
    (re.compile(r"\bmthreads\b|\bmoore threads\b|\bmtt\b"), "musa"),
]


def platform_from_name(name: str | None) -> str | None:
    """The platform a device name belongs to: ``'H100'`` -> ``'cuda'``, ``'MI300X'`` -> ``'hip'``,
    ``'Ascend 910B'`` -> ``'npu'``, ``'Intel Data Center GPU Max 1550'`` -> ``'xpu'``; a name
    with no vendor this module knows -> None."""
    if not name:
        return None
    if amd_gpu(name) is not None:
        return "hip"
    key = _key(name)
    for pattern, platform in _VENDOR_PLATFORM:
        if pattern.search(key):
            return platform
    if sm_from_name(name) is not None:
        return "cuda"
    return None


def platform_from_device(device: str | None) -> str | None:
    """SGLang's ``--device``: ``'npu'`` -> ``'npu'``; ``'cuda'`` (NVIDIA or ROCm: torch names
    both so), empty or unknown -> None."""
    if not device:
        return None
    base = str(device).strip().lower().split(":", 1)[0]
    return base if base in PLATFORMS and base not in ("cuda", "hip") else None


def sm_from_capability(text: str | float | int) -> int:
    """``'12.0'`` -> 120, ``'9.0'`` -> 90, ``120`` -> 120, ``'sm_120'`` -> 120."""
    raw = str(text).strip().lower()
    raw = raw.removeprefix("sm_").removeprefix("sm")
    if re.fullmatch(r"\d{1,2}\.\d", raw):
        major, minor = raw.split(".")
        return int(major) * 10 + int(minor)
    if re.fullmatch(r"\d{2,3}", raw):
        return int(raw)
    raise SpecError(f"{text!r} is not a compute capability: write 120, 'sm120' or '12.0'")


def capability_string(sm: int) -> str:
    return f"{sm // 10}.{sm % 10}"


_OPS = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
}


@dataclass(frozen=True)
class SmSpec:
    """What ``requires_sm(...)`` accepts: 120, '>=90', '90,100' (any of), '>=80,<100'."""

    text: str
    clauses: tuple[tuple[str, tuple[int, ...]], ...]

    def matches(self, sm: int) -> bool:
        return all(
            (sm in values) if op == "in" else _OPS[op](sm, values[0]) for op, values in self.clauses
        )


def parse_sm_spec(*args: object) -> SmSpec:
    if not args:
        raise SpecError("requires_sm() needs a compute capability, e.g. requires_sm(120) or requires_sm('>=90')")
    text = ",".join(str(a) for a in args)
    plain: list[int] = []
    clauses: list[tuple[str, tuple[int, ...]]] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        match = re.fullmatch(r"(>=|<=|==|!=|>|<)?\s*(.+)", part)
        assert match is not None
        op, value = match.group(1), match.group(2)
        try:
            sm = sm_from_capability(value)
        except SpecError:
            raise SpecError(
                f"requires_sm({text!r}): {value!r} is not a compute capability; "
                "write e.g. requires_sm(120), requires_sm('>=90') or requires_sm(90, 100)"
            ) from None
        if op in (None, "=="):
            plain.append(sm)
        else:
            clauses.append((op, (sm,)))
    if plain:
        clauses.append(("in", tuple(plain)))
    return SmSpec(text=text, clauses=tuple(clauses))
