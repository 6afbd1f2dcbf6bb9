"""``python -m pytest_sglang.sim --profile NAME``: serve a simulated SGLang deployment.

Prints one line with the URL once listening (another process parses it), stops cleanly on
SIGTERM or SIGINT, and reports mistakes a user can fix as one ``error:`` line with exit code 2.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from types import FrameType
from typing import NoReturn

from ..errors import SGLangError
from .profile import bundled_profiles, load_profile
from .server import SimServer

USAGE_ERROR = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse prints the whole usage text first; one line is easier to read and to parse.
        self.exit(USAGE_ERROR, f"error: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m pytest_sglang.sim", description=__doc__.splitlines()[0])
    parser.add_argument("--profile", help="a bundled profile name (see --list) or a profile JSON file")
    parser.add_argument("--list", action="store_true", help="list the bundled profiles and exit")
    parser.add_argument("--host", default="127.0.0.1", help="a loopback address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=30000, help="port; 0 picks a free one (default 30000)")
    parser.add_argument("--api-key", help="require this bearer key (default: $SGLANG_API_KEY)")
    parser.add_argument("--admin-api-key", help="require this bearer key for admin endpoints (default: $PYTEST_SGLANG_SIM_ADMIN_API_KEY)")
    parser.add_argument(
        "--ready-after", type=float, default=0.0, metavar="SECONDS", help="answer /health with 503 until then"
    )
    return parser


def _list_profiles() -> None:
    for name in bundled_profiles():
        print(f"{name}  {load_profile(name).description}")


def _stop_on_signals(server: SimServer) -> None:
    def handle(signum: int, frame: FrameType | None) -> None:
        server.stop()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.list:
        _list_profiles()
        return 0
    if not args.profile:
        print("error: --profile NAME|PATH.json is required (see --list)", file=sys.stderr)
        return USAGE_ERROR
    api_key = args.api_key if args.api_key is not None else os.environ.get("SGLANG_API_KEY")
    try:
        profile = load_profile(args.profile)
        server = SimServer(
            profile,
            args.host,
            args.port,
            api_key=api_key,
            admin_api_key=args.admin_api_key or os.environ.get("PYTEST_SGLANG_SIM_ADMIN_API_KEY"),
            ready_after=args.ready_after,
        ).bind()
    except SGLangError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    _stop_on_signals(server)
    print(
        f"pytest-sglang simulator: {profile.name} (SGLang {profile.sglang_version}) listening on {server.url}",
        flush=True,
    )
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
