"""GPU identity: marketing names to compute capability, and compute-capability specs.

SGLang reports no compute capability over HTTP; ``/v1/loads.accelerator`` (0.5.18+) has the
name from ``torch.cuda.get_device_name()``. This table maps those names to SM numbers.
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
    """``'H100'`` -> 81559 (MiB, as nvidia-smi reports it); a name with several memory sizes
    (``'A100'``) or an unknown one -> None."""
    if not name or sm_from_name(name) is None:
        return None
    key = " ".join(name.lower().replace("_", " ").replace("-", " ").split())
    for pattern, mib in _MEMORY_COMPILED:
        if pattern.search(key):
            return mib
    return None


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
