"""What a test run prints beyond pytest's own output: a last line summing up the tests skipped for
a missing system package with what to install (the ``pytest_terminal_summary`` hook of
tests/conftest.py), and the real tier's progress lines while it installs SGLang the first time."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import missing_packages_note, missing_packages_summary, packages_in_skip_reason

TESTS = Path(__file__).resolve().parent
HOST_MISSING = [
    "/usr/sbin/sshd is missing (apt-get install openssh-server)",
    "systemd-journal-remote is missing (apt-get install systemd-journal-remote)",
]
# The test host's reason, as tests/testhost.py builds it.
HOST_REASON = f"test host unavailable: {'; '.join(HOST_MISSING)} {missing_packages_note('; '.join(HOST_MISSING))}"


def test_the_test_hosts_reason_carries_the_packages_in_a_note() -> None:
    assert HOST_REASON.endswith(" [missing system packages: openssh-server systemd-journal-remote]")
    assert packages_in_skip_reason(HOST_REASON) == ["openssh-server", "systemd-journal-remote"]


def test_a_plain_reason_names_its_package_as_apt_get_install() -> None:
    assert packages_in_skip_reason("ssh-agent is not installed (apt-get install openssh-client)") == ["openssh-client"]
    assert packages_in_skip_reason("real SGLang tier: run with --real-sglang") == []
    assert missing_packages_note("bash is missing") == ""


def test_the_summary_counts_tests_and_names_each_package_once() -> None:
    reasons = [HOST_REASON] * 3 + ["ssh-agent is not installed (apt-get install openssh-client)", "not this one"]
    assert missing_packages_summary(reasons) == (
        "pytest-sglang tests: 4 tests skipped because system packages are missing: "
        "apt-get install openssh-client openssh-server systemd-journal-remote"
    )
    assert missing_packages_summary([HOST_REASON]).startswith("pytest-sglang tests: 1 test skipped because")  # type: ignore[union-attr]
    assert missing_packages_summary(["not this one"]) is None
    assert missing_packages_summary([]) is None


SUITE_CONFTEST = f"""
import importlib.util, sys
import pytest

sys.path.insert(0, {str(TESTS)!r})
from support import missing_packages_note

# The hook exactly as the project's tests/conftest.py defines it.
_spec = importlib.util.spec_from_file_location("project_tests_conftest", {str(TESTS / "conftest.py")!r})
_project = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_project)
pytest_terminal_summary = _project.pytest_terminal_summary

MISSING = {HOST_MISSING!r}


@pytest.fixture(scope="session")
def host():
    pytest.skip(f"test host unavailable: {{'; '.join(MISSING)}} {{missing_packages_note('; '.join(MISSING))}}".rstrip())
"""

SUITE = """
import pytest

@pytest.mark.parametrize("n", range(3))
def test_uses_the_host(host, n):
    pass

def test_needs_an_agent():
    pytest.skip("ssh-agent is not installed (apt-get install openssh-client)")

def test_skips_for_another_reason():
    pytest.skip("not today")

def test_passes():
    pass
"""


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-p", "xdist", "-n", "1"]], ids=["serial", "xdist"])
def test_a_run_ends_with_one_line_naming_what_to_install(pytester: pytest.Pytester, workers: list[str]) -> None:
    if workers:
        pytest.importorskip("xdist")
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs", *workers)
    result.assert_outcomes(passed=1, skipped=5)
    line = (
        "pytest-sglang tests: 4 tests skipped because system packages are missing: "
        "apt-get install openssh-client openssh-server systemd-journal-remote"
    )
    lines = [text for text in result.outlines if text.strip()]
    assert lines[-2] == line, "\n".join(lines[-8:])
    assert "1 passed, 5 skipped" in lines[-1]
    assert sum(line in text for text in result.outlines) == 1



PROGRESS_CONFTEST = f"""
import sys

sys.path.insert(0, {str(TESTS / "real_sglang")!r})
import progress


def pytest_configure(config):
    progress.attach(config)
"""


@pytest.mark.parametrize("verbosity", [[], ["-q"]], ids=["default", "quiet"])
def test_progress_lines_reach_the_terminal_while_output_is_captured(pytester: pytest.Pytester, verbosity: list[str]) -> None:
    pytester.makeconftest(PROGRESS_CONFTEST)
    pytester.makepyfile(
        test_install="""
import progress

def test_before():
    pass

def test_installs():
    print("captured, not shown")
    progress.say("installing SGLang 0.5.23 for CPU into ~/.cache/x: step 2/4 torch==2.13.0 (CPU build)")
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *verbosity)  # output capture on, as by default
    result.assert_outcomes(passed=2)
    # A line of its own, even after -q's progress dots.
    assert "installing SGLang 0.5.23 for CPU into ~/.cache/x: step 2/4 torch==2.13.0 (CPU build)" in result.outlines
    assert "captured, not shown" not in result.stdout.str()


def test_progress_lines_go_to_stderr_outside_pytest(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS / "real_sglang"))
    import progress

    monkeypatch.setattr(progress, "_config", None)
    progress.say("downloading wheel 1/19 sglang-0.5.5")
    assert capsys.readouterr().err == "downloading wheel 1/19 sglang-0.5.5\n"
    assert progress.shown(Path.home() / ".cache" / "pytest-sglang") == "~/.cache/pytest-sglang"
    assert progress.shown(Path("/opt/x")) == "/opt/x"
