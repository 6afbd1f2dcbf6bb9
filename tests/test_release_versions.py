"""Post releases and release candidates are releases of their own in the knowledge base. SGLang
cuts post releases from its main branch, so 0.5.5.post1 may already hold 0.5.6's code: a rule's
range follows the order of releases (0.5.5 < 0.5.5.post1 < 0.5.6), and a version the knowledge
base lacks is read with the newest known release at or before it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from pytest_sglang.model.versions import as_release, nearest_release, outside_note, within

finals = st.tuples(st.just(0), st.just(5), st.integers(0, 30)).map(lambda t: Version(".".join(map(str, t))))
posts = st.tuples(finals, st.integers(1, 4)).map(lambda t: Version(f"{t[0]}.post{t[1]}"))
candidates = st.tuples(finals, st.integers(0, 3)).map(lambda t: Version(f"{t[0]}rc{t[1]}"))
versions = st.one_of(finals, posts, candidates)
bounds = st.one_of(finals, posts)


@given(st.one_of(finals, posts), bounds, st.one_of(st.none(), bounds))
def test_a_range_holds_exactly_the_releases_between_its_bounds_in_release_order(version, since, until):
    assert within(version, since, until) == (since <= version and (until is None or version <= until))


@given(finals, st.integers(1, 4))
def test_a_post_release_lies_between_its_release_and_the_next(release, n):
    post = Version(f"{release}.post{n}")
    following = Version(f"0.5.{release.micro + 1}")
    assert not within(post, since=following, until=None)
    assert not within(post, since=Version("0.5.0"), until=release)
    assert within(post, since=release, until=following)


@given(candidates, bounds, st.one_of(st.none(), bounds))
def test_a_release_candidate_is_judged_as_its_release(candidate, since, until):
    assert within(candidate, since, until) == within(Version(candidate.base_version), since, until)


@given(versions, versions)
def test_a_range_holds_its_own_bounds_a_release_candidate_among_them(since, until):
    assert within(since, since, None) and within(until, until, None)
    if since <= until:
        assert within(since, since, until) and within(until, since, until)


@given(st.lists(versions, min_size=1, max_size=12, unique=True), versions)
def test_a_version_is_read_with_its_own_release_or_the_newest_known_one_before_it(known, version):
    names = [str(v) for v in known]
    chosen = Version(nearest_release(version, names))
    assert str(chosen) in names
    if str(version) in names:
        assert chosen == version
        assert outside_note(version, names) is None
        return
    read_as = as_release(version)
    at_or_before = [v for v in known if v <= read_as]
    if at_or_before:
        assert chosen == max(at_or_before)
    else:
        assert chosen == min(known)
        assert "older than the knowledge base" in (outside_note(version, names) or "")


@given(finals, st.integers(1, 4))
def test_a_post_release_newer_than_every_known_release_says_so(newest, n):
    post = Version(f"{newest}.post{n}")
    note = outside_note(post, ["0.5.0", str(newest)] if newest > Version("0.5.0") else [str(newest)])
    assert note is not None and f"newer than the knowledge base ({newest})" in note


def test_the_knowledge_base_reads_a_post_release_it_holds_with_that_release():
    """0.5.8.post1 is a release of its own once its tables are added; 0.5.8.post2, which SGLang
    never published, would be read with the newest before it."""
    known = ["0.5.8", "0.5.8.post1", "0.5.9"]
    assert nearest_release(Version("0.5.8.post1"), known) == "0.5.8.post1"
    assert nearest_release(Version("0.5.8.post2"), known) == "0.5.8.post1"
    assert nearest_release(Version("0.5.9rc0"), known) == "0.5.9"
