"""Collect facts over HTTP: one ``requests`` session per target, connection reuse,
timeouts, bounded retries on connection errors, and one-line errors for what goes wrong."""

from __future__ import annotations

import json
import time
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from .._text import one_line
from ..errors import AuthError, NotReadyError, TargetError
from ..facts import ENDPOINTS, Endpoint, Facts
from ..redact import MAX_DEPTH, TooDeep, redact_mapping
from ..secrets import checked_api_key, scrub

REQUIRED = ("server_info",)
# SGLang's largest answer (/server_info of 0.5.23) is about 30 KB; a body past this is not one.
MAX_BODY = 64 * 1024 * 1024
_REDIRECTS = (301, 302, 303, 307, 308)


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
        adapter = HTTPAdapter(max_retries=Retry(total=0, connect=0, read=0, status=0, other=0, raise_on_status=False), pool_connections=4, pool_maxsize=32)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        if self._api_key:
            self.session.headers["Authorization"] = f"Bearer {self._api_key}"
        self.session.headers["User-Agent"] = "pytest-sglang"

    @property
    def has_api_key(self) -> bool:
        return bool(self._api_key)

    def auth_headers(self) -> dict[str, str]:
        """The headers another client (the benchmark's) needs to reach this server as this one does."""
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def request(self, method: str, path: str, *, stream: bool = False, **kwargs: Any) -> requests.Response:
        """Any request to the server, with the session's auth and timeout; transport
        failures become one-line :class:`TargetError`.

        Unless ``stream`` is set, the timeout bounds the whole request, body included: a server
        that sends its headers and then a byte a second is cut off at the deadline. Redirects
        are followed only within the target (same scheme, host and port)."""
        deadline = time.monotonic() + self.timeout
        kwargs.setdefault("timeout", self.timeout)
        kwargs["allow_redirects"] = False
        retries_left = self.retries if method in ("GET", "HEAD") else 0
        url = self.url(path)
        redirects = 0
        while True:
            try:
                response = self.session.request(method, url, stream=True, **kwargs)
            except requests.ConnectionError as exc:
                # Retry only failures to set up a connection (refused while restarting, a
                # dropped keep-alive); never a timeout, which may mean the server is working.
                timed_out = isinstance(exc, requests.Timeout) or "timed out" in str(exc).lower()
                if retries_left == 0 or timed_out:
                    raise TargetError(self._describe(exc, path)) from None
                retries_left -= 1
                time.sleep(0.1 * (self.retries - retries_left))
                continue
            except requests.RequestException as exc:
                raise TargetError(self._describe(exc, path)) from None
            if response.status_code in _REDIRECTS and response.headers.get("Location"):
                response.close()
                url = self._redirect_target(url, response.headers["Location"], path)
                redirects += 1
                if redirects > 3:
                    raise TargetError(f"{self.name}{path} redirects more than 3 times: check the --sglang-host path")
                continue
            if not stream:
                self._read_body(response, deadline, path)
            return response

    def _redirect_target(self, url: str, location: str, path: str) -> str:
        from urllib.parse import urljoin, urlsplit

        target = urljoin(url, location)
        here, there = urlsplit(url), urlsplit(target)
        if (here.scheme, here.netloc) != (there.scheme, there.netloc):
            shown = f"{there.scheme}://{there.hostname or '?'}" + (f":{there.port}" if there.port else "") + there.path
            raise TargetError(
                f"{self.name}{path} redirects to another host ({scrub(shown)}): pytest-sglang reads only the server it is "
                "given; give that address as --sglang-host if it is the SGLang server"
            )
        return target

    def _read_body(self, response: requests.Response, deadline: float, path: str) -> None:
        """Read the whole body by ``deadline`` (each socket read waits at most what is left)."""
        sock = _socket_of(response)
        chunks: list[bytes] = []
        size = 0
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TargetError(
                        f"{self.name}{path} did not finish its answer within {self.timeout:g}s: "
                        "raise --sglang-timeout or check the server is not stuck"
                    )
                if sock is not None:
                    sock.settimeout(max(left, 0.001))
                # read1: what has arrived (read would wait for all 64 KiB, however slowly it drips)
                chunk = response.raw.read1(65536, decode_content=True) if hasattr(response.raw, "read1") else response.raw.read(65536, decode_content=True)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_BODY:
                    raise TargetError(f"{self.name}{path} answered more than {MAX_BODY // 2**20} MiB: this is not an SGLang configuration answer")
        except TargetError:
            response.close()
            raise
        except Exception as exc:  # a socket timeout or a broken connection inside urllib3
            response.close()
            if "timed out" in str(exc).lower() or isinstance(exc, TimeoutError):
                raise TargetError(
                    f"{self.name}{path} did not finish its answer within {self.timeout:g}s: "
                    "raise --sglang-timeout or check the server is not stuck"
                ) from None
            raise TargetError(f"{self.name}{path}: the answer broke off ({scrub(one_line(type(exc).__name__ + ': ' + str(exc)))})") from None
        response._content = b"".join(chunks)  # what requests itself sets once a body is read
        response._content_consumed = True  # type: ignore[attr-defined]

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("POST", path, **kwargs)

    def close(self) -> None:
        self.session.close()

    def _describe(self, exc: Exception, path: str) -> str:
        where = f"{self.name}{path}"
        text = str(exc)
        if isinstance(exc, requests.exceptions.SSLError):
            return f"TLS error talking to {where}: check https:// vs http:// and the certificate"
        if isinstance(exc, requests.Timeout) or "ReadTimeoutError" in text or "Read timed out" in text:
            return f"{where} did not answer within {self.timeout:g}s: raise --sglang-timeout or check the server is not stuck"
        if isinstance(exc, requests.ConnectionError):
            if "Name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text or "NameResolution" in text:
                return f"cannot resolve the host name of {self.name}: check the --sglang-host spelling"
            if "refused" in text.lower():
                return f"cannot connect to {self.name} (connection refused): is the SGLang server running, and is the port right?"
            if "RemoteDisconnected" in text or "Connection aborted" in text or "BadStatusLine" in text:
                return f"{where} closed the connection without an HTTP answer: is this an SGLang HTTP port?"
            return f"cannot connect to {self.name}: {scrub(one_line(text))}"
        return f"request to {where} failed: {scrub(one_line(text))}"

    # ---- readiness ------------------------------------------------------------------------
    def wait_ready(self, seconds: float) -> None:
        """Poll ``/health`` until 200. Connection refused (weights loading) and 503 (warm-up)
        are normal while starting; anything else is reported once the time is up."""
        deadline = time.monotonic() + seconds
        delay = 0.05
        last = "no answer yet"
        while True:
            try:
                response = self.session.get(self.url("/health"), timeout=min(self.timeout, max(seconds, 0.5)))
                if response.status_code == 200:
                    return
                last = f"/health answered {response.status_code}"
            except requests.RequestException as exc:
                last = self._describe(exc, "/health")
            if time.monotonic() + delay > deadline:
                raise NotReadyError(f"{self.name} was not ready within {seconds:g}s (--sglang-wait-ready); last: {last}")
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
                return Endpoint(path=path, status=response.status_code, error=scrub(one_line(response.text)) or f"HTTP {response.status_code}", elapsed_ms=elapsed)
            try:
                body = redact_mapping(json.loads(response.content))
            except (TooDeep, RecursionError):
                return Endpoint(path=path, status=200, error=f"the body nests deeper than {MAX_DEPTH} levels: not an SGLang answer", elapsed_ms=elapsed)
            except ValueError:
                return Endpoint(
                    path=path,
                    status=200,
                    error=f"the body is not JSON (starts {scrub(one_line(response.text, 40))!r})",
                    elapsed_ms=elapsed,
                )
            return Endpoint(path=path, status=200, body=body, elapsed_ms=elapsed)
        assert last is not None
        return last

    def _auth_message(self, status: int, path: str) -> str:
        if self.has_api_key:
            return f"{self.name}{path} rejected the api key ({status}): the key given is wrong for this server"
        return (
            f"{self.name}{path} requires an api key ({status}): pass --sglang-api-key, set SGLANG_API_KEY, "
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




def _socket_of(response: requests.Response) -> Any:
    """The socket under a streamed response (urllib3 2 over http.client), or None."""
    fp = getattr(getattr(response.raw, "_fp", None), "fp", None)
    raw = getattr(fp, "raw", None)
    return getattr(raw, "_sock", None)
