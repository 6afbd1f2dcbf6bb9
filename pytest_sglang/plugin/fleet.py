"""pytest hooks for fleet drift: ``--sglang-fleet`` adds one run-wide check, ``sglang-fleet``,
that fails when the hosts of the run do not agree on their effective configuration, and lists
the differing fields per host."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_sglang.plugin.checks import Check, Outcome, add_items, session_state
from pytest_sglang.plugin.settings import flag, lines

POLICY_INI = "sglang_fleet_policy"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sglang", "SGLang server configuration")
    group.addoption(
        "--sglang-fleet",
        dest="sglang_fleet",
        action="store_true",
        default=None,
        help=f"add a check of the whole run that fails when the hosts' effective configurations differ (per-field policy: ini {POLICY_INI})",
    )
    parser.addini("sglang_fleet", "add the fleet drift check (the hosts of the run must agree)", type="bool", default=False)
    parser.addini(POLICY_INI, "per-field fleet policy, one 'PATH = ignore | absolute N | relative N% | waive until YYYY-MM-DD: why' per line", type="linelist", default=[])


def _policy(config: pytest.Config) -> Any:
    from pytest_sglang.judge.baseline.compare import Policy

    return Policy.from_lines(lines(config, POLICY_INI), f"ini {POLICY_INI}")


def _fleet(config: pytest.Config, _spec: Any) -> Outcome:
    from pytest_sglang.base.errors import SGLangError
    from pytest_sglang.judge.fleet.core import documents, drift
    from pytest_sglang.judge.gate.models import differing_fields

    state = session_state(config)
    specs = list(state.specs)
    state.open_all()  # in parallel; a host read before is not read again
    policy = _policy(config)
    targets = {}
    unread: dict[str, str] = {}
    for spec in specs:
        try:
            targets[spec.display] = state.target(spec)
        except SGLangError as exc:
            unread[spec.display] = str(exc)
    result = drift(documents(targets), policy)
    failures = [f"{host}: not read, so the fleet cannot be compared: {error}" for host, error in unread.items()]
    for host in result.differences:
        failures += [f"{host}: {text}" for text in result.lines(host)]
    notes = [f"{host}: {text}" for host in result.tolerated for text in result.lines(host, failing=False)]
    if len(specs) < 2:
        notes.append(f"{len(specs)} host(s) in this run: nothing to compare (give several --sglang-host)")
    elif not failures:
        notes.append(f"{len(targets)} hosts agree on {result.fields_compared} fields")
    if result.reference and len(result.groups) > 1:
        notes.append(f"the fleet's configuration is {result.reference}'s, shared by {len(result.groups[0])} of {len(targets)} hosts")
    differences = {host: [d.to_dict() for d in diffs] for host, diffs in result.differences.items() if diffs}
    fields = differing_fields(differences)
    record = {
        "agree": not failures,
        "hosts": [spec.display for spec in specs],
        "reference": result.reference,
        "fields_compared": result.fields_compared,
        "differing_fields": fields,
        "differences": differences,
        # per host, its changes from the fleet's configuration: each change's fields (``fields``)
        # are the host's entries in ``differences`` and ``tolerated`` (their ``group`` is its name)
        "groups": {host: [c.to_dict() for c in found] for host, found in result.changes.items() if found},
        "tolerated": {host: [d.to_dict() for d in diffs] for host, diffs in result.tolerated.items() if diffs},
        "unread": unread,
    }
    hint = None
    if fields:
        hint = f"if a field may differ between replicas, give it a policy in the ini file: {POLICY_INI} = {fields[0]} = ignore (or relative 5%)"
    # Changes and fields counted as a baseline's are ("7 change(s) (33 field(s))"), the fields
    # as every report counts them.
    said = [f"{len(failures) - len(unread)} change(s) ({len(fields)} field(s)) differ"] if fields else []
    said += [f"{len(unread)} host(s) not read"] if unread else []
    heading = f"the hosts of this run do not agree: {', '.join(said)}" if said else None
    return Outcome(failures=failures, notes=notes, record=record, hint=hint, heading=heading)


FLEET = Check(name="sglang-fleet", heading="the hosts of this run do not agree ({n} difference(s))", run=_fleet)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    state = session_state(config)
    if not flag(config, "sglang_fleet") or state is None or not state.specs:
        return
    from pytest_sglang.base.errors import SpecError

    try:
        _policy(config)
    except SpecError as exc:
        raise pytest.UsageError(str(exc)) from None
    add_items(session, items, FLEET, None)
