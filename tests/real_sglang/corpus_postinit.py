"""Every real launch command and start-up line in tests/data through each release's own post-init.

    python tests/real_sglang/corpus_postinit.py                  # run every case, report (about 15 minutes)
    python tests/real_sglang/corpus_postinit.py 0.5.12 0.5.16    # some releases only
    python tests/real_sglang/corpus_postinit.py --store          # rewrite tests/data/sglang-corpus-postinit.json
    python tests/real_sglang/corpus_postinit.py --check-stored   # the stored answers against the current explain

The commands are those of ``tests/data/corpus/launch_commands/`` and of the corpus logs that hold
one, every case of ``tests/data/explain-cases/``, and the configurations of
``configurations.py``; the start-up lines are those of ``tests/data/corpus/server_args/`` and the
artefacts. Each runs the way the post-init differential runs its generated commands
(``postinit_differential.py``: the release's own ``prepare_server_args`` on a simulated GPU,
``explain_launch`` on the same command, the same three checks), with these choices:

- **the model**: the model path is swapped for the model family of ``tests/data/model-configs``
  whose architecture the path names (through the public checkpoint catalog), or an explain case
  gives. An architecture no family has is stood in for by the family of its kind (sparse
  attention, MLA, hybrid, multimodal, MoE, dense), and the case says which; a command whose model
  names no architecture is left out, with the reason.
- **the GPU**: the one the file's notes state (``H200x8``, ``MI355X``, ``2x RTX 3090``, DGX Spark),
  the one an explain case gives, or one representative per SM family: A100 80GB, H100, B200,
  RTX PRO 6000.
- **the release**: a launch command runs in every release (a refusal is compared as the
  differential compares it: explain must have said ERROR, or it is reported); an explain case
  in its own release; a start-up line in the release it reports, as the command that produced it
  (its fields that differ from that release's defaults, as flags; plumbing such as ports, paths,
  secrets and logging left out).
- **the environment**: variables the command sets (``SGLANG_USE_CUDA_IPC_TRANSPORT=1 python ...``)
  are set for the release's post-init as for explain.

``KNOWN`` lists the disagreement classes still open, each with its reason; the stored set keeps
them, and ``tests/test_corpus_postinit.py`` fails on any other.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
if str(ROOT) not in sys.path and __name__ == "__main__":  # run as a script from a checkout
    sys.path.insert(0, str(ROOT))

import postinit_differential as differential  # noqa: E402

DATA = ROOT / "tests" / "data" / "sglang-corpus-postinit.json"
CORPUS = ROOT / "tests" / "data" / "corpus"
ARTEFACTS = ROOT / "tests" / "data" / "artefacts" / "sglang-0.5.23-cpu"
CASES = ROOT / "tests" / "data" / "explain-cases"
PLACEHOLDER = differential.PLACEHOLDER

# One representative GPU per SM family (the count is the command's, else 8).
REPRESENTATIVE = {
    80: ("NVIDIA A100-SXM4-80GB", 81920),
    90: ("NVIDIA H100 80GB HBM3", 81559),
    100: ("NVIDIA B200", 183359),
    120: ("NVIDIA RTX PRO 6000 Blackwell Server Edition", 97887),
}
# GPUs a corpus file's notes name: the words, the GPU as nvidia-smi (or rocm) reports it.
STATED_GPUS: list[tuple[str, dict[str, Any]]] = [
    (r"\bH200(?!\d)", {"sm": 90, "name": "NVIDIA H200", "memory_mib": 143771}),
    (r"\bH100(?!\d)", {"sm": 90, "name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559}),
    (r"\bB200(?!\d)", {"sm": 100, "name": "NVIDIA B200", "memory_mib": 183359}),
    (r"RTX PRO 6000", {"sm": 120, "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "memory_mib": 97887}),
    (r"RTX 3090", {"sm": 86, "name": "NVIDIA GeForce RTX 3090", "memory_mib": 24576}),
    (r"DGX Spark|GB10\b", {"sm": 121, "name": "NVIDIA GB10", "memory_mib": 122570}),
    (r"\bMI355X?(?!\d)", {"sm": 95, "name": "AMD Instinct MI355X", "memory_mib": 294896, "platform": "hip", "gfx": "gfx950"}),
    (r"\bMI300X?(?!\d)", {"sm": 94, "name": "AMD Instinct MI300X", "memory_mib": 196592, "platform": "hip", "gfx": "gfx942"}),
]
# An architecture no family has, by its kind: the family that stands in for it.
STAND_INS = [
    ("DeepseekV32ForCausalLM|GlmMoeDsaForCausalLM", "deepseek-v3.2"),
    ("KimiK25ForConditionalGeneration|DeepseekV2ForCausalLM|Glm4MoeLiteForCausalLM|MistralLarge3ForCausalLM", "deepseek-v3"),
    ("Qwen3_5|InternS2|Qwen3Next", "qwen3.5-moe"),
    ("FalconH1|NemotronH|Lfm2|GraniteMoeHybrid|Jamba|Mamba", "falcon-h1"),
    ("Llama4", "llama4"),
    ("Gemma3|Gemma4|Mistral3ForConditionalGeneration|Qwen2_5_VL|Qwen3VL|Glm4v", "gemma3"),
    ("Glm4Moe", "glm4-moe"),
    ("Moe|Mixtral|GptOss", "qwen3-moe"),
]
# Fields of a start-up line that are plumbing, not the deployment's configuration.
PLUMBING = re.compile(
    r"(path|dir|file|host|port|url|key|token|seed|log|metrics|served_model_name|revision|watermark|trace|otlp|"
    r"dist_init_addr|nccl|bucket|histogram|warmup|timeout|checkpoint|download|tokenizer_worker_num|crash|ssl|"
    r"name|weight_version|prompt_tokens|generation_tokens|config$)"
)

# Open disagreement classes, each with its reason: the fast tier accepts exactly these.
KNOWN: dict[str, str] = {}  # none open: every class found so far is fixed at its mechanism


# ---- the commands and start-up lines in tests/data ---------------------------------------------


def _corpus_text(path: Path) -> tuple[str, str, str]:
    """(version line, notes line, the text after the three header lines)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    head = {line.split(":", 1)[0].lstrip("# ").strip(): line.split(":", 1)[-1].strip() for line in lines[:3]}
    return head.get("sglang-version", ""), head.get("notes", ""), "\n".join(lines[3:])


def stated_release(text: str) -> str | None:
    """The release a header states (``0.5.8.post1 (docker ...)`` -> 0.5.8.post1), when it is one."""
    match = re.match(r"\s*v?(\d+\.\d+\.\d+(?:\.post\d+|rc\d+)?)", text)
    return match.group(1) if match else None


def default_releases() -> list[str]:
    """The releases the corpus runs in: those the real tier runs (``executed_versions``), and the
    release each corpus file states where the knowledge base holds it (a command from a
    0.5.3.post1 deployment also runs in 0.5.3.post1)."""
    from differential import executed_versions

    every = differential.versions()
    stated = {item["release"] for item in items() if item.get("release") in every}
    return sorted(set(executed_versions()) | stated, key=differential._key)


def stated_gpu(notes: str) -> dict[str, Any] | None:
    """The GPU a file's notes name, with the count they give (``H200x8``, ``6x RTX 3090``, TP8)."""
    for pattern, gpu in STATED_GPUS:
        match = re.search(pattern, notes)
        if match:
            name = re.escape(match.group(0))
            count = re.search(rf"(\d+)\s*x\s*{name}|{name}\s*x\s*(\d+)|\bTP\s*(\d+)", notes)
            return {**gpu, "count": int(next(g for g in count.groups() if g)) if count else 8}
    return None


def launch_items() -> Iterator[dict[str, Any]]:
    """The launch commands of the corpus (its launch_commands folder, and its logs that hold one)."""
    for folder in ("launch_commands", "logs", "server_args"):
        for path in sorted((CORPUS / folder).glob("*.txt")):
            version, notes, text = _corpus_text(path)
            if folder != "launch_commands" and not re.search(r"(launch_server|sglang serve)\b", text):
                continue
            if folder != "launch_commands":
                line = next(l for l in text.split("\n") if re.search(r"(launch_server|sglang serve)\b", l) and "server_args=" not in l)
                text = line[line.find("python") if "python" in line else line.find("sglang serve"):]
            yield {"id": f"corpus/{folder}/{path.name}", "kind": "launch", "text": text, "release": stated_release(version),
                   "gpu": stated_gpu(version + " " + notes), "model": None}
    info = json.loads((ARTEFACTS / "server_info.json").read_text())
    command = info.get("launch_command")
    if isinstance(command, str):  # the tiny Llama of tests/data/README.md, run on a simulated GPU: the harness
        # makes is_cuda() true, so its --device cpu would ask for a CPU server on a CUDA host, which no one runs
        yield {"id": "artefacts/server_info.json launch_command", "kind": "launch", "text": _no_cpu_device(command),
               "release": "0.5.23", "gpu": None,
               "model": "LlamaForCausalLM"}


def _no_cpu_device(command: str) -> str:
    """A command without its --device cpu (the harness simulates a GPU: is_cuda() holds)."""
    return re.sub(r"(^|\s)--device[= ]cpu(?=\s|$)", "", command)


def case_items() -> Iterator[dict[str, Any]]:
    """Every case of tests/data/explain-cases, in its own release, on its own GPU."""
    import tomllib

    for path in sorted(CASES.glob("*.toml")):
        for index, case in enumerate(tomllib.loads(path.read_text(encoding="utf-8")).get("case", [])):
            gpu = None
            if case.get("sm") or case.get("gpu"):
                gpu = {"sm": case.get("sm"), "name": case.get("gpu"), "memory_mib": case.get("gpu_memory"), "count": case.get("gpus")}
            yield {"id": f"explain-cases/{path.name}#{index + 1} {case['rule']} {case['expect']}", "kind": "launch", "text": case["command"],
                   "release": case.get("sglang_version"), "gpu": gpu, "model": case.get("model"), "own_release": True,
                   "runtime": "runtime" in case}


def configuration_items() -> Iterator[dict[str, Any]]:
    """The launch configurations of configurations.py (the harness's --device cpu left out: they
    are launches, run here on a simulated GPU)."""
    from configurations import CASES as CONFIGURATIONS

    for name, command in sorted(CONFIGURATIONS.items()):
        if "{config" in command:
            continue  # reads a YAML file the harness writes next to it
        text = command.replace("{llama}", "meta-llama/Llama-3.1-8B-Instruct").replace("{qwen3moe}", "Qwen/Qwen3-30B-A3B")
        text = _no_cpu_device(text)
        # One GPU: these configurations are about flags, and run in every release.
        yield {"id": f"configurations.py {name}", "kind": "launch", "text": text, "release": None,
               "gpu": {"sm": 90, "name": REPRESENTATIVE[90][0], "memory_mib": REPRESENTATIVE[90][1], "count": 8}, "model": None}


def startup_items() -> Iterator[dict[str, Any]]:
    """The start-up lines of the corpus and the artefacts."""
    for path in sorted((CORPUS / "server_args").glob("*.txt")):
        version, notes, text = _corpus_text(path)
        yield {"id": f"corpus/server_args/{path.name}", "kind": "startup", "text": text, "release": stated_release(version),
               "gpu": stated_gpu(version + " " + notes), "model": None}
    yield {"id": "artefacts/server.log", "kind": "startup", "text": (ARTEFACTS / "server.log").read_text(), "release": "0.5.23",
           "gpu": None, "model": "LlamaForCausalLM"}


def items() -> list[dict[str, Any]]:
    return [*launch_items(), *configuration_items(), *startup_items(), *case_items()]


# ---- from an item to the differential's cases --------------------------------------------------


def families() -> dict[str, str]:
    """Architecture -> its family folder in tests/data/model-configs."""
    out = {}
    for config in sorted(differential.MODELS.glob("*/config.json")):
        archs = json.loads(config.read_text()).get("architectures") or []
        if archs and archs[0] not in out:
            out[archs[0]] = config.parent.name
    return out


def family_of(arch: str | None) -> tuple[str | None, str]:
    """The family for an architecture, and how it was chosen."""
    if not arch:
        return None, "the model names no architecture (no catalog entry, no config.json)"
    known = families()
    if arch in known:
        return known[arch], arch
    for pattern, family in STAND_INS:
        if re.search(pattern, arch):
            return family, f"{family} stands in for {arch}"
    return "llama", f"llama (dense) stands in for {arch}"


def architecture(model: str | None) -> str | None:
    """The architecture a model path or name gives: an architecture name, or a public checkpoint."""
    if not model:
        return None
    if re.fullmatch(r"[A-Za-z0-9_]+", model) and model[0].isupper():
        return model
    from pytest_sglang.model.knowledge.checkpoints import checkpoint

    entry = checkpoint(model.strip().strip("'\""))
    return entry.architecture if entry is not None else None


def gpus_of(item: dict[str, Any], argv_count: int) -> list[dict[str, Any]]:
    """The GPU a case runs on: stated, or one per SM family."""
    stated = item.get("gpu")
    if stated and (stated.get("sm") or stated.get("name")):
        gpu = {k: v for k, v in stated.items() if v is not None}
        named = stated_gpu(str(gpu.get("name") or "")) if gpu.get("sm") is None else None
        if named is not None:  # a GPU the notes' table knows (AMD Instinct among them)
            gpu = {**named, **{k: v for k, v in gpu.items() if k in ("memory_mib", "count")}}
        if gpu.get("sm") is None:
            from pytest_sglang.model.gpu import sm_from_name

            gpu["sm"] = sm_from_name(str(gpu["name"]))
        if gpu.get("sm") is None:
            return []
        name, memory = REPRESENTATIVE.get(int(gpu["sm"]) // 10 * 10, (None, None)) if int(gpu["sm"]) // 10 * 10 in REPRESENTATIVE else (None, None)
        gpu["name"] = gpu.get("name") or name or f"NVIDIA SM{gpu['sm']}"
        gpu["memory_mib"] = _memory(gpu.get("memory_mib")) or memory or 81559
        gpu["count"] = int(gpu.get("count") or max(argv_count, 8))
        return [gpu]
    return [{"sm": sm, "name": name, "memory_mib": memory, "count": max(argv_count, 8)} for sm, (name, memory) in REPRESENTATIVE.items()]


def _memory(value: Any) -> int | None:
    if value is None:
        return None
    from pytest_sglang.judge.explain.situation import parse_memory_mib

    return parse_memory_mib(value)


def _words_after_entrypoint(text: str) -> list[str]:
    """The words the entry point receives, as the shell passes them (quotes removed)."""
    from pytest_sglang.parse.launch import _entrypoint, split_command

    words, _, _ = split_command(text)
    return list(_entrypoint(words)[1])


def _swap_model(argv: list[str], family: str, spelled: str | None) -> list[str]:
    """The argv with its model path (and a draft model path) pointing at the family's config."""
    out = list(argv)
    target = f"{PLACEHOLDER}/{family}"
    if out and not out[0].startswith("-"):  # `sglang serve MODEL`
        out = ["--model-path", target, *out[1:]]
    for flag in [spelled, "--model-path", "--model", "--speculative-draft-model-path", "--speculative-draft-model"]:
        if not flag:
            continue
        for i, word in enumerate(out):
            if word == flag and i + 1 < len(out):
                out[i + 1] = target
            elif word.startswith(flag + "="):
                out[i] = f"{flag}={target}"
    if not any(w in ("--model-path", "--model") or w.startswith(("--model-path=", "--model=")) for w in out) and (spelled is None or spelled not in out):
        out = ["--model-path", target, *out]
    return out


def cases_of(item: dict[str, Any], releases: list[str]) -> tuple[list[dict[str, Any]], str | None]:
    """The differential's cases for one item, or why there are none."""
    from pytest_sglang.parse.launch import parse_launch_command

    if item["kind"] == "startup":
        return startup_cases(item, releases)
    version = item.get("release") if item.get("own_release") else None
    try:
        parsed = parse_launch_command(item["text"], sglang_version=version or releases[-1])
    except Exception as exc:  # noqa: BLE001 - a text no release could take: reported, not run
        return [], f"the launch command does not parse ({type(exc).__name__}: {exc})"
    if item.get("runtime"):
        return [], "the case gives start-up values a running server reports (runtime): no post-init decides them"
    device = parsed.requested.get("device")
    if device not in (None, "cuda"):  # the harness makes is_cuda() (or is_hip()) true: a CPU run is not one it can be
        return [], f"it runs on --device {device}, a platform the harness does not simulate (CUDA and ROCm GPUs)"
    arch = item.get("model") or architecture(parsed.requested.get("model_path"))
    if isinstance(arch, dict):  # a config given inline: its architecture
        arch = (arch.get("architectures") or [None])[0]
    elif arch and arch.endswith(".json"):
        arch = json.loads((ROOT / arch).read_text())["architectures"][0] if (ROOT / arch).exists() else None
    family, how = family_of(arch)
    if family is None:
        return [], how
    argv = _swap_model(_words_after_entrypoint(item["text"]), family, parsed.spelled.get("model_path"))
    if any(w == "--config" or w.startswith("--config=") for w in argv):
        return [], "the command reads a --config file"
    size = int(parsed.requested.get("tp_size") or 1) * int(parsed.requested.get("pp_size") or 1)
    from differential import executed_versions

    # Every release the tier runs, and the one the file states.
    run = set(executed_versions()) | {item.get("release")}
    chosen = [version] if version else [r for r in releases if r in run]
    out = []
    for release in chosen:
        if release not in releases:
            continue
        for gpu in gpus_of(item, size):
            out.append({"item": item["id"], "release": release, "family": family, "model": how, "gpu": gpu, "argv": argv,
                        "env": dict(parsed.env), "flags": []})
    if not out:
        return [], (f"its release {version} is not one the harness runs" if version not in releases
                    else f"its GPU {(item.get('gpu') or {}).get('name')!r} is not one the harness simulates")
    return out, None


def startup_cases(item: dict[str, Any], releases: list[str]) -> tuple[list[dict[str, Any]], str | None]:
    """A start-up line as the command that produced it, in the release it reports."""
    from pytest_sglang.judge.explain.startup import release_defaults, release_of_fields
    from pytest_sglang.parse.launch import flag_table
    from pytest_sglang.parse.lines import parse_startup_line

    try:
        line = parse_startup_line(item["text"])
    except Exception as exc:  # noqa: BLE001
        return [], f"no start-up line ({exc})"
    fields = dict(line.fields)
    release = item.get("release")
    if release is None:
        release = release_of_fields(fields)[0]
    if release not in releases:
        return [], f"it reports SGLang {release}, which is not among the releases run ({releases[0]}-{releases[-1]})"
    _, defaults = release_defaults(release)
    table = flag_table(release).fields
    arch = item.get("model") or architecture(str(fields.get("model_path") or "")) or architecture(str(fields.get("served_model_name") or ""))
    family, how = family_of(arch)
    if family is None:
        return [], how
    argv: list[str] = ["--model-path", f"{PLACEHOLDER}/{family}"]
    for name, value in sorted(fields.items()):
        entry = table.get(name)
        if entry is None or PLUMBING.search(name) or name in ("model_path", "device"):
            continue  # the device: the case's GPU is the simulated one (the artefacts' CPU run, as a GPU launch)
        if name in defaults and differential._same(value, defaults[name]):
            continue
        words = flag_words(entry, value)
        if words is None:
            continue
        argv += words
    size = int(fields.get("tp_size") or 1) * int(fields.get("pp_size") or 1)
    cases = [{"item": item["id"], "release": release, "family": family, "model": how, "gpu": gpu, "argv": argv, "env": {}, "flags": []}
             for gpu in gpus_of(item, size)]
    return cases, None


def flag_words(entry: dict[str, Any], value: Any) -> list[str] | None:
    """The words that ask for a value with a flag-table entry (a start-up line's field)."""
    flag, kind = entry["flags"][0], entry.get("kind")
    if kind in ("store_true", "boolean_optional"):
        if value is True:
            return [flag]
        if kind == "boolean_optional" and value is False:
            return ["--no-" + flag.removeprefix("--")]
        return None
    if kind != "store" or value is None:
        return None
    if isinstance(value, dict):
        return [flag, json.dumps(value)] if value else None
    if isinstance(value, list):
        return [flag, *(str(v) for v in value)] if value else None
    if isinstance(value, bool):
        return [flag, str(value).lower()]
    return [flag, str(value)]


def all_cases(releases: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """(every case, every item left out with its reason)."""
    cases, skipped = [], []
    seen: dict[str, str] = {}  # a case's command, GPU and release -> the item first giving it
    for item in items():
        found, why = cases_of(item, releases)
        if why:
            skipped.append({"item": item["id"], "why": why})
        fresh = 0
        for case in found:
            key = json.dumps([case["release"], case["gpu"], case["argv"], case["env"], case["family"]], sort_keys=True)
            if key in seen:
                continue
            seen[key] = item["id"]
            cases.append(case)
            fresh += 1
        if found and not fresh:  # every case it makes is another item's: run once, under that item
            first = seen[json.dumps([found[0]["release"], found[0]["gpu"], found[0]["argv"], found[0]["env"], found[0]["family"]], sort_keys=True)]
            skipped.append({"item": item["id"], "why": f"the same command, GPU and release as {first}, which is run"})
    for i, case in enumerate(cases):
        case["name"] = f"corpus-{i:04d}"
    return cases, skipped


# ---- the comparison (the differential's, with the command's environment) ------------------------


def explain_case(case: dict[str, Any], version: str):  # type: ignore[no-untyped-def]
    from pytest_sglang.judge.explain import explain_launch

    gpu = case["gpu"]
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(case.get("env", {}).items()))
    text = (prefix + " " if prefix else "") + differential.command(case)
    return explain_launch(
        text, gpu=gpu["name"], sm=None if gpu.get("platform") == "hip" else gpu["sm"], gpus=gpu["count"],
        gpu_memory=gpu["memory_mib"], sglang_version=version, model=str(differential.MODELS / case["family"] / "config.json"),
    )  # fmt: skip


@contextlib.contextmanager
def _with_environment() -> Iterator[None]:
    """The differential's comparison, its explain given the command's environment too."""
    plain = differential.explain
    differential.explain = explain_case
    try:
        yield
    finally:
        differential.explain = plain


def compare(case: dict[str, Any], answer: dict[str, Any]) -> tuple[list, list, dict]:
    with _with_environment():
        return differential.compare(case, case["release"], answer)


def real_answers(cases: list[dict[str, Any]], python: Path, releases: list[str]) -> dict[str, dict]:
    """Each case's answer from its release's own post-init (one import per release)."""
    by_release: dict[str, list[dict]] = defaultdict(list)
    for case in cases:
        by_release[case["release"]].append(case)
    out: dict[str, dict] = {}
    for release in releases:
        group = by_release.get(release, [])
        if not group:
            continue
        answers = differential.real_answers(release, python, [{**c, "argv": c["argv"], "env": c.get("env", {})} for c in group])
        out.update({name: differential.stored_answer(a) for name, a in answers.items()})
        print(f"{release}: {len(group)} cases", file=sys.stderr)
    return out


def report(cases: list[dict[str, Any]], answers: dict[str, dict], known: dict[str, str]) -> dict[str, Any]:
    """Per release: cases, refusals, agreements and disagreements; the classes, with examples."""
    per: dict[str, dict[str, int]] = defaultdict(lambda: {"cases": 0, "refused": 0, "agreed": 0, "disagreements": 0, "known": 0, "misses": 0})
    classes: dict[str, list[dict]] = defaultdict(list)
    reported: dict[str, list[dict]] = defaultdict(list)
    for case in cases:
        answer = answers[case["name"]]
        row = per[case["release"]]
        row["cases"] += 1
        row["refused"] += "error" in answer
        bad, rep, agreed = compare(case, answer)
        row["agreed"] += sum(len(v) for v in agreed.values())
        for cls, detail in bad:
            row["known" if differential.known(cls, known) else "disagreements"] += 1
            classes[cls].append({"release": case["release"], "item": case["item"], "name": case["name"], "detail": detail,
                                 "command": differential.command_text(case), "gpu": case["gpu"]})
        for cls, detail in rep:
            row["misses"] += cls.startswith("miss:")
            reported[cls].append({"release": case["release"], "item": case["item"], "detail": detail})
    return {"per_release": dict(sorted(per.items(), key=lambda kv: differential._key(kv[0]))), "classes": classes, "reported": reported}


def render(result: dict[str, Any], known: dict[str, str], skipped: list[dict[str, str]]) -> str:
    lines = ["release  cases  refused  agreed  disagreements  known  misses"]
    for v, r in result["per_release"].items():
        lines.append(f"{v:8} {r['cases']:6} {r['refused']:8} {r['agreed']:7} {r['disagreements']:14} {r['known']:6} {r['misses']:7}")
    total = result["per_release"].values()
    lines.append(f"{'all':8} {sum(r['cases'] for r in total):6} {sum(r['refused'] for r in total):8} {sum(r['agreed'] for r in total):7} "
                 f"{sum(r['disagreements'] for r in total):14} {sum(r['known'] for r in total):6} {sum(r['misses'] for r in total):7}")
    lines.append(f"\nleft out: {len(skipped)} commands or lines")
    for why, group in sorted(_by_reason(skipped).items(), key=lambda kv: -len(kv[1])):
        lines.append(f"  {len(group)}x {why}: {', '.join(group[:4])}{' ...' if len(group) > 4 else ''}")
    for title, classes in (("disagreements", result["classes"]), ("reported (misses, unpredicted refusals)", result["reported"])):
        lines.append(f"\n{title}: {sum(len(v) for v in classes.values())} in {len(classes)} classes")
        for cls, group in sorted(classes.items(), key=lambda kv: -len(kv[1])):
            releases = sorted({g["release"] for g in group}, key=differential._key)
            reason = differential.known(cls, known) if classes is result["classes"] else None
            lines.append(f"[{len(group)}x, {releases[0]}..{releases[-1]}] {cls}" + (f"  (known: {reason})" if reason else ""))
            lines.append(f"    e.g. {group[0]['release']} {group[0]['item']}: {group[0]['detail'][:240]}")
            if "command" in group[0]:
                lines.append(f"    {group[0]['command']}  gpu={group[0]['gpu']}")
    return "\n".join(lines)


def _by_reason(skipped: list[dict[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for entry in skipped:
        out[re.sub(r"SGLang [\d.]+\w*", "SGLang V", entry["why"])].append(entry["item"])
    return out


# ---- the stored set -----------------------------------------------------------------------------


def stored() -> dict[str, Any]:
    return json.loads(DATA.read_text())


def write_stored(python: Path, releases: list[str]) -> dict[str, Any]:
    cases, skipped = all_cases(releases)
    answers = real_answers(cases, python, releases)
    data = {
        "about": (
            "Every launch command and start-up line of tests/data (the corpus, the artefacts, the explain cases, "
            "configurations.py) as the cases tests/real_sglang/corpus_postinit.py makes of them (model swapped for a "
            "family of tests/data/model-configs, {models}; a stated or representative GPU; each release, or the "
            "stated one), and what each release's own post-init made of them. Written by "
            "tests/real_sglang/corpus_postinit.py --store; checked by tests/test_corpus_postinit.py and the real tier."
        ),
        "known": KNOWN,
        "skipped": skipped,
        "cases": [{**case, "answer": answers[case["name"]]} for case in cases],
    }
    text = json.dumps({k: v for k, v in data.items() if k != "cases"}, indent=1)[:-2] + ',\n "cases": [\n'
    text += ",\n".join("  " + json.dumps(c, sort_keys=True) for c in data["cases"]) + "\n ]\n}\n"
    DATA.write_text(text)
    return data


def check_stored(data: dict[str, Any] | None = None) -> dict[str, Any]:
    data = data or stored()
    cases = data["cases"]
    return report(cases, {c["name"]: c["answer"] for c in cases}, data.get("known", {}))


if __name__ == "__main__":
    import argparse

    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("releases", nargs="*", help="releases to run (default: the real tier's, and each file's stated release)")
    cli.add_argument("--store", action="store_true", help=f"rewrite {DATA.relative_to(ROOT)}")
    cli.add_argument("--check-stored", action="store_true", help="the stored answers against the current explain")
    options = cli.parse_args()
    chosen = options.releases or default_releases()
    if options.check_stored:
        data = stored()
        result, known, skipped = check_stored(data), data.get("known", {}), data.get("skipped", [])
    else:
        import harness

        python = harness.ensure_environment()
        if options.store:
            data = write_stored(python, chosen)
            result, known, skipped = check_stored(data), KNOWN, data["skipped"]
        else:
            cases, skipped = all_cases(chosen)
            result, known = report(cases, real_answers(cases, python, chosen), KNOWN), KNOWN
    print(render(result, known, skipped))
    sys.exit(1 if any(not differential.known(c, known) for c in result["classes"]) else 0)
