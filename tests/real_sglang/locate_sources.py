"""Find every knowledge-base rule's source anchors in each SGLang release's own wheel.

    python tests/real_sglang/locate_sources.py            # report; exit 1 on a problem
    python tests/real_sglang/locate_sources.py --write    # also rewrite sources.lock.json
    python tests/real_sglang/locate_sources.py --rule ID  # one rule, every release, verbose

For each rule and each of its sources: in the cited release the anchor must be within the cited
lines (a few lines of slack); in every release of the rule's range the anchor must be in the
file; and in the first release below and above the range, at least one of the rule's anchors
must be missing (a range that is too wide or too narrow fails). The lock records the line of
each anchor in each release, so an explanation can cite the line of the target's own release.

Wheels come from ``~/.cache/pytest-sglang/wheels`` (downloaded once, without dependencies).
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
if str(ROOT) not in sys.path and __name__ == "__main__":  # run as a script from a checkout; imported by tests, the package is installed
    sys.path.insert(0, str(ROOT))

from packaging.version import Version  # noqa: E402

from pytest_sglang.judge.explain import kb as kb_module

LOCK = ROOT / "pytest_sglang" / "model" / "knowledge" / "sources.lock.json"
SLACK = 3  # lines of slack around a cited range


def releases() -> list[str]:
    from flag_table_live import shipped_versions

    return shipped_versions()


@lru_cache(maxsize=None)
def _zip(release: str) -> zipfile.ZipFile:
    from flag_table_live import wheel

    return zipfile.ZipFile(wheel(release))


@lru_cache(maxsize=None)
def file_lines(release: str, path: str) -> tuple[str, ...] | None:
    try:
        return tuple(_zip(release).read(path).decode("utf-8", "replace").splitlines())
    except KeyError:
        return None


def _norm(text: str) -> str:
    return " ".join(text.split())


def find(release: str, path: str, anchor: str, near: int | None = None) -> int | None:
    """The 1-based line holding ``anchor`` (white space collapsed), nearest ``near``."""
    lines = file_lines(release, path)
    if lines is None:
        return None
    want = _norm(anchor)
    hits = [i + 1 for i, line in enumerate(lines) if want in _norm(line)]
    if not hits:
        return None
    if near is None:
        return hits[0]
    return min(hits, key=lambda n: abs(n - near))


def _holds(release: str, source: kb_module.SourceRef) -> bool:
    """Whether a release says what the source says (an absent anchor: does not say it)."""
    present = find(release, source.file, source.anchor) is not None
    return present != source.absent


def check(kb: kb_module.KnowledgeBase, only: str | None = None) -> tuple[list[str], dict[str, dict[str, int]], dict[str, int]]:
    """(problems, the lock, releases source-checked per release)."""
    all_releases = releases()
    problems: list[str] = []
    lock: dict[str, dict[str, int]] = {}
    per_release = {r: 0 for r in all_releases}
    for rule in kb.rules:
        if only and rule.id != only:
            continue
        in_range = [r for r in all_releases if rule.covers(Version(r))]
        if not in_range:
            problems.append(f"{rule.id}: no release of {all_releases[0]}-{all_releases[-1]} is in {rule.range_text}")
            continue
        for source in rule.sources:
            if source.absent:
                at = find(source.release, source.file, source.anchor, near=source.lines[0])
                if source.release in in_range:
                    problems.append(f"{rule.id}: an absent anchor cites SGLang {source.release}, inside its range {rule.range_text}")
                if at is None or not source.lines[0] - SLACK <= at <= source.lines[1] + SLACK:
                    problems.append(f"{rule.id}: {source.anchor!r} is not at {source.file}:{source.lines[0]}-{source.lines[1]} in SGLang {source.release}")
                for release in in_range:
                    if find(release, source.file, source.anchor) is not None:
                        problems.append(f"{rule.id}: {source.anchor!r} must be absent in {rule.range_text} but is in {source.file} of SGLang {release}")
                if at is not None:
                    lock.setdefault(source.key, {})[source.release] = at
                continue
            if source.release not in in_range:
                problems.append(f"{rule.id}: cites SGLang {source.release}, outside its range {rule.range_text}")
            first, last = source.lines
            at = find(source.release, source.file, source.anchor, near=first)
            if at is None:
                problems.append(f"{rule.id}: {source.anchor!r} is not in {source.file} of SGLang {source.release}")
            elif not first - SLACK <= at <= last + SLACK:
                problems.append(f"{rule.id}: {source.anchor!r} is at {source.file}:{at} in SGLang {source.release}, not at the cited {first}-{last}")
            found = lock.setdefault(source.key, {})
            previous = at or first
            for release in in_range:
                line = find(release, source.file, source.anchor, near=previous)
                if line is None:
                    problems.append(f"{rule.id}: {source.anchor!r} is missing from {source.file} in SGLang {release} (range {rule.range_text})")
                else:
                    found[release] = line
        for release in in_range:
            if all(_holds(release, s) for s in rule.sources):
                per_release[release] += 1
        below = [r for r in all_releases if Version(r) < rule.first]
        above = [r for r in all_releases if rule.last is not None and Version(r) > rule.last]
        for outside in ([below[-1]] if below else []) + ([above[0]] if above else []):
            if all(_holds(outside, s) for s in rule.sources):
                problems.append(f"{rule.id}: every anchor is still in SGLang {outside}, outside {rule.range_text}: the range is wrong or an anchor is not specific to it")
    return problems, lock, per_release


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="rewrite sources.lock.json")
    parser.add_argument("--rule", help="check one rule only")
    args = parser.parse_args()
    kb_module.load.cache_clear()
    kb = kb_module.load()
    problems, lock, per_release = check(kb, args.rule)
    for problem in problems:
        print("PROBLEM", problem)
    if args.rule:
        for key, lines in lock.items():
            print(key, json.dumps(lines))
    print(f"{len(kb.rules)} rules; source-checked per release: " + ", ".join(f"{r}: {n}" for r, n in per_release.items()))
    if args.write and not args.rule:
        LOCK.write_text(json.dumps(dict(sorted(lock.items())), indent=1, sort_keys=True) + "\n")
        print(f"wrote {LOCK.relative_to(ROOT)} ({len(lock)} anchors)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
