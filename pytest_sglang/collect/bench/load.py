"""The load generator: closed-loop concurrency levels and open-loop request rates over asyncio.

What keeps the client from distorting its own measurement:

- every request body is encoded before its level starts, so the hot path only sends and reads;
- connections are kept alive and reused (a new TCP connection per request costs the client CPU
  and adds the connect to the time to first token);
- each request records when the load pattern *wanted* it sent and when it was sent, and latencies
  count from the wanted time: a client that falls behind shows it as latency, not as a quieter
  load;
- the client measures itself while it runs (event-loop lag, send delay, its own CPU): a level on
  which the client was the bottleneck is *inconclusive*, never a pass or a fail;
- several client processes share one level's load when one process cannot keep up
  (``processes=N``); their clocks are aligned on a common start instant.

What keeps a failure a failure and a budget a bound:

- a request fails, with one line of text on its record (``RequestRecord.error``, scrubbed of
  the auth headers' values), when the answer is not HTTP 200, is a 200 that is not an event
  stream (``Content-Type: text/event-stream``, which SGLang and the simulator send for every
  streamed route), has a frame that is not JSON or not a JSON object or not the shape SGLang
  sends, streams no output, or reports token counts the request cannot have had: more output
  tokens than it asked for (``max_new_tokens``/``max_tokens``), fewer than the chunks that
  carried output (each carries at least one), or an absurd prompt count. Such a request is
  counted in the level's ``failed`` and never in its throughput;
- with ``duration_s`` the level is bounded: no request is sent later than ``duration_s`` after
  the level began (its warm-up and connects included; with ``processes=N``, after the common
  start instant), and everything, warm-up included, ends by the level's bound,
  ``duration_s`` plus a grace of 20 % of it, at least 1 s and at most 5 s
  (:func:`level_bound`). A request still running at the bound is cancelled and fails ("did
  not finish within the level's N s bound"). Each request's timeout is the smaller of
  ``request_timeout_s`` and the time left to the bound;
- a new connection must be made within 10 s (or the time left, when less), and one answer may
  hold at most 64 MiB plus what its asked length can need (:func:`answer_cap`: SGLang's
  ``/generate`` repeats the whole text so far in every frame, so an answer grows with the
  square of its length). Frames are parsed in time linear in the answer's size.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import wait as futures_wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pytest_sglang.base.errors import SGLangError, SpecError
from pytest_sglang.base.secrets import clip, scrub
from pytest_sglang.collect.bench.stats import SLO, level_result
from pytest_sglang.collect.bench.validity import ClientFigures, ClientLimits, client_validity
from pytest_sglang.collect.bench.watch import _MetricsWatch, read_load  # noqa: F401  (read_load: the module's former home)
from pytest_sglang.model.bench import MAX_TOKENS, BenchResult, LevelResult, RequestRecord

try:  # a faster JSON decoder for the stream frames when it is installed (not a dependency)
    _loads: Callable[[bytes], Any] = importlib.import_module("orjson").loads
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads

Route = Literal["generate", "completions", "chat"]
_OPEN_LOOP_CONNECTIONS = 8
_MAX_PRECONNECT = 1024
_TIMER_ROUNDING_S = 0.001
_GRACE_FRACTION, _GRACE_MIN_S, _GRACE_MAX_S = 0.2, 1.0, 5.0
_ANSWER_BASE_BYTES = 64 * 1024 * 1024
_ANSWER_BYTES_PER_TOKEN = 4096  # a frame's fixed part (meta_info) per output token
_ANSWER_BYTES_PER_TOKEN_SQUARED = 32  # cumulative text and ids, repeated in every frame
_PROMPT_SLACK_TOKENS = 65536  # a chat template (or a system prompt) may add this many
ROUTE_PATHS: dict[str, str] = {"generate": "/generate", "completions": "/v1/completions", "chat": "/v1/chat/completions"}
_WORDS = ("the", "a", "of", "and", "to", "in", "is", "it", "on", "for", "as", "at", "by", "we", "be", "or")


Lengths = int | tuple[int, int]


class LoadSpec(BaseModel):
    """A load pattern: the levels to run and what each request looks like."""

    model_config = ConfigDict(extra="forbid")

    route: Route = "generate"
    concurrency: list[int] = Field(default_factory=list)
    rates: list[float] = Field(default_factory=list)  # requests per second, open loop
    arrival: Literal["constant", "poisson"] = "poisson"
    seed: int = 0
    requests: int | None = None  # per level
    duration_s: float | None = None  # per level: no request is sent after it
    warmup: int = 4  # requests sent (and not measured) before the first level
    input_len: Lengths = 128
    output_len: Lengths = 32
    shared_prefix: int = 0  # tokens every prompt starts with, to exercise the prefix cache
    vocab: int = 500  # prompt token ids are drawn below this (and from 10): every tokenizer has them
    model: str | None = None  # the OpenAI routes' "model"; None: the one the server lists
    slo: SLO = Field(default_factory=SLO)
    processes: int = 1
    request_timeout_s: float = 300.0
    metrics_interval_s: float = 0.05  # 0 turns the /metrics watch off
    limits: ClientLimits = Field(default_factory=ClientLimits)

    @field_validator("concurrency")
    @classmethod
    def _positive_concurrency(cls, value: list[int]) -> list[int]:
        if any(c < 1 for c in value):
            raise ValueError("concurrency levels must be 1 or more")
        return value

    @field_validator("rates")
    @classmethod
    def _positive_rates(cls, value: list[float]) -> list[float]:
        if any(not (r > 0 and math.isfinite(r)) for r in value):
            raise ValueError("request rates must be positive numbers of requests per second")
        return value

    @field_validator("input_len", "output_len")
    @classmethod
    def _lengths(cls, value: Lengths) -> Lengths:
        low, high = (value, value) if isinstance(value, int) else value
        if low < 1 or high < low:
            raise ValueError(f"a length is a positive number of tokens or a range (low, high) with low <= high, not {value!r}")
        return value

    @model_validator(mode="after")
    def _something_to_run(self) -> LoadSpec:
        if not self.concurrency and not self.rates:
            raise ValueError("give at least one concurrency level or request rate")
        if self.requests is not None and self.requests < 1:
            raise ValueError("requests per level must be 1 or more")
        if self.processes < 1:
            raise ValueError("processes must be 1 or more")
        if not self.request_timeout_s > 0:
            raise ValueError("request_timeout_s must be a positive number of seconds")
        if self.duration_s is not None and not (self.duration_s > 0 and math.isfinite(self.duration_s)):
            raise ValueError("duration_s must be a positive number of seconds")
        return self

    def level_requests(self, concurrency: int | None = None, rate: float | None = None) -> int | None:
        """Requests for one level: as asked, else enough for steady state (none when only a
        duration bounds the level)."""
        if self.requests is not None:
            return self.requests
        if self.duration_s is not None:
            return None
        if concurrency is not None:
            return max(4 * concurrency, 32)
        return max(int(math.ceil((rate or 1) * 10)), 32)


def load_spec(**kwargs: Any) -> LoadSpec:
    """A :class:`LoadSpec`, with a mistake reported as one line naming the setting."""
    try:
        return LoadSpec(**kwargs)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "load pattern"
        message = str(first.get("msg", exc)).removeprefix("Value error, ")
        raise SpecError(f"benchmark {where}: {message}" if where != "load pattern" else f"benchmark: {message}") from None


# ---- prompts ---------------------------------------------------------------------------


def _length(value: Lengths, rng: random.Random) -> int:
    return value if isinstance(value, int) else rng.randint(value[0], value[1])


def level_grace(duration_s: float) -> float:
    """The time a level's requests get to finish after its last send (seconds)."""
    return min(max(_GRACE_FRACTION * duration_s, _GRACE_MIN_S), _GRACE_MAX_S)


def level_bound(duration_s: float) -> float:
    """By when a level with ``duration_s`` has ended, everything in it included (seconds from
    its start)."""
    return duration_s + level_grace(duration_s)


def answer_cap(asked: int) -> int:
    """The most bytes one answer may hold for a request that asked for ``asked`` output tokens."""
    return _ANSWER_BASE_BYTES + asked * _ANSWER_BYTES_PER_TOKEN + asked * asked * _ANSWER_BYTES_PER_TOKEN_SQUARED


def request_bodies(spec: LoadSpec, count: int, *, first_index: int = 0) -> list[tuple[bytes, int]]:
    """``count`` encoded request bodies and their prompt lengths, made locally and seeded.

    ``/generate`` and ``/v1/completions`` get token ids, so the prompt length is exact whatever
    the tokenizer; chat gets words that are one token in common vocabularies."""
    return [(body, n_in) for body, n_in, _ in request_items(spec, count, first_index=first_index)]


def request_items(spec: LoadSpec, count: int, *, first_index: int = 0) -> list[tuple[bytes, int, int]]:
    """As :func:`request_bodies`, with the output length each request asks for (its
    ``max_new_tokens`` or ``max_tokens``): the most output tokens its answer may report."""
    prefix_rng = random.Random(f"{spec.seed}:prefix")
    prefix = [prefix_rng.randrange(10, spec.vocab) for _ in range(spec.shared_prefix)]
    bodies: list[tuple[bytes, int, int]] = []
    for index in range(first_index, first_index + count):
        rng = random.Random(f"{spec.seed}:{index}")
        n_in = max(_length(spec.input_len, rng), spec.shared_prefix + 1)
        n_out = _length(spec.output_len, rng)
        ids = prefix + [rng.randrange(10, spec.vocab) for _ in range(n_in - len(prefix))]
        body: dict[str, Any]
        if spec.route == "generate":
            body = {"input_ids": ids, "sampling_params": {"max_new_tokens": n_out, "ignore_eos": True, "temperature": 0.0}, "stream": True}
        elif spec.route == "completions":
            body = {"prompt": ids, "max_tokens": n_out, "ignore_eos": True, "temperature": 0.0, "stream": True, "stream_options": {"include_usage": True}}
        else:
            text = " ".join(_WORDS[i % len(_WORDS)] for i in ids)
            body = {"messages": [{"role": "user", "content": text}], "max_tokens": n_out, "ignore_eos": True, "temperature": 0.0, "stream": True, "stream_options": {"include_usage": True}}
        if spec.route != "generate" and spec.model is not None:
            body["model"] = spec.model
        bodies.append((json.dumps(body, separators=(",", ":")).encode(), n_in, n_out))
    return bodies


# ---- one request -------------------------------------------------------------------------


class _BadFrame(ValueError):
    """A stream frame that is JSON but not in the shape SGLang sends (the text says where)."""


# How much of a failed answer's body is read for its error line (the line keeps 300
# characters): enough for white space to collapse, little enough for the hot path. A key cut
# at this bound ends the text, where the cut rule of secrets.scrub finds it.
_ERROR_BYTES = 8 * 1024


def _short(value: Any) -> str:
    """A value from a frame, as ``repr`` shows it, at most 80 characters (scrubbed, then cut)."""
    return clip(repr(value), 80, ellipsis="...", one_line=False)


def _one_line(text: str, limit: int = 300, secrets: Sequence[str] = ()) -> str:
    """Text from the server (or about it) on one line, at most ``limit`` characters: scrubbed
    of every secret and ``secrets`` first, then cut (never cut first: a cut key is not found)."""
    return clip(text, limit, extra=secrets, ellipsis="...")


def _decode(payload: bytes) -> Any:
    """A frame's JSON. The fast decoder refuses some valid JSON (integers beyond 64 bits): the
    standard one gets a second look, so such a frame is judged by what it says."""
    try:
        return _loads(payload)
    except ValueError:
        if _loads is json.loads:
            raise
    try:
        return json.loads(payload)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _count_field(data: dict[str, Any], key: str, where: str) -> int | None:
    """A token count from a frame: None when absent, a _BadFrame when it is no count (not a
    whole number from 0 to 2^53, :data:`~.model.MAX_TOKENS`)."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer() and value >= 0:
        value = int(value)  # an integer a decoder read as a float (beyond 64 bits, or 5.0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _BadFrame(f"a stream frame's {where}.{key} is not a count of tokens: {_short(value)}")
    if value > MAX_TOKENS:  # no server makes 2^53 tokens; the statistics would round or overflow
        raise _BadFrame(f"a stream frame's {where}.{key} is not a count of tokens: {_count(value)}, over 2^53")
    return value


def _object(data: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = data.get(key)
    if value is None or isinstance(value, dict):
        return value
    raise _BadFrame(f"a stream frame's {key} is not a JSON object: {_short(value)}")


def _frame_output(route: str, data: dict[str, Any], record: RequestRecord) -> bool:
    """Read one stream frame into the record; True when it carried new output. A frame not in
    the shape SGLang sends raises _BadFrame."""
    if route == "generate":
        meta = _object(data, "meta_info") or {}
        done = _count_field(meta, "completion_tokens", "meta_info")
        prompt = _count_field(meta, "prompt_tokens", "meta_info")
        if prompt is not None:
            record.input_tokens = prompt
        if done is not None:
            new = done > (record.output_tokens or 0)
            record.output_tokens = done
            return new
        return bool(data.get("text"))
    usage = _object(data, "usage")
    if usage is not None:
        done = _count_field(usage, "completion_tokens", "usage")
        prompt = _count_field(usage, "prompt_tokens", "usage")
        if done is not None:
            record.output_tokens = done
        if prompt is not None:
            record.input_tokens = prompt
    choices = data.get("choices")
    if choices is None:
        return False
    if not isinstance(choices, list):
        raise _BadFrame(f"a stream frame's choices is not a JSON array: {_short(choices)}")
    for choice in choices:
        if not isinstance(choice, dict):
            raise _BadFrame(f"a stream frame's choice is not a JSON object: {_short(choice)}")
        if route == "chat":
            delta = _object(choice, "delta") or {}
            if delta.get("content") or delta.get("reasoning_content"):
                return True
        elif choice.get("text"):
            return True
    return False


def _error_text(data: Any, secrets: Sequence[str] = ()) -> str | None:
    if isinstance(data, dict) and data.get("error") is not None:
        error = data["error"]
        return _one_line(str(error.get("message", error) if isinstance(error, dict) else error), secrets=secrets)
    return None


def _count(n: int) -> str:
    """A token count for a message: a number beyond 64 bits is shown by its size."""
    if n.bit_length() <= 64:
        return str(n)
    return f"more than 10^{int((n.bit_length() - 1) * 0.30102999566398)}"


def _count_problem(record: RequestRecord, asked: int, prompt: int) -> str | None:
    """Why the token counts the server reported for a finished request cannot be right, if
    they cannot: then the request is not used as throughput."""
    n, chunks = record.output_tokens, len(record.chunk_times)
    if n is not None and (n > asked or n < chunks):
        why = "" if n > asked else ", fewer than the chunks that carried output (each carries at least one token)"
        return f"the server reported {_count(n)} output tokens for a request that asked for at most {asked} (streamed {chunks} chunks){why}"
    most = 4 * prompt + _PROMPT_SLACK_TOKENS
    if record.input_tokens > most:
        return f"the server reported {_count(record.input_tokens)} prompt tokens for a prompt the client made of {prompt} tokens (at most {most} are plausible)"
    return None


# ---- the level runner (one process) ----------------------------------------------------


@dataclass
class _Share:
    """What one client process runs of a level."""

    route: str
    concurrency: int | None
    rate: float | None
    arrival: str
    requests: int | None
    duration_s: float | None
    seed: int
    first_index: int
    phase_s: float = 0.0  # constant-rate shares start staggered


class _Runner:
    """One event loop's share of a level: sends, reads and times requests, watches itself."""

    def __init__(self, url: str, headers: dict[str, str], spec: LoadSpec) -> None:
        self.url = url.rstrip("/")
        self.headers = dict(headers)  # the wire client adds its own, each header sent once
        self.spec = spec
        self.path = ROUTE_PATHS[spec.route]
        # The auth header values (a bearer token alone: "Bearer" is no secret, and a piece of
        # it at a cut would be scrubbed): an error text echoing one is scrubbed even when the
        # key was never registered as a secret.
        self.secrets: list[str] = []
        for name, value in headers.items():
            if not any(word in name.lower() for word in ("auth", "key", "token", "secret", "cookie")):
                continue
            scheme, _, token = value.strip().partition(" ")
            self.secrets.append(token.strip() if scheme.lower() == "bearer" and token.strip() else value)
        self.t0 = 0.0
        self.progress_done = 0
        self.session: Any = None
        # With duration_s: the perf_counter() reading by which every request has ended.
        self.deadline: float | None = None

    async def open(self) -> None:
        from pytest_sglang.collect.bench.wire import WireClient

        self.session = WireClient(self.url, self.headers)

    async def close(self) -> None:
        if self.session is not None:
            self.session.close()

    def _bound_text(self) -> str:
        duration = self.spec.duration_s or 0.0
        return (
            f"did not finish within the level's {level_bound(duration):g} s bound (duration_s {duration:g} s and {level_grace(duration):g} s to finish): "
            "give the level a longer duration_s or ask for shorter answers"
        )

    async def send(self, record: RequestRecord, body: bytes, asked: int) -> None:
        """Send one request and read its answer into ``record``; ``asked`` is the output length
        it asked for. Every way it can fail ends as one line in ``record.error``."""
        from pytest_sglang.collect.bench.wire import CONNECT_TIMEOUT_S, WireError

        clock, t0 = time.perf_counter, self.t0
        prompt = record.input_tokens

        def sent() -> None:
            record.sent = clock() - t0

        timeout, bounded = self.spec.request_timeout_s, False
        if self.deadline is not None and self.deadline - clock() < timeout:
            timeout, bounded = self.deadline - clock(), True
        try:
            if timeout <= 0:
                raise asyncio.TimeoutError()
            answer = await self.session.request(
                "POST", self.path, body, timeout=timeout, connect_timeout=CONNECT_TIMEOUT_S, max_body=answer_cap(asked), on_send=sent
            )
            record.end = answer.end - t0
            if answer.status != 200:
                record.error = f"HTTP {answer.status}: {_one_line(answer.body()[:_ERROR_BYTES].decode('utf-8', 'replace'), secrets=self.secrets)}"
                return
            media = answer.headers.get("content-type", "")
            if media.split(";", 1)[0].strip().lower() != "text/event-stream":
                start = _one_line(answer.body()[:_ERROR_BYTES].decode("utf-8", "replace"), 120, self.secrets)
                record.error = f"HTTP 200 but not an event stream (Content-Type: {_one_line(media, 80, self.secrets) or 'none'}): {start}"
                return
            self._read_stream(record, answer.pieces)
            if record.error is None:
                record.error = _count_problem(record, asked, prompt) if record.chunk_times else "the stream ended without output"
        except asyncio.TimeoutError:
            record.error = self._bound_text() if bounded else f"no complete answer within {self.spec.request_timeout_s:g} s (request_timeout_s)"
        except WireError as exc:
            record.error = _one_line(str(exc), secrets=self.secrets)
        except asyncio.CancelledError:
            record.error = "cancelled"
            raise
        finally:
            self.progress_done += 1
            if math.isnan(record.sent):
                record.sent = clock() - t0  # never written (no connection): failed at once
            if record.error is not None:
                # A failed request ends too: without an end it would count as in flight for
                # the rest of the level (peak_concurrency).
                if math.isnan(record.end):
                    record.end = clock() - t0
                record.error = scrub(record.error, self.secrets)

    def _read_stream(self, record: RequestRecord, pieces: list[tuple[float, bytes]]) -> None:
        """The server-sent events of a complete answer, each stamped with the arrival time of
        the packet that completed it (parsed after the answer, off the timing path). Linear in
        the answer's size: a line spanning many pieces is gathered once, and only new bytes
        are searched for its end."""
        t0, route = self.t0, self.spec.route
        partial = bytearray()  # the start of a line whose end has not come yet
        for arrived, piece in pieces:
            end = piece.find(b"\n")
            if end < 0:
                partial += piece
                continue
            now, start = arrived - t0, 0
            while end >= 0:
                if partial:
                    partial += piece[start:end]
                    line, partial = bytes(partial), bytearray()
                else:
                    line = piece[start:end]
                if self._line(record, route, line, now):
                    return
                start = end + 1
                end = piece.find(b"\n", start)
            partial += piece[start:]

    def _line(self, record: RequestRecord, route: str, line: bytes, now: float) -> bool:
        """One line of the stream into the record; True when the stream is over for the client
        (its end, or an error)."""
        if not line.startswith(b"data:"):
            return False
        payload = line[5:].strip()
        if payload == b"[DONE]":
            return True
        try:
            data = _decode(payload)
        except ValueError:
            record.error = f"a stream frame is not JSON: {self._frame(payload)}"
            return True
        if not isinstance(data, dict):
            record.error = f"a stream frame is not a JSON object: {self._frame(payload)}"
            return True
        error = _error_text(data, self.secrets)
        if error is not None:
            record.error = error
            return True
        try:
            output = _frame_output(route, data, record)
        except _BadFrame as exc:
            record.error = str(exc)
            return True
        if output:
            if not record.chunk_times:
                record.first_token = now
            record.chunk_times.append(now)
        return False

    def _frame(self, payload: bytes) -> str:
        """A frame's bytes as ``repr`` shows them, at most 80 characters, scrubbed then cut."""
        return clip(repr(payload[:1024]), 80, extra=self.secrets, ellipsis="...", one_line=False)

    async def connect(self, count: int) -> None:
        """``count`` keep-alive connections in the pool before the level's clock starts, each
        within the connect timeout or the time left to the level's bound."""
        from pytest_sglang.collect.bench.wire import CONNECT_TIMEOUT_S

        timeout = CONNECT_TIMEOUT_S if self.deadline is None else min(CONNECT_TIMEOUT_S, self.deadline - time.perf_counter())
        await self.session.connect(max(1, min(count, _MAX_PRECONNECT)), timeout)

    async def warm(self, items: Sequence[tuple[bytes, int, int]]) -> list[str]:
        """Send the warm-up requests; a note when some failed (they are in no figure)."""
        self.t0 = time.perf_counter()
        queue = list(items)
        width = max(1, min(8, len(queue)))
        records: list[RequestRecord] = []

        async def worker() -> None:
            while queue:
                body, n_in, asked = queue.pop()
                record = RequestRecord(-1, 0.0, input_tokens=n_in)
                records.append(record)
                await self.send(record, body, asked)

        await asyncio.gather(*(worker() for _ in range(width)))
        failed = [r.error for r in records if r.error is not None]
        return [f"warm-up: {len(failed)} of {len(records)} requests failed: {failed[0]}"] if failed else []

    async def closed_loop(self, share: _Share, bodies: _Bodies, stop_at: float | None, records: list[RequestRecord]) -> None:
        clock, t0 = time.perf_counter, self.t0
        limit = share.requests
        next_index = 0

        async def worker() -> None:
            nonlocal next_index
            while True:
                now = clock() - t0
                if (limit is not None and next_index >= limit) or (stop_at is not None and now >= stop_at):
                    return
                index = next_index
                next_index += 1
                body, n_in, asked = bodies.get(index)
                record = RequestRecord(share.first_index + index, now, input_tokens=n_in)
                records.append(record)
                await self.send(record, body, asked)

        await asyncio.gather(*(worker() for _ in range(share.concurrency or 1)))

    async def open_loop(self, share: _Share, bodies: _Bodies, stop_at: float | None, records: list[RequestRecord]) -> None:
        clock, t0 = time.perf_counter, self.t0
        rate = share.rate or 1.0
        rng = random.Random(f"{share.seed}:arrivals")
        due = share.phase_s
        tasks: list[asyncio.Task[None]] = []
        index = 0
        while (share.requests is None or index < share.requests) and (stop_at is None or due < stop_at):
            wait = due - (clock() - t0)
            if wait > 0:
                await asyncio.sleep(wait)
            else:  # behind schedule: still let the requests already due start sending
                await asyncio.sleep(0)
            body, n_in, asked = bodies.get(index)
            record = RequestRecord(share.first_index + index, due, input_tokens=n_in)
            records.append(record)
            tasks.append(asyncio.ensure_future(self.send(record, body, asked)))
            index += 1
            due += rng.expovariate(rate) if share.arrival == "poisson" else 1.0 / rate
        await asyncio.gather(*tasks)

    async def watch_loop(self, lags: list[float], stop: asyncio.Event) -> None:
        """Event-loop lag: how late a timer fires. Everything the loop does late (reading a
        chunk, sending a request) is late by about this much."""
        loop = asyncio.get_running_loop()
        interval = 0.005
        while not stop.is_set():
            due = loop.time() + interval
            await asyncio.sleep(interval)
            # A timer wakes on whole milliseconds (epoll), a socket at once: what the loop does
            # for an answer is late by the lag beyond that rounding.
            lags.append(max(0.0, loop.time() - due - _TIMER_ROUNDING_S))


class _Bodies:
    """Request bodies by index (with their prompt and asked output lengths): made ahead when the
    count is known, else in batches ahead of use."""

    def __init__(self, spec: LoadSpec, first_index: int, count: int | None) -> None:
        self.spec, self.first_index = spec, first_index
        self.made = request_items(spec, count if count is not None else 256, first_index=first_index)

    def get(self, index: int) -> tuple[bytes, int, int]:
        if index >= len(self.made):
            self.made += request_items(self.spec, max(256, len(self.made)), first_index=self.first_index + len(self.made))
        return self.made[index]


async def _run_share(
    url: str,
    headers: dict[str, str],
    spec: LoadSpec,
    share: _Share,
    start_wall: float | None,
    warmup: int,
    *,
    watch: _MetricsWatch | None = None,
    hold: list[_Runner] | None = None,
    ticker: _Ticker | None = None,
) -> tuple[list[RequestRecord], ClientFigures, list[str]]:
    """One process's share of a level: its records, its figures of itself, and notes (a
    failed warm-up). With ``duration_s`` the level begins now (or at ``start_wall`` when
    processes share it) and everything in it ends by :func:`level_bound`."""
    runner = _Runner(url, headers, spec)
    send_end: float | None = None
    if spec.duration_s is not None:
        origin = time.perf_counter() if start_wall is None else time.perf_counter() + (start_wall - time.time())
        send_end = origin + spec.duration_s
        runner.deadline = origin + level_bound(spec.duration_s)
    if hold is not None:
        hold.append(runner)
    await runner.open()
    try:
        notes: list[str] = []
        if warmup:
            notes += await runner.warm(request_items(spec, warmup, first_index=10_000_000 + share.first_index))
        bodies = _Bodies(spec, share.first_index, share.requests)
        # Open the level's connections before its clock starts: the time to first token is the
        # server's, not a TCP handshake's (and a burst of N connects is not what a level measures).
        await runner.connect(share.concurrency or _OPEN_LOOP_CONNECTIONS)
        if start_wall is not None:  # processes start together: sleep, then spin the last ms
            while (left := start_wall - time.time()) > 0.002:
                await asyncio.sleep(left - 0.001)
            while time.time() < start_wall:
                pass
        figures = ClientFigures()
        runner.progress_done = 0
        stop = asyncio.Event()
        watcher = asyncio.ensure_future(runner.watch_loop(figures.lags, stop))
        metrics = asyncio.ensure_future(watch.run(stop.is_set)) if watch is not None else None
        progress = asyncio.ensure_future(_tick(ticker, stop)) if ticker is not None and ticker.gen.progress is not None else None
        records: list[RequestRecord] = []
        cpu0 = time.thread_time()
        # Processes share one start instant: one that got here late starts its schedule at that
        # instant all the same, so its lateness shows as send delay instead of vanishing.
        late = max(0.0, time.time() - start_wall) if start_wall is not None else 0.0
        runner.t0 = time.perf_counter() - late
        stop_at = None if send_end is None else send_end - runner.t0
        if share.concurrency is not None:
            await runner.closed_loop(share, bodies, stop_at, records)
        else:
            await runner.open_loop(share, bodies, stop_at, records)
        figures.wall_s = time.perf_counter() - runner.t0
        figures.cpu_s = time.thread_time() - cpu0
        stop.set()
        await watcher
        if metrics is not None:
            await metrics
        if progress is not None:
            await progress
        return records, figures, notes
    finally:
        await runner.close()


async def _tick(ticker: _Ticker, stop: asyncio.Event) -> None:
    while not stop.is_set():
        await asyncio.sleep(0.25)
        ticker.tick()


def _run_loop(main: Any) -> Any:
    """Run a coroutine on a fresh event loop (one place to choose the loop)."""
    return asyncio.run(main)


def _child(url: str, headers: dict[str, str], spec_json: str, share: _Share, start_wall: float, warmup: int) -> tuple[list[RequestRecord], ClientFigures, list[str]]:
    """A client process's part of a level (runs in a spawned process)."""
    spec = LoadSpec.model_validate_json(spec_json)
    return _run_loop(_run_share(url, headers, spec, share, start_wall, warmup))


# ---- the whole run ----------------------------------------------------------------------


def served_model(url: str, headers: dict[str, str], timeout: float = 5.0) -> str | None:
    """The first model ``/v1/models`` lists, or None when the server does not say."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url.rstrip("/") + "/v1/models", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            data = json.loads(resp.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None
    models = data.get("data") if isinstance(data, dict) else None
    if isinstance(models, list) and models and isinstance(models[0], dict) and isinstance(models[0].get("id"), str):
        return str(models[0]["id"])
    return None


def _split(total: int | None, parts: int, i: int) -> int | None:
    if total is None:
        return None
    return total // parts + (1 if i < total % parts else 0)


@dataclass
class Progress:
    """What a progress display is told: one level's state, now and then."""

    level: str
    done: int
    total: int | None
    elapsed_s: float
    finished: bool = False

    def line(self) -> str:
        total = f"/{self.total}" if self.total else ""
        return f"{self.level}: {self.done}{total} requests, {self.elapsed_s:.1f} s ({'done' if self.finished else 'running'})"


class LoadGenerator:
    """Runs a :class:`LoadSpec` against one server URL and returns a :class:`BenchResult`.

    ``headers`` carry the server's auth (they are never shown); ``max_running`` is the target's
    effective max_running_requests, for the /metrics corroboration."""

    def __init__(
        self,
        url: str,
        spec: LoadSpec,
        *,
        headers: dict[str, str] | None = None,
        name: str | None = None,
        max_running: int | None = None,
        progress: Callable[[Progress], None] | None = None,
        progress_interval_s: float = 2.0,
    ) -> None:
        self.url, self.spec = url.rstrip("/"), spec
        self.headers = dict(headers or {})
        self.name = name or self.url
        self.max_running = max_running
        self.progress = progress
        self.progress_interval_s = progress_interval_s

    def levels(self) -> list[tuple[str, _Share]]:
        spec = self.spec
        out: list[tuple[str, _Share]] = []
        first = 0
        for c in spec.concurrency:
            n = spec.level_requests(concurrency=c)
            out.append((f"concurrency={c}", _Share(spec.route, c, None, spec.arrival, n, spec.duration_s, spec.seed, first)))
            first += n or 1_000_000
        for r in spec.rates:
            n = spec.level_requests(rate=r)
            out.append((f"rate={r:g}/s {spec.arrival}", _Share(spec.route, None, r, spec.arrival, n, spec.duration_s, spec.seed, first)))
            first += n or 1_000_000
        return out

    def run(self) -> BenchResult:
        """Run every level in order; safe to call whether or not an event loop is running."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._run()
        box: list[BenchResult | BaseException] = []
        thread = threading.Thread(target=lambda: box.append(self._run_catching()), name="sglang-bench")
        thread.start()
        thread.join()
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    def _run_catching(self) -> BenchResult | BaseException:
        try:
            return self._run()
        except BaseException as exc:  # handed to the caller's thread
            return exc

    def _run(self) -> BenchResult:
        if self.spec.route != "generate" and self.spec.model is None:
            # A server that serves only its own model name refuses any other ("default"
            # included): ask it, as sglang.bench_serving does.
            served = served_model(self.url, self.headers)
            if served is not None:
                self.spec = self.spec.model_copy(update={"model": served})
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        result = BenchResult(target=self.name, route=ROUTE_PATHS[self.spec.route], started=started, settings=self._settings())
        pool: ProcessPoolExecutor | None = None
        if self.spec.processes > 1:
            import multiprocessing

            pool = ProcessPoolExecutor(self.spec.processes, mp_context=multiprocessing.get_context("spawn"))
        try:
            for i, (name, share) in enumerate(self.levels()):
                result.levels.append(self._level(name, share, warmup=self.spec.warmup if i == 0 else 0, pool=pool))
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        return result

    def _settings(self) -> dict[str, object]:
        data = self.spec.model_dump(mode="json", exclude={"limits"})
        return {k: v for k, v in data.items() if v not in (None, [], {})}

    def _level(self, name: str, share: _Share, *, warmup: int, pool: ProcessPoolExecutor | None) -> LevelResult:
        spec = self.spec
        watch = _MetricsWatch(self.url, self.headers, spec.metrics_interval_s) if spec.metrics_interval_s > 0 else None
        ticker = _Ticker(self, name, share.requests)
        if pool is None:
            hold: list[_Runner] = []
            ticker.source = lambda: hold[0].progress_done if hold else 0
            records, figures, notes = _run_loop(_run_share(self.url, self.headers, spec, share, None, warmup, watch=watch, hold=hold, ticker=ticker))
            all_figures = [figures]
        else:
            records, all_figures, notes = self._spread(share, warmup, pool, watch, ticker)
        ticker.stop()
        records.sort(key=lambda r: r.scheduled)
        level = level_result(
            name,
            records,
            mode="concurrency" if share.concurrency else "rate",
            concurrency=share.concurrency,
            rate=share.rate,
            arrival=share.arrival if share.rate else None,
            slo=spec.slo,
            notes=notes,
        )
        level.validity = client_validity(level, all_figures, records, spec.limits, share.rate)
        if watch is not None:
            level.server = watch.summary(self.max_running)
            level.refused += watch.refused
        return level

    def _spread(self, share: _Share, warmup: int, pool: ProcessPoolExecutor, watch: _MetricsWatch | None, ticker: _Ticker) -> tuple[list[RequestRecord], list[ClientFigures], list[str]]:
        """The level split over the pool's processes, all starting at one wall-clock instant;
        the parent watches /metrics meanwhile."""
        n = self.spec.processes
        spec_json = self.spec.model_dump_json()
        start_wall = time.time() + 1.5 + 0.02 * warmup  # time for spawned processes to import and warm up
        futures = []
        for i in range(n):
            concurrency = _split(share.concurrency, n, i)
            if share.concurrency is not None and not concurrency:
                continue
            part = _Share(
                share.route,
                concurrency,
                share.rate / n if share.rate else None,
                share.arrival,
                _split(share.requests, n, i),
                share.duration_s,
                share.seed + i * 7919,
                share.first_index + i * 1_000_000,
                phase_s=(i / share.rate) if share.rate and share.arrival == "constant" else 0.0,
            )
            futures.append(pool.submit(_child, self.url, self.headers, spec_json, part, start_wall, _split(warmup, n, i) or 0))
        done = threading.Event()
        watcher = threading.Thread(target=lambda: asyncio.run(watch.run(done.is_set)), daemon=True) if watch is not None else None
        if watcher is not None:
            watcher.start()
        records: list[RequestRecord] = []
        figures: list[ClientFigures] = []
        notes: list[str] = []
        try:
            pending = set(futures)
            while pending:  # progress from this (the caller's) thread while the processes run
                _, pending = futures_wait(pending, timeout=min(1.0, self.progress_interval_s))
                ticker.tick()
            for future in futures:
                try:
                    part_records, part_figures, part_notes = future.result()
                except BrokenProcessPool as exc:
                    raise SGLangError(
                        "a benchmark client process ended before its share of the level was done; with processes=N a script "
                        'must start the benchmark under `if __name__ == "__main__":` (client processes are spawned and import it)'
                    ) from exc
                records += part_records
                figures.append(part_figures)
                notes += [note for note in part_notes if note not in notes]
        finally:
            done.set()
            if watcher is not None:
                watcher.join(timeout=5)
        return records, figures, notes


class _Ticker:
    """Tells the progress display how a level is going, every few seconds, from the thread
    that runs the level (its event loop, or the parent waiting on client processes): a display
    such as pytest's terminal may only be written from there."""

    def __init__(self, gen: LoadGenerator, level: str, total: int | None) -> None:
        self.gen, self.level, self.total = gen, level, total
        self.source: Callable[[], int] = lambda: 0
        self._started = self._last = time.monotonic()

    def tick(self) -> None:
        now = time.monotonic()
        if self.gen.progress is not None and now - self._last >= self.gen.progress_interval_s:
            self._last = now
            self.gen.progress(Progress(self.level, self.source(), self.total, now - self._started))

    def stop(self) -> None:
        if self.gen.progress is not None:
            self.gen.progress(Progress(self.level, self.total or self.source(), self.total, time.monotonic() - self._started, finished=True))


def run_load(url: str, spec: LoadSpec, **kwargs: Any) -> BenchResult:
    """Run ``spec`` against ``url``: see :class:`LoadGenerator`."""
    return LoadGenerator(url, spec, **kwargs).run()
