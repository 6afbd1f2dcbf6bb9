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


def _path(config: pytest.Config, name: str, option: str) -> Path | None:
    value = setting(config, name)
    if not value:
        return None
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

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        from pytest_sglang.plugin.report_build import build_report
        from pytest_sglang.render.report.write import write_reports

        # session.exitstatus: what pytest will exit with, after the hooks before this one
        # (this one runs last) had their say.
        status = int(getattr(session, "exitstatus", exitstatus))
        document = build_report(self.config, self.reports, self.collect_errors, status, self.collect_skipped)
        problems = write_reports(document, self.json_path, self.md_path, self.html_path)
        for path in (self.json_path, self.html_path, self.md_path):
            if path is not None and not any(str(path) in p for p in problems):
                self.messages.append(f"sglang: report written to {path}")
        self.messages += [f"sglang: {problem}" for problem in problems]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.messages:
            terminalreporter.write_line(line)


def pytest_configure(config: pytest.Config) -> None:
    json_path = _path(config, "sglang_report_json", "--sglang-report-json")
    md_path = _path(config, "sglang_report_md", "--sglang-report-md")
    html_path = _path(config, "sglang_report_html", "--sglang-report-html")
    if hasattr(config, "workerinput") or (json_path is None and md_path is None and html_path is None):
        return  # only the controller writes, once
    config.pluginmanager.register(ReportCollector(config, json_path, md_path, html_path), "sglang-report")


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
    from pytest_sglang.target.spec import HostSpec
    from pytest_sglang.plugin.report_build import host_properties

    if not isinstance(spec, HostSpec):
        return  # no host (--sglang-allow-no-host), or a check of the whole run

    item.user_properties.extend(host_properties(item.config, spec))
