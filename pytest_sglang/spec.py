"""Host specs: the URL-like strings that name a target.

    http://gpu1:30000            a live SGLang server
    https://gpu1:443/sglang      the same behind TLS and a path prefix
    sim://PROFILE                a bundled simulated deployment, started for the session
    sim:///path/to/profile.json  a simulated deployment from a profile file

Query parameters carry per-host options: ``?api_key_env=GPU1_KEY`` names the environment
variable that holds this host's api key (the key itself never appears in a spec, so never
in a test id); ``?ssh=root@gpu1`` (or ``?ssh=local``), ``?unit=sglang.service`` and
``?logs=journald:sglang.service`` give host access.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

from .errors import SpecError

SCHEMES = ("http", "https", "sim")
# Query keys each scheme accepts; later transports add theirs here.
HOST_KEYS = {"ssh", "logs", "unit"}
QUERY_KEYS: dict[str, set[str]] = {
    "http": {"api_key_env"} | HOST_KEYS,
    "https": {"api_key_env", "verify"} | HOST_KEYS,
    "sim": {"api_key_env", "api_key", "admin_api_key"},
}
_PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class HostSpec:
    raw: str = field(repr=False)
    scheme: str
    host: str = ""
    port: int | None = None
    path: str = ""
    query: tuple[tuple[str, str], ...] = ()

    @property
    def options(self) -> dict[str, str]:
        return dict(self.query)

    @property
    def is_simulated(self) -> bool:
        return self.scheme == "sim"

    @property
    def base_url(self) -> str:
        if self.scheme == "sim":
            raise SpecError(f"{self.display} has no URL until the simulator is started")
        port = f":{self.port}" if self.port else ""
        return f"{self.scheme}://{self.host}{port}{self.path}"

    @property
    def display(self) -> str:
        """Secret-free name used in test ids, headers and messages."""
        if self.scheme == "sim":
            return f"sim://{self.host}"
        return self.base_url

    def __str__(self) -> str:
        return self.display


def parse_spec(text: str) -> HostSpec:
    """Parse a host spec; a spec that cannot be understood is a one-line SpecError."""
    raw = text.strip()
    if not raw:
        raise SpecError("empty --sglang-host: give http://HOST:PORT or sim://PROFILE")
    if "://" not in raw:
        hint = f"http://{raw}" if re.match(r"^[\w.-]+:\d+$", raw) else "http://HOST:PORT"
        raise SpecError(f"--sglang-host {raw!r} has no scheme: did you mean {hint}? (or sim://PROFILE)")
    scheme = raw.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        raise SpecError(
            f"--sglang-host scheme {scheme!r} is not supported: use one of "
            + ", ".join(f"{s}://" for s in SCHEMES)
        )
    where = raw.split("?", 1)[0]  # never the query: a sim:// spec may carry keys there
    try:
        parts = urlsplit(raw)
    except ValueError as exc:
        raise SpecError(f"--sglang-host {where}: {exc} (an IPv6 address is written http://[::1]:30000)") from None
    query = tuple(parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted({k for k, _ in query} - QUERY_KEYS[scheme])
    if unknown:
        raise SpecError(
            f"--sglang-host {scheme}:// spec has unknown option(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(QUERY_KEYS[scheme]))}"
        )
    if scheme == "sim":
        return _parse_sim(raw, parts.netloc + parts.path, query)
    if "@" in parts.netloc:
        raise SpecError(
            "--sglang-host must not carry credentials (user:password@); "
            "pass the key with --sglang-api-key or ?api_key_env=VAR"
        )
    if not parts.hostname:
        raise SpecError(f"--sglang-host {scheme}:// spec has no host name")
    try:
        port = parts.port
    except ValueError:
        raise SpecError(f"--sglang-host {scheme}://{parts.netloc}: the port is not a number in 1-65535") from None
    if port == 0:
        raise SpecError(f"--sglang-host {scheme}://{parts.hostname}: port 0 is not a server port")
    host = parts.hostname
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return HostSpec(
        raw=raw,
        scheme=scheme,
        host=host,
        port=port,
        path=parts.path.rstrip("/"),
        query=query,
    )


def _parse_sim(raw: str, rest: str, query: tuple[tuple[str, str], ...]) -> HostSpec:
    name = rest.rstrip("/")
    if not name:
        raise SpecError("sim:// needs a profile name, e.g. sim://qwen35-122b-a10b-4xrtx6000-baseline")
    if name.endswith(".json"):
        return HostSpec(raw=raw, scheme="sim", host=name, query=query)
    if not _PROFILE_NAME.match(name):
        raise SpecError(f"sim://{name}: a profile name uses letters, digits, '.', '_' and '-'")
    return HostSpec(raw=raw, scheme="sim", host=name, query=query)
