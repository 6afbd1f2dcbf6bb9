"""SGLang version numbers and the version ranges markers are written with."""

from __future__ import annotations

import re

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from .errors import SpecError

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
