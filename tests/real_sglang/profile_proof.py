"""Every bundled simulator profile through its release's own post-init and pool sizing.

    python tests/real_sglang/profile_proof.py            # ask each profile's release, report
    python tests/real_sglang/profile_proof.py --store    # rewrite tests/data/sglang-profile-proof.json
    python tests/real_sglang/profile_proof.py --check-stored   # the profiles against the stored answers

A profile's launch command runs the way the corpus runs a launch command (``corpus_postinit.py``):
the words after the entry point, the model path swapped for the family of
``tests/data/model-configs`` with the profile's architecture, on the profile's simulated GPU, in
the profile's release (``sglang_postinit.py``: ``prepare_server_args`` and post-init, with the
release's pinned transformers). The same command then runs through the release's KV and mamba
pool sizing (``sglang_pools.py``) with the profile's memory: its GPUs' total less the CUDA
context and NCCL buffers (0.9 GiB on one GPU, 2 GiB on several, as ``pool_differential.py``'s
pinned cases), and its weights (``runtime.weight_gb``, GiB).

The comparison (``compare``): every field the profile reports (``Profile.args()``: its template,
its ``server_args`` over it, less ``drop_fields``) must be a field of the release, with the
release's value; the paths of the model family read back as the profile's model path. The fields
a profile lists in ``after_post_init`` are decided after post-init (the scheduler's pool sizing,
the memory a running server measured): each must equal the release's pool sizing where the
sizing computes it (``SIZED``), and is otherwise excepted, by name.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
if str(ROOT) not in sys.path and __name__ == "__main__":  # run as a script from a checkout
    sys.path.insert(0, str(ROOT))

import corpus_postinit as corpus  # noqa: E402
import pool_differential  # noqa: E402
import postinit_differential as differential  # noqa: E402

DATA = ROOT / "tests" / "data" / "sglang-profile-proof.json"
GIB = 1 << 30

# Fields post-init draws at random when the command does not give them: stored as DRAWN_VALUE,
# and a profile's value compared by kind.
DRAWN = {"random_seed": int}
DRAWN_VALUE = "drawn at random by post-init"
# Fields /server_info of 0.5.22+ reports as "<redacted>" whatever post-init set.
REDACTED = {"watermark_key", "watermark_key_b", "watermark_config"}

# A field a profile sets after post-init -> the pool sizing's figure it must equal.
SIZED = {
    "runtime.effective_max_running_requests_per_dp": "max_running_requests",
    "runtime.max_total_num_tokens": "max_total_num_tokens",
    "runtime.max_req_input_len": "max_req_input_len",
    "scheduler_args.max_mamba_cache_size": "max_mamba_cache_size",
}


def profiles() -> list[Any]:
    from pytest_sglang.simulator import bundled_profiles, load_profile

    return [load_profile(name) for name in bundled_profiles()]


def case_of(profile: Any) -> dict[str, Any]:
    """The profile's launch command as a case of the post-init and pool runners."""
    arch = profile.model.architectures[0]
    family, how = corpus.family_of(arch)
    if family is None or not profile.launch_command or profile.gpu is None:
        raise ValueError(f"profile {profile.name}: no launch command, GPU or model family ({how})")
    from pytest_sglang.parse.launch import parse_launch_command

    parsed = parse_launch_command(profile.launch_command, sglang_version=profile.sglang_version)
    argv = corpus._swap_model(corpus._words_after_entrypoint(profile.launch_command), family, parsed.spelled.get("model_path"))
    major, minor = profile.gpu.compute_capability.split(".")
    gpu = {"sm": int(major) * 10 + int(minor), "name": profile.gpu.name, "memory_mib": profile.gpu.memory_mib, "count": profile.gpu.count}
    overhead = 0.9 if gpu["count"] == 1 else 2.0
    memory = {"pre_load_free_bytes": int(gpu["memory_mib"] * 2**20 - overhead * GIB), "weights_bytes": int(profile.runtime.weight_gb * GIB)}
    return {"name": profile.name, "release": profile.sglang_version, "family": family, "model": how, "gpu": gpu, "argv": argv,
            "memory": memory, "env": dict(parsed.env), "flags": []}  # fmt: skip


def ask(case: dict[str, Any], python: Path) -> dict[str, Any]:
    """The release's own answers for one profile: every field after post-init, and the pool sizing."""
    started = time.monotonic()
    fields = differential.real_answers(case["release"], python, [case])[case["name"]]
    pools = pool_differential.real_answers(case["release"], python, [case])[case["name"]]
    answer = {"fields": fields.get("fields"), "error": fields.get("error"), "pools": pools.get("pools"), "pools_error": pools.get("error")}
    for name, kind in DRAWN.items():  # a fresh draw each run: the stored answer keeps only that it was drawn
        if isinstance((answer["fields"] or {}).get(name), kind) and not any(w.startswith("--" + name.replace("_", "-")) for w in case["argv"]):
            answer["fields"][name] = DRAWN_VALUE
    if answer["pools"]:
        answer["pools"] = {k: v for k, v in answer["pools"].items() if k != "read"}
    answer = {k: v for k, v in answer.items() if v is not None}
    return {"case": case, "answer": answer, "seconds": round(time.monotonic() - started, 1)}


def _as_profile(value: Any, family_path: str, model_path: str) -> Any:
    """A release's value with the model family's path read as the profile's model path."""
    if isinstance(value, str):
        return model_path if value == family_path else value
    if isinstance(value, list):
        return [_as_profile(v, family_path, model_path) for v in value]
    if isinstance(value, dict):
        return {k: _as_profile(v, family_path, model_path) for k, v in value.items()}
    return value


def _after_post_init_value(profile: Any, dotted: str) -> Any:
    section, _, name = dotted.partition(".")
    values = profile.runtime.model_dump() if section == "runtime" else getattr(profile, section, {}) if section == "scheduler_args" else {}
    return values.get(name)


def _reported_as(name: str, value: Any, release_value: Any, profile: Any) -> bool:
    """Whether ``value`` is how the release reports ``release_value``: a drawn seed, a redacted secret."""
    if name in DRAWN:
        return isinstance(value, DRAWN[name]) and release_value == DRAWN_VALUE
    from packaging.version import Version

    return name in REDACTED and value == "<redacted>" and profile.version >= Version("0.5.22")


def compare(profile: Any, stored: dict[str, Any]) -> dict[str, Any]:
    """The profile against its release's stored answer: fields compared, equal, excepted (by
    name), and each difference as one line."""
    answer = stored["answer"]
    if "fields" not in answer:
        return {"compared": 0, "equal": 0, "excepted": [], "differences": [f"the release refused the launch command: {answer.get('error')}"]}
    family_path = f"{differential.PLACEHOLDER}/{stored['case']['family']}"
    release = _as_profile(answer["fields"], family_path, profile.model.model_path)
    after = set(profile.after_post_init)
    reported = profile.args()
    refused = [f"the release's pool sizing refused the profile's memory: {answer['pools_error']}"] if "pools_error" in answer else []
    differences, equal, excepted = refused, 0, sorted(f for f in after if f not in SIZED or SIZED[f] not in (answer.get("pools") or {}))
    for name, value in sorted(reported.items()):
        if name in after:
            continue
        if name not in release:
            differences.append(f"{name}: reported as {value!r}, not a field of SGLang {profile.sglang_version}")
        elif differential._same(value, release[name]) or _reported_as(name, value, release[name], profile):
            equal += 1
        else:
            differences.append(f"{name}: reported {value!r}, SGLang {profile.sglang_version} sets {release[name]!r}")
    sized = 0
    for dotted in sorted(after - set(excepted)):
        sized += 1
        want, have = answer["pools"][SIZED[dotted]], _after_post_init_value(profile, dotted)
        if want == have:
            equal += 1
        else:
            differences.append(f"{dotted}: the profile says {have!r}, SGLang {profile.sglang_version}'s pool sizing gives {want!r}")
    return {"compared": len([n for n in reported if n not in after]) + sized, "equal": equal, "excepted": excepted, "differences": differences}


def stored() -> dict[str, Any]:
    return json.loads(DATA.read_text())


def write_stored(python: Path) -> dict[str, Any]:
    data = {
        "about": (
            "Each bundled simulator profile's launch command (model swapped for a family of tests/data/model-configs, "
            "{models}) on the profile's simulated GPU and memory, and what the profile's release made of it: every "
            "field after its own post-init, and its pool sizing. Written by tests/real_sglang/profile_proof.py --store; "
            "checked by tests/test_profile_proof.py and the real tier."
        ),
        "profiles": {p.name: ask(case_of(p), python) for p in profiles()},
    }
    DATA.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


def render(results: dict[str, dict[str, Any]], seconds: dict[str, float]) -> str:
    lines = ["profile                                   release  compared  equal  excepted  differences  seconds"]
    for name, r in results.items():
        lines.append(f"{name:41} {r['release']:8} {r['compared']:8} {r['equal']:6} "
                     f"{len(r['excepted']):9} {len(r['differences']):12} {seconds.get(name, 0):8}")
        lines += [f"    excepted: {', '.join(r['excepted'])}"] if r["excepted"] else []
        lines += [f"    {d}" for d in r["differences"]]
    return "\n".join(lines)


def check(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for profile in profiles():
        entry = data["profiles"].get(profile.name)
        result = compare(profile, entry) if entry else {"compared": 0, "equal": 0, "excepted": [], "differences": ["no stored answer: run --store"]}
        out[profile.name] = {"release": profile.sglang_version, **result}
    return out


if __name__ == "__main__":
    import argparse

    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("--store", action="store_true", help=f"rewrite {DATA.relative_to(ROOT)}")
    cli.add_argument("--check-stored", action="store_true", help="the profiles against the stored answers")
    options = cli.parse_args()
    if options.check_stored:
        data = stored()
    else:
        import harness

        python = harness.ensure_environment()
        data = write_stored(python) if options.store else {"profiles": {p.name: ask(case_of(p), python) for p in profiles()}}
    results = check(data)
    print(render(results, {n: e.get("seconds", 0) for n, e in data["profiles"].items()}))
    sys.exit(1 if any(r["differences"] for r in results.values()) else 0)
