"""The stored post-init assignments are what each release's wheel says (run with --real-sglang).

``tests/test_postinit_coverage.py`` counts coverage from ``tests/data/sglang-postinit-assignments.json``;
here every release's wheel is walked again (``postinit_coverage.walk``), so the stored data cannot
go stale while the knowledge base and the walk change.
"""

from __future__ import annotations

import postinit_coverage
import pytest

STORED = postinit_coverage.load_assignments()


def test_the_stored_assignments_hold_every_release_the_package_knows():
    assert list(STORED) == postinit_coverage.releases()


@pytest.mark.parametrize("version", list(STORED))
def test_the_stored_assignments_are_what_the_walk_of_the_wheel_finds(version):
    fresh = [a.stored() for a in postinit_coverage.walk(version)]
    missing = [a for a in fresh if a not in STORED[version]]
    extra = [a for a in STORED[version] if a not in fresh]
    assert not missing and not extra, (
        f"SGLang {version}: {len(missing)} assignments not stored (first: {missing[:1]}), "
        f"{len(extra)} stored but not found (first: {extra[:1]}); run: python tests/real_sglang/postinit_coverage.py --store"
    )
    assert fresh == STORED[version]
