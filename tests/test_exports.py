"""The public names of each package: every name in ``__all__`` resolves, ``dir()`` lists it, a
misspelt name is a plain AttributeError, and loading the pytest plugin imports none of the
capabilities a run does not use (their names are imported on first use)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

PACKAGES = ["pytest_sglang", "pytest_sglang.judge.explain", "pytest_sglang.judge.fleet", "pytest_sglang.render.capture", "pytest_sglang.judge.bench"]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_resolves_and_is_listed(package: str) -> None:
    module = importlib.import_module(package)
    assert len(set(module.__all__)) == len(module.__all__)
    # Every name the package imports on first use is one it exports (the two lists agree).
    assert set(getattr(module, "_EXPORTS", {})) <= set(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
        assert name in dir(module), name
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'conect'"):
        module.conect  # noqa: B018


def test_an_alias_resolves_to_what_it_names() -> None:
    from pytest_sglang.render.capture import ReplayTarget, Target

    assert Target is ReplayTarget


def test_the_plugin_loads_without_the_capabilities_a_run_does_not_use() -> None:
    """What ``import pytest_sglang.plugin.core`` brings in: not the explain engine, the fleet
    comparison, the replay stack or the benchmark client (each is imported when first used)."""
    code = (
        "import json, sys\n"
        "import pytest_sglang, pytest_sglang.plugin.core, pytest_sglang.judge.explain, pytest_sglang.judge.fleet\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('pytest_sglang'))))\n"
    )
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout))
    for heavy in ("pytest_sglang.judge.explain.engine", "pytest_sglang.judge.explain.api", "pytest_sglang.judge.fleet.core", "pytest_sglang.target.sources.replay", "pytest_sglang.collect.bench.load"):
        assert heavy not in loaded, heavy


def test_an_exported_name_is_what_its_module_holds_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """The package keeps no copy: patching the defining module is seen through the package."""
    import pytest_sglang.judge.fleet
    import pytest_sglang.judge.fleet.core as core

    assert pytest_sglang.judge.fleet.drift is core.drift
    monkeypatch.setattr(core, "open_targets", lambda *a, **k: {})
    from pytest_sglang.judge.fleet import open_targets

    assert open_targets is core.open_targets
