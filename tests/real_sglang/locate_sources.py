"""Find every knowledge-base rule's source anchors in each SGLang release's own wheel.

    python tests/real_sglang/locate_sources.py            # report; exit 1 on a problem
    python tests/real_sglang/locate_sources.py --write    # also rewrite sources.lock.json
    python tests/real_sglang/locate_sources.py --rule ID  # one rule, every release, verbose
    python tests/real_sglang/locate_sources.py --json     # the findings per rule, as JSON

For each rule and each of its sources: in the cited release the anchor must be within the cited
lines (a few lines of slack: PROBLEM); in every release of the rule's range the anchor must be in
the file (VANISHED); and in the first release below and above the range, at least one of the
rule's anchors must be missing (RANGE MAY START EARLIER / END LATER: a range that is too wide or
too narrow fails). Ranges follow the order of releases: 0.5.5 < 0.5.5.post1 < 0.5.6 (SGLang cuts
post releases from its main branch, so a post release may already carry the next release's
code), as explain applies them. The lock records the line of each anchor in each release, so an
explanation can cite the line of the target's own release; MOVED says where a line differs from it.

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


def _outside(rule: kb_module.Rule, all_releases: list[str]) -> tuple[str | None, str | None]:
    """The last release below and the first above the rule's range."""
    below = [r for r in all_releases if Version(r) < Version(rule.since)]
    above = [r for r in all_releases if rule.until is not None and Version(r) > Version(rule.until)]
    return (below[-1] if below else None), (above[0] if above else None)


def findings(kb: kb_module.KnowledgeBase, only: str | None = None) -> tuple[dict[str, dict], dict[str, dict[str, int]], dict[str, int]]:
    """(per rule: what its sources say in each release, the lock, releases source-checked per
    release). A rule's finding lists ``problems`` (cited lines, absent anchors), ``vanished``
    anchors (missing from a release of its range), ``moved`` anchors (another line than the
    lock records for a release), and ``range_may_start_earlier`` / ``range_may_end_later``: the
    first release below / above its range in which every anchor still holds."""
    all_releases = releases()
    stored = json.loads(LOCK.read_text()) if LOCK.exists() else {}
    out: dict[str, dict] = {}
    lock: dict[str, dict[str, int]] = {}
    per_release = {r: 0 for r in all_releases}
    for rule in kb.rules:
        if only and rule.id != only:
            continue
        found: dict = {"range": rule.range_text, "since": rule.since, "until": rule.until, "problems": [], "vanished": [], "moved": [], "range_may_start_earlier": None, "range_may_end_later": None}
        out[rule.id] = found
        covered = [r for r in all_releases if rule.covers(Version(r))]
        if not covered:
            found["problems"].append(f"no release of {all_releases[0]}-{all_releases[-1]} is in {rule.range_text}")
            continue
        for source in rule.sources:
            _source(rule, source, covered, found, lock)
        for release in covered:
            if all(_holds(release, s) for s in rule.sources):
                per_release[release] += 1
        below, above = _outside(rule, all_releases)
        if below is not None and all(_holds(below, s) for s in rule.sources):
            found["range_may_start_earlier"] = below
        if above is not None and all(_holds(above, s) for s in rule.sources):
            found["range_may_end_later"] = above
    for rule in kb.rules:  # against the whole lock: rules that share an anchor write its line in turn
        for key in dict.fromkeys(s.key for s in rule.sources) if rule.id in out else ():
            for release, line in lock.get(key, {}).items():
                was = stored.get(key, {}).get(release)
                if was is not None and was != line:
                    out[rule.id]["moved"].append({"anchor": key, "release": release, "lock": was, "now": line})
    return out, lock, per_release


def _source(rule: kb_module.Rule, source: kb_module.SourceRef, covered: list[str], found: dict, lock: dict[str, dict[str, int]]) -> None:
    problems = found["problems"]
    if source.absent:
        at = find(source.release, source.file, source.anchor, near=source.lines[0])
        if source.release in covered:
            problems.append(f"an absent anchor cites SGLang {source.release}, inside its range {rule.range_text}")
        if at is None or not source.lines[0] - SLACK <= at <= source.lines[1] + SLACK:
            problems.append(f"{source.anchor!r} is not at {source.file}:{source.lines[0]}-{source.lines[1]} in SGLang {source.release}")
        for release in covered:
            if find(release, source.file, source.anchor) is not None:
                problems.append(f"{source.anchor!r} must be absent in {rule.range_text} but is in {source.file} of SGLang {release}")
        if at is not None:
            lock.setdefault(source.key, {})[source.release] = at
        return
    if source.release not in covered:
        problems.append(f"cites SGLang {source.release}, outside its range {rule.range_text}")
    first, last = source.lines
    at = find(source.release, source.file, source.anchor, near=first)
    if at is None:
        problems.append(f"{source.anchor!r} is not in {source.file} of SGLang {source.release}")
    elif not first - SLACK <= at <= last + SLACK:
        problems.append(f"{source.anchor!r} is at {source.file}:{at} in SGLang {source.release}, not at the cited {first}-{last}")
    lines = lock.setdefault(source.key, {})
    previous = at or first
    for release in covered:
        line = find(release, source.file, source.anchor, near=previous)
        if line is None:
            found["vanished"].append({"anchor": source.key, "release": release})
        else:
            lines[release] = line


def problem_lines(rule_id: str, found: dict) -> list[str]:
    """One line per problem of a rule, each starting with its category."""
    out = [f"PROBLEM {rule_id}: {text}" for text in found["problems"]]
    for gone in found["vanished"]:
        file, anchor = gone["anchor"].split("::", 1)
        out.append(f"VANISHED {rule_id}: {anchor!r} is missing from {file} in SGLang {gone['release']} (range {found['range']})")
    kept_out = kept_out_by_execution()
    if found["range_may_start_earlier"] and (rule_id, found["range_may_start_earlier"]) not in kept_out:
        out.append(f"RANGE MAY START EARLIER {rule_id}: anchors all present in {found['range_may_start_earlier']}, below {found['range']}")
    if found["range_may_end_later"] and (rule_id, found["range_may_end_later"]) not in kept_out:
        out.append(f"RANGE MAY END LATER {rule_id}: anchors all present in {found['range_may_end_later']}, above {found['range']}")
    return out


@lru_cache(maxsize=1)
def kept_out_by_execution() -> frozenset[tuple[str, str]]:
    """(rule, release) pairs the add command kept out of a rule's range although the release has
    every anchor, because that release's own post-init contradicted the rule (recorded with the
    disagreement in model/knowledge/releases.json): not a range to widen."""
    path = LOCK.parent / "releases.json"
    if not path.exists():
        return frozenset()
    releases = json.loads(path.read_text())["releases"]
    return frozenset((entry["rule"], version) for version, record in releases.items() for entry in record.get("kept_out", []))


def check(kb: kb_module.KnowledgeBase, only: str | None = None) -> tuple[list[str], dict[str, dict[str, int]], dict[str, int]]:
    """(problems, the lock, releases source-checked per release)."""
    found, lock, per_release = findings(kb, only)
    return [line for rule_id, f in found.items() for line in problem_lines(rule_id, f)], lock, per_release


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="rewrite sources.lock.json")
    parser.add_argument("--rule", help="check one rule only")
    parser.add_argument("--json", action="store_true", help="print the findings of every rule as one JSON document")
    args = parser.parse_args()
    kb_module.load.cache_clear()
    kb = kb_module.load()
    found, lock, per_release = findings(kb, args.rule)
    problems = [line for rule_id, f in found.items() for line in problem_lines(rule_id, f)]
    if args.json:
        print(json.dumps({"releases": releases(), "source_checked": per_release, "rules": found}, indent=1))
    else:
        for problem in problems:
            print(problem)
        for rule_id, f in found.items():
            for moved in f["moved"]:
                print(f"MOVED {rule_id}: {moved['anchor']} in SGLang {moved['release']}: line {moved['lock']} in the lock, {moved['now']} now")
        if args.rule:
            for key, lines in lock.items():
                print(key, json.dumps(lines))
        print(f"{len(kb.rules)} rules; source-checked per release: " + ", ".join(f"{r}: {n}" for r, n in per_release.items()))
    if args.write and not args.rule:
        LOCK.write_text(json.dumps(dict(sorted(lock.items())), indent=1, sort_keys=True) + "\n")
        print(f"wrote {LOCK.relative_to(ROOT)} ({len(lock)} anchors)", file=sys.stderr if args.json else sys.stdout)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
