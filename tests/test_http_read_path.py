"""The one read path of :class:`pytest_sglang.collect.http.HttpClient`: every answer is read
whole as HTTP frames it (Content-Length, chunks, or the connection's close; HTTP/1.0 and
``Connection: close`` as keep-alive), within the request's deadline for the whole answer (not
per socket read), never past the cap for its endpoint, and any text made from what a server
sent is scrubbed whole before it is cut.

Every server here is on loopback: ``python -m http.server``'s handler (HTTP/1.0), hand-written
servers that write exactly the bytes a test names, and the bundled simulator."""

from __future__ import annotations

import functools
import gzip
import json
import socket
import ssl
import subprocess
import sys
import textwrap
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pytest_sglang.base.errors import NotReadyError, SGLangError, TargetError
from pytest_sglang.collect import _body
from pytest_sglang.collect.http import BODY_CAPS, CONFIG_BODY, HttpClient, collect_http
from pytest_sglang.simulator.launcher import SimProcess, start_simulator

KEY = "sk-MY-SECRET-KEY-0123456789abcdef"
METRICS_CAP = BODY_CAPS["/metrics"]
LINE = b'sglang:num_running_reqs{model_name="m"} 0.0\n'


# ---- servers ---------------------------------------------------------------------------------


Answer = Callable[[bytes, socket.socket], bool]


class RawServer:
    """A loopback server that answers each request with whatever ``answer(head, conn)`` writes
    on the connection; ``answer`` returns True to keep the connection for another request.
    Counts connections and records each request's head."""

    def __init__(self, answer: Answer, tls: ssl.SSLContext | None = None) -> None:
        self.answer = answer
        self.tls = tls
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self.heads: list[bytes] = []
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffer = b""
        try:
            if self.tls is not None:
                conn.settimeout(10)
                conn = self.tls.wrap_socket(conn, server_side=True)
                conn.settimeout(None)
            while not self.stop.is_set():
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                self.heads.append(head)
                if not self.answer(head, conn):
                    return
        except OSError:
            pass  # the client gave up first
        finally:
            try:
                conn.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        self.stop.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


@pytest.fixture
def raw_server() -> Iterator[Callable[[Answer], RawServer]]:
    servers: list[RawServer] = []

    def make(answer: Answer) -> RawServer:
        servers.append(RawServer(answer))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, str]:
    """A server TLS context for 127.0.0.1, and the path of its (self-signed) certificate."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    return context, str(folder / "cert.pem")


def path_of(head: bytes) -> str:
    return head.split(b"\r\n", 1)[0].split(b" ")[1].decode()


def one_line(message: str) -> None:
    assert message and len(message.splitlines()) == 1, message


def no_piece_of(secret: str, text: str, size: int = 8) -> None:
    pieces = {secret[i : i + size] for i in range(len(secret) - size + 1)}
    assert not [p for p in pieces if p in text], text


@pytest.fixture(scope="module")
def simulator() -> Iterator[SimProcess]:
    sim = start_simulator("qwen35-122b-a10b-4xrtx6000-baseline")
    yield sim
    sim.stop()


@pytest.fixture
def http10_server(tmp_path: Path, real_server_info: dict, real_model_info: dict) -> Iterator[str]:
    """``python -m http.server``'s handler (HTTP/1.0: it closes the connection after each
    answer) serving SGLang's answers as files."""
    (tmp_path / "server_info").write_text(json.dumps(real_server_info))
    (tmp_path / "model_info").write_text(json.dumps(real_model_info))
    (tmp_path / "big").write_bytes(bytes(range(256)) * 4096)  # 1 MiB: many socket reads

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    assert Quiet.protocol_version == "HTTP/1.0"
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(tmp_path)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


# ---- 1. every framing, every connection policy ----------------------------------------------------


def test_an_http_1_0_server_is_read_whole_404s_included(http10_server: str, real_server_info: dict, tmp_path: Path) -> None:
    """The regression: every read of a server that closes after answering failed with EBADF."""
    client = HttpClient(http10_server, timeout=10)
    info = client.get("/server_info")
    assert info.raw.version == 10 and info.status_code == 200
    assert info.json() == real_server_info
    missing = client.get("/v1/loads")
    assert missing.status_code == 404 and b"Error response" in missing.content
    assert client.get("/big").content == (tmp_path / "big").read_bytes()
    facts = collect_http(client, target=http10_server)
    assert facts.endpoints["server_info"].body["version"] == real_server_info["version"]
    assert facts.endpoints["loads"].status == 404
    with pytest.raises(NotReadyError, match=r"was not ready within 0.5s \(`wait_ready`\); last: /health answered 404$"):
        client.wait_ready(0.5)  # no /health file here: not ready, and every answer read
    client.close()


def test_wait_ready_reads_an_http_1_0_health(http10_server: str, tmp_path: Path) -> None:
    (tmp_path / "health").write_text("")
    client = HttpClient(http10_server, timeout=5)
    client.wait_ready(5)
    client.close()


def close_answer(body: bytes, *, length: bool, status: bytes = b"200 OK") -> Answer:
    def answer(head: bytes, conn: socket.socket) -> bool:
        size = b"Content-Length: %d\r\n" % len(body) if length else b""
        conn.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nConnection: close\r\n" + size + b"\r\n")
        for i in range(0, len(body), 50_000):  # in pieces, as a real server writes
            conn.sendall(body[i : i + 50_000])
        return False

    return answer


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "to-close"])
@pytest.mark.parametrize("size", [0, 17, 300_000])
def test_an_http_1_1_server_that_closes_after_answering_is_read_whole(raw_server, length: bool, size: int) -> None:
    body = json.dumps({"version": "0.5.23", "pad": "x" * size}).encode() if size else b""
    server = raw_server(close_answer(body, length=length))
    client = HttpClient(server.url, timeout=10)
    for path in ("/server_info", "/server_info"):  # and again, on a new connection
        response = client.get(path)
        assert response.status_code == 200 and response.content == body
    assert server.connections == 2
    not_found = raw_server(close_answer(b'{"detail":"Not Found"}', length=length, status=b"404 Not Found"))
    assert HttpClient(not_found.url, timeout=10).get("/server_info").status_code == 404


def chunked_answer(parts: list[bytes], *, trailer: bytes = b"", keep: bool = True) -> Answer:
    def answer(head: bytes, conn: socket.socket) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        for i, part in enumerate(parts):
            extension = b";note=x" if i % 2 else b""
            conn.sendall(b"%x%s\r\n%s\r\n" % (len(part), extension, part))
        conn.sendall(b"0\r\n" + trailer + b"\r\n")
        return keep

    return answer


def test_a_chunked_answer_is_read_to_its_last_chunk_and_the_connection_kept(raw_server) -> None:
    body = json.dumps({"version": "0.5.23", "pad": "y" * 200_000}).encode()
    parts = [body[i : i + 70_001] for i in range(0, len(body), 70_001)]
    server = raw_server(chunked_answer(parts, trailer=b"X-Checksum: 1\r\n"))
    client = HttpClient(server.url, timeout=10)
    for _ in range(3):
        assert client.get("/server_info").content == body
    assert server.connections == 1, "a kept-alive connection is reused"
    assert b"accept-encoding: identity" in server.heads[0].lower()
    closing = raw_server(chunked_answer(parts, keep=False))
    assert HttpClient(closing.url, timeout=10).get("/server_info").content == body


def test_keep_alive_with_content_length_reuses_one_connection(raw_server) -> None:
    def answer(head: bytes, conn: socket.socket) -> bool:
        body = json.dumps({"path": path_of(head)}).encode()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        return True

    server = raw_server(answer)
    client = HttpClient(server.url, timeout=10)
    assert [client.get(p).json()["path"] for p in ("/a", "/b", "/c")] == ["/a", "/b", "/c"]
    assert client.request("HEAD", "/d").content == b""
    assert client.get("/e").json() == {"path": "/e"}, "the connection is usable after a HEAD"
    assert server.connections == 1


@pytest.mark.parametrize("framing", ["content-length", "to-close", "chunked"])
def test_https_answers_are_read_through_the_same_path(tls: tuple[ssl.SSLContext, str], framing: str) -> None:
    context, cert = tls
    body = json.dumps({"version": "0.5.23", "pad": "t" * 150_000}).encode()
    if framing == "chunked":
        answer = chunked_answer([body[:70_000], body[70_000:]])
    else:
        answer = close_answer(body, length=framing == "content-length")
    server = RawServer(answer, tls=context)
    try:
        client = HttpClient(server.url, timeout=10, verify=cert)
        assert client.get("/server_info").content == body
        assert client.get("/server_info").content == body
        assert server.connections == (1 if framing == "chunked" else 2)
    finally:
        server.close()


def test_an_https_drip_is_cut_at_the_deadline(tls: tuple[ssl.SSLContext, str]) -> None:
    context, cert = tls
    server = RawServer(drip("chunk-size"), tls=context)
    try:
        start = time.monotonic()
        with pytest.raises(TargetError, match=r"within 1.5s: raise `timeout`"):
            HttpClient(server.url, timeout=1.5, verify=cert, retries=0).get("/server_info")
        assert time.monotonic() - start < 15
    finally:
        server.close()


def test_the_simulator_is_read_through_the_same_path(simulator: SimProcess) -> None:
    client = HttpClient(simulator.url, timeout=10)
    metrics = client.get("/metrics")
    assert metrics.status_code == 200 and b"sglang:num_running_reqs" in metrics.content
    facts = collect_http(client, target="sim")
    assert facts.endpoints["server_info"].ok and facts.endpoints["model_info"].ok
    assert client.get("/no-such-path").status_code == 404
    client.close()


def test_a_gzip_body_sent_anyway_is_read_and_a_bomb_is_cut_at_the_cap(raw_server) -> None:
    body = json.dumps({"version": "0.5.23"}).encode()
    bomb = gzip.compress(b"0" * (CONFIG_BODY + 1024))

    def answer(head: bytes, conn: socket.socket) -> bool:
        data = bomb if path_of(head) == "/model_info" else gzip.compress(body)
        if path_of(head) == "/get_model_info":
            data = zlib.compress(body)[2:-4]  # raw deflate, as some servers send "deflate"
        coding = b"deflate" if path_of(head) == "/get_model_info" else b"gzip"
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: %d\r\n\r\n%s" % (coding, len(data), data))
        return True

    server = raw_server(answer)
    client = HttpClient(server.url, timeout=10)
    assert client.get("/server_info").content == body
    assert client.get("/get_model_info").content == body
    with pytest.raises(TargetError) as info:
        client.get("/model_info")
    assert str(info.value) == f"{server.url}/model_info answered more than 4 MiB (the cap for /model_info): this is not an SGLang answer"


# ---- 2. the cap: one line naming endpoint and cap, never read past ---------------------------------


def endless(mode: str) -> Answer:
    """An endless /metrics: chunked, to the close with no length, or with a length past any cap."""

    def answer(head: bytes, conn: socket.socket) -> bool:
        block = LINE * 1000
        if mode == "chunked":
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            block = b"%x\r\n%s\r\n" % (len(block), block)
        elif mode == "close":
            conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
        elif mode == "http10":
            conn.sendall(b"HTTP/1.0 200 OK\r\n\r\n")
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000000\r\n\r\n")
        while True:
            conn.sendall(block)

    return answer


class Counted:
    """Counts the body bytes the client takes from http.client (every read of a body)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.total = 0
        real = _body._PacedResponse.read1

        def read1(response, n=-1):  # type: ignore[no-untyped-def]
            piece = real(response, n)
            self.total += len(piece)
            return piece

        monkeypatch.setattr(_body._PacedResponse, "read1", read1)


@pytest.mark.parametrize("mode", ["chunked", "close", "http10", "length"])
def test_an_endless_metrics_fails_at_its_cap_in_one_line_without_reading_past_it(raw_server, monkeypatch, mode: str) -> None:
    counted = Counted(monkeypatch)
    server = raw_server(endless(mode))
    client = HttpClient(server.url, timeout=30)
    with pytest.raises(TargetError) as info:
        client.get("/metrics")
    message = str(info.value)
    one_line(message)
    assert message == f"{server.url}/metrics answered more than 16 MiB (the cap for /metrics): this is not an SGLang answer"
    # A length past the cap is refused before any of the body is read; else one byte past it.
    assert counted.total == (0 if mode == "length" else METRICS_CAP + 1)


def test_a_cap_can_be_given_per_request_and_a_body_at_the_cap_is_whole(raw_server, monkeypatch) -> None:
    body = b"z" * 1000
    server = raw_server(close_answer(body, length=False))
    client = HttpClient(server.url, timeout=10)
    assert client.get("/anything", max_body=1000).content == body
    counted = Counted(monkeypatch)
    with pytest.raises(TargetError, match=r"/anything\?x=1 answered more than 999 bytes \(the cap for /anything\)"):
        client.get("/anything?x=1", max_body=999)
    assert counted.total == 1000


def test_a_redirects_body_is_never_read(raw_server, monkeypatch) -> None:
    """requests' own redirect handling read a redirect's body whole, with no cap, even when
    told not to follow it (1.3 GB in 10 s from an endless one); it is not read at all now."""

    def answer(head: bytes, conn: socket.socket) -> bool:
        if path_of(head) == "/server_info":
            conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: /get_server_info\r\nConnection: close\r\n\r\n")
            while True:
                conn.sendall(b"x" * 65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        return True

    counted = Counted(monkeypatch)
    server = raw_server(answer)
    assert HttpClient(server.url, timeout=10).get("/server_info").content == b"{}"
    assert counted.total == 2


PEAK = """
import resource, sys, time
from pytest_sglang.collect.http import HttpClient
client = HttpClient(sys.argv[1], timeout=60, retries=0)
client.get("/warm-up")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.monotonic()
try:
    client.get("/metrics")
except Exception as exc:
    print(type(exc).__name__, exc, file=sys.stderr)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024, time.monotonic() - start)
"""


def test_reading_an_endless_metrics_grows_memory_by_about_its_cap(raw_server) -> None:
    """Measured in a process of its own: the peak grows by the 16 MiB read, not by what the
    server would send (64 MiB before the per-endpoint cap, 1.38 GB in 2 s before any)."""

    def answer(head: bytes, conn: socket.socket) -> bool:
        if path_of(head) == "/warm-up":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
            return True
        return endless("close")(head, conn)

    server = raw_server(answer)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(PEAK), server.url], capture_output=True, text=True, timeout=120)
    assert "answered more than 16 MiB (the cap for /metrics)" in done.stderr, done.stderr
    grown_mib, seconds = done.stdout.split()
    assert int(grown_mib) < 48, f"peak RSS grew by {grown_mib} MiB"
    assert float(seconds) < 60


# ---- the deadline bounds the whole answer ----------------------------------------------------------


def drip(where: str) -> Answer:
    """A byte at a time, forever: in the status line's headers, in a chunk size line, or in a
    body with no length."""

    def answer(head: bytes, conn: socket.socket) -> bool:
        if where == "headers":
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        elif where == "chunk-size":
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n")
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
        while True:
            conn.sendall(b"0" if where == "chunk-size" else b"a")
            time.sleep(0.1)

    return answer


@pytest.mark.parametrize("where", ["headers", "chunk-size", "body"])
def test_a_drip_is_cut_at_the_deadline_of_the_whole_answer(raw_server, where: str) -> None:
    """Each byte comes well within the timeout, so only a deadline for the whole answer ends
    it (a chunk size dripped forever was read for ever before)."""
    server = raw_server(drip(where))
    client = HttpClient(server.url, timeout=1.5, retries=0)
    start = time.monotonic()
    with pytest.raises(TargetError) as info:
        client.get("/server_info")
    elapsed = time.monotonic() - start
    one_line(str(info.value))
    assert "within 1.5s: raise `timeout`" in str(info.value)
    assert 1.4 <= elapsed < 15, elapsed  # generous: a busy machine is slow, never early


def test_an_endless_body_under_the_cap_is_cut_at_the_deadline(raw_server) -> None:
    def answer(head: bytes, conn: socket.socket) -> bool:
        conn.sendall(b"HTTP/1.0 200 OK\r\n\r\n")
        while True:
            conn.sendall(LINE * 20)
            time.sleep(0.01)

    server = raw_server(answer)
    with pytest.raises(TargetError, match=r"/metrics did not finish its answer within 1s"):
        HttpClient(server.url, timeout=1).get("/metrics")


def test_after_a_failed_read_the_next_request_works(raw_server) -> None:
    calls = []

    def answer(head: bytes, conn: socket.socket) -> bool:
        calls.append(path_of(head))
        if path_of(head) == "/bad":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")  # then closes
            return False
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        return True

    server = raw_server(answer)
    client = HttpClient(server.url, timeout=5, retries=0)
    assert client.get("/good").content == b"{}"
    with pytest.raises(TargetError) as info:
        client.get("/bad")
    assert str(info.value) == f"{server.url}/bad: the answer broke off (the connection closed 5 bytes into a body of 100 (its Content-Length))"
    assert client.get("/good").content == b"{}"


# ---- 3. scrub, then cut -----------------------------------------------------------------------------


def whole_forms_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """http.py's scrubber replaced by one that knows only the whole key (no cut rule): what
    is left to keep a piece of the key out is the order, the whole text scrubbed before a cut."""
    monkeypatch.setattr("pytest_sglang.collect.http.scrub", lambda text: text.replace(KEY, "<redacted>"))


@pytest.mark.parametrize("plain", [False, True], ids=["scrub", "whole-forms-only"])
@pytest.mark.parametrize("pad", [60, 95, 100, 105, 110, 115, 119])
def test_an_error_body_echoing_the_key_after_padding_never_shows_a_piece_of_it(raw_server, monkeypatch, pad: int, plain: bool) -> None:
    body = ("e" * pad + f" Authorization: Bearer {KEY} more text after it").encode()
    server = raw_server(close_answer(body, length=True, status=b"500 Internal Server Error"))
    client = HttpClient(server.url, api_key=KEY, timeout=5)
    if plain:
        whole_forms_only(monkeypatch)
    endpoint = client.fetch("server_info")
    assert endpoint.status == 500 and endpoint.error
    no_piece_of(KEY, endpoint.error)
    with pytest.raises(TargetError) as info:
        collect_http(client, target="t")
    no_piece_of(KEY, str(info.value))


@pytest.mark.parametrize("plain", [False, True], ids=["scrub", "whole-forms-only"])
@pytest.mark.parametrize("pad", [0, 10, 20, 25, 30, 35])
def test_a_non_json_preview_echoing_the_key_never_shows_a_piece_of_it(raw_server, monkeypatch, pad: int, plain: bool) -> None:
    if plain:
        whole_forms_only(monkeypatch)
    server = raw_server(close_answer(("<" * pad + KEY + " <html>").encode(), length=False))
    endpoint = HttpClient(server.url, api_key=KEY, timeout=5).fetch("server_info")
    assert endpoint.error and endpoint.error.startswith("the body is not JSON (starts ")
    no_piece_of(KEY, endpoint.error)


def test_a_redirect_naming_the_key_never_shows_it(raw_server) -> None:
    for location in (f"http://{KEY}.example.com/{'p' * 90}{KEY}", f"http://{KEY}:notaport/", f"http://[{KEY}/"):

        def answer(head: bytes, conn: socket.socket, location: str = location) -> bool:
            conn.sendall(f"HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode())
            return True

        server = raw_server(answer)
        with pytest.raises(TargetError) as info:
            HttpClient(server.url, api_key=KEY, timeout=5).get("/server_info")
        one_line(str(info.value))
        assert "redirects to" in str(info.value)
        no_piece_of(KEY, str(info.value))


def test_every_failure_is_a_package_error(raw_server) -> None:
    """Odd answers at the edges of the protocol are the package's one-line errors."""
    answers = [
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nnope",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"SSH-2.0-OpenSSH_9.6\r\n",
        b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000 + b"\r\n\r\n",
    ]
    for raw in answers:

        def answer(head: bytes, conn: socket.socket, raw: bytes = raw) -> bool:
            conn.sendall(raw)
            return False

        server = raw_server(answer)
        with pytest.raises(SGLangError) as info:
            HttpClient(server.url, timeout=5).get("/server_info")
        one_line(str(info.value))


@pytest.mark.parametrize(
    "wire, detail",
    [
        (b"Transfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n", "a chunk size that is not a hexadecimal number"),
        (b"Transfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n", "a chunk size that is not a hexadecimal number"),
        (b"Transfer-Encoding: chunked\r\n\r\n1_0\r\nhello\r\n0\r\n\r\n", "a chunk size that is not a hexadecimal number"),
        (b"Transfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n", "chunk data that does not end where its size says"),
        (b"Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "Transfer-Encoding: gzip, chunked, where pytest-sglang reads chunked only"),
        (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "Transfer-Encoding: chunked, chunked"),
        (b"Content-Length: +5\r\n\r\nhello", "a Content-Length that is not one number"),
        (b"Content-Length: 5\r\nContent-Length: 5, 6\r\n\r\nhello", "Content-Length"),
        (b"X-Ok: 1\r\nnot a header\r\nContent-Length: 5\r\n\r\nhello", "a header line that is not 'Name: value'"),
    ],
)
def test_framing_http_client_would_guess_at_is_refused(raw_server, wire: bytes, detail: str) -> None:
    """http.client reads ``-5`` or ``1_0`` as a chunk size, skips two bytes after a chunk
    unread, and ignores every header after a line that is not one: each would pass the framing
    (or the rest of the headers) off as the body."""

    def answer(head: bytes, conn: socket.socket) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\n" + wire)
        return False

    server = raw_server(answer)
    with pytest.raises(TargetError) as info:
        HttpClient(server.url, timeout=5, retries=0).get("/server_info")
    one_line(str(info.value))
    assert detail in str(info.value)


def test_chunked_with_a_content_length_is_read_as_chunked_on_a_connection_not_reused(raw_server) -> None:
    def answer(head: bytes, conn: socket.socket) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        return True

    server = raw_server(answer)
    client = HttpClient(server.url, timeout=5)
    assert [client.get("/a").content, client.get("/b").content] == [b"hello", b"hello"]
    assert server.connections == 2


def test_a_header_line_echoing_the_key_is_refused_and_urllib3s_log_of_it_scrubbed(raw_server, caplog: pytest.LogCaptureFixture) -> None:
    def answer(head: bytes, conn: socket.socket) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nAuthorization Bearer " + KEY.encode() + b"\r\nContent-Length: 2\r\n\r\n{}")
        return False

    server = raw_server(answer)
    caplog.set_level("WARNING")
    with pytest.raises(TargetError) as info:
        HttpClient(server.url, api_key=KEY, timeout=5, retries=0).get("/server_info")
    assert str(info.value) == f"{server.url}/server_info: the answer is not well-formed HTTP (a header line that is not 'Name: value'): is this an SGLang server?"
    assert "Failed to parse headers" in caplog.text and "<redacted>" in caplog.text
    no_piece_of(KEY, caplog.text)
