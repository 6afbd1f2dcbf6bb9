"""Run inside the harness's SGLang environment (never imported by the project).

    python sglang_offline.py cli-table          # SGLang's own argparse table, as JSON
    python sglang_offline.py release < cases    # cli-table, and what the release's parser made of each argv
    python sglang_offline.py resolve < cases    # prepare_server_args(argv).resolve_once().resolved_dict()
    python sglang_offline.py entry < cases      # cli-table, and what the real entry point (launch_server
                                                # or sglang serve) parsed of each case; no network

``cases`` is a JSON list of ``{"name": ..., "argv": [...]}``; the answer maps each name to
``{"resolved": {...}}`` or ``{"error": "..."}``.
"""

from __future__ import annotations

import argparse
import ast
import functools
import inspect
import json
import logging
import os
import sys
import textwrap
from pathlib import Path

os.environ.setdefault("SGLANG_USE_CPU_ENGINE", "1")
logging.disable(logging.WARNING)

# What SGLang's argparse made of a command, the network refused, an exception as one line: the
# package's copy, which explain --execute runs in a user's SGLang environment.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "pytest_sglang" / "judge" / "explain" / "run_in_sglang"))
from offline import ArgparseError as _ArgparseError  # noqa: E402
from offline import Parsed as _Parsed  # noqa: E402
from offline import one_line as _one_line  # noqa: E402
from offline import parsed as _parsed  # noqa: E402
from offline import refuse_the_network as _refuse_the_network  # noqa: E402
from offline import tolerate_known_transformers_configs as _tolerate_known_transformers_configs  # noqa: E402


def _kind(action: argparse.Action) -> str:
    name = type(action).__name__
    if isinstance(action, argparse.BooleanOptionalAction):
        return "boolean_optional"
    if "StoreTrue" in name or (isinstance(action, argparse._StoreConstAction) and action.const is True):
        return "store_true"
    if "StoreFalse" in name or (isinstance(action, argparse._StoreConstAction) and action.const is False):
        return "store_false"
    if isinstance(action, argparse._StoreConstAction) or hasattr(action, "const_value"):
        return "store_const"
    if action.nargs == 0:
        # SGLang's DeprecatedAction: takes no value, stores nothing, warns (or refuses to start).
        return "ignored"
    return "store"


def _converter_name(converter) -> str | None:  # noqa: ANN001
    """The name a converter goes by in the table: its own ``__name__`` (``int``,
    ``human_readable_int``, ``loads``, ``nullable_str``); a partial, ``functools.partial(NAME,
    ARGS)``; a lambda, ``lambda ARGS: BODY`` as written; an instance, its class name."""
    if converter is None:
        return None
    if isinstance(converter, functools.partial):
        args = [_converter_name(converter.func) or "None", *map(repr, converter.args)]
        args += [f"{k}={v!r}" for k, v in sorted(converter.keywords.items())]
        return f"functools.partial({', '.join(args)})"
    name = getattr(converter, "__name__", None)
    if name == "<lambda>":
        node = _lambda_node(converter)
        return ast.unparse(node) if node is not None else f"<lambda of {converter.__qualname__}>"
    if name is None:
        return type(converter).__name__
    return name


def _lambda_node(function) -> ast.Lambda | None:  # noqa: ANN001
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:  # the source lines of a lambda inside a call: take the lambda alone
        start = source.find("lambda")
        for end in range(len(source), start, -1):
            try:
                tree = ast.parse(source[start:end].rstrip().rstrip(","), mode="eval")
                break
            except SyntaxError:
                continue
        else:
            return None
    lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
    code = function.__code__
    for node in lambdas:  # the lambda whose arguments match
        if [a.arg for a in node.args.args] == list(code.co_varnames[: code.co_argcount]):
            return node
    return lambdas[0] if lambdas else None


def _converter_source(converter) -> str | None:  # noqa: ANN001
    """What a converter does, as the release's own source (trimmed to the function); ``None``
    for a Python builtin (``int``, ``str``, ``float``)."""
    if converter is None or getattr(converter, "__module__", None) == "builtins":
        return None
    if isinstance(converter, functools.partial):
        return _converter_source(converter.func)
    module = getattr(converter, "__module__", None) or type(converter).__module__
    name = getattr(converter, "__name__", None)
    if not str(module).startswith("sglang"):
        # The standard library (json.loads) or another package: named, not copied.
        return f"{module}.{getattr(converter, '__qualname__', name or type(converter).__name__)} (not part of SGLang)"
    if name == "<lambda>":
        node = _lambda_node(converter)
        return ast.unparse(node) if node is not None else None
    target = converter if name is not None else type(converter)
    try:
        return textwrap.dedent(inspect.getsource(target)).rstrip() + "\n"
    except (OSError, TypeError):
        return None


def _entry(action: argparse.Action) -> dict:
    entry = {
        "flags": list(action.option_strings),
        "kind": _kind(action),
        "nargs": action.nargs if action.nargs not in (0,) else None,
        "type": _converter_name(action.type),
    }
    if action.choices:
        entry["choices"] = sorted(map(str, action.choices))
    if action.required:
        entry["required"] = True
    if action.nargs == "?" and entry["kind"] == "store":
        # "--model-checksum" with no value stores this constant, not the default.
        const = action.const
        entry["const"] = const if isinstance(const, (str, int, float, bool, type(None))) else repr(const)
    if "Deprecated" in type(action).__name__:
        entry["deprecated"] = True
        if getattr(action, "new_flag", None):
            entry["instead"] = action.new_flag
    if entry["kind"] == "store_const":
        const = getattr(action, "const_value", action.const)
        entry["const"] = const if isinstance(const, (str, int, float, bool, type(None))) else str(getattr(const, "value", const))
        if action.nargs != 0 and not isinstance(action, argparse._StoreConstAction):
            entry["takes_value"] = True  # e.g. "--monokernel-backend amd": the value is checked, the constant stored
    if entry["kind"] == "ignored":
        refused = getattr(action, "error_message", None) or _raises(action)
        if refused:
            entry["refused"] = str(refused)
    if _custom(action):
        entry["action"] = type(action).__name__
    return entry


def _raises(action: argparse.Action) -> str | None:
    """What the release's own action raises when argparse calls it, if it raises (0.5.3-0.5.4's
    DeprecatedAction: ``ValueError(help)``, which stops SGLang before it starts)."""
    import contextlib
    import io

    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            action(argparse.ArgumentParser(), argparse.Namespace(), [], action.option_strings[0])
    except Exception as exc:  # noqa: BLE001 (the release's own exception, whatever it is)
        return str(exc)
    return None


def _custom(action: argparse.Action) -> bool:
    """An action class of SGLang's own (``LoRAPathAction``, ``DeprecatedAction``, ...), not one
    of argparse's (``store``, ``store_true``, ``BooleanOptionalAction``)."""
    return type(action).__module__ != argparse.__name__


def _action_source(action: argparse.Action) -> str | None:
    """What a custom action does with a flag's values, as the release's own source of its class."""
    try:
        return textwrap.dedent(inspect.getsource(type(action))).rstrip() + "\n"
    except (OSError, TypeError):
        return None


def cli_table() -> dict:
    """Every SGLang flag by the field it sets: spellings, kind, nargs, type, choices, and the
    release's own action class when it is not one of argparse's.

    The first action of a field is its entry; further actions on the same field (deprecated
    spellings such as ``--cuda-graph-max-bs`` for ``cuda_graph_max_bs_decode``, or a legacy
    switch that stores a constant) are its ``aliases``, each with its own kind."""
    from sglang.srt.server_args import ServerArgs
    from sglang.version import __version__

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    fields: dict = {}
    converters: dict = {}
    actions: dict = {}
    for action in parser._actions:
        if not action.option_strings or action.dest == "help":
            continue
        entry = _entry(action)
        source = _converter_source(action.type)
        if source is not None:
            converters[entry["type"]] = source
        if "action" in entry:
            actions[entry["action"]] = _action_source(action)
        if action.dest in fields:
            fields[action.dest].setdefault("aliases", []).append(entry)
        else:
            fields[action.dest] = entry
    return {
        "sglang_version": __version__,
        "source": "argparse table of sglang.srt.server_args.ServerArgs.add_cli_args, written by tests/real_sglang/sglang_offline.py cli-table",
        # What the release's --config merger computes from this parser.
        "config": _config_merger(parser),
        "fields": dict(sorted(fields.items())),
        # Each converter a flag's value goes through (its name is the entry's "type"), as
        # the release's own source; the builtins int, str and float are left out.
        "converters": dict(sorted(converters.items())),
        # Each of the release's own argparse action classes a flag uses (its name is the
        # entry's "action"), as the release's own source: what it stores of the values.
        "actions": dict(sorted(actions.items())),
    }


def _config_merger(parser: argparse.ArgumentParser) -> dict:
    """The keys the release's ``ConfigArgumentMerger`` writes as bare flags (store_true) and
    the keys it refuses ("Unsupported config option"), with the refused action's class, as
    the merger itself computes them from this parser."""
    import inspect

    try:
        from sglang.srt.utils.server_args_config_parser import ConfigArgumentMerger
    except ImportError:
        try:
            from sglang.srt.server_args_config_parser import ConfigArgumentMerger
        except ImportError:
            # Before 0.5.3 there is no --config flag and no merger: nothing to record.
            return {"merger": False, "store_true": [], "unsupported": {}}
    if "parser" not in inspect.signature(ConfigArgumentMerger.__init__).parameters:
        # 0.5.5-0.5.7: prepare_server_args hands over a list of boolean actions it computes
        # from an attribute argparse actions do not have: always empty, nothing refused.
        return {"store_true": [], "unsupported": {}}
    merger = ConfigArgumentMerger(parser)
    unsupported = {key: type(action).__name__ for key, action in merger.unsupported_actions.items()}
    return {"store_true": sorted(set(merger.store_true_actions)), "unsupported": dict(sorted(unsupported.items()))}


def _serve_parsed(argv: list[str]) -> dict:
    """What ``sglang serve ARGV`` of this release makes of its arguments: the release's own
    ``sglang.cli.main.main()`` (its sub-command parser, then ``serve``'s rewrites: ``--model-type``
    removed, a positional model turned into ``--model-path``, its model-path check), up to the end
    of ``prepare_server_args``'s argument parsing. Diffusion-model detection (which reads the
    model's files or a model hub) is stubbed to "not a diffusion model"; the child-process cleanup
    is not run."""
    import importlib.util

    if importlib.util.find_spec("sglang.cli") is None or importlib.util.find_spec("sglang.cli.main") is None:
        raise LookupError("this release has no 'sglang serve' (no sglang.cli.main)")
    try:
        import sglang.cli.generate  # noqa: F401
    except ModuleNotFoundError as missing:
        # Before 0.5.9 cli/main.py imports the diffusion 'generate' command at the top, which
        # needs diffusers (not installed here); 'sglang serve' never calls it.
        if str(missing.name).startswith("sglang"):
            raise
        absent = missing.name  # the except clause unbinds `missing` when it ends
        import types

        standin = types.ModuleType("sglang.cli.generate")

        def generate(args, extra_argv):  # noqa: ANN001
            raise RuntimeError(f"'sglang generate' needs {absent}, not installed here")

        standin.generate = generate  # type: ignore[attr-defined]
        sys.modules["sglang.cli.generate"] = standin
    from sglang.cli import main as cli_main
    from sglang.cli import serve as cli_serve
    from sglang.cli import utils as cli_utils

    def not_diffusion(*args, **kwargs) -> bool:  # noqa: ANN002, ANN003
        return False

    def no_cleanup(*args, **kwargs) -> None:  # noqa: ANN002, ANN003
        return None

    for module in (cli_serve, cli_utils):
        for name in ("get_is_diffusion_model", "is_registered_native_pipeline"):
            if hasattr(module, name):
                setattr(module, name, not_diffusion)
    if hasattr(cli_serve, "kill_process_tree"):
        cli_serve.kill_process_tree = no_cleanup

    parse_args, error = argparse.ArgumentParser.parse_args, argparse.ArgumentParser.error

    def stop_after_parsing(self, args=None, namespace=None):  # noqa: ANN001
        raise _Parsed(parse_args(self, args, namespace))

    def raise_instead_of_exit(self, message):  # noqa: ANN001
        raise _ArgparseError(message)

    saved_argv = sys.argv
    sys.argv = ["sglang", "serve", *argv]
    argparse.ArgumentParser.parse_args = stop_after_parsing  # type: ignore[method-assign]
    argparse.ArgumentParser.error = raise_instead_of_exit  # type: ignore[method-assign]
    try:
        cli_main.main()
    except _Parsed as parsed:
        return vars(parsed.namespace)
    finally:
        sys.argv = saved_argv
        argparse.ArgumentParser.parse_args = parse_args  # type: ignore[method-assign]
        argparse.ArgumentParser.error = error  # type: ignore[method-assign]
    raise RuntimeError("sglang serve returned without parsing the server arguments")


def entries(cases: list[dict]) -> dict:
    """Each case ``{"name", "argv", "entry": "launch_server"|"serve", "files": {NAME: text}}``
    as the release's real entry point reads it: ``{"parsed": namespace}`` or ``{"error": one
    line}``. ``{tmp}`` in an argv word is the fresh directory the case's files are written to
    (``{NAME}``, the path of file ``NAME``, is ``{tmp}/NAME``); the directory is turned back
    into ``{tmp}`` in the answer."""
    import tempfile

    out = {}
    for case in cases:
        with tempfile.TemporaryDirectory(prefix="sglang-case-") as tmp:
            paths = {}
            for name, text in (case.get("files") or {}).items():
                path = os.path.join(tmp, name)
                with open(path, "w") as f:
                    f.write(text)
                paths[name] = path
            argv = []
            for word in case["argv"]:
                for name, path in paths.items():
                    word = word.replace("{" + name + "}", path)
                argv.append(word.replace("{tmp}", tmp))
            try:
                if case.get("entry", "launch_server") == "serve":
                    answer = {"parsed": _serve_parsed(argv)}
                else:
                    answer = {"parsed": _parsed(argv)}
                answer = json.loads(json.dumps(answer, default=repr))
            except BaseException as exc:  # argparse's SystemExit too
                answer = {"error": _one_line(exc)}
            out[case["name"]] = json.loads(json.dumps(answer).replace(tmp, "{tmp}"))
    return out


def parse(cases: list[dict]) -> dict:
    """Only SGLang's argparse (any release, see flag_table_live.py): what it made of each argv."""
    out = {}
    for case in cases:
        try:
            out[case["name"]] = {"parsed": json.loads(json.dumps(_parsed(list(case["argv"])), default=repr))}
        except BaseException as exc:  # argparse's SystemExit too
            out[case["name"]] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
    return out


def resolve(cases: list[dict]) -> dict:
    from sglang.srt.server_args import prepare_server_args

    out = {}
    for case in cases:
        entry: dict = {}
        saved = dict(os.environ)
        os.environ.update(case.get("env") or {})
        try:
            entry["parsed"] = json.loads(json.dumps(_parsed(list(case["argv"])), default=repr))
            args = prepare_server_args(list(case["argv"]))
            args.resolve_once()
            entry["resolved"] = json.loads(json.dumps(args.resolved_dict(), default=repr))
        except BaseException as exc:  # argparse's SystemExit too
            entry["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        finally:
            os.environ.clear()
            os.environ.update(saved)
        out[case["name"]] = entry
    return out


if __name__ == "__main__":
    command = sys.argv[1]
    if os.environ.get("SGLANG_FROM_WHEEL"):
        _tolerate_known_transformers_configs()
    if command == "entry":
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        _refuse_the_network()
    if command == "cli-table":
        result = cli_table()
    elif command == "release":
        result = {"table": cli_table(), "parse": parse(json.load(sys.stdin))}
    elif command == "entry":
        result = {"table": cli_table(), "entry": entries(json.load(sys.stdin))}
    elif command == "resolve":
        result = resolve(json.load(sys.stdin))
    else:
        raise SystemExit(f"unknown command {command!r}")
    json.dump(result, sys.stdout, indent=None, sort_keys=True, separators=(",", ":"))
    sys.stdout.write("\n")
