"""Every knowledge-base rule proven against SGLang's own source (run with --real-sglang).

For each rule, in each release of 0.5.5-0.5.23 (the wheels the tier downloads once): the
anchors are in the cited files, at the cited lines of the cited release; the first release
below and above the rule's range says something else (a range that is too wide or too narrow
fails here); and the lock the explanations cite lines from is what the wheels say today.
"""

from __future__ import annotations

import json

import locate_sources

from pytest_sglang.judge.explain import kb as kb_module


def test_every_rule_source_is_where_it_says_in_every_release_of_its_range():
    kb = kb_module.load()
    problems, lock, per_release = locate_sources.check(kb)
    print(f"{len(kb.rules)} rules; source-checked per release: " + ", ".join(f"{r}: {n}" for r, n in per_release.items()))
    assert not problems, "\n".join(problems)
    # Every rule is checked in every release of its range.
    for release, count in per_release.items():
        expected = sum(1 for rule in kb.rules if rule.covers(kb_module.Version(release)))
        assert count == expected, f"SGLang {release}: {count} of {expected} rules hold there"


def test_the_lock_of_source_lines_is_what_the_wheels_say():
    kb = kb_module.load()
    _, lock, _ = locate_sources.check(kb)
    stored = json.loads(locate_sources.LOCK.read_text())
    assert stored == json.loads(json.dumps(lock)), "run: python tests/real_sglang/locate_sources.py --write"
