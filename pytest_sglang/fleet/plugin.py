"""pytest hooks for fleet drift: ``--sglang-fleet`` adds one run-wide check, ``sglang-fleet``,
that fails when the hosts of the run do not agree on their effective configuration, and lists
the differing fields per host."""

from __future__ import annotations

from typing import Any

import pytest

from ..checks import Check, Outcome, add_items, session_state

IGNORE_INI = "sglang_fleet_ignore"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sglang", "SGLang server configuration")
    group.addoption(
        "--sglang-fleet",
        dest="sglang_fleet",
        action="store_true",
        default=None,
        help=f"add a check of the whole run that fails when the hosts' effective configurations differ (leave fields out: ini {IGNORE_INI})",
    )
    parser.addini("sglang_fleet", "add the fleet drift check (the hosts of the run must agree)", type="bool", default=False)
    parser.addini(IGNORE_INI, "fields the fleet check leaves out, one per line (NAME, effective.NAME or server_args.NAME)", type="linelist", default=[])


def _enabled(config: pytest.Config) -> bool:
    value = config.getoption("sglang_fleet")
    return bool(value) if value is not None else bool(config.getini("sglang_fleet"))


def _fleet(config: pytest.Config, _spec: Any) -> Outcome:
    from ..errors import SGLangError
    from .core import comparable, drift, sources

    state = session_state(config)
    specs = list(state.specs)
    state.open_all()  # in parallel; a host read before is not read again
    ignore = list(config.getini(IGNORE_INI))
    values: dict[str, dict[str, Any]] = {}
    where: dict[str, dict[str, str]] = {}
    unread: dict[str, str] = {}
    for spec in specs:
        try:
            target = state.target(spec)
        except SGLangError as exc:
            unread[spec.display] = str(exc)
            continue
        values[spec.display] = comparable(target, ignore)
        where[spec.display] = sources(target)
    result = drift(values, where)
    failures = [f"{host}: not read, so the fleet cannot be compared: {error}" for host, error in unread.items()]
    for host, diffs in result.differences.items():
        failures += [f"{host}: {d.line()}" for d in diffs]
    notes = []
    if len(specs) < 2:
        notes.append(f"{len(specs)} host(s) in this run: nothing to compare (give several --sglang-host)")
    elif not failures:
        notes.append(f"{len(values)} hosts agree on {result.fields_compared} fields")
    record = {
        "agree": not failures,
        "hosts": [spec.display for spec in specs],
        "fields_compared": result.fields_compared,
        "differing_fields": result.fields,
        "differences": {host: [d.to_dict() for d in diffs] for host, diffs in result.differences.items() if diffs},
        "unread": unread,
        "ignored": ignore,
    }
    hint = None
    if result.fields:
        hint = f"if a field differs by design, leave it out in the ini file: {IGNORE_INI} = {result.fields[0]}"
    return Outcome(failures=failures, notes=notes, record=record, hint=hint)


FLEET = Check(name="sglang-fleet", heading="the hosts of this run do not agree ({n} difference(s))", run=_fleet)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    state = session_state(config)
    if not _enabled(config) or state is None or not state.specs:
        return
    add_items(session, items, FLEET, None)
