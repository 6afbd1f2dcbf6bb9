"""``pytest-sglang init TARGET``: a starter suite from a known-good host."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.secrets import scrub


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
    p.add_argument("--force", action="store_true", help="overwrite files that exist (a baseline keeps its policy section), and write even when the CI environment variable is set")
    from pytest_sglang.cli.main import add_target_options

    add_target_options(p)
    p.add_argument("--json", action="store_true", help="print what was written and pinned as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pytest_sglang.cli.main import connect_target
    from pytest_sglang.judge.baseline.store import ci_set
    from pytest_sglang.render.starter import exists_line, generate, suite_values, write

    out = Path(args.output)
    if ci_set() and not args.force:
        raise SpecError(
            "init is refused when the CI environment variable is set (a gate must not write the suite and baseline it checks): "
            "generate the suite locally, or add --force"
        )
    if out.exists() and not out.is_dir():
        raise SpecError(f"-o {out}: is a file, not a directory: init writes a suite of several files into a directory; give a new or empty one")
    with connect_target(args.target, args) as target:
        starter = generate(target, baseline_dir=args.baseline_dir, ini_dir=out)
        baseline = _baseline(target, out / args.baseline_dir) if args.baseline_dir else None
        if not args.force:  # every file is checked before any is written: a run writes all or nothing
            planned = [out / name for name in starter.files] + ([baseline[0]] if baseline else [])
            existing = next((p for p in planned if os.path.lexists(p)), None)
            if existing is not None:
                raise SpecError(exists_line(existing) if baseline is None or existing != baseline[0] else _baseline_exists_line(existing))
        written = write(starter, out, force=args.force)
        if baseline:
            written += _write_baseline(*baseline, force=args.force)
        values = suite_values(target)
    if args.json:
        print(scrub(json.dumps({"written": [str(p) for p in written], "pinned": starter.pinned, "values": values}, indent=2, default=str)))
    else:
        for path in written:
            print(f"wrote {path}")
        print(f"pinned: {'; '.join(starter.pinned)}")
        print(f"run it: pytest {out}")
    return 0


def _baseline_exists_line(path: Path) -> str:
    return (
        f"{path} exists (a reviewed baseline, its policy section included): init keeps it; "
        "pass --force to rewrite it (its policy is kept), or update it with pytest-sglang baseline --update"
    )


def _baseline(target: Any, directory: Path) -> tuple[Path, str, dict[str, Any]]:
    """Where the host's baseline goes (its default key's file), the key, and the document."""
    from pytest_sglang.judge.baseline import default_key, document
    from pytest_sglang.judge.baseline.store import baseline_file

    doc = document(target)
    key = default_key(doc)
    return baseline_file(directory, key), key, doc


def _write_baseline(path: Path, key: str, doc: dict[str, Any], *, force: bool) -> list[Path]:
    """The host's baseline under its default key, as ``pytest-sglang baseline --update`` writes
    it: an existing file is kept unless ``force``, and then its policy section is kept."""
    from pytest_sglang.base.files import FileExistsRefused
    from pytest_sglang.judge.baseline.store import file_content, load_baseline, write_baseline

    previous = None
    if force and os.path.lexists(path):
        try:
            previous = load_baseline(path)
        except SpecError:
            previous = None  # not a readable baseline: rewritten whole (a link or a FIFO is refused below)
    try:
        write_baseline(path, file_content(doc, key, previous), overwrite=force)
    except FileExistsRefused:
        raise SpecError(_baseline_exists_line(path)) from None
    return [path]
