"""A minimal HTTP/1.1 client for streamed answers that timestamps bytes as they arrive.

A general-purpose client (aiohttp, httpx) wakes a reader task for every stream chunk, decodes
it and hands it up through several layers before the benchmark can look at the clock. When a
server's decode step sends a chunk to 256 streams at once, those layers run 256 times in a row,
and the last stream's chunk is stamped milliseconds after it arrived: the client distorts what
it measures. Here the stamp is taken in ``data_received`` (the first Python code that sees the
bytes), the only work done there is framing (where the answer ends), and everything else
(server-sent events, JSON) is parsed after the answer is complete.

Keep-alive connections are pooled per target; ``Connection: close`` and errors retire them.

Every request is bounded: ``timeout`` bounds the whole request (a connect included) and ends
in ``asyncio.TimeoutError``; a new connection must be made within ``connect_timeout`` (10 s
by default, :data:`CONNECT_TIMEOUT_S`), else :class:`WireError`; an answer's head is at most
:data:`MAX_HEAD` bytes and its body at most ``max_body`` bytes (:data:`MAX_BODY` by default),
else :class:`WireError`: a server that never stops sending can neither hold the client forever
nor fill its memory.

Each header is sent once: the client's own (Host, User-Agent, Accept, and Content-Type for a
body) are merged with the caller's in one place, names compared without case, the caller's
value winning for its own names; Content-Length (and Transfer-Encoding) are the client's
alone, since it frames the body.
"""

from __future__ import annotations

import asyncio
import math
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from pytest_sglang.base.secrets import clip

MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024 * 1024  # an answer's body, by default (``max_body``)
CONNECT_TIMEOUT_S = 10.0
# The client frames a request body itself: a caller's value for these is never sent.
_FRAMING = frozenset({"content-length", "transfer-encoding"})


class WireError(Exception):
    """The answer could not be had: connection refused or lost, a malformed answer, a timeout."""


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    # The body's bytes (de-chunked) in arrival order, each with the time its packet arrived.
    pieces: list[tuple[float, bytes]] = field(default_factory=list)
    end: float = 0.0  # when the last byte arrived

    def body(self) -> bytes:
        return b"".join(piece for _, piece in self.pieces)


class _Connection(asyncio.Protocol):
    """One keep-alive connection: writes a request, frames the answer, stamps each arrival."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._waiter: asyncio.Future[Answer] | None = None
        self._max_body = MAX_BODY
        self._reset()

    def _reset(self) -> None:
        self._received = 0  # body bytes of this answer so far (framing included)
        self._head: bytearray | None = bytearray()
        self._answer: Answer | None = None
        self._chunked = False
        self._length: int | None = None  # bytes of body left (Content-Length framing)
        self._size_line = bytearray()
        self._data_left = 0  # bytes of the current chunk's data left
        self._crlf_left = 0  # bytes of the CRLF after a chunk's data left
        self._last_chunk = False
        self._keep_alive = True

    # -- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        now = self.clock()
        if self._waiter is None or self._waiter.done():
            self._fail(WireError("the server sent bytes no request asked for"))
            return
        try:
            if self._head is not None:
                self._head += data
                end = self._head.find(b"\r\n\r\n")
                if end < 0:
                    if len(self._head) > MAX_HEAD:
                        raise WireError(f"the answer's header is longer than {MAX_HEAD} bytes")
                    return
                data = bytes(self._head[end + 4 :])
                self._start(bytes(self._head[:end]))
                self._head = None
            self._body(now, data)
        except WireError as exc:
            self._fail(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._waiter is not None and not self._waiter.done():
            if self._answer is not None and self._length is None and not self._chunked:
                self._finish(self.clock())  # framed by the connection's end
            else:
                self._waiter.set_exception(WireError(f"the server closed the connection mid-answer{f' ({exc})' if exc else ''}"))

    # -- a request ----------------------------------------------------------------------

    def request(self, data: bytes, max_body: int = MAX_BODY) -> asyncio.Future[Answer]:
        assert self.transport is not None
        self._reset()
        self._max_body = max_body
        self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return self._waiter

    def _start(self, head: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise WireError(f"not an HTTP answer: {clip(lines[0], 80)!r}")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        self._answer = Answer(int(parts[1]), headers)
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        if not self._chunked and "content-length" in headers:
            try:
                self._length = int(headers["content-length"])
            except ValueError:
                raise WireError(f"a Content-Length that is no number: {clip(headers['content-length'], 40)!r}") from None
        self._keep_alive = headers.get("connection", "").lower() != "close" and parts[0] != "HTTP/1.0"
        if self._length == 0 or self._answer.status in (204, 304):
            self._finish(self.clock())

    def _body(self, now: float, data: bytes) -> None:
        answer = self._answer
        if answer is None or not data:
            return
        self._received += len(data)
        if self._received > self._max_body:
            raise WireError(f"the answer exceeded {_mib(self._max_body)} (the client keeps at most that much of one answer)")
        if not self._chunked:
            if self._length is not None:
                data = data[: self._length]
                self._length -= len(data)
            answer.pieces.append((now, data))
            if self._length == 0:
                self._finish(now)
            return
        pos, n = 0, len(data)
        while pos < n:
            if self._data_left:
                take = min(self._data_left, n - pos)
                answer.pieces.append((now, data[pos : pos + take]))
                self._data_left -= take
                pos += take
                if not self._data_left:
                    self._crlf_left = 2
            elif self._crlf_left:
                take = min(self._crlf_left, n - pos)
                self._crlf_left -= take
                pos += take
                if not self._crlf_left and self._last_chunk:
                    self._finish(now)
                    return
            else:
                end = data.find(b"\n", pos)
                if end < 0:
                    self._size_line += data[pos:]
                    if len(self._size_line) > 1024:
                        raise WireError("a chunk size line longer than 1 KiB")
                    return
                self._size_line += data[pos:end]
                pos = end + 1
                text = bytes(self._size_line).split(b";", 1)[0].strip()
                self._size_line.clear()
                if self._last_chunk:
                    if not text:  # the empty line that ends the (empty) trailer
                        self._finish(now)
                        return
                    continue  # a trailer field
                try:
                    size = int(text, 16)
                except ValueError:
                    raise WireError(f"a chunk size that is no hex number: {clip(repr(text), 24, one_line=False)}") from None
                if size == 0:
                    self._last_chunk = True
                else:
                    self._data_left = size

    def _finish(self, now: float) -> None:
        answer, waiter = self._answer, self._waiter
        if answer is None or waiter is None or waiter.done():
            return
        answer.end = now
        if not self._keep_alive and self.transport is not None:
            self.transport.close()
            self.closed = True
        waiter.set_result(answer)

    def _fail(self, exc: WireError) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


def _mib(size: int) -> str:
    return f"{round(size / 2**20, 1):g} MiB"


def merge_headers(*layers: dict[str, str]) -> dict[str, str]:
    """Headers merged with names compared without case: a later layer's value wins, under its
    own spelling. Each name appears once in the result."""
    merged: dict[str, tuple[str, str]] = {}
    for layer in layers:
        for name, value in layer.items():
            merged[name.strip().lower()] = (name.strip(), str(value))
    return {name: value for name, value in merged.values()}


class WireClient:
    """Requests to one server (``http://`` or ``https://``, optional path prefix) over pooled
    keep-alive connections. Times are ``clock()`` readings (``time.perf_counter`` by default)."""

    def __init__(self, base_url: str, headers: dict[str, str], *, clock: Callable[[], float] = time.perf_counter, verify: bool = True) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise WireError(f"{base_url}: give an http:// or https:// URL")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        self.ssl: ssl.SSLContext | None = None
        if parts.scheme == "https":
            self.ssl = ssl.create_default_context()
            if not verify:
                self.ssl.check_hostname = False
                self.ssl.verify_mode = ssl.CERT_NONE
        host_header = self.host if parts.port is None else f"{self.host}:{parts.port}"
        fixed = merge_headers({"Host": host_header, "User-Agent": "pytest-sglang-bench", "Accept": "*/*"}, headers)
        self.headers = {name: value for name, value in fixed.items() if name.lower() not in _FRAMING}
        self._head = "".join(f"{k}: {v}\r\n" for k, v in self.headers.items())
        has_type = any(name.lower() == "content-type" for name in self.headers)
        self._body_type = "" if has_type else "Content-Type: application/json\r\n"
        self.clock = clock
        self._idle: list[_Connection] = []
        self._all: set[_Connection] = set()

    async def _connection(self, connect_timeout: float, deadline: float | None) -> _Connection:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
        return await self._open(connect_timeout, deadline)

    async def _open(self, connect_timeout: float = CONNECT_TIMEOUT_S, deadline: float | None = None) -> _Connection:
        """A new connection within ``connect_timeout`` (WireError), and before ``deadline`` (a
        ``loop.time()``; asyncio.TimeoutError) when that comes first."""
        loop = asyncio.get_running_loop()
        left = math.inf if deadline is None else deadline - loop.time()
        wait = min(connect_timeout, left)
        if wait <= 0:
            raise asyncio.TimeoutError()
        try:
            _, protocol = await asyncio.wait_for(loop.create_connection(lambda: _Connection(self.clock), self.host, self.port, ssl=self.ssl), wait)
        except asyncio.TimeoutError:  # before OSError: since Python 3.11 it is the builtin TimeoutError, an OSError
            if left <= connect_timeout:
                raise  # the request's own bound came first
            raise WireError(f"could not connect to {self.host}:{self.port} within {connect_timeout:g} s (is the server up and accepting?)") from None
        except OSError as exc:
            raise WireError(f"cannot connect to {self.host}:{self.port}: {exc.strerror or exc}") from None
        self._all.add(protocol)
        return protocol

    def _encode(self, method: str, path: str, body: bytes | None) -> bytes:
        length = f"{self._body_type}Content-Length: {len(body)}\r\n" if body is not None else ""
        return f"{method} {self.prefix}{path} HTTP/1.1\r\n{self._head}{length}\r\n".encode("latin-1") + (body or b"")

    async def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        timeout: float | None = None,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        max_body: int = MAX_BODY,
        on_send: Callable[[], None] | None = None,
    ) -> Answer:
        """One request; ``on_send`` runs just before its bytes are written (after any connect).

        ``timeout`` (seconds, None: none) bounds the whole request, a connect included, and ends
        it with asyncio.TimeoutError; a new connection must be made within ``connect_timeout``
        (WireError); an answer's body longer than ``max_body`` bytes is a WireError."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        conn = await self._connection(connect_timeout, deadline)
        data = self._encode(method, path, body)
        if on_send is not None:
            on_send()
        waiter = conn.request(data, max_body)
        try:
            if deadline is None:
                answer = await waiter
            else:
                answer = await asyncio.wait_for(waiter, max(0.0, deadline - loop.time()))
        except BaseException:
            conn.close()
            raise
        if not conn.closed:
            self._idle.append(conn)
        return answer

    async def connect(self, count: int, timeout: float = CONNECT_TIMEOUT_S) -> None:
        """Open connections until ``count`` are idle in the pool (before a level's clock starts),
        each within ``timeout`` seconds; the ones that fail are left to the requests."""
        want = count - sum(1 for c in self._idle if not c.closed)
        if want <= 0 or timeout <= 0:
            return
        opened = await asyncio.gather(*(self._open(timeout) for _ in range(want)), return_exceptions=True)
        self._idle += [c for c in opened if isinstance(c, _Connection)]

    def close(self) -> None:
        for conn in self._all:
            conn.close()
        self._all.clear()
        self._idle.clear()
