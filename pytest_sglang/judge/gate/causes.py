"""Why a host is held, one line per cause: the field, its value against what the test wanted,
and the explain finding that accounts for it (with its rule id), as a reviewer asks it.

    max_running_requests 26 < 48: capped by the mamba state cache (max_mamba_cache_size 132 // 5) [capacity.mamba-cap]
    prefill_cuda_graph False, not True: Piecewise CUDA graph is disabled because the model is multimodal (...) [pcg.multimodal]
    benchmark test_48_streams concurrency=48: ttft_p99_ms 592.4 ms (limit <= 250.0 ms); 22 request(s) queued behind 26 running (max_running_requests 26)

Every line is read from what the report keeps of a test (its message and the SGLang values it
read, with their causes), a check (its failures) and a benchmark (its levels' reasons and the
server's own figures), so a stored report gives the same lines again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pytest_sglang.base.secrets import clip
from pytest_sglang.base.text import number, tidy_numbers
from pytest_sglang.judge.gate.models import Benchmark, CheckRecord, TestResult, ValueRead

# A host's causes beyond this many are counted, not listed.
CAUSES_SHOWN = 8
LINE_CHARS = 300

_ASSERT = re.compile(r"^(?:AssertionError: )?assert (?P<left>.+?) (?P<op>>=|<=|==|!=|>|<|is not|is|not in|in) (?P<right>.+?)\s*$")
_NEGATED = {">=": "<", "<=": ">", ">": "<=", "<": ">=", "!=": "==", "is not": "is", "not in": "in", "in": "not in"}


def _clip(text: str) -> str:
    return clip(text, LINE_CHARS)


def _field(read: ValueRead) -> str:
    return read.name.removeprefix("effective.")


def _compared(message: str | None, value: str) -> str | None:
    """``26 < 48`` from ``assert 26 >= 48``: the failed comparison, turned to what is true,
    when its left side is the value read."""
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    found = _ASSERT.match(first)
    if found is None or tidy_numbers(found["left"]) != value:
        return None
    op, right = found["op"], tidy_numbers(found["right"])
    if op in ("==", "is"):
        return f"{value}, not {right}"
    return f"{value} {_NEGATED[op]} {right}"


def failed_test_causes(test: TestResult) -> list[str]:
    """The causes of one failed test: each value it read that an explain finding accounts
    for; failing that, the values it read; failing that, its message's first line."""
    explained = [read for read in test.values_read if read.causes]
    lines: list[str] = []
    for read in explained or test.values_read[:1]:
        shown = _compared(test.message, read.value) or (f"{read.value} (requested {read.requested})" if read.requested not in (None, "nothing", read.value) else read.value)
        because = "; ".join(read.causes) if read.causes else "no explain rule accounts for it"
        lines.append(_clip(f"{_field(read)} {shown}: {because}"))
    if not lines:
        first = (test.message or "").strip().splitlines()
        lines.append(_clip(f"{bench_name(test.nodeid)}: {first[0] if first else test.outcome}"))
    return lines


def check_causes(check: CheckRecord) -> list[str]:
    """A failed check's failures, each named with its check."""
    return [_clip(f"{check.check}: {failure}") for failure in check.failures] or [f"check {check.check} failed"]


def bench_causes(bench: Benchmark) -> list[str]:
    """Each failed level's reasons, with how many requests queued behind how many running
    when the server's own figures say so."""
    lines = []
    for level in bench.levels:
        if level.verdict != "fail":
            continue
        server = level.server or {}
        queued, running, cap = server.get("peak_queue"), server.get("peak_running"), server.get("max_running_requests")
        queue = ""
        if isinstance(queued, (int, float)) and queued > 0 and isinstance(running, (int, float)):
            queue = f"; {int(queued)} request(s) queued behind {int(running)} running" + (f" (max_running_requests {number(cap, 'requests')})" if cap is not None else "")
        for reason in level.verdict_reasons or [f"{level.name} failed"]:
            reason = reason if reason.startswith(level.name) else f"{level.name}: {reason}"
            lines.append(_clip(f"benchmark {bench_name(bench.test)} {reason}{queue}"))
    return lines


def bench_name(nodeid: str) -> str:
    """``test_x[sim://h]`` -> ``test_x``: the host is said once, before the reason."""
    name = nodeid.rsplit("::", 1)[-1]
    return name.split("[", 1)[0] if name.endswith("]") else name


def shown(causes: Iterable[str]) -> list[str]:
    """The causes in order, each once, the first :data:`CAUSES_SHOWN` listed and the rest counted."""
    unique = list(dict.fromkeys(causes))
    if len(unique) <= CAUSES_SHOWN:
        return unique
    return unique[:CAUSES_SHOWN] + [f"{len(unique) - CAUSES_SHOWN} more cause(s)"]


def fleet_causes(per_host: dict[str, list[str]]) -> list[str]:
    """The causes of several hosts, each said once with the hosts it holds: ``cause (on a, b)``."""
    hosts_of: dict[str, list[str]] = {}
    for host, causes in per_host.items():
        for cause in causes:
            hosts_of.setdefault(cause, []).append(host)
    return [f"{cause} (on {', '.join(hosts)})" for cause, hosts in hosts_of.items()]
