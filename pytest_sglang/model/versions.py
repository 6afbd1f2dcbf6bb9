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


def as_release(version: Version) -> Version:
    """The release a version is read as: a pre-release (``0.5.10rc0``) as its final release, as
    its code is nearly that release's; a post release (``0.5.8.post1``) as itself: SGLang cuts
    post releases from its main branch, so 0.5.5.post1 already carries changes of 0.5.6."""
    return Version(version.base_version) if version.is_prerelease and not version.is_devrelease else version


def within(version: Version, since: Version, until: Version | None) -> bool:
    """Whether a rule's range ``since``..``until`` holds in a release, in the order of releases:
    0.5.5 < 0.5.5.post1 < 0.5.6. A range that ends at 0.5.5 leaves out 0.5.5.post1 until the
    release is added and proven to do the same (the add command extends the range then). A
    release candidate is read as its release, unless it is a bound itself (0.5.0rc2, where no
    0.5.0 final exists, is a release of the knowledge base)."""
    release = version if version in (since, until) else as_release(version)
    return since <= release and (until is None or release <= until)


def nearest_release(version: Version, releases: Sequence[str]) -> str:
    """The known release whose rules and flag table a version is read with: its own; for a
    release between known ones, the newest older one (``0.5.8.post2`` is read as 0.5.8.post1
    where the knowledge base has it, else as 0.5.8); for one older than all, the oldest; for
    one newer than all, the newest. A pre-release is read as its final release when that is
    known. A development build is newer than the newest release before its number
    (``0.5.12.dev5`` follows 0.5.11; ``0.0.0.dev1``, built without release tags, follows every
    known release)."""
    known = sorted(releases, key=Version)
    own = next((r for r in known if Version(r) == version), None)
    if own is not None:
        return own
    if version.is_devrelease:
        base = Version(version.base_version)
        before = [r for r in known if Version(r) < base]
        return before[-1] if before and base <= Version(known[-1]) else known[-1]
    release = as_release(version)
    older = [r for r in known if Version(r) <= release]
    return older[-1] if older else known[0]


def outside_note(version: Version, releases: Sequence[str]) -> str | None:
    """What to tell a user whose SGLang the known ``releases`` do not cover (a development
    build, or a release newer or older than all of them): whose rules are used, and how the
    release itself can answer. None for a version the releases cover."""
    known = sorted(releases, key=Version)
    release = as_release(version)
    execute = f"where SGLang {version} is installed, pytest-sglang explain --execute runs its own post-init on a launch command (--sglang-python PATH)"
    if version.is_devrelease:
        chosen = nearest_release(version, known)
        return f"SGLang {version} is a development build, newer than {chosen}: the rules of {chosen} are used, and SGLang may have changed since; {execute}"
    if any(Version(r) == version for r in known):
        return None
    add = f"python -m pytest_sglang.model.knowledge.release add {version} adds it to the knowledge base (in a checkout of pytest-sglang)"
    if release > Version(known[-1]):
        return f"SGLang {version} is newer than the knowledge base ({known[-1]}): the newest rules are used, and SGLang may have changed since; {add}; {execute}"
    if release < Version(known[0]):
        return f"SGLang {version} is older than the knowledge base ({known[0]}): the oldest rules are used, and that release may differ; {add}; {execute}"
    return None

