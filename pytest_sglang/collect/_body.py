"""One way to read an HTTP answer: whole, by a deadline, and no larger than a cap.

Every read of an answer's bytes, from its status line to the end of its body, goes through one
socket view (:class:`_PacedSocket`) that lets each ``recv`` wait at most until the request's
deadline: a server that drips a header, a chunk size or a body a byte at a time is cut off when
the deadline passes, not when ``timeout`` has passed with nothing at all arriving. The body is
framed by ``http.client``, as the protocol says: to its ``Content-Length``, to the end of its
chunks, or to the connection's close (HTTP/1.0, ``Connection: close``, no length given), and
:func:`read_body` stops one byte past ``cap``. Where ``http.client`` would guess (a line that is
not a header, a Transfer-Encoding it does not read, a Content-Length that is not one number, a
chunk size such as ``-5``), the answer is refused instead: a guess passes framing off as body.

The pacing is installed through the connection classes of one requests adapter
(:class:`PacedAdapter`): ``http.client`` builds its response object from the connection's
``response_class``, and :class:`_PacedResponse` puts the paced view under the file it reads
from, when the request under way has a deadline (:func:`deadline`)."""

from __future__ import annotations

import http.client
import re
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from pytest_sglang.base.secrets import clip

_DEADLINE: ContextVar[float | None] = ContextVar("pytest_sglang_http_deadline", default=None)
READ_SIZE = 65536
_MAXLINE = 65536  # http.client's own limit on a line
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_DIGITS = re.compile(r"[0-9]{1,20}")


class BodyError(Exception):
    """Why an answer's body could not be read. ``kind`` is ``"deadline"`` (not whole by the
    deadline), ``"cap"`` (larger than the cap), ``"framing"`` (headers or chunks that do not
    say where the body ends, as HTTP says it) or ``"broken"`` (the connection ended early, or
    the encoding cannot be read); ``detail`` says more, from the server's side: it may hold
    what the server sent, so it is scrubbed before anyone sees it."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(kind, detail)
        self.kind = kind
        self.detail = detail


@contextmanager
def deadline(when: float | None) -> Iterator[None]:
    """Answers to requests sent in this block are read by ``when`` (``time.monotonic()``)."""
    token = _DEADLINE.set(when)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


class _PacedSocket:
    """A socket as ``http.client`` reads an answer from it: each ``recv_into`` waits at most
    until the deadline (and no longer than the socket's own timeout); everything else is the
    socket's. The socket's own timeout is put back after each read, for the next request on
    a kept-alive connection."""

    def __init__(self, sock: Any, when: float) -> None:
        self._paced_sock = sock
        self._paced_deadline = when
        self._paced_base = sock.gettimeout()

    def recv_into(self, *args: Any) -> int:
        left = self._paced_deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")  # what the socket itself raises; SocketIO marks itself spent
        base = self._paced_base
        sock = self._paced_sock
        sock.settimeout(left if base is None else min(left, base))
        try:
            return int(sock.recv_into(*args))  # the arguments as given (an SSL socket has its own defaults)
        finally:
            try:
                sock.settimeout(base)
            except OSError:  # closed under us (another thread's close): the read says so itself
                pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._paced_sock, name)


class FramingError(http.client.HTTPException):
    """Chunks that do not frame a body: a size that is not a hexadecimal number, data that
    does not end where its size says."""


class _PacedResponse(http.client.HTTPResponse):
    """``http.client``'s response, reading through a :class:`_PacedSocket` when the request
    under way has a deadline, and reading chunks strictly: ``http.client`` takes ``-5``,
    ``+a`` or ``1_0`` for a size and skips the two bytes after a chunk unread, so a misframed
    answer would pass its framing off as body."""

    def __init__(self, sock: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        when = _DEADLINE.get()
        raw = getattr(self.fp, "raw", None)
        if when is not None and raw is not None and hasattr(raw, "_sock"):
            raw._sock = _PacedSocket(raw._sock, when)

    def _get_chunk_left(self) -> int | None:
        # http.client's, but the end of a chunk must be CRLF (see _read_next_chunk_size)
        chunk_left = self.chunk_left
        if not chunk_left:  # 0: at the end of a chunk; None: before the first
            if chunk_left is not None and self._safe_read(2) != b"\r\n":  # type: ignore[attr-defined]
                self._close_conn()  # type: ignore[attr-defined]
                raise FramingError("chunk data that does not end where its size says")
            chunk_left = self._read_next_chunk_size()
            if chunk_left == 0:
                self._read_and_discard_trailer()  # type: ignore[attr-defined]
                self._close_conn()  # type: ignore[attr-defined]
                chunk_left = None
            self.chunk_left = chunk_left
        return chunk_left

    def _read_next_chunk_size(self) -> int:
        line = self.fp.readline(_MAXLINE + 1)
        if len(line) > _MAXLINE:
            raise http.client.LineTooLong("chunk size")
        if not line:
            raise http.client.IncompleteRead(b"")
        size = line.split(b";", 1)[0].strip(b" \t\r\n")
        if not _HEX.fullmatch(size):
            self._close_conn()  # type: ignore[attr-defined]
            raise FramingError("a chunk size that is not a hexadecimal number")
        return int(size, 16)


class _PacedHTTPConnection(HTTPConnection):
    response_class = _PacedResponse


class _PacedHTTPSConnection(HTTPSConnection):
    response_class = _PacedResponse


class _PacedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _PacedHTTPConnection


class _PacedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _PacedHTTPSConnection


_POOLS = {"http": _PacedHTTPPool, "https": _PacedHTTPSPool}


class PacedAdapter(HTTPAdapter):
    """requests' adapter, its connections (direct or through an HTTP proxy) reading answers
    through :class:`_PacedResponse`."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOLS)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):  # SOCKS pools are their own classes: not paced
            manager.pool_classes_by_scheme = dict(_POOLS)
        return manager


def read_body(raw: Any, *, cap: int, when: float) -> bytes:
    """The whole body of the answer ``raw`` (urllib3's streamed response), at most ``cap``
    bytes as sent and once decoded, read by ``when``; raises :class:`BodyError`.

    On success the connection goes back to the pool if the answer left it open, and is closed
    otherwise; on failure it is closed."""
    answer = getattr(raw, "_fp", None)
    try:
        if not isinstance(answer, http.client.HTTPResponse):
            raise BodyError("broken", "the HTTP library under requests is not the one pytest-sglang reads through")
        reuse = _check_framing(answer)
        data = _read_framed(answer, _decoder(raw.headers.get("Content-Encoding"), cap), cap, when)
    except BaseException:
        raw.close()  # the connection is in an unknown state: never reused
        raw.release_conn()
        raise
    if not answer.isclosed():
        answer.close()  # a HEAD answer, or one with no body: the connection is idle again
    if not reuse:
        raw.close()
    raw.release_conn()
    return data


def _check_framing(answer: http.client.HTTPResponse) -> bool:
    """Refuse headers that do not say plainly where the body ends (RFC 9112 6.3): a line that
    is not a header (``http.client`` ignores it and every header after it), a
    Transfer-Encoding other than ``chunked``, a Content-Length that is not one number.
    Returns whether the connection may be used again (not after both framings at once)."""
    msg = answer.msg
    if msg.defects or msg.get_payload():
        raise BodyError("framing", "a header line that is not 'Name: value'")
    codings = [c.strip().lower() for v in msg.get_all("Transfer-Encoding") or [] for c in str(v).split(",") if c.strip()]
    lengths = [n.strip() for v in msg.get_all("Content-Length") or [] for n in str(v).split(",")]
    if codings:
        if codings != ["chunked"] or not answer.chunked:
            raise BodyError("framing", f"Transfer-Encoding: {clip(', '.join(codings), 60)}, where pytest-sglang reads chunked only")
        return not lengths
    if lengths and (not all(_DIGITS.fullmatch(n) for n in lengths) or len({int(n) for n in lengths}) > 1):
        raise BodyError("framing", "a Content-Length that is not one number")
    return True


def _read_framed(answer: http.client.HTTPResponse, decoder: _Inflater | None, cap: int, when: float) -> bytes:
    """The body as ``http.client`` frames it, a read at a time, never more than one byte past
    ``cap`` as sent nor past it decoded, by ``when``."""
    if answer.length is not None and answer.length > cap:
        raise BodyError("cap", f"its Content-Length is {answer.length}")
    parts: list[bytes] = []
    size = 0  # bytes as sent
    kept = 0  # bytes once decoded
    while True:
        if time.monotonic() >= when:
            raise BodyError("deadline")
        try:
            # read1: what has arrived, one socket read at most (each paced to the deadline)
            piece = answer.read1(min(READ_SIZE, cap + 1 - size))
        except TimeoutError:
            raise BodyError("deadline") from None
        except http.client.IncompleteRead:
            raise BodyError("broken", f"the connection closed {size} bytes into the body, before its last chunk") from None
        except http.client.LineTooLong:
            raise BodyError("framing", "a chunk size line longer than 64 KiB") from None
        except FramingError as exc:
            raise BodyError("framing", str(exc)) from None
        except (OSError, ValueError, http.client.HTTPException) as exc:  # ValueError: a read of a closed file
            raise BodyError("broken", f"{type(exc).__name__}: {exc}") from None
        if not piece:
            break
        size += len(piece)
        if size > cap:
            raise BodyError("cap")
        if decoder is not None:
            piece = decoder.feed(piece, cap - kept)
        parts.append(piece)
        kept += len(piece)
    if answer.length:  # a Content-Length the connection's close fell short of
        raise BodyError("broken", f"the connection closed {size} bytes into a body of {size + answer.length} (its Content-Length)")
    if decoder is not None:
        decoder.finish()
    return b"".join(parts)


def _decoder(encoding: str | None, cap: int) -> _Inflater | None:
    """What undoes the body's Content-Encoding. pytest-sglang asks for none (``identity``); a
    server that compresses anyway is read if it used gzip or deflate, once."""
    codings = [c.strip().lower() for c in (encoding or "").split(",") if c.strip() and c.strip().lower() != "identity"]
    if not codings:
        return None
    if len(codings) == 1 and codings[0] in ("gzip", "x-gzip", "deflate"):
        return _Inflater(codings[0])
    raise BodyError("broken", f"the body is encoded as {clip(', '.join(codings), 60)!r}, which pytest-sglang did not ask for and does not read")


class _Inflater:
    """gzip or deflate, undone as the body arrives, never past the room it is given."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self.fed = False
        self._z = zlib.decompressobj(zlib.MAX_WBITS | 16 if coding != "deflate" else zlib.MAX_WBITS)

    def feed(self, data: bytes, room: int) -> bytes:
        try:
            out = self._z.decompress(data, room + 1)
        except zlib.error as exc:
            if self.coding == "deflate" and not self.fed:
                # "deflate" is zlib-wrapped by the standard, raw by some servers: a wrong
                # header shows at once, and the body is read again from its start as raw
                self.coding = "raw deflate"
                self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                return self.feed(data, room)
            raise BodyError("broken", f"the compressed body is damaged ({exc})") from None
        self.fed = True
        if len(out) > room or self._z.unconsumed_tail:
            raise BodyError("cap", "once decompressed")
        return out

    def finish(self) -> None:
        if not self._z.eof:
            raise BodyError("broken", "the compressed body ends early")
