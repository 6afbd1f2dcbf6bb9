"""Run inside the harness's SGLang environment (never imported by the project): what a release's
own KV and mamba pool sizing makes of a launch command on a simulated GPU with given memory.

    python sglang_pools.py < cases     # one JSON line: {name: {"pools": {...}} | {"error": "...", "stage": ...}}

A case is ``{"name", "argv", "gpu": {"sm", "name", "memory_mib", "count"}, "memory":
{"pre_load_free_bytes", "weights_bytes"}}`` (both per GPU); ``{models}`` in an argv word is the
directory of the model configs, given as ``SGLANG_MODEL_CONFIGS``. Each case runs, in the release
itself:

1. its post-init on the simulated GPU (``sglang_postinit.py``'s machinery: ``prepare_server_args(argv)``,
   and from 0.5.19 ``resolve_once()``); 0.5.17+ then ``publish`` the config, as the scheduler
   process does first;
2. its ``ModelConfig`` from the config.json (``ModelConfig.from_server_args``); an architecture
   no ``EntryClass`` of its ``models/`` registers is refused there (stage ``model``), as loading
   the weights would;
3. its pool sizing on a stand-in ``ModelRunner``: the top-level statements of the release's own
   ``__init__`` run as written, up to loading the weights (the distributed set-up left out: the
   process groups are stand-ins; a statement that needs a loaded model or a GPU stream is
   skipped), what loading sets (dtype, layer range, no sliding window: no weights are read),
   then the statements of its ``initialize`` between loading and the pools (the layer range, a
   Mamba2 model's radix-cache switch, the KV-cache dtype, ...). Then, by era:

   - 0.5.5-0.5.9: the runner's ``init_memory_pool`` with every pool and allocator class of its
     module a recorder: the first one built ends the sizing, nothing is allocated; then the
     release's own statement that sets ``max_running_requests`` (the runner's ``initialize``,
     else the TP worker's ``__init__``);
   - 0.5.10-0.5.15: the runner's ``_resolve_memory_pool_config``;
   - 0.5.16-0.5.23: the runner's ``init_spec_aux_hidden_state`` and ``init_kv_cache_configurator``
     and the configurator's ``_resolve_memory_pool_config``;

   and in every era the TP worker's own assertion on the result (``max_running_request is zero``).

GPU memory answers at ``torch.cuda.mem_get_info``: the card's total during post-init (as the
post-init differential sees it), ``pre_load_free_bytes`` for the reading taken before the weights
load (through the release's own ``get_available_gpu_memory``, which with several GPUs in the TP
group all-reduces it as float32), and ``pre_load_free_bytes - weights_bytes`` after. The
distributed state answers as rank 0 of the case's TP/DP layout: the process-group coordinators of
``parallel_state`` (0.5.21+: the groups ``get_parallel()`` is stated) and the attention-DP sizes
of ``dp_attention`` are stand-ins with the sizes the release's own
``compute_dp_attention_world_info`` gives; one real single-process gloo group serves the
collectives a multi-GPU profile runs (a minimum over one rank). A release that pins a
transformers older than 5.6 gets its config classes' own ``__init__`` back
(:func:`_as_pinned_config_classes`), and vLLM's modules (imported at module level by 0.5.6-0.5.7
when an import does not see CUDA) are stand-ins.

The answer: ``max_total_num_tokens``, ``max_running_requests`` (per attention-DP worker, as the
scheduler gets it), ``context_len``, ``cell_size`` (bytes per token of the KV pool, where the
release computes one: 0.5.7+), ``max_mamba_cache_size`` and ``mamba_cache_per_req`` (hybrid
models), ``full_max_total_num_tokens``/``swa_max_total_num_tokens`` (hybrid SWA),
``eagle_draft_num_layers`` (the speculative draft's layers the KV sizing counts, 0.5.14+),
``max_req_input_len`` (the longest prompt, by the TP worker's own statements), the KV dtype, and ``read``: the post-init values the sizing read (``mem_fraction_static``,
``page_size``, ...), taken before the sizing overwrites any. Or ``error``: the one-line
exception, with ``stage`` "post-init", "model" or "pools" (then with ``read`` too).
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import inspect
import json
import os
import sys
import tempfile
import textwrap
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sglang_offline  # noqa: E402
import sglang_postinit as postinit  # noqa: E402

GIB = 1 << 30
# What torch.cuda.mem_get_info answers now: None is the card's total (post-init), else bytes free.
FREE: dict = {"bytes": None}
# Post-init values reported with the pools (what the sizing read).
READ_FIELDS = (
    "mem_fraction_static", "page_size", "max_running_requests", "max_total_tokens", "context_length",
    "kv_cache_dtype", "disable_radix_cache", "max_mamba_cache_size", "mamba_full_memory_ratio",
    "mamba_scheduler_strategy", "mamba_radix_cache_strategy", "disable_overlap_schedule", "speculative_algorithm",
    "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens", "dp_size",
    "enable_dp_attention", "tp_size", "mamba_ssm_dtype", "attention_backend", "attn_dp_size", "mm_feature_transport",
    "speculative_draft_model_path", "pp_size", "decode_attention_backend", "dsa_prefill_backend", "dsa_decode_backend",
    "nsa_prefill_backend", "nsa_decode_backend",
)  # fmt: skip


class _VllmStandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """0.5.6-0.5.7 import vLLM's activation kernels at module level when that module's import
    does not see CUDA (``_ImportsSeeTheCpu``); vLLM is not installed here, and sizing the pools
    calls no kernel: every ``vllm`` module is a stand-in whose names raise when called. Its
    quantization configs are not: before 0.5.5 SGLang imports them in a ``try`` and calls them in
    post-init, so their import fails, as on a host without vLLM (SGLang's own placeholders)."""

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001, ANN201
        if name.startswith("vllm.model_executor.layers.quantization"):
            return None
        if name == "vllm" or name.startswith("vllm."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):  # noqa: ANN001, ANN201
        module = types.ModuleType(spec.name)
        module.__path__ = []  # type: ignore[attr-defined]
        module.__getattr__ = postinit._stand_in  # type: ignore[attr-defined]
        return module

    def exec_module(self, module) -> None:  # noqa: ANN001
        return None


def _as_pinned_config_classes() -> None:
    """Releases that pin a transformers older than 5.6 (0.5.5-0.5.10) wrote their config classes
    for a ``PretrainedConfig`` that is a plain class: a subclass that defines no ``__init__``
    (Qwen3.5 MoE's, over Qwen3.5's) runs its base's. This environment's transformers makes
    every config class a dataclass, which gives such a subclass a generated ``__init__`` that
    never runs the base's (its sub-configs stay dicts, and the model is not seen as hybrid).
    Each such class gets back the ``__init__`` its pinned transformers would run."""
    pin = os.environ.get("SGLANG_TRANSFORMERS_PIN", "")
    parts = [int(p) for p in pin.split(".")[:2] if p.isdigit()]
    if len(parts) < 2 or tuple(parts) >= (5, 6):
        return
    import pkgutil

    import sglang.srt.configs as configs
    from transformers import PretrainedConfig

    for info in pkgutil.iter_modules(configs.__path__, "sglang.srt.configs."):
        try:
            module = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - a config module this environment cannot import
            continue
        for cls in list(vars(module).values()):
            if not (isinstance(cls, type) and issubclass(cls, PretrainedConfig) and cls.__module__.startswith("sglang.")):
                continue
            if _written_in_sglang(cls.__dict__.get("__init__")):
                continue
            base = next((b.__dict__["__init__"] for b in cls.__mro__[1:] if _written_in_sglang(b.__dict__.get("__init__"))), None)
            if base is not None:
                cls.__init__ = base


def _written_in_sglang(function) -> bool:  # noqa: ANN001
    code = getattr(function, "__code__", None)
    return code is not None and f"{os.sep}sglang{os.sep}" in code.co_filename


def _simulate_memory() -> None:
    import torch

    total = lambda: postinit.GPU["memory_mib"] * 2**20  # noqa: E731
    torch.cuda.mem_get_info = lambda device=None: (total() if FREE["bytes"] is None else FREE["bytes"], total())
    torch.cuda.empty_cache = lambda: None
    torch.cuda.synchronize = lambda device=None: None
    torch.cuda.set_device = lambda device=None: None
    if not torch.distributed.is_initialized():
        # One real single-process group: a multi-GPU profile's MIN all-reduce over one rank.
        store = torch.distributed.HashStore()
        torch.distributed.init_process_group("gloo", store=store, rank=0, world_size=1)


# ---- the distributed state, as rank 0 sees it -----------------------------------------------------


class _Group:
    """A process-group coordinator stand-in: its size, and rank 0 in it."""

    def __init__(self, world_size: int) -> None:
        self.world_size = world_size
        self.rank_in_group = 0
        self.rank = 0
        self.local_rank = 0
        self.ranks = list(range(world_size))
        self.first_rank = 0
        self.last_rank = world_size - 1
        self.is_first_rank = True
        self.is_last_rank = world_size == 1
        self.cpu_group = None
        self.device_group = None
        self.unique_name = "stand-in"

    def __getattr__(self, name: str):  # noqa: ANN204
        raise AttributeError(f"the stand-in process group has no {name!r} (pool sizing read it)")


def _layout(server_args) -> dict:  # noqa: ANN001
    """The case's parallel sizes, attention-DP ones from the release's own function."""
    tp, pp = server_args.tp_size, getattr(server_args, "pp_size", 1) or 1
    dp = getattr(server_args, "dp_size", 1) or 1
    dp_attention = bool(getattr(server_args, "enable_dp_attention", False))
    cp = getattr(server_args, "attn_cp_size", 1) or 1
    from sglang.srt.layers import dp_attention as dpa

    compute = getattr(dpa, "compute_dp_attention_world_info", None)
    if compute is not None:
        names = {"enable_dp_attention": dp_attention, "tp_rank": 0, "tp_size": tp, "dp_size": dp, "attn_dp_size": dp if dp_attention else 1, "attn_cp_size": cp}
        params = inspect.signature(compute).parameters
        args = [names[p] for p in params if p in names]
        answer = compute(*args)  # (attn_tp_rank, attn_tp_size, attn_dp_rank[, attn_dp_size])
        attn_tp = answer[1]
        attn_dp = answer[3] if len(answer) > 3 else dp if dp_attention else 1
    else:  # pragma: no cover - every release 0.5.5-0.5.23 has it
        attn_dp = dp if dp_attention else 1
        attn_tp = tp // attn_dp // cp
    ep = getattr(server_args, "ep_size", 1) or 1
    return {"tp": tp, "pp": pp, "dp": dp, "attn_dp": attn_dp, "attn_tp": attn_tp, "attn_cp": cp, "ep": ep, "dp_attention": dp_attention}


def _install_layout(layout: dict) -> None:
    from sglang.srt.distributed import parallel_state as ps
    from sglang.srt.layers import dp_attention as dpa

    groups = {
        "_WORLD": layout["tp"] * layout["pp"], "_TP": layout["tp"], "_ATTN_TP": layout["attn_tp"], "_ATTN_CP": layout["attn_cp"],
        "_ATTN_CP_OVERLAP": layout["attn_cp"], "_DCP": 1, "_PP": layout["pp"], "_SELF_PP": layout["pp"], "_MOE_EP": layout["ep"],
        "_MOE_TP": max(layout["tp"] // layout["ep"], 1), "_MOE_DP": 1, "_SHARED_EXPERTS_TP": layout["tp"],
    }  # fmt: skip
    for name, size in groups.items():
        if hasattr(ps, name):
            setattr(ps, name, _Group(size))
    values = {
        "_ATTN_TP_GROUP": _Group(layout["attn_tp"]), "_ATTN_TP_RANK": 0, "_ATTN_TP_SIZE": layout["attn_tp"], "_ATTN_DP_RANK": 0,
        "_ATTN_DP_SIZE": layout["attn_dp"], "_LOCAL_ATTN_DP_SIZE": layout["attn_dp"], "_LOCAL_ATTN_DP_RANK": 0,
        "_ENABLE_DP_ATTENTION_FLAG": layout["dp_attention"], "_ATTN_CP_RANK": 0, "_ATTN_CP_SIZE": layout["attn_cp"],
    }  # fmt: skip
    for name, value in values.items():
        if hasattr(dpa, name):
            setattr(dpa, name, value)


# ---- the stand-in model runner ------------------------------------------------------------------


def _statements(function) -> list[ast.stmt]:  # noqa: ANN001
    """The top-level statements of a function of the release, as written."""
    source = textwrap.dedent(inspect.getsource(function))
    return ast.parse(source).body[0].body  # type: ignore[attr-defined]


def _scope(function, names: dict) -> dict:  # noqa: ANN001
    """A namespace to run statements of a release function in: its module's globals, with
    ``names`` as the function's locals (one dict, so comprehensions see them too, and a local
    one statement assigns is there for the next)."""
    return {**vars(sys.modules[function.__module__]), **names}


def _run(stmt: ast.stmt, function, scope: dict) -> None:  # noqa: ANN001
    """One statement of a release function, run in ``scope``."""
    code = compile(ast.Module(body=[stmt], type_ignores=[]), f"<{function.__qualname__}>", "exec")
    exec(code, scope)


def _calls(stmt: ast.stmt, *methods: str) -> bool:
    """Whether a statement calls ``self.<one of methods>(...)``."""
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in methods
        and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"
        for n in ast.walk(stmt)
    )  # fmt: skip


def _run_init(obj: object, cls: type, arguments: dict) -> None:
    """What the release's own ``__init__`` does before it loads the weights (its attributes, the
    speculative draft's layer count for KV sizing, ...): its top-level statements up to that
    point, each run as written, but the distributed set-up (the process groups are stand-ins);
    one that needs more than the arguments (a loaded model, a GPU stream) is left out."""
    scope = _scope(cls.__init__, {"self": obj, **arguments})
    for stmt in _statements(cls.__init__):
        if _calls(stmt, "initialize", "load_model", "init_memory_pool", "alloc_memory_pool"):
            break
        if _calls(stmt, "init_torch_distributed"):  # the process groups: stand-ins already
            continue
        try:
            _run(stmt, cls.__init__, scope)
        except Exception:  # noqa: BLE001 - a step this sizing does not read
            pass


def _after_load(runner, server_args, pre_load_gib: float) -> None:  # noqa: ANN001
    """What the release's ``initialize`` does between loading the weights and sizing the pools
    (the layer range, a model family's radix-cache switch, the KV dtype, ...): its statements
    after ``self.load_model()``, up to the pool sizing, each run as written; one that needs the
    real model or GPU is left out."""
    initialize = type(runner).initialize
    scope = _scope(initialize, {"self": runner, "server_args": server_args, "min_per_gpu_memory": pre_load_gib, "pre_model_load_memory": pre_load_gib})
    started = False
    for stmt in _statements(initialize):
        if not started:
            started = _calls(stmt, "load_model")
            continue
        if _calls(stmt, "init_memory_pool", "alloc_memory_pool", "init_kv_cache_configurator", "init_attention_backend", "init_cublas"):
            break
        try:
            _run(stmt, initialize, scope)
        except Exception:  # noqa: BLE001 - needs the real model or GPU
            pass


class _Model:
    """The loaded model as the sizing reads it: no quantized KV cache scales, no layers."""

    quant_config = None

    def __init__(self, end_layer: int) -> None:
        self.start_layer = 0
        self.end_layer = end_layer


def _runner(server_args, model_config, layout: dict):  # noqa: ANN001, ANN202
    from sglang.srt.model_executor.model_runner import ModelRunner

    runner = ModelRunner.__new__(ModelRunner)
    arguments = {
        "model_config": model_config, "mem_fraction_static": server_args.mem_fraction_static, "gpu_id": 0, "tp_rank": 0,
        "tp_size": layout["tp"], "moe_ep_rank": 0, "moe_ep_size": layout["ep"], "pp_rank": 0, "pp_size": layout["pp"],
        "nccl_port": 0, "server_args": server_args, "dp_rank": 0, "attn_cp_rank": 0, "moe_dp_rank": 0,
        "is_draft_worker": False, "req_to_token_pool": None, "token_to_kv_pool_allocator": None,
        "memory_pool_config": None, "draft_model_idx": None, "ps": _parallel_state(layout),
    }  # fmt: skip
    for name, param in inspect.signature(ModelRunner.__init__).parameters.items():
        if name not in arguments and param.default is not inspect.Parameter.empty:
            arguments[name] = param.default
    _run_init(runner, ModelRunner, arguments)
    # What loading the model sets (load_model): its dtype, the layers of this rank, its sliding
    # window (none for the families drawn), and the model itself for the KV dtype's quantization.
    layers = model_config.num_hidden_layers
    if hasattr(model_config, "num_attention_layers"):
        layers = max(layers, model_config.num_attention_layers)
    runner.model = _Model(layers)
    runner.dtype = model_config.dtype
    runner.start_layer, runner.end_layer, runner.num_effective_layers = 0, layers, layers
    runner.sliding_window_size = None
    runner.forward_stream = None
    runner.pp_group, runner.tp_group = _Group(layout["pp"]), _Group(layout["tp"])
    runner.attention_tp_group = _Group(layout["attn_tp"])
    for name, value in (("pp_size", layout["pp"]), ("tp_size", layout["tp"]), ("pp_rank", 0), ("tp_rank", 0)):
        if not hasattr(runner, name):  # set later in __init__ from the process groups (0.5.21+)
            setattr(runner, name, value)
    runner.enable_hisparse = getattr(server_args, "enable_hisparse", False)
    runner.draft_model_idx = None
    return runner


def _parallel_state(layout: dict):  # noqa: ANN202
    """0.5.16+: the runner's ParallelState, from the release's own class when it has one."""
    try:
        from sglang.srt.distributed.parallel_state_wrapper import ParallelState
    except ImportError:
        return None
    values = {
        "tp_rank": 0, "tp_size": layout["tp"], "pp_rank": 0, "pp_size": layout["pp"], "dp_rank": 0, "dp_size": layout["dp"],
        "attn_tp_rank": 0, "attn_tp_size": layout["attn_tp"], "attn_dp_rank": 0, "attn_dp_size": layout["attn_dp"],
        "attn_cp_rank": 0, "attn_cp_size": layout["attn_cp"], "moe_ep_rank": 0, "moe_ep_size": layout["ep"], "moe_dp_rank": 0,
        "moe_dp_size": 1, "moe_tp_rank": 0, "moe_tp_size": max(layout["tp"] // layout["ep"], 1),
    }  # fmt: skip
    try:
        fields = inspect.signature(ParallelState).parameters
        return ParallelState(**{k: v for k, v in values.items() if k in fields})
    except Exception:  # noqa: BLE001
        return types.SimpleNamespace(**values)


# ---- one case -----------------------------------------------------------------------------------


def _draft_layers_of(runner) -> int | None:  # noqa: ANN001
    """The speculative draft's layers the KV sizing counts (0.5.14+), as the runner resolved them."""
    aux = getattr(runner, "spec_aux_config", None)
    layers = getattr(aux, "eagle_draft_num_layers", None) if aux is not None else getattr(runner, "eagle_draft_num_layers", None)
    return int(layers) if layers is not None else None


def _answer(runner, server_args, model_config, read: dict) -> dict:  # noqa: ANN001
    out = {
        "max_total_num_tokens": int(runner.max_total_num_tokens),
        "max_running_requests": int(runner.max_running_requests),
        "context_len": int(model_config.context_len),
        "kv_cache_dtype": str(getattr(runner, "kv_cache_dtype", None)).removeprefix("torch."),
        "read": read,
    }
    cell = getattr(runner, "_pools_cell_size", None)
    if cell is not None:
        out["cell_size"] = int(cell)
    out["max_req_input_len"] = _max_req_input_len(runner, model_config)
    draft_layers = _draft_layers_of(runner)
    if draft_layers is not None:
        out["eagle_draft_num_layers"] = draft_layers
    mamba = getattr(runner, "mambaish_config", None)
    if mamba is not None:
        out["max_mamba_cache_size"] = int(_current(server_args, "max_mamba_cache_size"))
        out["mamba_cache_per_req"] = int(mamba.mamba2_cache_params.mamba_cache_per_req)
    elif getattr(runner, "is_hybrid_gdn", False):  # 0.5.2-0.5.3: no mambaish_config; the config carries the state's size
        out["max_mamba_cache_size"] = int(_current(server_args, "max_mamba_cache_size"))
        out["mamba_cache_per_req"] = int(model_config.hf_config.mamba_cache_per_req)
    if getattr(runner, "is_hybrid_swa", False) or getattr(runner, "is_hybrid", False) and getattr(runner, "full_max_total_num_tokens", None):
        out["full_max_total_num_tokens"] = getattr(runner, "full_max_total_num_tokens", None)
        out["swa_max_total_num_tokens"] = getattr(runner, "swa_max_total_num_tokens", None)
    return out


class _NoAuxCache:
    """The request pool before it is built: with no auxiliary cache, the release's own
    ``schedulable_token_capacity`` answers the physical capacity it is given."""

    def schedulable_token_capacity(self, physical_capacity: int) -> int:
        return physical_capacity


def _max_req_input_len(runner, model_config) -> int:  # noqa: ANN001
    """The longest prompt the TP worker admits, from the release's own statements: those of its
    ``get_worker_info`` (0.5.14+) or ``__init__`` (0.5.5-0.5.13) that compute ``max_req_len``,
    ``kv_capacity`` and ``max_req_input_len``, run as written on a stand-in worker holding the
    runner (no decode context parallelism, no diffusion LLM); 0.5.14-0.5.20 return it as
    ``max_req_len - 5`` in the worker's info tuple, whose sixth item it is."""
    from sglang.srt.managers.tp_worker import TpModelWorker

    function = getattr(TpModelWorker, "get_worker_info", None)
    if function is None or "max_req_len = " not in inspect.getsource(function):  # it returns the worker's own
        function = TpModelWorker.__init__
    if getattr(runner, "req_to_token_pool", None) is None or not hasattr(runner.req_to_token_pool, "schedulable_token_capacity"):
        runner.req_to_token_pool = _NoAuxCache()
    worker = types.SimpleNamespace(
        model_runner=runner, model_config=model_config, max_total_num_tokens=runner.max_total_num_tokens,
        dllm_algorithm=None, ps=types.SimpleNamespace(attn_dcp_size=1),
    )  # fmt: skip
    scope = _scope(function, {"self": worker})
    names = ("max_req_len", "max_req_input_len", "kv_capacity")
    for stmt in _statements(function):
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Tuple) and len(stmt.value.elts) > 5:
            return int(eval(compile(ast.Expression(stmt.value.elts[5]), "<get_worker_info>", "eval"), scope))  # noqa: S307
        targets = [t for t in getattr(stmt, "targets", [getattr(stmt, "target", None)]) if t is not None]
        assigned = {t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else None for t in targets}
        if assigned & set(names) or (isinstance(stmt, ast.If) and "max_req_input_len" in ast.unparse(stmt)):
            _run(stmt, function, scope)
    value = getattr(worker, "max_req_input_len", None)
    return int(value if value is not None else scope["max_req_input_len"])


class SizingError(Exception):
    """The release's pool sizing raised: its message, and the post-init values it had read."""

    def __init__(self, cause: BaseException, read: dict) -> None:
        super().__init__(str(cause))
        self.cause, self.read = cause, read


def pools(server_args, pre_load_free: int, weights: int) -> dict:  # noqa: ANN001
    """The release's pool sizing for resolved ``server_args``; GPU memory as given."""
    from sglang.srt.configs.model_config import ModelConfig

    layout = _layout(server_args)
    _install_layout(layout)
    _publish(server_args, layout)
    # The post-init values the sizing reads, before it overwrites any (max_mamba_cache_size).
    read = {f: postinit._plain(_current(server_args, f)) for f in READ_FIELDS if hasattr(server_args, f)}
    model_config = ModelConfig.from_server_args(server_args)
    missing = [a for a in model_config.hf_config.architectures or [] if a not in _registry()]
    if missing:
        raise LookupError(f"Model architectures {missing} are not supported by this release's model registry")
    runner = _runner(server_args, model_config, layout)
    # The reading before the weights load, as the release takes it (a minimum over the TP
    # group's GPUs when there are several, which rounds the bytes to float32).
    common = postinit.common_utils()

    FREE["bytes"] = pre_load_free
    pre_load_gib = common.get_available_gpu_memory("cuda", 0, distributed=layout["tp"] * layout["pp"] > 1, cpu_group=None)
    FREE["bytes"] = pre_load_free - weights
    _after_load(runner, server_args, pre_load_gib)
    era = _era()
    try:
        era(runner, server_args, model_config, pre_load_gib)
        _worker_checks(runner, server_args)
    except Exception as exc:  # noqa: BLE001 - the release refuses: its message is the answer
        draft_layers = _draft_layers_of(runner)
        raise SizingError(exc, {**read, "eagle_draft_num_layers": draft_layers} if draft_layers is not None else read) from exc
    return _answer(runner, server_args, model_config, read)


def _publish(server_args, layout: dict) -> None:  # noqa: ANN001
    """0.5.17+: what the scheduler process's entry does first: publish the resolved config
    (the runner and the configurator read it back), as TP rank 0 of the case's layout."""
    try:
        from sglang.srt import runtime_context
    except ImportError:
        return
    publish = getattr(runtime_context, "publish", None)
    if publish is None:
        return
    stale = getattr(runtime_context.get_parallel(), "clear_stamp", None)
    if stale is not None:  # the previous case's ranks and groups
        stale()
    if "ranks" in inspect.signature(publish).parameters:
        ranks = runtime_context.SpawnRanks(world_rank=0, dp_rank=0 if layout["dp"] > 1 and not layout["dp_attention"] else None, gpu_id=0)
        publish(server_args, role="scheduler", ranks=ranks)
    else:
        publish(server_args, role="scheduler")
    parallel = runtime_context.get_parallel()
    if hasattr(parallel, "override_permanently"):  # 0.5.21+: the groups are stated, not built
        sizes = {
            "world_group": layout["tp"] * layout["pp"], "tp_group": layout["tp"], "pp_group": layout["pp"],
            "attn_tp_group": layout["attn_tp"], "attn_cp_group": layout["attn_cp"], "moe_ep_group": layout["ep"],
            "moe_tp_group": max(layout["tp"] // layout["ep"], 1), "moe_dp_group": 1, "shared_experts_tp_group": layout["tp"], "dcp_group": 1,
        }  # fmt: skip
        for name, size in sizes.items():
            try:
                parallel.override_permanently(**{name: _Group(size)})
            except Exception:  # noqa: BLE001 - a group this release does not name
                pass


def _worker_checks(runner, server_args) -> None:  # noqa: ANN001
    """The TP worker's own checks of what the sizing gave (``assert ... max_running_requests >
    0``), run as written on a stand-in worker holding the runner."""
    from sglang.srt.managers.tp_worker import TpModelWorker

    worker = types.SimpleNamespace(model_runner=runner, max_running_requests=runner.max_running_requests, max_total_num_tokens=runner.max_total_num_tokens)
    scope = _scope(TpModelWorker.__init__, {"self": worker, "server_args": server_args})
    for stmt in _statements(TpModelWorker.__init__):
        if isinstance(stmt, ast.Assert) and "max_running_request" in ast.unparse(stmt):
            _run(stmt, TpModelWorker.__init__, scope)


def _call(function, **candidates):  # noqa: ANN001, ANN003, ANN202
    """``function`` with the keyword arguments it takes in this release."""
    params = inspect.signature(function).parameters
    return function(**{k: v for k, v in candidates.items() if k in params})


def _current(server_args, field: str):  # noqa: ANN001, ANN202
    """A field's value as the running code reads it: 0.5.17+ from the published config bags
    (the pool sizing declares its results there), else what resolution decided (0.5.19+), else
    the ServerArgs attribute."""
    try:
        from sglang.srt import runtime_context
    except ImportError:
        runtime_context = None
    bags = getattr(getattr(runtime_context, "_CONTEXT", None), "_config_bags", None) if runtime_context else None
    stack = list(bags.values()) if isinstance(bags, dict) else []
    while stack:
        bag = stack.pop()
        fields = object.__getattribute__(bag, "_fields")
        if field in fields:
            return fields[field]
        stack.extend(object.__getattribute__(bag, "_subs").values())
    try:
        from sglang.srt.arg_groups.overrides import resolution_result
    except ImportError:
        return getattr(server_args, field, None)
    return resolution_result(server_args, field)


_REGISTRY: set[str] = set()


def _registry() -> set[str]:
    """The architectures the release's model files register (their ``EntryClass``), read from
    the source: loading a model never happens here."""
    if not _REGISTRY:
        import sglang.srt.models as models

        for path in Path(models.__path__[0]).glob("*.py"):
            try:
                tree = ast.parse(path.read_text(encoding="utf-8-sig", errors="replace"))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets):
                    _REGISTRY.update(n.id for n in ast.walk(node.value) if isinstance(n, ast.Name))
    return _REGISTRY


def _era():  # noqa: ANN202
    """The adapter for where this release keeps its pool sizing."""
    import importlib.util

    if importlib.util.find_spec("sglang.srt.mem_cache.kv_cache_configurator") is not None:
        return _configurator_era
    if importlib.util.find_spec("sglang.srt.model_executor.model_runner_kv_cache_mixin") is not None:
        from sglang.srt.model_executor.model_runner_kv_cache_mixin import ModelRunnerKVCacheMixin

        if hasattr(ModelRunnerKVCacheMixin, "_resolve_memory_pool_config"):
            return _resolve_config_era
    return _init_memory_pool_era


def _resolve_config_era(runner, server_args, model_config, pre_load_gib: float) -> None:  # noqa: ANN001
    """0.5.10-0.5.15: the runner resolves a MemoryPoolConfig before it builds any pool."""
    runner.configure_kv_cache_dtype()
    _record_cell_size(runner)
    config = runner._resolve_memory_pool_config(pre_load_gib)
    runner.max_total_num_tokens = config.max_total_num_tokens
    runner.max_running_requests = config.max_running_requests
    runner.full_max_total_num_tokens = config.full_max_total_num_tokens
    runner.swa_max_total_num_tokens = config.swa_max_total_num_tokens


def _record_cell_size(obj) -> None:  # noqa: ANN001
    """The bytes per token the release's pool configurator (0.5.11+) or its
    ``get_cell_size_per_token`` (0.5.7-0.5.10) computes, kept on the runner for the answer."""
    try:
        from sglang.srt.model_executor import pool_configurator
    except ImportError:
        pool_configurator = None
    runner = obj
    if pool_configurator is not None:
        create = pool_configurator.create_memory_pool_configurator

        def recording(owner):  # noqa: ANN001, ANN202
            configurator = create(owner)
            if hasattr(configurator, "_cell_size"):
                runner._pools_cell_size = configurator._cell_size
            return configurator

        pool_configurator.create_memory_pool_configurator = recording
    measure = getattr(type(obj), "get_cell_size_per_token", None)
    if measure is not None:

        def recording_cell(self, num_layers):  # noqa: ANN001, ANN202
            cell = measure(self, num_layers)
            runner._pools_cell_size = cell
            return cell

        obj.get_cell_size_per_token = types.MethodType(recording_cell, obj)


def _configurator_era(runner, server_args, model_config, pre_load_gib: float) -> None:  # noqa: ANN001
    """0.5.16-0.5.23: the runner builds a KVCacheConfigurator from its attributes; the
    configurator resolves the MemoryPoolConfig before it builds any pool."""
    from sglang.srt.model_executor.model_runner_components import layer_setup

    if hasattr(runner, "init_spec_aux_hidden_state"):
        runner.init_spec_aux_hidden_state()
    runner.layer_info = _call(
        layer_setup.resolve_layer_indices,
        model=runner.model, model_config=model_config, is_draft_worker=False, spec_algorithm=runner.spec_algorithm, draft_model_idx=None,
    )  # fmt: skip
    runner.configure_kv_cache_dtype()
    runner.pre_model_load_memory = pre_load_gib
    _record_cell_size(runner)
    runner.init_kv_cache_configurator()
    configurator = runner.kv_cache_configurator
    config = configurator._resolve_memory_pool_config(pre_load_gib)
    runner.max_total_num_tokens = config.max_total_num_tokens
    runner.max_running_requests = config.max_running_requests
    runner.full_max_total_num_tokens = config.full_max_total_num_tokens
    runner.swa_max_total_num_tokens = config.swa_max_total_num_tokens
    runner.mambaish_config = configurator.mambaish_config


class _Sized(Exception):
    """Raised by the first pool the release builds: everything is sized by then."""


class _Recorded:
    """A pool or allocator the release would build (its class attributes kept): the first one
    built ends the sizing, nothing is allocated."""

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        self.size = kwargs.get("size", args[0] if args else None)
        self.mamba_size = kwargs.get("mamba_size")
        raise _Sized(self)


def _init_memory_pool_era(runner, server_args, model_config, pre_load_gib: float) -> None:  # noqa: ANN001
    """0.5.5-0.5.9: ``init_memory_pool`` sizes and builds the pools in one method; every pool
    and allocator class it names is a recorder while it runs. Then the release's own statement
    that sets ``max_running_requests``: the runner's (0.5.7+, in ``initialize``) or the TP
    worker's (0.5.5-0.5.6)."""
    init_memory_pool = type(runner).init_memory_pool
    module = sys.modules[init_memory_pool.__module__]
    saved = {}
    for name, value in list(vars(module).items()):
        if isinstance(value, type) and name.endswith(("Pool", "Allocator", "PoolFP4", "KVPool")):
            saved[name] = value
            setattr(module, name, type(name, (_Recorded, value), {"__init__": _Recorded.__init__}))
    params = list(inspect.signature(init_memory_pool).parameters)
    _record_cell_size(runner)
    try:
        if "server_args" in params:
            runner.init_memory_pool(pre_load_gib, server_args)
        elif "max_num_reqs" in params:
            runner.init_memory_pool(pre_load_gib, server_args.max_running_requests, server_args.max_total_tokens)
        else:
            runner.init_memory_pool(pre_load_gib)
        raise RuntimeError("init_memory_pool built no pool")
    except _Sized as sized:
        runner.req_to_token_pool = sized.args[0]
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
    statement = _assignment_of(type(runner).initialize, "max_running_requests")
    if statement is not None:
        _run(statement, type(runner).initialize, _scope(type(runner).initialize, {"self": runner, "server_args": server_args}))
    else:
        from sglang.srt.managers.tp_worker import TpModelWorker

        statement = _assignment_of(TpModelWorker.__init__, "max_running_requests")
        worker = types.SimpleNamespace(max_total_num_tokens=runner.max_total_num_tokens, model_runner=runner)
        _run(statement, TpModelWorker.__init__, _scope(TpModelWorker.__init__, {"self": worker, "server_args": server_args}))
        runner.max_running_requests = worker.max_running_requests


def _assignment_of(function, attribute: str) -> ast.stmt | None:  # noqa: ANN001
    """The top-level ``self.<attribute> = ...`` statement of a release function."""
    for stmt in _statements(function):
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == attribute for t in stmt.targets):
            return stmt
    return None


def run(cases: list[dict]) -> dict:
    models = os.environ["SGLANG_MODEL_CONFIGS"]
    out = {}
    with tempfile.TemporaryDirectory(prefix="sglang-pools-") as tmp:
        state = postinit._simulate_nvidia_smi(tmp)
        postinit._for_this_gpu(postinit.GPU, state)
        postinit._simulate_torch()
        _simulate_memory()
        postinit._tolerate_kernel_imports()
        sys.meta_path.append(_VllmStandIns())
        sys.meta_path.insert(0, postinit._ImportsSeeTheCpu())
        postinit._as_pinned_transformers()
        import sglang.srt.server_args  # noqa: F401  (on the simulated CUDA host)

        _as_pinned_config_classes()
        postinit._fix_helpers()
        for case in cases:
            argv = [w.replace("{models}", models) for w in case["argv"]]
            saved = dict(os.environ)
            answer: dict = {}
            stage = "post-init"
            try:
                postinit._for_this_gpu(case["gpu"], state)
                FREE["bytes"] = None
                server_args = _post_init(argv, case["gpu"], state)
                stage = "pools"
                memory = case["memory"]
                answer = {"pools": pools(server_args, int(memory["pre_load_free_bytes"]), int(memory["weights_bytes"]))}
            except BaseException as exc:  # argparse's SystemExit too
                if os.environ.get("SGLANG_POOLS_TRACEBACK"):
                    import traceback

                    traceback.print_exc()
                if isinstance(exc, SizingError):
                    answer = {"error": sglang_offline._one_line(exc.cause), "stage": "pools", "read": exc.read}
                else:
                    answer = {"error": sglang_offline._one_line(exc), "stage": "model" if isinstance(exc, LookupError) and "model registry" in str(exc) else stage}
            finally:
                FREE["bytes"] = None
                os.environ.clear()
                os.environ.update(saved)
            out[case["name"]] = json.loads(json.dumps(answer, default=repr).replace(models, "{models}"))
    return out


def _post_init(argv: list[str], gpu: dict, state: str):  # noqa: ANN202
    """The release's ServerArgs after post-init (0.5.19+: resolved), as a launch has it; asked
    again once every module it imports is loaded (a module imported on the way caches CPU answers)."""
    from sglang.srt.server_args import prepare_server_args

    imported = len(sys.modules)
    args = prepare_server_args(list(argv))
    if len(sys.modules) != imported:
        postinit._for_this_gpu(gpu, state)
        postinit._fix_helpers()
        args = prepare_server_args(list(argv))
    if hasattr(args, "resolve_once"):
        args.resolve_once()
    return args


if __name__ == "__main__":
    if os.environ.get("SGLANG_FROM_WHEEL"):
        sglang_offline._tolerate_known_transformers_configs()
    sglang_offline._refuse_the_network()
    cases = json.load(sys.stdin)
    with contextlib.redirect_stdout(sys.stderr):  # what SGLang prints is not the answer
        result = run(cases)
    json.dump(result, sys.stdout, sort_keys=True, separators=(",", ":"))
    sys.stdout.write("\n")
