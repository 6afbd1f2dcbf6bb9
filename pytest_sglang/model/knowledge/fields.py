"""Which ServerArgs fields each SGLang release has, and what a renamed field is called in
another release: read from the flag data (``flags/sglang-defaults.json``, each release's
fields; the flag tables, where a deprecated spelling of a flag names the field it was), so a
test that reads a field its host's release lacks is told so in one line (:func:`missing_field`)."""

from __future__ import annotations

import difflib
import json
from functools import lru_cache
from importlib import resources
from typing import Any

from packaging.version import Version

from pytest_sglang.model.knowledge.settings import SAME_SETTING
from pytest_sglang.model.versions import nearest_release, parse_version

_FLAGS = "flags"
_TABLE_PREFIX = "sglang-cli-"


def _read(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(resources.files("pytest_sglang.model.knowledge").joinpath(_FLAGS).joinpath(name).read_text())
    return data


@lru_cache(maxsize=None)
def release_fields() -> dict[str, frozenset[str]]:
    """Every release the package knows, oldest first, with its ServerArgs fields (each release
    after the first is stored as what it adds and removes)."""
    releases = _read("sglang-defaults.json")["releases"]
    out: dict[str, frozenset[str]] = {}
    fields: set[str] = {"model_path"}  # every release's, left out of the defaults as it has none
    for release in sorted(releases, key=Version):
        fields |= set(releases[release].get("set") or ())
        fields -= set(releases[release].get("removed") or ())
        out[release] = frozenset(fields)
    return out


@lru_cache(maxsize=None)
def renames() -> dict[str, frozenset[str]]:
    """Field -> the fields it is called in other releases: a flag that is a field's own in one
    release and a deprecated spelling of another field in a later one names one setting."""
    owner: dict[str, set[str]] = {}  # flag -> fields that flag sets, in any release
    names = [p.name for p in resources.files("pytest_sglang.model.knowledge").joinpath(_FLAGS).iterdir() if p.name.startswith(_TABLE_PREFIX)]
    aliased: list[tuple[str, str]] = []  # (flag, the field it is a deprecated spelling of)
    for name in names:
        for dest, entry in _read(name)["fields"].items():
            for flag in entry.get("flags") or ():
                owner.setdefault(flag, set()).add(dest)
            aliased += [(flag, dest) for alias in entry.get("aliases") or () if alias.get("deprecated") for flag in alias.get("flags") or ()]
    out: dict[str, set[str]] = {}
    for flag, dest in aliased:
        for old in owner.get(flag, set()) - {dest}:
            out.setdefault(old, set()).add(dest)
            out.setdefault(dest, set()).add(old)
    return {name: frozenset(others) for name, others in out.items()}


def known_release(version: str | None) -> str | None:
    """The release whose field set a host's version is read with (its own, else the nearest)."""
    parsed = parse_version(version)
    return nearest_release(parsed, list(release_fields())) if parsed is not None else None


def has_field(version: str | None, name: str) -> bool | None:
    """Whether the release has the field; None when the version is unknown."""
    release = known_release(version)
    return None if release is None else name in release_fields()[release]


def _ranges(releases: list[str]) -> str:
    """``0.5.5-0.5.13, 0.5.16``: consecutive known releases joined."""
    order = list(release_fields())
    spans: list[list[str]] = []
    for release in releases:
        if spans and order.index(release) == order.index(spans[-1][-1]) + 1:
            spans[-1].append(release)
        else:
            spans.append([release])
    return ", ".join(span[0] if len(span) == 1 else f"{span[0]}-{span[-1]}" for span in spans)


def missing_field(label: str, version: str | None, name: str) -> str:
    """One line: the field, the host's release, the releases that have it, its name in the
    host's release if it was renamed, and where a value read in every release lives."""
    fields = release_fields()
    release = known_release(version)
    if release is None:
        return f"{label}.{name}: the host did not report it, and its SGLang release is unknown, so whether that release has the field cannot be told"
    shown = f"SGLang {version}" + ("" if release == version else f" (read as {release}, the nearest release pytest-sglang knows)")
    having = [r for r, names in fields.items() if name in names]
    first, last = next(iter(fields)), list(fields)[-1]
    if having:
        text = f"{label}.{name}: {shown} has no such field (releases that have it: {_ranges(having)})"
    else:
        # Not a server argument of any release; /server_info also carries a few keys of its
        # own (stat_loggers, watermark_*): the host did not report this one.
        text = f"{label}.{name}: the host did not report it, and no SGLang release {first}-{last} has a server argument of that name"
        close = difflib.get_close_matches(name, sorted(fields[release]), n=1)
        if close:
            text += f" (did you mean {close[0]}?)"
    there = sorted(other for other in renames().get(name, ()) if other in fields[release])
    if there:
        text += f"; in {release} it is {' / '.join(there)}"
    everywhere = sorted(eff for eff, sources in SAME_SETTING.items() if name in sources)[:3]
    if everywhere and having:
        text += f"; read in every release as {', '.join('effective.' + e for e in everywhere)}"
    return text


__all__ = ["has_field", "known_release", "missing_field", "release_fields", "renames"]
