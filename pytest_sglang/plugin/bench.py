"""pytest hooks for serving benchmarks: ``--sglang-bench``, the ``sglang_bench`` fixture.

Safety first, since a benchmark loads a live server:

- nothing runs unless ``--sglang-bench=smoke|full`` is given (default ``off``: benchmark tests
  are skipped), and the budget caps requests and seconds per level;
- benchmark tests run after every other test of the same process, and never against a host
  whose configuration checks (``--sglang-lint``, ``--sglang-baseline``) failed in this session,
  in any xdist worker;
- one benchmark at a time per host, across xdist workers (a lock file per host);
- a verdict the client's own timing error could change is *inconclusive*: the level is run
  again (twice at most), then the test is skipped with a reason starting "inconclusive on
  HOST:" and a summary line, or fails when ``CI`` is set or ``--sglang-bench-inconclusive=fail``;
- thresholds written as string literals in a benchmark test (``sglang_bench.expect(result,
  "p99 ttft <= 250 ms")``) are read at collection: a misspelt metric is a usage error before
  anything runs.

Each result travels in the test report's ``user_properties`` under ``"sglang.bench"``, so the
JSON and Markdown reports carry it with or without xdist.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_sglang.base import files as _files
from pytest_sglang.base.errors import SGLangError
from pytest_sglang.base.secrets import scrub, scrub_object
from pytest_sglang.plugin.checks import CHECK_PROPERTY
from pytest_sglang.plugin.settings import number, setting, spoken

BENCH_PROPERTY = "sglang.bench"
INCONCLUSIVE_PROPERTY = "sglang.bench.inconclusive"
FIXTURE = "sglang_bench"
MODES = ("off", "smoke", "full")
INCONCLUSIVE_MODES = ("skip", "fail")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sglang", "SGLang server configuration")
    group.addoption(
        "--sglang-bench",
        dest="sglang_bench",
        default=None,
        choices=MODES,
        help="run serving benchmarks (tests using sglang_bench): off (default, they are skipped), smoke (a few requests per level, one run) or full (as written, repeated) (ini: sglang_bench)",
    )
    group.addoption("--sglang-bench-max-requests", dest="sglang_bench_max_requests", default=None, metavar="N", help="at most N requests per benchmark level (ini: sglang_bench_max_requests)")
    group.addoption("--sglang-bench-max-duration", dest="sglang_bench_max_duration", default=None, metavar="SECONDS", help="at most SECONDS per benchmark level (ini: sglang_bench_max_duration)")
    group.addoption("--sglang-bench-processes", dest="sglang_bench_processes", default=None, metavar="N", help="spread each level's load over N client processes")
    group.addoption("--sglang-bench-max-lag", dest="sglang_bench_max_lag", default=None, metavar="MS", help="the client's event-loop lag and send delay (p99) above which a level is inconclusive (default 5, or 5%% of the median TTFT if larger)")
    group.addoption(
        "--sglang-bench-inconclusive",
        dest="sglang_bench_inconclusive",
        default=None,
        choices=INCONCLUSIVE_MODES,
        help="a benchmark the client's own error leaves undecided (after reruns): skip (default) or fail (the default when CI is set) (ini: sglang_bench_inconclusive)",
    )
    group.addoption("--sglang-bench-progress", dest="sglang_bench_progress", action="store_true", default=False, help="show benchmark progress even under -q or when CI is set")
    parser.addini("sglang_bench", "serving benchmarks: off, smoke or full", default="off")
    parser.addini("sglang_bench_max_requests", "at most this many requests per benchmark level", default="")
    parser.addini("sglang_bench_max_duration", "at most this many seconds per benchmark level", default="")
    parser.addini("sglang_bench_processes", "client processes sharing each benchmark level", default="")
    parser.addini("sglang_bench_inconclusive", "an undecided benchmark: skip or fail (fail when CI is set)", default="")
    parser.addini("sglang_bench_max_lag", "client lag (ms, p99) above which a benchmark level is inconclusive", default="")


class BenchPlugin:
    """The run's benchmark state: budget, shared directory, hosts whose configuration failed."""

    def __init__(self, config: pytest.Config) -> None:
        from pytest_sglang.judge.bench.api import Budget

        self.config = config
        mode = setting(config, "sglang_bench") or "off"
        if mode not in MODES:  # the option's choices are argparse's to check; this is the ini
            raise pytest.UsageError(f"ini sglang_bench = {mode!r}: use off, smoke or full")
        self.budget = Budget(
            mode=mode,  # type: ignore[arg-type]
            max_requests=number(config, "sglang_bench_max_requests", unit="requests", whole=True),
            max_duration_s=number(config, "sglang_bench_max_duration"),
            processes=number(config, "sglang_bench_processes", unit="client processes", whole=True),
            max_lag_ms=number(config, "sglang_bench_max_lag", unit="ms"),
        )
        inconclusive = setting(config, "sglang_bench_inconclusive") or None
        if inconclusive is not None and inconclusive not in INCONCLUSIVE_MODES:
            raise pytest.UsageError(f"ini sglang_bench_inconclusive = {inconclusive!r}: use skip or fail")
        from pytest_sglang.judge.baseline.store import ci_set

        # Where nobody watches (CI), an unmeasured gate must not look green.
        self.inconclusive_fails = inconclusive == "fail" or (inconclusive is None and ci_set())
        self.inconclusive: list[str] = []
        # Figures a server answered that are none (NaN, an infinity, out of range): HOST: LEVEL: FAULT.
        self.refused: list[str] = []
        self.failed_hosts: dict[str, str] = {}
        self.notes: list[str] = []
        self._shared: Path | None = None

    # -- a directory every xdist worker of this run shares ----------------------------

    def shared_dir(self) -> Path:
        if self._shared is None:
            factory = self.config._tmp_path_factory  # type: ignore[attr-defined]
            base = factory.getbasetemp()
            root = base.parent if hasattr(self.config, "workerinput") else base
            self._shared = root / "sglang-bench"
            self._shared.mkdir(parents=True, exist_ok=True)
        return self._shared

    def _host_file(self, host: str, suffix: str) -> Path:
        digest = hashlib.sha256(host.encode()).hexdigest()[:16]
        return self.shared_dir() / f"{digest}.{suffix}"

    def mark_failed(self, host: str, why: str) -> None:
        self.failed_hosts.setdefault(host, why)
        # Appended (every worker may add a line), never through a planted link; a file that
        # cannot be written only keeps the other workers from knowing, as before.
        with contextlib.suppress(_files.FileError):
            _files.append_text(self._host_file(host, "failed"), why + "\n", what="benchmark failed-host file")

    def failure_of(self, host: str) -> str | None:
        if host in self.failed_hosts:
            return self.failed_hosts[host]
        with contextlib.suppress(_files.FileError):
            text = _files.read_text(self._host_file(host, "failed"), cap_bytes=_files.MiB, what="benchmark failed-host file", errors="replace", follow=False).strip()
            if text:
                return text.splitlines()[0]
        return None

    def host_lock(self, host: str) -> contextlib.AbstractContextManager[None]:
        """One benchmark at a time against a host, whichever worker runs it."""
        from pytest_sglang.plugin.bench_session import locked

        return locked(self._host_file(host, "lock"))

    # -- hooks --------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> Generator[None, None, None]:
        """Benchmarks last, after the built-in checks other plugins add at the end: the
        configuration of a host is verified before its benchmark loads it."""
        yield
        bench = [item for item in items if FIXTURE in getattr(item, "fixturenames", ())]
        problems: list[str] = []
        for item in bench:
            item.add_marker("sglang_bench")
            problems += _threshold_problems(item)
        if problems:
            raise pytest.UsageError("\n".join(dict.fromkeys(problems)))
        if bench:
            others = [item for item in items if FIXTURE not in getattr(item, "fixturenames", ())]
            items[:] = others + bench

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A failed configuration check of a host (lint, baseline) stops its benchmarks: a
        configuration that is not the one meant to be measured is not worth loading."""
        for name, record in report.user_properties:
            if name == INCONCLUSIVE_PROPERTY:
                self.inconclusive.append(f"{report.nodeid}: {record}")
            if name == BENCH_PROPERTY and report.when == "call" and isinstance(record, dict):
                for level in record.get("levels") or ():
                    faults = level.get("refused") or () if isinstance(level, dict) else ()
                    self.refused += [f"{record.get('target') or report.nodeid}: {level.get('name')}: {fault}" for fault in faults]
        if not report.failed:
            return
        for name, record in report.user_properties:
            if name == CHECK_PROPERTY and isinstance(record, dict) and record.get("host") and not record.get("passed", True):
                self.mark_failed(str(record["host"]), f"{record.get('check', report.nodeid)}[{record['host']}] failed")

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
        outcome = yield
        report = outcome.get_result()
        from pytest_sglang.judge.bench.api import BenchFailed, BenchInconclusive

        error = call.excinfo.value if call.excinfo is not None else None
        if isinstance(error, BenchInconclusive):
            text = scrub(spoken(str(error)))
            if not text.startswith("inconclusive"):
                text = f"inconclusive: {text}"
            # Read back by pytest_runtest_logreport, in the xdist controller too.
            report.user_properties = [*report.user_properties, (INCONCLUSIVE_PROPERTY, text)]
            if self.inconclusive_fails:
                # Nobody reads a skip in CI: an unmeasured gate fails, saying why.
                why = "CI is set" if setting(self.config, "sglang_bench_inconclusive") is None else "--sglang-bench-inconclusive=fail"
                report.outcome = "failed"
                fix = "run it where the client is not starved of CPU" if error.levels else "run it with the repeats it names"
                report.longrepr = f"{text}\n(an undecided benchmark fails because {why}; {fix}, or pass --sglang-bench-inconclusive=skip)"
            else:
                # Neither pass nor fail: a skip that says why the measurement cannot be trusted.
                report.outcome = "skipped"
                path, line, _ = item.reportinfo()
                report.longrepr = (str(path), (line or 0) + 1, f"Skipped: {text}")
        elif isinstance(error, (BenchFailed, SGLangError)) and report.failed:
            # The figures are the failure; the library's traceback says nothing more.
            report.longrepr = scrub(spoken(str(error)))


    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.refused:
            terminalreporter.section("SGLang figures refused (the report's verdict is not promote)", yellow=True)
            for line in dict.fromkeys(self.refused):
                terminalreporter.write_line(scrub(line))
        if self.inconclusive:
            verb = "failed" if self.inconclusive_fails else "skipped, not passed"
            terminalreporter.section(f"SGLang benchmarks not measured ({verb})", yellow=True)
            for line in self.inconclusive:
                terminalreporter.write_line(line)
        if self.notes:
            terminalreporter.section("SGLang benchmark baselines")
            for note in self.notes:
                terminalreporter.write_line(scrub(note))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sglang_bench: a serving benchmark (set on every test that uses the sglang_bench fixture)")
    config.pluginmanager.register(BenchPlugin(config), "sglang-bench")


def _plugin(config: pytest.Config) -> BenchPlugin:
    plugin = config.pluginmanager.get_plugin("sglang-bench")
    assert isinstance(plugin, BenchPlugin)
    return plugin


def _progress_writer(config: pytest.Config, plugin: BenchPlugin) -> Any:
    """Progress lines on pytest's terminal: shown by default, silent under -q, in CI logs and
    in xdist workers (which have no terminal) unless --sglang-bench-progress asks."""
    forced = config.getoption("sglang_bench_progress")
    from pytest_sglang.judge.baseline.store import ci_set

    if not forced and (config.get_verbosity() < 0 or ci_set()):
        return None
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return None

    capture = config.pluginmanager.get_plugin("capturemanager")
    from pytest_sglang.render.bench import progress_line

    def show(progress: Any) -> None:
        # Live on the terminal, not into the test's captured output.
        suspended = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
        with suspended:
            terminal.write_line(progress_line(progress))

    return show


@pytest.fixture
def sglang_bench(sglang: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """Serving benchmarks of the test's host: ``sglang_bench.run(concurrency=[1, 48])``,
    ``sglang_bench.expect(result, "p99 ttft <= 250 ms")``, ``sglang_bench.baseline(result)``."""
    from pytest_sglang.plugin.bench_session import HostBench

    config = request.config
    plugin = _plugin(config)
    if plugin.budget.mode == "off":
        pytest.skip("serving benchmarks are off: run with --sglang-bench=smoke or --sglang-bench=full")
    why = plugin.failure_of(sglang.name)
    if why:
        pytest.skip(f"benchmark not run: the configuration of {sglang.name} failed in this session ({why})")
    node = request.node

    recorded: dict[int, dict[str, Any]] = {}

    def record(result: Any) -> None:
        # Called when a result is made and again when it is judged (the levels' verdicts): the
        # one record of a result is brought up to date in place.
        data = result.model_dump(mode="json", exclude={"repeats"})
        data["repeats"] = len(result.repeats) or 1
        data["test"] = node.nodeid
        data = scrub_object(data)
        if id(result) in recorded:
            recorded[id(result)].clear()
            recorded[id(result)].update(data)
            return
        recorded[id(result)] = data
        node.user_properties.append((BENCH_PROPERTY, data))

    bench = HostBench(sglang, config=config, budget=plugin.budget, progress=_progress_writer(config, plugin), on_result=record, name=node.originalname if hasattr(node, "originalname") else node.name)
    with plugin.host_lock(sglang.name):
        yield bench
    plugin.notes += bench.notes


def _threshold_problems(item: pytest.Item) -> list[str]:
    """Threshold literals in a benchmark test's own source that cannot be right (a misspelt
    metric, a malformed comparison), each as ``file:line: message``."""
    import ast
    import inspect
    import textwrap

    from pytest_sglang.judge.bench.expect import ThresholdError, check_threshold_text

    function = getattr(item, "function", None)
    if function is None:
        return []
    try:
        lines, first = inspect.getsourcelines(function)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return []
    path = inspect.getsourcefile(function) or str(item.fspath)
    out: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id if isinstance(node.func, ast.Name) else ""
        if name != "expect":
            continue
        for arg in node.args[1:]:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                try:
                    check_threshold_text(arg.value)
                except ThresholdError as exc:
                    out.append(f"{path}:{first + node.lineno - 1}: {exc}")
    return out
