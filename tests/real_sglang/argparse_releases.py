"""What the argparse of several SGLang releases made of the same commands, for the fast tier.

    python tests/real_sglang/argparse_releases.py   # rewrites tests/data/sglang-argparse-releases.json

Each release's own parser (its wheel in front of the harness environment, as
``flag_table_live.py`` does) parses every command; only what differs from the release's
defaults is stored. The fast tier checks ``parse_launch_command(command, sglang_version=V)``
against it; the real tier checks the data is still what the releases say.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import flag_table_live  # noqa: E402
import harness  # noqa: E402
from configurations import argv_and_env  # noqa: E402

from pytest_sglang.parse.redact import redact_mapping  # noqa: E402
from pytest_sglang.parse.shellscript import is_unresolved  # noqa: E402

DATA = HERE.parent / "data" / "sglang-argparse-releases.json"
CORPUS = HERE.parent / "data" / "corpus" / "launch_commands"  # part of the repository: never optional

# Releases on both sides of every change in how flags are declared: 0.5.10 (piecewise CUDA
# graph on by default), 0.5.13 (first deprecated aliases), 0.5.14 (per-phase CUDA graph
# backends), 0.5.19 (flags declared on dataclass fields), 0.5.20 (aliases gone).
RELEASES = ("0.5.5", "0.5.9", "0.5.10", "0.5.12", "0.5.13", "0.5.14", "0.5.18", "0.5.19", "0.5.20", "0.5.23")

M = "python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B"
COMMANDS = {
    "base": M,
    "seed-candidate": (
        f"{M} --tp 4 --max-running-requests 48 --enable-fused-moe-sum-all-reduce --enable-flashinfer-allreduce-fusion "
        "--speculative-algorithm NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 "
        "--mamba-scheduler-strategy extra_buffer"
    ),
    "cuda-graph-legacy": f"{M} --tp 4 --cuda-graph-max-bs 256 --cuda-graph-bs 1 2 4 8 --disable-piecewise-cuda-graph",
    "cuda-graph-per-phase": f"{M} --cuda-graph-max-bs-decode 128 --cuda-graph-backend-prefill disabled",
    "piecewise-switches": f"{M} --enable-piecewise-cuda-graph --piecewise-cuda-graph-max-tokens 4096",
    "breakable": f"{M} --enable-breakable-cuda-graph",
    "disable-cuda-graph": f"{M} --disable-cuda-graph",
    "abbreviations": f"{M} --tp 2 --mem-frac 0.8 --speculative-algo EAGLE --chunked-prefill 4096",
    "aliases": "sglang serve --model m --tensor-parallel-size 2 --data-parallel-size 2 --enable-dp-attention",
    "boolean-optional": f"{M} --no-lora-strict-loading --stream-output",
    "deprecated-ignored": f"{M} --collect-tokens-histogram --hybrid-kvcache-ratio 0.5",
    "equals-and-lists": f"{M} --attention-backend=fa3 --kv-cache-dtype fp8_e4m3 --page-size=64 --cuda-graph-bs 1 2 4",
    # LoRAPathAction: values stripped, a JSON object parsed (with lora_name and lora_path), name=path kept as text.
    "lora-paths": f"""{M} --lora-paths ' a ' '{{"lora_name":"x","lora_path":"/p"}}' ' b=/loras/b ' '  {{"lora_name": "y", "lora_path": "/q", "pinned": true}} '""",
}


# --config files: each release merges them its own way (the merger changed in 0.5.12, 0.5.18 and
# 0.5.23). Commands name them by placeholder; the stored data keeps the placeholders.
CONFIGS = {
    "hyphens": "tp-size: 2\nchunked-prefill-size: 1024\nenable-metrics: true\nschedule-policy: lpm\n",
    "underscores": "tp_size: 2\nchunked_prefill_size: 1024\nenable_metrics: true\n",
    "false-and-list": "enable-metrics: false\nmax-running-requests: 32\ncuda-graph-bs: [1, 2, 4]\n",
}
COMMANDS.update(
    {
        "config-hyphens": f"{M} --config {{hyphens}}",
        "config-underscores": f"{M} --config {{underscores}}",
        "config-false-and-list": f"{M} --config {{false-and-list}}",
        "config-command-line-wins": f"{M} --config {{hyphens}} --tp 4",
    }
)


def commands() -> dict[str, str]:
    out = dict(COMMANDS)
    paths = sorted(CORPUS.glob("*.txt"))
    if not paths:
        raise FileNotFoundError(f"no launch commands in {CORPUS} (the corpus is part of the repository)")
    for path in paths:
        text = path.read_text().split("\n", 3)[3]
        if any(is_unresolved(word) for word in argv_and_env(text, {})[0]):
            continue  # a value the text does not give ($SGLANG_LLM_PORT): what argparse makes of it is not known
        out[f"corpus-{path.stem}"] = text
    return out


def requests() -> list[dict]:
    return [{"name": name, "argv": argv_and_env(command, {})[0]} for name, command in commands().items()]


def ask(version: str, python: Path) -> tuple[dict, dict]:
    """(the release's flag table, what it parsed of every command), from one import."""
    return flag_table_live.ask(version, python, requests(), CONFIGS)


def generate() -> dict[str, Any]:
    python = harness.ensure_environment()
    cases = commands()
    releases: dict[str, Any] = {}
    for version in RELEASES:
        answers = redact_mapping(ask(version, python)[1])
        base = answers["base"]["parsed"]
        stored = {}
        for name in cases:
            entry = answers[name]
            if "error" in entry:
                stored[name] = {"error": entry["error"]}
            else:
                stored[name] = {"changes": {k: v for k, v in entry["parsed"].items() if base.get(k, object()) != v}}
        releases[version] = {"defaults": base, "commands": stored}
    return {"commands": cases, "configs": CONFIGS, "releases": releases}


if __name__ == "__main__":
    data = generate()
    DATA.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {DATA}: {len(data['commands'])} commands x {len(data['releases'])} releases")
