"""``pytest-sglang``: one command with subcommands, each from its capability's own module.

    pytest-sglang explain sim://qwen35-122b-a10b-4xrtx6000-candidate
    pytest-sglang explain --launch "python -m sglang.launch_server ..." --gpu "RTX PRO 6000" --gpus 4 \\
        --sglang-version 0.5.12 --model Qwen3_5MoeForConditionalGeneration

Exit codes (every subcommand): 0 done, nothing at or above ``--fail-on``; 1 findings at or
above ``--fail-on``; 2 bad usage or input (one line says what to fix); 3 a target could not
be read; 4 a benchmark was inconclusive (its client was the bottleneck).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, Callable, NoReturn, Sequence

from pytest_sglang import __version__
from pytest_sglang.base.errors import SGLangError, SpecError, TargetError
from pytest_sglang.base.secrets import clip, scrub
from pytest_sglang.base.settings import spoken as _spoken

# Each module has ``add_parser(subparsers) -> None`` and sets ``func`` on its parser; a new
# capability adds its module here.
COMMANDS = ("pytest_sglang.cli.explain", "pytest_sglang.cli.init", "pytest_sglang.cli.capture", "pytest_sglang.cli.baseline", "pytest_sglang.cli.bench", "pytest_sglang.cli.report")

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_TARGET = 0, 1, 2, 3

# What each setting the library's messages name (pytest_sglang.base.settings) is called here:
# the flag of add_target_options, or, for a setting this command line does not take, what is
# used instead.
FLAGS = {
    "host": "target",
    "api_key": "--api-key-env VAR",
    "timeout": "--timeout",
    "wait_ready": "the wait for /health",
    "sm": "--sm",
    "ssh": "--ssh",
    "ssh_key": "--ssh-key",
    "ssh_insecure": "--ssh-insecure",
    "ssh_known_hosts": "~/.ssh/known_hosts",
    "ssh_config": "~/.ssh/config",
    "unit": "--unit",
    "logs": "--logs",
    "command_timeout": "the 30-second command timeout",
}


def spoken(text: str) -> str:
    """A library message with the settings it names given as this command line's flags."""
    return _spoken(text, FLAGS)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, as argparse does, without the usage block
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0, at most a day, checked as pytest's
    ``--sglang-timeout`` is (:func:`~pytest_sglang.target.options.checked_number`); a bad value is
    argparse's one-line usage error naming the option, exit 2."""
    from pytest_sglang.target.options import MAX_SECONDS, NumberProblem, checked_number

    try:
        return float(checked_number(text, maximum=MAX_SECONDS))
    except NumberProblem as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_target_options(parser: argparse.ArgumentParser, *, host_access: bool = True, sm: bool = True) -> None:
    """The options every subcommand that reads a target takes, in one place: the api key comes
    only from the environment, never the command line (where shells and process lists keep it)."""
    g = parser.add_argument_group("reading a target")
    g.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the api key (default SGLANG_API_KEY)")
    g.add_argument("--timeout", type=seconds, default=10.0, metavar="SECONDS", help="per-request timeout, a positive number of seconds (default 10)")
    if sm:
        g.add_argument("--sm", metavar="SM", help="GPU compute capability when the target cannot tell, e.g. 120 or 12.0")
    if host_access:
        g.add_argument("--ssh", metavar="USER@HOST[:PORT]", help="host access for GPU facts, the launch command and logs (or 'local')")
        g.add_argument("--ssh-key", metavar="PATH", help="SSH private key")
        g.add_argument("--ssh-insecure", action="store_true", help="do not verify SSH host keys")
        g.add_argument("--unit", metavar="UNIT", help="systemd unit running SGLang")
        g.add_argument("--logs", metavar="SOURCE", help="journald:UNIT, file:PATH, docker:NAME, kubectl:NS/POD or cmd:COMMAND")


def connect_target(spec: str, args: argparse.Namespace) -> Any:
    """Open the target a subcommand names, with the options of :func:`add_target_options`."""
    import os

    from pytest_sglang.target.options import API_KEY_ENV, resolve_api_key
    from pytest_sglang.target.target import connect

    env = args.api_key_env or API_KEY_ENV
    if args.api_key_env and not os.environ.get(env):
        raise SpecError(f"--api-key-env {env}: that environment variable is not set")
    api_key = resolve_api_key(env=env)
    sm = None
    if getattr(args, "sm", None) is not None:
        from pytest_sglang.model.gpu import sm_from_capability

        sm = sm_from_capability(args.sm)
    return connect(
        spec,
        api_key=api_key,
        timeout=args.timeout,
        sm=sm,
        ssh=getattr(args, "ssh", None),
        ssh_key=getattr(args, "ssh_key", None),
        ssh_insecure=bool(getattr(args, "ssh_insecure", False)),
        unit=getattr(args, "unit", None),
        logs=getattr(args, "logs", None),
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pytest-sglang", description="Read, explain and gate what SGLang servers run.", epilog=__doc__.split("\n\n")[-1], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"pytest-sglang {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        importlib.import_module(name).add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return func(args)
    except TargetError as exc:
        print(scrub(f"pytest-sglang: {spoken(str(exc))}"), file=sys.stderr)  # again: a secret found after it was made
        return EXIT_TARGET
    except SGLangError as exc:
        print(scrub(f"pytest-sglang: {spoken(str(exc))}"), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # the one boundary: never a traceback for a user's input
        print(scrub(f"pytest-sglang: {type(exc).__name__}: {clip(str(exc), 300)}"), file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
