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
from pytest_sglang.model.gpu import memory_mib_from_name, sm_from_capability, sm_from_name
from pytest_sglang.parse.launch import LaunchCommand, flag_table
from pytest_sglang.model.versions import parse_version
from pytest_sglang.judge.explain.expr import Scope, Unknown, is_unknown
from pytest_sglang.judge.explain.kb import KnowledgeBase

if TYPE_CHECKING:
    from pytest_sglang.target.target import Target

_MISSING = object()


@dataclass
class Fact:
    value: Any
    source: str


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
            return name[6:] in self.launch.requested
        root, _, rest = name.partition(".")
        if root == "gpu":
            fact = self.gpu.get(rest)
            return fact.value if fact is not None and fact.value is not None else Unknown(frozenset({name}))
        if root == "model":
            fact = self.model.get(rest)
            if fact is not None and fact.value is not None:
                return fact.value
            # The architecture and its families come with its name; the rest is in its config.json.
            return Unknown(frozenset({"model.arch" if rest == "arch" or rest in self.kb.knowledge.families else "model.config"}))
        if root == "env":
            if self.launch is None:
                return Unknown(frozenset({"requested"}))
            return self.launch.env.get(rest)
        if root == "requested":
            if self.launch is None:
                return Unknown(frozenset({"requested"}))
            return self.launch.requested.get(rest)
        if root == "arg":
            return self.argument(rest)
        if root == "effective":
            return self.effective_value(rest)
        if root == "runtime":
            value = getattr(self.runtime, rest, None) if self.runtime is not None else None
            return value if value is not None else Unknown(frozenset({"runtime"}))
        if root == "list":
            return self.kb.lists[rest]
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

    def facts(self) -> dict[str, Any]:
        """The facts used, with their sources, for reports."""
        out: dict[str, Any] = {
            "sglang_version": {"value": str(self.version) if self.version else None, "source": self.version_source},
        }
        for key, fact in self.gpu.items():
            out[f"gpu.{key}"] = {"value": fact.value, "source": fact.source}
        for key, fact in self.model.items():
            value = sorted(fact.value) if isinstance(fact.value, (set, frozenset)) else fact.value
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
        facts["arch"] = Fact(archs[0], source)
    signals = dict(signals or {})
    for name in ("vision_layers", "vision_hidden", "quant_method"):
        if name in signals:
            value, where = signals.pop(name)
            facts[name] = Fact(value, where)
    for family, list_name in kb.knowledge.families.items():
        if family in signals:
            value, where = signals[family]
            facts[family] = Fact(bool(value), where)
        elif archs:
            members = kb.lists[list_name]
            facts[family] = Fact(any(a in members for a in archs), f"{archs[0]} in the {list_name} list" if archs[0] in members else f"{archs[0]} not in the {list_name} list")
    return facts


def config_signals(config: Mapping[str, Any]) -> dict[str, tuple[Any, str]]:
    """What a model's ``config.json`` says about its families."""
    out: dict[str, tuple[Any, str]] = {}
    nested = config.get("text_config")
    text: Mapping[str, Any] = nested if isinstance(nested, Mapping) else config
    if "vision_config" in config or "audio_config" in config:
        out["multimodal"] = (True, "config.json has vision_config")
    experts = [text.get(k) for k in ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")]
    if any(isinstance(e, int) and e > 1 for e in experts):
        out["moe"] = (True, "config.json num_experts")
    vision = config.get("vision_config")
    if isinstance(vision, Mapping):
        # As SGLang reads them for the VLM memory factor: getattr(vision_config, name, default).
        layers, hidden = vision.get("num_hidden_layers"), vision.get("hidden_size")
        out["vision_layers"] = (layers if isinstance(layers, int) else 24, "config.json vision_config.num_hidden_layers" if isinstance(layers, int) else "SGLang's default 24 (config.json vision_config has no num_hidden_layers)")
        out["vision_hidden"] = (hidden if isinstance(hidden, int) else 1024, "config.json vision_config.hidden_size" if isinstance(hidden, int) else "SGLang's default 1024 (config.json vision_config has no hidden_size)")
    quant = config.get("quantization_config")
    if isinstance(quant, Mapping) and isinstance(quant.get("quant_method"), str):
        out["quant_method"] = (quant["quant_method"], "config.json quantization_config.quant_method")
    layer_types = text.get("layer_types")
    if isinstance(layer_types, list) and any(isinstance(t, str) and ("linear" in t or "mamba" in t) for t in layer_types):
        out["hybrid"] = (True, "config.json layer_types has linear-attention layers")
    elif "full_attention_interval" in text or "linear_num_value_heads" in text:
        out["hybrid"] = (True, "config.json has linear-attention settings")
    return out


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
        return _archs_of(config, str(file)), config_signals(config), f"{file} architectures"
    if not text.replace("_", "").isalnum():
        raise SpecError(f"model {text!r}: give an architecture name such as Qwen3_5MoeForConditionalGeneration, or a config.json path")
    return [text], {}, "given architecture"


def _archs_of(config: Mapping[str, Any], where: str) -> list[str]:
    archs = config.get("architectures")
    if not isinstance(archs, list) or not archs or not all(isinstance(a, str) for a in archs):
        raise SpecError(f"{where}: has no 'architectures' list; give the model's config.json or an architecture name")
    return list(archs)


def gpu_facts(*, gpu: str | None = None, sm: Any = None, count: Any = None, memory: Any = None) -> dict[str, Fact]:
    """A GPU given by name and/or compute capability, how many, and memory per GPU."""
    facts: dict[str, Fact] = {}
    if gpu:
        facts["name"] = Fact(str(gpu), "given GPU name")
    if sm is not None:
        facts["sm"] = Fact(sm_from_capability(sm), "given compute capability")
    elif gpu:
        from_name = sm_from_name(str(gpu))
        if from_name is not None:
            facts["sm"] = Fact(from_name, f"GPU name {gpu!r} in the name table")
        elif str(gpu).strip().lower().removeprefix("sm").replace(".", "").isdigit():
            facts["sm"] = Fact(sm_from_capability(str(gpu)), "given compute capability")
        else:
            raise SpecError(f"GPU {gpu!r} is not in the name table: give its compute capability instead (e.g. --sm 120)")
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
    elif gpu:
        _memory_from_name(facts, str(gpu))
    return facts


def _memory_from_name(facts: dict[str, Fact], name: str) -> None:
    """A GPU name sold with one memory size implies it, as nvidia-smi reports it."""
    mib = memory_mib_from_name(name)
    if mib is not None:
        facts["memory_mib"] = Fact(mib, f"what nvidia-smi reports for {name!r} (give the GPU memory if yours differs)")


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
    signals: dict[str, tuple[Any, str]] = {}
    if effective.is_multimodal is not None:
        signals["multimodal"] = (effective.is_multimodal, effective.source_of("is_multimodal"))
    if effective.is_hybrid is not None:
        signals["hybrid"] = (effective.is_hybrid, effective.source_of("is_hybrid"))
    situation.model = model_facts(kb, list(effective.architectures), effective.source_of("architectures"), signals)
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
