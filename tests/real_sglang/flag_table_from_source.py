"""SGLang's flag table for versions before 0.5.19, read from the wheel's own source.

Up to 0.5.18 ``ServerArgs.add_cli_args`` is hand-written ``parser.add_argument(...)`` calls;
reading them with ``ast`` (nothing imported, nothing run) gives the same table
``sglang_offline.py cli-table`` gets from a live import of 0.5.23.

    python tests/real_sglang/flag_table_from_source.py 0.5.12 [0.5.18 ...]
        # downloads sglang==VERSION (no dependencies) and writes
        # pytest_sglang/knowledge_data/sglang-cli-VERSION.json
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "pytest_sglang" / "knowledge_data"
TYPES = {"int": "int", "float": "float", "str": "str", "loads": "json", "json.loads": "json", "human_readable_int": "int", "nullable_str": "str"}


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _name(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return None


def _constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level names bound to literals (e.g. ``LOAD_FORMAT_CHOICES = [...]``)."""
    out: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return out


def _kind(keywords: dict[str, ast.AST]) -> tuple[str, Any]:
    action = keywords.get("action")
    if action is None:
        return "store", None
    if isinstance(action, ast.Constant):
        return {"store_true": "store_true", "store_false": "store_false", "store_const": "store_const", "append": "append"}.get(action.value, "store"), None
    name = _name(action) or ""
    if "BooleanOptional" in name:
        return "boolean_optional", None
    if "StoreTrue" in name or "Deprecated" in name and "Const" not in name:
        return "store_true", None
    return "store", name


def _renames(tree: ast.Module) -> dict[str, str]:
    """``args.NEW = args.OLD`` statements of ``ServerArgs.from_cli_args``."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
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


def table(source: str, version: str) -> dict[str, Any]:
    tree = ast.parse(source)
    constants = _constants(tree)
    fields: dict[str, dict[str, Any]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-")]
        if not flags or "--help" in flags:
            continue
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        dest_node = keywords.get("dest")
        long_flags = [f for f in flags if f.startswith("--")]
        dest = dest_node.value if isinstance(dest_node, ast.Constant) else (long_flags or flags)[0].lstrip("-").replace("-", "_")
        kind, custom = _kind(keywords)
        entry: dict[str, Any] = {"flags": flags, "kind": kind, "nargs": None, "type": None}
        nargs = keywords.get("nargs")
        if isinstance(nargs, ast.Constant):
            entry["nargs"] = nargs.value
        type_name = _name(keywords["type"]) if "type" in keywords else None
        if type_name:
            entry["type"] = TYPES.get(type_name, TYPES.get(type_name.split(".")[-1], type_name.split(".")[-1]))
        elif kind == "store":
            entry["type"] = "str"
        choices = keywords.get("choices")
        values = None
        if choices is not None:
            try:
                values = ast.literal_eval(choices)
            except ValueError:
                values = constants.get(_name(choices) or "")
        if isinstance(values, (list, tuple, set, dict)):
            entry["choices"] = sorted(map(str, values))
        if custom and "Deprecated" in custom:
            entry["deprecated"] = True
        if dest in fields:
            fields[dest]["flags"] += [f for f in flags if f not in fields[dest]["flags"]]
        else:
            fields[dest] = entry
    # from_cli_args copies some argparse dests to the field names (args.tp_size = args.tensor_parallel_size).
    for old, new in _renames(tree).items():
        if old in fields and new not in fields:
            fields[new] = fields.pop(old)
    return {
        "sglang_version": version,
        "source": f"parser.add_argument calls of sglang {version} (sglang/srt/server_args.py, read with ast), written by tests/real_sglang/flag_table_from_source.py",
        "fields": dict(sorted(fields.items())),
    }


def server_args_source(version: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", f"sglang=={version}", "-d", tmp], check=True, capture_output=True)
        wheel = next(Path(tmp).glob("sglang-*.whl"))
        return zipfile.ZipFile(wheel).read("sglang/srt/server_args.py").decode()


if __name__ == "__main__":
    for version in sys.argv[1:]:
        data = table(server_args_source(version), version)
        path = OUT / f"sglang-cli-{version}.json"
        path.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")
        print(f"wrote {path}: {len(data['fields'])} fields")
