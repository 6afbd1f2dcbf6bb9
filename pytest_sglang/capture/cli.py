"""``pytest-sglang capture TARGET -o FILE``: store what a host gives, to replay it offline."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from ..errors import SpecError
from ..secrets import scrub


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
    target = p.add_argument_group("reading a target")
    target.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the api key (default SGLANG_API_KEY)")
    target.add_argument("--ssh", metavar="USER@HOST[:PORT]", help="host access for GPU facts, the launch command and logs (or 'local')")
    target.add_argument("--ssh-key", metavar="PATH")
    target.add_argument("--ssh-insecure", action="store_true", help="do not verify SSH host keys")
    target.add_argument("--unit", metavar="UNIT", help="systemd unit running SGLang")
    target.add_argument("--logs", metavar="SOURCE", help="journald:UNIT, file:PATH, docker:NAME, kubectl:NS/POD or cmd:COMMAND")
    target.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS")
    target.add_argument("--sm", metavar="SM", help="GPU compute capability when the target cannot tell, e.g. 120 or 12.0 (kept in the capture)")
    p.add_argument("--json", action="store_true", help="print the capture's provenance as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..gpu import sm_from_capability
    from ..target import connect
    from .files import write_capture

    if args.target.strip().lower().startswith("replay:"):
        raise SpecError(f"{args.target.split('?', 1)[0]} is already a capture: copy the file instead")
    env = args.api_key_env or "SGLANG_API_KEY"
    if args.api_key_env and not os.environ.get(env):
        raise SpecError(f"--api-key-env {env}: that environment variable is not set")
    with connect(
        args.target,
        api_key=os.environ.get(env) or None,
        timeout=args.timeout,
        sm=sm_from_capability(args.sm) if args.sm is not None else None,
        ssh=args.ssh,
        ssh_key=args.ssh_key,
        ssh_insecure=args.ssh_insecure,
        unit=args.unit,
        logs=args.logs,
    ) as target:
        provenance = write_capture(target, args.output)
        warnings = target.warnings
    if args.json:
        print(scrub(json.dumps(provenance.model_dump(mode="json"), indent=2)))
    else:
        print(scrub(f"captured {provenance.target} ({provenance.summary}) to {args.output}"))
        for warning in warnings:
            print(scrub(f"  warning: {warning}"))
        print(scrub(f"replay it with: pytest --sglang-host=replay:{args.output}"))
    return 0
