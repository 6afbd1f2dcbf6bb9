"""The simulator's asyncio HTTP server: one event loop, one task per connection.

A thread per connection spends its time switching threads and waiting for the GIL once a
benchmark holds hundreds of streams open, and its tokens go out late and bunched; here
every wait of the performance model is a timer on one loop. It speaks the same HTTP as the
threaded server (HTTP/1.1 keep-alive, chunked server-sent events, ``Server: uvicorn``) and
answers through the same :class:`~pytest_sglang.simulator.server.Simulator` (any
:class:`~pytest_sglang.simulator.http.Handler`).
"""

from __future__ import annotations

import asyncio
import email.parser
import email.utils
import http.client
import math
import selectors
import socket
import time
from http import HTTPStatus
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pytest_sglang.simulator.engine import Admission, Plan, Sleep, Wait
from pytest_sglang.simulator.http import Handler, Reply, Request, json_reply

T = TypeVar("T")

# The methods the threaded server's handler has a do_* method for; others get 501 there too.
_METHODS = frozenset({"GET", "POST", "PUT", "DELETE", "PATCH"})
_MAX_HEADERS = 100
_LINE_LIMIT = 65536
INVALID_REQUEST = b"Invalid HTTP request received."  # uvicorn's answer to a request it cannot parse
# Above this many unsent bytes a stream waits for its client (asyncio's default high-water mark).
_WRITE_BUFFER_LIMIT = 64 * 1024


def unsupported_method(method: str) -> bytes:
    """The 501 body for a method neither server routes (the threaded server's too)."""
    return f"Unsupported method ({method!r})".encode()


class _BadRequest(Exception):
    """A request that is not HTTP/1.x: answered 400 and the connection closed."""


async def perform(wait: Wait) -> Any:
    """Perform one wait of the performance model on the running loop."""
    loop = asyncio.get_running_loop()
    if isinstance(wait, Sleep):
        delay = wait.until - loop.time()  # the loop's clock is time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        return None
    if isinstance(wait, Admission):
        admitted = loop.create_future()
        # Thread-safe: in-process users may drive the same engine from other threads.
        wait.engine.on_admitted(wait.job, lambda: loop.call_soon_threadsafe(_resolve, admitted))
        await admitted
        return None
    if len(wait.plans) == 1:
        return [await run_async(wait.plans[0])]
    return list(await asyncio.gather(*(run_async(plan) for plan in wait.plans)))


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():  # cancelled when its request went away first
        future.set_result(None)


async def run_async(plan: Plan[T]) -> T:
    """Run a plan to its result, awaiting every wait; closed if cancelled, so the engine
    frees the request's slot."""
    value: Any = None
    try:
        while True:
            try:
                wait = plan.send(value)
            except StopIteration as done:
                return done.value
            value = await perform(wait)
    finally:
        plan.close()


_BaseSelector: type[selectors.BaseSelector] = getattr(selectors, "EpollSelector", selectors.DefaultSelector)


class _PreciseSelector(_BaseSelector):  # type: ignore[valid-type,misc]
    """A selector that wakes when asked, not up to a millisecond later.

    epoll (and poll) take their timeout in whole milliseconds, rounded up, so a timer due in
    1.05 ms fires after 2: every modelled step would be late by up to a millisecond. Here the
    whole milliseconds are waited for in epoll and the rest, when nothing became ready, in
    a sub-millisecond sleep. I/O arriving during that sleep waits for it: less than the
    millisecond a timer would otherwise lose, and only when the loop has nothing else to do.
    """

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None or timeout <= 0:
            return super().select(timeout)
        deadline = time.monotonic() + timeout
        ready = super().select(math.floor(timeout * 1000) / 1000)
        if ready:
            return ready
        remaining = deadline - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)
        return super().select(0)


class Waker:
    """Wakes a selector or an event loop at once, from any thread or a signal handler:
    :meth:`wake` writes a byte to a socket pair, whose :attr:`reader` becomes readable."""

    def __init__(self) -> None:
        self.reader, self._writer = socket.socketpair()
        self._writer.setblocking(False)

    def wake(self) -> None:
        try:
            self._writer.send(b"\0")
        except OSError:  # already closed, or a wake-up is pending anyway
            pass

    def close(self) -> None:
        self.reader.close()
        self._writer.close()


def new_event_loop() -> asyncio.AbstractEventLoop:
    """An event loop whose timers fire on time (see :class:`_PreciseSelector`)."""
    return asyncio.SelectorEventLoop(_PreciseSelector())


class _Date:
    """The Date header, formatted once a second rather than once a response."""

    def __init__(self) -> None:
        self._second = -1
        self._text = ""

    def __str__(self) -> str:
        now = int(time.time())
        if now != self._second:
            self._second, self._text = now, email.utils.formatdate(now, usegmt=True)
        return self._text


class AsyncHTTPServer:
    """Serves ``simulator`` on an already listening socket until :meth:`serve` is cancelled
    or ``stop`` resolves."""

    def __init__(self, sock: socket.socket, simulator: Handler) -> None:
        self._sock = sock
        self._simulator = simulator
        self._connections: set[asyncio.Task[None]] = set()
        self._date = _Date()

    async def serve(self, stop: asyncio.Future[None]) -> None:
        server = await asyncio.start_server(self._connection, sock=self._sock, limit=_LINE_LIMIT)
        try:
            await stop
        finally:
            server.close()
            await self._hang_up()
            await server.wait_closed()

    async def _hang_up(self) -> None:
        """End every connection, as a stopping server does; their streams free their slots."""
        tasks = list(self._connections)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while await self._one_request(reader, writer):
                pass
        except _BadRequest:
            self._write_head(writer, 400, "text/plain; charset=utf-8", INVALID_REQUEST)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # clients hanging up mid-request or mid-stream is normal under load
        except asyncio.CancelledError:
            # The server is stopping. Ending normally: asyncio (3.11) reports a cancelled
            # connection task as an error in the log.
            pass
        finally:
            self._connections.discard(task)
            writer.close()

    async def _one_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Read, answer and send one request; whether the connection stays open."""
        try:
            line = await reader.readline()
        except ValueError:  # longer than the line limit
            raise _BadRequest from None
        if not line:
            return False
        method, target, version = _request_line(line)
        headers = await _headers(reader)
        keep_alive = _keeps_alive(version, headers.get("Connection", ""))
        if method not in _METHODS:
            body = unsupported_method(method)
            await self._send_body(writer, 501, "text/plain; charset=utf-8", body)
            return keep_alive
        if version != "HTTP/1.0" and headers.get("Expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # curl waits a second for it before a large body
        request_or_refusal = await self._read_request(reader, method, target, headers)
        if not isinstance(request_or_refusal, tuple):
            await self._send(writer, request_or_refusal)
            return False  # the body was not read, so the connection cannot be reused
        reply = self._simulator.handle(request_or_refusal[0])
        await self._send(writer, reply)
        return keep_alive

    async def _read_request(
        self, reader: asyncio.StreamReader, method: str, target: str, headers: http.client.HTTPMessage
    ) -> tuple[Request] | Reply:
        if "Transfer-Encoding" in headers:
            return json_reply({"detail": "Length Required"}, 411)
        try:
            length = int(headers.get("Content-Length") or 0)
        except ValueError:
            return json_reply({"detail": "Invalid Content-Length"}, 400)
        body = await reader.readexactly(length) if length > 0 else b""
        return (Request(method, urlsplit(target).path, headers, body),)

    async def _send(self, writer: asyncio.StreamWriter, reply: Reply) -> None:
        if reply.pending is not None:
            reply = await run_async(reply.pending)
        if reply.stream is None:
            await self._send_body(writer, reply.status, reply.content_type, reply.body)
            return
        stream = reply.stream
        loop = asyncio.get_running_loop()
        # Frames produced together leave in one write: a loopback send costs tens of
        # microseconds, and a chat stream ends with three frames and the terminator at once.
        ready = [self._head(reply.status, reply.content_type, None)]
        try:
            # The per-frame path, run thousands of times a second under load: sleeps are timer
            # futures awaited here, and drain() only when the client reads slower than we write.
            for frame in stream:
                if isinstance(frame, bytes):
                    ready.append(b"%x\r\n%s\r\n" % (len(frame), frame))
                    continue
                if ready:
                    await _write(writer, ready)
                    ready = []
                if isinstance(frame, Sleep):
                    if frame.until > loop.time():
                        woken: asyncio.Future[None] = loop.create_future()
                        timer = loop.call_at(frame.until, _resolve, woken)
                        try:
                            await woken
                        finally:
                            timer.cancel()
                else:
                    await perform(frame)
            ready.append(b"0\r\n\r\n")
            await _write(writer, ready)
        finally:
            stream.close()  # a client that left early frees its running slot now

    async def _send_body(self, writer: asyncio.StreamWriter, status: int, content_type: str, body: bytes) -> None:
        self._write_head(writer, status, content_type, body)
        await writer.drain()

    def _write_head(self, writer: asyncio.StreamWriter, status: int, content_type: str, body: bytes | None) -> None:
        writer.write(self._head(status, content_type, body))

    def _head(self, status: int, content_type: str, body: bytes | None) -> bytes:
        """Status line and headers as the threaded server's handler sends them, and the body
        when there is one (``None``: a chunked stream follows)."""
        head = [
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
            "Server: uvicorn",
            f"Date: {self._date}",
            f"Content-Type: {content_type}",
        ]
        if body is None:
            head += ["Cache-Control: no-cache", "Transfer-Encoding: chunked"]
        else:
            head.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b"")


async def _write(writer: asyncio.StreamWriter, parts: list[bytes]) -> None:
    """Send ``parts`` in one write; raises once the client has gone."""
    transport = writer.transport
    if transport.is_closing():
        raise ConnectionResetError("the client has gone")
    transport.write(b"".join(parts))
    if transport.get_write_buffer_size() > _WRITE_BUFFER_LIMIT:
        await writer.drain()


def _request_line(line: bytes) -> tuple[str, str, str]:
    parts = line.decode("iso-8859-1").rstrip("\r\n").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest
    return parts[0], parts[1], parts[2]


async def _headers(reader: asyncio.StreamReader) -> http.client.HTTPMessage:
    lines: list[bytes] = []
    while True:
        try:
            line = await reader.readline()
        except ValueError:
            raise _BadRequest from None
        if line in (b"\r\n", b"\n", b""):
            break
        lines.append(line)
        if len(lines) > _MAX_HEADERS:
            raise _BadRequest
    text = b"".join(lines).decode("iso-8859-1")
    return email.parser.Parser(_class=http.client.HTTPMessage).parsestr(text)


def _keeps_alive(version: str, connection: str) -> bool:
    """HTTP/1.1 keeps the connection unless told to close; HTTP/1.0 only when asked to keep it."""
    token = connection.strip().lower()
    if token == "close":
        return False
    return version != "HTTP/1.0" or token == "keep-alive"
