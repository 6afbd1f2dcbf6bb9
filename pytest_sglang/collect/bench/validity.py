"""How far the client can be trusted on a level: its own lag, send delay, CPU and send rate."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from pytest_sglang.collect.bench.stats import percentile
from pytest_sglang.model.bench import LevelResult, RequestRecord, Validity


class ClientLimits(BaseModel):
    """When the client's own figures make a level inconclusive."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Event-loop lag p99 and send delay p99 above this many milliseconds, or above this
    # fraction of the level's median time to first token, whichever is larger.
    max_lag_ms: float = 5.0
    max_lag_fraction_of_ttft: float = 0.05
    max_cpu: float = 0.85  # of one core, per client process
    min_rate_fraction: float = 0.95  # open loop: sends reached / asked


@dataclass
class ClientFigures:
    """What one client process measured of itself during a level."""

    lags: list[float] = field(default_factory=list)
    cpu_s: float = 0.0
    wall_s: float = 0.0


def client_validity(level: LevelResult, figures: Sequence[ClientFigures], records: Sequence[RequestRecord], limits: ClientLimits, target_rate: float | None) -> Validity:
    """Whether the client kept up with the level, from what it measured of itself."""
    lags = sorted(lag for f in figures for lag in f.lags)
    delays = sorted(r.send_delay for r in records if not math.isnan(r.sent))
    lag_p99 = percentile(lags, 99) * 1000 if lags else None
    delay_p99 = percentile(delays, 99) * 1000 if delays else None
    cpu = max((f.cpu_s / f.wall_s for f in figures if f.wall_s > 0), default=None)
    budget = max(limits.max_lag_ms, limits.max_lag_fraction_of_ttft * (level.ttft.median or 0.0))
    reasons: list[str] = []
    if lag_p99 is not None and lag_p99 > budget:
        reasons.append(f"the client's event loop ran {lag_p99:.1f} ms late (p99), more than {budget:.1f} ms")
    if delay_p99 is not None and delay_p99 > budget:
        reasons.append(f"requests left the client {delay_p99:.1f} ms behind schedule (p99), more than {budget:.1f} ms")
    wall = max((f.wall_s for f in figures), default=0.0)
    # Over a short level, start-up work (connections, parsing the last answers) fills the
    # little wall time there is: the lag figures judge it; CPU judges levels of a second or more.
    cpu_bound = cpu is not None and cpu > limits.max_cpu and wall >= 1.0
    if cpu_bound:
        reasons.append(f"a client process used {cpu:.0%} of a core (limit {limits.max_cpu:.0%})")
    achieved = None
    if target_rate is not None and records:
        sends = sorted(r.sent for r in records if not math.isnan(r.sent))
        span = sends[-1] - sends[0] if len(sends) > 1 else 0.0
        achieved = (len(sends) - 1) / span if span > 0 else None
        due_span = max(r.scheduled for r in records) - min(r.scheduled for r in records)
        asked = (len(records) - 1) / due_span if due_span > 0 else target_rate
        if achieved is not None and achieved < limits.min_rate_fraction * asked:
            reasons.append(f"the client sent {achieved:.1f} requests/s of the {asked:.1f} asked ({achieved / asked:.0%})")
    if reasons:
        busy_client = cpu_bound or any("requests/s of the" in r for r in reasons)
        if busy_client:
            reasons.append("spread the load over more client processes (processes=N, --sglang-bench-processes) or lower the level")
        else:
            reasons.append("the client itself was not busy: other work on its machine kept it from running on time; run it where nothing else competes for the CPU")
    return Validity(
        verdict="inconclusive" if reasons else "valid",
        reasons=reasons,
        loop_lag_p99_ms=lag_p99,
        loop_lag_max_ms=lags[-1] * 1000 if lags else None,
        send_delay_p99_ms=delay_p99,
        send_delay_max_ms=delays[-1] * 1000 if delays else None,
        client_cpu=cpu,
        processes=len(figures),
        target_rate=target_rate,
        achieved_rate=achieved,
    )
