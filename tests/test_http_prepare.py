"""How :class:`pytest_sglang.collect.http.HttpClient` prepares a request is requests' own
``Session.prepare_request``, merged the same way (headers, cookies, auth, params, hooks,
``~/.netrc``), only cheaper; and the environment's proxies and CA bundle, worked out once per
server, still follow the environment when it changes.

Every server here is on loopback: test_http_read_path's RawServer, answering 200 to anything and
keeping what it was sent; it stands in for the SGLang server and, in one test, for an HTTP proxy."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_http_read_path import RawServer

from pytest_sglang.collect.http import HttpClient

NAMES = st.sampled_from(["Accept", "X-Trace", "x-trace", "User-Agent", "Authorization", "X-Empty"])
VALUES = st.one_of(st.none(), st.text(alphabet="abcXYZ019-_/ ", min_size=1, max_size=12).map(str.strip).filter(bool))
HEADERS = st.dictionaries(NAMES, VALUES, max_size=4)
COOKIES = st.dictionaries(st.sampled_from(["session", "lang", "id"]), st.text(alphabet="abc019", min_size=1, max_size=6), max_size=2)
PARAMS = st.dictionaries(st.sampled_from(["a", "b", "format"]), st.one_of(st.none(), st.text(alphabet="xyz01", min_size=1, max_size=4)), max_size=2)
AUTH = st.one_of(st.none(), st.tuples(st.sampled_from(["user", "admin"]), st.sampled_from(["pw-1", "pw-2"])))


def _ok(head: bytes, conn: socket.socket) -> bool:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    return True


def request_lines(server: RawServer) -> list[str]:
    return [head.split(b"\r\n", 1)[0].decode() for head in server.heads]


@pytest.fixture
def recorder() -> Iterator[RawServer]:
    server = RawServer(_ok)
    yield server
    server.close()


def as_sent(prepared: requests.PreparedRequest) -> tuple[object, ...]:
    return (prepared.method, prepared.url, sorted((k.lower(), v) for k, v in prepared.headers.items()), prepared.body)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    session_headers=HEADERS,
    request_headers=HEADERS,
    session_cookies=COOKIES,
    request_cookies=COOKIES,
    session_params=PARAMS,
    request_params=PARAMS,
    session_auth=AUTH,
    request_auth=AUTH,
    method=st.sampled_from(["GET", "post", "HEAD"]),
    body=st.one_of(st.none(), st.dictionaries(st.sampled_from(["text", "n"]), st.integers(0, 9), max_size=2)),
    api_key=st.sampled_from([None, "sk-prepare-test-key-0123456789"]),
)
def test_a_request_is_prepared_as_requests_own_session_prepares_it(
    session_headers: dict,
    request_headers: dict,
    session_cookies: dict,
    request_cookies: dict,
    session_params: dict,
    request_params: dict,
    session_auth: tuple | None,
    request_auth: tuple | None,
    method: str,
    body: dict | None,
    api_key: str | None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("NETRC", str(tmp_path / "absent-netrc"))
    client = HttpClient("http://127.0.0.1:9/base", api_key=api_key)
    session = client.session
    session.headers.update(session_headers)
    for name, value in session_cookies.items():
        session.cookies.set(name, value)
    session.params = dict(session_params)
    session.auth = session_auth
    request = requests.Request(method=method, url=client.url("/server_info"), headers=request_headers, cookies=request_cookies, params=request_params, auth=request_auth, json=body)
    request.data = request.data or {}
    request.params = request.params or {}
    assert as_sent(client._prepare(request)) == as_sent(session.prepare_request(request))


def test_netrc_credentials_are_used_when_nothing_else_authenticates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine 127.0.0.1 login reader password pw-from-netrc\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    client = HttpClient("http://127.0.0.1:9")
    request = requests.Request(method="GET", url=client.url("/health"))
    request.data, request.params = {}, {}
    ours, theirs = client._prepare(request), client.session.prepare_request(request)
    assert ours.headers["Authorization"].startswith("Basic ")
    assert as_sent(ours) == as_sent(theirs)



def test_an_api_key_is_sent_even_when_netrc_names_the_host(recorder: RawServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """requests alone would replace the Bearer header with the ``.netrc`` login (its
    documented precedence), and the server would refuse the request as unauthenticated."""
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine 127.0.0.1 login reader password pw-from-netrc\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    client = HttpClient(recorder.url, api_key="sk-prepare-test-key-0123456789")
    request = requests.Request(method="GET", url=client.url("/health"))
    request.data, request.params = {}, {}
    assert client.session.prepare_request(request).headers["Authorization"].startswith("Basic ")  # requests' own
    assert client._prepare(request).headers["Authorization"] == "Bearer sk-prepare-test-key-0123456789"
    assert client.get("/health").status_code == 200
    assert "Authorization: Bearer sk-prepare-test-key-0123456789" in recorder.heads[-1].decode().splitlines()


def test_a_proxy_set_in_the_environment_after_the_first_request_is_used(recorder: RawServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment's settings are kept between requests, by what they were read from: an
    ``HTTP_PROXY`` set (or removed) later takes effect at the next request."""
    for name in ("HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    proxy = RawServer(_ok)
    try:
        client = HttpClient(recorder.url, retries=0)
        assert client.get("/health").status_code == 200
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        assert client.get("/health").status_code == 200
        monkeypatch.delenv("HTTP_PROXY")
        assert client.get("/health").status_code == 200
        client.close()
    finally:
        proxy.close()
    assert request_lines(recorder) == ["GET /health HTTP/1.1", "GET /health HTTP/1.1"]
    assert request_lines(proxy) == [f"GET {recorder.url}/health HTTP/1.1"]
