"""pytest hooks for explain: the ``sglang_explain`` fixture, ``--sglang-explain`` (a per-host
section in the terminal report) and ``--sglang-lint`` (built-in checks that fail on
error-level findings and on requested flags that are no-ops or overridden)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pytest_sglang.base.errors import SGLangError
from pytest_sglang.base.secrets import scrub
from pytest_sglang.plugin.checks import Check, Outcome, add_items
from pytest_sglang.plugin.settings import flag, lines, spoken

if TYPE_CHECKING:
    from pytest_sglang.judge.explain.findings import Explanation, Finding

ACCEPT_INI = "sglang_lint_accept"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sglang", "SGLang server configuration")
    group.addoption(
        "--sglang-explain",
        dest="sglang_explain",
        action="store_true",
        default=None,
        help="add a section per host to the terminal report: what SGLang changed and why (ini: sglang_explain)",
    )
    group.addoption(
        "--sglang-lint",
        dest="sglang_lint",
        action="store_true",
        default=None,
        help=f"add a check per host that fails on error-level findings and on requested flags that are no-ops or overridden (accept a finding by id: ini {ACCEPT_INI})",
    )
    parser.addini("sglang_explain", "add the explain section to the terminal report", type="bool", default=False)
    parser.addini("sglang_lint", "add the lint check per host", type="bool", default=False)
    parser.addini(ACCEPT_INI, "finding or rule ids --sglang-lint accepts (one per line)", type="linelist", default=[])


def _session(config: pytest.Config) -> Any:
    from pytest_sglang.plugin.core import PLUGIN

    return config.stash.get(PLUGIN, None)


@pytest.fixture(scope="session")
def sglang_explain(sglang: Any) -> Explanation:
    """What SGLang changed on the target and why: findings decided by the knowledge base."""
    from pytest_sglang.judge.explain.api import explain

    return explain(sglang)


def _lint(config: pytest.Config, spec: Any) -> Outcome:
    from pytest_sglang.judge.explain.api import explain
    from pytest_sglang.render import explain as render

    explanation = explain(_session(config).target(spec))
    accepted = set(lines(config, ACCEPT_INI))
    failing = [f for f in explanation.findings if f.lint and not render.is_accepted(f, accepted)]
    kept = [f for f in explanation.findings if f.lint and render.is_accepted(f, accepted)]
    return Outcome(
        failures=[_line(f) for f in failing],
        notes=[f"accepted: [{f.id}] {f.title}" for f in kept],
        record={"findings": [f.id for f in failing], "accepted": [f.id for f in kept]},
        hint=f"accept a known finding by id in the ini file: {ACCEPT_INI} = {failing[0].id}" if failing else None,
    )


LINT = Check(name="sglang-lint", heading="{n} finding(s) fail the SGLang lint", run=_lint)


def _line(finding: Finding) -> str:
    return f"{finding.severity.upper()} [{finding.id}] {finding.title}: {finding.summary}"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    state = _session(config)
    if not flag(config, "sglang_lint") or state is None or not state.specs:
        return
    add_items(session, items, LINT, state.specs)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = _session(config)
    if not flag(config, "sglang_explain") or state is None or hasattr(config, "workerinput"):
        return
    from pytest_sglang.judge.explain.api import explain
    from pytest_sglang.render.explain import text

    accepted = set(lines(config, ACCEPT_INI))
    verbose = config.getoption("verbose") > 0
    for spec in state.specs:
        terminalreporter.write_sep("-", f"SGLang explain: {spec.display}")
        try:
            explanation = explain(state.target(spec))
        except SGLangError as exc:
            terminalreporter.write_line(scrub(f"{spec.display}: {exc}"))
            continue
        terminalreporter.write_line(spoken(text(explanation, verbose=verbose, width=terminalreporter._tw.fullwidth, accepted=accepted)))
