"""Names a package exports but imports on first use (PEP 562), so that loading the pytest
plugin costs nothing for the capabilities a run does not use.

    __getattr__, __dir__ = lazy_exports(__name__, {"explain": "api", "Target": "replay:ReplayTarget"}, globals())

Each name maps to the submodule that defines it (or, dotted, to any module), or to
``submodule:attribute`` when the package exports it under another name. A name is looked up in its submodule on every access
(the submodule itself is imported once), so the package never holds a stale copy: a test that
patches ``pytest_sglang.judge.fleet.core.open_targets`` is seen through ``pytest_sglang.judge.fleet`` too.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's module-level ``__getattr__`` and ``__dir__``."""

    def __getattr__(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        absolute = module if "." in module else f"{package}.{module}"  # a dotted name is another package's module
        return getattr(importlib.import_module(absolute), attribute or name)

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


class _PublicPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``package.explain`` (and ``package.explain.kb``) as the module that holds it now
    (``package.judge.explain``): the same module object under both names, imported once."""

    def __init__(self, package: str, paths: Mapping[str, str]) -> None:
        self._package = package
        self._paths = dict(paths)
        self._specs: dict[str, Any] = {}

    def _real(self, fullname: str) -> str | None:
        head, _, rest = fullname.partition(".")
        if head != self._package or not rest:
            return None
        for public, real in self._paths.items():
            if rest == public or rest.startswith(public + "."):
                return f"{self._package}.{real}{rest[len(public):]}"
        return None

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        real = self._real(fullname)
        if real is None or importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self._real(spec.name) or spec.name)
        self._specs[module.__name__] = module.__spec__
        return module

    def is_package(self, fullname: str) -> bool:
        real = importlib.util.find_spec(self._real(fullname) or fullname)
        return real is not None and real.submodule_search_locations is not None

    def get_code(self, fullname: str) -> Any:
        """The real module's code, for ``python -m`` (runpy runs a module from its code)."""
        name = self._real(fullname) or fullname
        real = importlib.util.find_spec(name)
        return real.loader.get_code(name) if real is not None and real.loader is not None else None  # type: ignore[attr-defined]

    def exec_module(self, module: ModuleType) -> None:
        # The import system has just given the module the public name's spec: it keeps its own.
        module.__spec__ = self._specs.pop(module.__name__, module.__spec__)


def public_paths(package: str, paths: Mapping[str, str]) -> None:
    """Keep the library's documented import paths (``pytest_sglang.explain``,
    ``pytest_sglang.bench``...) as names of the modules that hold them in the layered layout, so
    a script written against the documented path keeps working and sees the very same objects
    (a patch through either name is seen through the other)."""
    if not any(isinstance(finder, _PublicPaths) and finder._package == package for finder in sys.meta_path):
        sys.meta_path.insert(0, _PublicPaths(package, paths))
