"""pytest hooks for capture: ``--sglang-capture DIR`` writes one capture per host at the end of
the session (the controller only, under xdist), and a test that asks a replayed target for what
only a live host has fails in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Generator

import pytest

from pytest_sglang.base.errors import SGLangError
from pytest_sglang.base.secrets import scrub
from pytest_sglang.plugin.settings import setting

WRITTEN = pytest.StashKey[list[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sglang", "SGLang server configuration")
    group.addoption(
        "--sglang-capture",
        dest="sglang_capture",
        default=None,
        metavar="DIR",
        help="at the end of the run, write a capture of each host to DIR (one file per host, named after it); "
        "replay one with --sglang-host=replay:DIR/FILE (ini: sglang_capture)",
    )
    parser.addini("sglang_capture", "folder to write a capture of each host to at the end of the run", default="")


def _capture_dir(config: pytest.Config) -> Path | None:
    value = setting(config, "sglang_capture")
    return Path(value).expanduser() if value else None


def pytest_configure(config: pytest.Config) -> None:
    folder = _capture_dir(config)
    if folder is not None and folder.exists() and not folder.is_dir():
        raise pytest.UsageError(f"--sglang-capture {folder}: is a file; give a folder (it is created if missing)")


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    from pytest_sglang.target.sources.replay import ReplayClientError

    excinfo = call.excinfo
    if excinfo is not None and isinstance(excinfo.value, ReplayClientError):
        report = outcome.get_result()
        report.longrepr = scrub(str(excinfo.value))  # one line, no traceback


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    folder = _capture_dir(config)
    if folder is None or hasattr(config, "workerinput"):
        return  # under xdist only the controller writes, once
    from pytest_sglang.base.files import FileError
    from pytest_sglang.plugin.checks import session_state
    from pytest_sglang.render.capture import safe_file_name, write_capture

    state = session_state(config)
    specs = list(state.specs) if state is not None else []
    lines: list[str] = []
    used: set[str] = set()
    for spec in specs:
        name = safe_file_name(spec.display)
        stem, n = name[: -len(".json")], 2
        while name in used:  # two hosts whose names differ only in characters a file name cannot hold
            name, n = f"{stem}-{n}.json", n + 1
        used.add(name)
        try:
            write_capture(state.target(spec), folder / name)
        except SGLangError as exc:
            lines.append(f"{spec.display}: not captured: {exc}")
            if isinstance(exc, FileError) and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a capture asked for and not written fails the run
            continue
        lines.append(f"{spec.display}: captured to {folder / name}")
    if not specs:
        lines.append(f"no host to capture (--sglang-capture {folder})")
    config.stash[WRITTEN] = [scrub(line) for line in lines]


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    lines = config.stash.get(WRITTEN, None)
    if not lines:
        return
    terminalreporter.write_sep("-", "SGLang captures")
    for line in lines:
        terminalreporter.write_line(line)
