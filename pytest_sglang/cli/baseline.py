"""``pytest-sglang show``, ``diff`` and ``baseline``: the configuration document of a target,
the typed differences between two of them, and baseline files outside pytest.

Exit codes: ``show`` 0; ``diff`` 0 same, 1 differ; ``baseline`` 0 matches (or written), 1 differs
or missing; 2 bad usage or input; 3 a target could not be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.secrets import scrub, scrub_object

POLICY_HELP = "a policy entry, as in the ini file: 'PATH = ignore', 'PATH = relative 5%%', 'PATH = waive until YYYY-MM-DD: why' (repeatable)"


def add_parser(subparsers: Any) -> None:
    show = subparsers.add_parser(
        "show",
        help="a target's effective configuration, each value with its source",
        description="Print a target's effective configuration with the source of each value, and what explain found. "
        "--json prints the configuration document a baseline file holds.",
    )
    show.add_argument("target", metavar="TARGET", help="http(s)://HOST:PORT, sim://PROFILE or replay:FILE")
    _target_options(show, host_access=True)
    show.add_argument("--json", action="store_true", help="print the configuration document (JSON)")
    show.add_argument("--volatile", action="store_true", help="with --json: also the fields left out of baselines (ports, host names, seeds, timestamps), under \"volatile\"")
    show.set_defaults(func=run_show)

    diff = subparsers.add_parser(
        "diff",
        help="typed field-level differences between two targets, captures or baseline files",
        description="Compare two configurations field by field. A and B are each a live target (http(s)://HOST:PORT, "
        "sim://PROFILE), a capture (replay:FILE) or a baseline file (*.json). A baseline file's policy applies. "
        "Exit 0 when they agree, 1 when they differ.",
    )
    diff.add_argument("a", metavar="A", help="the reference: target spec, replay:FILE or baseline FILE.json")
    diff.add_argument("b", metavar="B", help="the one compared with it")
    _target_options(diff, host_access=False)
    diff.add_argument("--policy", action="append", default=[], metavar="ENTRY", help=POLICY_HELP)
    diff.add_argument("--json", action="store_true", help="print the differences as JSON")
    diff.set_defaults(func=run_diff)

    base = subparsers.add_parser(
        "baseline",
        help="check a target against its baseline file, or write it (--update)",
        description="Check a target against the baseline file of its deployment key in DIR (exit 0 matches, 1 differs "
        "or missing), or write it with --update (refused when CI is set, unless --force).",
    )
    base.add_argument("target", metavar="TARGET", help="http(s)://HOST:PORT, sim://PROFILE or replay:FILE")
    base.add_argument("--dir", required=True, metavar="DIR", help="the baseline directory")
    base.add_argument("--key", metavar="KEY", help="the deployment key (default: model x GPU x SGLang version x tp)")
    base.add_argument("--update", action="store_true", help="write the baseline when it is new or changed, and print what changed")
    base.add_argument("--force", action="store_true", help="with --update: write even when the CI environment variable is set")
    base.add_argument("--policy", action="append", default=[], metavar="ENTRY", help=POLICY_HELP)
    _target_options(base, host_access=True)
    base.add_argument("--json", action="store_true", help="print the result as JSON")
    base.set_defaults(func=run_baseline)


def _target_options(p: argparse.ArgumentParser, *, host_access: bool) -> None:
    from pytest_sglang.cli.main import add_target_options

    add_target_options(p, host_access=host_access)


def _connect(spec: str, args: argparse.Namespace) -> Any:
    from pytest_sglang.cli.main import connect_target

    return connect_target(spec, args)


def _print(text: str) -> None:
    print(scrub(text))


def _print_json(data: Any) -> None:
    print(json.dumps(scrub_object(data), indent=2, sort_keys=True, ensure_ascii=False))


# ---- show -----------------------------------------------------------------------------------------
def run_show(args: argparse.Namespace) -> int:
    from pytest_sglang.judge.baseline.document import document

    if args.volatile and not args.json:
        raise SpecError("--volatile is for --json")
    with _connect(args.target, args) as target:
        doc = document(target, include_volatile=args.volatile)
        header = f"{target.name}: {target.describe()}"
    if args.json:
        _print_json(doc)
        return 0
    lines = [header, "", "effective configuration (value, then where it came from):"]
    effective = doc.get("effective") or {}
    width = max((len(n) for n in effective), default=0)
    for name in sorted(effective):
        entry = effective[name]
        extra = ""
        if "requested" in entry:
            extra = f"; requested {entry['requested']!r} ({entry.get('requested_source')})"
        if entry.get("note"):
            extra += f"; {entry['note']}"
        lines.append(f"  {name.ljust(width)} = {entry.get('value')!r}  ({entry.get('source')}{extra})")
    findings = doc.get("findings") or []
    if findings:
        lines += ["", "explain findings:"]
        lines += [f"  {f['severity'].upper():7} [{f['id']}] {f['summary']}" for f in findings]
    lines += ["", f"{len(doc.get('server_args') or {})} server arguments compared in baselines (--json shows the whole document)"]
    _print("\n".join(lines))
    return 0


# ---- diff -----------------------------------------------------------------------------------------
def _side(text: str, args: argparse.Namespace) -> tuple[dict[str, Any], bool]:
    """A document and whether it came from a baseline file."""
    from pytest_sglang.judge.baseline.document import document
    from pytest_sglang.judge.baseline.store import load_baseline

    if text.strip() == "-":
        raise SpecError("diff reads no standard input: give A and B as targets, replay:FILE captures or baseline FILE.json files")
    if "://" not in text and not text.startswith("replay:") and text.endswith(".json"):
        if not Path(text).exists():
            raise SpecError(f"{text}: no such baseline file (a capture is given as replay:FILE)")
        try:
            return load_baseline(text), True
        except SpecError as exc:
            if "not a pytest-sglang baseline" in str(exc):
                raise SpecError(f"{exc}; for a capture, write replay:{text}") from None
            raise
    with _connect(text, args) as target:
        return document(target), False


def _policy(doc: dict[str, Any] | None, entries: list[str], origin: str) -> Any:
    from pytest_sglang.judge.baseline.compare import Policy

    base = Policy.from_mapping(doc.get("policy"), origin) if doc is not None else Policy()
    return base + Policy.from_lines(entries, "--policy")


def _fields(found: list[Any]) -> list[Any]:
    return sorted((d for c in found for d in c.members), key=lambda d: d.path)


def _changes_text(found: list[Any]) -> list[str]:
    """Each change, its fields under it: the failing changes first."""
    return [f"  {line}" for change in found for line in change.lines()]


def _within_policy(found: list[Any]) -> str:
    passing = [c for c in found if not c.failing]
    return f"; {len(passing)} more within policy" if passing else ""


def run_diff(args: argparse.Namespace) -> int:
    from pytest_sglang.judge.baseline.compare import changes, summary

    policy = _policy(None, args.policy, "")  # bad entries fail before any target is read
    a, a_is_file = _side(args.a, args)
    b, b_is_file = _side(args.b, args)
    owner = a if a_is_file else b if b_is_file else None
    policy = _policy(owner, args.policy, f"baseline {args.a if a_is_file else args.b} policy")
    found = changes(a, b, policy)
    failing = [c for c in found if c.failing]
    if args.json:
        _print_json({"a": args.a, "b": args.b, "same": not failing, "diffs": [d.to_dict() for d in _fields(found)], "groups": [c.to_dict() for c in found]})
    elif not found:
        _print(f"{args.a} and {args.b}: the same configuration")
    else:
        _print("\n".join([f"{args.a} -> {args.b}: {summary(found)} differ{_within_policy(found)}", *_changes_text(found)]))
    return 1 if failing else 0


# ---- baseline -------------------------------------------------------------------------------------
def run_baseline(args: argparse.Namespace) -> int:
    from pytest_sglang.judge.baseline.compare import Policy, changes, summary
    from pytest_sglang.judge.baseline.document import default_key, document, safe_name
    from pytest_sglang.judge.baseline.store import baseline_file, ci_set, content_changed, file_content, key_problem, load_baseline, missing_line, write_baseline

    if args.force and not args.update:
        raise SpecError("--force is for --update")
    if args.update and ci_set() and not args.force:
        raise SpecError("--update is refused when the CI environment variable is set (a gate must not rewrite what it checks): update baselines locally, or add --force")
    if args.key is not None and key_problem(args.key):
        raise SpecError(f"--key {args.key!r}: {key_problem(args.key)} (e.g. {safe_name(args.key)})")
    directory = Path(args.dir)
    if directory.exists() and not directory.is_dir():
        raise SpecError(f"--dir {directory}: is not a directory")
    extra = Policy.from_lines(args.policy, "--policy")
    with _connect(args.target, args) as target:
        doc = document(target)
        name = target.name
    key = args.key or default_key(doc)
    path = baseline_file(directory, key)
    previous = load_baseline(path) if path.exists() else None
    result: dict[str, Any] = {"target": name, "key": key, "file": str(path)}
    if args.update:
        content = file_content(doc, key, previous)
        found = changes(previous, content, Policy()) if previous is not None else []
        if previous is None:
            result["status"], lines = "written", [f"wrote {path} (new, key {key}, from {name})"]
        elif content_changed(previous, content):
            result["status"] = "updated"
            lines = [f"updated {path} (from {name}): {summary(found)} changed", *_changes_text(found)]
        else:
            result["status"], lines = "unchanged", [f"{path}: unchanged"]
        if result["status"] != "unchanged":
            write_baseline(path, content)
        result["diffs"] = [d.to_dict() for d in _fields(found)]
        result["groups"] = [c.to_dict() for c in found]
        if args.json:
            _print_json(result)
        else:
            _print("\n".join(lines))
        return 0
    if previous is None:
        message = missing_line(name, str(path), "--update")
        result.update(status="missing", diffs=[], groups=[], message=message)
        if args.json:
            _print_json(result)
        else:
            _print(f"{message} (deployment key {key})")
        return 1
    policy = Policy.from_mapping(previous.get("policy"), f"baseline {path.name} policy") + extra
    found = changes(previous, doc, policy)
    failing = [c for c in found if c.failing]
    result.update(status="differ" if failing else "match", diffs=[d.to_dict() for d in _fields(found)], groups=[c.to_dict() for c in found])
    if args.json:
        _print_json(result)
    elif not failing:
        _print("\n".join([f"{name} matches {path}", *_changes_text(found)]))
    else:
        _print("\n".join([f"{name} differs from {path}: {summary(found)}{_within_policy(found)}", *_changes_text(found)]))
    return 1 if failing else 0


if __name__ == "__main__":  # pragma: no cover
    from pytest_sglang.cli.main import main

    sys.exit(main(["baseline", *sys.argv[1:]]))
