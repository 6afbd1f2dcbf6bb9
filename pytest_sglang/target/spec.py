"""Host specs: the URL-like strings that name a target.

    http://gpu1:30000            a live SGLang server
    https://gpu1:443/sglang      the same behind TLS and a path prefix
    sim://PROFILE                a bundled simulated deployment, started for the session
    sim:///path/to/profile.json  a simulated deployment from a profile file (or a capture)
    replay:FILE                  a capture file, read offline (see pytest_sglang.render.capture)

Query parameters carry per-host options: ``?api_key_env=GPU1_KEY`` names the environment
variable that holds this host's api key (the key itself never appears in a spec, so never
in a test id); ``?ssh=root@gpu1`` (or ``?ssh=local``), ``?unit=sglang.service`` and
``?logs=journald:sglang.service`` give host access.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Iterable
from urllib.parse import parse_qsl, urlsplit

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.secrets import clip, register
from pytest_sglang.base.settings import setting

SCHEMES = ("http", "https", "sim")
# Query keys each scheme accepts; later transports add theirs here.
HOST_KEYS = {"ssh", "logs", "unit"}
QUERY_KEYS: dict[str, set[str]] = {
    "http": {"api_key_env"} | HOST_KEYS,
    "https": {"api_key_env", "verify"} | HOST_KEYS,
    "sim": {"api_key_env", "api_key", "admin_api_key"},
}
_PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_LABEL = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?$")
_IPV4 = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
SECRET_QUERY_KEYS = ("api_key", "admin_api_key")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


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
    def secrets(self) -> list[str]:
        """The keys the spec itself carries (a simulator's ``?api_key=``), to be scrubbed."""
        return [value for key, value in self.query if key in SECRET_QUERY_KEYS and value]

    @property
    def is_simulated(self) -> bool:
        return self.scheme == "sim"

    @property
    def base_url(self) -> str:
        if self.scheme == "sim":
            raise SpecError(f"{self.display} has no URL until the simulator is started")
        if self.scheme == "replay":
            raise SpecError(f"{self.display} is a capture: it has no URL")
        port = f":{self.port}" if self.port else ""
        return f"{self.scheme}://{self.host}{port}{self.path}"

    @property
    def display(self) -> str:
        """Secret-free name used in test ids, headers and messages."""
        if self.scheme in ("sim", "replay"):
            return f"sim://{self.host}" if self.scheme == "sim" else f"replay:{self.host}"
        return self.base_url

    def __str__(self) -> str:
        return self.display


def parse_specs(texts: list[str]) -> list[HostSpec]:
    """Several specs, each target once: the same spec twice is kept once; the same target
    given twice with different options is an error (one of them would be silently dropped)."""
    specs: dict[str, HostSpec] = {}
    for text in texts:
        spec = parse_spec(text)
        seen = specs.get(spec.display)
        if seen is None:
            specs[spec.display] = spec
        elif seen.options != spec.options:
            differ = sorted(k for k in seen.options.keys() | spec.options.keys() if seen.options.get(k) != spec.options.get(k))
            raise SpecError(f"{setting('host')} {spec.display} is given twice with different options ({', '.join(differ)}): give it once")
    return list(specs.values())


# The environment variables that hold a key before any host is read: the api key the plugin
# and the command line send, and the simulator's admin key.
SECRET_ENVIRONMENT = ("SGLANG_API_KEY", "PYTEST_SGLANG_SIM_ADMIN_API_KEY")


def register_secrets(specs: Iterable[HostSpec] = ()) -> None:
    """Make secrets, before anything is read or written, of every key a run knows from its
    environment (the api key the options give is registered where it is resolved,
    :func:`~pytest_sglang.target.options.resolve_api_key`): the variables of
    :data:`SECRET_ENVIRONMENT`, the variable each spec's ``?api_key_env=`` names, and the keys a
    spec carries (``sim://...?api_key=``). The plugin and ``pytest-sglang report`` both call
    it, so a report rendered later scrubs what the run scrubbed."""
    specs = list(specs)
    register(
        *(os.environ.get(name) for name in SECRET_ENVIRONMENT),
        *(os.environ.get(spec.options["api_key_env"]) for spec in specs if "api_key_env" in spec.options),
        *(secret for spec in specs for secret in spec.secrets),
    )


def environment_specs() -> list[HostSpec]:
    """The specs ``SGLANG_HOST`` names, those that parse (for their secrets only: a spec that
    does not parse is the run's error to report, not a later reader's)."""
    specs = []
    for text in os.environ.get("SGLANG_HOST", "").split():
        try:
            specs.append(parse_spec(text))
        except SpecError:
            continue
    return specs


def parse_spec(text: str) -> HostSpec:
    """Parse a host spec; a spec that cannot be understood is a one-line SpecError. The query
    (which may carry a simulator key) is never echoed in an error."""
    raw = text.strip()
    if not raw:
        raise SpecError(f"empty {setting('host')}: give http://HOST:PORT or sim://PROFILE")
    if raw[:7].lower() == "replay:":  # replay:FILE, a capture: the rest is a path, no options
        path = raw[7:].removeprefix("//")
        if not path or "?" in path:
            raise SpecError("replay: takes a capture file and no options, e.g. replay:captures/gpu1.json")
        return HostSpec(raw=raw, scheme="replay", host=path)
    if "://" not in raw:
        bare = raw.split("?", 1)[0]
        hint = f"http://{bare}" if re.match(r"^[\w.-]+:\d+$", bare) else "http://HOST:PORT"
        raise SpecError(f"{setting('host')} {bare!r} has no scheme: did you mean {hint}? (or sim://PROFILE)")
    scheme = raw.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        raise SpecError(  # names only the scheme, never the rest
            f"{setting('host')} scheme {scheme!r} is not supported: use one of "
            + ", ".join(f"{s}://" for s in SCHEMES)
        )
    where = raw.split("?", 1)[0]  # never the query: a sim:// spec may carry keys there
    try:
        parts = urlsplit(raw)
    except ValueError as exc:
        raise SpecError(f"{setting('host')} {where}: {exc} (an IPv6 address is written http://[::1]:30000)") from None
    query = tuple(parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted({k for k, _ in query} - QUERY_KEYS[scheme])
    if unknown:
        raise SpecError(
            f"{setting('host')} {scheme}:// spec has unknown option(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(QUERY_KEYS[scheme]))}"
        )
    if scheme == "sim":
        return _parse_sim(raw, parts.netloc + parts.path, query)
    if "@" in parts.netloc:
        raise SpecError(
            f"{setting('host')} must not carry credentials (user:password@); "
            f"pass the key with {setting('api_key')} or ?api_key_env=VAR"
        )
    if not parts.hostname:
        raise SpecError(f"{setting('host')} {scheme}:// spec has no host name")
    try:
        port = parts.port
    except ValueError:
        raise SpecError(f"{setting('host')} {scheme}://{parts.netloc}: the port is not a number in 1-65535") from None
    if port == 0:
        raise SpecError(f"{setting('host')} {scheme}://{parts.hostname}: port 0 is not a server port")
    host = parts.hostname
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    path = parts.path.rstrip("/")
    if path.split("/")[-1] in ("v1", "generate", "server_info", "get_server_info"):
        root = f"{scheme}://{parts.netloc}{path.rsplit('/', 1)[0]}"
        raise SpecError(
            f"{setting('host')} {where}: give the server's root, not an endpoint (pytest-sglang reads /server_info, /v1/models, ... "
            f"itself): did you mean {root}?"
        )
    verify = dict(query).get("verify")
    if verify is not None and verify.lower() not in _TRUE + _FALSE and not verify.startswith(("/", "~", "./")):
        raise SpecError(f"{setting('host')} {where}: ?verify={clip(verify, 23, ellipsis='...')} is not understood: write verify=true, verify=false or verify=/path/to/ca-bundle.pem")
    return HostSpec(
        raw=raw,
        scheme=scheme,
        host=host,
        port=port,
        path=path,
        query=query,
    )


def check_host_name(spec: HostSpec) -> None:
    """A DNS name of labels of 1 to 63 letters, digits, '-' or '_' (253 at most), or an IP
    address; checked when the target is opened, so a bad name fails that host only."""
    name = spec.host
    if spec.is_simulated or name.startswith("[") or _IPV4.match(name):
        return
    problem = None
    labels = name.rstrip(".").split(".")
    if len(name) > 253:
        problem = "is longer than 253 characters"
    elif any(not label for label in labels):
        problem = "has an empty label ('..' or a leading '.')"
    elif any(len(label) > 63 for label in labels):
        problem = "has a label longer than 63 characters"
    elif any(not _LABEL.match(label) for label in labels):
        problem = "has a character a host name cannot have"
    if problem:
        shown = clip(name, 80, ellipsis="...")
        raise SpecError(f"{spec.display}: the host name {shown!r} {problem}: check the spelling")


def verify_setting(spec: HostSpec) -> bool | str:
    """What to give requests' ``verify`` for an https spec: True, False or a CA bundle path."""
    value = spec.options.get("verify")
    if value is None or value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    return value


def _parse_sim(raw: str, rest: str, query: tuple[tuple[str, str], ...]) -> HostSpec:
    name = rest.rstrip("/")
    if not name:
        raise SpecError("sim:// needs a profile name, e.g. sim://qwen35-122b-a10b-4xrtx6000-baseline")
    if name.endswith(".json"):
        return HostSpec(raw=raw, scheme="sim", host=name, query=query)
    if not _PROFILE_NAME.match(name):
        raise SpecError(f"sim://{name}: a profile name uses letters, digits, '.', '_' and '-'")
    return HostSpec(raw=raw, scheme="sim", host=name, query=query)
