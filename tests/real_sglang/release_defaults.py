"""Every shipped release's argparse defaults, for explaining a start-up line without a launch
command (``pytest_sglang/model/knowledge/flags/sglang-defaults.json``).

    python tests/real_sglang/release_defaults.py          # rewrite it for every flag table
    python tests/real_sglang/release_defaults.py 0.5.12   # only some releases (the rest kept)

Each release's own ``prepare_server_args`` parses a minimal command (``--model-path M``), as
``flag_table_live.py`` does for the flag tables; what it returns before post-init is the
release's default for every field (``model_path``, which the command gives, is left out).
Secret fields are redacted. ``postinit`` lists, per release, the fields SGLang's start-up may
assign (``postinit_coverage.py``'s walk of the wheel: every write of a ``ServerArgs`` field
reachable from ``__post_init__``/``resolve_once``): a changed value of any other field was
requested. The fast tier checks the releases that ``tests/data/sglang-argparse-releases.json``
also holds agree with it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from packaging.version import Version

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import flag_table_live  # noqa: E402
import harness  # noqa: E402
import postinit_coverage  # noqa: E402

from pytest_sglang.parse.redact import redact_mapping  # noqa: E402

OUT = HERE.parent.parent / "pytest_sglang" / "model" / "knowledge" / "flags" / "sglang-defaults.json"
MINIMAL = ["--model-path", "M"]


def defaults(version: str, python: Path) -> dict:
    _, parsed = flag_table_live.ask(version, python, [{"name": "minimal", "argv": MINIMAL}])
    entry = parsed["minimal"]
    if "parsed" not in entry:
        raise RuntimeError(f"sglang {version}: the minimal command failed: {entry.get('error')}")
    fields = redact_mapping(entry["parsed"])
    fields.pop("model_path", None)
    return dict(sorted(fields.items()))


def compact(releases: dict[str, dict]) -> dict[str, dict]:
    """Each release after the first as ``{"set": changed or added, "removed": [...]}``."""
    out: dict[str, dict] = {}
    before: dict | None = None
    for version, fields in releases.items():
        # Fields in name order, so a release written again writes the same bytes.
        if before is None:
            out[version] = {"set": dict(sorted(fields.items())), "removed": []}
        else:
            out[version] = {
                "set": {k: v for k, v in sorted(fields.items()) if k not in before or before[k] != v or type(before[k]) is not type(v)},
                "removed": sorted(set(before) - set(fields)),
            }
        before = fields
    return out


def expand(stored: dict[str, dict]) -> dict[str, dict]:
    """The inverse of :func:`compact` (pytest_sglang/judge/explain/startup.py reads it the same way)."""
    out: dict[str, dict] = {}
    current: dict = {}
    for version, change in stored.items():
        current = {k: v for k, v in current.items() if k not in set(change.get("removed", ()))} | change.get("set", {})
        out[version] = dict(current)
    return out


def main(argv: list[str]) -> int:
    python = harness.ensure_environment()
    wanted = argv or flag_table_live.shipped_versions()
    data = json.loads(OUT.read_text()) if OUT.exists() else {}
    releases = expand(data.get("releases", {}))
    postinit = expand(data.get("postinit", {}))
    for version in wanted:
        releases[version] = defaults(version, python)
        postinit[version] = sorted({a.field for a in postinit_coverage.walk(version)})
        print(f"sglang {version}: {len(releases[version])} fields, {len(postinit[version])} assigned at start-up", flush=True)

    def ordered(table: dict) -> dict:
        return dict(sorted(table.items(), key=lambda kv: Version(kv[0])))

    out = {
        "source": "each release's argparse defaults (prepare_server_args of 'python -m sglang.launch_server --model-path M', before post-init; model_path left out, secrets redacted), and the fields its start-up may assign (postinit_coverage.py's walk), written by tests/real_sglang/release_defaults.py; each release after the first holds what changed since the one before",
        "releases": compact(ordered(releases)),
        "postinit": compact(ordered({v: dict.fromkeys(fields, True) for v, fields in postinit.items()})),
    }
    OUT.write_text(json.dumps(out, sort_keys=False, separators=(",", ":")) + "\n")
    print(f"wrote {OUT}: {len(releases)} releases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
