"""How much of SGLang's post-init the knowledge base covers, counted from stored assignments.

``tests/data/sglang-postinit-assignments.json`` holds every assignment to a ``ServerArgs`` field
that each release's post-init makes (written by ``tests/real_sglang/postinit_coverage.py --store``,
which walks the wheels; the real tier checks it is still what they say). Here it is mapped to the
current rules: docs/explain-coverage.md must show that mapping, so a rule that covers something
changes the published numbers and the page is regenerated with ``--docs``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent / "real_sglang"))

import postinit_coverage as coverage  # noqa: E402

from pytest_sglang.judge.explain import kb as kb_module
from pytest_sglang.model import knowledge as _knowledge
from pytest_sglang.parse.launch import table_versions

KNOWLEDGE_DIR = Path(_knowledge.__file__).parent  # the knowledge base's data: rule files, lists, flag tables

DATA = coverage.load_assignments()
KNOWLEDGE = (KNOWLEDGE_DIR / "knowledge.toml").read_text()


def _rule(setting: str, since: str, until: str, kind: str = "override") -> str:
    value = 'value = "1"\n' if kind in ("override", "cap") else ""
    return f"""
[[rule]]
id = "test.{kind}-{since.replace('.', '')}"
title = "a rule made up for this test"
since = "{since}"
until = "{until}"
setting = "{setting}"
kind = "{kind}"
severity = "info"
when = "True"
{value}explanation = "A rule that exists only to show where coverage counts it."

[[rule.sources]]
release = "{since}"
file = "sglang/srt/server_args.py"
lines = [1, 2]
anchor = "made up for the test"
"""


def test_the_coverage_page_shows_the_stored_assignments_against_the_current_rules():
    page = coverage.DOCS.read_text()
    expected = coverage.render(coverage.measure(DATA))
    assert coverage.generated_block(page) == expected, "run: python tests/real_sglang/postinit_coverage.py --docs"
    assert "(explain-coverage.md)" in (coverage.ROOT / "docs" / "index.md").read_text()


def test_the_stored_assignments_cover_every_release_with_consistent_counts():
    assert list(DATA) == sorted(DATA, key=Version)
    assert list(DATA) == list(table_versions())  # a walk for every release with a flag table
    for row in coverage.measure(DATA).rows:
        # 0.5.0rc2's post-init already writes some 70 fields; later releases write more
        assert row.assignments == row.covered + row.out_of_scope + row.uncovered > 60, row
    for items in DATA.values():
        reasons = {a["reason"] for a in items if "reason" in a}
        assert reasons <= set(coverage.REASONS), reasons - set(coverage.REASONS)


def test_a_rule_covers_an_assignment_only_in_its_own_releases_and_only_when_it_states_a_value():
    # A real stored assignment that the releases before and after both make.
    field = "chunked_prefill_size"
    releases = ["0.5.12", "0.5.13", "0.5.14"]
    data = {v: [a for a in DATA[v] if a["field"] == field] for v in releases}
    assert all(data.values()), "the stored data has lost the chunked_prefill_size assignments"
    kb = kb_module.load_from(knowledge_text=KNOWLEDGE, rule_texts={"test.toml": _rule(field, "0.5.13", "0.5.13")})
    table = coverage.measure(data, kb)
    covered = {row.release: row.covered for row in table.rows}
    assert covered == {"0.5.12": 0, "0.5.13": len(data["0.5.13"]), "0.5.14": 0}
    assert all(a["rules"] == ["test.override-0513"] for a in table.items["0.5.13"])
    assert table.uncovered("0.5.12") == [a for a in table.items["0.5.12"] if "reason" not in a]
    # A start-up error about the same field explains no value SGLang sets.
    errors = kb_module.load_from(knowledge_text=KNOWLEDGE, rule_texts={"test.toml": _rule(field, "0.5.12", "0.5.14", kind="error")})
    assert [row.covered for row in coverage.measure(data, errors).rows] == [0, 0, 0]


@pytest.mark.parametrize(
    "setting, field",
    [("chunked_prefill_size", "chunked_prefill_size"), ("runtime.max_running_requests", "max_running_requests"),
     ("cuda_graph_config.prefill.backend", "cuda_graph_config")],
)
def test_a_rule_setting_names_the_field_it_covers(setting, field):
    assert coverage.rule_field(setting) == field


def test_the_stored_file_round_trips():
    text = coverage.dump(DATA)
    assert text == coverage.DATA.read_text()


def test_no_nvidia_assignment_to_a_field_a_sizing_or_graph_test_reads_is_left_uncovered():
    table = coverage.measure(DATA)
    left = {row.release: {g: n for g, (n, _) in table.by_group(row.release).items() if n} for row in table.rows}
    assert not any(left.values()), {v: g for v, g in left.items() if g}
    # Other platforms' branches to those fields are counted apart (AMD/HIP, NPU ... in every release).
    assert all(sum(other for _, other in table.by_group(row.release).values()) > 0 for row in table.rows)


def test_the_group_count_names_the_field_group_a_release_leaves_uncovered():
    field = "chunked_prefill_size"
    data = {v: [a for a in DATA[v] if a["field"] == field and "reason" not in a] for v in ("0.5.12", "0.5.13")}
    kb = kb_module.load_from(knowledge_text=KNOWLEDGE, rule_texts={"test.toml": _rule(field, "0.5.13", "0.5.13")})
    table = coverage.measure(data, kb)
    assert table.by_group("0.5.12")["chunked prefill"][0] == len(data["0.5.12"]) > 0
    assert table.by_group("0.5.13")["chunked prefill"][0] == 0


def test_the_site_count_tells_a_branch_a_rule_cites_from_one_no_rule_describes():
    kb = kb_module.load()
    table = coverage.measure({"0.5.12": DATA["0.5.12"], "0.5.23": DATA["0.5.23"]}, kb)
    items = {(a["function"], a["field"]): a for v in ("0.5.12",) for a in table.items[v]}
    # --enable-mis turning chunked prefill off: chunked.multi-item-scoring cites it (its 0.5.18 lines, moved by the lock).
    mis = items[("ServerArgs._handle_multi_item_scoring", "chunked_prefill_size")]
    assert mis["rules"] and coverage.near_a_source(kb, mis, "0.5.12")
    # Lfm2's own SM100 attention backend: covered by field (the default rules), cited by none of them.
    sites = coverage.by_site(table, kb, "0.5.23")
    assert any(a["function"] == "_lfm2_overrides" for a in sites["attention backend"])
    assert not any(a["function"] == "_qwen3_5_hybrid_overrides" for a in sites["attention backend"])
