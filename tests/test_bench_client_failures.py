"""The benchmark client against servers that misbehave: its failures are failures, its budgets
are bounds.

Each server here runs on loopback in a thread of its own (its own event loop): a strict
HTTP/1.1 server (aiohttp) for the request's headers, and a small hand-written one for answers
no well-behaved server gives (a 200 that is HTML, frames that are JSON but not objects, token
counts beyond what was asked, a stream that never ends, a frame of 20 MB).
"""

from __future__ import annotations

import asyncio
import json
import math
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_sglang.collect.bench import load as load_module
from pytest_sglang.collect.bench import wire as wire_module
from pytest_sglang.collect.bench.load import LoadSpec, load_spec, run_load
from pytest_sglang.collect.bench.wire import WireClient, WireError, merge_headers
from pytest_sglang.model.bench import BenchResult, LevelResult, RequestRecord

KEY = "sk-client-test-0123456789abcdef"


def quiet(**kwargs: Any) -> LoadSpec:
    kwargs.setdefault("warmup", 0)
    kwargs.setdefault("metrics_interval_s", 0)
    return load_spec(**kwargs)


# ---- a server that answers what a test tells it -------------------------------------------


@dataclass
class Request:
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Answer = Callable[[Request, asyncio.StreamWriter], Awaitable[bool]]  # True: keep the connection


class RawServer:
    """HTTP/1.1 on loopback in a thread with its own event loop; each request is answered by
    ``answer``, which writes whatever it likes (chunked event streams, HTML, nothing)."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[Request] = []
        self.loop = asyncio.new_event_loop()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.port = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def __enter__(self) -> RawServer:
        self._thread.start()
        self.server = asyncio.run_coroutine_threadsafe(asyncio.start_server(self._connection, "127.0.0.1", 0), self.loop).result(10)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *_: Any) -> None:
        async def stop() -> None:
            self.server.close()
            for task in list(self.tasks):
                task.cancel()
            await asyncio.sleep(0)

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                lines = head.split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = [(name.strip().lower(), value.strip()) for name, _, value in (line.partition(":") for line in lines[1:] if line)]
                body = await reader.readexactly(int(dict(headers).get("content-length", "0")))
                request = Request(method, path, headers, body)
                self.requests.append(request)
                keep = await self.answer(request, writer)
                await writer.drain()
                if not keep:
                    return
        except (asyncio.IncompleteReadError, asyncio.CancelledError, ConnectionError):
            pass
        finally:
            writer.close()
            self.tasks.discard(task)


def frame(data: Any) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def stream(writer: asyncio.StreamWriter, frames: list[bytes], *, content_type: str | None = "text/event-stream", delay: float = 0.0) -> bool:
    """An answer of chunked frames, as uvicorn sends SGLang's."""
    kind = f"Content-Type: {content_type}\r\n" if content_type is not None else ""
    writer.write(f"HTTP/1.1 200 OK\r\n{kind}Transfer-Encoding: chunked\r\n\r\n".encode())
    for data in frames:
        writer.write(chunk(data))
        if delay:
            await writer.drain()
            await asyncio.sleep(delay)
    writer.write(b"0\r\n\r\n")
    return True


def asked(request: Request) -> int:
    body = request.json()
    return int(body["sampling_params"]["max_new_tokens"] if "sampling_params" in body else body["max_tokens"])


def generate_frames(request: Request, reported: Callable[[int, int], Any] = lambda i, n: i) -> list[bytes]:
    """SGLang's /generate stream: the whole text so far in every frame, then [DONE]; the
    completion_tokens of frame i (of n) is ``reported(i, n)``."""
    n, prompt = asked(request), len(request.json()["input_ids"])
    frames = [frame({"text": "tok " * i, "meta_info": {"prompt_tokens": prompt, "completion_tokens": reported(i, n)}}) for i in range(1, n + 1)]
    return [*frames, b"data: [DONE]\n\n"]


@contextmanager
def serving(answer: Answer) -> Iterator[RawServer]:
    with RawServer(answer) as server:
        yield server


def one_level(result: BenchResult) -> LevelResult:
    assert len(result.levels) == 1
    return result.levels[0]


# ---- 1. each header once: a strict HTTP/1.1 server ------------------------------------------


@contextmanager
def strict_aiohttp_server(seen: list[list[tuple[str, str]]]) -> Iterator[str]:
    """An aiohttp server streaming SGLang-like /generate frames. It refuses (400) a request that
    names any header twice, whatever aiohttp's own parser lets through."""
    from aiohttp import web

    @web.middleware
    async def once(request: web.Request, handler: Any) -> web.StreamResponse:
        names = [name.decode("latin-1").lower() for name, _ in request.raw_headers]
        seen.append([(name.decode("latin-1"), value.decode("latin-1")) for name, value in request.raw_headers])
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            return web.Response(status=400, text=f"header(s) sent twice: {', '.join(twice)}")
        response: web.StreamResponse = await handler(request)
        return response

    async def generate(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        n = body["sampling_params"]["max_new_tokens"]
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for i in range(1, n + 1):
            await response.write(frame({"text": "tok " * i, "meta_info": {"prompt_tokens": len(body["input_ids"]), "completion_tokens": i}}))
        await response.write(b"data: [DONE]\n\n")
        return response

    app = web.Application(middlewares=[once])
    app.router.add_post("/generate", generate)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def start() -> None:
        await runner.setup()
        await web.SockSite(runner, sock).start()

    asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"authorization": f"Bearer {KEY}", "content-type": "application/json; charset=utf-8", "CONTENT-LENGTH": "999", "user-agent": "my-gate/1.0"},
    ],
    ids=["no-headers", "user-headers"],
)
def test_a_strict_http11_server_completes_every_request(headers: dict[str, str]) -> None:
    """aiohttp refuses a request naming Content-Type twice (400): every benchmark request used to
    be refused. Each header is now sent once, the user's value winning for its own names, and
    the body's length is the client's own (a user's Content-Length would break the framing)."""
    seen: list[list[tuple[str, str]]] = []
    with strict_aiohttp_server(seen) as url:
        result = run_load(url, quiet(concurrency=[2], requests=6, input_len=12, output_len=5, warmup=2), headers=headers)
    level = one_level(result)
    assert (level.requests, level.completed, level.failed, level.errors) == (6, 6, 0, [])
    assert level.output_tokens == 30 and level.input_tokens == 72
    assert len(seen) == 8  # the warm-up too
    for request in seen:
        names = [name.lower() for name, _ in request]
        assert len(names) == len(set(names)), request
        sent = {name.lower(): value for name, value in request}
        assert sent["content-length"] != "999"
        for name, value in headers.items():
            if name.lower() != "content-length":
                assert sent[name.lower()] == value
    if not headers:
        assert sent["content-type"] == "application/json" and sent["user-agent"] == "pytest-sglang-bench"


def test_headers_merge_without_case_and_the_client_frames_the_body() -> None:
    assert merge_headers({"Content-Type": "a", "Accept": "*/*"}, {"content-type": "b"}) == {"content-type": "b", "Accept": "*/*"}
    client = WireClient("http://127.0.0.1:9/prefix", {"HOST": "gpu1", "Transfer-Encoding": "chunked", "content-length": "3", "X-Team": "search"})
    data = client._encode("POST", "/generate", b'{"a":1}')
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /prefix/generate HTTP/1.1" and body == b'{"a":1}'
    names = [line.split(":")[0].lower() for line in lines[1:]]
    assert sorted(names) == ["accept", "content-length", "content-type", "host", "user-agent", "x-team"]
    assert "HOST: gpu1" in lines and "Content-Length: 7" in lines and "Content-Type: application/json" in lines
    get = client._encode("GET", "/metrics", None).decode()
    assert "content-type" not in get.lower() and "content-length" not in get.lower()


# ---- 2. failed answers are failed requests, with one line of text -----------------------------


HTML = b"<html>\n<head><title>Sign in</title></head>\n<body>token " + KEY.encode() + b"</body>\n</html>\n"


@pytest.mark.parametrize(
    ("content_type", "shown"),
    [("text/html; charset=utf-8", "text/html; charset=utf-8"), ("application/json", "application/json"), (None, "none")],
)
def test_a_200_that_is_not_an_event_stream_is_a_failed_request(content_type: str | None, shown: str) -> None:
    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        return await stream(writer, [HTML], content_type=content_type)

    with serving(answer) as server:
        result = run_load(server.url, quiet(concurrency=[2], requests=4, output_len=3), headers={"Authorization": f"Bearer {KEY}"})
    level = one_level(result)
    assert (level.completed, level.failed) == (0, 4)
    assert level.output_throughput == 0.0 and level.ttft.count == 0
    (error,) = level.errors
    assert error.startswith(f"HTTP 200 but not an event stream (Content-Type: {shown}): <html> <head><title>Sign in")
    assert "\n" not in error and KEY not in error and KEY not in result.model_dump_json()  # scrubbed


def test_an_http_error_text_is_one_line() -> None:
    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(HTML) + HTML)
        return True

    with serving(answer) as server:
        level = one_level(run_load(server.url, quiet(concurrency=[1], requests=2, output_len=3), headers={"Authorization": f"Bearer {KEY}"}))
    assert (level.completed, level.failed) == (0, 2)
    assert level.errors == ["HTTP 502: <html> <head><title>Sign in</title></head> <body>token <redacted></body> </html>"]


NOT_OBJECTS = [b"[1,2]", b"5", b"null", b'"text"', b"true"]


@pytest.mark.parametrize("payload", NOT_OBJECTS)
def test_a_frame_that_is_json_but_not_an_object_fails_the_request(payload: bytes) -> None:
    """Such a frame used to end the whole benchmark with an AttributeError."""

    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        good = generate_frames(request)
        return await stream(writer, [good[0], b"data: " + payload + b"\n\n", *good[1:]])

    with serving(answer) as server:
        level = one_level(run_load(server.url, quiet(concurrency=[2], requests=4, output_len=3)))
    assert (level.completed, level.failed) == (0, 4)
    assert level.errors == [f"a stream frame is not a JSON object: {payload!r}"]


BAD_SHAPES = [
    ("generate", {"text": "a", "meta_info": [1, 2]}, "a stream frame's meta_info is not a JSON object: [1, 2]"),
    ("generate", {"text": "a", "meta_info": {"completion_tokens": "3"}}, "a stream frame's meta_info.completion_tokens is not a count of tokens: '3'"),
    ("generate", {"text": "a", "meta_info": {"completion_tokens": True}}, "a stream frame's meta_info.completion_tokens is not a count of tokens: True"),
    ("generate", {"text": "a", "meta_info": {"completion_tokens": -1}}, "a stream frame's meta_info.completion_tokens is not a count of tokens: -1"),
    ("generate", {"text": "a", "meta_info": {"completion_tokens": 1, "prompt_tokens": 1.5}}, "a stream frame's meta_info.prompt_tokens is not a count of tokens: 1.5"),
    ("chat", {"choices": [1]}, "a stream frame's choice is not a JSON object: 1"),
    ("chat", {"choices": {"delta": {"content": "a"}}}, "a stream frame's choices is not a JSON array: {'delta': {'content': 'a'}}"),
    ("chat", {"choices": [{"delta": "a"}]}, "a stream frame's delta is not a JSON object: 'a'"),
    ("completions", {"choices": [], "usage": 7}, "a stream frame's usage is not a JSON object: 7"),
    ("completions", {"choices": [], "usage": {"completion_tokens": [3]}}, "a stream frame's usage.completion_tokens is not a count of tokens: [3]"),
]


def runner_for(route: str) -> load_module._Runner:
    return load_module._Runner("http://127.0.0.1:9", {}, quiet(route=route, concurrency=[1]))


@pytest.mark.parametrize(("route", "data", "error"), BAD_SHAPES)
def test_a_frame_not_in_sglangs_shape_fails_the_request_with_where(route: str, data: Any, error: str) -> None:
    record = RequestRecord(0, 0.0)
    runner_for(route)._read_stream(record, [(1.0, frame(data))])
    assert record.error == error


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["text", "meta_info", "completion_tokens", "prompt_tokens", "choices", "delta", "content", "usage", "error", "message"]), inner, max_size=4),
    max_leaves=12,
)


@given(route=st.sampled_from(["generate", "completions", "chat"]), frames=st.lists(json_values, min_size=1, max_size=4))
@settings(max_examples=300, deadline=None)
def test_no_frame_of_json_raises(route: str, frames: list[Any]) -> None:
    """Whatever JSON a server streams, the request ends with figures or an error, never an
    exception that would end the whole benchmark; and counts it keeps are counts."""
    record = RequestRecord(0, 0.0, input_tokens=5)
    runner_for(route)._read_stream(record, [(1.0, b"".join(frame(f) for f in frames))])
    assert record.error is None or "\n" not in record.error
    if record.error is None:
        assert record.output_tokens is None or (isinstance(record.output_tokens, int) and record.output_tokens >= 0)
        assert isinstance(record.input_tokens, int) and record.input_tokens >= 0


# ---- 3. token counts the request cannot have had ----------------------------------------------


def _reporting(reported: Callable[[int, int], Any]) -> Answer:
    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        return await stream(writer, generate_frames(request, reported))

    return answer


@pytest.mark.parametrize("decoder", ["default", "json"])
def test_more_output_tokens_than_asked_fail_the_request(decoder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """10^12 tokens for max_new_tokens=4 used to make a great throughput and TPOT; a number of
    400 digits used to overflow the statistics. Both are failed requests now, with either JSON
    decoder (orjson reads such a number as a float or refuses it)."""
    if decoder == "json":
        monkeypatch.setattr(load_module, "_loads", json.loads)
    spec = quiet(concurrency=[2], requests=4, output_len=4)
    with serving(_reporting(lambda i, n: i if i < n else 10**12)) as server:
        level = one_level(run_load(server.url, spec))
    assert (level.completed, level.failed, level.output_tokens, level.output_throughput, level.tpot.count) == (0, 4, 0, 0.0, 0)
    assert level.errors == ["the server reported 1000000000000 output tokens for a request that asked for at most 4 (streamed 4 chunks)"]
    with serving(_reporting(lambda i, n: i if i < n else 10**400)) as server:
        result = run_load(server.url, spec)
    level = one_level(result)
    assert (level.completed, level.failed, level.output_throughput) == (0, 4, 0.0)
    # past 2^53 a count is refused as the frame is read (bench.model.MAX_TOKENS), before any arithmetic
    assert level.errors == ["a stream frame's meta_info.completion_tokens is not a count of tokens: more than 10^399, over 2^53"]
    json.loads(result.model_dump_json())  # and the result serialises


def test_an_absurd_prompt_count_fails_the_request_rather_than_overflow() -> None:
    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        frames = [frame({"text": "tok", "meta_info": {"prompt_tokens": 10**400, "completion_tokens": 1}}), b"data: [DONE]\n\n"]
        return await stream(writer, frames)

    with serving(answer) as server:
        level = one_level(run_load(server.url, quiet(concurrency=[1], requests=2, input_len=10, output_len=1)))
    assert (level.completed, level.failed, level.input_throughput) == (0, 2, 0.0)
    assert level.errors == ["a stream frame's meta_info.prompt_tokens is not a count of tokens: more than 10^399, over 2^53"]


def test_fewer_output_tokens_than_chunks_fail_the_request() -> None:
    """Each chunk that carries output carries at least one token: 4 content chunks and a usage
    of 1 token cannot both be true."""

    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        frames = [frame({"choices": [{"delta": {"content": f"w{i} "}}]}) for i in range(4)]
        frames += [frame({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 1}}), b"data: [DONE]\n\n"]
        return await stream(writer, frames)

    with serving(answer) as server:
        level = one_level(run_load(server.url, quiet(route="chat", model="m", concurrency=[1], requests=2, output_len=4)))
    assert (level.completed, level.failed) == (0, 2)
    assert level.errors == [
        "the server reported 1 output tokens for a request that asked for at most 4 (streamed 4 chunks), fewer than the chunks that carried output (each carries at least one token)"
    ]


def test_fewer_tokens_than_asked_but_as_many_as_chunks_are_fine(captured: list[list[RequestRecord]]) -> None:
    """A server that ends early (an EOS it did not ignore) reports what it made: honest counts,
    used as they are."""

    async def short(request: Request, writer: asyncio.StreamWriter) -> bool:
        return await stream(writer, [*generate_frames(request)[:2], b"data: [DONE]\n\n"])

    with serving(short) as server:
        level = one_level(run_load(server.url, quiet(concurrency=[1], requests=3, output_len=6)))
    assert (level.completed, level.failed, level.output_tokens) == (3, 0, 6)
    assert [r.output_tokens for r in captured[0]] == [2, 2, 2]


# ---- 4. a budget is a bound ---------------------------------------------------------------------


async def forever(request: Request, writer: asyncio.StreamWriter) -> bool:
    """A frame every 10 ms, never [DONE], until the client goes."""
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    i = 0
    while True:
        i += 1
        writer.write(chunk(frame({"text": "tok", "meta_info": {"prompt_tokens": 3, "completion_tokens": 1}})))
        await writer.drain()
        await asyncio.sleep(0.01)


def test_a_stream_that_never_ends_is_cut_at_the_levels_bound(captured: list[list[RequestRecord]]) -> None:
    """duration_s used to stop only the sending: requests in flight then ran for
    request_timeout_s (300 s). Now the level ends by duration_s + grace (2 s + 1 s)."""
    assert load_module.level_bound(2.0) == 3.0
    with serving(forever) as server:
        started = time.monotonic()
        level = one_level(run_load(server.url, quiet(concurrency=[3], duration_s=2.0, output_len=4)))
        took = time.monotonic() - started
    assert took < 10.0
    assert (level.requests, level.completed, level.failed) == (3, 0, 3)  # the 3 in flight
    assert level.errors == ["did not finish within the level's 3 s bound (duration_s 2 s and 1 s to finish): give the level a longer duration_s or ask for shorter answers"]
    assert all(r.end < 3.0 + 3.0 for r in captured[0])  # cancelled near the bound, not at 300 s


def test_open_loop_requests_are_cut_at_the_bound_too() -> None:
    with serving(forever) as server:
        started = time.monotonic()
        level = one_level(run_load(server.url, quiet(rates=[4.0], arrival="constant", duration_s=2.0, output_len=4)))
        took = time.monotonic() - started
    assert took < 10.0
    assert level.requests >= 4 and level.completed == 0 and level.failed == level.requests
    assert all("did not finish within the level's 3 s bound" in e for e in level.errors)


def test_the_warm_up_is_inside_the_bound_and_its_failures_are_noted() -> None:
    """Warm-up requests used to be bounded by nothing. They end by the level's bound, and the
    level says they failed (they are in no figure)."""
    with serving(forever) as server:
        started = time.monotonic()
        level = one_level(run_load(server.url, quiet(concurrency=[2], duration_s=2.0, output_len=4, warmup=3)))
        took = time.monotonic() - started
    assert took < 10.0
    assert level.requests == 0  # the warm-up took the whole level
    assert level.notes[0].startswith("warm-up: 3 of 3 requests failed: did not finish within the level's 3 s bound")


def test_a_request_timeout_is_named_as_such() -> None:
    with serving(forever) as server:
        level = one_level(run_load(server.url, quiet(concurrency=[1], requests=1, output_len=4, request_timeout_s=0.5)))
    assert level.errors == ["no complete answer within 0.5 s (request_timeout_s)"]


def test_a_level_within_its_bound_is_untouched(captured: list[list[RequestRecord]]) -> None:
    """Requests that end within the grace complete: the bound cancels only what overruns it."""

    async def slowish(request: Request, writer: asyncio.StreamWriter) -> bool:
        return await stream(writer, generate_frames(request), delay=0.05)

    with serving(slowish) as server:
        level = one_level(run_load(server.url, quiet(concurrency=[2], duration_s=1.0, output_len=4)))
    assert level.requests >= 2 and level.failed == 0 and level.completed == level.requests
    assert all(r.scheduled < 1.0 for r in captured[0])


@contextmanager
def full_accept_queue() -> Iterator[int]:
    """A port whose accept queue is full: a connect to it neither succeeds nor fails."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    held: list[socket.socket] = []
    try:
        for _ in range(16):
            probe = socket.socket()
            probe.settimeout(0.3)
            held.append(probe)
            try:
                probe.connect(("127.0.0.1", port))
            except (TimeoutError, socket.timeout):
                break
        else:
            pytest.skip("this kernel accepts connects beyond a full accept queue")
        yield port
    finally:
        for s in held:
            s.close()
        listener.close()


def test_a_connect_that_hangs_times_out() -> None:
    """Against a full accept queue a connect used to wait for the kernel (minutes)."""

    async def main(port: int) -> str:
        client = WireClient(f"http://127.0.0.1:{port}", {})
        try:
            await client.request("GET", "/", connect_timeout=1.0)
        except WireError as exc:
            return str(exc)
        finally:
            client.close()
        return "connected"

    with full_accept_queue() as port:
        started = time.monotonic()
        error = asyncio.run(main(port))
        assert time.monotonic() - started < 6.0
    assert error == f"could not connect to 127.0.0.1:{port} within 1 s (is the server up and accepting?)"


def test_a_level_against_a_full_accept_queue_fails_its_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire_module, "CONNECT_TIMEOUT_S", 0.5)
    with full_accept_queue() as port:
        started = time.monotonic()
        level = one_level(run_load(f"http://127.0.0.1:{port}", quiet(concurrency=[2], requests=2, output_len=4)))
        assert time.monotonic() - started < 10.0
    assert (level.completed, level.failed) == (0, 2)
    assert level.errors == [f"could not connect to 127.0.0.1:{port} within 0.5 s (is the server up and accepting?)"]


async def firehose(request: Request, writer: asyncio.StreamWriter) -> bool:
    """A frame-less torrent of bytes, as fast as the client takes them."""
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    block = chunk(b": " + b"x" * 65536 + b"\n")
    while True:
        writer.write(block)
        await writer.drain()


def test_an_answer_is_capped_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main(url: str) -> str:
        client = WireClient(url, {})
        try:
            await client.request("POST", "/generate", b"{}", timeout=30, max_body=2 * 2**20)
        except WireError as exc:
            return str(exc)
        finally:
            client.close()
        return "answered"

    with serving(firehose) as server:
        assert asyncio.run(main(server.url)) == "the answer exceeded 2 MiB (the client keeps at most that much of one answer)"
        monkeypatch.setattr(load_module, "_ANSWER_BASE_BYTES", 3 * 2**20)
        level = one_level(run_load(server.url, quiet(concurrency=[1], requests=1, output_len=4)))
    assert level.failed == 1
    cap = load_module.answer_cap(4)
    assert level.errors == [f"the answer exceeded {round(cap / 2**20, 1):g} MiB (the client keeps at most that much of one answer)"]
    # What an answer may hold grows with the square of the length asked: SGLang repeats the text.
    assert load_module.answer_cap(8192) > 2 * 2**30 and load_module.answer_cap(32) < 65 * 2**20


# ---- frames are parsed in linear time --------------------------------------------------------


def test_a_frame_of_20_mb_in_small_pieces_parses_in_linear_time() -> None:
    """``pending += piece`` made a frame spanning n pieces cost n times its size: 20 MB in 1 KiB
    pieces (20,480 of them) took 49 s that way, 0.2 s now (benchmarks/stream_parse.py)."""
    text = "x" * (20 * 2**20)
    data = frame({"text": "a", "meta_info": {"completion_tokens": 1}}) + frame({"text": text, "meta_info": {"prompt_tokens": 7, "completion_tokens": 2}}) + b"data: [DONE]\n\n"
    step = 1024
    pieces = [(float(i), data[pos : pos + step]) for i, pos in enumerate(range(0, len(data), step))]
    record = RequestRecord(0, 0.0)
    runner = runner_for("generate")
    started = time.perf_counter()
    runner._read_stream(record, pieces)
    took = time.perf_counter() - started
    assert took < 10.0
    assert record.error is None and (record.input_tokens, record.output_tokens) == (7, 2)
    # Each frame is stamped with the arrival of the piece that completed it.
    second_end = data.index(b"\n", data.index(b'"text": "xx'))
    assert record.chunk_times == [0.0, float(second_end // step)]


@given(data=st.data())
@settings(max_examples=200, deadline=None)
def test_frames_read_the_same_however_the_bytes_are_split(data: st.DataObject) -> None:
    frames = [
        frame({"text": "a", "meta_info": {"completion_tokens": 1}}),
        b": a comment\n",
        b"event: message\r\n",
        frame({"text": "a b", "meta_info": {"completion_tokens": 2}}).replace(b"\n\n", b"\r\n\r\n"),
        frame({"text": "a b c", "meta_info": {"completion_tokens": 4}}),
        b"data: [DONE]\n\n",
        frame({"text": "after the end", "meta_info": {"completion_tokens": 9}}),
    ]
    stream_bytes = b"".join(frames)
    cuts = sorted(data.draw(st.sets(st.integers(1, len(stream_bytes) - 1), max_size=12)))
    bounds = [0, *cuts, len(stream_bytes)]
    pieces = [(float(i), stream_bytes[a:b]) for i, (a, b) in enumerate(zip(bounds, bounds[1:]))]
    record = RequestRecord(0, 0.0)
    runner_for("generate")._read_stream(record, pieces)

    def arrival(offset: int) -> float:  # the piece holding the byte at offset
        return float(next(i for i, (a, b) in enumerate(zip(bounds, bounds[1:])) if a <= offset < b))

    # Each of the three frames before [DONE] is stamped with the piece that held its line's end.
    starts = [m for m in range(len(stream_bytes)) if stream_bytes.startswith(b"data: {", m)][:3]
    assert record.error is None and record.output_tokens == 4
    assert record.chunk_times == [arrival(stream_bytes.index(b"\n", m)) for m in starts]


def test_no_figure_is_nan_or_overflows_when_every_request_failed() -> None:
    """A level whose requests all failed on counts has zero throughputs, not NaN or an error."""

    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        return await stream(writer, generate_frames(request, lambda i, n: 10**400))

    with serving(answer) as server:
        level = one_level(run_load(server.url, quiet(concurrency=[2], requests=2, output_len=2)))
    figures = [level.request_throughput, level.input_throughput, level.output_throughput, level.total_throughput, level.duration_s]
    assert figures == [0.0] * 5 and not any(math.isnan(f) for f in figures)



def test_client_processes_keep_the_bound_too() -> None:
    """With processes=N the level's clock starts at the common start instant; each process
    cancels what overruns the bound from there."""
    with serving(forever) as server:
        started = time.monotonic()
        level = one_level(run_load(server.url, quiet(concurrency=[4], duration_s=2.0, output_len=4, processes=2)))
        took = time.monotonic() - started
    assert took < 20.0  # the processes' start-up (spawn and import) and a 3 s bound
    assert (level.requests, level.completed, level.failed) == (4, 0, 4)
    assert all("did not finish within the level's 3 s bound" in e for e in level.errors)
