"""``pytest-sglang capture TARGET -o FILE``: store what a host gives, to replay it offline."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.secrets import scrub


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "capture",
        help="store what a target gives (HTTP answers, host facts, launch command, logs) in a file to replay offline",
        description="Capture a target: its HTTP answers, host facts, launch command and log lines, secrets removed, "
        "with the capture's provenance. Replay it with --sglang-host=replay:FILE (or connect('replay:FILE')), or "
        "serve it as a simulated deployment with sim:///absolute/path/FILE.",
    )
    p.add_argument("target", metavar="TARGET", help="http(s)://HOST:PORT or sim://PROFILE")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the capture file to write (its folder is created)")
    from pytest_sglang.cli.main import add_target_options

    add_target_options(p)
    p.add_argument("--json", action="store_true", help="print the capture's provenance as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pytest_sglang.base.files import check_writable
    from pytest_sglang.cli.main import connect_target, spoken
    from pytest_sglang.render.capture import write_capture

    if args.target.strip().lower().startswith("replay:"):
        raise SpecError(f"{args.target.split('?', 1)[0]} is already a capture: copy the file instead")
    if args.output.strip() == "-":
        raise SpecError("-o -: give a file path (a capture is written to a file, not to standard output)")
    if not os.path.isdir(args.output):  # a folder: write_capture asks for the file's name
        check_writable(args.output, what="capture")  # before the target is read
    with connect_target(args.target, args) as target:
        provenance = write_capture(target, args.output)
        warnings = target.warnings
    if args.json:
        print(scrub(json.dumps(provenance.model_dump(mode="json"), indent=2)))
    else:
        print(scrub(f"captured {provenance.target} ({provenance.summary}) to {args.output}"))
        for warning in warnings:
            print(scrub(f"  warning: {spoken(warning)}"))
        print(scrub(f"replay it with: pytest --sglang-host=replay:{args.output}"))
    return 0
