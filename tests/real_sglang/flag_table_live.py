"""SGLang's flag table for a release, from a live import of that release's argparse parser.

SGLang declares some flags through helper actions (deprecated spellings that store into a newer
field, legacy switches that store a constant, flags that are accepted and ignored, ``--no-``
forms of boolean flags), so the table is what ``ServerArgs.add_cli_args`` builds, not what its
source looks like. A flag whose action is one of SGLang's own classes names it (``"action":
"LoRAPathAction"``), and the table keeps the release's source of each under ``actions``, as it
keeps its converters' under ``converters``; ``pytest_sglang.parse.launch.ACTIONS`` models them.
This downloads the wheel of each release (no dependencies; cached under
``~/.cache/pytest-sglang/wheels``), puts it in front of the harness's SGLang 0.5.23 environment
and asks ``sglang_offline.py cli-table``. Before 0.5.19, ``ServerArgs.from_cli_args`` renames
some argparse destinations (``args.tp_size = args.tensor_parallel_size``); the table uses the
field names, as SGLang's start-up line and ``/server_info`` do.

    python tests/real_sglang/flag_table_live.py 0.5.18 [0.5.23 ...]
        # writes pytest_sglang/model/knowledge/flags/sglang-cli-VERSION.json
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
from collections.abc import Mapping, Sequence
from pathlib import Path

from packaging.version import Version

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402
import progress  # noqa: E402
from configurations import back_to_placeholders, fill_placeholders  # noqa: E402

OUT = HERE.parents[1] / "pytest_sglang" / "model" / "knowledge" / "flags"
WHEELS = harness.CACHE / "wheels"


def shipped_versions() -> list[str]:
    names = (p.name[len("sglang-cli-") : -len(".json")] for p in OUT.glob("sglang-cli-*.json"))
    return sorted(names, key=Version)


_DOWNLOADED: list[str] = []  # releases whose wheel this process downloaded, in order


def _cached(version: str) -> Path | None:
    found = sorted(WHEELS.glob(f"sglang-{version}-*.whl"))
    return found[0] if found else None


def wheel(version: str) -> Path:
    cached = _cached(version)
    if cached:
        return cached
    # "wheel 3/19": counted over the releases this run may still need (every shipped table).
    pending = {v for v in shipped_versions() if _cached(v) is None} | {version}
    _DOWNLOADED.append(version)
    number, total = len(_DOWNLOADED), len(_DOWNLOADED) - 1 + len(pending)
    progress.say(f"downloading wheel {number}/{total} sglang-{version} into {progress.shown(WHEELS)} (once, no dependencies)")
    WHEELS.mkdir(parents=True, exist_ok=True)
    for _ in range(3):  # a package registry may drop a connection; the download is retried
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", f"sglang=={version}", "-d", str(WHEELS)],
            capture_output=True, text=True,
        )  # fmt: skip
        found = sorted(WHEELS.glob(f"sglang-{version}-*.whl"))
        if done.returncode == 0 and found:
            return found[0]
    raise RuntimeError(f"pip download sglang=={version} failed 3 times: {done.stderr.strip().splitlines()[-1:]}")


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


_ASKED: dict[str, tuple[dict, dict]] = {}


def ask(version: str, python: Path, requests: Sequence[dict] = (), files: Mapping[str, str] | None = None) -> tuple[dict, dict]:
    """One import of a release: (its flag table, what its own ``prepare_server_args`` parsed of
    each request). Requests are ``{"name", "argv"}``; ``{NAME}`` in an argv word is the path of
    ``files[NAME]``, written for the call and turned back into ``{NAME}`` in the answers.
    Answers are kept for the process, so a table and a parse of one release import it once."""
    key = json.dumps([version, str(python), list(requests), dict(files or {})], sort_keys=True)
    if key not in _ASKED:
        _ASKED[key] = _ask(version, python, list(requests), dict(files or {}))
    return _ASKED[key]


def _ask(version: str, python: Path, requests: list[dict], files: dict[str, str]) -> tuple[dict, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        src, written = Path(tmp) / "src", Path(tmp) / "files"
        with zipfile.ZipFile(wheel(version)) as whl:
            whl.extractall(src)
        written.mkdir()
        paths = {name: written / f"{name}.yaml" for name in files}
        for name, path in paths.items():
            path.write_text(files[name])
        filled = [{**r, "argv": [fill_placeholders(w, paths) for w in r["argv"]]} for r in requests]
        env = {**os.environ, "PYTHONPATH": str(src), "SGLANG_FROM_WHEEL": version}
        out = subprocess.run(
            [str(python), str(HERE / "sglang_offline.py"), "release"],
            input=json.dumps(filled), env=env, capture_output=True, text=True,
        )  # fmt: skip
        if out.returncode:
            raise RuntimeError(f"sglang {version}: sglang_offline.py release failed: {out.stderr.strip().splitlines()[-1:]}")
        text = back_to_placeholders(out.stdout, paths)
        moved = renames((src / "sglang" / "srt" / "server_args.py").read_text())
    answer = json.loads(text)
    data = answer["table"]
    if data["sglang_version"] != version:
        raise RuntimeError(f"asked for sglang {version}, imported {data['sglang_version']}")
    data["fields"] = dict(sorted(_renamed(data["fields"], moved).items()))
    data["source"] = f"argparse table of sglang {version}'s ServerArgs.add_cli_args (from_cli_args renames applied), written by tests/real_sglang/flag_table_live.py"
    parsed = answer["parse"]
    for entry in parsed.values():  # field names, as the tables use them
        if "parsed" in entry:
            entry["parsed"] = _renamed(entry["parsed"], moved)
    return data, parsed


_ENTRIES: dict[str, tuple[dict, dict]] = {}


def ask_entries(version: str, python: Path, cases: Sequence[dict]) -> tuple[dict, dict]:
    """One import of a release, no network: (its flag table, what its real entry point made of
    each case). A case is ``{"name", "argv", "entry": "launch_server"|"serve", "files": {NAME:
    text}}``; ``{NAME}`` in an argv word is the path of that file (``sglang_offline.py entry``).
    The table is also kept for :func:`table`, so the release is not imported again for it."""
    key = json.dumps([version, str(python), list(cases)], sort_keys=True)
    if key not in _ENTRIES:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "src"
            with zipfile.ZipFile(wheel(version)) as whl:
                whl.extractall(src)
            env = {**os.environ, "PYTHONPATH": str(src), "SGLANG_FROM_WHEEL": version, "HF_HUB_OFFLINE": "1"}
            out = subprocess.run(
                [str(python), str(HERE / "sglang_offline.py"), "entry"],
                input=json.dumps(list(cases)), env=env, capture_output=True, text=True,
            )  # fmt: skip
            if out.returncode:
                raise RuntimeError(f"sglang {version}: sglang_offline.py entry failed: {out.stderr.strip().splitlines()[-1:]}")
            moved = renames((src / "sglang" / "srt" / "server_args.py").read_text())
        answer = json.loads(out.stdout)
        data = answer["table"]
        if data["sglang_version"] != version:
            raise RuntimeError(f"asked for sglang {version}, imported {data['sglang_version']}")
        data["fields"] = dict(sorted(_renamed(data["fields"], moved).items()))
        data["source"] = f"argparse table of sglang {version}'s ServerArgs.add_cli_args (from_cli_args renames applied), written by tests/real_sglang/flag_table_live.py"
        for entry in answer["entry"].values():
            if "parsed" in entry:
                entry["parsed"] = _renamed(entry["parsed"], moved)
        _ENTRIES[key] = (data, answer["entry"])
        _ASKED.setdefault(json.dumps([version, str(python), [], {}], sort_keys=True), (data, {}))
    return _ENTRIES[key]


def _renamed(fields: dict, moved: dict[str, str]) -> dict:
    out = dict(fields)
    for old, new in moved.items():
        if old in out and new not in out:
            out[new] = out.pop(old)
    return out


def table(version: str, python: Path) -> dict:
    return ask(version, python)[0]


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
