"""Collect facts over HTTP: one ``requests`` session per target, connection reuse,
timeouts, bounded retries on connection errors, and one-line errors for what goes wrong.

Every answer is read one way (:mod:`._body`): whole, by the protocol's framing (a
Content-Length, chunks, or the connection's close), within the request's deadline (the status
line and headers included) and within a cap on its size that depends on the endpoint."""

from __future__ import annotations

import json
import logging
import os
import time
import traceback
from datetime import timedelta
from http.cookiejar import CookieJar
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from requests.cookies import RequestsCookieJar, cookiejar_from_dict, extract_cookies_to_jar, merge_cookies
from requests.hooks import dispatch_hook
from requests.sessions import merge_hooks, merge_setting
from requests.structures import CaseInsensitiveDict
from requests.utils import get_netrc_auth
from urllib3.util.retry import Retry

from pytest_sglang.base.errors import AuthError, NotReadyError, SpecError, TargetError
from pytest_sglang.base.secrets import Secret, clip, register, scrub
from pytest_sglang.base.settings import setting
from pytest_sglang.collect._body import BodyError, PacedAdapter, deadline, read_body
from pytest_sglang.model.facts import ENDPOINTS, Endpoint, Facts
from pytest_sglang.parse.redact import MAX_DEPTH, TooDeep, redact_mapping

REQUIRED = ("server_info",)
# The most of one answer's body pytest-sglang reads, by path (the query left out): SGLang's
# largest configuration answer (/server_info of 0.5.23) is about 30 KB, its /metrics some
# hundreds of KB on a large deployment; anything else (a /generate answer with logprobs) may
# be large. A body past its cap is refused once the cap is passed, not read on.
MAX_BODY = 64 * 1024 * 1024
CONFIG_BODY = 4 * 1024 * 1024
BODY_CAPS: dict[str, int] = {
    **{path: CONFIG_BODY for paths in ENDPOINTS.values() for path in paths},
    "/metrics": 16 * 1024 * 1024,
    "/health": 1024 * 1024,
    "/health_generate": 1024 * 1024,
    "/ready": 1024 * 1024,
}
_REDIRECTS = (301, 302, 303, 307, 308)
_REQUEST_ARGS = frozenset({"headers", "files", "data", "json", "params", "auth", "cookies", "hooks"})
# What a server answered, when it was not HTTP: trying again would get the same again.
_NOT_HTTP = ("BadStatusLine", "LineTooLong", "UnknownProtocol", "got more than", "InvalidHeader", "InvalidChunkLength")


class _ScrubbedLog(logging.Filter):
    """urllib3 logs what it could not parse of a server's headers (the unparsed lines
    themselves, with a traceback): scrubbed, like every other text a server sent."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            record.msg = scrub(record.getMessage())
            record.args = None
            if record.exc_info:
                record.exc_text = scrub("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
                record.exc_info = None
        except Exception:  # never lose a log record to its scrubbing
            pass
        return True


for _logger in ("urllib3.connection", "urllib3.connectionpool", "urllib3.response"):
    if not any(isinstance(f, _ScrubbedLog) for f in logging.getLogger(_logger).filters):
        logging.getLogger(_logger).addFilter(_ScrubbedLog())


# merge_environment_settings' answers, by the environment they were read from (see _environment).
_SETTINGS: dict[tuple[Any, ...], dict[str, Any]] = {}
# What requests reads from the environment for a request to an http:// or https:// server:
# the proxies for those schemes (and all), the hosts that bypass them, the CA bundles, and
# REQUEST_METHOD (under CGI, http_proxy is ignored).
_ENVIRONMENT_NAMES = tuple(
    name
    for base in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
    for name in (base, base.upper())
) + ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "REQUEST_METHOD")


def _proxy_environment() -> tuple[str | None, ...]:
    """Those variables as they are now (a lookup each: reading the whole environment on
    every request would cost more than the cache saves)."""
    return tuple(os.environ.get(name) for name in _ENVIRONMENT_NAMES)


def body_cap(path: str) -> int:
    """The most of an answer from ``path`` that is read (:data:`BODY_CAPS`, else :data:`MAX_BODY`)."""
    return BODY_CAPS.get(path.split("?", 1)[0], MAX_BODY)


def _size(n: int) -> str:
    for unit, size in (("MiB", 2**20), ("KiB", 2**10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


def _clip(text: object, limit: int = 120) -> str:
    """Text a server sent (or an error made from it) on one line, cut to ``limit``: the one way
    outside text is shortened, :func:`pytest_sglang.base.secrets.clip` (scrubbed, then cut)."""
    return clip(text, limit)


class HttpClient:
    """A small client for one SGLang server. The api key is held here only, never in facts."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 10.0,
        retries: int = 2,
        verify: bool | str = True,
        name: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.name = name or self.base_url
        self.timeout = timeout
        self._api_key = checked_api_key(api_key, self.name)
        self.session = requests.Session()
        self.session.verify = verify
        self.retries = retries
        self._netrc_auth: dict[tuple[str, str], Any] = {}
        adapter = PacedAdapter(max_retries=Retry(total=0, connect=0, read=0, status=0, other=0, raise_on_status=False), pool_connections=4, pool_maxsize=32)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        if self._api_key:
            self.session.headers["Authorization"] = f"Bearer {self._api_key}"
        self.session.headers["User-Agent"] = "pytest-sglang"
        # Bodies as sent: a compressed body's size says nothing of what it expands to.
        self.session.headers["Accept-Encoding"] = "identity"

    @property
    def has_api_key(self) -> bool:
        return bool(self._api_key)

    def auth_headers(self) -> dict[str, str]:
        """The headers another client (the benchmark's) needs to reach this server as this one does."""
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def request(
        self,
        method: str,
        path: str,
        *,
        stream: bool = False,
        max_body: int | None = None,
        retries: int | None = None,
        **kwargs: Any,
    ) -> requests.Response:
        """Any request to the server, with the session's auth and timeout; transport
        failures become one-line :class:`TargetError`.

        Unless ``stream`` is set, the timeout bounds the whole request, the answer's status
        line, headers and body included: a server that drips its answer a byte at a time is
        cut off at the deadline. The body is read whole as HTTP frames it (to its
        Content-Length, its last chunk, or the connection's close) and at most ``max_body``
        bytes of it (by default :func:`body_cap` of the path). ``retries`` (by default the
        client's) is how often a GET or HEAD whose connection could not be set up is tried
        again. Redirects are followed only within the target (same scheme, host and port)."""
        timeout = kwargs.pop("timeout", self.timeout)
        kwargs.pop("allow_redirects", None)  # followed here, within the target only
        kwargs.pop("stream", None)
        send = {name: kwargs.pop(name) for name in ("proxies", "verify", "cert") if name in kwargs}
        unknown = set(kwargs) - _REQUEST_ARGS
        if unknown:
            raise TypeError(f"request() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
        limit = float(timeout) if isinstance(timeout, (int, float)) else self.timeout
        when = time.monotonic() + limit
        cap = body_cap(path) if max_body is None else max_body
        tries = self.retries if retries is None else retries
        retries_left = tries if method in ("GET", "HEAD") else 0
        url = self.url(path)
        redirects = 0
        while True:
            try:
                with deadline(None if stream else when):
                    response = self._send(method, url, timeout, dict(kwargs), **send)
            except requests.ConnectionError as exc:
                # Retry only failures to set up a connection (refused while restarting, a
                # dropped keep-alive); never a timeout, which may mean the server is working,
                # nor an answer that is not HTTP, which would come again.
                text = str(exc)
                timed_out = isinstance(exc, requests.Timeout) or "timed out" in text.lower()
                if retries_left == 0 or timed_out or any(mark in text for mark in _NOT_HTTP):
                    raise TargetError(self._describe(exc, path, limit)) from None
                retries_left -= 1
                time.sleep(0.1 * (tries - retries_left))
                continue
            except requests.RequestException as exc:
                raise TargetError(self._describe(exc, path, limit)) from None
            except Exception as exc:  # an error inside urllib3 or http.client that requests lets through
                raise TargetError(f"{self.name}{path}: the answer could not be read ({_clip(type(exc).__name__ + ': ' + str(exc))})") from None
            if response.status_code in _REDIRECTS and response.headers.get("Location"):
                response.close()
                url = self._redirect_target(url, response.headers["Location"], path)
                redirects += 1
                if redirects > 3:
                    raise TargetError(f"{self.name}{path} redirects more than 3 times: check the {setting('host')} path")
                continue
            if not stream:
                self._read_body(response, when, cap, path, limit)
            hooks = response.request.hooks if response.request is not None else {}
            return dispatch_hook("response", hooks, response)

    def _send(self, method: str, url: str, timeout: Any, kwargs: dict[str, Any], proxies: Any = None, verify: Any = None, cert: Any = None) -> requests.Response:
        """``Session.request`` without ``Session.send``'s redirect handling, which reads a
        redirect's body whole (no cap) even when redirects are not followed: the request is
        prepared as the session would, and handed to the adapter, streamed."""
        request = requests.Request(method=method.upper(), url=url, **kwargs)
        request.data = request.data or {}
        request.params = request.params or {}
        prepared = self._prepare(request)
        # The session's verify given explicitly: requests lets REQUESTS_CA_BUNDLE override a
        # session's own CA bundle (?verify=/path/ca.pem) when a request names none.
        verify = self.session.verify if verify is None else verify
        settings = self._environment(prepared.url or url, proxies, verify, cert)
        adapter = self.session.get_adapter(url=prepared.url or url)
        start = time.perf_counter()
        verify = True if settings["verify"] is None else settings["verify"]
        response = adapter.send(prepared, stream=True, timeout=timeout, verify=verify, cert=settings["cert"], proxies=settings["proxies"])
        response.elapsed = timedelta(seconds=time.perf_counter() - start)
        extract_cookies_to_jar(self.session.cookies, prepared, response.raw)
        return response

    def _prepare(self, request: requests.Request) -> requests.PreparedRequest:
        """``Session.prepare_request``, merged the same way (the session's headers, cookies,
        auth, params and hooks, and ``~/.netrc`` when nothing else authenticates: no auth and
        no Authorization header) without its generic merging, which costs more than the rest
        of a loopback request's preparation; the ``.netrc`` lookup is made once per server."""
        session = self.session
        cookies: Any = request.cookies or {}
        if not isinstance(cookies, CookieJar):
            cookies = cookiejar_from_dict(cookies)
        jar = merge_cookies(merge_cookies(RequestsCookieJar(), session.cookies), cookies) if len(session.cookies) or len(cookies) else cookies
        headers = CaseInsensitiveDict(session.headers)
        headers.update(request.headers or {})
        for name in [name for name, value in headers.items() if value is None]:
            del headers[name]
        auth = request.auth if request.auth is not None else session.auth
        # Unlike requests, a ~/.netrc entry never replaces an Authorization already set (the
        # api key's Bearer header): requests would send the .netrc login in its place.
        if not auth and session.trust_env and "Authorization" not in headers:
            auth = self._netrc(str(request.url))
        params = merge_setting(request.params, session.params) if request.params or session.params else {}
        prepared = requests.PreparedRequest()
        prepared.prepare(
            method=str(request.method).upper(),
            url=request.url,
            files=request.files,
            data=request.data,
            json=request.json,
            headers=headers,
            params=params,
            auth=auth,
            cookies=jar,
            hooks=merge_hooks(request.hooks, session.hooks),
        )
        return prepared

    def _netrc(self, url: str) -> Any:
        parts = urlsplit(url)
        key = (parts.scheme, parts.netloc)
        if key not in self._netrc_auth:
            self._netrc_auth[key] = get_netrc_auth(url)
        return self._netrc_auth[key]

    def _environment(self, url: str, proxies: Any, verify: Any, cert: Any) -> dict[str, Any]:
        """What the environment adds to a request (proxies, ``REQUESTS_CA_BUNDLE``, ...), as
        ``Session.merge_environment_settings`` finds it: worked out once per server, request
        settings and state of those environment variables, not on every request (reading the
        environment's proxies costs more than the rest of a loopback request)."""
        parts = urlsplit(url)
        key = (_proxy_environment(), parts.scheme, parts.netloc, repr(proxies), repr(verify), repr(cert))
        found = _SETTINGS.get(key)
        if found is None:
            found = dict(self.session.merge_environment_settings(url, proxies or {}, True, verify, cert))
            if len(_SETTINGS) >= 1024:
                _SETTINGS.clear()
            _SETTINGS[key] = found
        return dict(found)

    def _redirect_target(self, url: str, location: str, path: str) -> str:
        try:
            target = urljoin(url, location)
            here, there = urlsplit(url), urlsplit(target)
            there.port  # noqa: B018  (raises ValueError for a port that is not a number)
        except ValueError:
            raise TargetError(f"{self.name}{path} redirects to something that is not an address ({_clip(location, 80)!r})") from None
        if (here.scheme, here.netloc) != (there.scheme, there.netloc):
            # netloc, not hostname: the host as the server wrote it (hostname lower-cases it,
            # and a secret in it would no longer be seen as one), without any user:password@
            shown = f"{there.scheme}://{there.netloc.rpartition('@')[2]}{there.path}"
            raise TargetError(
                f"{self.name}{path} redirects to another host ({_clip(shown, 100)}): pytest-sglang reads only the server it is "
                f"given; give that address as {setting('host')} if it is the SGLang server"
            )
        return target

    def _read_body(self, response: requests.Response, when: float, cap: int, path: str, limit: float) -> None:
        """Read the whole body (:func:`._body.read_body`) into ``response``, as requests would."""
        where = f"{self.name}{path}"
        try:
            content = read_body(response.raw, cap=cap, when=when)
        except BodyError as exc:
            if exc.kind == "deadline":
                raise TargetError(
                    f"{where} did not finish its answer within {limit:g}s: raise {setting('timeout')} or check the server is not stuck"
                ) from None
            if exc.kind == "cap":
                raise TargetError(f"{where} answered more than {_size(cap)} (the cap for {path.split('?', 1)[0]}): this is not an SGLang answer") from None
            if exc.kind == "framing":
                raise TargetError(f"{where}: the answer is not well-formed HTTP ({_clip(exc.detail)}): is this an SGLang server?") from None
            raise TargetError(f"{where}: the answer broke off ({_clip(exc.detail)})") from None
        response._content = content  # what requests itself sets once a body is read
        response._content_consumed = True  # type: ignore[attr-defined]

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("POST", path, **kwargs)

    def close(self) -> None:
        self.session.close()

    def _describe(self, exc: Exception, path: str, limit: float | None = None) -> str:
        where = f"{self.name}{path}"
        text = str(exc)
        seconds = self.timeout if limit is None else limit
        if isinstance(exc, requests.exceptions.SSLError):
            return f"TLS error talking to {where}: check https:// vs http:// and the certificate"
        if isinstance(exc, requests.Timeout) or "ReadTimeoutError" in text or "Read timed out" in text:
            return f"{where} did not answer within {seconds:g}s: raise {setting('timeout')} or check the server is not stuck"
        if isinstance(exc, requests.ConnectionError):
            if "Name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text or "NameResolution" in text:
                return f"cannot resolve the host name of {self.name}: check the {setting('host')} spelling"
            if "refused" in text.lower():
                return f"cannot connect to {self.name} (connection refused): is the SGLang server running, and is the port right?"
            if any(mark in text for mark in _NOT_HTTP):
                return f"{where} answered something that is not HTTP: is this an SGLang HTTP port?"
            if "RemoteDisconnected" in text or "Connection aborted" in text:
                return f"{where} closed the connection without an HTTP answer: is this an SGLang HTTP port?"
            return f"cannot connect to {self.name}: {_clip(text)}"
        return f"request to {where} failed: {_clip(text)}"

    # ---- readiness ------------------------------------------------------------------------
    def wait_ready(self, seconds: float) -> None:
        """Poll ``/health`` until 200. Connection refused (weights loading) and 503 (warm-up)
        are normal while starting; anything else is reported once the time is up."""
        until = time.monotonic() + seconds
        delay = 0.05
        last = "no answer yet"
        while True:
            try:
                response = self.request("GET", "/health", retries=0, timeout=min(self.timeout, max(seconds, 0.5)))
                if response.status_code == 200:
                    return
                last = f"/health answered {response.status_code}"
            except TargetError as exc:
                last = str(exc)
            if time.monotonic() + delay > until:
                raise NotReadyError(f"{self.name} was not ready within {seconds:g}s ({setting('wait_ready')}); last: {last}")
            time.sleep(delay)
            delay = min(delay * 1.5, 1.0)

    # ---- facts ------------------------------------------------------------------------------
    def fetch(self, name: str) -> Endpoint:
        """Read one endpoint, trying its fallback path on 404."""
        paths = ENDPOINTS[name]
        last: Endpoint | None = None
        for path in paths:
            start = time.perf_counter()
            response = self.get(path)
            elapsed = (time.perf_counter() - start) * 1000
            if response.status_code in (401, 403):
                raise AuthError(self._auth_message(response.status_code, path))
            if response.status_code == 404:
                last = Endpoint(path=path, status=404, error="not found", elapsed_ms=elapsed)
                continue
            if response.status_code != 200:
                return Endpoint(path=path, status=response.status_code, error=_clip(_text(response)) or f"HTTP {response.status_code}", elapsed_ms=elapsed)
            try:
                body = redact_mapping(json.loads(response.content))
            except (TooDeep, RecursionError):
                return Endpoint(path=path, status=200, error=f"the body nests deeper than {MAX_DEPTH} levels: not an SGLang answer", elapsed_ms=elapsed)
            except ValueError:
                return Endpoint(
                    path=path,
                    status=200,
                    error=f"the body is not JSON (starts {_clip(_text(response), 40)!r})",
                    elapsed_ms=elapsed,
                )
            return Endpoint(path=path, status=200, body=body, elapsed_ms=elapsed)
        assert last is not None
        return last

    def _auth_message(self, status: int, path: str) -> str:
        if self.has_api_key:
            return f"{self.name}{path} rejected the api key ({status}): the key given is wrong for this server"
        return (
            f"{self.name}{path} requires an api key ({status}): pass {setting('api_key')}, set SGLANG_API_KEY, "
            "or name a variable with ?api_key_env=VAR in the host spec"
        )


def collect_http(client: HttpClient, *, target: str, origin: str = "http", overrides: dict[str, Any] | None = None) -> Facts:
    """Read every configuration endpoint once. ``/server_info`` must answer; the others may
    be missing on older versions."""
    endpoints: dict[str, Endpoint] = {}
    for name in ENDPOINTS:
        endpoints[name] = client.fetch(name)
    info = endpoints["server_info"]
    if info.status == 404:
        paths = " and ".join(ENDPOINTS["server_info"])
        raise TargetError(f"{client.name} answered 404 on {paths}: this is probably not an SGLang server (check host and port)")
    if not info.ok:
        raise TargetError(f"{client.name}{info.path}: {info.error}: is this an SGLang server?")
    if not isinstance(info.body, dict) or not ("version" in info.body or "model_path" in info.body):
        raise TargetError(f"{client.name}{info.path} answered JSON that is not SGLang's server info: is this an SGLang server?")
    return Facts(target=target, origin=origin, base_url=client.base_url, endpoints=endpoints, overrides=overrides or {})  # type: ignore[arg-type]


def _text(response: requests.Response) -> str:
    """The body as text for a message, never failing: in its declared charset if that reads
    it, else UTF-8 if that does, else Latin-1 (a byte a character, so a key echoed in any
    ASCII-compatible encoding stays whole, and scrubbable)."""
    content = response.content or b""
    for codec in dict.fromkeys(c for c in (response.encoding, "utf-8") if c):
        try:
            return content.decode(codec)
        except (LookupError, UnicodeError, TypeError, ValueError):
            continue
    return content.decode("latin-1")


def checked_api_key(api_key: str | None, where: str) -> Secret | None:
    """The key as it will be sent, or a one-line error that names the problem, never the key.

    Surrounding white space (a key file's trailing newline or ``\\r``) is dropped; a character
    an HTTP header cannot carry (outside Latin-1, or a control character) is refused."""
    if api_key is None:
        return None
    register(api_key)
    key = api_key.strip()
    if not key:
        return None
    for position, char in enumerate(key, 1):
        code = ord(char)
        if code > 255 or code < 32 or code == 127:
            kind = "a control character" if code < 32 or code == 127 else "a character outside Latin-1"
            raise SpecError(
                f"the api key for {where} has {kind} at position {position}, which an HTTP header cannot carry: "
                "check the key (a copy-paste may have brought a typographic character)"
            )
    return Secret(key)
