"""SGLang's flag table for a release, from a live import of that release's argparse parser.

SGLang declares some flags through helper actions (deprecated spellings that store into a newer
field, legacy switches that store a constant, flags that are accepted and ignored, ``--no-``
forms of boolean flags), so the table is what ``ServerArgs.add_cli_args`` builds, not what its
source looks like. This downloads the wheel of each release (no dependencies; cached under
``~/.cache/pytest-sglang/wheels``), puts it in front of the harness's SGLang 0.5.23 environment
and asks ``sglang_offline.py cli-table``. Before 0.5.19, ``ServerArgs.from_cli_args`` renames
some argparse destinations (``args.tp_size = args.tensor_parallel_size``); the table uses the
field names, as SGLang's start-up line and ``/server_info`` do.

    python tests/real_sglang/flag_table_live.py 0.5.18 [0.5.23 ...]
        # writes pytest_sglang/knowledge_data/sglang-cli-VERSION.json
    python tests/real_sglang/flag_table_live.py --all
        # every release the package ships a table for
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402

OUT = HERE.parents[1] / "pytest_sglang" / "knowledge_data"
WHEELS = harness.CACHE / "wheels"


def shipped_versions() -> list[str]:
    names = (p.name[len("sglang-cli-") : -len(".json")] for p in OUT.glob("sglang-cli-*.json"))
    return sorted(names, key=lambda v: tuple(int(x) for x in v.split(".")))


def wheel(version: str) -> Path:
    found = sorted(WHEELS.glob(f"sglang-{version}-*.whl"))
    if found:
        return found[0]
    WHEELS.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", f"sglang=={version}", "-d", str(WHEELS)],
        check=True, capture_output=True,
    )  # fmt: skip
    return next(WHEELS.glob(f"sglang-{version}-*.whl"))


def renames(server_args_source: str) -> dict[str, str]:
    """``args.NEW = args.OLD`` statements of ``ServerArgs.from_cli_args`` (before 0.5.19)."""
    out: dict[str, str] = {}
    for node in ast.walk(ast.parse(server_args_source)):
        if isinstance(node, ast.FunctionDef) and node.name == "from_cli_args":
            for stmt in node.body:
                if (
                    isinstance(stmt, ast.Assign)
                    and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Attribute)
                    and isinstance(stmt.value, ast.Attribute)
                ):
                    out[stmt.value.attr] = stmt.targets[0].attr
    return out


def table(version: str, python: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp)
        with zipfile.ZipFile(wheel(version)) as whl:
            whl.extractall(src)
        env = {**os.environ, "PYTHONPATH": str(src), "SGLANG_FROM_WHEEL": version}
        out = subprocess.run([str(python), str(HERE / "sglang_offline.py"), "cli-table"], env=env, capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"sglang {version}: cli-table failed: {out.stderr.strip().splitlines()[-1:]}")
        moved = renames((src / "sglang" / "srt" / "server_args.py").read_text())
    data = json.loads(out.stdout)
    if data["sglang_version"] != version:
        raise RuntimeError(f"asked for sglang {version}, imported {data['sglang_version']}")
    fields = data["fields"]
    for old, new in moved.items():
        if old in fields and new not in fields:
            fields[new] = fields.pop(old)
    data["fields"] = dict(sorted(fields.items()))
    data["source"] = f"argparse table of sglang {version}'s ServerArgs.add_cli_args (from_cli_args renames applied), written by tests/real_sglang/flag_table_live.py"
    return data


def write(version: str, python: Path) -> str:
    data = table(version, python)
    path = OUT / f"sglang-cli-{version}.json"
    path.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")
    aliases = sum(len(e.get("aliases", [])) for e in data["fields"].values())
    return f"wrote {path.name}: {len(data['fields'])} fields, {aliases} further spellings"


if __name__ == "__main__":
    python = harness.ensure_environment()
    versions = shipped_versions() if sys.argv[1:] == ["--all"] else sys.argv[1:]
    for version in versions:
        print(write(version, python))
