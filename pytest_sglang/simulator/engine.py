"""The simulator's performance model, written once for both servers.

A request's life in the engine is a generator that yields output token ids and, between them,
:class:`Wait` objects saying what it waits for: a place in the running batch, or a moment on
the monotonic clock. The threaded server performs a wait by blocking its thread
(:func:`run_blocking`), the asyncio server by awaiting (:mod:`.aio`); the model itself, its
counters and its timestamps are the same code either way.
"""

from __future__ import annotations

import bisect
import json
import random
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar, Union

from pytest_sglang.simulator.profile import SimPerformance

# SGLang's default buckets (--bucket-time-to-first-token and friends).
TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 200.0, 400.0)
ITL_BUCKETS = (
    0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
    0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0,
)  # fmt: skip
E2E_BUCKETS = (*TTFT_BUCKETS, 600.0, 1200.0, 1800.0, 2400.0)
TPOT_BUCKETS = (
    0.002, 0.005, 0.010, 0.020, 0.030, 0.040, 0.050, 0.060, 0.070, 0.080, 0.090, 0.100,
    0.150, 0.200, 0.300, 0.400, 0.600, 0.800, 1.0, 2.0,
)  # fmt: skip
QUEUE_BUCKETS = (
    0.0, 0.1, 0.2, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0,
    80.0, 90.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0, 800.0, 900.0, 1000.0, 1200.0,
    1400.0, 1600.0, 1800.0, 2000.0, 2500.0, 3000.0,
)  # fmt: skip
# gen_throughput is the token rate over this trailing window.
THROUGHPUT_WINDOW_S = 1.0
# A wake-up later than this behind its deadline is the server falling behind, not timer
# granularity: the next step then starts from now instead of catching up in a burst.
TIMER_SLACK_S = 0.002

T = TypeVar("T")


# ---- what a request waits for --------------------------------------------------------------


class Sleep(NamedTuple):
    """Until this moment on the monotonic clock."""

    until: float


class Admission(NamedTuple):
    """Until the engine gives this job a running slot."""

    engine: Engine
    job: _Job


class Parallel(NamedTuple):
    """Until each of these plans has finished; the wait's result is their results, in order.
    A batch request is that many requests at once, as in SGLang, each competing for a slot."""

    plans: Sequence[Generator[Wait, Any, Any]]


Wait = Union[Sleep, Admission, Parallel]
# A plan waits, then returns its result; a token stream yields ids with the waits between them.
Plan = Generator[Wait, Any, T]
Steps = Generator[Union[Wait, int], None, None]


def run_blocking(plan: Plan[T]) -> T:
    """Run a plan to its result in the calling thread, blocking through every wait."""
    value: Any = None
    while True:
        try:
            wait = plan.send(value)
        except StopIteration as done:
            return done.value
        value = block(wait)


def block(wait: Wait) -> Any:
    """Perform one wait by blocking the calling thread."""
    if isinstance(wait, Sleep):
        delay = wait.until - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        return None
    if isinstance(wait, Admission):
        admitted = threading.Event()
        wait.engine.on_admitted(wait.job, admitted.set)
        admitted.wait()
        return None
    if len(wait.plans) == 1:
        return [run_blocking(wait.plans[0])]
    with ThreadPoolExecutor(max_workers=len(wait.plans)) as pool:
        return list(pool.map(run_blocking, wait.plans))


def collect(steps: Steps) -> Plan[list[int]]:
    """The token ids of a stream, as a plan: the waits pass through, the ids are kept."""
    ids: list[int] = []
    for step in steps:
        if isinstance(step, int):
            ids.append(step)
        else:
            yield step
    return ids


# ---- prompts and the deterministic output -------------------------------------------------


@dataclass(frozen=True)
class Prompt:
    tokens: int
    seed: int

    @classmethod
    def of_text(cls, text: str) -> Prompt:
        # No tokenizer here: a word count is a stable, cheap stand-in for the token count.
        return cls(max(1, len(text.split())), zlib.crc32(text.encode()))

    @classmethod
    def of_ids(cls, ids: list[int]) -> Prompt:
        return cls(len(ids), zlib.crc32(json.dumps(ids).encode()))



def output_ids(seed: int, count: int) -> list[int]:
    # Seeded by the prompt, so a prefix of a longer answer equals the shorter answer.
    rng = random.Random(seed)
    return [rng.randrange(100, 32000) for _ in range(count)]


# ---- the model's state ---------------------------------------------------------------------


@dataclass(eq=False)
class _Job:
    """A request waiting for, or holding, one of the running slots."""

    prompt_tokens: int
    generated: int = 0
    admitted: bool = False
    wake: Callable[[], object] | None = None


@dataclass
class Timeline:
    """When one request reached each stage, in wall-clock seconds as SGLang's meta_info
    reports them; 0.0 until reached. The engine fills in the scheduler's part."""

    received: float = field(default_factory=time.time)
    dispatched: float = 0.0  # handed to the scheduler (api_server_dispatch_finish_ts)
    queued: float = 0.0  # entered the waiting queue
    forward_entry: float = 0.0  # admitted to a running slot
    first_token: float = 0.0  # prefill done, its token out (prefill_finished_time)
    finished: float = 0.0  # the last token out
    first_sent: float = 0.0  # the first answer bytes went out (response_sent_to_client_ts)


@dataclass
class Histogram:
    """A Prometheus histogram's state: per-bucket counts (the last is +Inf), sum and count."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    sum: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1  # the first bucket with value <= bound
        self.sum += value
        self.count += 1

    def cumulative(self) -> list[int]:
        """Counts at or below each bound, then the total (+Inf), as Prometheus reports them."""
        running, out = 0, []
        for count in self.counts:
            running += count
            out.append(running)
        return out

    def copy(self) -> Histogram:
        return Histogram(self.bounds, list(self.counts), self.sum, self.count)


# SGLang's decode moments: steps, sum of batch sizes, of step microseconds, of squared batch
# sizes, of batch size x microseconds, and tokens decoded.
DECODE_MOMENTS = 6


def _histograms() -> dict[str, Histogram]:
    return {
        "ttft": Histogram(TTFT_BUCKETS),
        "itl": Histogram(ITL_BUCKETS),
        "e2e": Histogram(E2E_BUCKETS),
        "tpot": Histogram(TPOT_BUCKETS),
        "queue": Histogram(QUEUE_BUCKETS),
    }


@dataclass
class Totals:
    """Counters since start, as the Prometheus counters and histograms and the scheduler's
    /v1/loads step counters report them."""

    prompt_tokens: int = 0
    generation_tokens: int = 0
    requests: int = 0
    histograms: dict[str, Histogram] = field(default_factory=_histograms)
    prefill_tokens: int = 0
    prefill_busy_us: int = 0
    decode_moments: list[float] = field(default_factory=lambda: [0.0] * DECODE_MOMENTS)

    def copy(self) -> Totals:
        histograms = {name: h.copy() for name, h in self.histograms.items()}
        return Totals(
            self.prompt_tokens,
            self.generation_tokens,
            self.requests,
            histograms,
            self.prefill_tokens,
            self.prefill_busy_us,
            list(self.decode_moments),
        )


@dataclass(frozen=True)
class LoadSnapshot:
    running: int
    waiting: int
    used_tokens: int
    waiting_tokens: int
    throughput: float
    totals: Totals


class Engine:
    """Admits requests up to the running cap in arrival order and paces their tokens.

    It never waits itself: :meth:`run` yields what a request waits for, and whoever drives
    it (a thread, an asyncio task) does the waiting. A lock guards the state, so threads
    may drive requests concurrently.
    """

    def __init__(self, performance: SimPerformance, max_running: int) -> None:
        self._perf = performance
        self._max_running = max(1, max_running)
        self._lock = threading.Lock()
        self._queue: deque[_Job] = deque()
        self._running: set[_Job] = set()
        self._token_times: deque[float] = deque()
        self._totals = Totals()

    def run(self, prompt: Prompt, max_new_tokens: int, timeline: Timeline | None = None) -> Steps:
        """Yield each output token id when the simulated GPU would produce it, and before it
        what to wait for."""
        times = timeline or Timeline()
        arrived = time.monotonic()
        times.queued = time.time()
        prompt_tokens = prompt.tokens
        job = self._enqueue(prompt_tokens)
        try:
            if not job.admitted:
                yield Admission(self, job)
            times.forward_entry = time.time()
            self._observe("queue", time.monotonic() - arrived)
            # Prefill produces the first token; each further token is one decode step.
            prefill = self._prefill_s(prompt_tokens)
            deadline = time.monotonic() + prefill
            yield Sleep(deadline)
            self._count_prefill(prompt_tokens, prefill)
            first = last = 0.0
            for index, token in enumerate(output_ids(prompt.seed, max_new_tokens)):
                if index == 0:
                    times.first_token = time.time()
                    first = last = time.monotonic()
                    self._first_token(job, first - arrived)
                else:
                    step = self._decode_step_s()
                    deadline = max(deadline, time.monotonic() - TIMER_SLACK_S) + step
                    yield Sleep(deadline)
                    now = time.monotonic()
                    self._decoded(job, step, now - last)
                    last = now
                if index == max_new_tokens - 1:
                    times.finished = time.time()
                    self._observe_finished(last - arrived, last - first, max_new_tokens)
                yield token
        finally:
            self._release(job)

    def busy(self) -> bool:
        with self._lock:
            return bool(self._running or self._queue)

    def snapshot(self) -> LoadSnapshot:
        with self._lock:
            return LoadSnapshot(
                running=len(self._running),
                waiting=len(self._queue),
                used_tokens=sum(j.prompt_tokens + j.generated for j in self._running),
                waiting_tokens=sum(j.prompt_tokens for j in self._queue),
                throughput=self._throughput(),
                totals=self._totals.copy(),
            )

    def on_admitted(self, job: _Job, wake: Callable[[], object]) -> None:
        """Call ``wake`` once ``job`` holds a running slot: now if it already does."""
        with self._lock:
            if not job.admitted:
                job.wake = wake
                return
        wake()

    def _enqueue(self, prompt_tokens: int) -> _Job:
        with self._lock:
            job = _Job(prompt_tokens)
            self._queue.append(job)
            self._promote()
            return job

    def _promote(self) -> None:
        """Give free running slots to the queue's head, in arrival order (lock held)."""
        while self._queue and len(self._running) < self._max_running:
            job = self._queue.popleft()
            self._running.add(job)
            job.admitted = True
            if job.wake is not None:
                job.wake()

    def _release(self, job: _Job) -> None:
        with self._lock:
            if job.admitted:
                self._running.discard(job)
                self._totals.prompt_tokens += job.prompt_tokens
                self._totals.generation_tokens += job.generated
                self._totals.requests += 1
            else:  # its client left while it queued
                self._queue.remove(job)
            self._promote()

    def _prefill_s(self, prompt_tokens: int) -> float:
        p = self._perf
        return (p.prefill_base_ms + prompt_tokens / 1000 * p.prefill_ms_per_1k_tokens) / 1000

    def _decode_step_s(self) -> float:
        p = self._perf
        return (p.decode_step_base_ms + p.decode_step_ms_per_request * len(self._running)) / 1000

    def _count_prefill(self, prompt_tokens: int, seconds: float) -> None:
        with self._lock:
            self._totals.prefill_tokens += prompt_tokens  # no prefix cache: every prompt token is computed
            self._totals.prefill_busy_us += round(seconds * 1e6)

    def _first_token(self, job: _Job, ttft: float) -> None:
        with self._lock:
            self._totals.histograms["ttft"].observe(ttft)
            self._count_token(job)

    def _decoded(self, job: _Job, step: float, itl: float) -> None:
        """One more token of ``job`` after a decode step of ``step`` modelled seconds, ``itl``
        measured seconds after its previous one. One lock for all of it: it runs per token."""
        with self._lock:
            self._totals.histograms["itl"].observe(itl)
            self._count_decode_step(step)
            self._count_token(job)

    def _count_decode_step(self, seconds: float) -> None:
        """Add one request's decode step to the moments (lock held). SGLang counts one step per
        batch; here each of the ``batch`` running requests steps on its own, so each adds a
        1/batch share of that batch step (whole numbers while one request runs)."""
        batch = max(1, len(self._running))
        share, us = 1 / batch, float(round(seconds * 1e6))  # SGLang times steps in whole microseconds
        moments = self._totals.decode_moments
        for i, value in enumerate((share, 1.0, us * share, float(batch), us, 1.0)):
            moments[i] += value

    def _observe(self, histogram: str, seconds: float) -> None:
        with self._lock:
            self._totals.histograms[histogram].observe(seconds)

    def _observe_finished(self, e2e: float, decoding: float, tokens: int) -> None:
        """End-to-end latency, and the time per output token after the first (SGLang leaves a
        request with one output token out of that histogram)."""
        with self._lock:
            self._totals.histograms["e2e"].observe(e2e)
            if tokens > 1:
                self._totals.histograms["tpot"].observe(decoding / (tokens - 1))

    def _count_token(self, job: _Job) -> None:
        """One more output token of ``job`` (lock held)."""
        job.generated += 1
        self._token_times.append(time.monotonic())
        self._forget_old_tokens()

    def _throughput(self) -> float:
        """Tokens per second over the trailing window (lock held)."""
        self._forget_old_tokens()
        return len(self._token_times) / THROUGHPUT_WINDOW_S

    def _forget_old_tokens(self) -> None:
        horizon = time.monotonic() - THROUGHPUT_WINDOW_S
        while self._token_times and self._token_times[0] < horizon:
            self._token_times.popleft()
