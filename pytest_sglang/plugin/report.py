"""pytest hooks for reports: ``--sglang-report-json``, ``--sglang-report-md``,
``--sglang-report-html``, JUnit properties.

Every test that uses an SGLang host (and every built-in check of one host) gets the
properties ``sglang_host``, ``sglang_version``, ``sglang_gpu`` and ``sglang_model`` in its
``user_properties``: they appear in ``--junitxml`` and travel with the report under xdist.
The controller gathers every test report (and the ``sglang.check`` records of the built-in
checks) and writes the reports once, at the end of the session."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Generator

import pytest

from pytest_sglang.plugin.settings import setting

PROPERTY_NAMES = ("sglang_host", "sglang_version", "sglang_gpu", "sglang_model")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sglang", "SGLang server configuration")
    group.addoption(
        "--sglang-report-json",
        dest="sglang_report_json",
        default=None,
        metavar="PATH",
        help="write the whole run per host as JSON: facts, effective configuration with sources, findings, checks, test results (ini: sglang_report_json)",
    )
    group.addoption(
        "--sglang-report-md",
        dest="sglang_report_md",
        default=None,
        metavar="PATH",
        help="write a short Markdown summary with a promote/hold verdict per host, for a pull request comment (ini: sglang_report_md)",
    )
    group.addoption(
        "--sglang-report-html",
        dest="sglang_report_html",
        default=None,
        metavar="PATH",
        help="write the run as one self-contained HTML page: verdicts, findings, baseline diffs, effective configuration, benchmark charts (ini: sglang_report_html)",
    )
    parser.addini("sglang_report_json", "path of the JSON report", default="")
    parser.addini("sglang_report_html", "path of the HTML report", default="")
    parser.addini("sglang_report_md", "path of the Markdown report", default="")


def _path(config: pytest.Config, name: str, option: str, early: Any = None) -> Path | None:
    """The report path a setting names, absolute. ``early``: the options pytest has parsed so
    far (before the whole command line is), read instead of the final ones."""
    if early is None:
        value = setting(config, name)
    else:
        value = getattr(early, name, None) or str(config.getini(name) or "").strip() or None
    if not value:
        return None
    if str(value).strip() == "-":
        raise pytest.UsageError(f"{option} -: give a file path (a report is written to a file, not to standard output)")
    path = Path(os.path.expanduser(str(value)))
    if not path.is_absolute():
        path = Path(config.invocation_params.dir) / path
    if path.is_dir():
        raise pytest.UsageError(f"{option} {value} is a directory: give a file path, e.g. {option} {Path(str(value)) / ('sglang-report.' + name.rsplit('_', 1)[-1])}")
    return path


class ReportCollector:
    """The controller's view of the run: every test report, then the reports written once."""

    def __init__(self, config: pytest.Config, json_path: Path | None, md_path: Path | None, html_path: Path | None = None) -> None:
        self.config = config
        self.json_path, self.md_path, self.html_path = json_path, md_path, html_path
        self.reports: list[dict[str, Any]] = []
        self.collect_errors: list[str] = []
        self.collect_skipped = 0
        self.messages: list[str] = []
        self.verdict: tuple[str, list[str]] | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from pytest_sglang.plugin.report_build import report_entry

        # pytest's own category for the report, as its summary line counts it.
        status = self.config.hook.pytest_report_teststatus(report=report, config=self.config)
        category = str(status[0]) if isinstance(status, tuple) and status else None
        self.reports.append(report_entry(report, category))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # Counted as pytest's terminal counts them: a failed collector is an error, a skipped
        # module a skip (under xdist the controller receives each once).
        if report.failed:
            self.collect_errors.append(report.nodeid or "collection")
        elif report.skipped:
            self.collect_skipped += 1

    # A wrapper, innermost: what follows the yield runs after every other plugin's
    # sessionfinish (a capture or a baseline that could not be written fails the run there),
    # and before the terminal summary prints these messages.
    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Generator[None, Any, None]:
        yield
        from pytest_sglang.plugin.report_build import EXIT_MEANING, build_report, has_hosts
        from pytest_sglang.render.report.write import write_report_files

        if not self.writes and not has_hosts(self.config):
            return  # no report asked for and no SGLang host: no verdict to give
        status = int(getattr(session, "exitstatus", exitstatus))
        document = build_report(self.config, self.reports, self.collect_errors, status, self.collect_skipped)
        self.verdict = (document["verdict"], list(document["reasons"]))
        if not self.writes:
            return
        # The JSON report, the one CI reads the verdict from, is written last, and only with
        # a verdict that holds once every other report is written.
        problems = write_report_files(document, None, self.md_path, self.html_path)
        if not problems:
            problems = write_report_files(document, self.json_path, None, None)
        written = [p for p in (self.json_path, self.html_path, self.md_path) if p is not None and p not in problems]
        if problems:
            # A report asked for and not written fails the run (as a baseline that cannot be
            # written does); what was written says so, with the run's new exit status.
            failed = status if status != 0 else int(pytest.ExitCode.TESTS_FAILED)
            session.exitstatus = failed
            document = build_report(self.config, self.reports, self.collect_errors, failed, self.collect_skipped)
            generic = f"pytest exited with status {failed} ({EXIT_MEANING[failed]})" if status == 0 else None
            reasons = [reason for reason in document["reasons"] if reason != generic]  # no test failed: the report is why
            document["reasons"] = [f"report not written: {problem}" for problem in problems.values()] + reasons
            again = write_report_files(
                document, *(p if p in written else None for p in (self.json_path, self.md_path, self.html_path))
            )
            problems.update(again)
            written = [p for p in written if p not in again]
            self.verdict = (document["verdict"], list(document["reasons"]))
        self.messages += [f"sglang: report written to {path}" for path in written]
        self.messages += [f"sglang: {problem}" for problem in problems.values()]

    @property
    def writes(self) -> bool:
        return any(path is not None for path in (self.json_path, self.md_path, self.html_path))

    # Outside pytest's own summary: after its failures and its short summary, before its
    # closing counts line, the gate's answer (its causes, then the counts), then where the
    # reports went.
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, Any, None]:
        yield
        if self.verdict is not None:
            verdict, reasons = self.verdict
            terminalreporter.write_sep("=", f"SGLang gate: {verdict.upper()}", bold=True, red=verdict == "hold", green=verdict == "promote", yellow=verdict == "inconclusive")
            for reason in reasons:
                terminalreporter.write_line(reason)
        for line in self.messages:
            terminalreporter.write_line(line)


OPTIONS = {"json": "--sglang-report-json", "md": "--sglang-report-md", "html": "--sglang-report-html"}
_STARTED = pytest.StashKey[bool]()


# As early as a plugin can: once pytest knows the options it can parse, before it parses the
# rest of the command line. A report left by an earlier run is replaced before anything can end
# this run (an option pytest does not know, a bad --sglang-host, a crash), and a path the writer
# would refuse is a usage error before anything runs. (Under xdist each worker does it again,
# with the same outcome: it runs long before the controller writes the run's reports.)
@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    early = early_config.known_args_namespace
    if getattr(early, "help", False) or getattr(early, "version", False) or getattr(early, "markers", False):
        return  # pytest --help, --version and --markers run nothing and write nothing
    _begin(early_config, early)


def _begin(config: pytest.Config, early: Any = None) -> dict[str, Path | None]:
    """The report paths; checked, and the placeholders written, once per process."""
    paths = {kind: _path(config, f"sglang_report_{kind}", option, early) for kind, option in OPTIONS.items()}
    named = {kind: path for kind, path in paths.items() if path is not None}
    if named and not config.stash.get(_STARTED, False):
        _check_paths(config, {OPTIONS[kind]: path for kind, path in named.items()}, early)
        _start(config, named)
        config.stash[_STARTED] = True
    return paths


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or config.option.help or getattr(config.option, "markers", False):
        return  # only the controller writes, once; pytest --help and --markers run nothing
    paths = _begin(config)  # done already, unless this plugin was registered after start-up
    # Always: with SGLang hosts, the terminal summary gives the gate's verdict and its causes.
    config.pluginmanager.register(ReportCollector(config, paths["json"], paths["md"], paths["html"]), "sglang-report")


def _check_paths(config: pytest.Config, paths: dict[str, Path], early: Any = None) -> None:
    """Before anything runs, one usage line for: two outputs at one path (JUnit XML's
    included), a path the writer would refuse (a link, a FIFO, a folder that is a link)."""
    from pytest_sglang.base import files

    named: list[tuple[str, str | os.PathLike[str]]] = [(f"{option} {path}", path) for option, path in paths.items()]
    xml = getattr(early if early is not None else config.option, "xmlpath", None)
    if xml:
        junit = Path(os.path.expanduser(str(xml)))
        named.append((f"--junitxml {xml}", junit if junit.is_absolute() else Path(config.invocation_params.dir) / junit))
    try:
        files.check_distinct(named)
    except files.FileError as exc:
        raise pytest.UsageError(str(exc)) from None
    for option, path in paths.items():
        try:
            files.check_writable(path, what="report")
        except files.FileError as exc:
            raise pytest.UsageError(f"{option}: {exc}") from None


def _start(config: pytest.Config, paths: dict[str, Path]) -> None:
    """Replace each report with the placeholder of a run that has not finished: a report left
    by an earlier run must not survive this one, however this one ends (killed, interrupted, a
    usage error later in start-up). The run's own reports replace it at its end."""
    from pytest_sglang.render.report.write import write_report_files

    problems = write_report_files(placeholder_document(), paths.get("json"), paths.get("md"), paths.get("html"), charts=False)
    if problems:
        raise pytest.UsageError(next(iter(problems.values())))


# Short enough that the Markdown summary shows it whole.
PLACEHOLDER_REASON = "this run has not written its report: it is still running, or it stopped before writing it (its output says why)"


def placeholder_document() -> dict[str, Any]:
    """The report a run writes when it starts: a valid report whose verdict is ``hold``, with
    pytest's exit status for an interrupted run (2) and the reason."""
    from datetime import datetime, timezone

    from pytest_sglang import __version__
    from pytest_sglang.plugin.report_build import REPORT_FORMAT

    counts = dict.fromkeys(("failed", "passed", "skipped", "xfailed", "xpassed", "error"), 0)
    return {
        "format": REPORT_FORMAT,
        "tool": {"name": "pytest-sglang", "version": __version__},
        "created_at": datetime.now(timezone.utc).isoformat(),
        "exit_status": int(pytest.ExitCode.INTERRUPTED),
        "verdict": "hold",
        "reasons": [PLACEHOLDER_REASON],
        "counts": counts,
        "hosts": [],
        "run_checks": [],
        "tests_without_host": [],
        "collection_errors": [],
    }


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """JUnit XML writes a test's properties from its teardown report, each as ``str(value)``:
    there, before it, each of ours becomes a short summary instead of a record's repr. The
    call report keeps the records, which every report format reads."""
    if report.when == "teardown":
        from pytest_sglang.plugin.report_build import junit_properties

        report.user_properties = junit_properties(report.user_properties)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    if call.when == "setup":
        _add_properties(item)
    yield


def _add_properties(item: pytest.Item) -> None:
    """The test's host, SGLang version, GPU and model as properties (once per test)."""
    if any(name == "sglang_host" for name, _ in item.user_properties):
        return
    spec = getattr(getattr(item, "callspec", None), "params", {}).get("_sglang_host")
    if spec is None:
        spec = getattr(item, "spec", None)  # a built-in check of one host
    from pytest_sglang.plugin.report_build import host_properties
    from pytest_sglang.target.spec import HostSpec

    if not isinstance(spec, HostSpec):
        return  # no host (--sglang-allow-no-host), or a check of the whole run

    item.user_properties.extend(host_properties(item.config, spec))
