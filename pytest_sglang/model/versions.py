"""SGLang version numbers and the version ranges markers are written with."""

from __future__ import annotations

import re
from typing import Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from pytest_sglang.base.errors import SpecError

_LEADING = re.compile(r"^\s*v?(\d+(?:\.\d+)*(?:\.?(?:post|dev|rc|a|b)\d*)*)")


def parse_version(text: str | None) -> Version | None:
    """``'0.5.8.post1'`` -> Version; anything unparseable -> None."""
    if not text:
        return None
    match = _LEADING.match(str(text))
    if not match:
        return None
    try:
        return Version(match.group(1))
    except InvalidVersion:
        return None


def version_spec(text: str) -> SpecifierSet:
    """``'>=0.5.10'``, ``'>=0.5.10,<0.5.14'`` or a bare ``'0.5.12'`` (meaning ``==0.5.12``)."""
    raw = str(text).strip()
    if raw and raw[0].isdigit():
        raw = f"=={raw}"
    try:
        return SpecifierSet(raw, prereleases=True)
    except InvalidSpecifier:
        raise SpecError(
            f"requires_sglang({text!r}) is not a version range: write e.g. '>=0.5.10' or '>=0.5.10,<0.5.14'"
        ) from None


def in_range(version: Version, low: str, high: str | None = None) -> bool:
    """low <= version (< high); post releases count as their base release."""
    base = Version(version.base_version)
    return base >= Version(low) and (high is None or base < Version(high))


def nearest_release(version: Version, releases: Sequence[str]) -> str:
    """The known release whose rules and flag table a version is read with: its own (a post or
    rc release too); for a release between known ones, the newest older one; for one older
    than all, the oldest; for one newer than all, the newest. A development build is newer than the newest release
    before its number (``0.5.12.dev5`` follows 0.5.11; ``0.0.0.dev1``, built without release
    tags, follows every known release)."""
    known = sorted(releases, key=Version)
    if any(Version(r) == version for r in known):  # its own, a post or rc release too (0.5.0rc2)
        return next(r for r in known if Version(r) == version)
    base = Version(version.base_version)
    if version.is_devrelease:
        before = [r for r in known if Version(r) < base]
        return before[-1] if before and base <= Version(known[-1]) else known[-1]
    # A release candidate is read as its release; a post release follows its release and the
    # post releases before it (0.5.8.post2: 0.5.8.post1 when known, else 0.5.8).
    older = [r for r in known if Version(r) <= (base if version.is_prerelease else version)]
    return older[-1] if older else known[0]


def outside_note(version: Version, releases: Sequence[str]) -> str | None:
    """What to tell a user whose SGLang the known ``releases`` do not cover (a development
    build, or a release newer or older than all of them): whose rules are used, and how the
    release itself can answer. None for a version the releases cover."""
    known = sorted(releases, key=Version)
    base = Version(version.base_version)
    execute = f"where SGLang {version} is installed, pytest-sglang explain --execute runs its own post-init on a launch command (--sglang-python PATH)"
    if version.is_devrelease:
        chosen = nearest_release(version, known)
        return f"SGLang {version} is a development build, newer than {chosen}: the rules of {chosen} are used, and SGLang may have changed since; {execute}"
    if base > Version(known[-1]):
        return f"SGLang {version} is newer than the knowledge base ({known[-1]}): the newest rules are used, and SGLang may have changed since; {execute}"
    if base < Version(known[0]):
        return f"SGLang {version} is older than the knowledge base ({known[0]}): the oldest rules are used, and that release may differ; {execute}"
    return None

