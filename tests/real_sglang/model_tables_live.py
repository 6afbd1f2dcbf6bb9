"""Each SGLang release's model tables, read from its wheel: the architectures its model registry
knows, and the architecture lists its start-up code tests.

    python tests/real_sglang/model_tables_live.py            # every release with a flag table
    python tests/real_sglang/model_tables_live.py 0.5.10     # some releases
    python tests/real_sglang/model_tables_live.py --check    # compare with the stored tables (exit 1 on a difference)

Writes ``pytest_sglang/model/knowledge/models/sglang-models-VERSION.json`` beside the flag
tables, and ``transformers-VERSION.json`` for each transformers version a release pins. The
wheels are read without importing anything (``ast``), so every module counts, including those
that import only on a GPU host:

- **the registry**: ``sglang.srt.models.registry.import_model_classes`` (0.5.5-0.5.23) imports
  each top-level module of ``sglang/srt/models`` (not its sub-packages) and registers every
  ``EntryClass`` (a class or a list of classes) under the class's ``__name__``. A name
  ``EntryClass`` holds that was imported from another module is followed to its class.
- **an architecture the registry lacks**: ``model_loader/utils.py get_model_architecture``
  (called when the weights load, after post-init) hands every architecture the registry lacks
  to ``resolve_transformers_arch``. With ``--model-impl auto`` (the default) that falls back
  to the Transformers implementation when ``getattr(transformers, ARCH)`` exists and its
  ``is_backend_compatible()`` (the class's ``_supports_attention_backend``) is true, and raises
  ``ValueError`` otherwise: "Cannot find model module. 'ARCH' is not a registered model in the
  Transformers library ..." when transformers lacks the class (and the config has no
  ``auto_map.AutoModel``), "ARCH has no SGlang implementation and the Transformers
  implementation is not compatible with SGLang." when it is not compatible. The transformers
  tables hold, per version a release pins (its wheel's ``Requires-Dist: transformers==``), every
  model class its ``modeling_*.py`` modules export (``__all__``; PyTorch ones), split by that
  attribute, followed through the class's bases.
- **the lists** (``lists``, each under the knowledge base's name for it, with the source it
  was read from): ``configs/model_config.py`` ``multimodal_model_archs`` (``multimodal_archs``),
  ``mm_disabled_models`` (``multimodal_opt_in_archs``), ``piecewise_cuda_graph_disabled_model_archs``
  (``pcg_disabled_archs``, 0.5.10+), ``multimodal_piecewise_cuda_graph_supported_model_archs``
  (``mm_piecewise_archs``, 0.5.16+), ``multimodal_breakable_cuda_graph_supported_model_archs``
  (``breakable_mm_archs``, 0.5.16+), ``MIMO_V2_MULTIMODAL_ARCHS`` where ``ModelConfig`` keeps
  them text-only without a ``vision_config`` and ``audio_config`` (``multimodal_config_archs``,
  0.5.12+), and the FlashInfer allreduce-fusion auto-enable list
  (``allreduce_fusion_archs``: the list the ``Auto-enabling FlashInfer AllReduce Fusion``
  branch of ``server_args.py`` tests in 0.5.7-0.5.14, ``arg_groups/overrides.py``
  ``_FLASHINFER_ALLREDUCE_FUSION_ARCHS`` from 0.5.15). A list a release does not have is left
  out of its table. ``SGLANG_EXTERNAL_MM_MODEL_ARCH`` (0.5.x) can add one architecture to the
  multimodal list at run time; that is not in the table.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import zipfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Iterator

from packaging.version import Version

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

OUT = HERE.parents[1] / "pytest_sglang" / "model" / "knowledge" / "models"
FLAGS = HERE.parents[1] / "pytest_sglang" / "model" / "knowledge" / "flags"

# The knowledge base's name of each list, and where each release defines it: a module-level
# assignment of model_config.py, or a local one inside a function of it.
CONFIG_LISTS = {
    "multimodal_archs": "multimodal_model_archs",
    "pcg_disabled_archs": "piecewise_cuda_graph_disabled_model_archs",
    "mm_piecewise_archs": "multimodal_piecewise_cuda_graph_supported_model_archs",
    "breakable_mm_archs": "multimodal_breakable_cuda_graph_supported_model_archs",
}
LOCAL_LISTS = {"multimodal_opt_in_archs": "mm_disabled_models"}
MODEL_CONFIG = "sglang/srt/configs/model_config.py"
ALLREDUCE_LOG = "Auto-enabling FlashInfer AllReduce Fusion"
ALLREDUCE_CONSTANT = "_FLASHINFER_ALLREDUCE_FUSION_ARCHS"
ALLREDUCE_FILES = ("sglang/srt/server_args.py", "sglang/srt/arg_groups/overrides.py")


def shipped_versions() -> list[str]:
    names = (p.name[len("sglang-cli-") : -len(".json")] for p in FLAGS.glob("sglang-cli-*.json"))
    return sorted(names, key=Version)


def _wheel(version: str) -> Path:
    import flag_table_live

    return flag_table_live.wheel(version)


def _transformers_wheel(version: str) -> Path:
    import flag_table_live

    wheels = flag_table_live.WHEELS
    found = sorted(wheels.glob(f"transformers-{version}-*.whl"))
    if found:
        return found[0]
    wheels.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", f"transformers=={version}", "-d", str(wheels)], check=True)
    return sorted(wheels.glob(f"transformers-{version}-*.whl"))[0]


class Wheel:
    """A wheel's Python sources, parsed on demand."""

    def __init__(self, path: Path) -> None:
        self.zip = zipfile.ZipFile(path)
        self.names = set(self.zip.namelist())
        self._trees: dict[str, ast.Module] = {}

    def tree(self, name: str) -> ast.Module:
        if name not in self._trees:
            self._trees[name] = ast.parse(self.zip.read(name))  # bytes: a BOM is read as Python reads it
        return self._trees[name]

    def module_file(self, module: str) -> str | None:
        base = module.replace(".", "/")
        return next((n for n in (f"{base}.py", f"{base}/__init__.py") if n in self.names), None)

    def metadata(self) -> str:
        return next(self.zip.read(n).decode() for n in self.names if n.endswith(".dist-info/METADATA"))


# Per parsed module (the tree is kept, so its id is never reused).
_IMPORTS: dict[int, tuple[ast.Module, dict[str, tuple[str, str]]]] = {}


def _imports(tree: ast.Module, module: str) -> dict[str, tuple[str, str]]:
    """name -> (module, name) for every ``from X import Y [as Z]`` of a module (relative ones resolved)."""
    if id(tree) not in _IMPORTS:
        _IMPORTS[id(tree)] = (tree, _read_imports(tree, module))
    return _IMPORTS[id(tree)][1]


def _read_imports(tree: ast.Module, module: str) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                source = f"{base}.{source}" if source else base
            for alias in node.names:
                out[alias.asname or alias.name] = (source, alias.name)
    return out


def _class_name(whl: Wheel, module: str, name: str, depth: int = 0) -> str:
    """The ``__name__`` of the class ``name`` stands for in ``module``: its own class, or the
    class it was imported from (followed), or assigned from."""
    file = whl.module_file(module)
    if file is None or depth > 5:
        raise LookupError(f"{module}.{name}: cannot be followed")
    tree = whl.tree(file)
    if any(isinstance(n, ast.ClassDef) and n.name == name for n in tree.body):
        return name
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets) and isinstance(node.value, ast.Name):
            return _class_name(whl, module, node.value.id, depth + 1)
    imported = _imports(tree, module).get(name)
    if imported is not None:
        return _class_name(whl, imported[0], imported[1], depth + 1)
    if any(isinstance(n, ast.ClassDef) and n.name == name for n in ast.walk(tree)):
        return name  # defined under a condition (try/if): the name it is given
    raise LookupError(f"{module}.{name}: no class of that name")


def registry(whl: Wheel) -> list[str]:
    """Every architecture ``import_model_classes("sglang.srt.models")`` registers."""
    found: dict[str, str] = {}
    files = sorted(n for n in whl.names if re.fullmatch(r"sglang/srt/models/[^/]+\.py", n))
    for file in files:
        module = file[:-3].replace("/", ".")
        tree = whl.tree(file)
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            if not any(isinstance(t, ast.Name) and t.id == "EntryClass" for t in targets) or node.value is None:
                continue
            value = node.value
            items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            for item in items:
                if not isinstance(item, ast.Name):
                    raise LookupError(f"{file}: EntryClass holds {ast.unparse(item)!r}, not a class name")
                name = _class_name(whl, module, item.id)
                if name in found and found[name] != file:
                    raise LookupError(f"{name} is registered by {found[name]} and {file} (SGLang asserts against this)")
                found[name] = file
    return sorted(found)


def _constant(whl: Wheel, module: str, name: str) -> list[str]:
    """A module-level list or tuple of strings (``*OTHER`` inside it followed)."""
    file = whl.module_file(module)
    if file is None:
        raise LookupError(f"{module}: not in the wheel")
    tree = whl.tree(file)
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
            return _strings(whl, module, node.value)
    imported = _imports(tree, module).get(name)
    if imported is not None:
        return _constant(whl, *imported)
    raise LookupError(f"{module}.{name}: not defined")


def _strings(whl: Wheel, module: str, node: ast.AST) -> list[str]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set", "list", "tuple") and len(node.args) == 1:
        return _strings(whl, module, node.args[0])
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        out: list[str] = []
        for item in node.elts:
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                out.append(item.value)
            elif isinstance(item, ast.Starred) and isinstance(item.value, ast.Name):
                out += _constant(whl, module, item.value.id)
            else:
                raise LookupError(f"{module}: a list item {ast.unparse(item)!r} is not a string")
        return out
    if isinstance(node, ast.Name):
        return _constant(whl, module, node.id)
    raise LookupError(f"{module}: {ast.unparse(node)[:60]!r} is not a list of strings")


def _line_of(whl: Wheel, file: str, name: str) -> int:
    return next(n.lineno for n in ast.walk(whl.tree(file)) if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets))


def lists(whl: Wheel) -> dict[str, dict[str, Any]]:
    """The lists a rule reads, under the knowledge base's names, each with its source."""
    out: dict[str, dict[str, Any]] = {}
    module = MODEL_CONFIG[:-3].replace("/", ".")
    tree = whl.tree(MODEL_CONFIG)
    top = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    for ours, theirs in CONFIG_LISTS.items():
        if theirs in top:
            out[ours] = {"source": f"{MODEL_CONFIG}:{_line_of(whl, MODEL_CONFIG, theirs)} {theirs}", "members": _constant(whl, module, theirs)}
    for ours, theirs in LOCAL_LISTS.items():
        local = [n for n in ast.walk(tree) if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == theirs for t in n.targets)]
        if len(local) == 1:
            out[ours] = {"source": f"{MODEL_CONFIG}:{local[0].lineno} {theirs}", "members": _strings(whl, module, local[0].value)}
        elif local:
            raise LookupError(f"{MODEL_CONFIG}: {theirs} is assigned {len(local)} times")
    gated = _config_gated(whl, module, tree)
    if gated is not None:
        out["multimodal_config_archs"] = gated
    allreduce = _allreduce_list(whl)
    if allreduce is not None:
        out["allreduce_fusion_archs"] = allreduce
    return dict(sorted(out.items()))


def _config_gated(whl: Wheel, module: str, tree: ast.Module) -> dict[str, Any] | None:
    """The multimodal architectures ``ModelConfig`` treats as multimodal only when the config
    has a ``vision_config`` (and ``audio_config``): the ``in NAME`` of the ``enable_multimodal``
    branch that tests ``hasattr(self.hf_config, "vision_config")`` (MiMo V2, 0.5.12+)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        asks = any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "hasattr" and any(isinstance(a, ast.Constant) and a.value == "vision_config" for a in c.args) for c in ast.walk(node.test))
        names = [c.comparators[0].id for c in ast.walk(node.test) if isinstance(c, ast.Compare) and isinstance(c.ops[0], ast.In) and isinstance(c.comparators[0], ast.Name)]
        if asks and len(names) == 1:
            return {"source": f"{MODEL_CONFIG}:{node.lineno} {names[0]} (multimodal only with vision_config and audio_config)", "members": _constant(whl, module, names[0])}
    return None


def _allreduce_list(whl: Wheel) -> dict[str, Any] | None:
    for file in ALLREDUCE_FILES:
        if file not in whl.names:
            continue
        module = file[:-3].replace("/", ".")
        tree = whl.tree(file)
        if any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == ALLREDUCE_CONSTANT for t in n.targets) for n in tree.body):
            return {"source": f"{file}:{_line_of(whl, file, ALLREDUCE_CONSTANT)} {ALLREDUCE_CONSTANT}", "members": _constant(whl, module, ALLREDUCE_CONSTANT)}
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and any(_enables_fusion(stmt) for stmt in node.body):
                found = [c for c in ast.walk(node.test) if isinstance(c, ast.Compare) and isinstance(c.ops[0], ast.In) and isinstance(c.comparators[0], ast.List)]
                if len(found) == 1:
                    return {"source": f"{file}:{found[0].comparators[0].lineno} the architectures of the branch that sets enable_flashinfer_allreduce_fusion = True", "members": _strings(whl, module, found[0].comparators[0])}
    return None


def _enables_fusion(stmt: ast.stmt) -> bool:
    """``self.enable_flashinfer_allreduce_fusion = True`` (0.5.7-0.5.14), or the log line of
    the auto-enable branch, directly in a branch (0.5.5-0.5.6 set it inside per-model
    branches, with no list of architectures)."""
    if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and stmt.value.value is True:
        return any(isinstance(t, ast.Attribute) and t.attr == "enable_flashinfer_allreduce_fusion" for t in stmt.targets)
    return isinstance(stmt, ast.Expr) and any(isinstance(c, ast.Constant) and isinstance(c.value, str) and ALLREDUCE_LOG in c.value for c in ast.walk(stmt))


def transformers_pin(whl: Wheel) -> str:
    # Before 0.5.3 the pin is under the "runtime-common" extra (``transformers==4.55.2; extra == ...``).
    pin = re.search(r"^Requires-Dist: transformers==([\w.]+)\s*(;\s*extra\s*==\s*\S+\s*)?$", whl.metadata(), re.M)
    if pin is None:
        raise LookupError("the wheel pins no transformers version")
    return pin.group(1)


def transformers_classes(version: str) -> dict[str, list[str]]:
    """Every model class a transformers version exports from its PyTorch modeling modules,
    split by ``_supports_attention_backend`` (what ``is_backend_compatible()`` returns)."""
    whl = Wheel(_transformers_wheel(version))
    files = sorted(n for n in whl.names if re.fullmatch(r"transformers/models/[^/]+/modeling_(?!tf_|flax_)[^/]+\.py", n))
    exported: list[tuple[str, str]] = []
    for file in files:
        tree = whl.tree(file)
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                exported += [(file[:-3].replace("/", "."), name) for name in ast.literal_eval(node.value)]
    compatible: set[str] = set()
    other: set[str] = set()
    for module, name in exported:
        if "PreTrained" in name:
            continue
        try:
            supports = _supports_backend(whl, module, name, 0)
        except LookupError:
            continue  # not a class (a function or a constant in __all__)
        (compatible if supports else other).add(name)
    return {"backend_compatible": sorted(compatible), "not_backend_compatible": sorted(other - compatible)}


def _supports_backend(whl: Wheel, module: str, name: str, depth: int) -> bool:
    """A class's ``_supports_attention_backend``: its own assignment, else its bases' (left
    to right), else PreTrainedModel's ``False``."""
    file = whl.module_file(module)
    if file is None or depth > 12:
        raise LookupError(name)
    tree = whl.tree(file)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)
    if cls is None:
        imported = _imports(tree, module).get(name)
        if imported is None or not imported[0].startswith("transformers.models."):
            raise LookupError(name)
        return _supports_backend(whl, imported[0], imported[1], depth + 1)
    for stmt in cls.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "_supports_attention_backend" for t in targets) and isinstance(stmt.value, ast.Constant):
            return bool(stmt.value.value)
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id not in ("PreTrainedModel", "GenerationMixin", "nn", "Module"):
            try:
                return _supports_backend(whl, module, base.id, depth + 1)
            except LookupError:
                continue
    return False


def table(version: str) -> dict[str, Any]:
    whl = Wheel(_wheel(version))
    return {
        "about": (
            f"SGLang {version}'s model registry (every EntryClass of sglang/srt/models/*.py, by class name, as "
            "import_model_classes registers them) and the architecture lists its start-up code tests, read from its wheel "
            "by tests/real_sglang/model_tables_live.py. An architecture the registry lacks is served by the Transformers "
            "implementation of the transformers version the release pins, or refused at model load (see transformers-VERSION.json)."
        ),
        "sglang_version": version,
        "transformers": transformers_pin(whl),
        "architectures": registry(whl),
        "lists": lists(whl),
    }


def _text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def expected(versions: list[str]) -> dict[str, str]:
    """File name -> text, for the releases named and the transformers versions they pin."""
    out: dict[str, str] = {}
    pins: set[str] = set()
    for version in versions:  # every wheel is in the cache first, so the workers download none
        _wheel(version)
    # Reading a wheel's models is pure CPU work (ast): two processes read two releases at once.
    with ProcessPoolExecutor(max_workers=min(2, len(versions) or 1)) as pool:
        tables = list(pool.map(table, versions))
    for version, data in zip(versions, tables):
        pins.add(data["transformers"])
        out[f"sglang-models-{version}.json"] = _text(data)
    for pin in sorted(pins):
        classes = transformers_classes(pin)
        out[f"transformers-{pin}.json"] = _text({
            "about": (
                f"The model classes transformers {pin} exports from its PyTorch modeling modules (__all__), split by "
                "_supports_attention_backend (is_backend_compatible(), through the class's bases): what SGLang's "
                "resolve_transformers_arch finds for an architecture its registry lacks. Written by "
                "tests/real_sglang/model_tables_live.py."
            ),
            "transformers": pin,
            **classes,
        })  # fmt: skip
    return out


def differences(versions: list[str]) -> Iterator[str]:
    for name, text in expected(versions).items():
        path = OUT / name
        if not path.exists():
            yield f"{name}: missing"
        elif path.read_text() != text:
            old, new = json.loads(path.read_text()), json.loads(text)
            changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            yield f"{name}: differs in {', '.join(changed)}"


if __name__ == "__main__":
    args = sys.argv[1:]
    check = "--check" in args
    chosen = [a for a in args if a != "--check"] or shipped_versions()
    if check:
        problems = list(differences(chosen))
        print("\n".join(problems) or f"the model tables of {len(chosen)} releases are current")
        sys.exit(1 if problems else 0)
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in expected(chosen).items():
        (OUT / name).write_text(text)
        data = json.loads(text)
        count = len(data.get("architectures", [])) or len(data.get("backend_compatible", []))
        print(f"wrote {name}: {count} {'architectures' if 'architectures' in data else 'backend-compatible classes'}, lists: {', '.join(data.get('lists', {})) or '-'}")
