"""pytest-sglang: assert on what an SGLang server actually runs, not what it was asked to run."""

from .errors import AuthError, NotReadyError, ParseError, SGLangError, SpecError, TargetError
from .facts import Facts
from .models import Effective, ModelInfo, Provenance, ServerArgs
from .normalise import Snapshot, normalise
from .parse import CapacityLine, StartupLine, parse_capacity_line, parse_startup_line
from .spec import HostSpec, parse_spec
from .target import Target, TargetOptions, connect

__version__ = "0.1.0"

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
