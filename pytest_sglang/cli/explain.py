"""``pytest-sglang explain``: a running target, or a launch command without a server."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.secrets import scrub
from pytest_sglang.judge.explain.api import explain, explain_launch
from pytest_sglang.judge.explain.findings import Explanation
from pytest_sglang.judge.explain.kb import SEVERITIES

_FAIL_ON = ("error", "warning", "info", "never")


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "explain",
        help="what SGLang changed and why, for a target or a launch command",
        description="Explain what SGLang changed in its configuration and why. Give a TARGET "
        "(http://HOST:PORT or sim://PROFILE) to explain a running server, --launch/--launch-file "
        "with the GPU, version and model to predict what SGLang will do without a server, or "
        "--startup-line with a server's log to say which of its values SGLang set and which were requested.",
    )
    p.add_argument("target", nargs="?", metavar="TARGET", help="http(s)://HOST:PORT or sim://PROFILE")
    launch = p.add_argument_group("a launch command instead of a target")
    launch.add_argument("--launch", metavar="COMMAND", help="the launch command (python -m sglang.launch_server ..., sglang serve ..., docker/kubectl ...)")
    launch.add_argument("--launch-file", metavar="FILE", help="a file holding it: a shell script, a systemd unit, a docker or kubectl command line ('-' reads standard input)")
    launch.add_argument(
        "--startup-line",
        metavar="FILE",
        help="explain a start-up line instead: a log file holding SGLang's server_args= line, the line itself, or '-' (standard input); "
        "for each value that differs from the release's default, the rule that sets it, or 'probably requested' "
        "(the GPU, version and model as for --launch; without --sglang-version, the release whose fields the line has)",
    )
    launch.add_argument("--gpu", metavar="NAME", help="GPU model, e.g. 'RTX PRO 6000', 'H100' or 'MI300X'")
    launch.add_argument("--platform", metavar="PLATFORM", help="what SGLang runs on when neither --gpu nor the command's --device says: cuda, hip (AMD ROCm), npu, xpu, cpu")
    launch.add_argument("--gpus", metavar="N", help="number of GPUs")
    launch.add_argument("--gpu-memory", metavar="SIZE", help="memory per GPU, e.g. 96GiB or 97887MiB")
    launch.add_argument("--sglang-version", metavar="VERSION", help="the SGLang release, e.g. 0.5.12")
    launch.add_argument("--model", metavar="ARCH|CONFIG", help="architecture name (Qwen3_5MoeForConditionalGeneration) or the model's config.json")
    launch.add_argument(
        "--execute",
        action="store_true",
        help="also run the installed SGLang's own post-init on the launch command (simulated GPU, the model's config.json, no network) "
        "and list every field it changed, with the rule that explains it or none yet; without --sglang-version, the rules are that release's",
    )
    launch.add_argument("--sglang-python", metavar="PATH", help="with --execute: the python of the environment where SGLang is installed (default: this one)")
    from pytest_sglang.cli.main import add_target_options

    add_target_options(p, sm=False)  # --sm is below: it serves a launch command too
    both = p.add_argument_group("both")
    both.add_argument("--sm", metavar="SM", help="GPU compute capability, e.g. 120 or 12.0")
    both.add_argument("--json", action="store_true", help="print the findings as JSON")
    both.add_argument("--show-command", action="store_true", help="print the command that was judged first (entry point and words, shell-quoted, secrets redacted); with --json, its 'command' field")
    both.add_argument("-v", "--verbose", action="store_true", help="also print each rule's explanation, sources and the facts used")
    both.add_argument("--fail-on", choices=_FAIL_ON, default="error", help="exit 1 when a finding is at least this severe (default error)")
    kb = p.add_argument_group("the knowledge base")
    kb.add_argument("--list-rules", action="store_true", help="list the rules explain knows (with --json or --markdown)")
    kb.add_argument("--markdown", action="store_true", help="with --list-rules, --list-checkpoints or --list-surprises: Markdown")
    kb.add_argument("--list-checkpoints", action="store_true", help="list the public checkpoints a model path is recognised by (with --json or --markdown)")
    kb.add_argument("--list-surprises", action="store_true", help="list the classes of change SGLang makes behind your back, with their rules (with --json or --markdown)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.list_rules:
        return _list_rules(args)
    if args.list_checkpoints:
        return _list_checkpoints(args)
    if args.list_surprises:
        return _list_surprises(args)
    launch_text = _launch_text(args)
    startup = _startup_text(args)
    given = [g for g in (args.target is not None, launch_text is not None, startup is not None) if g]
    if len(given) != 1:
        raise SpecError("give either a TARGET or --launch/--launch-file, or --startup-line: exactly one of them")
    # The facts a launch command or a start-up line is explained with (a target reports its own).
    facts = {name: getattr(args, name) for name in ("gpu", "sm", "gpus", "gpu_memory", "sglang_version", "model", "platform")}
    if args.sglang_python is not None and not args.execute:
        raise SpecError("--sglang-python is for --execute: add --execute to run that SGLang's post-init on the launch command")
    if args.execute and launch_text is None:
        raise SpecError("--execute runs SGLang's post-init on a launch command: give --launch or --launch-file")
    command: str | None = None  # the argv judged, for --show-command
    if startup is not None:
        if args.show_command:
            raise SpecError("--show-command is for --launch/--launch-file or a TARGET: a start-up line holds no launch command")
        from pytest_sglang.judge.explain.startup import explain_startup_line

        explanation: Explanation = explain_startup_line(startup[0], source=startup[1], **facts)
    elif launch_text is not None:
        explanation = explain_launch(launch_text, **facts, execute=args.execute, sglang_python=args.sglang_python)
        if args.show_command:
            from pytest_sglang.parse.launch import parse_launch_command

            command = parse_launch_command(launch_text, sglang_version=args.sglang_version, strict_version=False).command_line
    else:
        for name in ("gpu", "gpus", "gpu_memory", "sglang_version", "model", "platform"):
            if getattr(args, name) is not None:
                raise SpecError(f"--{name.replace('_', '-')} is for --launch or --startup-line; a target reports its own (use --ssh for GPU facts, --sm for the compute capability)")
        from pytest_sglang.cli.main import connect_target

        with connect_target(args.target, args) as target:
            explanation = explain(target)
            if args.show_command:
                from pytest_sglang.judge.explain.api import situation_of

                judged = situation_of(target)
                command = judged.launch.command_line if judged is not None and judged.launch is not None else None
    from pytest_sglang.cli.main import spoken

    if args.json:
        if args.show_command:
            import json

            print(scrub(spoken(json.dumps({"command": command, **explanation.model_dump(mode="json")}, indent=2))))
        else:
            print(scrub(spoken(explanation.to_json())))
    else:
        from pytest_sglang.render.explain import text

        if args.show_command:
            print(scrub(f"command: {command or '(the target reports no launch command)'}"))
        print(spoken(text(explanation, verbose=args.verbose)))
    if args.fail_on == "never":
        return 0
    worst = SEVERITIES.index(args.fail_on)
    return 1 if any(SEVERITIES.index(f.severity) <= worst and f.status != "undecided" for f in explanation.findings) else 0


def _list_rules(args: argparse.Namespace) -> int:
    import json

    from pytest_sglang.judge.explain import catalog
    from pytest_sglang.judge.explain.kb import load

    if args.target is not None or args.launch is not None or args.launch_file is not None or args.startup_line is not None:
        raise SpecError("--list-rules takes no TARGET, launch command or start-up line")
    kb = load()
    if args.json:
        print(json.dumps(catalog.rows(kb), indent=2))
    elif args.markdown:
        print(catalog.markdown(kb), end="")
    else:
        print(catalog.text(kb))
    return 0


def _list_checkpoints(args: argparse.Namespace) -> int:
    from pytest_sglang.judge.explain import checkpoint_table

    return _list_table(args, "--list-checkpoints", checkpoint_table)


def _list_surprises(args: argparse.Namespace) -> int:
    from pytest_sglang.judge.explain import surprises

    return _list_table(args, "--list-surprises", surprises)


def _list_table(args: argparse.Namespace, option: str, table: Any) -> int:
    """A table of the knowledge base (its module gives ``rows``, ``markdown`` and ``text``), as
    JSON, Markdown or text."""
    import json

    from pytest_sglang.judge.explain.kb import load

    if args.target is not None or args.launch is not None or args.launch_file is not None or args.startup_line is not None:
        raise SpecError(f"{option} takes no TARGET, launch command or start-up line")
    kb = load()
    if args.json:
        print(json.dumps(table.rows(kb), indent=2))
    elif args.markdown:
        print(table.markdown(kb), end="")
    else:
        print(table.text(kb))
    return 0


# A launch file is a shell script, a systemd unit, a compose file or a pod spec: KiB, not MiB.
LAUNCH_FILE_CAP_BYTES = 4 * 1024 * 1024
# A server's log holding its start-up line: a long-running server's log may be large, but the
# line is near its start; past this, give the line itself (grep -m1 server_args= LOG).
STARTUP_LOG_CAP_BYTES = 64 * 1024 * 1024


def _launch_text(args: argparse.Namespace) -> str | None:
    if args.launch is not None and args.launch_file is not None:
        raise SpecError("give --launch or --launch-file, not both")
    if args.launch is not None:
        if not args.launch.strip():
            raise SpecError("--launch is empty: give the launch command")
        return args.launch
    if args.launch_file is None:
        return None
    if args.launch_file == "-":
        text = sys.stdin.read(LAUNCH_FILE_CAP_BYTES + 1)
        if len(text) > LAUNCH_FILE_CAP_BYTES:
            raise SpecError(f"--launch-file -: standard input holds more than the {LAUNCH_FILE_CAP_BYTES // (1024 * 1024)} MiB a launch file may be: is it the right input?")
        return text
    # Read through pytest_sglang.base.files.read_text: a regular file only (a FIFO or a device is
    # refused at once, never read), at most LAUNCH_FILE_CAP_BYTES of UTF-8.
    from pytest_sglang.base.files import FileError, MissingFileError, read_text

    path = Path(args.launch_file)
    try:
        return read_text(path, cap_bytes=LAUNCH_FILE_CAP_BYTES, what=f"--launch-file {path}")
    except MissingFileError:
        raise SpecError(f"--launch-file {path}: cannot be read (No such file or directory)") from None
    except FileError as exc:
        raise SpecError(str(exc)) from None


def _startup_text(args: argparse.Namespace) -> tuple[str, str] | None:
    """(the text holding the start-up line, where it came from) for --startup-line."""
    given = args.startup_line
    if given is None:
        return None
    if not given.strip():
        raise SpecError("--startup-line is empty: give a log file holding SGLang's server_args= line, or the line")
    from pytest_sglang.base.files import FileError, MissingFileError, read_stream, read_text

    if given == "-":
        try:
            return read_stream(sys.stdin, cap_chars=STARTUP_LOG_CAP_BYTES, what="--startup-line -: standard input"), "standard input"
        except FileError as exc:
            raise SpecError(f"{exc}; give the line itself (grep -m1 server_args= LOG)") from None
    if "server_args=" in given:  # the line itself
        return given, "the line given"
    # Read through pytest_sglang.base.files: a regular file only (a FIFO or /dev/zero is refused
    # at once, never read), at most STARTUP_LOG_CAP_BYTES.
    path = Path(given)
    try:
        return read_text(path, cap_bytes=STARTUP_LOG_CAP_BYTES, what=f"--startup-line {path}", errors="replace"), str(path)
    except MissingFileError:
        raise SpecError(f"--startup-line {path}: cannot be read (No such file or directory); give a log file holding SGLang's server_args= line, or the line") from None
    except FileError as exc:
        raise SpecError(f"{exc}; give a log file holding SGLang's server_args= line, or the line (grep -m1 server_args= LOG)") from None
