"""Launch configurations resolved offline by the real SGLang (``prepare_server_args``), far
more than can be started. ``{llama}``/``{qwen3moe}`` stand for the tiny local models and
``{config}`` for a YAML file written next to them."""

from __future__ import annotations

import shlex
from pathlib import Path

# SGLang turns each key into "--<key>" as written, so only hyphenated keys work (0.5.23).
CONFIG_YAML = "tp-size: 2\nchunked-prefill-size: 1024\nenable-metrics: true\nschedule-policy: lpm\ncuda-graph-bs-decode: [1, 2, 4]\n"
CONFIG_UNDERSCORE_YAML = "chunked_prefill_size: 1024\n"

BASE = "--model-path {llama} --device cpu"

CASES: dict[str, str] = {
    "base": BASE,
    "tp2": BASE + " --tp 2",
    "tp4-long-alias": BASE + " --tensor-parallel-size 4",
    "tp-equals": BASE + " --tp-size=2",
    "model-alias": "--model {llama} --device cpu",
    "max-running-48": BASE + " --max-running-requests 48",
    "chunked-and-prefill": BASE + " --chunked-prefill-size 2048 --max-prefill-tokens 8192",
    "mem-and-tokens": BASE + " --mem-fraction-static 0.5 --max-total-tokens 16384",
    "page-size": BASE + " --page-size 16",
    "no-radix": BASE + " --disable-radix-cache",
    "disable-cuda-graph-deprecated": BASE + " --disable-cuda-graph",
    "prefill-graph-disabled": BASE + " --cuda-graph-backend-prefill disabled",
    "decode-graph-sizes": BASE + " --cuda-graph-bs-decode 1 2 4 8 --cuda-graph-max-bs-decode 8",
    "decode-graph-max-bs": BASE + " --cuda-graph-max-bs-decode 16",
    "fi-fusion-deprecated-flag": BASE + " --tp 2 --enable-flashinfer-allreduce-fusion",
    "fi-fusion-backend": BASE + " --tp 2 --flashinfer-allreduce-fusion-backend trtllm",
    "fused-moe-sum": "--model-path {qwen3moe} --device cpu --tp 2 --enable-fused-moe-sum-all-reduce",
    "moe-ep2": "--model-path {qwen3moe} --device cpu --tp 2 --ep 2",
    "moe-runner-triton": "--model-path {qwen3moe} --device cpu --moe-runner-backend triton",
    "dp2": BASE + " --dp 2",
    "dp-attention": BASE + " --tp 2 --dp 2 --enable-dp-attention",
    "schedule-lpm": BASE + " --schedule-policy lpm --schedule-conservativeness 0.5",
    "backends": BASE + " --attention-backend torch_native --sampling-backend pytorch",
    "served-name-context": BASE + " --served-model-name tiny --context-length 1024",
    "metrics-log-level": BASE + " --enable-metrics --log-level warning",
    "api-keys": BASE + " --api-key sk-offline-1 --admin-api-key adm-offline-2",
    "json-override": BASE + """ --json-model-override-args '{"rope_scaling": {"rope_type": "linear", "factor": 2.0}}'""",
    "speculative-ngram": BASE + " --speculative-algorithm NGRAM",
    "kv-fp8": BASE + " --kv-cache-dtype fp8_e5m2",
    "config-file": BASE + " --config {config} --tp 4",
    "config-underscore-key": BASE + " --config {config_underscore}",
    "env-and-entrypoint": "SGLANG_USE_CUDA_IPC_TRANSPORT=1 python -m sglang.launch_server " + BASE + " --tp 2",
    "sglang-serve": "sglang serve " + BASE + " --max-running-requests 8",
    "ambiguous-pp": BASE + " --pp 2",
    "bad-choice": BASE + " --schedule-policy fastest",
}


def fill_placeholders(word: str, paths: dict[str, Path]) -> str:
    """``{name}`` in a word replaced by the path of ``paths[name]``."""
    for name, value in paths.items():
        word = word.replace(f"{{{name}}}", str(value))
    return word


def back_to_placeholders(text: str, paths: dict[str, Path]) -> str:
    """Machine paths in SGLang's answers turned back into ``{name}``, so stored data is the
    same on every machine."""
    for name, value in paths.items():
        text = text.replace(str(value), f"{{{name}}}")
    return text


def argv_and_env(command: str, paths: dict[str, Path]) -> tuple[list[str], dict[str, str]]:
    """The arguments SGLang's parser would see (after the entry point), and the environment
    the command sets. ``paths`` fills the ``{name}`` placeholders."""
    from pytest_sglang.parse.launch import split_command

    words, env, _ = split_command(command)
    words = [fill_placeholders(w, paths) for w in words]
    for i, word in enumerate(words):
        if word == "sglang.launch_server" or (word == "serve" and i and words[i - 1] == "sglang"):
            return words[i + 1 :], env
    return words, env


def corpus_cases(corpus: Path, llama: Path) -> dict[str, str]:
    """The corpus launch commands, with their model swapped for the tiny local one (no hub
    here) and ``--device cpu`` added: the rest of each command is resolved as written."""
    from pytest_sglang.parse.launch import split_command

    out = {}
    paths = sorted((corpus / "launch_commands").glob("*.txt"))
    if not paths:
        raise FileNotFoundError(f"no launch commands in {corpus / 'launch_commands'} (the corpus is part of the repository)")
    for path in paths:
        text = path.read_text().split("\n", 3)[3]
        words, env, _ = split_command(text)
        for i, word in enumerate(words):
            if word in ("--model", "--model-path"):
                words[i + 1] = "{llama}"
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        out[f"corpus-{path.stem}"] = (prefix + " " if prefix else "") + shlex.join(words) + " --device cpu"
    return out
