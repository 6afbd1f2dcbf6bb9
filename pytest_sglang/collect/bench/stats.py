"""From request records to a level's figures: percentiles, throughputs, goodput, peak concurrency.

Percentiles interpolate linearly between the two nearest ranks, as ``numpy.percentile`` (and so
``sglang.bench_serving``) does, so figures from both clients compare like for like.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from pytest_sglang.model.bench import LevelResult, RequestRecord, Stat
from pytest_sglang.model.numbers import validate_refusing

_MS = 1000.0
MAX_ERRORS_KEPT = 5


class SLO(BaseModel):
    """Service-level objectives a request must meet to count towards goodput (milliseconds)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    itl_ms: float | None = None  # every gap between output chunks
    e2e_ms: float | None = None

    @property
    def given(self) -> bool:
        return any(v is not None for v in (self.ttft_ms, self.tpot_ms, self.itl_ms, self.e2e_ms))

    def met_by(self, record: RequestRecord) -> bool:
        if not record.ok:
            return False
        if self.ttft_ms is not None and record.ttft * _MS > self.ttft_ms:
            return False
        if self.e2e_ms is not None and record.e2e * _MS > self.e2e_ms:
            return False
        if self.tpot_ms is not None:
            tpot = record.tpot()
            if tpot is not None and tpot * _MS > self.tpot_ms:
                return False
        if self.itl_ms is not None and any(gap * _MS > self.itl_ms for gap in record.itls()):
            return False
        return True


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) of already sorted values, linear interpolation."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"a percentile is between 0 and 100, not {q!r}")
    rank = (len(sorted_values) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = rank - low
    below, above = sorted_values[low], sorted_values[high]
    if fraction == 0.0 or below == above:  # a value itself, never (above - below) * 0 = nan
        return below
    return below + (above - below) * fraction


def summarise(values: Iterable[float], scale: float = _MS) -> Stat:
    return Stat.model_validate(_summary(values, scale))


def _summary(values: Iterable[float], scale: float = _MS) -> dict[str, float | int]:
    data = sorted(v * scale for v in values if not math.isnan(v))
    if not data:
        return {}
    return {
        "count": len(data),
        "mean": sum(data) / len(data),
        "median": percentile(data, 50),
        "p90": percentile(data, 90),
        "p99": percentile(data, 99),
        "max": data[-1],
    }


def peak_in_flight(records: Iterable[RequestRecord]) -> int:
    """Most requests in flight at once, from each request's send and end."""
    events: list[tuple[float, int]] = []
    for r in records:
        if math.isnan(r.sent):
            continue
        events.append((r.sent, 1))
        events.append((r.end if not math.isnan(r.end) else math.inf, -1))
    peak = current = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):  # an end before a send at the same instant
        current += step
        peak = max(peak, current)
    return peak


def level_result(
    name: str,
    records: Sequence[RequestRecord],
    *,
    mode: str,
    concurrency: int | None = None,
    rate: float | None = None,
    arrival: str | None = None,
    slo: SLO | None = None,
    notes: list[str] | None = None,
) -> LevelResult:
    """Summarise one level's records. The duration runs from the first scheduled send to the
    last answer, so throughput counts the time a lagging client spent catching up."""
    done = [r for r in records if r.ok]
    failed = [r for r in records if not r.ok]
    start = min((r.scheduled for r in records), default=0.0)
    end = max((r.end for r in done), default=start)
    duration = max(end - start, 1e-9) if done else 0.0
    input_tokens = sum(r.input_tokens for r in done)
    output_tokens = sum(r.output_tokens or 0 for r in done)
    level_notes = list(notes or [])
    unknown = sum(1 for r in done if r.output_tokens is None)
    if unknown:
        level_notes.append(f"the server did not report output tokens for {unknown} of {len(done)} requests; token throughput leaves them out")
    errors: list[str] = []
    for r in failed:
        if r.error and r.error not in errors:
            errors.append(r.error)
        if len(errors) >= MAX_ERRORS_KEPT:
            break
    per_s = (lambda n: n / duration) if duration else (lambda n: 0.0)
    goodput = fraction = None
    if slo is not None and slo.given:
        good = sum(1 for r in done if slo.met_by(r))
        goodput = per_s(good)
        fraction = good / len(records) if records else 0.0
    tpots = [t for t in (r.tpot() for r in done) if t is not None]
    # The figures pass the model's checks like any other: one the records cannot give (the
    # server's token counts summing past 2^53) is refused by name, never a traceback.
    level, refused = validate_refusing(
        LevelResult,
        {
            "name": name,
            "mode": mode,
            "concurrency": concurrency,
            "rate": rate,
            "arrival": arrival,
            "requests": len(records),
            "completed": len(done),
            "failed": len(failed),
            "duration_s": duration,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "request_throughput": per_s(len(done)),
            "input_throughput": per_s(input_tokens),
            "output_throughput": per_s(output_tokens),
            "total_throughput": per_s(input_tokens + output_tokens),
            "ttft": _summary(r.ttft for r in done),
            "itl": _summary(gap for r in done for gap in r.itls()),
            "tpot": _summary(tpots),
            "e2e": _summary(r.e2e for r in done),
            "goodput": goodput,
            "goodput_fraction": fraction,
            "peak_concurrency": peak_in_flight(records),
            "errors": errors,
            "notes": level_notes,
        },
    )
    level.refused += refused
    return level
