"""Errors a user can fix. Each renders as one line that says what to fix."""

from __future__ import annotations


class SGLangError(Exception):
    """Base class: the message is one line, safe to print (no secrets)."""

    def __init__(self, message: str) -> None:
        from pytest_sglang.base.secrets import scrub  # every error passes the one scrubber before anyone sees it

        super().__init__(scrub(" ".join(str(message).split())))

    @property
    def message(self) -> str:
        return str(self)


class SpecError(SGLangError, ValueError):
    """A host spec or option value that cannot be understood."""


class TargetError(SGLangError):
    """A target that could not be read: unreachable, not SGLang, unauthorised..."""


class NotReadyError(TargetError):
    """The server did not become ready within the wait time."""


class AuthError(TargetError):
    """401/403: the api key is missing or wrong."""


class ParseError(SGLangError):
    """Input text that does not contain what was asked for."""
