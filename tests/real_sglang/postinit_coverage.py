"""How much of SGLang's post-init the explain knowledge base covers, per release.

    python tests/real_sglang/postinit_coverage.py                   # per release: counts
    python tests/real_sglang/postinit_coverage.py --uncovered 0.5.23  # the uncovered assignments
    python tests/real_sglang/postinit_coverage.py --store           # rewrite tests/data/sglang-postinit-assignments.json
    python tests/real_sglang/postinit_coverage.py --store-release 0.5.4 0.5.8.post1
        # walk only these releases: their entries replaced or added, every other release's kept
    python tests/real_sglang/postinit_coverage.py --docs            # rewrite the table in docs/explain-coverage.md

The walk reads each release's wheel (``~/.cache/pytest-sglang/wheels``) with ``ast``, never
imports it. It starts at ``ServerArgs.__post_init__`` (and ``ServerArgs.resolve_once``, where
0.5.19+ moved the resolution) and follows calls through the package: methods of ``ServerArgs``,
functions that receive the record (a parameter bound to it at a call site, or named
``server_args``), hooks passed by reference (``run_hook(handle_x, server_args)``), and the
providers a registry decorator declares (model overrides, post-process passes: the ``dict``
they return is declared). An assignment is a write of a ``ServerArgs`` field of that release:
``self.X = ...`` (also augmented, tuple and nested ``self.X.y = ...`` targets),
``setattr(self, "X", ...)``, ``declare_resolution(server_args, source, X=...)`` (also through a
``**dict`` built in the same function) and the keys of a declared provider's returned dict.

Without ``--store`` or ``--docs`` the stored data is compared with the knowledge base only; the
counts are those ``tests/test_postinit_coverage.py`` checks the docs against.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
if str(ROOT) not in sys.path and __name__ == "__main__":  # run as a script from a checkout; imported by tests, the package is installed
    sys.path.insert(0, str(ROOT))

from packaging.version import Version  # noqa: E402

from pytest_sglang.judge.explain import kb as kb_module

DATA = ROOT / "tests" / "data" / "sglang-postinit-assignments.json"
DOCS = ROOT / "docs" / "explain-coverage.md"
TEXT_LIMIT = 160  # characters of a condition or a value kept in the data file

Func = ast.FunctionDef | ast.AsyncFunctionDef


# ---- out of scope: a curated table ----------------------------------------------------------
# The first reason that matches, keyed by function, file, field, condition or value; the stored
# data keeps the key. docs/explain-coverage.md counts assignments by these texts.

REASONS = {
    "platform": "a branch for another platform than NVIDIA CUDA (AMD/HIP, NPU, XPU, HPU, CPU, MPS, MUSA)",
    "bookkeeping": "bookkeeping: ports, hosts, paths, downloads, logging, metrics, tokenizer and process plumbing",
    "disaggregation": "PD or encoder disaggregation, and load balancing between servers",
    "developer": "developer, debugging and CI options",
    "deprecated": "a deprecated flag or spelling mapped to its replacement (the flag tables' concern)",
    "normalisation": "normalisation that does not change a user-visible value (a spelling, an empty container for None)",
    "default": "a fixed default for an unset field, under no GPU, model or flag condition",
    "validation": "part of validation or of a rejected configuration",
}

_PLATFORM_WORDS = frozenset({"hpu", "cpu", "npu", "xpu", "mps", "musa", "amd", "hip", "rocm", "aiter", "ascend", "oot", "mlx", "gaudi"})
_PLATFORM_FILE = re.compile(r"/(hardware_backend|npu|amd|xpu|hpu|musa|kernel_plugins/amd)/")
_PLATFORM_COND = re.compile(
    r"(?i)\b_?(is_hip|is_npu|is_xpu|is_hpu|is_cpu|is_musa|is_mps|is_host_cpu_\w+|use_mlx|is_gfx9\w*|is_rocm\w*|is_out_of_tree\w*)\b"
    r"|\.(is_hip|is_npu|is_xpu|is_hpu|is_cpu|is_musa|is_mps|is_rocm|is_out_of_tree|is_oot)\b"
    r"|device\s*==\s*['\"](cpu|npu|xpu|hpu|mps|musa)['\"]|['\"](cpu|npu|xpu|hpu|mps|musa)['\"]\s*==\s*\S*device|aiter"
)
_PLATFORM_VALUE = re.compile(r"(?i)ascend|aiter|\"(npu|hpu|xpu|intel_amx|intel_xpu|wave|cpu)\"|kernel_ascend")
_BOOKKEEPING_FIELDS = frozenset({
    "host", "port", "grpc_port", "nccl_port", "dist_init_addr", "tokenizer_path", "tokenizer_mode", "tokenizer_worker_num",
    "detokenizer_worker_num", "served_model_name", "log_level", "log_level_http", "log_requests", "log_requests_level",
    "log_requests_format", "log_requests_target", "crash_dump_folder", "file_storage_path", "random_seed", "base_gpu_id",
    "gpu_id_step", "api_key", "admin_api_key", "ssl_keyfile", "ssl_certfile", "watermark_config", "watermark_key",
    "watermark_key_b", "model_path", "download_dir", "revision", "tokenizer_revision", "dist_timeout",
    "bucket_time_to_first_token", "bucket_inter_token_latency", "bucket_e2e_request_latency", "enable_metrics",
    "enable_metrics_for_all_schedulers", "collect_tokens_histogram", "decode_log_interval", "prompt_tokens_buckets",
    "generation_tokens_buckets", "otlp_traces_endpoint", "kv_events_config", "model_loader_extra_config",
    "tokenizer_backend", "skip_server_warmup", "warmups", "gc_warning_threshold_secs", "tokenizer_metrics_custom_labels_header",
    "tokenizer_metrics_allowed_custom_labels", "extra_metric_labels", "uvicorn_access_log_exclude_prefixes",
    "remote_instance_weight_loader_seed_instance_ip", "remote_instance_weight_loader_seed_instance_service_port",
    "remote_instance_weight_loader_send_weights_group_ports", "remote_instance_weight_loader_start_seed_via_transfer_engine",
    "media_url_allowlist", "allowed_local_media_path", "allowed_media_domains", "custom_sigquit_handler", "hf_chat_template_name",
    "speculative_draft_model_revision", "smg_grpc_mode", "grpc_worker_threads", "weight_version", "custom_weight_loader",
    "crash_on_nan", "chat_template", "completion_template", "reasoning_parser", "tool_call_parser",
})
_BOOKKEEPING_NAME = re.compile(r"(?i)(modelscope|download|model_path|_paths?\b|logging|watermark|media_url|ssl|tokenizer_batching|grpc)")
_DISAGG_FIELD = re.compile(r"^(disaggregation_|encoder_|pdlb|load_balance_method|mooncake|nixl|prefill_round_robin|dp_balance|language_only)")
_DISAGG_NAME = re.compile(r"(?i)(disagg|pd_|load_balance|encoder_only|encoder_disagg)")
_DEVELOPER_FIELD = re.compile(r"^(debug_|enable_profile|profile_|enable_nan_detection|enable_dump|expert_distribution_recorder|"
                              r"enable_expert_distribution_metrics|enable_request_time_stats_logging|crash_|enable_memory_saver|"
                              r"delete_ckpt_after_loading|enable_cache_report|enable_trace|show_time_cost|soft_watchdog_timeout|watchdog_timeout)")
_DEVELOPER_COND = re.compile(r"\bis_in_ci\(\)|SGLANG_TEST|\bdebug_")
_OWN = r"(self|server_args|cfg|args)\.{f}"


def out_of_scope(a: Assignment) -> str | None:
    """The key of the curated reason an assignment is out of scope, or None (in scope)."""
    name, conditions = a.function.rsplit(".", 1)[-1], " ".join(a.conditions)
    own = _OWN.format(f=re.escape(a.field))
    positive = [c for c in a.conditions if not c.startswith("not ")]  # ``not (is_hip())`` is the CUDA side
    if (set(name.lower().split("_")) & _PLATFORM_WORDS or _PLATFORM_FILE.search(a.file)
            or any(_PLATFORM_COND.search(c) for c in positive) or _PLATFORM_VALUE.search(a.value)):
        return "platform"
    if a.field in _BOOKKEEPING_FIELDS or _BOOKKEEPING_NAME.search(name):
        return "bookkeeping"
    if _DISAGG_FIELD.match(a.field) or _DISAGG_NAME.search(name):
        return "disaggregation"
    if _DEVELOPER_FIELD.match(a.field) or _DEVELOPER_COND.search(conditions):
        return "developer"
    if "deprecated" in name.lower() or "deprecated" in conditions:
        return "deprecated"
    if (a.value in ("{}", "[]", "dict()", "list()", "set()") or re.fullmatch(rf"{own}(\.(lower|upper|strip)\(\)|\.split\(.*\)\[0\]| or .*)", a.value)
            or re.fullmatch(rf"(list|tuple|str|int|float|sorted|bool)\({own}\)", a.value)):
        return "normalisation"
    if a.conditions and all(re.fullmatch(rf"{own} is None|not {own}", c) for c in a.conditions):
        try:
            ast.literal_eval(a.value)
            return "default"
        except (ValueError, SyntaxError):
            pass
    if re.search(r"(?i)(validat|check_|_check|verify)", name):
        return "validation"
    return None


# ---- the walk -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Assignment:
    """One write of a ``ServerArgs`` field reachable from post-init."""

    field: str
    file: str
    line: int
    function: str
    conditions: tuple[str, ...]
    value: str

    def stored(self) -> dict[str, Any]:
        out: dict[str, Any] = {"field": self.field, "file": self.file, "line": self.line, "function": self.function,
                               "conditions": list(self.conditions), "value": self.value}
        reason = out_of_scope(self)
        if reason:
            out["reason"] = reason
        return out


@lru_cache(maxsize=64)
def _lines(source: str) -> list[bytes]:
    return source.encode("utf-8").splitlines()


def _text(source: str, node: ast.AST) -> str:
    """The source text of a node, white space collapsed, at most ``TEXT_LIMIT`` characters."""
    lines = _lines(source)
    first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
    if first == last:
        raw = lines[first][node.col_offset : node.end_col_offset]  # type: ignore[attr-defined]
    else:
        raw = b"\n".join([lines[first][node.col_offset :], *lines[first + 1 : last], lines[last][: node.end_col_offset]])  # type: ignore[attr-defined]
    text = " ".join(raw.decode("utf-8", "replace").split())
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 3] + "..."


@dataclass
class _Module:
    name: str
    path: str
    source: str
    tree: ast.Module
    imports: dict[str, tuple[str, str | None]]  # alias -> (module, attribute or None for a module)
    functions: dict[str, Func]  # qualname -> def (top level, class methods, nested)
    classes: dict[str, ast.ClassDef]


def _imports(nodes: list[ast.stmt] | list[ast.AST], package: str) -> dict[str, tuple[str, str | None]]:
    out: dict[str, tuple[str, str | None]] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = (alias.name, None)
                else:
                    out[alias.name.split(".")[0]] = (alias.name.split(".")[0], None)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                out[alias.asname or alias.name] = (base, alias.name)
    return out


class Release:
    """The source of one release, read from its wheel."""

    def __init__(self, wheel: Path) -> None:
        self.zip = zipfile.ZipFile(wheel)
        self.names = set(self.zip.namelist())
        self._modules: dict[str, _Module | None] = {}

    def module(self, name: str) -> _Module | None:
        if name in self._modules:
            return self._modules[name]
        found = None
        base = name.replace(".", "/")
        for path, package in ((base + ".py", name.rpartition(".")[0]), (base + "/__init__.py", name)):
            if path in self.names:
                source = self.zip.read(path).decode("utf-8", "replace")
                tree = ast.parse(source)
                functions: dict[str, Func] = {}
                classes: dict[str, ast.ClassDef] = {}

                def index(body: list[ast.stmt], prefix: str) -> None:
                    for node in body:
                        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                            functions[prefix + node.name] = node
                            index(node.body, prefix + node.name + ".")
                        elif isinstance(node, ast.ClassDef):
                            classes[prefix + node.name] = node
                            index(node.body, prefix + node.name + ".")
                        elif isinstance(node, (ast.If, ast.Try)):
                            index(node.body, prefix)
                            index(getattr(node, "orelse", []), prefix)

                index(tree.body, "")
                top = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and n.col_offset == 0]
                found = _Module(name, path, source, tree, _imports(top, package), functions, classes)
                break
        self._modules[name] = found
        return found

    def modules_under(self, prefix: str) -> Iterator[_Module]:
        for path in sorted(self.names):
            if path.startswith(prefix) and path.endswith(".py"):
                name = path[:-3].replace("/", ".").removesuffix(".__init__")
                module = self.module(name)
                if module:
                    yield module

    def fields(self) -> frozenset[str]:
        """The ``ServerArgs`` fields: the dataclass fields of ``server_args.py`` (..0.5.19), the
        annotated fields of the namespace Structs in ``arg_groups/fields/`` (0.5.20+)."""
        names: set[str] = set()
        modules = list(self.modules_under("sglang/srt/arg_groups/fields/"))
        if not modules:
            server_args = self.module("sglang.srt.server_args")
            assert server_args is not None
            modules = [server_args]
        for module in modules:
            for qualname, cls in module.classes.items():
                if modules[0].name.endswith("server_args") and qualname != "ServerArgs":
                    continue
                for node in cls.body:
                    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                        if "ClassVar" in ast.unparse(node.annotation) or node.target.id.startswith("_"):
                            continue
                        names.add(node.target.id)
        return frozenset(names)


@dataclass
class _Walk:
    release: Release
    fields: frozenset[str]
    bound: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # function -> names holding the record
    providers: set[tuple[str, str]] = field(default_factory=set)  # functions whose returned dict is declared
    found: dict[tuple[str, int, str], Assignment] = field(default_factory=dict)

    def resolve(self, module: _Module, scope: dict[str, tuple[str, str | None]], qualname: str, node: ast.expr) -> tuple[str, str] | None:
        """The (module, qualname) of the package function an expression names, if any."""
        if isinstance(node, ast.Name):
            parts = qualname.split(".")
            for i in range(len(parts), -1, -1):  # nested, then enclosing, then module level
                candidate = ".".join(parts[:i] + [node.id])
                if candidate in module.functions and candidate != qualname:
                    return module.name, candidate
            if node.id in scope:
                target, attribute = scope[node.id]
                return self._attribute(target, attribute)
            return None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in scope:
            target, attribute = scope[node.value.id]
            inner = f"{target}.{attribute}" if attribute else target
            return self._attribute(inner, node.attr)
        return None

    def _attribute(self, module_name: str, attribute: str | None) -> tuple[str, str] | None:
        if attribute is None or not module_name.startswith("sglang"):
            return None
        module = self.release.module(module_name)
        if module is None:
            return None
        if attribute in module.functions:
            return module.name, attribute
        if attribute in module.imports:  # re-exported
            target, inner = module.imports[attribute]
            if target != module_name:
                return self._attribute(target, inner)
        return None

    def method(self, name: str) -> tuple[str, str] | None:
        """``ServerArgs.name``, or the method of a base class (a mixin) of the same or an imported module."""
        module = self.release.module("sglang.srt.server_args")
        assert module is not None
        if f"ServerArgs.{name}" in module.functions:
            return module.name, f"ServerArgs.{name}"
        cls = module.classes.get("ServerArgs")
        for base in cls.bases if cls else []:
            if not isinstance(base, ast.Name):
                continue
            owner, inner = (module.name, base.id) if base.id in module.classes else module.imports.get(base.id, ("", None))
            target = self.release.module(owner) if owner.startswith("sglang") else None
            if target and f"{inner}.{name}" in target.functions:
                return target.name, f"{inner}.{name}"
        return None

    def enter(self, key: tuple[str, str], names: set[str], queue: list[tuple[str, str]]) -> None:
        known = self.bound.setdefault(key, set())
        if not names <= known or key not in self._seen:
            known |= names
            self._seen.add(key)
            queue.append(key)

    def run(self, roots: list[tuple[str, str]]) -> None:
        self._seen: set[tuple[str, str]] = set()
        queue: list[tuple[str, str]] = []
        for root in roots:
            self.enter(root, {"self"}, queue)
        while True:
            while queue:
                self.visit(queue.pop(), queue)
            before = len(self.providers)
            self._registered(queue)
            if not queue and len(self.providers) == before:
                break

    def _registered(self, queue: list[tuple[str, str]]) -> None:
        """Providers a registry decorator records, in modules whose registry code is reached."""
        reached = {module for module, _ in self.bound}
        for module in self.release.modules_under("sglang/srt/arg_groups/"):
            for qualname, func in module.functions.items():
                for decorator in func.decorator_list:
                    target = decorator.func if isinstance(decorator, ast.Call) else decorator
                    hit = self.resolve(module, module.imports, "", target)
                    name = hit[1] if hit else (target.id if isinstance(target, ast.Name) else getattr(target, "attr", ""))
                    if "register" in name and (hit is None or hit[0] in reached) and (module.name, qualname) not in self.providers:
                        self.providers.add((module.name, qualname))
                        self.enter((module.name, qualname), {a.arg for a in func.args.args[:1]}, queue)

    def visit(self, key: tuple[str, str], queue: list[tuple[str, str]]) -> None:
        module = self.release.module(key[0])
        assert module is not None
        func = module.functions[key[1]]
        names = set(self.bound[key]) | {a.arg for a in func.args.args + func.args.kwonlyargs if a.arg == "server_args"}
        scope = dict(module.imports)
        scope.update(_imports([n for n in ast.walk(func) if isinstance(n, (ast.Import, ast.ImportFrom))], module.name.rpartition(".")[0]))
        for node in ast.walk(func):  # aliases of the record: ``sa = server_args``
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in names:
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        dicts = _DictWrites(module.source, func, self.fields)
        for stmt, conditions in _statements(func.body, (), module.source):
            self._assignments(module, key[1], stmt, conditions, names, dicts)
            for node in _own_nodes(stmt):
                if isinstance(node, ast.Call):
                    self._call(module, scope, key[1], node, names, queue, conditions, dicts)
            if key in self.providers and isinstance(stmt, ast.Return) and stmt.value is not None:
                for name, line, value, extra in dicts.of(stmt.value):
                    self.add(name, module, line, key[1], conditions + extra, value)

    def _call(self, module: _Module, scope: dict, qualname: str, node: ast.Call, names: set[str], queue: list, conditions: tuple[str, ...], dicts: _DictWrites) -> None:
        callee_name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if callee_name == "declare_resolution":
            for keyword in node.keywords:
                if keyword.arg is None:
                    for name, line, value, extra in dicts.of(keyword.value):
                        self.add(name, module, line, qualname, conditions + extra, value)
                elif keyword.arg in self.fields:
                    self.add(keyword.arg, module, keyword.value.lineno, qualname, conditions, _text(module.source, keyword.value))
            return
        if callee_name == "setattr" and len(node.args) == 3 and _holds(node.args[0], names):
            if isinstance(node.args[1], ast.Constant) and node.args[1].value in self.fields:
                self.add(node.args[1].value, module, node.lineno, qualname, conditions, _text(module.source, node.args[2]))
            return
        if isinstance(node.func, ast.Attribute) and _holds(node.func.value, names):
            target = self.method(node.func.attr)
            offset = 1
        else:
            target = self.resolve(module, scope, qualname, node.func)
            offset = 0
        record_passed = any(_holds(a, names) for a in node.args) or any(_holds(k.value, names) for k in node.keywords)
        if target is not None:
            self.enter(target, self._binding(target, node, names, offset), queue)
        elif record_passed and isinstance(node.func, ast.Attribute):
            for method in self._methods(module, scope, node.func.attr):  # ``algo.handle_server_args(server_args)``
                self.enter(method, self._binding(method, node, names, 1), queue)
        for argument in [*node.args, *(k.value for k in node.keywords)]:  # hooks passed by reference
            if isinstance(argument, (ast.Name, ast.Attribute)) and not _holds(argument, names):
                hook = self.resolve(module, scope, qualname, argument)
                hooks = [hook] if hook else self._methods(module, scope, argument.attr) if isinstance(argument, ast.Attribute) and record_passed else []
                for hook in hooks:
                    func = self.release.module(hook[0]).functions[hook[1]]  # type: ignore[union-attr]
                    params = [a.arg for a in func.args.args]
                    first = set(params[1:2] if "." in hook[1] and params[:1] == ["self"] else params[:1]) if record_passed else set()
                    if callee_name == "run_post_process_pass" and hook not in self.providers:
                        self.providers.add(hook)
                    self.enter(hook, first, queue)

    def _methods(self, module: _Module, scope: dict, attribute: str) -> list[tuple[str, str]]:
        """Methods named ``attribute`` of the classes of the module and of the modules it imports
        from: the candidates for a call on an object of unknown type (a dispatcher)."""
        out = []
        for owner in sorted({module.name} | {m for m, _ in scope.values() if m.startswith("sglang")}):
            found = self.release.module(owner)
            for qualname in sorted(found.functions if found else ()):
                head, _, name = qualname.rpartition(".")
                if name == attribute and head in found.classes:  # type: ignore[union-attr]
                    out.append((owner, qualname))
        return out

    def _binding(self, target: tuple[str, str], node: ast.Call, names: set[str], offset: int) -> set[str]:
        func = self.release.module(target[0]).functions[target[1]]  # type: ignore[union-attr]
        params = [a.arg for a in func.args.posonlyargs + func.args.args]
        out = {params[0]} if offset and params else set()
        for i, argument in enumerate(node.args):
            if _holds(argument, names) and i + offset < len(params):
                out.add(params[i + offset])
        for keyword in node.keywords:
            if keyword.arg and _holds(keyword.value, names):
                out.add(keyword.arg)
        return out

    def _assignments(self, module: _Module, qualname: str, stmt: ast.stmt, conditions: tuple[str, ...], names: set[str], dicts: _DictWrites) -> None:
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            return
        text = _text(module.source, value)
        if isinstance(stmt, ast.AugAssign):
            text = f"{_OPS.get(type(stmt.op), '?')}= {text}"
        for target in targets:
            for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                hit = _field_of(element, names)
                if hit and hit[0] in self.fields:
                    shown = text if hit[1] == hit[0] else f"{hit[1]} = {text}"
                    self.add(hit[0], module, stmt.lineno, qualname, conditions, shown)

    def add(self, name: str, module: _Module, line: int, function: str, conditions: tuple[str, ...], value: str) -> None:
        if name in self.fields:
            self.found.setdefault((module.path, line, name), Assignment(name, module.path, line, function, conditions, value))


_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Div: "/", ast.BitOr: "|", ast.BitAnd: "&"}


def _holds(node: ast.AST, names: set[str]) -> bool:
    return isinstance(node, ast.Name) and node.id in names


def _field_of(target: ast.expr, names: set[str]) -> tuple[str, str] | None:
    """(field, dotted path) of a target rooted at the record: ``self.x`` or ``self.x.y[...]``."""
    path: list[str] = []
    node = target
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        path.append(node.attr if isinstance(node, ast.Attribute) else "[]")
        node = node.value
    if not _holds(node, names) or not path or path[-1] == "[]":
        return None
    path.reverse()
    return path[0], ".".join(path).replace(".[]", "[]")


def _own_nodes(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of a statement, without the bodies of compound statements (walked separately)."""
    if isinstance(stmt, (ast.If, ast.While)):
        yield from ast.walk(stmt.test)
    elif isinstance(stmt, ast.For):
        yield from ast.walk(stmt.iter)
    elif isinstance(stmt, ast.With):
        for item in stmt.items:
            yield from ast.walk(item.context_expr)
    elif isinstance(stmt, (ast.Try, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return
    elif hasattr(ast, "Match") and isinstance(stmt, ast.Match):
        yield from ast.walk(stmt.subject)
    else:
        yield from ast.walk(stmt)


def _statements(body: list[ast.stmt], conditions: tuple[str, ...], source: str) -> Iterator[tuple[ast.stmt, tuple[str, ...]]]:
    """Every statement of a body (nested functions excluded) with its enclosing ``if`` conditions."""
    for stmt in body:
        yield stmt, conditions
        if isinstance(stmt, ast.If):
            test = _text(source, stmt.test)
            yield from _statements(stmt.body, conditions + (test,), source)
            yield from _statements(stmt.orelse, conditions + (f"not ({test})",), source)
            if not stmt.orelse and isinstance(stmt.body[-1], (ast.Return, ast.Raise)):
                conditions = conditions + (f"not ({test})",)  # a guard: what follows runs only without it
        elif isinstance(stmt, (ast.For, ast.While, ast.With, ast.AsyncFor, ast.AsyncWith)):
            yield from _statements(stmt.body, conditions, source)
            yield from _statements(getattr(stmt, "orelse", []), conditions, source)
        elif isinstance(stmt, ast.Try):
            for part in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody):
                yield from _statements(part, conditions, source)
        elif hasattr(ast, "Match") and isinstance(stmt, ast.Match):
            for case in stmt.cases:
                yield from _statements(case.body, conditions + (f"case {_text(source, case.pattern)}",), source)


class _DictWrites:
    """Field keys written into a dict a function builds: ``d = {"x": ...}``, ``d["x"] = ...``,
    ``d.update(x=...)``, ``dict(x=...)``; for ``declare_resolution(**d)`` and ``return d``."""

    def __init__(self, source: str, func: Func, fields: frozenset[str]) -> None:
        self.source, self.fields = source, fields
        self.writes: dict[str, list[tuple[str, int, str, tuple[str, ...]]]] = {}
        for stmt, conditions in _statements(func.body, (), source):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name):
                    for hit in self._literal(stmt.value):
                        self.writes.setdefault(target.id, []).append((*hit[:3], conditions))
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    key = target.slice
                    if isinstance(key, ast.Constant) and key.value in fields:
                        self.writes.setdefault(target.value.id, []).append((key.value, stmt.lineno, _text(source, stmt.value), conditions))
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                call = stmt.value
                if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and call.func.attr in ("update", "setdefault"):
                    name = call.func.value.id
                    if call.func.attr == "setdefault" and len(call.args) == 2 and isinstance(call.args[0], ast.Constant):
                        if call.args[0].value in fields:
                            self.writes.setdefault(name, []).append((call.args[0].value, call.lineno, _text(source, call.args[1]), conditions))
                    else:
                        for arg in call.args:
                            for hit in self._literal(arg):
                                self.writes.setdefault(name, []).append((*hit[:3], conditions))
                        for keyword in call.keywords:
                            if keyword.arg in fields:
                                self.writes.setdefault(name, []).append((keyword.arg, keyword.value.lineno, _text(source, keyword.value), conditions))

    def _literal(self, node: ast.expr) -> list[tuple[str, int, str, tuple[str, ...]]]:
        out: list[tuple[str, int, str, tuple[str, ...]]] = []
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value in self.fields:
                    out.append((key.value, value.lineno, _text(self.source, value), ()))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "dict":
            for keyword in node.keywords:
                if keyword.arg in self.fields:
                    out.append((keyword.arg, keyword.value.lineno, _text(self.source, keyword.value), ()))
        elif isinstance(node, ast.IfExp):
            out += self._literal(node.body) + self._literal(node.orelse)
        return out

    def of(self, node: ast.expr) -> list[tuple[str, int, str, tuple[str, ...]]]:
        if isinstance(node, ast.Name):
            return self.writes.get(node.id, [])
        return self._literal(node)


@lru_cache(maxsize=None)
def walk(version: str) -> tuple[Assignment, ...]:
    """Every assignment to a ``ServerArgs`` field reachable from post-init, in file and line order."""
    from flag_table_live import wheel

    release = Release(wheel(version))
    server_args = release.module("sglang.srt.server_args")
    assert server_args is not None
    roots = [("sglang.srt.server_args", f"ServerArgs.{name}") for name in ("__post_init__", "resolve_once")]
    walker = _Walk(release, release.fields())
    walker.run([r for r in roots if r[1] in server_args.functions])
    return tuple(sorted(walker.found.values(), key=lambda a: (a.file, a.line, a.field)))


def releases() -> list[str]:
    from flag_table_live import shipped_versions

    return shipped_versions()


def stored_data() -> Data:
    return {version: [a.stored() for a in walk(version)] for version in releases()}


def with_releases(data: Data, versions: list[str]) -> Data:
    """The stored data with these releases walked again (or added), the others as they are."""
    out = dict(data) | {version: [a.stored() for a in walk(version)] for version in versions}
    return dict(sorted(out.items(), key=lambda kv: Version(kv[0])))


# ---- the stored data ------------------------------------------------------------------------
# Grouped by file and function; one record per distinct assignment (field, value, conditions),
# with its lines from its first release on (``{"0.5.9": [812, 815]}``: 0.5.9 and 0.5.10), since
# the releases share most of them. Conditions are interned (indices into ``conditions``).

Data = dict[str, list[dict[str, Any]]]  # release -> its assignments, as Assignment.stored() gives them


def dump(data: Data) -> str:
    versions = list(data)
    conditions: dict[str, int] = {}
    grouped: dict[str, dict[str, dict[tuple, dict[str, Any]]]] = {}
    for i, version in enumerate(versions):
        for item in data[version]:
            refs = [conditions.setdefault(c, len(conditions)) for c in item["conditions"]]
            records = grouped.setdefault(item["file"], {}).setdefault(item["function"], {})
            key = (item["field"], item["value"], tuple(refs))
            record = records.get(key)
            if record is None or version in record["_seen"] or record["_last"] != i - 1:
                n = 0
                while record is not None and (version in record["_seen"] or record["_last"] != i - 1):
                    n += 1  # the same write twice in one function, or again after a gap
                    record = records.get((*key, n))
                if record is None:
                    record = records[(*key, n) if n else key] = {"field": item["field"], "value": item["value"], "if": refs,
                                                                   **({"reason": item["reason"]} if "reason" in item else {}),
                                                                   "lines": {version: []}, "_seen": set(), "_last": i - 1}
            record["lines"][next(iter(record["lines"]))].append(item["line"])
            record["_seen"].add(version)
            record["_last"] = i
    out = ['{"releases":' + json.dumps(versions) + ',', '"conditions":[']
    out.append(",\n".join(json.dumps(c) for c in conditions) + "],")
    out.append('"files":{')
    files = []
    for path in sorted(grouped):
        functions = []
        for function in sorted(grouped[path]):
            records = sorted(grouped[path][function].values(), key=lambda r: (next(iter(r["lines"].values()))[0], r["field"]))
            rows = ",\n".join(json.dumps({k: v for k, v in r.items() if not k.startswith("_")}, separators=(",", ":")) for r in records)
            functions.append(f"{json.dumps(function)}:[\n{rows}]")
        files.append(f"{json.dumps(path)}:{{\n" + ",\n".join(functions) + "}")
    out.append(",\n".join(files) + "}}")
    return "\n".join(out) + "\n"


def load_assignments(path: Path = DATA) -> Data:
    """The stored assignments per release (the inverse of :func:`dump`)."""
    raw = json.loads(path.read_text())
    versions: list[str] = raw["releases"]
    out: Data = {version: [] for version in versions}
    for file, functions in raw["files"].items():
        for function, records in functions.items():
            for record in records:
                (first, lines), = record["lines"].items()
                for version, line in zip(versions[versions.index(first) :], lines):
                    item = {"field": record["field"], "file": file, "line": line, "function": function,
                            "conditions": [raw["conditions"][i] for i in record["if"]], "value": record["value"]}
                    out[version].append({**item, **({"reason": record["reason"]} if "reason" in record else {})})
    for items in out.values():
        items.sort(key=lambda a: (a["file"], a["line"], a["field"]))
    return out


# ---- coverage against the knowledge base ----------------------------------------------------

VALUE_KINDS = ("override", "cap")  # the kinds of rule that say what value SGLang sets

# The fields a sizing or a CUDA graph test reads, by what the test is about. Every NVIDIA
# assignment to them is covered by a rule (tests/test_postinit_coverage.py holds it); the other
# platforms' branches are counted apart.
GROUPS: dict[str, tuple[str, ...]] = {
    "running requests": ("max_running_requests",),
    "CUDA graphs": (
        "disable_cuda_graph", "cuda_graph_max_bs", "cuda_graph_bs", "cuda_graph_config", "cuda_graph_backend_prefill",
        "cuda_graph_backend_decode", "cuda_graph_max_bs_prefill", "cuda_graph_max_bs_decode", "cuda_graph_bs_prefill",
        "cuda_graph_bs_decode", "disable_prefill_cuda_graph", "disable_decode_cuda_graph", "disable_piecewise_cuda_graph",
        "enable_piecewise_cuda_graph", "enforce_piecewise_cuda_graph", "piecewise_cuda_graph_tokens",
        "piecewise_cuda_graph_max_tokens", "piecewise_cuda_graph_compiler", "disable_cuda_graph_padding",
        "enable_breakable_cuda_graph",
    ),
    "chunked prefill": ("chunked_prefill_size",),
    "attention backend": ("attention_backend", "prefill_attention_backend", "decode_attention_backend"),
    "overlap schedule": ("disable_overlap_schedule",),
    "radix cache": ("disable_radix_cache", "mamba_scheduler_strategy", "mamba_radix_cache_strategy"),
    "page size": ("page_size",),
}  # fmt: skip


def rule_field(setting: str) -> str:
    """The ``ServerArgs`` field a rule's setting is about: ``runtime.max_running_requests`` ->
    ``max_running_requests``, ``cuda_graph_config.prefill.backend`` -> ``cuda_graph_config``."""
    return setting.removeprefix("runtime.").split(".")[0]


def covering(kb: kb_module.KnowledgeBase, field_name: str, version: str) -> list[str]:
    """The rules that cover an assignment to a field in a release: a rule that states a value
    for that field, in its release range."""
    release = Version(version)
    return [r.id for r in kb.rules if r.kind in VALUE_KINDS and rule_field(r.setting) == field_name and r.covers(release)]


@dataclass(frozen=True)
class Row:
    release: str
    assignments: int
    covered: int
    out_of_scope: int
    uncovered: int

    @property
    def percent(self) -> int:
        """Covered, as a share of the assignments in scope (rounded down; 100 when none is)."""
        in_scope = self.covered + self.uncovered
        return 100 * self.covered // in_scope if in_scope else 100


@dataclass
class Table:
    rows: list[Row]
    reasons: dict[str, int]  # reason -> assignments out of scope for it, over every release
    gaps: dict[str, list[str]]  # uncovered field -> releases
    items: dict[str, list[dict[str, Any]]]  # release -> assignments with "rules" added

    def uncovered(self, version: str) -> list[dict[str, Any]]:
        return [a for a in self.items[version] if not a["rules"] and "reason" not in a]

    def by_group(self, version: str) -> dict[str, tuple[int, int]]:
        """Per field group in a release: (assignments in scope no rule covers, assignments in a
        branch for another platform). A rule about a field covers its assignments per field,
        another platform's branch included; those branches are counted apart, whatever covers
        their field."""
        out = {}
        for group, fields in GROUPS.items():
            mine = [a for a in self.items[version] if a["field"] in fields]
            out[group] = (sum(not a["rules"] and "reason" not in a for a in mine), sum(a.get("reason") == "platform" for a in mine))
        return out


SITE_SLACK = 25  # lines either side of a rule's cited lines, as the lock places them in a release


def near_a_source(kb: kb_module.KnowledgeBase, item: dict[str, Any], version: str) -> bool:
    """Whether one of the rules that cover an assignment's field cites the place it is at: a
    source in its file whose lines, moved to the release by the lock, are within ``SITE_SLACK``
    lines of it. Stricter than the field-level count (a rule about a field covers all its
    assignments): an assignment no rule cites near is a branch no rule describes."""
    rules = {r.id: r for r in kb.rules if r.id in item["rules"]}
    for rule in rules.values():
        for source in rule.sources:
            if source.absent or source.file != item["file"]:
                continue
            here, cited = kb.line_of(source, version), kb.line_of(source, source.release)
            if here is None or cited is None:
                continue
            if here + source.lines[0] - cited - SITE_SLACK <= item["line"] <= here + source.lines[1] - cited + SITE_SLACK:
                return True
    return False


def by_site(table: Table, kb: kb_module.KnowledgeBase, version: str) -> dict[str, list[dict[str, Any]]]:
    """Per field group in a release: the NVIDIA assignments in scope that a rule covers by field
    but no covering rule cites near (:func:`near_a_source`)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for group, fields in GROUPS.items():
        out[group] = [a for a in table.items[version] if a["field"] in fields and a["rules"] and "reason" not in a and not near_a_source(kb, a, version)]
    return out


def measure(data: Data, kb: kb_module.KnowledgeBase | None = None) -> Table:
    """Coverage per release of stored assignments against a knowledge base (the packaged one)."""
    kb = kb if kb is not None else kb_module.load()
    rows: list[Row] = []
    reasons: dict[str, int] = {}
    gaps: dict[str, list[str]] = {}
    items: dict[str, list[dict[str, Any]]] = {}
    for version, assignments in data.items():
        marked = [{**a, "rules": covering(kb, a["field"], version)} for a in assignments]
        items[version] = marked
        covered = [a for a in marked if a["rules"]]
        out = [a for a in marked if "reason" in a and not a["rules"]]
        for a in out:
            reasons[a["reason"]] = reasons.get(a["reason"], 0) + 1
        for a in marked:
            if not a["rules"] and "reason" not in a and version not in gaps.setdefault(a["field"], []):
                gaps[a["field"]].append(version)
        gaps = {k: v for k, v in gaps.items() if v}
        rows.append(Row(version, len(marked), len(covered), len(out), len(marked) - len(covered) - len(out)))
    return Table(rows, dict(sorted(reasons.items(), key=lambda kv: -kv[1])), dict(sorted(gaps.items())), items)


BEGIN, END = "<!-- postinit-coverage:begin -->", "<!-- postinit-coverage:end -->"


def _ranges(versions: list[str], every: list[str]) -> str:
    """``0.5.5-0.5.9, 0.5.12``: runs of consecutive releases."""
    out: list[str] = []
    run: list[str] = []
    for version in every:
        if version in versions:
            run.append(version)
        elif run:
            out.append(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}")
            run = []
    if run:
        out.append(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ", ".join(out)


def render(table: Table, kb: kb_module.KnowledgeBase | None = None) -> str:
    """The generated block of docs/explain-coverage.md."""
    kb = kb if kb is not None else kb_module.load()
    every = [row.release for row in table.rows]
    lines = [BEGIN, "", "| release | assignments | covered | out of scope | uncovered | coverage |", "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.release} | {r.assignments} | {r.covered} | {r.out_of_scope} | {r.uncovered} | {r.percent}% |" for r in table.rows]
    groups = list(GROUPS)
    lines += ["", "The fields a sizing or CUDA graph test reads, by field group: the NVIDIA assignments no rule covers, "
              "then in brackets the assignments in branches for other platforms (AMD/HIP, NPU, XPU, CPU), which "
              "the NVIDIA rules do not judge:", "",
              "| release | " + " | ".join(groups) + " |", "|---|" + "---:|" * len(groups)]
    for row in table.rows:
        counts = table.by_group(row.release)
        lines.append(f"| {row.release} | " + " | ".join(f"{counts[g][0]} ({counts[g][1]})" for g in groups) + " |")
    lines += ["", "Fields of each group: " + "; ".join(f"{g}: " + ", ".join(f"`{f}`" for f in GROUPS[g]) for g in groups) + "."]
    lines += ["", f"The same groups by place: the NVIDIA assignments a rule covers by field but no covering rule cites "
              f"within {SITE_SLACK} lines (its source, moved to the release by the lock): branches no rule describes, "
              "such as a model's own adjustment the default rules stay silent for "
              "(`python tests/real_sglang/postinit_coverage.py --sites VERSION` lists them):", "",
              "| release | " + " | ".join(groups) + " |", "|---|" + "---:|" * len(groups)]
    for row in table.rows:
        sites = by_site(table, kb, row.release)
        lines.append(f"| {row.release} | " + " | ".join(str(len(sites[g])) for g in groups) + " |")
    lines += ["", "Out of scope and not covered, by reason (assignments, summed over the releases):", "", "| reason | assignments |", "|---|---:|"]
    lines += [f"| {REASONS[reason]} | {count} |" for reason, count in table.reasons.items()]
    lines += ["", f"Known gaps: the {len(table.gaps)} fields with an uncovered assignment, and the releases that have one:", "",
              "| field | releases | assignments |", "|---|---|---:|"]
    counts = {name: sum(1 for v in every for a in table.uncovered(v) if a["field"] == name) for name in table.gaps}
    lines += [f"| `{name}` | {_ranges(versions, every)} | {counts[name]} |" for name, versions in table.gaps.items()]
    return "\n".join(lines + ["", END])


def render_docs(text: str, table: Table, kb: kb_module.KnowledgeBase | None = None) -> str:
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return head + render(table, kb) + tail


def generated_block(text: str) -> str:
    """The generated block of a docs page, markers included."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[start:end]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", action="store_true", help=f"walk every wheel and rewrite {DATA.relative_to(ROOT)}")
    parser.add_argument("--store-release", nargs="+", metavar="VERSION", help=f"walk only these releases' wheels and store them in {DATA.relative_to(ROOT)}, keeping the others")
    parser.add_argument("--docs", action="store_true", help=f"rewrite the generated block of {DOCS.relative_to(ROOT)}")
    parser.add_argument("--uncovered", metavar="VERSION", help="list the uncovered assignments of a release")
    parser.add_argument("--sites", metavar="VERSION", help="list the assignments of the field groups no covering rule cites near")
    args = parser.parse_args()
    if args.store:
        DATA.write_text(dump(stored_data()))
        print(f"wrote {DATA.relative_to(ROOT)} ({DATA.stat().st_size // 1024} KB)")
    if args.store_release:
        DATA.write_text(dump(with_releases(load_assignments(DATA), args.store_release)))
        print(f"wrote {DATA.relative_to(ROOT)} ({DATA.stat().st_size // 1024} KB): walked {', '.join(args.store_release)}")
    table = measure(load_assignments(DATA))
    for row in table.rows:
        print(f"{row.release:>7}: {row.assignments:4} assignments, {row.covered:4} covered, {row.out_of_scope:4} out of scope, "
              f"{row.uncovered:4} uncovered ({row.percent}% of those in scope)")
    if args.uncovered:
        for item in table.uncovered(args.uncovered):
            conditions = " and ".join(item["conditions"]) or "always"
            print(f"  {item['field']} = {item['value']}  [{item['function']}, {item['file']}:{item['line']}]  if {conditions}")
    if args.sites:
        for group, items in by_site(table, kb_module.load(), args.sites).items():
            for item in items:
                conditions = " and ".join(item["conditions"]) or "always"
                print(f"  [{group}] {item['field']} = {item['value']}  [{item['function']}, {item['file']}:{item['line']}]  if {conditions}")
    if args.docs:
        DOCS.write_text(render_docs(DOCS.read_text(), table))
        print(f"rewrote the generated block of {DOCS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
