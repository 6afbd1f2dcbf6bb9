"""docs/surprises.md and the class table of docs/explain-coverage.md are what the surprise
classes (model/knowledge/surprises.toml) and the rules make; every class names rules that exist,
and its test to copy uses fixtures and fields that exist.

    python tests/test_surprises.py --update     # rewrite both pages
"""

from __future__ import annotations

import ast
import re
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


SERVER_ARGS = {field for version in table_versions() for field in flag_table(version).fields}


@pytest.mark.parametrize("surprise", [c for c in surprises.classes() if c.test], ids=lambda c: c.id)
def test_the_test_to_copy_uses_fixtures_and_fields_that_exist(surprise):
    tree = ast.parse(surprise.test)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            fixture, name = node.value.id, node.attr
            if fixture == "effective":
                assert name in Effective.model_fields, name
            elif fixture == "server_args":
                assert name in SERVER_ARGS, name
            elif fixture == "sglang_explain":
                assert hasattr(Explanation, name), name
            else:
                pytest.fail(f"{fixture} is not a fixture of the plugin")


if __name__ == "__main__" and "--update" in sys.argv:
    kb = load()
    (DOCS / "surprises.md").write_text(surprises.markdown(kb))
    (DOCS / "explain-coverage.md").write_text(_coverage_page(kb))
    print("wrote docs/surprises.md and docs/explain-coverage.md")
