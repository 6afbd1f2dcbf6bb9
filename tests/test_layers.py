"""The package's shape is a contract: layers by the data flow (``pyproject.toml``'s
``[tool.importlinter]``), no import cycles, a top level a newcomer reads at a glance, and every
folder saying its role. docs/architecture.md draws the same layers; a test keeps them equal."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pytest_sglang"
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_the_layer_contracts_hold_and_no_module_imports_in_a_cycle():
    pytest.importorskip("importlinter", reason="install the test extra: pip install '.[test]' (import-linter)")
    done = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports())"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert {"layers", "acyclic", "target-sources", "sources-independent", "simulator", "simulator-api"} <= {c["id"] for c in CONTRACTS}
    assert "BROKEN" not in done.stdout and "kept, 0 broken" in done.stdout


def test_the_contract_catches_an_upward_import(tmp_path):
    """The contract is not vacuous: a copy of the package where ``base`` imports ``target`` is
    refused, naming the import."""
    pytest.importorskip("importlinter", reason="install the test extra: pip install '.[test]' (import-linter)")
    import shutil

    copy = tmp_path / "pytest_sglang"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.toml"))
    text = (copy / "base" / "text.py").read_text()
    (copy / "base" / "text.py").write_text(text + "\nfrom pytest_sglang.target.target import Target  # noqa\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    code = "import sys; sys.path.insert(0, %r); from importlinter.cli import lint_imports; sys.exit(lint_imports())" % str(tmp_path)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "pytest_sglang.base.text -> pytest_sglang.target.target" in " ".join(done.stdout.split())


def test_the_simulator_contracts_refuse_a_reach_inside_it_and_an_importer_outside_the_two(tmp_path):
    """The plugin may use the simulator's API but not its modules (it reached into
    ``sim.launcher`` once), and the judge may not use the simulator at all."""
    pytest.importorskip("importlinter", reason="install the test extra: pip install '.[test]' (import-linter)")
    import shutil

    copy = tmp_path / "pytest_sglang"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.toml"))
    for module, line in (("plugin/core.py", "from pytest_sglang.simulator.launcher import start_simulator"), ("judge/fleet/core.py", "from pytest_sglang.simulator import load_profile")):
        text = (copy / module).read_text()
        (copy / module).write_text(text + f"\n{line}  # noqa\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    code = "import sys; sys.path.insert(0, %r); from importlinter.cli import lint_imports; sys.exit(lint_imports())" % str(tmp_path)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    out = " ".join(done.stdout.split())
    assert "pytest_sglang.plugin.core -> pytest_sglang.simulator.launcher" in out
    assert "pytest_sglang.judge.fleet.core -> pytest_sglang.simulator" in out
    for contract in ("simulator", "simulator-api"):
        assert next(c["name"] for c in CONTRACTS if c["id"] == contract) + " BROKEN" in out


def test_the_top_level_has_a_folder_a_layer_and_each_folder_says_its_role():
    entries = sorted(p.name for p in PACKAGE.iterdir() if p.name not in ("__pycache__",))
    # the eleven layer folders (the simulator among them), __init__.py and py.typed
    assert len(entries) <= 13, entries
    layer_folders = [p for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    for folder in layer_folders:
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text()))
        assert doc, f"{folder.name}/__init__.py says nothing of its role"
    layers = next(c for c in CONTRACTS if c["id"] == "layers")["layers"]
    named = {name.strip() for layer in layers for name in layer.split("|")}
    assert named == {p.name for p in layer_folders}, "every folder is a layer of the contract, and every layer a folder"


def test_the_architecture_page_draws_the_contract_layers_in_order():
    page = (ROOT / "docs" / "architecture.md").read_text()
    diagram = re.search(r"```mermaid\n(.*?)```", page, re.S)
    assert diagram, "docs/architecture.md has a Mermaid diagram"
    layers = next(c for c in CONTRACTS if c["id"] == "layers")["layers"]
    positions = []
    for layer in layers:
        for name in layer.split("|"):
            found = re.search(rf"\b{name.strip()}\[", diagram.group(1))
            assert found, f"the diagram has no node for {name.strip()}"
            positions.append(found.start())
    assert positions == sorted(positions), "the diagram lists the layers top to bottom, as the contract does"


def test_the_documented_import_paths_name_the_modules_that_hold_them_now():
    """Scripts written against the documented paths keep working and see the same objects: a
    patch through one name is seen through the other, and no module is imported twice."""
    import importlib

    import pytest_sglang

    for public, real in pytest_sglang.PUBLIC_PATHS.items():
        assert importlib.import_module(f"pytest_sglang.{public}") is importlib.import_module(f"pytest_sglang.{real}")
    from pytest_sglang.baseline.compare import changes
    from pytest_sglang.judge.baseline.compare import changes as real_changes
    from pytest_sglang.report.schema import load_schema

    assert changes is real_changes and load_schema()["title"]
    assert sys.modules["pytest_sglang.baseline.compare"] is sys.modules["pytest_sglang.judge.baseline.compare"]
    assert sys.modules["pytest_sglang.judge.baseline.compare"].__spec__.name == "pytest_sglang.judge.baseline.compare"


@pytest.mark.parametrize("module", ["pytest_sglang.cli", "pytest_sglang.sim"])
def test_the_documented_python_dash_m_commands_run(module):
    done = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
