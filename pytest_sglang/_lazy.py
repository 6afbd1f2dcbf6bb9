"""Names a package exports but imports on first use (PEP 562), so that loading the pytest
plugin costs nothing for the capabilities a run does not use.

    __getattr__, __dir__ = lazy_exports(__name__, {"explain": "api", "Target": "replay:ReplayTarget"}, globals())

Each name maps to the submodule that defines it, or to ``submodule:attribute`` when the
package exports it under another name. A name is looked up in its submodule on every access
(the submodule itself is imported once), so the package never holds a stale copy: a test that
patches ``pytest_sglang.fleet.core.open_targets`` is seen through ``pytest_sglang.fleet`` too.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's module-level ``__getattr__`` and ``__dir__``."""

    def __getattr__(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        return getattr(importlib.import_module(f"{package}.{module}"), attribute or name)

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
