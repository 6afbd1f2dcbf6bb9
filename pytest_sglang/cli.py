"""``pytest-sglang``: one command with subcommands, each from its capability's own module.

    pytest-sglang explain sim://qwen35-122b-a10b-4xrtx6000-candidate
    pytest-sglang explain --launch "python -m sglang.launch_server ..." --gpu "RTX PRO 6000" --gpus 4 \\
        --sglang-version 0.5.12 --model Qwen3_5MoeForConditionalGeneration

Exit codes (every subcommand): 0 done, nothing at or above ``--fail-on``; 1 findings at or
above ``--fail-on``; 2 bad usage or input (one line says what to fix); 3 a target could not
be read.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Callable, NoReturn, Sequence

from . import __version__
from .errors import SGLangError, TargetError
from .secrets import scrub

# Each module has ``add_parser(subparsers) -> None`` and sets ``func`` on its parser; a new
# capability adds its module here.
COMMANDS = ("pytest_sglang.explain.cli", "pytest_sglang.starter.cli", "pytest_sglang.capture.cli", "pytest_sglang.baseline.cli")

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_TARGET = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, as argparse does, without the usage block
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


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
        print(f"pytest-sglang: {exc}", file=sys.stderr)
        return EXIT_TARGET
    except SGLangError as exc:
        print(f"pytest-sglang: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # the one boundary: never a traceback for a user's input
        print(scrub(f"pytest-sglang: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"), file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
