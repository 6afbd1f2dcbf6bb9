"""Every public checkpoint of the catalog (pytest_sglang/model/knowledge/checkpoints.json) against
each release's wheel (run with --real-sglang): its architecture is an ``EntryClass`` of
``sglang/srt/models`` in exactly the releases the entry claims (``sglang.since``/``until``).

The wheels are read as model_tables_live.py reads them (``ast``, nothing imported), one wheel
per release of the flag tables, downloaded once into ~/.cache/pytest-sglang/wheels.
"""

from __future__ import annotations

import model_tables_live
from packaging.version import Version

from pytest_sglang.model.knowledge.checkpoints import catalog
from pytest_sglang.model.versions import within


def test_each_architecture_is_an_entry_class_in_the_releases_its_entry_claims():
    entries = list(catalog().values())
    problems: list[str] = []
    releases = model_tables_live.shipped_versions()
    for release in releases:
        registered = set(model_tables_live.registry(model_tables_live.Wheel(model_tables_live._wheel(release))))
        for entry in entries:
            claimed = entry.sglang_since is not None and within(
                Version(release), Version(entry.sglang_since), Version(entry.sglang_until) if entry.sglang_until else None
            )
            if claimed != (entry.architecture in registered):
                said = "claims" if claimed else "does not claim"
                has = "has" if entry.architecture in registered else "lacks"
                problems.append(f"{entry.repo}: {said} SGLang {release}, whose wheel {has} EntryClass {entry.architecture}")
    print(f"{len(entries)} checkpoints checked against {len(releases)} wheels ({releases[0]}-{releases[-1]})")
    assert not problems, "\n".join(problems)
