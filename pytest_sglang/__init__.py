"""pytest-sglang: assert on what an SGLang server actually runs, not what it was asked to run.

Names are imported on first use, so the pytest plugin costs almost nothing in a pytest run
that does not talk to SGLang.

The package is layered by the data flow, each folder importing only from those below it
(``pyproject.toml`` holds the contract, docs/architecture.md draws it): ``base`` <- ``model``
<- ``parse`` <- ``collect`` <- ``normaliser`` | ``simulator`` <- ``target`` <- ``judge``
<- ``render`` <- ``plugin`` | ``cli``. The simulator is a program of its own, which the
``sim://`` source serves targets from. The capabilities keep their documented import paths
(``pytest_sglang.explain``, ``.bench``, ``.baseline``, ``.capture``, ``.fleet``, ``.launch``,
``.report``, and ``python -m pytest_sglang.sim``), which name the modules that hold them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_sglang.base.lazy import lazy_exports, public_paths
from pytest_sglang.base.version import __version__ as __version__

_EXPORTS = {
    "AuthError": "pytest_sglang.base.errors",
    "NotReadyError": "pytest_sglang.base.errors",
    "ParseError": "pytest_sglang.base.errors",
    "SGLangError": "pytest_sglang.base.errors",
    "SpecError": "pytest_sglang.base.errors",
    "TargetError": "pytest_sglang.base.errors",
    "Facts": "pytest_sglang.model.facts",
    "Effective": "pytest_sglang.model.config",
    "FieldNotInRelease": "pytest_sglang.model.config",
    "ModelInfo": "pytest_sglang.model.config",
    "Provenance": "pytest_sglang.model.config",
    "ServerArgs": "pytest_sglang.model.config",
    "Snapshot": "pytest_sglang.normaliser.snapshot",
    "normalise": "pytest_sglang.normaliser.snapshot",
    "CapacityLine": "pytest_sglang.parse.lines",
    "StartupLine": "pytest_sglang.parse.lines",
    "parse_capacity_line": "pytest_sglang.parse.lines",
    "parse_startup_line": "pytest_sglang.parse.lines",
    "HostSpec": "pytest_sglang.target.spec",
    "parse_spec": "pytest_sglang.target.spec",
    "Target": "pytest_sglang.target.target",
    "TargetOptions": "pytest_sglang.target.options",
    "connect": "pytest_sglang.target.target",
}

__all__ = [
    "AuthError",
    "CapacityLine",
    "Effective",
    "Facts",
    "FieldNotInRelease",
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


# The documented import paths of the library, and the modules that hold them now.
PUBLIC_PATHS = {
    "explain": "judge.explain",
    "bench": "judge.bench",
    "baseline": "judge.baseline",
    "fleet": "judge.fleet",
    "capture": "render.capture",
    "launch": "parse.launch",
    "report": "render.report",
    "sim": "simulator",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
public_paths(__name__, PUBLIC_PATHS)


if TYPE_CHECKING:
    from pytest_sglang.base.errors import AuthError, NotReadyError, ParseError, SGLangError, SpecError, TargetError
    from pytest_sglang.model.config import Effective, FieldNotInRelease, ModelInfo, Provenance, ServerArgs
    from pytest_sglang.model.facts import Facts
    from pytest_sglang.normaliser.snapshot import Snapshot, normalise
    from pytest_sglang.parse.lines import CapacityLine, StartupLine, parse_capacity_line, parse_startup_line
    from pytest_sglang.target.options import TargetOptions
    from pytest_sglang.target.spec import HostSpec, parse_spec
    from pytest_sglang.target.target import Target, connect
