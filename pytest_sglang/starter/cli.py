"""``pytest-sglang init TARGET``: a starter suite from a known-good host."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..secrets import scrub


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "init",
        help="generate a starter suite from a known-good host",
        description="Generate a starter suite from a known-good host: tests for its key effective values "
        "with the thresholds it has, the markers its hardware needs, an ini file, and its baseline "
        "(with --baseline-dir). The suite passes against that host.",
    )
    p.add_argument("target", metavar="TARGET", help="http(s)://HOST:PORT, sim://PROFILE or replay:FILE")
    p.add_argument("-o", "--output", default="sglang_suite", metavar="DIR", help="directory to write (default sglang_suite)")
    p.add_argument("--baseline-dir", metavar="DIR", help="also write the host's baseline there (relative to the output directory), and name it in the ini file")
    p.add_argument("--force", action="store_true", help="overwrite files that exist")
    from ..cli import add_target_options

    add_target_options(p)
    p.add_argument("--json", action="store_true", help="print what was written and pinned as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..cli import connect_target
    from .generate import generate, suite_values, write

    out = Path(args.output)
    with connect_target(args.target, args) as target:
        starter = generate(target, baseline_dir=args.baseline_dir)
        written = write(starter, out, force=args.force)
        if args.baseline_dir:
            written += _write_baseline(target, out / args.baseline_dir)
        values = suite_values(target)
    if args.json:
        print(scrub(json.dumps({"written": [str(p) for p in written], "pinned": starter.pinned, "values": values}, indent=2, default=str)))
    else:
        for path in written:
            print(f"wrote {path}")
        print(f"pinned: {'; '.join(starter.pinned)}")
        print(f"run it: pytest {out}")
    return 0


def _write_baseline(target: Any, directory: Path) -> list[Path]:
    """The host's baseline under its default key, as ``pytest-sglang baseline --update`` writes it."""
    from ..baseline import default_key, document
    from ..baseline.store import file_content, write_baseline

    doc = document(target)
    key = default_key(doc)
    path = directory / f"{key}.json"
    directory.mkdir(parents=True, exist_ok=True)
    write_baseline(path, file_content(doc, key, None))
    return [path]
