"""The facts rules are decided from, gathered from a target or given with a launch command.

Every fact carries where it came from; a fact nobody gave is *unknown* (never a guess), and a
rule that needs it says so (see :mod:`.expr`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from packaging.version import Version

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.settings import setting
from pytest_sglang.judge.explain.checkpoint import match_model_path
from pytest_sglang.judge.explain.expr import Scope, Unknown, is_unknown
from pytest_sglang.judge.explain.kb import KnowledgeBase
from pytest_sglang.model.gpu import (
    PLATFORMS,
    amd_gpu,
    memory_mib_from_name,
    platform_from_device,
    platform_from_name,
    sm_from_capability,
    sm_from_name,
)
from pytest_sglang.model.versions import parse_version
from pytest_sglang.parse.launch import LaunchCommand, flag_table

if TYPE_CHECKING:
    from pytest_sglang.target.target import Target

_MISSING = object()


@dataclass
class Fact:
    value: Any
    source: str
    # A model family read from a list (not from the model's config): it is decided again from
    # each release's own list, with the architectures it was read for.
    from_list: str | None = None
    archs: tuple[str, ...] = ()


@dataclass
class Situation(Scope):
    """What is known about one deployment (or one planned deployment)."""

    kb: KnowledgeBase
    target: str
    mode: str  # "target" or "launch"
    version: Version | None = None
    version_source: str | None = None
    gpu: dict[str, Fact] = field(default_factory=dict)
    model: dict[str, Fact] = field(default_factory=dict)
    launch: LaunchCommand | None = None
    launch_source: str | None = None
    reported: Mapping[str, Any] | None = None
    reported_source: str | None = None
    runtime: Any = None  # models.Effective on a target
    log_lines: list[str] = field(default_factory=list)
    log_source: str | None = None
    notes: list[str] = field(default_factory=list)
    # Filled while rules are evaluated: outcomes, and (for a launch command) predicted values.
    fired: dict[str, Any] = field(default_factory=dict)
    predicted: dict[str, Any] = field(default_factory=dict)
    _derived: dict[str, Any] = field(default_factory=dict)
    # The setting of the rule being judged: on a target, ``effective.<it>`` is its value before
    # that rule (what earlier rules made of the argument), not the final value the server reports.
    before: str | None = None

    def variant(self, **changes: Any) -> Situation:
        """A copy with some facts changed and the evaluation state fresh (no rule judged yet):
        situations that share outcomes, predictions or derived values judge each other's rules."""
        copy = replace(self, **changes, fired={}, predicted={}, before=None)
        copy._derived = {}
        return copy

    # ---- the scope rules read ---------------------------------------------------------------
    def lookup(self, name: str) -> Any:
        if name.startswith("fired:"):
            return self.fired.get(name[6:], False)
        if name.startswith("given:"):
            if self.launch is None:
                return Unknown(frozenset({"requested"}))
            return name[6:] in self.launch.requested or name[6:] in self.launch.unresolved
        root, _, rest = name.partition(".")
        if root == "gpu":
            fact = self.gpu.get(rest)
            return fact.value if fact is not None and fact.value is not None else Unknown(frozenset({name}))
        if root == "model":
            fact = self.model.get(rest)
            if fact is not None and fact.from_list is not None:
                fact = self._per_release(rest, fact)
            if fact is not None and fact.value is not None:
                return fact.value
            # The architecture and its families come with its name; the rest is in its config.json.
            return Unknown(frozenset({"model.arch" if rest == "arch" or rest in self.kb.knowledge.families else "model.config"}))
        if root == "env":
            if self.launch is None:
                return Unknown(frozenset({"requested"}))
            if name in self.launch.unresolved:  # a value the shell text does not give: never judged
                return Unknown(frozenset({f"unresolved.{name}"}))
            return self.launch.env.get(rest)
        if root == "requested":
            if self.launch is None:
                return Unknown(frozenset({"requested"}))
            if rest in self.launch.unresolved:
                return Unknown(frozenset({f"unresolved.{rest}"}))
            return self.launch.requested.get(rest)
        if root == "arg":
            return self.argument(rest)
        if root == "effective":
            return self.effective_value(rest)
        if root == "runtime":
            value = getattr(self.runtime, rest, None) if self.runtime is not None else None
            return value if value is not None else Unknown(frozenset({"runtime"}))
        if root == "list":
            return self.kb.list_for(rest, self.version)
        if root == "derived":
            if self.before is not None and self.mode == "target":  # may read the value before a rule: not shared
                return self.kb.derived[rest].evaluate(self)
            if rest not in self._derived:
                self._derived[rest] = self.kb.derived[rest].evaluate(self)
            return self._derived[rest]
        return Unknown(frozenset({name}))

    def argument(self, name: str) -> Any:
        """An argument as given before SGLang adjusts it: the launch command's value, else the
        release's default; without a launch command, the value the target reports."""
        if self.launch is not None:
            if name in self.launch.unresolved:  # given, as a value the shell text does not give
                return Unknown(frozenset({f"unresolved.{name}"}))
            if name in self.launch.requested:
                return self.launch.requested[name]
            return self.default(name)
        if self.reported is not None:
            value = _path(self.reported, name)
            if value is not _MISSING:
                return value
        return Unknown(frozenset({"requested"}))

    def default(self, name: str) -> Any:
        defaults = self.kb.knowledge.defaults
        if name in defaults:
            return defaults[name]
        table = flag_table(self.launch.flag_table_version if self.launch else None)
        entry = table.fields.get(name)
        if entry is not None and entry.get("kind") == "store_true":
            return False
        return None

    def effective_value(self, name: str) -> Any:
        """A value after SGLang's start-up adjustments: what the target reports; for a launch
        command, what the rules evaluated so far predict, else the argument."""
        if self.mode == "target":
            if name == self.before:
                if name in self.predicted and not is_unknown(self.predicted[name]):
                    return self.predicted[name]
                return self.argument(name) if self.launch is not None else Unknown(frozenset({"requested"}))
            if self.reported is None:
                return Unknown(frozenset({"server"}))
            value = _path(self.reported, name)
            return Unknown(frozenset({"server"})) if value is _MISSING else value
        if name in self.predicted and not is_unknown(self.predicted[name]):
            return self.predicted[name]
        return self.argument(name)

    def observed(self, setting: str) -> tuple[Any, str | None]:
        """What the target reports for a rule's setting, and where (launch mode: nothing)."""
        if self.mode != "target":
            return _MISSING, None
        if setting.startswith("runtime."):
            name = setting.removeprefix("runtime.")
            value = getattr(self.runtime, name, None) if self.runtime is not None else None
            if value is None:
                return _MISSING, None
            return value, self.runtime.source_of(name) if hasattr(self.runtime, "source_of") else "effective"
        if self.reported is None:
            return _MISSING, None
        value = _path(self.reported, setting)
        return value, (f"{self.reported_source} {setting}" if value is not _MISSING else None)

    def _per_release(self, family: str, fact: Fact) -> Fact:
        """A family read from a list, as this release's list has it. A multimodal architecture
        that SGLang keeps text-only unless its config has a vision and an audio config (MiMo V2,
        0.5.12+) is multimodal only by its config.json: unknown from its name alone."""
        assert fact.from_list is not None
        members = self.kb.list_for(fact.from_list, self.version)
        hit = next((a for a in fact.archs if a in members), None)
        release = f"SGLang {self.version}'s" if self.version is not None else "the"
        if family == "multimodal" and hit is not None and hit in self.kb.list_for("multimodal_config_archs", self.version):
            return Fact(None, f"{hit} is multimodal only when its config.json has vision_config and audio_config")
        where = f"{hit} in {release} {fact.from_list} list" if hit else f"{fact.archs[0]} not in {release} {fact.from_list} list"
        return Fact(hit is not None, where, fact.from_list, fact.archs)

    def facts(self) -> dict[str, Any]:
        """The facts used, with their sources, for reports."""
        out: dict[str, Any] = {
            "sglang_version": {"value": str(self.version) if self.version else None, "source": self.version_source},
        }
        for key, fact in self.gpu.items():
            out[f"gpu.{key}"] = {"value": fact.value, "source": fact.source}
        for key, fact in self.model.items():
            fact = self._per_release(key, fact) if fact.from_list is not None else fact
            value = sorted(fact.value) if isinstance(fact.value, (set, frozenset)) else fact.value
            if key == "config" and isinstance(value, Mapping):  # the whole config.json: its size is enough here
                value = f"{len(value)} fields"
            out[f"model.{key}"] = {"value": value, "source": fact.source}
        out["launch_command"] = {"value": self.launch.text if self.launch else None, "source": self.launch_source}
        if self.mode == "target":
            out["server_args"] = {"value": f"{len(self.reported or {})} fields", "source": self.reported_source}
            out["logs"] = {"value": f"{len(self.log_lines)} lines", "source": self.log_source}
        return out


def _path(mapping: Mapping[str, Any], dotted: str) -> Any:
    value: Any = mapping
    for part in dotted.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return _MISSING
    return value


# ---- building situations -----------------------------------------------------------------


def model_facts(kb: KnowledgeBase, archs: list[str], source: str, signals: Mapping[str, tuple[Any, str]] | None = None) -> dict[str, Fact]:
    """The model's architecture and its families (multimodal, hybrid, MoE), from the lists in
    ``knowledge.toml``; ``signals`` (from the server or the model's config.json) win over
    the lists when present."""
    facts: dict[str, Fact] = {}
    if archs:
        facts["arch"] = Fact(archs[0], source, archs=tuple(archs))
    signals = dict(signals or {})
    for name in ("vision_layers", "vision_hidden", "quant_method", "context_len", "num_kv_heads", "custom_code", "config", "weights_bytes"):
        if name in signals:
            value, where = signals.pop(name)
            facts[name] = Fact(value, where)
    for family, list_name in kb.knowledge.families.items():
        if family in signals:
            value, where = signals[family]
            facts[family] = Fact(bool(value), where)
        elif archs:
            members = kb.lists[list_name]
            facts[family] = Fact(any(a in members for a in archs), f"{archs[0]} in the {list_name} list" if archs[0] in members else f"{archs[0]} not in the {list_name} list", list_name if list_name in kb.release_lists else None, tuple(archs))
    return facts


def config_signals(config: Mapping[str, Any]) -> dict[str, tuple[Any, str]]:
    """What a model's ``config.json`` says about its families (and the mapping itself: the pool
    sizing reads its shapes)."""
    out: dict[str, tuple[Any, str]] = {"config": (config, "the model's config.json")}
    nested = config.get("text_config")
    text: Mapping[str, Any] = nested if isinstance(nested, Mapping) else config
    if "vision_config" in config or "audio_config" in config:
        out["multimodal"] = (True, "config.json has vision_config")
    auto_map = config.get("auto_map")
    if isinstance(auto_map, Mapping) and "AutoModel" in auto_map:  # the checkpoint brings its model's code
        out["custom_code"] = (True, "config.json auto_map.AutoModel")
    experts = [text.get(k) for k in ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")]
    if any(isinstance(e, int) and e > 1 for e in experts):
        out["moe"] = (True, "config.json num_experts")
    vision = config.get("vision_config")
    if isinstance(vision, Mapping):
        # As SGLang reads them for the VLM memory factor: getattr(vision_config, name, default).
        layers, hidden = vision.get("num_hidden_layers"), vision.get("hidden_size")
        out["vision_layers"] = (layers if isinstance(layers, int) else 24, "config.json vision_config.num_hidden_layers" if isinstance(layers, int) else "SGLang's default 24 (config.json vision_config has no num_hidden_layers)")
        out["vision_hidden"] = (hidden if isinstance(hidden, int) else 1024, "config.json vision_config.hidden_size" if isinstance(hidden, int) else "SGLang's default 1024 (config.json vision_config has no hidden_size)")
    context = _context_len(text)
    if context is not None:
        out["context_len"] = context
    kv_heads = _num_kv_heads(text)
    if kv_heads is not None:
        out["num_kv_heads"] = kv_heads
    quant = config.get("quantization_config")
    if isinstance(quant, Mapping) and isinstance(quant.get("quant_method"), str):
        out["quant_method"] = (quant["quant_method"], "config.json quantization_config.quant_method")
    elif "quantization_config" not in config and "compression_config" not in config:
        # An unquantized checkpoint: SGLang's get_quantization_config answers None. A fact of None
        # would read as unknown, so the rules compare with the word 'none'. (A ModelOpt
        # checkpoint keeps its quantization in hf_quant_config.json: read_model and
        # catalog_model take the word back where that file, or a partial copy, leaves it open.)
        out["quant_method"] = ("none", "config.json has no quantization_config")
    layer_types = text.get("layer_types")
    if isinstance(layer_types, list) and any(isinstance(t, str) and ("linear" in t or "mamba" in t) for t in layer_types):
        out["hybrid"] = (True, "config.json layer_types has linear-attention layers")
    elif "full_attention_interval" in text or "linear_num_value_heads" in text:
        out["hybrid"] = (True, "config.json has linear-attention settings")
    return out


# Where SGLang's get_context_length looks, in order (utils/hf_transformers/common.py
# CONTEXT_LENGTH_KEYS, 0.5.12 :365-371), and its default when none is there.
_CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")
# Where ModelConfig.get_total_num_kv_heads looks (0.5.12 configs/model_config.py:846-864).
_KV_HEAD_KEYS = ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num", "num_attention_groups")


def _context_len(text: Mapping[str, Any]) -> tuple[int, str] | None:
    """The context length SGLang derives from the text config: the first length key, times the
    rope scaling factor unless the scaling keeps the original length (llama3, or an
    original_max_position_embeddings)."""
    rope = text.get("rope_scaling")
    factor: Any = 1
    if isinstance(rope, Mapping) and rope:
        factor = rope.get("factor", 1)
        if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
            factor = 1
    if not isinstance(factor, (int, float)) or isinstance(factor, bool):
        return None
    for key in _CONTEXT_KEYS:
        value = text.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return int(factor * value), f"config.json {key}" + (f" x rope factor {factor}" if factor != 1 else "")
    return None


def _num_kv_heads(text: Mapping[str, Any]) -> tuple[int, str] | None:
    if text.get("multi_query") is True:
        return 1, "config.json multi_query"
    for key in (*_KV_HEAD_KEYS, "num_attention_heads"):
        value = text.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, f"config.json {key}"
    return None


# A model's config.json is some KiB (a large vision-language model's, tens of KiB).
MODEL_CONFIG_CAP_BYTES = 4 * 1024 * 1024


def read_model(model: str | Mapping[str, Any] | None) -> tuple[list[str], dict[str, tuple[Any, str]], str]:
    """A model given as an architecture name, a config.json path, or its parsed mapping."""
    if model is None:
        return [], {}, ""
    if isinstance(model, Mapping):
        return _archs_of(model, "the model config"), config_signals(model), "the model config"
    text = str(model).strip()
    path = Path(text)
    if text.endswith(".json") or path.is_dir():
        file = path / "config.json" if path.is_dir() else path
        # Through pytest_sglang.base.files: a regular file only (a FIFO or /dev/zero is refused at
        # once, never read), at most MODEL_CONFIG_CAP_BYTES, nested no deeper than JSON may be.
        from pytest_sglang.base.files import FileError, MissingFileError, check_nesting, read_text

        try:
            text = read_text(file, cap_bytes=MODEL_CONFIG_CAP_BYTES, what=f"model config {file}")
            check_nesting(text, what=f"model config {file}")
            config = json.loads(text)
        except MissingFileError:
            raise SpecError(f"model config {file}: cannot be read (No such file or directory); give the path of the model's config.json or an architecture name") from None
        except FileError as exc:
            raise SpecError(f"{exc}; give the path of the model's config.json or an architecture name") from None
        except (ValueError, RecursionError):
            raise SpecError(f"model config {file}: is not JSON; give the model's config.json or an architecture name") from None
        if not isinstance(config, dict):
            raise SpecError(f"model config {file}: is not a JSON object; give the model's config.json")
        signals = config_signals(config)
        if file.with_name("hf_quant_config.json").exists() and signals.get("quant_method", (None,))[0] == "none":
            del signals["quant_method"]  # a ModelOpt checkpoint: its quantization is in that file
        return _archs_of(config, str(file)), signals, f"{file} architectures"
    if not text.replace("_", "").isalnum():
        raise SpecError(f"model {text!r}: give an architecture name such as Qwen3_5MoeForConditionalGeneration, or a config.json path")
    return [text], {}, "given architecture"


def catalog_model(model_path: Any, notes: list[str] | None = None) -> tuple[list[str], dict[str, tuple[Any, str]], str]:
    """The model a model path names, read from its catalog entry as :func:`read_model` reads a
    config.json (nothing when the path names no known checkpoint). ``notes`` gets the line
    saying which entry was used, or that the repository named is not in the catalog."""
    match = match_model_path(model_path)
    note = match.note() if model_path else None
    if note and notes is not None:
        notes.append(note)
    if match.entry is None:
        return [], {}, ""
    signals = {name: (value, f"{match.source}: {why}") for name, (value, why) in config_signals(match.entry.config).items()}
    if match.entry.partial and signals.get("quant_method", (None,))[0] == "none":
        del signals["quant_method"]  # a reduced copy that may have left its quantization_config out
    return [match.entry.architecture], signals, match.source


def _archs_of(config: Mapping[str, Any], where: str) -> list[str]:
    archs = config.get("architectures")
    if not isinstance(archs, list) or not archs or not all(isinstance(a, str) for a in archs):
        raise SpecError(f"{where}: has no 'architectures' list; give the model's config.json or an architecture name")
    return list(archs)


def gpu_facts(
    *,
    gpu: str | None = None,
    sm: Any = None,
    count: Any = None,
    memory: Any = None,
    platform: str | None = None,
    device: Any = None,
    notes: list[str] | None = None,
    device_where: str = "in the launch command",
) -> dict[str, Fact]:
    """A GPU given by name and/or compute capability, how many, memory per GPU, and the
    platform SGLang runs on (given, from ``--device``, from the name, or CUDA for a compute
    capability). A name the catalog does not hold leaves what it would tell unknown and adds one
    warning to ``notes``; it never stops the explanation."""
    facts: dict[str, Fact] = {}
    name = str(gpu).strip() if gpu is not None and str(gpu).strip() else None
    amd = amd_gpu(name)
    if name:
        facts["name"] = Fact(name, "given GPU name")
    if sm is not None:
        facts["sm"] = Fact(sm_from_capability(sm), "given compute capability")
    elif name:
        from_name = sm_from_name(name)
        if from_name is not None:
            facts["sm"] = Fact(from_name, f"GPU name {name!r} in the name table")
        elif amd is None and name.lower().removeprefix("sm").replace(".", "").isdigit():
            facts["sm"] = Fact(sm_from_capability(name), "given compute capability")
    if amd is not None and amd.gfx is not None:
        facts["gfx"] = Fact(amd.gfx, f"{amd.name} is {amd.gfx} (AMD's GPU specifications)")
    facts.update(platform_fact(platform=platform, device=device, device_where=device_where, name=name, sm_given=sm is not None or "sm" in facts))
    if count is not None:
        try:
            n = int(count)
        except (TypeError, ValueError):
            raise SpecError(f"GPU count {count!r} is not a whole number") from None
        if n < 1:
            raise SpecError(f"GPU count {count!r} must be at least 1")
        facts["count"] = Fact(n, "given GPU count")
    if memory is not None:
        facts["memory_mib"] = Fact(parse_memory_mib(memory), "given GPU memory")
    elif name:
        _memory_from_name(facts, name)
    if name and notes is not None and facts.get("platform", Fact(None, "")).value in (None, "cuda", "hip"):
        warning = unknown_gpu_warning(name, facts)
        if warning:
            notes.append(warning)
    return facts


def platform_fact(
    *, platform: str | None = None, device: Any = None, device_where: str = "in the launch command", name: str | None = None, sm_given: bool = False
) -> dict[str, Fact]:
    """``{"platform": Fact}`` when something tells: a platform given, ``--device npu|xpu|cpu|...``
    (``cuda`` is both NVIDIA and ROCm), the GPU's vendor, or a compute capability (NVIDIA's)."""
    if platform is not None:
        chosen = str(platform).strip().lower()
        if chosen not in PLATFORMS:
            raise SpecError(f"platform {platform!r}: write one of {', '.join(PLATFORMS)}")
        return {"platform": Fact(chosen, "given platform")}
    from_device = platform_from_device(device)
    if from_device is not None:
        return {"platform": Fact(from_device, f"--device {device} {device_where}")}
    from_name = platform_from_name(name)
    if from_name is not None:
        return {"platform": Fact(from_name, f"GPU name {name!r}: {PLATFORMS[from_name]}")}
    if sm_given:
        return {"platform": Fact("cuda", "a compute capability is given: an NVIDIA GPU")}
    return {}


def unknown_gpu_warning(name: str, facts: Mapping[str, Fact]) -> str | None:
    """One line when the catalog does not know a GPU name and the facts it would give are missing."""
    known = amd_gpu(name) is not None or sm_from_name(name) is not None or name.lower().removeprefix("sm").replace(".", "").isdigit()
    if known or (("sm" in facts or facts.get("platform", Fact(None, "")).value == "hip") and "memory_mib" in facts):
        return None
    return f"warning: GPU {name!r} is not in the catalog: rules that depend on the GPU are undecided; give --sm N or --gpu-memory"


def _memory_from_name(facts: dict[str, Fact], name: str) -> None:
    """A GPU name sold with one memory size implies it, as the vendor's tool reports it."""
    mib = memory_mib_from_name(name)
    if mib is not None:
        tool = "rocminfo" if amd_gpu(name) is not None else "nvidia-smi"
        facts["memory_mib"] = Fact(mib, f"what {tool} reports for {name!r} (give the GPU memory if yours differs)")


def parse_memory_mib(text: Any) -> int:
    """``'96GiB'``, ``'97887MiB'``, ``'96G'``, ``97887`` (MiB) -> MiB."""
    raw = str(text).strip().replace(" ", "")
    units = {"gib": 1024, "gb": 1024, "g": 1024, "mib": 1, "mb": 1, "m": 1, "": 1}
    number = raw.rstrip("GgMmIiBb")
    unit = raw[len(number):].lower()
    try:
        value = float(number)
    except ValueError:
        value = -1
    if unit not in units or value <= 0:
        raise SpecError(f"GPU memory {text!r}: write it as e.g. 96GiB or 97887MiB")
    return int(value * units[unit])


def _target_platform(situation: Situation, target: Target) -> None:
    """The platform, gfx target and (AMD) capability of a target: from the device it was launched
    with or reports, the GPU name it reports, or nvidia-smi on its host (NVIDIA only)."""
    snap = target.snapshot
    name = snap.effective.gpu_name
    amd = amd_gpu(name)
    if amd is not None and amd.gfx is not None:
        situation.gpu["gfx"] = Fact(amd.gfx, f"{amd.name} is {amd.gfx} (AMD's GPU specifications)")
    requested = snap.requested.requested.get("device") if snap.requested is not None else None
    reported = snap.server_args.as_dict().get("device")
    where = "in the launch command" if requested else f"({snap.server_args_source or 'reported'})"
    nvidia = bool(target.gpus) and "nvidia-smi" in str(target.facts.host.gpu_source if target.facts.host else "")
    situation.gpu.update(platform_fact(device=requested or reported, device_where=where, name=name, sm_given=(amd is None and "sm" in situation.gpu) or nvidia))
    if name:
        warning = unknown_gpu_warning(name, situation.gpu)
        if warning and situation.gpu.get("platform", Fact(None, "")).value in (None, "cuda", "hip"):
            situation.notes.append(warning.replace("--sm N or --gpu-memory", f"{setting('sm')} N, or host access ({setting('ssh')}) so nvidia-smi can be read"))


def from_target(kb: KnowledgeBase, target: Target) -> Situation:
    """Gather what a collected target knows."""
    snap = target.snapshot
    effective = snap.effective
    situation = Situation(kb=kb, target=target.name, mode="target")
    if snap.version:
        situation.version = parse_version(snap.version)
        situation.version_source = effective.source_of("sglang_version")
    if effective.sm is not None:
        situation.gpu["sm"] = Fact(effective.sm, effective.source_of("sm"))
    if effective.gpu_name:
        situation.gpu["name"] = Fact(effective.gpu_name, effective.source_of("gpu_name"))
    if effective.gpu_count is not None:
        situation.gpu["count"] = Fact(effective.gpu_count, effective.source_of("gpu_count"))
    memories = [g.memory_mib for g in target.gpus if g.memory_mib]
    if memories:
        situation.gpu["memory_mib"] = Fact(min(memories), f"{target.facts.host.gpu_source if target.facts.host else 'host'} memory.total (smallest GPU)")
    elif effective.gpu_name:
        _memory_from_name(situation.gpu, effective.gpu_name)
    _target_platform(situation, target)
    signals: dict[str, tuple[Any, str]] = {}
    if effective.is_multimodal is not None:
        signals["multimodal"] = (effective.is_multimodal, effective.source_of("is_multimodal"))
    if effective.is_hybrid is not None:
        signals["hybrid"] = (effective.is_hybrid, effective.source_of("is_hybrid"))
    archs, where = list(effective.architectures), effective.source_of("architectures")
    if not archs:  # a server that names no architecture: its model path's catalog entry, if any
        path = snap.model_info.model_path or snap.server_args.model_path or (snap.requested.requested.get("model_path") if snap.requested else None)
        archs, entry_signals, entry_where = catalog_model(path, situation.notes)
        signals = {**entry_signals, **signals}  # what the server says wins
        where = entry_where or where
    situation.model = model_facts(kb, archs, where, signals)
    situation.launch = snap.requested
    situation.launch_source = snap.launch_command_source
    situation.reported = snap.server_args.as_dict()
    situation.reported_source = snap.server_args_source
    situation.runtime = effective
    logs = target.logs
    if logs is not None:
        situation.log_lines = list(logs.lines)
        situation.log_source = logs.source
    return situation
