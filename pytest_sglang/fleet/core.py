"""Fleet drift: reading hosts in parallel and comparing what replicas must agree on.

Hosts are read in parallel (:func:`open_targets`, one thread per host); :func:`comparable`
reduces a target to what replicas must agree on, and :func:`drift` compares several of them.

    from pytest_sglang.fleet import open_targets, comparable, drift
    opened = open_targets(specs, options)           # {display: Target or SGLangError}
    result = drift({name: comparable(t) for name, t in opened.items() if not isinstance(t, Exception)})
    result.agree, result.differences                # {host: [FieldDiff, ...]}
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from ..errors import SGLangError

if TYPE_CHECKING:
    from ..options import TargetOptions
    from ..spec import HostSpec
    from ..target import Target

# server_args that differ per host by design: where it listens, its own ports and addresses,
# files on its own disks, keys and seeds. Left out of the comparison.
HOST_SPECIFIC = frozenset({"host", "port", "nccl_port", "dist_init_addr", "random_seed", "api_key", "admin_api_key", "ssl_keyfile_password", "encoder_urls"})
_HOST_SPECIFIC_SUFFIX = re.compile(r"(_port|_ports|_addr|_ip|_dir|_file|_certfile|_keyfile|_paths|_path|_url|_urls)$")
# Paths that name what is served: compared by their last component (the checkpoint's name), as
# each host may mount the weights elsewhere.
NAMED_BY_PATH = frozenset({"model_path", "tokenizer_path", "speculative_draft_model_path"})


def open_targets(specs: Sequence[HostSpec], options: TargetOptions | None = None) -> dict[str, Target | SGLangError]:
    """Open every spec at once, one thread per host. Each host keeps its own result: a
    :class:`~pytest_sglang.target.Target`, or the one-line error that host raised."""
    from ..target import Target

    def one(spec: HostSpec) -> Target | SGLangError:
        try:
            return Target.open(spec, options)
        except SGLangError as exc:
            return exc

    if not specs:
        return {}
    if len(specs) == 1:
        return {specs[0].display: one(specs[0])}
    with ThreadPoolExecutor(max_workers=len(specs), thread_name_prefix="sglang-open") as pool:
        results = list(pool.map(one, specs))
    return {spec.display: result for spec, result in zip(specs, results)}


def _last_component(value: Any) -> Any:
    if isinstance(value, str) and "/" in value.rstrip("/"):
        return value.rstrip("/").rsplit("/", 1)[1]
    return value


def comparable(target: Target, ignore: Iterable[str] = ()) -> dict[str, Any]:
    """What replicas must agree on, as flat ``{"effective.NAME" | "server_args.NAME": value}``:
    every effective value and every server argument except host-specific ones (listen address,
    ports, paths on the host's disks, keys, seeds) and the names in ``ignore`` (either
    ``NAME`` or ``effective.NAME`` / ``server_args.NAME``). Model paths count by their last
    component."""
    skip = set(ignore)
    out: dict[str, Any] = {}
    for name, value in target.effective.values().items():
        if name not in skip and f"effective.{name}" not in skip:
            out[f"effective.{name}"] = value
    for name, value in target.server_args.as_dict().items():
        if name in skip or f"server_args.{name}" in skip:
            continue
        if name in NAMED_BY_PATH:
            out[f"server_args.{name}"] = _last_component(value)
        elif name not in HOST_SPECIFIC and not _HOST_SPECIFIC_SUFFIX.search(name):
            out[f"server_args.{name}"] = value
    return out


def sources(target: Target) -> dict[str, str]:
    """Where each compared field was read on this target."""
    out = {f"effective.{name}": prov.source for name, prov in target.effective.provenance.items()}
    where = target.snapshot.server_args_source
    out.update({f"server_args.{name}": where for name in target.server_args.as_dict()})
    return out


@dataclass
class FieldDiff:
    """One field where a host differs from the value most of the fleet has."""

    field: str
    value: Any
    fleet_value: Any
    fleet_hosts: list[str]
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "value": self.value, "fleet_value": self.fleet_value, "fleet_hosts": self.fleet_hosts, "source": self.source}

    def line(self) -> str:
        seen = ", ".join(self.fleet_hosts[:3]) + (f" and {len(self.fleet_hosts) - 3} more" if len(self.fleet_hosts) > 3 else "")
        return f"{self.field} = {_short(self.value)} (fleet: {_short(self.fleet_value)} on {seen})"


@dataclass
class Drift:
    hosts: list[str]
    differences: dict[str, list[FieldDiff]] = field(default_factory=dict)
    fields_compared: int = 0

    @property
    def agree(self) -> bool:
        return not any(self.differences.values())

    @property
    def fields(self) -> list[str]:
        """Every field that is not the same on all hosts."""
        return sorted({d.field for diffs in self.differences.values() for d in diffs})


_MISSING = "<not reported>"


def _key(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True, default=str)


def drift(values: Mapping[str, Mapping[str, Any]], where: Mapping[str, Mapping[str, str]] | None = None) -> Drift:
    """Compare hosts' :func:`comparable` values field by field. For each field the value most
    hosts have is the fleet's (a tie goes to the host listed first); every other host is
    listed with that field."""
    hosts = list(values)
    result = Drift(hosts=hosts, differences={host: [] for host in hosts})
    names = sorted(set().union(*(set(v) for v in values.values()))) if values else []
    result.fields_compared = len(names)
    for name in names:
        groups: dict[str, list[str]] = {}
        shown: dict[str, Any] = {}
        for host in hosts:
            value = values[host].get(name, _MISSING)
            key = _key(value)
            groups.setdefault(key, []).append(host)
            shown.setdefault(key, value)
        if len(groups) < 2:
            continue
        # most hosts first; among equals, the group of the earliest host
        fleet_key = max(groups, key=lambda k: (len(groups[k]), -hosts.index(groups[k][0])))
        for key, members in groups.items():
            if key == fleet_key:
                continue
            for host in members:
                source = (where or {}).get(host, {}).get(name)
                result.differences[host].append(FieldDiff(name, shown[key], shown[fleet_key], groups[fleet_key], source))
    return result


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
