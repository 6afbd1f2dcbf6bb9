"""What a release refuses to start with, as ERROR findings: a value its argparse refuses (an
invalid choice or value, a missing value, words no flag takes, an ambiguous or required flag, a
``--config`` file or ``sglang serve`` form it refuses), and an architecture its model registry
lacks. Built from the per-release flag tables (:attr:`LaunchCommand.refusals`) and model tables
(:mod:`pytest_sglang.model.knowledge.model_tables`), one finding per refusal, with SGLang's own
message.
"""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from pytest_sglang.judge.explain.findings import Finding
from pytest_sglang.judge.explain.kb import KnowledgeBase, Rule
from pytest_sglang.judge.explain.situation import Situation
from pytest_sglang.model.knowledge.model_tables import model_table, model_table_versions, transformers_table
from pytest_sglang.model.versions import nearest_release
from pytest_sglang.parse.launch import Refusal, flag_table

# What a refused flag or word is, in a title (``{flag}``, ``{value}``, ``{release}``).
_TITLES = {
    "ambiguous-flag": "{flag} is ambiguous in SGLang {release}",
    "invalid-choice": "SGLang {release} refuses {flag} {value}: not one of its choices",
    "invalid-value": "SGLang {release} refuses the value {value} of {flag}",
    "missing-value": "{flag} is given no value: SGLang {release} refuses to start",
    "unrecognized": "SGLang {release} refuses words no flag takes: {words}",
    "required": "{flag} is missing: SGLang {release} requires it",
    "deprecated": "SGLang {release} refuses the retired flag {flag}",
    "config": "SGLang {release} refuses the --config file",
    "serve": "sglang serve of SGLang {release} refuses the command",
    "no-serve": "SGLang {release} has no sglang serve command",
}
_KNOBS = {
    "ambiguous-flag": "write the whole flag: an abbreviation must match one flag only",
    "invalid-value": "give {flag} a value of its type (`python -m sglang.launch_server --help`)",
    "missing-value": "give {flag} its value, or remove it",
    "unrecognized": "quote a value that holds spaces (JSON: '{{\"key\": 1}}'); check the flag before the words takes a value",
    "required": "give {flag}",
    "deprecated": "remove {flag}, or use what the message names",
    "config": "check the --config file: one, a .yaml or .yml file, a mapping at its top",
    "serve": "check the sglang serve command: a model path, a --model-type the release knows",
    "no-serve": "start it with python -m sglang.launch_server (every release has it), or run a release with sglang serve",
}


def refusal_findings(rule: Rule, situation: Situation, release: Version | None) -> list[Finding]:
    """One ERROR per value, word or flag the release's argparse (or its argument handling)
    refuses; flags it does not know are ``flags.unknown``'s."""
    launch = situation.launch
    if launch is None or situation.mode == "target":  # a server that started refused nothing
        return []
    version = launch.flag_table_version
    out: list[Finding] = []
    seen: dict[str, int] = {}
    for refusal in launch.refusals:
        if refusal.kind == "unknown-flag":
            continue
        key = f"{rule.id}:{'unrecognized' if refusal.kind == 'unrecognized' else refusal.flag}"
        seen[key] = seen.get(key, 0) + 1
        out.append(
            Finding(
                id=key if seen[key] == 1 else f"{key}#{seen[key]}",
                rule=rule.id,
                severity="error",
                status="predicted",
                setting=refusal.flag,
                title=_TITLES.get(refusal.kind, "SGLang {release} refuses {flag}").format(flag=refusal.flag, value=repr(refusal.value), words=refusal.value, release=version),
                summary=f"SGLang {version} refuses to start: {refusal.message}",
                requested=None if refusal.kind == "unrecognized" else refusal.value,
                requested_source=None if refusal.kind == "unrecognized" or refusal.value is None else f"launch command {refusal.flag}" + (f" ({situation.launch_source})" if situation.launch_source not in (None, "given") else ""),
                cause=rule.explanation.strip(),
                versions=f"SGLang {version} flag table",
                knobs=_knobs(refusal, version),
                sources=_citations(situation.kb, rule, release),
                lint=True,
            )
        )
    return out


def _knobs(refusal: Refusal, version: str) -> list[str]:
    if refusal.kind == "invalid-choice":
        table = flag_table(version)
        full, _ = table.spelling(refusal.flag)
        choices = table.action(full).get("choices") if full else None
        if choices:
            return [f"use one of SGLang {version}'s choices for {refusal.flag}: {', '.join(choices)}", "or run a release that has the value"]
    text = _KNOBS.get(refusal.kind)
    return [text.format(flag=refusal.flag)] if text else []


def architecture_findings(rule: Rule, situation: Situation, release: Version | None) -> list[Finding]:
    """An architecture the release's model registry lacks. With ``--model-impl auto`` (the
    default) SGLang hands it to the Transformers implementation of the transformers version it
    pins: an ERROR when that version has no such class, or one SGLang's attention backend cannot
    drive; an INFO (it runs, through transformers) when it has a compatible one."""
    fact = situation.model.get("arch")
    if fact is None or not fact.value or release is None or situation.mode == "target" or not model_table_versions():
        return []
    impl = situation.argument("model_impl")
    if impl not in (None, "auto"):  # another implementation asked for: not the registry's decision
        return []
    custom = situation.model.get("custom_code")
    if custom is not None and custom.value:  # the checkpoint's own code (auto_map.AutoModel)
        return []
    table = model_table(nearest_release(release, model_table_versions()))
    if table is None:
        return []
    archs = fact.archs or (fact.value,)
    if any(arch in table.architectures for arch in archs):
        return []
    arch = archs[0]
    v, pin = table.sglang_version, table.transformers
    library = transformers_table(pin)
    having = [r for r in model_table_versions() if arch in (model_table(r) or table).architectures]
    knobs = [f"run SGLang {_span(having)}, whose model registry has {arch}"] if having else []
    knobs.append(f"check the architecture: {arch} is the model's config.json architectures[0] ({fact.source})")
    common: dict[str, Any] = {
        "rule": rule.id,
        "status": "predicted",
        "setting": "model",
        "requested": arch,
        "requested_source": fact.source,
        "cause": rule.explanation.strip(),
        "versions": f"SGLang {v} model registry, transformers {pin}",
        "sources": _citations(situation.kb, rule, release),
        "knobs": knobs,
    }
    if library is not None and arch in library.backend_compatible:
        return [
            Finding(
                id=f"{rule.id}:{arch}",
                severity="info",
                title=f"SGLang {v} has no implementation of {arch}: it runs transformers' own",
                summary=(
                    f"{arch} is not in SGLang {v}'s model registry; SGLang {v} falls back to the Transformers implementation "
                    f"of transformers {pin} (the version it pins), which may lack SGLang's optimisations"
                ),
                **common,
            )
        ]
    if library is None:
        return []  # the pinned transformers is not known: whether it has the class is not known
    if arch in library.not_backend_compatible:
        said = f"{arch} has no SGlang implementation and the Transformers implementation is not compatible with SGLang."
    else:
        said = (
            f"Cannot find model module. '{arch}' is not a registered model in the Transformers library (only relevant if the "
            "model is meant to be in Transformers) and 'AutoModel' is not present in the model config's 'auto_map' (relevant "
            "if the model is custom)."
        )
    return [
        Finding(
            id=f"{rule.id}:{arch}",
            severity="error",
            title=f"SGLang {v} has no implementation of {arch}",
            summary=(
                f"{arch} is not in SGLang {v}'s model registry, and transformers {pin} (the version it pins) cannot stand in: "
                f"SGLang {v} refuses to start when it loads the model: {said}"
            ),
            lint=True,
            **common,
        )
    ]


def _span(releases: list[str]) -> str:
    order = list(model_table_versions())
    index = sorted(order.index(r) for r in releases)
    runs: list[list[int]] = []
    for i in index:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ", ".join(order[r[0]] if len(r) == 1 else f"{order[r[0]]}-{order[r[-1]]}" for r in runs)


def _citations(kb: KnowledgeBase, rule: Rule, release: Version | None) -> list[str]:
    out = []
    for source in rule.sources:
        line = kb.line_of(source, str(release)) if release else None
        out.append(source.cite(line, str(release)) if line is not None else source.cite())
    return out


def short_reason(refusal: Refusal) -> str:
    """A refusal in a few words, the same in every release that refuses it (to group releases)."""
    flag, value = refusal.flag, refusal.value
    if refusal.kind == "unknown-flag":
        return f"{flag} (not one of its flags)"
    if refusal.kind == "ambiguous-flag":
        return f"{flag} (an ambiguous abbreviation)"
    if refusal.kind == "no-serve":
        return "sglang serve (no such command)"
    if refusal.kind == "invalid-choice":
        return f"{flag} {value!r} (not one of its choices)"
    if refusal.kind == "invalid-value":
        return f"{flag} {value!r} (not a value it reads)" if value is not None else f"the value of {flag}"
    if refusal.kind == "missing-value":
        return f"{flag} without a value"
    if refusal.kind == "unrecognized":
        return f"the words {value} (no flag takes them)"
    if refusal.kind == "required":
        return f"the missing {flag}"
    if refusal.kind == "deprecated":
        return f"{flag} (retired)"
    return refusal.message
