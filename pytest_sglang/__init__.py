"""pytest-sglang: assert on what an SGLang server actually runs, not what it was asked to run.

Names are imported on first use, so the pytest plugin costs almost nothing in a pytest run
that does not talk to SGLang.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    "AuthError": "errors",
    "NotReadyError": "errors",
    "ParseError": "errors",
    "SGLangError": "errors",
    "SpecError": "errors",
    "TargetError": "errors",
    "Facts": "facts",
    "Effective": "models",
    "ModelInfo": "models",
    "Provenance": "models",
    "ServerArgs": "models",
    "Snapshot": "normaliser",
    "normalise": "normaliser",
    "CapacityLine": "parse",
    "StartupLine": "parse",
    "parse_capacity_line": "parse",
    "parse_startup_line": "parse",
    "HostSpec": "spec",
    "parse_spec": "spec",
    "Target": "target",
    "TargetOptions": "options",
    "connect": "target",
}

__all__ = [
    "AuthError",
    "CapacityLine",
    "Effective",
    "Facts",
    "HostSpec",
    "ModelInfo",
    "NotReadyError",
    "ParseError",
    "Provenance",
    "SGLangError",
    "ServerArgs",
    "Snapshot",
    "SpecError",
    "StartupLine",
    "Target",
    "TargetError",
    "TargetOptions",
    "connect",
    "normalise",
    "parse_capacity_line",
    "parse_spec",
    "parse_startup_line",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:
    from .errors import AuthError, NotReadyError, ParseError, SGLangError, SpecError, TargetError
    from .facts import Facts
    from .models import Effective, ModelInfo, Provenance, ServerArgs
    from .normaliser import Snapshot, normalise
    from .parse import CapacityLine, StartupLine, parse_capacity_line, parse_startup_line
    from .spec import HostSpec, parse_spec
    from .options import TargetOptions
    from .target import Target, connect
