"""Resolve every configuration with the real SGLang and store what it said, for the fast tier.

    python tests/real_sglang/generate_data.py      # rewrites tests/data/sglang-0.5.23-resolutions.json

The real tier checks that the stored data is what SGLang says today.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402
from configurations import CASES, CONFIG_UNDERSCORE_YAML, CONFIG_YAML, argv_and_env, back_to_placeholders, corpus_cases  # noqa: E402

from pytest_sglang.parse.redact import redact_mapping  # noqa: E402

DATA = HERE.parent / "data" / f"sglang-{harness.SGLANG_VERSION}-resolutions.json"
CORPUS = HERE.parent / "data" / "corpus"  # part of the repository: never optional


def generate() -> dict[str, Any]:
    python = harness.ensure_environment()
    models = {"llama": harness.ensure_model("llama"), "qwen3moe": harness.ensure_model("qwen3moe")}
    cases = dict(CASES)
    cases.update(corpus_cases(CORPUS, models["llama"]))
    with tempfile.TemporaryDirectory() as tmp:
        paths = {**models, "config": Path(tmp) / "sglang.yaml", "config_underscore": Path(tmp) / "underscore.yaml"}
        paths["config"].write_text(CONFIG_YAML)
        paths["config_underscore"].write_text(CONFIG_UNDERSCORE_YAML)
        requests = []
        for name, command in cases.items():
            argv, env = argv_and_env(command, paths)
            requests.append({"name": name, "argv": argv, "env": env})
        answer = subprocess.run(
            [str(python), str(HERE / "sglang_offline.py"), "resolve"],
            input=json.dumps(requests), capture_output=True, text=True, check=True,
        ).stdout
    # Machine paths back to placeholders, so the data is the same on every machine; secrets
    # redacted as everywhere else; the random seed (drawn per resolution) left out.
    results = redact_mapping(json.loads(back_to_placeholders(answer, paths)))
    for entry in results.values():
        for part in ("parsed", "resolved"):
            if part in entry:
                entry[part].pop("random_seed", None)
    base = results["base"]
    out: dict[str, Any] = {
        "sglang_version": harness.SGLANG_VERSION,
        "config_yaml": CONFIG_YAML,
        "config_underscore_yaml": CONFIG_UNDERSCORE_YAML,
        "base": base,
        "cases": {},
    }
    for name, command in cases.items():
        entry = results[name]
        stored: dict[str, Any] = {"command": command}
        if "error" in entry:
            stored["error"] = entry["error"]
        for part in ("parsed", "resolved"):
            if part in entry:
                stored[f"{part}_changes"] = {k: v for k, v in entry[part].items() if base[part].get(k, object()) != v}
        out["cases"][name] = stored
    return out


if __name__ == "__main__":
    DATA.parent.mkdir(parents=True, exist_ok=True)
    DATA.write_text(json.dumps(generate(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {DATA}")
