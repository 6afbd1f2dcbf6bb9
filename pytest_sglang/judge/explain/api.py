"""The explain API (imported lazily through :mod:`pytest_sglang.judge.explain`).

Explain what SGLang changed and why, from a versioned knowledge base of its rules.

    from pytest_sglang import connect
    from pytest_sglang.judge.explain import explain, explain_launch

    with connect("sim://qwen35-122b-a10b-4xrtx6000-candidate") as target:
        for finding in explain(target).findings:
            print(finding.severity, finding.title)

    explain_launch("python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --tp 4 ...",
                   gpu="RTX PRO 6000", gpus=4, gpu_memory="96GiB", sglang_version="0.5.12",
                   model="Qwen3_5MoeForConditionalGeneration")

Both return an :class:`Explanation` (findings as typed objects; ``.to_json()``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from pytest_sglang.base import reads as _reads
from pytest_sglang.base.errors import SpecError
from pytest_sglang.judge.explain.engine import explain_situation
from pytest_sglang.judge.explain.findings import Explanation, Finding
from pytest_sglang.judge.explain.kb import KnowledgeBase, KnowledgeError, Rule, load
from pytest_sglang.judge.explain.releases import explain_unknown_release, parse_per_release
from pytest_sglang.judge.explain.situation import Fact, Situation, catalog_model, from_target, gpu_facts, model_facts, read_model
from pytest_sglang.judge.explain.startup import StartupExplanation, explain_reported, explain_startup_line
from pytest_sglang.model.versions import parse_version
from pytest_sglang.parse.launch import LaunchCommand, parse_launch_command

if TYPE_CHECKING:
    from pytest_sglang.target.target import Target

__all__ = [
    "Explanation",
    "Finding",
    "KnowledgeBase",
    "KnowledgeError",
    "Rule",
    "StartupExplanation",
    "explain",
    "explain_launch",
    "explain_startup_line",
    "load",
    "Fact",
    "Situation",
]


def explain(target: Target, *, kb: KnowledgeBase | None = None) -> Explanation:
    """The findings for a collected target (``connect(...)`` or the ``sglang`` fixture).

    A target whose launch command is unknown is explained from the values it reports (its
    ``server_args`` are SGLang's values after start-up, as the start-up line prints them):
    each value that differs from the release's default is explained by the rule that sets it
    there, or listed as probably requested (see :func:`explain_startup_line`).

    Computed once per target and knowledge base, and reused."""
    knowledge = kb or load()
    cache = target.__dict__.setdefault("_explanations", {})
    key = id(knowledge)
    if key not in cache:
        with _reads.paused():
            situation = from_target(knowledge, target)
            explanation: Explanation
            if situation.launch is None and situation.reported:
                result = explain_reported(situation)
                explanation, situation = result.explanation, result.situation
            else:
                explanation = explain_situation(situation)
            cache[key] = explanation
            target.__dict__.setdefault("_explain_situations", {})[key] = situation
    return cache[key]


def situation_of(target: Target, *, kb: KnowledgeBase | None = None) -> Situation | None:
    """The facts :func:`explain` decided ``target`` from (after it ran), for reading values
    a finding's rule used; ``None`` before the target was explained."""
    knowledge = kb or load()
    return target.__dict__.get("_explain_situations", {}).get(id(knowledge))


def explain_launch(
    command: str | Sequence[str],
    *,
    gpu: str | None = None,
    sm: int | str | None = None,
    gpus: int | None = None,
    gpu_memory: int | str | None = None,
    sglang_version: str | None = None,
    model: str | Mapping[str, Any] | None = None,
    config_loader: Callable[[str], Mapping[str, Any]] | None = None,
    kb: KnowledgeBase | None = None,
    platform: str | None = None,
    execute: bool = False,
    sglang_python: str | None = None,
) -> Explanation:
    """Predict what SGLang will do with a launch command, without a server.

    ``command``: the command line (text, an argv list, a systemd unit's text, or a
    docker/kubectl command line). ``gpu``: a GPU name (``'RTX PRO 6000'``) or ``sm`` its
    compute capability (``120``, ``'12.0'``); ``gpus``: how many; ``gpu_memory``: per GPU
    (``'96GiB'``, MiB as a number); ``platform``: what SGLang runs on (``'cuda'``, ``'hip'``,
    ``'npu'``, ``'xpu'``, ``'cpu'``), when neither the GPU name nor ``--device`` says it.
    An AMD GPU name (``'MI300X'``) is judged by SGLang's ROCm paths; a GPU name the catalog does
    not hold is a warning note, and the rules that depend on the GPU stay undecided.
    ``sglang_version``: the release (``None``: unknown; a
    newer release than the knowledge base uses the newest rules and says so). ``model``: an
    architecture name, a ``config.json`` path, or its parsed mapping.

    A fact left out is unknown: a rule that needs it is reported as undecided, never guessed.

    ``execute=True`` also runs the installed SGLang's own post-init on the command (the python
    ``sglang_python`` names, default this one; on the simulated GPU and the model's config.json,
    the network refused) and attaches every field it changed, with the rules that explain it, as
    ``execution``; without ``sglang_version``, the rules are that release's.
    """
    if execute:
        from pytest_sglang.judge.explain.execute import attach, execute_launch

        execution = execute_launch(command, python=sglang_python, gpu=gpu, sm=sm, gpus=gpus, gpu_memory=gpu_memory, platform=platform, model=model)
        if sglang_version is None and execution.sglang_version and parse_version(execution.sglang_version) is not None:
            sglang_version = execution.sglang_version
        explanation = explain_launch(
            command, gpu=gpu, sm=sm, gpus=gpus, gpu_memory=gpu_memory, sglang_version=sglang_version,
            model=model, config_loader=config_loader, kb=kb, platform=platform,
        )  # fmt: skip
        return explanation.model_copy(update={"execution": attach(execution, explanation)})
    knowledge = kb or load()
    if sglang_version is not None and parse_version(sglang_version) is None:
        raise SpecError(f"SGLang version {sglang_version!r} is not a version: write e.g. 0.5.12")
    launch = parse_launch_command(command, sglang_version=sglang_version, config_loader=config_loader, strict_version=False)
    situation = Situation(kb=knowledge, target="launch command", mode="launch")
    situation.launch = launch
    situation.launch_source = "given"
    launch.require_arguments()
    if sglang_version is not None:
        situation.version = parse_version(sglang_version)
        situation.version_source = "given"
    situation.notes = [p for p in launch.problems if "file was not read" in p or "newer" in p or "nearest" in p]
    situation.notes += launch.notes  # what reading the shell text says (a missing '\\', values it does not give)
    situation.gpu = gpu_facts(gpu=gpu, sm=sm, count=gpus, memory=gpu_memory, platform=platform, device=launch.requested.get("device"), notes=situation.notes)
    archs, signals, where = read_model(model)
    if model is None:  # a model path naming a known public checkpoint decides the model rules
        archs, signals, where = catalog_model(launch.requested.get("model_path"), situation.notes)
    elif archs and not signals:
        # An architecture name alone, for a path that names a known checkpoint of that architecture:
        # its config.json (shapes, vision tower, quantization) is that checkpoint's.
        said: list[str] = []
        known, config, entry = catalog_model(launch.requested.get("model_path"), said)
        if known == archs:
            signals, where = config, f"{where}; config.json from the {entry}"
            situation.notes += said
    situation.model = model_facts(knowledge, archs, where, signals)
    if sglang_version is None:  # judged across the releases whose flag tables accept it
        return explain_unknown_release(parse_per_release(command, config_loader), lambda one, release: situation.variant(launch=_shell_facts(one, launch), version=release, version_source="a release that accepts the command"))
    return explain_situation(situation)


def _shell_facts(one: LaunchCommand, text: LaunchCommand) -> LaunchCommand:
    """Each release's reading of the words, with what the text says of its environment: an
    environment value the shell text does not give is not known for any release."""
    env = {k: v for k, v in text.unresolved.items() if k.startswith("env.")}
    if not env or one is text:
        return one
    why = {k: v for k, v in text.unresolved_why.items() if k in env}
    return replace(one, unresolved={**env, **one.unresolved}, unresolved_why={**why, **one.unresolved_why})
