"""Run inside an SGLang environment, by its path (never imported by pytest_sglang, whose
environment may lack SGLang): what the installed release's own post-init makes of launch
commands on a simulated GPU. ``pytest-sglang explain --execute`` runs it
(``pytest_sglang/judge/explain/execute.py``), and so do the real tier's differentials
(``tests/real_sglang/sglang_postinit.py``).

    python postinit.py < cases     # one JSON line: {name: {"fields": {...}} | {"error": "..."}}

A case is ``{"name", "argv", "gpu": {"sm", "name", "memory_mib", "count"}}`` (an AMD GPU adds
``"platform": "hip"`` and ``"gfx": "gfx942"``; its ``sm`` is the capability torch reports on ROCm,
94 for gfx942), and ``"env"``, the variables the command sets before the entry point
(``SGLANG_ENABLE_SPEC_V2=0 python -m ...``); ``{models}`` in an argv word is the directory of the model configs
(``tests/data/model-configs``), given as ``SGLANG_MODEL_CONFIGS`` (optional). Each case runs the release's ``prepare_server_args(argv)`` (argparse,
``ServerArgs.__post_init__`` and its handlers; from 0.5.19 also ``resolve_once()``, the
resolution pipeline a launch runs before it logs ``server_args=``), on a GPU simulated at the
seams SGLang reads hardware from:

- ``torch.cuda``: ``is_available``, ``is_initialized`` (so no NVML probe runs),
  ``device_count``, ``current_device``, ``get_device_capability``, ``get_device_name``,
  ``get_device_properties``, ``mem_get_info``; ``torch.version.cuda``;
- ``nvidia-smi`` on ``PATH``: a script answering the ``--query-gpu`` memory, name and
  compute-capability queries for every simulated GPU;
- an AMD GPU is a ROCm build of torch on an AMD host: ``torch.version.hip`` set and
  ``torch.version.cuda`` None, ``gcnArchName`` in the device properties, ``rocminfo`` on
  ``PATH`` (SGLang reads the GPU memory from its first pool) and no ``nvidia-smi``; SGLang's
  ``is_hip()`` and ``is_cuda()`` then answer as on that host;
- SGLang's cached probes (``is_sm90_supported``, ``is_sm100_supported``, ``is_blackwell``,
  ``get_device_sm``, ``is_cuda`` ...): their ``lru_cache`` is emptied before every case, so they
  compute again from the simulated ``torch.cuda``; module-level copies (``_device_sm``,
  ``_is_sm100_supported`` ...) are recomputed; ``is_flashinfer_available`` answers True (a GPU
  host has FlashInfer; this environment has not) and ``cpu_has_amx_support`` False, in every
  module that imported them by name.

The answer has ``fields`` (every ServerArgs field after post-init, JSON-able) and ``parsed``
(what argparse made of argv, before post-init), or ``error``: the one-line exception. No network.
A case with ``"as_reported": true`` also gets ``sglang_version``, and its ``parsed`` fields under
the names SGLang reports (``ServerArgs.from_cli_args`` renames some before 0.5.19). Without an
importable ``sglang`` the runner prints one line on standard error and exits with status 3.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import json
import os
import sys
import tempfile
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import offline  # noqa: E402  (beside this file)

# A CPU engine would not be a GPU host: the GPU is simulated below.
os.environ.pop("SGLANG_USE_CPU_ENGINE", None)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

GPU: dict = {"sm": 90, "name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "count": 8}
CUDA_VERSION = "12.9"
# torch.version.hip of a ROCm 6.4 build of torch (what SGLang's ROCm images ship).
HIP_VERSION = "6.4.43482-0f2d60242"
# Module-level copies of probes, recomputed for each case: name -> the probe in utils.common
# (sglang.srt.utils before 0.5.3).
CONSTANTS = {
    "_device_sm": "get_device_sm",
    "_is_sm90_supported": "is_sm90_supported",
    "_is_sm100_supported": "is_sm100_supported",
    "_is_sm120_supported": "is_sm120_supported",
    "_is_sm120": "is_sm120_supported",
    "_IS_SM120": "is_sm120_supported",
    "_is_blackwell": "is_blackwell_supported",
    "_is_blackwell_supported": "is_blackwell_supported",
    "_is_cuda": "is_cuda",
    "_is_cuda_alike": "is_cuda_alike",
    "_is_hip": "is_hip",
    "_is_gfx95_supported": "is_gfx95_supported",
    "_is_gfx942_supported": "is_gfx942_supported",
    "_is_flashinfer_available": "is_flashinfer_available",
}
# A CUDA host has FlashInfer (SGLang's own probe also asks is_cuda(): never on ROCm).
FIXED = {"is_flashinfer_available": True, "cpu_has_amx_support": False}

_NVIDIA_SMI = """#!{python}
import json, os, sys
gpu = json.load(open(os.environ["SIMULATED_GPU_FILE"]))
query = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--query-gpu=")), None)
if query is None:
    print("NVIDIA-SMI (simulated)")
    sys.exit(0)
values = {{"memory.total": str(gpu["memory_mib"]), "name": gpu["name"], "compute_cap": f"{{gpu['sm'] // 10}}.{{gpu['sm'] % 10}}",
          "memory.used": "0", "memory.free": str(gpu["memory_mib"]), "index": None}}
for i in range(gpu["count"]):
    row = [str(i) if q == "index" else values.get(q, "[N/A]") for q in query.split(",")]
    print(", ".join(row))
"""

# What ``rocminfo`` prints for each GPU agent, as far as SGLang's
# ``rocminfo | grep 'gfx' -A 100 | grep 'Pool 1' -A 5 | grep 'Size:'`` reads it (sizes in KiB).
_ROCMINFO = """#!{python}
import json, os
gpu = json.load(open(os.environ["SIMULATED_GPU_FILE"]))
print("ROCk module is loaded")
for i in range(gpu["count"]):
    kib = gpu["memory_mib"] * 1024
    for line in ("*******", f"Agent {{i + 2}}", "*******", f"  Name:                    {{gpu['gfx']}}",
                 f"  Marketing Name:          {{gpu['name']}}", "  Vendor Name:             AMD",
                 "  Device Type:             GPU", "  Pool Info:", "    Pool 1",
                 "      Segment:                 GLOBAL; FLAGS: COARSE GRAINED",
                 f"      Size:                    {{kib}}({{hex(kib)}}) KB", "      Allocatable:             TRUE",
                 "  ISA Info:", "    ISA 1", f"      Name:                    amdgcn-amd-amdhsa--{{gpu['gfx']}}:sramecc+:xnack-"):
        print(line)
"""


def _hip() -> bool:
    return GPU.get("platform") == "hip"


def _capability() -> tuple[int, int]:
    return GPU["sm"] // 10, GPU["sm"] % 10


def _simulate_torch() -> None:
    """The torch.cuda seams, reading the current case's GPU (installed before SGLang is imported,
    so what SGLang computes at import sees a CUDA host)."""
    import torch

    def props(device=None):  # noqa: ANN001, ANN202
        return types.SimpleNamespace(
            name=GPU["name"], major=_capability()[0], minor=_capability()[1], total_memory=GPU["memory_mib"] * 2**20,
            multi_processor_count=304 if _hip() else 132, is_integrated=False, is_multi_gpu_board=False, L2_cache_size=50 * 2**20,
            gcnArchName=f"{GPU['gfx']}:sramecc+:xnack-" if _hip() else "",
        )  # fmt: skip

    cuda = torch.cuda
    cuda.is_available = lambda: not _at_import()
    cuda.is_initialized = lambda: True
    cuda.device_count = lambda: GPU["count"]
    cuda.current_device = lambda: 0
    cuda.get_device_capability = lambda device=None: _capability()
    cuda.get_device_name = lambda device=None: GPU["name"]
    cuda.get_device_properties = props
    cuda.mem_get_info = lambda device=None: (GPU["memory_mib"] * 2**20, GPU["memory_mib"] * 2**20)
    _torch_build()


class _TorchVersion(types.ModuleType):
    """``torch.version`` of the current GPU's build: CUDA (``cuda`` set, ``hip`` None) or ROCm
    (``hip`` set, ``cuda`` None). While a module's top level runs it is no ROCm build, as it
    sees no CUDA device: it then imports only what is installed here (no ``aiter``)."""

    def __init__(self, original: types.ModuleType) -> None:
        super().__init__(original.__name__)
        self._original = original

    @property
    def cuda(self) -> str | None:
        return None if _hip() else CUDA_VERSION

    @property
    def hip(self) -> str | None:
        return HIP_VERSION if _hip() and not _at_import() else None

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._original, name)


def _torch_build() -> None:
    """torch as built for the current GPU (installed once; it answers for each case's GPU)."""
    import torch

    if not isinstance(torch.version, _TorchVersion):
        torch.version = _TorchVersion(torch.version)  # type: ignore[assignment]
        sys.modules["torch.version"] = torch.version


class _KernelStandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``sgl_kernel`` has no CPU build: the harness installs a stand-in with the names SGLang's
    CPU engine imports. Older releases import more of it at module level (``from sgl_kernel
    import silu_and_mul``); every missing name or submodule becomes a stand-in that raises
    when called. Post-init never calls a kernel."""

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001, ANN201
        if name.startswith("sgl_kernel."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):  # noqa: ANN001, ANN201
        module = types.ModuleType(spec.name)
        module.__path__ = []  # type: ignore[attr-defined]
        module.__getattr__ = _stand_in  # type: ignore[attr-defined]
        return module

    def exec_module(self, module) -> None:  # noqa: ANN001
        return None


class _StandIn:
    """A missing ``sgl_kernel`` name: its attributes are stand-ins too; calling it while a module
    is imported (a decorator, a constant) gives another stand-in, calling it later raises."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> "_StandIn":
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _StandIn(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN204
        if _at_import():
            return _StandIn(f"{self._name}()")
        raise RuntimeError(f"sgl_kernel.{self._name} is a stand-in (no kernel runs in post-init)")

    def __mro_entries__(self, bases):  # noqa: ANN001, ANN204
        return (object,)


def _stand_in(name: str) -> _StandIn:
    if name.startswith("__"):
        raise AttributeError(name)
    return _StandIn(name)


def _tolerate_kernel_imports() -> None:
    import torch

    try:
        import sgl_kernel
    except Exception:  # noqa: BLE001  (a CUDA build on a host without CUDA, or none installed)
        sgl_kernel = types.ModuleType("sgl_kernel")
        sys.modules["sgl_kernel"] = sgl_kernel

    register_fake = torch.library.register_fake

    def tolerant(op, func=None, /, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        # Older releases register fake kernels for sgl_kernel operators at import; the
        # stand-in defines none of them, so the registration is skipped.
        if not (isinstance(op, str) and op.startswith("sgl_kernel::")):
            return register_fake(op, func, *args, **kwargs)

        def register(fn):  # noqa: ANN001, ANN202
            try:
                return register_fake(op, fn, *args, **kwargs)
            except RuntimeError:
                return fn

        return register(func) if func is not None else register

    torch.library.register_fake = tolerant

    if not hasattr(sgl_kernel, "__getattr__"):
        sgl_kernel.__getattr__ = _stand_in  # type: ignore[attr-defined]
    if not hasattr(sgl_kernel, "__path__"):
        sgl_kernel.__path__ = []  # type: ignore[attr-defined]
    sys.meta_path.insert(0, _KernelStandIns())


def common_utils() -> types.ModuleType:
    """The module SGLang's hardware probes live in: ``sglang.srt.utils.common``, or before 0.5.3
    the single module ``sglang.srt.utils``."""
    try:
        from sglang.srt.utils import common
    except ImportError:
        import sglang.srt.utils as common
    return common


def _clear_probe_caches() -> None:
    common = sys.modules.get("sglang.srt.utils.common") or sys.modules.get("sglang.srt.utils")
    for value in list(vars(common).values()) if common is not None else ():
        if isinstance(value, functools._lru_cache_wrapper):
            value.cache_clear()


class _ImportsSeeTheCpu(importlib.abc.MetaPathFinder):
    """An SGLang module imported while a case runs computes its top-level probes as on this
    machine (no CUDA: only what is installed here is imported), and leaves no cached answer
    behind: the probe caches are emptied before and after its top-level code."""

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001, ANN201
        if not name.startswith("sglang"):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_seeing_the_cpu(module) -> None:  # noqa: ANN001
            _clear_probe_caches()
            try:
                exec_module(module)
            finally:
                _clear_probe_caches()

        spec.loader.exec_module = exec_seeing_the_cpu  # type: ignore[method-assign]
        return spec


_BIN: dict[str, str] = {}  # platform -> the directory of its tools, first on PATH for its cases
_PATH = os.environ.get("PATH", "")


def _simulate_nvidia_smi(tmp: str) -> str:
    """The vendor tools: ``nvidia-smi`` for an NVIDIA host, ``rocminfo`` for an AMD one, each in
    its own directory put first on PATH for the cases of that platform (an AMD host has no
    ``nvidia-smi``); returns the file the current GPU is written to."""
    for platform, tool, text in (("cuda", "nvidia-smi", _NVIDIA_SMI), ("hip", "rocminfo", _ROCMINFO)):
        bin_dir = os.path.join(tmp, f"bin-{platform}")
        os.makedirs(bin_dir)
        script = os.path.join(bin_dir, tool)
        with open(script, "w") as f:
            f.write(text.format(python=sys.executable))
        os.chmod(script, 0o755)
        _BIN[platform] = bin_dir
    state = os.path.join(tmp, "gpu.json")
    os.environ["SIMULATED_GPU_FILE"] = state
    return state


# Model types the environment's transformers knows that a release's pinned transformers did not,
# with the first transformers release that knows each: releases pinning an older one (0.5.5-0.5.14
# pin 4.57.1 to 5.8.1; deepseek_v32 arrived in 5.12) carry their own fallback for DeepSeek V3.2
# (read as DeepseekV3ForCausalLM with its NSA indexer) and take it only when AutoConfig does not
# know the model type.
UNKNOWN_TO_PIN = {"deepseek_v32": (5, 12)}


def _as_pinned_transformers() -> None:
    pin = os.environ.get("SGLANG_TRANSFORMERS_PIN", "")
    parts = [int(p) for p in pin.split(".")[:2] if p.isdigit()]
    hidden = tuple(name for name, since in UNKNOWN_TO_PIN.items() if len(parts) == 2 and tuple(parts) < since)
    if not hidden:
        return
    from transformers.models.auto import configuration_auto

    for name in hidden:
        configuration_auto.CONFIG_MAPPING_NAMES.pop(name, None)
        configuration_auto.CONFIG_MAPPING._extra_content.pop(name, None)
        configuration_auto.CONFIG_MAPPING._modules.pop(name, None)


def _sglang_modules() -> list[types.ModuleType]:
    return [m for name, m in list(sys.modules.items()) if name.startswith("sglang") and isinstance(m, types.ModuleType)]


def _at_import() -> bool:
    """Whether a module is being imported further up the stack (its top-level code runs)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") != "__main__":
            return True
        frame = frame.f_back
    return False


def _cuda_quantization_methods() -> None:
    """The quantization methods SGLang registers only when its module is imported on a CUDA
    host (``if is_cuda(): BASE_QUANTIZATION_METHODS.update({"mxfp4": Mxfp4Config, ...})``):
    imported on this machine, a gpt-oss checkpoint's ``mxfp4`` would be an unknown method."""
    quantization = sys.modules.get("sglang.srt.layers.quantization")
    config = getattr(quantization, "Mxfp4Config", None)
    if config is None or _hip():
        return
    for table in ("BASE_QUANTIZATION_METHODS", "QUANTIZATION_METHODS"):
        methods = getattr(quantization, table, None)
        if isinstance(methods, dict):
            methods.setdefault("mxfp4", config)


def _fix_helpers() -> None:
    """The probes that answer regardless of the GPU, in every module holding them: a GPU host has
    FlashInfer (``is_flashinfer_available`` True when called by a function; at a module's top
    level it stays False, since the modules it would import are not installed here) and no AMX
    CPU path (``cpu_has_amx_support`` False)."""
    common = common_utils()

    for name, answer in FIXED.items():
        original = getattr(common, name, None)
        if original is None:
            continue

        def fixed(*args, _answer=answer, _name=name, **kwargs):  # noqa: ANN002, ANN003, ANN202
            if _name == "is_flashinfer_available" and _hip():
                return False
            return False if _answer and _at_import() else _answer

        fixed.__name__ = name
        for module in _sglang_modules():
            if getattr(module, name, None) is original:
                setattr(module, name, fixed)


def _for_this_gpu(gpu: dict, state: str) -> None:
    """Make every probe answer for ``gpu``: caches emptied, module copies recomputed."""
    gpu = dict(gpu)
    GPU.clear()
    GPU.update(gpu)
    with open(state, "w") as f:
        json.dump(GPU, f)
    os.environ["PATH"] = _BIN["hip" if _hip() else "cuda"] + os.pathsep + _PATH
    _torch_build()
    platforms = sys.modules.get("sglang.srt.platforms")
    if platforms is not None and hasattr(platforms, "_current_platform"):
        platforms._current_platform = None  # resolved again, for this GPU's build
    common = common_utils()

    for module in _sglang_modules():
        for value in list(vars(module).values()):
            if isinstance(value, functools._lru_cache_wrapper):
                value.cache_clear()
    for module in _sglang_modules():
        for name, probe in CONSTANTS.items():
            if name in vars(module) and hasattr(common, probe):
                setattr(module, name, getattr(common, probe)())


def _plain(value):  # noqa: ANN001, ANN202
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "__struct_fields__"):
        return {f: _plain(getattr(value, f)) for f in value.__struct_fields__}
    return repr(value)


def fields_after_post_init(argv: list[str]) -> dict:
    from sglang.srt.server_args import prepare_server_args

    args = prepare_server_args(list(argv))
    if hasattr(args, "resolve_once"):  # 0.5.19+: the resolution pipeline a launch runs
        args.resolve_once()
        return _plain(args.resolved_dict())
    return _plain(args)


def _renames() -> dict[str, str]:
    """``args.NEW = args.OLD`` statements of ``ServerArgs.from_cli_args`` (before 0.5.19): the
    parsed field ``OLD`` is reported as ``NEW``."""
    import ast
    import inspect

    from sglang.srt.server_args import ServerArgs

    try:
        tree = ast.parse(inspect.getsource(ServerArgs.from_cli_args).strip())
    except (AttributeError, OSError, TypeError, SyntaxError):
        return {}
    out = {}
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Attribute) and isinstance(stmt.value, ast.Attribute):
            out[stmt.value.attr] = stmt.targets[0].attr
    return out


def _as_reported(answer: dict) -> dict:
    from sglang.version import __version__

    answer["sglang_version"] = __version__
    parsed = answer.get("parsed")
    for old, new in _renames().items() if isinstance(parsed, dict) else ():
        if old in parsed and new not in parsed:
            parsed[new] = parsed.pop(old)
    return answer


def run(cases: list[dict]) -> dict:
    models = os.environ.get("SGLANG_MODEL_CONFIGS", "")
    out = {}
    with tempfile.TemporaryDirectory(prefix="sglang-postinit-") as tmp:
        state = _simulate_nvidia_smi(tmp)
        _for_this_gpu(GPU, state)
        _simulate_torch()
        _tolerate_kernel_imports()
        sys.meta_path.insert(0, _ImportsSeeTheCpu())
        _as_pinned_transformers()
        import sglang.srt.server_args  # noqa: F401  (on the simulated CUDA host)

        _fix_helpers()
        _cuda_quantization_methods()
        for case in cases:
            argv = [w.replace("{models}", models) if models else w for w in case["argv"]]
            _for_this_gpu(case["gpu"], state)
            saved = dict(os.environ)
            os.environ.update(case.get("env") or {})  # what the command sets before the entry point
            answer: dict = {}
            try:
                answer["parsed"] = _plain(offline.parsed(argv))
                imported = len(sys.modules)
                try:
                    answer["fields"] = fields_after_post_init(argv)
                except Exception:
                    if len(sys.modules) == imported:
                        raise  # a refusal of its own, not of a module that imported on this CPU
                if len(sys.modules) != imported:
                    # Modules imported on the way cached CPU answers: ask again, all imported.
                    _for_this_gpu(case["gpu"], state)
                    _fix_helpers()
                    _cuda_quantization_methods()
                    answer["fields"] = fields_after_post_init(argv)
            except BaseException as exc:  # argparse's SystemExit too
                answer = {"error": offline.one_line(exc)}
            finally:
                os.environ.clear()
                os.environ.update(saved)
            if case.get("as_reported"):
                answer = _as_reported(answer)
            text = json.dumps(answer, default=repr)
            out[case["name"]] = json.loads(text.replace(models, "{models}") if models else text)
    return out


NO_SGLANG = 3  # the exit status when this python has no sglang to import


if __name__ == "__main__":
    import importlib.util

    if importlib.util.find_spec("sglang") is None:
        sys.stderr.write(f"no sglang package in {sys.executable}\n")
        sys.exit(NO_SGLANG)
    if os.environ.get("SGLANG_FROM_WHEEL"):
        offline.tolerate_known_transformers_configs()
    offline.refuse_the_network()
    cases = json.load(sys.stdin)
    with contextlib.redirect_stdout(sys.stderr):  # what SGLang prints is not the answer
        result = run(cases)
    json.dump(result, sys.stdout, sort_keys=True, separators=(",", ":"))
    sys.stdout.write("\n")
