"""pytest hooks for baselines: ``--sglang-baseline DIR`` adds a check per host that compares the
live configuration document with the baseline file of its deployment key;
``--sglang-update-baseline`` writes new and changed baselines at the end of the run (the
controller only, once) and prints what changed."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.secrets import scrub
from pytest_sglang.judge.baseline.store import BENCH_SUFFIX, baseline_file, ci_set, key_problem, missing_line
from pytest_sglang.plugin.checks import CHECK_PROPERTY, Check, Outcome, add_items, session_state

CHECK_NAME = "sglang-baseline"
KEY_INI = "sglang_baseline_key"
POLICY_INI = "sglang_baseline_policy"
UPDATE_VALUES = ("yes", "force")
WORKER_OUTPUT = "sglang_baseline_pending"
MAX_LINES_PER_FILE = 60


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sglang", "SGLang server configuration")
    group.addoption(
        "--sglang-baseline",
        dest="sglang_baseline",
        default=None,
        metavar="DIR",
        help="compare each host with its baseline file in DIR (one per deployment key) and fail on a difference (ini: sglang_baseline)",
    )
    group.addoption(
        "--sglang-update-baseline",
        dest="sglang_update_baseline",
        nargs="?",
        const="yes",
        default=None,
        metavar="force",
        help="write new and changed baselines at the end of the run and print what changed; refused when CI is set unless =force",
    )
    parser.addini("sglang_baseline", "directory of baseline files (one per deployment key)", default="")
    parser.addini(KEY_INI, "deployment key per host spec, one 'SPEC = KEY' per line (default: model x GPU x SGLang version x tp)", type="linelist", default=[])
    parser.addini(POLICY_INI, "per-field baseline policy, one 'PATH = ignore | absolute N | relative N% | waive until YYYY-MM-DD: why' per line", type="linelist", default=[])


@dataclass
class Pending:
    """A baseline file to write at the end of the run."""

    key: str
    file: str
    host: str
    content: dict[str, Any]
    previous: dict[str, Any] | None


@dataclass
class BaselineState:
    directory: Path
    update: str | None
    keys: dict[str, str]
    policy: Any  # compare.Policy from the ini file
    pending: list[Pending] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    unreadable_hosts: list[str] = field(default_factory=list)
    checks_run: int = 0
    written: bool = False
    write_refused: bool = False  # a baseline file could not be written (a link or a FIFO in its place...)
    summary: list[str] = field(default_factory=list)


STATE = pytest.StashKey[BaselineState]()
# Benchmark baselines live beside the configuration baselines, one KEY.bench.json per key.
UPDATE_OPTION = "--sglang-update-baseline"


def respell_update_option(args: list[str]) -> list[str]:
    """``args`` with each word argparse would take as the value of a bare
    ``--sglang-update-baseline`` (``pytest --sglang-update-baseline tests/``) given back as a
    test path: the option is spelt ``--sglang-update-baseline=yes`` there, so the word after it
    is a positional argument again. Only ``force`` is kept as the value when it follows with a
    space (the option's one documented value); ``=force`` and ``=anything`` are left to the
    option, and nothing after ``--`` is looked at."""
    out = list(args)
    for i, word in enumerate(out[:-1]):
        if word == "--":
            break
        following = out[i + 1]
        if word == UPDATE_OPTION and following != "force" and not following.startswith("-"):
            out[i] = f"{UPDATE_OPTION}=yes"
    return out


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """``pytest --sglang-update-baseline tests/`` runs the tests in ``tests/``: argparse reads the
    word after an option with an optional value as that value, so the arguments are respelt
    (:func:`respell_update_option`) before pytest parses them for good, and the early
    parse's test paths (which pick the initial conftests) are taken from them again."""
    fixed = respell_update_option(args)
    if fixed != args:
        args[:] = fixed
        again = parser.parse_known_args(args)  # a fresh namespace: options that append are not doubled
        early = early_config.known_args_namespace
        early.file_or_dir, early.sglang_update_baseline = again.file_or_dir, again.sglang_update_baseline


def pytest_configure(config: pytest.Config) -> None:
    update = config.getoption("sglang_update_baseline")
    option_dir = config.getoption("sglang_baseline")
    ini_dir = config.getini("sglang_baseline")
    if update is not None and update not in UPDATE_VALUES:
        raise pytest.UsageError(f"--sglang-update-baseline takes no value or =force, not {update!r}")
    if not option_dir and not ini_dir:
        if update is not None:
            raise pytest.UsageError("--sglang-update-baseline needs a baseline directory: give --sglang-baseline DIR (or the sglang_baseline ini key)")
        return
    if update == "yes" and ci_set():
        raise pytest.UsageError(
            "--sglang-update-baseline is refused when the CI environment variable is set (a gate must not rewrite what it checks): "
            "update baselines locally, or pass --sglang-update-baseline=force"
        )
    if option_dir:
        if str(option_dir).strip() == "-":
            raise pytest.UsageError("--sglang-baseline -: give the baseline folder (standard input is not read)")
        directory = Path(option_dir)
        if not directory.is_absolute():
            directory = Path(config.invocation_params.dir) / directory
    else:
        base = config.inipath.parent if config.inipath else config.rootpath
        directory = base / ini_dir
    if directory.exists() and not directory.is_dir():
        raise pytest.UsageError(f"--sglang-baseline {directory}: is not a directory")
    from pytest_sglang.judge.baseline.compare import Policy
    from pytest_sglang.judge.baseline.document import safe_name
    from pytest_sglang.judge.baseline.store import load_baseline

    try:
        policy = Policy.from_lines(config.getini(POLICY_INI), f"ini {POLICY_INI}")
        if directory.is_dir():
            for path in sorted(p for p in directory.glob("*.json") if not p.name.endswith(BENCH_SUFFIX)):
                load_baseline(path)  # a broken file or policy entry stops the run here, named
    except SpecError as exc:
        raise pytest.UsageError(scrub(str(exc))) from None
    keys: dict[str, str] = {}
    from pytest_sglang.target.spec import parse_spec

    for line in config.getini(KEY_INI):
        if not line.strip() or line.strip().startswith("#"):
            continue
        spec_text, sep, key = line.rpartition("=")
        spec_text, key = spec_text.strip(), key.strip()
        if not sep or not spec_text or not key:
            raise pytest.UsageError(scrub(f"ini {KEY_INI} entry {line.strip()!r}: write SPEC = KEY, e.g. sim://qwen35-122b-a10b-4xrtx6000-baseline = qwen35-prod"))
        if key_problem(key):
            raise pytest.UsageError(scrub(f"ini {KEY_INI} entry {line.strip()!r}: {key_problem(key)} (e.g. {safe_name(key)})"))
        try:
            display = parse_spec(spec_text).display
        except SpecError as exc:
            from pytest_sglang.plugin.settings import spoken

            raise pytest.UsageError(scrub(f"ini {KEY_INI} entry {line.strip()!r}: {spoken(str(exc))}")) from None
        keys[display] = key
    state = BaselineState(directory=directory, update=update, keys=keys, policy=policy)
    config.stash[STATE] = state
    config.pluginmanager.register(BaselinePlugin(config, state), "sglang-baseline")


def deployment_key(state: BaselineState, display: str, doc: dict[str, Any]) -> str:
    """The key a host's baseline files go by: the ini mapping, else the document's own."""
    from pytest_sglang.judge.baseline.document import default_key

    return state.keys.get(display) or default_key(doc)


def _state(config: pytest.Config) -> BaselineState | None:
    return config.stash.get(STATE, None)


def _display_path(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _run(config: pytest.Config, spec: Any) -> Outcome:
    from pytest_sglang.judge.baseline.compare import Policy, changes, expired_waivers, summary
    from pytest_sglang.judge.baseline.document import document
    from pytest_sglang.judge.baseline.store import content_changed, file_content, load_baseline

    state = _state(config)
    assert state is not None
    target = session_state(config).target(spec)
    live = document(target)
    key = deployment_key(state, spec.display, live)
    path = baseline_file(state.directory, key)
    shown = _display_path(path)
    record: dict[str, Any] = {"key": key, "file": path.name, "path": shown, "diffs": [], "groups": []}
    if not path.exists():
        if state.update:
            state.pending.append(Pending(key, str(path), spec.display, file_content(live, key, None), None))
            return Outcome(notes=[f"no baseline yet: {shown} is written at the end of the run"], record={**record, "baseline": "new"})
        missing = missing_line(spec.display, shown)
        return Outcome(
            failures=[missing],
            record={**record, "baseline": "missing", "message": missing},
            hint=f"the deployment key is {key}; to check this host against another deployment's baseline, map it to that key in the ini file: {KEY_INI} = {spec.display} = KEY",
        )
    baseline = load_baseline(path)
    policy = Policy.from_mapping(baseline.get("policy"), f"baseline {path.name} policy") + state.policy
    found = changes(baseline, live, policy)
    diffs = sorted((d for c in found for d in c.members), key=lambda d: d.path)
    record["diffs"] = [d.to_dict() for d in diffs]
    record["groups"] = [c.to_dict() for c in found]
    record["baseline"] = "found"
    record["summary"] = summary(found)
    failing = [c for c in found if c.failing]
    notes = [_passing(c) for c in found if not c.failing]
    notes += [
        f"waiver for {r.pattern} expired on {r.until} and nothing differs there now: remove it ({r.origin})"
        for r in expired_waivers(policy)
        if not any(d.policy == r.pattern or d.path == r.pattern for d in diffs)
    ]
    if state.update:
        content = file_content(live, key, baseline)
        if content_changed(baseline, content):
            state.pending.append(Pending(key, str(path), spec.display, content, baseline))
        return Outcome(notes=[*(c.text() for c in failing), *notes], record={**record, "updating": bool(failing)})
    return Outcome(
        failures=[c.text() for c in failing],
        notes=notes,
        record=record,
        hint=(
            f"baseline {shown}: if the change is intended, rewrite it with --sglang-update-baseline, or add a policy entry "
            f"(ignore, absolute/relative tolerance, or a waiver with an expiry date) to its \"policy\" section or to {POLICY_INI}"
        )
        if failing
        else None,
    )


def _passing(change: Any) -> str:
    """A change the policy lets pass, on one line with its fields."""
    return f"{change.headline()}: {', '.join(change.fields)}" if len(change.members) > 1 else change.headline()


# A failure is a change (with its fields) or a missing baseline file: each is one problem.
BASELINE = Check(name=CHECK_NAME, heading="{n} problem(s) with the SGLang baseline", run=_run)


class BaselinePlugin:
    """The run's baseline hooks, registered once a baseline directory is given."""

    def __init__(self, config: pytest.Config, state: BaselineState) -> None:
        self.config, self.state = config, state

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
        hosts = session_state(config)
        if hosts is None or not hosts.specs:
            return
        add_items(session, items, BASELINE, hosts.specs)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """On the controller (and in a run without xdist): which baseline files the checks used."""
        if report.when != "call":
            return
        for name, record in getattr(report, "user_properties", ()):
            if name != CHECK_PROPERTY or not isinstance(record, dict) or record.get("check") != CHECK_NAME:
                continue
            self.state.checks_run += 1
            if record.get("file"):
                self.state.used.add(str(record["file"]))
            elif record.get("error"):
                self.state.unreadable_hosts.append(str(record.get("host")))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist controller: the baselines a worker's checks would write."""
        output = getattr(node, "workeroutput", None) or {}
        for item in output.get(WORKER_OUTPUT, []):
            self.state.pending.append(Pending(item["key"], item["file"], item["host"], item["content"], item["previous"]))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        state = self.state
        if not state.update:
            return
        if hasattr(self.config, "workerinput"):
            self.config.workeroutput[WORKER_OUTPUT] = _pending_json(state.pending)  # type: ignore[attr-defined]
            return
        if not state.written:  # the controller, once
            state.written = True
            state.summary = _write(state)
            if state.write_refused and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a baseline that could not be written fails the update

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        state = self.state
        if hasattr(config, "workerinput"):
            return
        lines = list(state.summary)
        if state.update and not state.pending and state.checks_run:
            lines.append(f"no baseline in {_display_path(state.directory)} needed writing: every host matches its baseline")
        if state.checks_run and state.directory.is_dir():
            written = {Path(p.file).name for p in state.pending}
            unused = sorted(p.name for p in state.directory.glob("*.json") if p.name not in state.used and p.name not in written and not p.name.endswith(BENCH_SUFFIX))
            if unused:
                lines.append(f"baseline file(s) in {_display_path(state.directory)} that no host used: {', '.join(unused)}")
                if state.unreadable_hosts:
                    lines.append(f"  ({len(state.unreadable_hosts)} host(s) could not be read, so their baselines could not be matched: {', '.join(state.unreadable_hosts)})")
        if not lines:
            return
        terminalreporter.write_sep("-", "SGLang baselines")
        for line in lines:
            terminalreporter.write_line(scrub(line))


def _pending_json(pending: list[Pending]) -> list[dict[str, Any]]:
    return [{"key": p.key, "file": p.file, "host": p.host, "content": p.content, "previous": p.previous} for p in pending]


def changed_lines(found: list[Any], limit: int = MAX_LINES_PER_FILE) -> list[str]:
    """The lines of each change, indented, whole changes only while they fit in ``limit`` lines."""
    lines: list[str] = []
    for i, change in enumerate(found):
        text = [f"  {line}" for line in change.lines()]
        if lines and len(lines) + len(text) > limit:
            rest = found[i:]
            lines.append(f"  ... and {len(rest)} more change(s) ({sum(len(c.members) for c in rest)} field(s)): {', '.join(c.title for c in rest)}")
            break
        lines += text
    return lines


def _write(state: BaselineState) -> list[str]:
    from pytest_sglang.judge.baseline.compare import Policy, changes, compare, summary
    from pytest_sglang.judge.baseline.store import write_baseline

    lines: list[str] = []
    by_file: dict[str, list[Pending]] = {}
    for p in state.pending:
        by_file.setdefault(p.file, []).append(p)
    for file, entries in sorted(by_file.items()):
        path = Path(file)
        shown = _display_path(path)
        first = entries[0]
        clashing = [e for e in entries[1:] if [d for d in compare(first.content, e.content, Policy()) if d.failing]]
        if clashing:
            hosts = ", ".join(sorted({first.host, *(e.host for e in clashing)}))
            lines.append(f"NOT written {shown}: hosts {hosts} share the key {first.key} but their configurations differ; give them different keys ({KEY_INI}) or make them agree")
            continue
        try:
            write_baseline(path, first.content)
        except SpecError as exc:  # a symbolic link or a non-regular file where the baseline goes, a read-only folder
            lines.append(f"NOT written {shown}: {exc}")
            state.write_refused = True
            continue
        if first.previous is None:
            lines.append(f"wrote {shown} (new, key {first.key}, from {first.host})")
            continue
        found = changes(first.previous, first.content, Policy())
        if not found:
            lines.append(f"updated {shown} (from {first.host}): sources or notes changed, no compared value")
            continue
        lines.append(f"updated {shown} (from {first.host}): {summary(found)} changed")
        lines += changed_lines(found)
    return lines
