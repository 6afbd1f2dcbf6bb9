"""``python -m pytest_sglang.sim --profile NAME``: serve a simulated SGLang deployment.

Prints one line with the URL once listening (another process parses it), stops cleanly on
SIGTERM or SIGINT, and reports mistakes a user can fix as one ``error:`` line with exit code 2.
With ``--parent-pid PID`` it also stops when that process ends, however it ends (SIGTERM,
SIGKILL, a crash): a simulator started for a test session never outlives the session.

``--serve-many`` (not in ``--help``: :mod:`.launcher` starts it) serves many hosts in this one
process, opened and closed by JSON commands on stdin (see :mod:`.many`).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import NoReturn, Protocol

from pytest_sglang.base.errors import SGLangError
from pytest_sglang.simulator.many import ManyHosts
from pytest_sglang.simulator.profile import bundled_profiles, load_profile
from pytest_sglang.simulator.server import SERVER_KINDS, SimServer

USAGE_ERROR = 2

# Linux's prctl(PR_SET_PDEATHSIG) sends this when the parent ends. Not SIGTERM: the kernel
# sends it when the starting *thread* ends too, and SIGTERM from the parent must always stop
# us, so a signal of its own lets the handler check that the parent is really gone.
_PARENT_DEATH_SIGNAL = getattr(signal, "SIGUSR1", None) if sys.platform.startswith("linux") else None
_PR_SET_PDEATHSIG = 1
_PARENT_POLL_SECONDS = 0.5


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
    parser.add_argument(
        "--server",
        choices=SERVER_KINDS,
        default="asyncio",
        help="asyncio: one event loop for every connection (default); threaded: a thread per connection",
    )
    parser.add_argument(
        "--parent-pid", type=int, metavar="PID", help="stop when this process (the one that started it) ends"
    )
    # Many hosts in one process, driven through stdin by pytest_sglang.simulator.launcher.
    parser.add_argument("--serve-many", action="store_true", help=argparse.SUPPRESS)
    return parser


def _list_profiles() -> None:
    for name in bundled_profiles():
        print(f"{name}  {load_profile(name).description}")


class _Stoppable(Protocol):
    def stop(self) -> None: ...


def _stop_on_signals(server: _Stoppable, parent_pid: int | None) -> None:
    def handle(signum: int, frame: FrameType | None) -> None:
        server.stop()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
    if parent_pid is not None and _PARENT_DEATH_SIGNAL is not None:

        def parent_gone(signum: int, frame: FrameType | None) -> None:
            # The kernel also sends it when only the *thread* that started us ends (a library
            # user's worker thread): while the parent process lives, we stay.
            if os.getppid() != parent_pid:
                server.stop()

        signal.signal(_PARENT_DEATH_SIGNAL, parent_gone)


def _set_parent_death_signal() -> bool:
    """Ask the kernel to signal us when our parent ends (Linux); False where it cannot."""
    if _PARENT_DEATH_SIGNAL is None:
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(_PARENT_DEATH_SIGNAL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent_pid: int) -> bool:
    """Stop this process when ``parent_pid`` ends; False if it has already ended.

    Two mechanisms: the kernel's parent-death signal (Linux, immediate), and everywhere a
    daemon thread that notices the end within half a second. When the parent has ended,
    SIGTERM to ourselves takes the ordinary stopping path (or, before the handlers are
    installed, its default action ends the process)."""
    _set_parent_death_signal()
    # Checked after prctl: a parent that ended just before it took effect sends no signal.
    if os.getppid() == parent_pid:

        def alive() -> bool:
            return os.getppid() == parent_pid  # an orphan is re-parented at once

    elif os.name == "posix" and _exists(parent_pid):
        # Started through a wrapper that forks (a launcher shim): watch the process itself.
        def alive() -> bool:
            return _exists(parent_pid)

    else:
        return False

    def poll() -> None:
        while alive():
            time.sleep(_PARENT_POLL_SECONDS)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=poll, name="parent-watch", daemon=True).start()
    return True


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # POSIX only: signal 0 checks, it sends nothing
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.parent_pid is not None and args.parent_pid <= 0:
        parser.error(f"argument --parent-pid: {args.parent_pid} is not a process id")
    if args.parent_pid is not None and not _watch_parent(args.parent_pid):
        return 0  # started for a process that is gone: nobody will use or stop us
    if args.list:
        _list_profiles()
        return 0
    if args.serve_many:
        many = ManyHosts(sys.stdin.fileno(), sys.stdout, args.host)
        _stop_on_signals(many, args.parent_pid)
        many.serve_forever()
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
            server=args.server,
        ).bind()
    except SGLangError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    _stop_on_signals(server, args.parent_pid)
    print(
        f"pytest-sglang simulator: {profile.name} (SGLang {profile.sglang_version}) listening on {server.url}",
        flush=True,
    )
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
