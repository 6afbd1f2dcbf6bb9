"""Every name the manual and the README document still works: each import, each `python -m`
module, each pytest option and ini key, each command of the command line. A rename that leaves
a documented name behind fails here, before a user's script or CI step does."""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
TEXT = {page.name: page.read_text() for page in PAGES}
ALL = "\n".join(TEXT.values())

ONE_LINE = set(re.findall(r"^\s*from (pytest_sglang(?:\.\w+)*) import ([\w, ]+?)\s*(?:#.*)?$", ALL, re.M))
# and those written over several lines: ``from pytest_sglang.x import (\n    a,  # why\n    b,\n)``
WRAPPED = {(m, ", ".join(re.sub(r"#[^\n]*", "", n).replace(",", " ").split())) for m, n in re.findall(r"^\s*from (pytest_sglang(?:\.\w+)*) import \(([^)]*)\)", ALL, re.M)}
IMPORTS = sorted(ONE_LINE | WRAPPED)
MODULES = sorted(set(re.findall(r"python -m (pytest_sglang(?:\.\w+)*)", ALL)))
OPTIONS = sorted(set(re.findall(r"(?<![\w-])(--sglang-[a-z][a-z0-9-]*[a-z0-9])", ALL)))
INI_KEYS = sorted({key for block in re.findall(r"```ini\n(.*?)```", ALL, re.S) for key in re.findall(r"^(sglang_\w+)\s*=", block, re.M)})
COMMANDS = sorted(set(re.findall(r"(?:\$ |`)pytest-sglang ([a-z]+)(?=[ `\n])", ALL)))


def test_the_manual_documents_names_of_each_kind():
    assert len(IMPORTS) >= 10 and len(MODULES) >= 2 and len(OPTIONS) >= 20 and len(INI_KEYS) >= 3 and len(COMMANDS) >= 4


@pytest.mark.parametrize("module, names", IMPORTS, ids=[f"{m}:{n.strip()}" for m, n in IMPORTS])
def test_every_documented_import_works(module, names):
    loaded = importlib.import_module(module)
    for name in (n.strip() for n in names.split(",") if n.strip()):
        assert hasattr(loaded, name) or importlib.util.find_spec(f"{module}.{name}") is not None, f"from {module} import {name}"


@pytest.mark.parametrize("module", MODULES)
def test_every_documented_module_runs(module):
    spec = importlib.util.find_spec(module)
    assert spec is not None, f"python -m {module}"
    runnable = spec.submodule_search_locations is None or importlib.util.find_spec(f"{module}.__main__") is not None
    assert runnable, f"python -m {module}: a package without __main__"


@pytest.fixture(scope="module")
def pytest_help() -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def cli_help() -> str:
    """The help of every command of the command line (its explain takes --sglang-version)."""
    out = []
    for command in COMMANDS:
        done = subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", command, "--help"], capture_output=True, text=True)
        out.append(done.stdout)
    return "\n".join(out)


@pytest.mark.parametrize("option", OPTIONS)
def test_every_documented_option_exists_in_a_front_end(option, pytest_help, cli_help):
    pattern = rf"(?<![\w-]){re.escape(option)}(?![\w-])"
    assert re.search(pattern, pytest_help) or re.search(pattern, cli_help), f"{option} is documented, but neither pytest --help nor pytest-sglang's commands list it"


@pytest.mark.parametrize("key", INI_KEYS)
def test_every_documented_ini_key_exists(key, pytest_help):
    assert re.search(rf"^\s+{key}\s", pytest_help, re.M), f"the ini key {key} is documented but pytest --help does not list it"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_documented_command_exists(command):
    done = subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", command, "--help"], capture_output=True, text=True)
    assert done.returncode == 0, f"pytest-sglang {command}: {done.stderr.strip()[-300:]}"



def test_the_documented_format_versions_are_the_ones_written():
    """The versions the pages give for each file the package writes: a reader's document
    names the version it was told, and a bump that forgets the page fails here."""
    from pytest_sglang.collect.capture import FORMAT
    from pytest_sglang.judge.baseline.document import DOCUMENT_FORMAT
    from pytest_sglang.judge.gate.document import REPORT_FORMAT
    from pytest_sglang.model.facts import FACTS_FORMAT

    assert f"| `format` | document format ({DOCUMENT_FORMAT}) |" in TEXT["baselines.md"]
    assert f'"format": "{FORMAT}"' in TEXT["capture.md"]
    assert f"| `format` | the facts format, `{FACTS_FORMAT}` |" in TEXT["capture.md"]
    assert f"the report format (`{REPORT_FORMAT}`)" in TEXT["reports.md"] and f'"format": {REPORT_FORMAT},' in TEXT["reports.md"]
    schema = json.loads((ROOT / "pytest_sglang" / "render" / "report" / "schema.json").read_text())
    assert schema["properties"]["format"].get("const", REPORT_FORMAT) == REPORT_FORMAT
