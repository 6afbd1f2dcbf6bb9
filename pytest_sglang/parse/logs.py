"""The logs of the current run: where they are, which lines matter, and reading them.

A log source is ``journald:UNIT``, ``file:PATH``, ``docker:NAME``, ``kubectl:NS/POD[/CONTAINER]``
or ``cmd:COMMAND``. Lines are filtered on the host (so a large log is not copied) and only the
current run is kept: journald by the unit's invocation id, a file from its last start-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator

from pytest_sglang.base.errors import ParseError, SpecError
from pytest_sglang.base.settings import setting
from pytest_sglang.parse.lines import (
    CapacityLine,
    StartupLine,
    clean_line,
    parse_capacity_line,
    parse_startup_line,
)

# Lines worth bringing back: SGLang prints no level names, so these are matched by text.
# POSIX ERE without backslashes (they travel through awk -v): [.] for a literal dot.
STARTUP = "server_args="
CAPACITY = "max_total_num_tokens="
KEEP_PATTERNS: tuple[str, ...] = (
    STARTUP,
    CAPACITY,
    "KV Cache is allocated",
    "Mamba Cache is allocated",
    "Shared experts fusion optimization is disabled",
    "Load weight end",
    "Capture cuda graph",
    "Capture piecewise CUDA graph",
    "prefill CUDA graph",
    "Disable piecewise CUDA graph",
    "Piecewise cuda graph is disabled",
    "is reset to",
    "is deprecated",
    "Disabling overlap schedule",
    "Automatically setting",
    "Auto-enabling",
    "is capped to",
    "was reduced from",
    "is adjusted",
    "as attention backend",
    "as MoE runner backend",
    "Spec v1 is used",
    "Spec v2 is enabled",
    "forcibly disabled",
    "is incompatible with",
    "is not supported",
    "Custom allreduce is disabled",
    "Using default MoE kernel config",
    "Engine startup timings",
    "fired up and ready to roll",
)
KEEP = "|".join(KEEP_PATTERNS)
# Seen before this run's start-up line, these lines belong to the previous run.
PREVIOUS_RUN = "fired up and ready to roll|Decode batch|Prefill batch| TP[0-9]+[]]|POST /|GET /"
_MAMBA_LINE = re.compile(r"Mamba Cache is allocated\. max_mamba_cache_size: (\d+)")
# The model loader's word when it keeps the shared experts out of the fused MoE kernel (DeepSeek,
# GLM-4.5, Qwen MoE ...): "<reason> Shared experts fusion optimization is disabled."
SHARED_EXPERTS_FUSION_OFF = "Shared experts fusion optimization is disabled"
ADJUSTMENT = re.compile(
    r"is reset to|is deprecated|Disabling|disabling|Automatically setting|Auto-enabling|is capped to|"
    r"was reduced from|is adjusted|Disable piecewise|Piecewise cuda graph is disabled|forcibly disabled|"
    r"is incompatible with|is not supported|Spec v1 is used|Spec v2 is enabled|as attention backend|as MoE runner backend"
)

# Not SGLang's word on its configuration: a Python warning printed by the warnings module
# ("/site-packages/x.py:223: UserWarning: Triton is not supported ..."), and the note an HTTP
# handler prints when a client uses an old endpoint path.
NOT_AN_ADJUSTMENT = re.compile(r"\.py:\d+: \w*Warning: |Endpoint '/[\w/]*' is deprecated")


@dataclass(frozen=True)
class LogSource:
    kind: str  # journald | file | docker | kubectl | cmd
    target: str

    @classmethod
    def parse(cls, text: str) -> LogSource:
        kind, sep, target = text.partition(":")
        kinds = ("journald", "file", "docker", "kubectl", "cmd")
        if not sep or kind not in kinds or not target.strip():
            raise SpecError(
                f"{setting('logs')} {text!r}: write journald:UNIT, file:PATH, docker:NAME, kubectl:NAMESPACE/POD or cmd:COMMAND"
            )
        if kind == "file" and target.strip() == "-":
            raise SpecError(f"{setting('logs')} {text!r}: give the path of the SGLang log on the host (standard input is not read)")
        if kind == "kubectl" and target.count("/") not in (1, 2):
            raise SpecError(f"{setting('logs')} {text!r}: write kubectl:NAMESPACE/POD (or NAMESPACE/POD/CONTAINER)")
        return cls(kind=kind, target=target)

    def __str__(self) -> str:
        return f"{self.kind}:{self.target}"


@dataclass
class SGLangLogs:
    """The start-up lines of the current run, as the ``sglang_logs`` fixture gives them."""

    source: str
    lines: list[str] = field(default_factory=list)
    current_run_only: bool = True

    def __iter__(self) -> Iterator[str]:
        return iter(self.lines)

    def __len__(self) -> int:
        return len(self.lines)

    def search(self, pattern: str | re.Pattern[str]) -> list[str]:
        """Lines matching a regular expression."""
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        return [line for line in self.lines if regex.search(line)]

    @property
    def startup_line(self) -> StartupLine | None:
        """The parsed ``server_args=`` line of this run (None when the logs do not hold it)."""
        for line in reversed(self.lines):
            if STARTUP in line:
                try:
                    return parse_startup_line(line)
                except ParseError:
                    continue
        return None

    @property
    def capacity(self) -> CapacityLine | None:
        """The scheduler's ``max_total_num_tokens=..., max_running_requests=...`` line."""
        for line in reversed(self.lines):
            if CAPACITY in line and "chunked_prefill_size=" in line:
                try:
                    return parse_capacity_line(line)
                except ParseError:
                    continue
        return None

    @property
    def mamba_cache_size(self) -> int | None:
        """``max_mamba_cache_size`` of the last ``Mamba Cache is allocated`` line."""
        for line in reversed(self.lines):
            match = _MAMBA_LINE.search(line)
            if match:
                return int(match.group(1))
        return None

    @property
    def shared_experts_fusion_off(self) -> str | None:
        """The last line in which the model loader turned shared-experts fusion off, cleaned."""
        for line in reversed(self.lines):
            if SHARED_EXPERTS_FUSION_OFF in line:
                return clean_line(line)
        return None

    @property
    def kv_pool(self) -> list[str]:
        return self.search("KV Cache is allocated")

    @property
    def mamba_pool(self) -> list[str]:
        return self.search("Mamba Cache is allocated")

    @property
    def adjustments(self) -> list[str]:
        """SGLang's messages about what it changed, disabled, reset or deprecated."""
        return [clean_line(line) for line in self.lines if ADJUSTMENT.search(line) and not NOT_AN_ADJUSTMENT.search(line)]

    @property
    def ready(self) -> bool:
        return any("fired up and ready to roll" in line for line in self.lines)


def current_run(lines: list[str]) -> list[str]:
    """The lines from the last run's start on, for sources that hold several runs."""
    for i in range(len(lines) - 1, -1, -1):
        if STARTUP in lines[i]:
            start = i
            while start > 0 and not re.search(PREVIOUS_RUN, lines[start - 1]) and i - start < 200:
                start -= 1
            return lines[start:]
    return lines

