"""Fuzzing the HTTP surface: a loopback server answers Hypothesis-generated hostile bytes
(odd status lines; duplicated, huge, missing or wrong headers; Content-Length shorter or longer
than the body; chunked bodies with bad sizes; bodies that are not JSON or nest deep; the api key
echoed at any offset; the connection closed or reset mid-answer), and whatever comes back the
client raises only the package's own errors, each one line, within a bounded time, and never
shows the api key or an 8-character piece of it.

A fixed set of examples runs by default (derandomized, so CI cannot fail by chance);
``HTTP_FUZZ_EXAMPLES=5000 pytest tests/test_fuzz_http.py`` searches deeper, at random."""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_http_read_path import RawServer, no_piece_of

from pytest_sglang.base.errors import SGLangError
from pytest_sglang.collect.http import HttpClient, collect_http

KEY = "sk-FuZz-7Qx9-SECRETkey-Wv3Lm8Np"
TIMEOUT = 2.0
# A whole collection is at most 4 endpoints x 2 paths x 2 tries, each within TIMEOUT: far less
# in practice (every answer here ends with the connection's close).
BOUND = 60.0

EXAMPLES = int(os.environ.get("HTTP_FUZZ_EXAMPLES", "100"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize="HTTP_FUZZ_EXAMPLES" not in os.environ,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


@dataclass
class Script:
    wire: bytes = b""
    reset: bool = False  # end with a TCP reset instead of a close


class Scripted:
    """The server's current answer, the same to every request, then the connection ends."""

    def __init__(self) -> None:
        self.script = Script()

    def __call__(self, head: bytes, conn: socket.socket) -> bool:
        script = self.script
        conn.sendall(script.wire)
        if script.reset:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()
        return False


@pytest.fixture(scope="module")
def fuzz_server() -> Iterator[tuple[RawServer, Scripted]]:
    scripted = Scripted()
    server = RawServer(scripted)
    yield server, scripted
    server.close()


# ---- what a hostile server says ----------------------------------------------------------------

line_text = st.binary(max_size=60).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))
status_lines = st.one_of(
    st.sampled_from(
        [
            b"HTTP/1.1 200 OK",
            b"HTTP/1.0 200 OK",
            b"HTTP/1.1 404 Not Found",
            b"HTTP/1.1 500 Internal Server Error",
            b"HTTP/1.1 401 Unauthorized",
            b"HTTP/1.1 204 No Content",
            b"HTTP/1.1 304 Not Modified",
            b"HTTP/1.1 302 Found",
            b"HTTP/1.1 100 Continue",
            b"HTTP/1.1 200",
            b"HTTP/1.1 2000 OK",
            b"HTTP/2 200 OK",
            b"HTTP/1.1 -1 What",
            b"",
            b"SSH-2.0-OpenSSH_9.6",
            b"HTTP/1.1 200 " + KEY.encode(),
            b"HTTP/1.1 500 " + b"x" * 70_000,
        ]
    ),
    st.builds(lambda code, reason: b"HTTP/1.1 %d %s" % (code, reason), st.integers(0, 1000), line_text),
)

header_names = st.sampled_from(
    [
        b"Content-Type",
        b"Content-Length",
        b"Transfer-Encoding",
        b"Connection",
        b"Content-Encoding",
        b"Location",
        b"Set-Cookie",
        b"X-Echo",
        b"Bad Header",
        b"",
    ]
)
header_values = st.one_of(
    st.sampled_from(
        [
            b"application/json",
            b"text/plain; charset=utf-16",
            b"text/html; charset=no-such-charset",
            b"chunked",
            b"gzip, chunked",
            b"close",
            b"keep-alive",
            b"gzip",
            b"deflate",
            b"br",
            b"identity",
            b"0",
            b"-1",
            b"99999999999999999999",
            b"1, 2",
            b"/get_server_info",
            b"http://[::1/x",
            b"http://127.0.0.1:notaport/",
            b"http://other.example.com/" + KEY.encode(),
            b"https://" + KEY.encode() + b"/",
            b"Bearer " + KEY.encode(),
            b"a" * 70_000,
            KEY.encode() + b"=1; Path=/",
        ]
    ),
    st.integers(-5, 10**6).map(lambda n: str(n).encode()),
    line_text,
)
headers = st.lists(st.tuples(header_names, header_values), max_size=6)
many_headers = st.sampled_from([0, 0, 0, 0, 150])


def echo(pad: int, tail: bytes) -> bytes:
    return b"e" * pad + b" Authorization: Bearer " + KEY.encode() + b" " + tail


bodies = st.one_of(
    st.just(json.dumps({"version": "0.5.23", "model_path": "m", "api_key": KEY}).encode()),
    st.builds(lambda n: json.dumps({"version": "0.5.23", "pad": "p" * n}).encode(), st.integers(0, 200_000)),
    st.builds(echo, st.integers(0, 200), line_text),
    st.builds(lambda n: b"[" * n + b"]" * n, st.sampled_from([1, 70, 500, 100_000])),
    st.builds(lambda n: b'{"a":' * n + b"1" + b"}" * n, st.integers(60, 3000)),
    st.builds(lambda pad: json.dumps({"detail": "x" * pad + KEY}).encode(), st.integers(0, 150)),
    st.binary(max_size=300),
    st.just(b"<html>" + KEY.encode() + b"</html>"),
)
framings = st.sampled_from(["none", "exact", "short", "long", "garbage", "dup", "chunked", "chunked-bad-size", "chunked-no-end", "chunked-and-length"])
bad_sizes = st.sampled_from([b"zz", b"-5", b"ffffffffffffffffffff", b"1_0", b" 10 ", b"", b"10;" + KEY.encode(), b"0" * 70_000, b"+a"])


@st.composite
def answers(draw: st.DrawFn) -> Script:
    body = draw(bodies)
    framing = draw(framings)
    head = [draw(status_lines)]
    head += [name + b": " + value for name, value in draw(headers)]
    head += [b"X-Many-%d: y" % i for i in range(draw(many_headers))]
    if framing == "exact":
        head.append(b"Content-Length: %d" % len(body))
    elif framing == "short":
        head.append(b"Content-Length: %d" % draw(st.integers(0, max(0, len(body) - 1))))
    elif framing == "long":
        head.append(b"Content-Length: %d" % (len(body) + draw(st.integers(1, 10**9))))
    elif framing == "garbage":
        head.append(b"Content-Length: " + draw(st.sampled_from([b"ten", b"1e3", b"0x10", b"", b" 12 ", KEY.encode()])))
    elif framing == "dup":
        head += [b"Content-Length: %d" % len(body), b"Content-Length: %d" % (len(body) + 1)]
    elif framing.startswith("chunked"):
        head.append(b"Transfer-Encoding: chunked")
        if framing == "chunked-and-length":
            head.append(b"Content-Length: %d" % len(body))
        cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=4)))
        pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)]) if b > a]
        body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces)
        if framing == "chunked-bad-size":
            body += draw(bad_sizes) + b"\r\n" + draw(line_text) + b"\r\n"
        if framing != "chunked-no-end":
            body += b"0\r\n\r\n"
    wire = b"\r\n".join(head) + b"\r\n\r\n" + body
    cut = draw(st.one_of(st.none(), st.integers(0, len(wire))))  # the connection ends mid-answer
    if cut is not None:
        wire = wire[:cut]
    return Script(wire=wire, reset=draw(st.booleans()))


# ---- the property ---------------------------------------------------------------------------------


def safe(text: str) -> None:
    assert len(text.splitlines()) <= 1, text
    assert KEY not in text
    no_piece_of(KEY, text)


@FUZZ
@given(script=answers())
def test_whatever_a_server_answers_the_client_fails_only_in_one_safe_line(fuzz_server: tuple[RawServer, Scripted], script: Script) -> None:
    server, scripted = fuzz_server
    scripted.script = script
    client = HttpClient(server.url, api_key=KEY, timeout=TIMEOUT, retries=1)
    texts: list[str] = []
    start = time.monotonic()
    try:
        try:
            facts = collect_http(client, target=server.url)
            texts += [endpoint.error for endpoint in facts.endpoints.values() if endpoint.error]
        except SGLangError as exc:
            texts.append(str(exc))
            assert str(exc)
        try:
            client.get("/metrics")
        except SGLangError as exc:
            texts.append(str(exc))
    finally:
        client.close()
    elapsed = time.monotonic() - start
    assert elapsed < BOUND, elapsed
    for text in texts:
        safe(text)
