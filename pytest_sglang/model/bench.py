"""The typed results of a serving benchmark: one record per request, one summary per load level.

Everything a benchmark produces, from this package's own load generator or imported from
``sglang.bench_serving``, ends up as :class:`BenchResult`; assertions, baselines and reports
read only this model. Times inside a level are seconds since the level's start on the
client's monotonic clock; latencies in summaries are milliseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from pytest_sglang.model.numbers import Count, Figure, FigureRange, Fraction, NonNegativeFigure

Verdict = Literal["valid", "inconclusive"]
# A level's verdict once thresholds or a baseline judged it (None: not judged).
LevelVerdict = Literal["pass", "fail", "inconclusive"]
Direction = Literal["higher", "lower"]
# The largest token count a record holds: every count up to it is exact as a float, so the
# statistics (throughputs, TPOT) never round one or overflow on it, and no server makes more.
MAX_TOKENS = 2**53
_COUNTS = ("input_tokens", "output_tokens")
# The +Inf bucket's bound of a latency histogram, finite so that JSON keeps it.
INF_BOUND = 1e308
HistogramBound = Annotated[float, BeforeValidator(FigureRange(minimum=0, maximum=INF_BOUND))]


def token_count_problem(value: object) -> str | None:
    """Why ``value`` cannot be a record's token count (a whole number from 0 to 2^53), or None."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"is not a whole number ({type(value).__name__})"
    if value < 0:
        return "is below 0"
    if value > MAX_TOKENS:
        return f"is over 2^53 ({value.bit_length()} bits)"
    return None


@dataclass(slots=True)
class RequestRecord:
    """One request as the client saw it. ``scheduled`` is when the load pattern wanted it
    sent, ``sent`` when it was actually sent: the gap is client-side queueing, and latencies
    measured from ``scheduled`` keep it visible (an open-loop client that falls behind can not
    hide tail latency by sending late)."""

    index: int
    scheduled: float
    sent: float = math.nan
    first_token: float = math.nan
    end: float = math.nan
    # Arrival time of each chunk that carried output (the first one is first_token).
    chunk_times: list[float] = field(default_factory=list)
    input_tokens: int = 0
    # As the server reports it (meta_info.completion_tokens or usage.completion_tokens);
    # None when the server did not say.
    output_tokens: int | None = None
    error: str | None = None

    def __setattr__(self, name: str, value: object) -> None:
        # A count is checked wherever it is set, built or read from a frame: a record never
        # holds one the statistics would overflow on (a server reporting 10^400 tokens).
        if name in _COUNTS and not (name == "output_tokens" and value is None):
            problem = token_count_problem(value)
            if problem is not None:
                raise ValueError(f"RequestRecord.{name} {problem}: a token count is a whole number from 0 to 2^53")
        object.__setattr__(self, name, value)

    @property
    def ok(self) -> bool:
        return self.error is None and not math.isnan(self.end)

    @property
    def ttft(self) -> float:
        """Seconds from the scheduled send to the first output chunk."""
        return self.first_token - self.scheduled

    @property
    def e2e(self) -> float:
        return self.end - self.scheduled

    @property
    def send_delay(self) -> float:
        return self.sent - self.scheduled

    def itls(self) -> list[float]:
        """Gaps between consecutive output chunks, in seconds."""
        t = self.chunk_times
        return [b - a for a, b in zip(t, t[1:])]

    def tpot(self) -> float | None:
        """Seconds per output token after the first, from the server's token count."""
        n = self.output_tokens
        if n is None or n < 2 or not self.ok:
            return None
        return (self.end - self.first_token) / (n - 1)


class Stat(BaseModel):
    """Summary of one latency over a level's successful requests, in milliseconds."""

    model_config = ConfigDict(extra="forbid")

    count: Count = 0
    mean: NonNegativeFigure | None = None
    median: NonNegativeFigure | None = None
    p90: NonNegativeFigure | None = None
    p99: NonNegativeFigure | None = None
    max: NonNegativeFigure | None = None


class Validity(BaseModel):
    """How far the client itself can be trusted for this level. ``inconclusive`` when the
    client was the bottleneck: its event loop lagged, it sent behind schedule, or it used
    (almost) a whole core. The figures are always given, whatever the verdict, and a threshold
    is judged against them (:func:`~pytest_sglang.judge.bench.expect.judge`): a figure whose margin to
    its limit is larger than the client's own error is judged even on a level marked here."""

    model_config = ConfigDict(extra="forbid")

    verdict: Verdict = "valid"
    reasons: list[str] = Field(default_factory=list)
    loop_lag_p99_ms: NonNegativeFigure | None = None
    loop_lag_max_ms: NonNegativeFigure | None = None
    send_delay_p99_ms: Figure | None = None
    send_delay_max_ms: Figure | None = None
    client_cpu: NonNegativeFigure | None = None  # fraction of one core used by the client's process(es)
    processes: Count = 1
    # Open-loop levels: the rate asked for and the send rate reached.
    target_rate: NonNegativeFigure | None = None
    achieved_rate: NonNegativeFigure | None = None


class ServerLoad(BaseModel):
    """What the server's /metrics said during the level (peaks over the samples taken)."""

    model_config = ConfigDict(extra="forbid")

    samples: Count = 0
    peak_running: NonNegativeFigure | None = None
    peak_queue: NonNegativeFigure | None = None
    peak_token_usage: NonNegativeFigure | None = None
    mean_running: NonNegativeFigure | None = None
    # The effective max_running_requests of the target, when known, and whether it was reached.
    max_running_requests: Count | None = None
    reached_max_running: bool | None = None
    # The server's own time-to-first-token histogram over the level (upper bound in ms,
    # cumulative count), measured from when the server received each request: no client delay.
    ttft_histogram: list[tuple[HistogramBound, NonNegativeFigure]] = Field(default_factory=list)
    note: str | None = None


class LevelResult(BaseModel):
    """One load level: a closed-loop concurrency or an open-loop request rate."""

    model_config = ConfigDict(extra="forbid")

    name: str  # "concurrency=48", "rate=20/s poisson"
    mode: Literal["concurrency", "rate", "imported"]
    concurrency: Count | None = None
    rate: NonNegativeFigure | None = None
    arrival: Literal["constant", "poisson"] | None = None
    requests: Count = 0
    completed: Count = 0
    failed: Count = 0
    duration_s: NonNegativeFigure = 0.0
    input_tokens: Count = 0
    output_tokens: Count = 0
    request_throughput: NonNegativeFigure = 0.0  # completed requests per second
    input_throughput: NonNegativeFigure = 0.0  # input tokens per second
    output_throughput: NonNegativeFigure = 0.0  # output tokens per second
    total_throughput: NonNegativeFigure = 0.0
    ttft: Stat = Field(default_factory=Stat)
    itl: Stat = Field(default_factory=Stat)
    tpot: Stat = Field(default_factory=Stat)
    e2e: Stat = Field(default_factory=Stat)
    goodput: NonNegativeFigure | None = None  # requests per second that met every SLO
    goodput_fraction: Fraction | None = None
    peak_concurrency: Count = 0  # requests in flight at once, as the client saw it
    errors: list[str] = Field(default_factory=list)  # the distinct error texts, first few
    notes: list[str] = Field(default_factory=list)  # what a reader should know about the figures
    validity: Validity = Field(default_factory=Validity)
    server: ServerLoad | None = None
    # Values that only an import carries (bench_serving's "Accept length", ...).
    extra: dict[str, Figure] = Field(default_factory=dict)
    # Figures refused where they entered (a server's /metrics answering NaN, a result file's
    # 1e308), each naming the field and the value: the level holds none of them, and a run
    # with any is never promoted.
    refused: list[str] = Field(default_factory=list)
    # Set when the level was judged (thresholds, a baseline): the verdict and its reasons, the
    # failing or undecided figures first. ``attempts`` counts runs of an inconclusive level.
    verdict: LevelVerdict | None = None
    verdict_reasons: list[str] = Field(default_factory=list)
    attempts: Count = 1

    def judge(self, verdict: LevelVerdict, reasons: list[str]) -> None:
        """Record a judgement of the level. A level judged twice in one test (thresholds, then
        a benchmark baseline) keeps the worse verdict and every reason: a level that failed its
        threshold is not shown as passed because the baseline comparison found no change."""
        rank = {"pass": 0, "inconclusive": 1, "fail": 2}
        if self.verdict is None or rank[verdict] > rank[self.verdict]:
            self.verdict = verdict
        self.verdict_reasons = list(dict.fromkeys([*self.verdict_reasons, *reasons]))

    def metrics(self) -> dict[str, float]:
        """The level's figures under the names assertions and baselines use."""
        out: dict[str, float] = {
            "request_throughput": self.request_throughput,
            "input_throughput": self.input_throughput,
            "output_throughput": self.output_throughput,
            "total_throughput": self.total_throughput,
            "completed": float(self.completed),
            "failed": float(self.failed),
            "error_rate": self.failed / self.requests if self.requests else 0.0,
            "peak_concurrency": float(self.peak_concurrency),
        }
        for name in ("ttft", "itl", "tpot", "e2e"):
            stat: Stat = getattr(self, name)
            for part in ("mean", "median", "p90", "p99", "max"):
                value = getattr(stat, part)
                if value is not None:
                    out[f"{name}_{part}_ms"] = value
        if self.goodput is not None:
            out["goodput"] = self.goodput
        if self.goodput_fraction is not None:
            out["goodput_fraction"] = self.goodput_fraction
        if self.server is not None:
            for part in ("peak_running", "peak_queue", "peak_token_usage", "mean_running"):
                value = getattr(self.server, part)
                if value is not None:
                    out[f"server_{part}"] = float(value)
        out.update(self.extra)
        return out

    @property
    def conclusive(self) -> bool:
        return self.validity.verdict == "valid"

    def client_error_ms(self) -> float:
        """How much later than the truth the client can have seen any one event of the level:
        its worst event-loop lag plus its worst send delay (0 for an imported result)."""
        v = self.validity
        return (v.loop_lag_max_ms or 0.0) + (v.send_delay_max_ms or 0.0)

    def load_shortfall(self) -> str | None:
        """Why the client did not put the asked load on the server, or None when it did."""
        if self.mode == "concurrency" and self.concurrency and self.requests >= self.concurrency and self.peak_concurrency < self.concurrency:
            return f"only {self.peak_concurrency} of {self.concurrency} requests were in flight at once"
        v = self.validity
        if self.mode == "rate" and v.achieved_rate is not None and v.target_rate and v.achieved_rate < 0.95 * v.target_rate:
            return f"the client sent {v.achieved_rate:.1f} requests/s of the {v.target_rate:g} asked"
        return None


# The figures a report draws of a benchmark baseline's repeats (as a band around the run's line).
BASELINE_BAND_METRICS = ("output_throughput", "ttft_median_ms", "ttft_p99_ms", "itl_median_ms", "itl_p99_ms")


class BaselineRepeats(BaseModel):
    """The stored benchmark baseline a result was compared with: every repeat's figures per
    level, kept on the result so that a report can draw the baseline's spread (a band) beside
    the run, from the JSON report alone, long after the baseline file changed."""

    model_config = ConfigDict(extra="forbid")

    name: str  # the benchmark's name in the baseline file
    key: str | None = None  # the deployment key of the file
    recorded: str | None = None  # when the baseline was recorded (ISO time)
    # level name -> metric -> the value of every repeat
    levels: dict[str, dict[str, list[Figure]]] = Field(default_factory=dict)

    @classmethod
    def from_entry(cls, name: str, key: str | None, entry: dict[str, object], metrics: tuple[str, ...] = BASELINE_BAND_METRICS) -> BaselineRepeats:
        """The figures of ``metrics`` from a stored baseline entry (what
        :func:`~pytest_sglang.judge.bench.compare.baseline_entry` wrote); odd values are left out."""
        levels: dict[str, dict[str, list[float]]] = {}
        stored = entry.get("levels")
        for level, figures in (stored.items() if isinstance(stored, dict) else ()):
            if not isinstance(figures, dict):
                continue
            kept = {m: [float(v) for v in figures[m] if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)] for m in metrics if isinstance(figures.get(m), list)}
            levels[str(level)] = {m: values for m, values in kept.items() if values}
        recorded = entry.get("recorded")
        return cls(name=name, key=key, recorded=recorded if isinstance(recorded, str) else None, levels=levels)


class BenchResult(BaseModel):
    """A whole benchmark run against one target: its levels in the order they ran."""

    model_config = ConfigDict(extra="forbid")

    target: str = ""  # the target's display name, never a key
    source: Literal["pytest-sglang", "bench_serving"] = "pytest-sglang"
    route: str | None = None
    model: str | None = None
    sglang_version: str | None = None
    started: str | None = None  # ISO time
    settings: dict[str, object] = Field(default_factory=dict)  # the load pattern as asked
    levels: list[LevelResult] = Field(default_factory=list)
    # Several runs of the same pattern, for telling a change from noise: repeats[i] is run i.
    repeats: list[list[LevelResult]] = Field(default_factory=list)
    # The benchmark baseline it was compared with, when it was (``HostBench.baseline``).
    baseline: BaselineRepeats | None = None

    def level(self, key: int | float | str) -> LevelResult:
        """A level by its concurrency (int), rate (float) or name."""
        for level in self.levels:
            if isinstance(key, str) and level.name == key:
                return level
            if isinstance(key, int) and not isinstance(key, bool) and level.concurrency == key and level.mode in ("concurrency", "imported"):
                return level
        for level in self.levels:  # a number that is no concurrency level may be a rate
            if isinstance(key, (int, float)) and not isinstance(key, bool) and level.rate == key:
                return level
        known = ", ".join(level.name for level in self.levels) or "none"
        raise KeyError(f"no level {key!r} in this benchmark (levels: {known})")

    @property
    def conclusive(self) -> bool:
        return all(level.conclusive for level in self.levels)


# Which way is better, per metric name (a prefix match on the latency families).
def direction(metric: str) -> Direction:
    if metric.endswith("_ms") or metric in {"failed", "error_rate", "server_peak_queue"}:
        return "lower"
    return "higher"
