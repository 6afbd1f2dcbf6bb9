"""The releases the knowledge base holds (``model/knowledge/releases.json``, written by the add
command): one record per flag table, each naming its own wheel, and every table it records as
identical to the release it was compared with is identical in the package."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from pytest_sglang.judge.explain.startup import assigned_at_startup, release_defaults
from pytest_sglang.model.knowledge.model_tables import model_table
from pytest_sglang.parse.launch import table_versions

KNOWLEDGE = Path(__file__).resolve().parents[1] / "pytest_sglang" / "model" / "knowledge"
REGISTRY = json.loads((KNOWLEDGE / "releases.json").read_text())["releases"]


def _flags(version: str) -> dict:
    return json.loads((KNOWLEDGE / "flags" / f"sglang-cli-{version}.json").read_text().replace(version, "VERSION"))


def test_every_release_with_a_flag_table_is_recorded_with_its_own_wheel():
    assert list(REGISTRY) == list(table_versions())
    for version, record in REGISTRY.items():
        assert record["wheel"].startswith(f"sglang-{version}-") and record["wheel"].endswith(".whl")
        assert len(record["sha256"]) == 64


@pytest.mark.parametrize("version", [v for v, r in REGISTRY.items() if r["compared_with"]])
def test_what_a_release_records_as_identical_to_its_neighbour_is_identical(version):
    record = REGISTRY[version]
    other = record["compared_with"]
    assert other in REGISTRY and other != version
    same = record["identical"]
    assert same["flags"] == (_flags(version) == _flags(other))
    assert same["defaults"] == (release_defaults(version)[1] == release_defaults(other)[1])
    mine, theirs = model_table(version), model_table(other)
    assert mine is not None and theirs is not None
    assert same["models"] == ((mine.architectures, mine.lists, mine.transformers) == (theirs.architectures, theirs.lists, theirs.transformers))
    if not same["postinit"]:
        assert record["assignment_changes"] > 0 or assigned_at_startup(version) != assigned_at_startup(other)


def test_post_releases_are_compared_with_the_release_before_them():
    for version, record in REGISTRY.items():
        if Version(version).is_postrelease:
            assert Version(record["compared_with"]) < Version(version)
            assert Version(record["compared_with"]).base_version == Version(version).base_version


@pytest.mark.parametrize(
    "page, text",
    [
        ("README.md", "for every release from {first} to {last}, post releases included"),
        ("docs/launch-commands.md", "for every release from {first} to {last}, post releases included"),
        ("docs/launch-commands.md", "flag tables exist for SGLang {first} to {last}"),
        ("docs/errors.md", "flag tables exist for SGLang {first} to {last}"),
        ("docs/library.md", "the releases that have a table ({first} to {last})"),
        ("docs/development.md", "one per release from {first} to {last}, post releases included"),
    ],
)
def test_the_manual_names_the_releases_the_package_holds(page, text):
    known = table_versions()
    root = Path(__file__).resolve().parents[1]
    assert text.format(first=known[0], last=known[-1]) in " ".join((root / page).read_text().split())
