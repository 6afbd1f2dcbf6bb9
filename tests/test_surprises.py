"""docs/surprises.md and the class table of docs/explain-coverage.md are what the surprise
classes (model/knowledge/surprises.toml) and the rules make; every class names rules that exist,
and its test to copy uses fixtures and fields that exist.

    python tests/test_surprises.py --update     # rewrite both pages
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_sglang.judge.explain import surprises
from pytest_sglang.judge.explain.findings import Explanation
from pytest_sglang.judge.explain.kb import load
from pytest_sglang.model.config import Effective
from pytest_sglang.parse.launch import flag_table, table_versions

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"(<!-- surprises: [^>]*-->\n)(.*?)(<!-- end surprises -->)", re.S)


def _coverage_page(kb) -> str:  # type: ignore[no-untyped-def]
    text = (DOCS / "explain-coverage.md").read_text()
    table = "\n".join(surprises.class_table(kb, link="surprises.md")) + "\n"
    return BLOCK.sub(lambda m: m.group(1) + table + m.group(3), text)


def test_the_surprises_page_is_what_the_classes_and_rules_make():
    assert (DOCS / "surprises.md").read_text() == surprises.markdown(load()), "run: python tests/test_surprises.py --update"


def test_the_coverage_page_counts_the_classes_as_they_are():
    page = (DOCS / "explain-coverage.md").read_text()
    assert BLOCK.search(page)
    assert page == _coverage_page(load()), "run: python tests/test_surprises.py --update"


@pytest.mark.parametrize("surprise", surprises.classes(), ids=lambda c: c.id)
def test_every_class_names_rules_that_exist_or_says_why_it_is_not_judged(surprise):
    found = surprises.rules_of(load(), surprise)
    assert bool(found) == (surprise.scope is None)
    assert surprise.test is not None or surprise.scope is not None


def test_a_pattern_that_names_no_rule_is_an_error():
    gone = surprises.SurpriseClass(id="x", title="x", what="x", rules=["no.such-rule*"])
    with pytest.raises(ValueError, match="'no.such-rule\\*' names no rule"):
        surprises.rules_of(load(), gone)


def test_every_report_links_to_its_issue_or_pull_request():
    reports = [r for c in surprises.classes() for r in c.reports]
    assert reports and all(r.url == f"https://github.com/{r.ref.split('#')[0]}/{'pull' if r.kind == 'pull request' else 'issues'}/{r.ref.split('#')[1]}" for r in reports)
    page = (DOCS / "surprises.md").read_text()
    assert all(f"[{r.ref}]({r.url})" in page for r in reports)
    with pytest.raises(ValueError, match="ref"):
        surprises.Report(ref="38846", kind="issue", title="x")


@pytest.mark.parametrize("form", ["text", "--markdown", "--json"])
def test_the_command_line_lists_the_classes_in_each_form(form):
    done = subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", "explain", "--list-surprises", *([form] if form != "text" else [])], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    if form == "--json":
        rows = json.loads(done.stdout)
        assert [r["id"] for r in rows] == [c.id for c in surprises.classes()]
        assert all(r["url"].startswith("https://github.com/") for row in rows for r in row["reports"])
    elif form == "--markdown":
        assert done.stdout == (DOCS / "surprises.md").read_text()
    else:
        assert [line.split()[0] for line in done.stdout.splitlines()] == [c.id for c in surprises.classes()]


SERVER_ARGS = {field for version in table_versions() for field in flag_table(version).fields}


@pytest.mark.parametrize("surprise", [c for c in surprises.classes() if c.test], ids=lambda c: c.id)
def test_the_test_to_copy_uses_fixtures_and_fields_that_exist(surprise):
    tree = ast.parse(surprise.test)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            fixture, name = node.value.id, node.attr
            if fixture == "effective":
                assert name in Effective.model_fields or callable(getattr(Effective, name, None)), name
            elif fixture == "server_args":
                assert name in SERVER_ARGS, name
            elif fixture == "sglang_explain":
                assert hasattr(Explanation, name), name
            else:
                pytest.fail(f"{fixture} is not a fixture of the plugin")


@pytest.mark.parametrize("profile", ["qwen35-122b-a10b-4xrtx6000-candidate", "qwen35-122b-a10b-4xrtx6000-0.5.23"])
def test_every_test_to_copy_runs_against_a_server_and_only_its_assertion_can_fail(pytester, profile):
    """Pasted into a suite as docs/surprises.md shows it, each test runs: it passes or fails on its
    assertion, never on a name, a fixture or a comparison with None."""
    copied = [c for c in surprises.classes() if c.test]
    body = "".join(f"def test_{c.id.replace('-', '_')}(effective, server_args, sglang_explain):\n    {c.test}\n\n\n" for c in copied)
    pytester.makepyfile(body)
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host=sim://{profile}")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == len(copied), result.stdout.str()[-2000:]
    raised = [line for line in result.stdout.lines if re.match(r"E +\w+(Error|Exception)\b", line) and not re.match(r"E +AssertionError\b", line)]
    assert raised == [], raised
    # each failure is its assertion's: one "E assert ..." line per failed test
    assert outcomes.get("failed", 0) == sum(bool(re.match(r"E +(AssertionError: )?assert ", line)) for line in result.stdout.lines)


if __name__ == "__main__" and "--update" in sys.argv:
    kb = load()
    (DOCS / "surprises.md").write_text(surprises.markdown(kb))
    (DOCS / "explain-coverage.md").write_text(_coverage_page(kb))
    print("wrote docs/surprises.md and docs/explain-coverage.md")
