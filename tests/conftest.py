from __future__ import annotations

import json

# Loaded here, before any in-process pytester run: pytester drops the modules first imported
# inside a run, and the plugin imports its HTTP and SSH stacks lazily (a re-imported
# http.cookiejar or cryptography backend would no longer match what requests and paramiko hold).
import paramiko  # noqa: F401
import pytest
from support import Canned, artefact
from testhost import clean_test_host, test_host  # noqa: F401  (one session-wide test host for every module)

import pytest_sglang.target.target  # noqa: F401


@pytest.fixture(autouse=True)
def _secrets_of_this_test_only():  # type: ignore[no-untyped-def]
    """The secrets a test registers (its api keys, what its servers' answers held) end with it:
    in one process, an earlier test's short key would scrub a later test's host name."""
    from pytest_sglang.base.secrets import SECRETS

    with SECRETS.scope():
        yield


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--real-sglang",
        action="store_true",
        help="also run the tier against real SGLang 0.5.23 servers on CPU (installs SGLang once, ~2.6 GB), and the slow tests",
    )
    parser.addoption("--slow", action="store_true", help="also run the slow tests (whole runs under xdist, type checks); --real-sglang runs them too")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a test of many seconds (whole pytest runs, xdist, mypy); runs with --slow or --real-sglang")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Plain ``pytest -n 2`` is the fast tier; the complete run (``--real-sglang``, as CI runs
    it) or ``--slow`` adds the slow tests."""
    if config.getoption("--slow") or config.getoption("--real-sglang"):
        return
    skip = pytest.mark.skip(reason="slow test: runs with --slow or --real-sglang (the complete tier)")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _ci_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts with ``CI`` unset, whether the suite runs on a laptop or under CI: the
    plugin refuses baseline updates and fails undecided benchmarks when ``CI`` is set, so a test
    that means the CI behaviour sets ``CI`` itself, and no test depends on where it runs."""
    monkeypatch.delenv("CI", raising=False)


REAL_TIER = "tests/real_sglang/"
# The browser tier's tests share one gate run (a module fixture): one worker runs them all.
BROWSER_TIER = "tests/test_report_browser.py"


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's: the tests also run without it
def pytest_xdist_make_scheduler(config, log):  # type: ignore[no-untyped-def]
    """Under ``-n N --dist loadgroup`` the whole real-SGLang tier runs in one worker (one
    CPU-heavy server at a time, each module's server started once) while the other workers take
    the fast tiers, and so does the browser tier (its gate run made once); every other test is
    its own unit of work.

    The group is read from the test's path here, on the controller, rather than from an
    ``xdist_group`` mark: pytest-xdist 3.8 tells the controller a test's group by appending
    ``@group`` to its node id, which pytest 9.2 no longer lets a plugin change, so marks
    silently stop grouping (pytest-dev/pytest-xdist#1386)."""
    if config.getoption("dist", None) != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class RealTierInOneWorker(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(REAL_TIER):
                return "real-sglang"
            if nodeid.startswith(BROWSER_TIER):
                return "report-browser"
            return super()._split_scope(nodeid)

    return RealTierInOneWorker(config, log)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter):  # type: ignore[no-untyped-def]
    """After pytest's own summary: one line counting the tests skipped for a missing system
    package and naming what to install (see ``support.missing_packages_summary``)."""
    yield
    from support import write_missing_packages_line

    write_missing_packages_line(terminalreporter)


@pytest.fixture(scope="session")
def real_server_info() -> dict:
    return json.loads(artefact("server_info.json"))


@pytest.fixture(scope="session")
def real_model_info() -> dict:
    return json.loads(artefact("model_info.json"))


@pytest.fixture(scope="session")
def real_log() -> str:
    return artefact("server.log")


# ---- a canned HTTP server: plays back fixed answers, for the ways a target can be wrong ------


@pytest.fixture
def canned():
    servers: list[Canned] = []

    def make() -> Canned:
        servers.append(Canned())
        return servers[-1]

    yield make
    for server in servers:
        server.close()


@pytest.fixture
def free_port() -> int:
    """A loopback port nothing listens on."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def captured(monkeypatch):  # type: ignore[no-untyped-def]
    """Each benchmark level's request records, as the load generator hands them to the
    statistics (``list[list[RequestRecord]]``)."""
    import pytest_sglang.collect.bench.load as load_module

    levels: list = []
    real = load_module.level_result

    def keep(name, records, **kwargs):  # type: ignore[no-untyped-def]
        levels.append(list(records))
        return real(name, records, **kwargs)

    monkeypatch.setattr(load_module, "level_result", keep)
    return levels
