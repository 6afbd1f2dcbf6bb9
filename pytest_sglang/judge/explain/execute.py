"""Explain by execution: the installed SGLang's own ``prepare_server_args`` and post-init on a
launch command, on a simulated GPU and the model's config.json, the network refused
(``explain --execute``).

The runner (``run_in_sglang/postinit.py``) runs by its path under the python of the user's SGLang
environment, which may lack pytest_sglang: nothing here imports it. One fresh process per call,
bounded in time (its process group killed) and address space (``RLIMIT_AS``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pytest_sglang.base.errors import SpecError
from pytest_sglang.judge.explain.checkpoint import match_model_path
from pytest_sglang.judge.explain.execution import ChangedField, Execution
from pytest_sglang.judge.explain.findings import Explanation
from pytest_sglang.judge.explain.situation import MODEL_CONFIG_CAP_BYTES, gpu_facts, read_model
from pytest_sglang.model.knowledge.checkpoints import catalog
from pytest_sglang.parse.launch import LaunchCommand, parse_launch_command

RUNNER = Path(__file__).resolve().parent / "run_in_sglang" / "postinit.py"
NO_SGLANG = 3  # the runner's exit status when its python cannot import sglang
# A first import of SGLang takes about 10 s on a warm disk; a cold one, or a slow shared host,
# several times that.
DEFAULT_TIMEOUT_S = 300.0
# Post-init imports torch and SGLang (about 0.6 GB resident); the address space is larger.
DEFAULT_MEMORY_BYTES = 8 * 2**30
_MODEL_DIR = "{models}/model"  # where the runner finds the config.json written for the command


def execute_launch(
    command: str | Sequence[str],
    *,
    python: str | os.PathLike[str] | None = None,
    gpu: str | None = None,
    sm: int | str | None = None,
    gpus: int | None = None,
    gpu_memory: int | str | None = None,
    platform: str | None = None,
    model: str | Mapping[str, Any] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    memory: int = DEFAULT_MEMORY_BYTES,
) -> Execution:
    """Run the installed SGLang's own post-init on ``command`` (the python of its environment:
    ``python``, default this one) and return every field it changed, with its version.

    The GPU and model are given as to :func:`~pytest_sglang.judge.explain.api.explain_launch`;
    a model given only as an architecture (or not at all) is the checkpoint catalog's config.json
    for the model path, or for that architecture. A refusal or crash inside SGLang is the
    execution's one-line ``error``; a python without SGLang raises :class:`SpecError`."""
    interpreter = str(python or sys.executable)
    launch = parse_launch_command(command, strict_version=False)
    launch.require_arguments()
    simulated = _gpu(launch, gpu=gpu, sm=sm, gpus=gpus, gpu_memory=gpu_memory, platform=platform)
    config, where = _model_config(launch, model)
    model_path = str(launch.requested.get("model_path") or "")
    with tempfile.TemporaryDirectory(prefix="pytest-sglang-execute-") as tmp:
        argv = _argv(launch)
        if config is not None:
            (Path(tmp) / "model").mkdir()
            (Path(tmp) / "model" / "config.json").write_text(json.dumps(config), encoding="utf-8")
            argv = _with_model_dir(argv, model_path)
        case = {"name": "command", "argv": argv, "gpu": simulated, "env": dict(launch.env), "as_reported": True}
        started = time.monotonic()
        answer, failure = _run(interpreter, case, tmp, timeout=timeout, memory=memory)
        seconds = round(time.monotonic() - started, 2)
    base: dict[str, Any] = {"python": interpreter, "seconds": seconds, "gpu": simulated, "model": where}
    if failure is not None:
        return Execution(error=failure, **base)
    answer = json.loads(json.dumps(answer).replace(_MODEL_DIR, model_path))
    version = answer.get("sglang_version")
    if "error" in answer:
        return Execution(sglang_version=version, error=str(answer["error"]), **base)
    return Execution(sglang_version=version, changed=_changed(answer.get("parsed") or {}, answer.get("fields") or {}), **base)


def attach(execution: Execution, explanation: Explanation) -> Execution:
    """Each changed field with the rules of the findings about it (matched by setting), or "changed
    by SGLang X, no rule explains it yet"."""
    changed = []
    for field in execution.changed:
        # An error finding says SGLang refuses to start: it is no cause of a value.
        findings = [f for f in explanation.findings if f.status != "undecided" and f.severity != "error" and _about(f.setting, field.field)]
        rules = list(dict.fromkeys(f.rule for f in findings))
        cause = "; ".join(dict.fromkeys(f.title for f in findings)) or f"changed by SGLang {execution.sglang_version or '(unknown release)'}, no rule explains it yet"
        changed.append(field.model_copy(update={"rules": rules, "cause": cause}))
    return execution.model_copy(update={"changed": changed})


def _about(setting: str, field: str) -> bool:
    return setting in (field, f"runtime.{field}") or setting.startswith(f"{field}.")


def _changed(parsed: Mapping[str, Any], fields: Mapping[str, Any]) -> list[ChangedField]:
    """The fields a flag can set (those argparse made) whose value post-init changed; fields of
    SGLang's own bookkeeping (``_..._explicitly_set``) are left out."""
    return [
        ChangedField(field=name, requested=parsed[name], value=value)
        for name, value in sorted(fields.items())
        if not name.startswith("_") and name in parsed and parsed[name] != value
    ]


def _argv(launch: LaunchCommand) -> list[str]:
    """The words after the entry point, as ``launch_server`` takes them (``sglang serve MODEL``'s
    positional model is ``--model-path MODEL``)."""
    words = list(launch.argv)
    if "serve" in str(launch.entrypoint or "").split() and words and not words[0].startswith("-"):
        words = ["--model-path", *words]
    return words


def _with_model_dir(argv: list[str], model_path: str) -> list[str]:
    """The model path's words pointed at the folder holding the config.json written for the run."""
    out = []
    for word in argv:
        flag, eq, value = word.partition("=")
        if word == model_path:
            out.append(_MODEL_DIR)
        elif eq and flag.startswith("--") and value == model_path:
            out.append(f"{flag}={_MODEL_DIR}")
        else:
            out.append(word)
    return out


def _model_config(launch: LaunchCommand, model: str | Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, str]:
    """The config.json the run reads (None: the command's own model folder has one), and where it
    came from."""
    model_path = launch.requested.get("model_path")
    if isinstance(model, Mapping):
        read_model(model)  # the same refusals as explain's
        return dict(model), "the model config given"
    if model is not None and (str(model).strip().endswith(".json") or Path(str(model).strip()).is_dir()):
        read_model(model)
        file = Path(str(model).strip())
        file = file / "config.json" if file.is_dir() else file
        return json.loads(file.read_text(encoding="utf-8")[: MODEL_CONFIG_CAP_BYTES + 1]), str(file)
    if model is None and model_path and (Path(str(model_path)) / "config.json").is_file():
        return None, f"{model_path}/config.json"
    match = match_model_path(model_path)
    architecture = str(model).strip() if model is not None else None
    if match.entry is not None and architecture in (None, match.entry.architecture):
        return dict(match.entry.config), f"the checkpoint catalog's entry {match.entry.repo}"
    entry = next((e for e in catalog().values() if architecture and e.architecture == architecture), None)
    if entry is not None:
        return dict(entry.config), f"the checkpoint catalog's entry {entry.repo} (architecture {architecture})"
    raise SpecError(
        f"--execute needs the model's config.json: the model path {model_path!r} is no local folder holding one nor a known checkpoint"
        + (f", and no known checkpoint has the architecture {architecture}" if architecture else "")
        + "; give --model path/to/config.json"
    )


def _gpu(launch: LaunchCommand, **given: Any) -> dict[str, Any]:
    """The GPU the runner simulates, from the same facts explain takes."""
    facts = gpu_facts(gpu=given["gpu"], sm=given["sm"], count=given["gpus"], memory=given["gpu_memory"], platform=given["platform"], device=launch.requested.get("device"))
    value: Callable[[str], Any] = lambda name: facts[name].value if name in facts else None  # noqa: E731
    platform = value("platform") or "cuda"
    if platform not in ("cuda", "hip"):
        raise SpecError(f"--execute simulates NVIDIA (CUDA) and AMD (ROCm) GPUs; the platform here is {platform}")
    gfx = value("gfx")
    sm = int(gfx[3:5]) if platform == "hip" and gfx else value("sm")  # ROCm's torch reports gfx942 as 9.4
    missing = [flag for flag, known in (("--gpu NAME or --sm SM", sm is not None), ("--gpus N", value("count") is not None), ("--gpu-memory SIZE", value("memory_mib") is not None)) if not known]
    if missing:
        raise SpecError(f"--execute runs SGLang on a simulated GPU: give {', '.join(missing)}")
    name = value("name") or f"NVIDIA GPU SM{sm}"
    out = {"sm": int(sm), "name": name, "memory_mib": int(value("memory_mib")), "count": int(value("count"))}
    if platform == "hip":
        out |= {"platform": "hip", "gfx": gfx}
    return out


def _run(python: str, case: dict, tmp: str, *, timeout: float, memory: int) -> tuple[dict, str | None]:
    """(the runner's answer for the case, None), or ({}, the one line saying why there is none)."""
    env = {**os.environ, "SGLANG_MODEL_CONFIGS": tmp, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    try:
        proc = subprocess.Popen(
            [python, str(RUNNER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=env, cwd=tmp, start_new_session=True, preexec_fn=_limit(memory),
        )  # fmt: skip
    except OSError as exc:
        raise SpecError(f"--sglang-python {python}: cannot be run ({exc.strerror or exc}); give the python of an environment where SGLang is installed") from None
    try:
        out, err = proc.communicate(json.dumps([case]), timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        return {}, f"SGLang's post-init did not finish within {timeout:g} s (stopped)"
    if proc.returncode == NO_SGLANG:
        raise SpecError(f"{python} cannot import sglang: give --sglang-python PATH, the python of an environment where SGLang is installed")
    if proc.returncode:
        return {}, _crash(proc.returncode, err, memory)
    try:
        return json.loads(out.strip().splitlines()[-1])[case["name"]], None
    except (ValueError, IndexError, KeyError, TypeError):
        return {}, f"the SGLang run gave no answer: {_last_line(err) or 'nothing on standard error'}"


def _limit(memory: int) -> Callable[[], None]:
    def limit() -> None:  # in the child, before it runs python
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return limit


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the runner and any tool it started (nvidia-smi)
    except ProcessLookupError:
        pass
    proc.communicate()


def _crash(code: int, err: str, memory: int) -> str:
    line = _exception_line(err) or _last_line(err)
    if code < 0:
        return f"the SGLang run was killed by signal {-code}" + (f" ({line})" if line else "")
    if "MemoryError" in line or "Cannot allocate memory" in line:
        return f"{line} (the run may use at most {memory / 2**30:g} GiB of address space)"
    return line or f"the SGLang run exited with status {code}"


# The line of a traceback naming the exception ("ValueError: ...", "torch.OutOfMemoryError").
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)(: .*)?$")


def _exception_line(text: str) -> str:
    """The last line of standard error that names an exception (a message of several lines is
    named by its first)."""
    lines = [line.strip() for line in (text or "").splitlines()]
    return next((line[:400] for line in reversed(lines) if _EXCEPTION.match(line)), "")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:400] if lines else ""
