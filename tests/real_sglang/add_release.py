"""Add one SGLang release to the knowledge base, from its wheel: what
``python -m pytest_sglang.model.knowledge.release add VERSION|WHEEL`` runs in a checkout.

Each step is one of this folder's maintainer scripts, run for that release only; docs/development.md
("Adding an SGLang release") says what each writes and how to read the work list it prints:

1. the wheel: ``pip download --no-deps sglang==VERSION`` into ``~/.cache/pytest-sglang/wheels``
   (or the wheel given), read as a zip; a wheel that cannot be read stops here in one line;
2. the flag table (``flag_table_live.py``), the argparse defaults and the fields post-init may
   assign (``release_defaults.py``), the model tables (``model_tables_live.py``) and the post-init
   assignment walk (``postinit_coverage.py --store-release``);
3. the source locks: every rule's anchors found again in every release (``locate_sources.py``),
   listing those that moved or vanished; a release older than every known one first extends the
   range of each rule that starts at the oldest release and whose anchors are all in the new one;
4. the work list: the new release's flags and post-init assignments against the nearest known
   release, each with its file:line and the rules it touches;
5. the post-init and pool-sizing differentials for the release (fresh commands, then the stored
   fixed set); a rule whose range step 3 extended and that the release contradicts is put back;
6. ``releases.json``: the wheel's digest, the release compared with and which tables are
   identical to it.

Every step rewrites its files from the wheel, so a second run writes the same bytes. Nothing is
written outside ``pytest_sglang/model/knowledge/`` and ``tests/data/``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any, Callable, Iterator

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from packaging.version import InvalidVersion, Version  # noqa: E402

KNOWLEDGE = ROOT / "pytest_sglang" / "model" / "knowledge"
RULES = KNOWLEDGE / "rules"
REGISTRY = KNOWLEDGE / "releases.json"
FLAGS = KNOWLEDGE / "flags"
MODELS = KNOWLEDGE / "models"


class AddError(Exception):
    """A step that cannot go on: one line for the maintainer."""


# ---- the wheel --------------------------------------------------------------------------------


def wheel_version(path: Path) -> str:
    """The SGLang version a wheel holds, read from its metadata; AddError in one line when the
    file is not an SGLang wheel that can be read."""
    try:
        with zipfile.ZipFile(path) as whl:
            names = whl.namelist()
            meta = next((n for n in names if re.fullmatch(r"sglang-[^/]+\.dist-info/METADATA", n)), None)
            if meta is None:
                raise AddError(f"{path}: not an SGLang wheel (no sglang-*.dist-info/METADATA in it)")
            if "sglang/srt/server_args.py" not in names:
                raise AddError(f"{path}: the wheel has no sglang/srt/server_args.py, so it has no flag table to read")
            text = whl.read(meta).decode("utf-8", "replace")
    except FileNotFoundError:
        raise AddError(f"{path}: no such file") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise AddError(f"{path}: cannot be read as a wheel ({type(exc).__name__}: {exc})") from None
    found = re.search(r"^Version:\s*(\S+)", text, re.M)
    if not found:
        raise AddError(f"{path}: its METADATA has no Version line")
    return str(Version(found.group(1)))


def fetch_wheel(spec: str) -> tuple[str, Path]:
    """(the release, its wheel in the cache) for a version or a wheel path."""
    import flag_table_live

    if spec.endswith(".whl") or "/" in spec:
        source = Path(spec).expanduser()
        version = wheel_version(source)
        flag_table_live.WHEELS.mkdir(parents=True, exist_ok=True)
        cached = flag_table_live.WHEELS / source.name
        if not source.name.startswith(f"sglang-{version}-"):
            raise AddError(f"{source}: a wheel of sglang {version} must be named sglang-{version}-*.whl, as pip names it")
        if source.resolve() != cached.resolve():
            shutil.copyfile(source, cached)
        return version, cached
    try:
        version = str(Version(spec))
    except InvalidVersion:
        raise AddError(f"{spec!r} is neither an SGLang release (such as 0.5.24) nor a path to a wheel") from None
    try:
        path = flag_table_live.wheel(version)
    except RuntimeError as exc:
        raise AddError(f"sglang=={version}: the wheel cannot be downloaded ({exc})") from None
    if wheel_version(path) != version:
        raise AddError(f"{path}: holds sglang {wheel_version(path)}, not {version}")
    return version, path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- the known releases -----------------------------------------------------------------------


def known_releases() -> list[str]:
    from flag_table_live import shipped_versions

    return shipped_versions()


def nearest_known(version: str, known: list[str]) -> str | None:
    """The release a new one is compared with: the newest older known release, else the oldest."""
    others = [r for r in known if r != version]
    if not others:
        return None
    older = [r for r in others if Version(r) < Version(version)]
    return older[-1] if older else others[0]


# ---- the tables -------------------------------------------------------------------------------


@contextlib.contextmanager
def quiet() -> Iterator[io.StringIO]:
    """A script's own prints, kept for the log instead of the summary."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        yield buffer


def write_tables(version: str, python: Path) -> None:
    import flag_table_live
    import model_tables_live
    import release_defaults

    with quiet():
        flag_table_live.write(version, python)
        release_defaults.main([version])
        for name, text in model_tables_live.expected([version]).items():
            (MODELS / name).write_text(text)
        store_walk(version)


def store_walk(version: str) -> None:
    """The release's post-init assignments in tests/data/sglang-postinit-assignments.json, every
    other release's kept as stored."""
    import postinit_coverage

    data = postinit_coverage.load_assignments() if postinit_coverage.DATA.exists() else {}
    postinit_coverage.DATA.write_text(postinit_coverage.dump(postinit_coverage.with_releases(data, [version])))


def _table_text(path: Path, version: str) -> str:
    """A table with its own release's name taken out, to compare two releases' tables."""
    return release_name(version).sub("VERSION", path.read_text()) if path.exists() else ""


def identical(version: str, other: str) -> dict[str, bool]:
    """Which of a release's tables are the same as another release's."""
    import postinit_coverage
    import release_defaults

    defaults = release_defaults.expand(json.loads(release_defaults.OUT.read_text())["releases"])
    walks = postinit_coverage.load_assignments()

    def walk(release: str) -> list[tuple]:
        # What is assigned, where and under which conditions; a line that only moved is the same.
        return [(a["file"], a["function"], a["field"], a["value"], tuple(a["conditions"])) for a in walks.get(release, [])]

    return {
        "flags": json.loads(_table_text(FLAGS / f"sglang-cli-{version}.json", version))
        == json.loads(_table_text(FLAGS / f"sglang-cli-{other}.json", other)),
        "defaults": defaults.get(version) == defaults.get(other),
        "models": _models(version) == _models(other),
        "postinit": walk(version) == walk(other),
    }


def _models(version: str) -> dict:
    """What explain reads of a model table: the architectures, the transformers pin and each
    list's members (not where the release defines them)."""
    data = json.loads((MODELS / f"sglang-models-{version}.json").read_text())
    return {"architectures": data["architectures"], "transformers": data["transformers"],
            "lists": {name: entry["members"] for name, entry in data["lists"].items()}}


# ---- the work list ----------------------------------------------------------------------------


def _flag_summary(entry: dict) -> dict:
    return {k: entry.get(k) for k in ("kind", "default", "choices", "type", "nargs", "action", "aliases") if entry.get(k) is not None}


def flag_changes(version: str, other: str) -> list[str]:
    new = json.loads((FLAGS / f"sglang-cli-{version}.json").read_text())["fields"]
    old = json.loads((FLAGS / f"sglang-cli-{other}.json").read_text())["fields"]
    out = [f"flag added: {name} {json.dumps(_flag_summary(new[name]), sort_keys=True)[:160]}" for name in sorted(set(new) - set(old))]
    out += [f"flag removed: {name}" for name in sorted(set(old) - set(new))]
    for name in sorted(set(new) & set(old)):
        a, b = _flag_summary(old[name]), _flag_summary(new[name])
        changed = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        if changed:
            out.append(f"flag changed: {name}: " + "; ".join(f"{k} {_short(a.get(k))} -> {_short(b.get(k))}" for k in changed))
    return out


_TOKEN = re.compile(r'"[^"]*"|\'[^\']*\'|[\w.]+|\S')


def condition_changes(added: list[str], dropped: list[str]) -> list[str]:
    """A changed condition as the words it gained and lost (a list that gained a member shows
    that member), and a condition with no counterpart whole."""
    out = []
    for new, old in zip(added, dropped):
        a, b = _TOKEN.findall(new), _TOKEN.findall(old)
        gained = [t for t in a if t not in b]
        lost = [t for t in b if t not in a]
        words = " ".join([f"+{t}" for t in gained] + [f"-{t}" for t in lost])
        out.append(f"~ if {_clip(new, 60)}: {_clip(words, 100)}")
    out += [f"+ if {_clip(c, 110)}" for c in added[len(dropped):]]
    out += [f"- if {_clip(c, 110)}" for c in dropped[len(added):]]
    return out


def _clip(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def assignment_changes(version: str, other: str) -> list[dict]:
    """The new release's post-init assignments against the other release's, matched by file,
    function, field and value (a line that only moved is no change): ``new`` (the other release
    lacks it), ``gone`` (the new one lacks it) and ``conditions`` (the same write under other
    conditions; ``added``/``dropped`` name them)."""
    import postinit_coverage

    walks = postinit_coverage.load_assignments()

    def grouped(release: str) -> dict[tuple, list[dict]]:
        out: dict[tuple, list[dict]] = {}
        for a in walks.get(release, []):
            out.setdefault((a["file"], a["function"], a["field"], a["value"]), []).append(a)
        return out

    new, old = grouped(version), grouped(other)
    changes: list[dict] = []
    for key in sorted(set(new) | set(old)):
        mine, theirs = list(new.get(key, [])), list(old.get(key, []))
        for a in list(mine):  # the same write under the same conditions: unchanged
            same = next((b for b in theirs if b["conditions"] == a["conditions"]), None)
            if same is not None:
                mine.remove(a)
                theirs.remove(same)
        for a, b in zip(mine, theirs):
            changes.append({"change": "conditions", **a, "added": [c for c in a["conditions"] if c not in b["conditions"]],
                            "dropped": [c for c in b["conditions"] if c not in a["conditions"]]})
        changes += [{"change": "new", **a} for a in mine[len(theirs):]]
        changes += [{"change": "gone", **b} for b in theirs[len(mine):]]
    return sorted(changes, key=lambda a: (a["field"], a["file"], a["line"]))


def rules_touching(kb: Any, field: str, version: str, item: dict) -> tuple[list[str], list[str]]:
    """(the rules about a field in the release: those that set it or read it, the ones of them
    whose cited source, moved to the release by the lock, is within a few lines of the item)."""
    from packaging.version import Version as V
    from postinit_coverage import SITE_SLACK, rule_field

    names = {f"arg.{field}", f"requested.{field}", f"effective.{field}"}
    about = [r for r in kb.rules if (rule_field(r.setting) == field or names & set(r.reads)) and r.covers(V(version))]
    near = []
    for rule in about:
        for source in rule.sources:
            if source.absent or source.file != item["file"]:
                continue
            here, cited = kb.line_of(source, version), kb.line_of(source, source.release)
            if here is not None and cited is not None and here + source.lines[0] - cited - SITE_SLACK <= item["line"] <= here + source.lines[1] - cited + SITE_SLACK:
                near.append(rule.id)
                break
    return [r.id for r in about], near


# ---- rule ranges ------------------------------------------------------------------------------

_RULE = re.compile(r'^id = "(?P<id>[^"]+)"\s*$', re.M)


def _rule_files() -> dict[str, Path]:
    out = {}
    for path in sorted(RULES.glob("*.toml")):
        for match in _RULE.finditer(path.read_text()):
            out[match.group("id")] = path
    return out


def set_bound(rule_id: str, key: str, old: str, new: str) -> None:
    """Rewrite one rule's ``since`` or ``until`` in its TOML file, every other byte as it was."""
    path = _rule_files()[rule_id]
    text = path.read_text()
    start = text.index(f'id = "{rule_id}"')
    end = text.find("\n[[rule]]", start)
    end = len(text) if end < 0 else end
    block = text[start:end]
    line = f'{key} = "{old}"'
    if line not in block:
        raise AddError(f"{path.relative_to(ROOT)}: rule {rule_id} has no line {line}")
    path.write_text(text[:start] + block.replace(line, f'{key} = "{new}"', 1) + text[end:])


def extendable(kb: Any, version: str, known: list[str]) -> list[tuple[str, str, str]]:
    """(rule, ``since`` or ``until``, its bound now) for each rule whose range ends at the known
    release just below the new one, or starts at the one just above it, and whose anchors the new
    release's wheel all holds (and whose absent anchors it lacks): its range may take the new
    release in. Post releases are cut from SGLang's main branch, so a range that ends at 0.5.5
    may hold in 0.5.5.post1, and one that starts at 0.5.6 may too."""
    import locate_sources

    others = [r for r in known if r != version]
    below = [r for r in others if Version(r) < Version(version)]
    above = [r for r in others if Version(r) > Version(version)]
    out = []
    for rule in kb.rules:
        if not rule.sources or not all(locate_sources._holds(version, s) for s in rule.sources):
            continue
        if below and rule.until is not None and Version(rule.until) == Version(below[-1]):
            out.append((rule.id, "until", rule.until))
        elif above and Version(rule.since) == Version(above[0]):
            out.append((rule.id, "since", rule.since))
    return out


# ---- pool sizing eras --------------------------------------------------------------------------

POOLS = KNOWLEDGE / "pools.toml"
_ERA = re.compile(r'^\[\[era\]\]\nsince = "(?P<since>[^"]+)"\n(?:until = "(?P<until>[^"]+)"\n)?', re.M)


def eras() -> list[tuple[str, str | None]]:
    return [(m.group("since"), m.group("until")) for m in _ERA.finditer(POOLS.read_text())]


def era_holding(version: str) -> str | None:
    """The pool sizing era that holds the release, as ``since-until`` (None: no era does, and
    explain gives no pool figures for it)."""
    from pytest_sglang.model.versions import within

    for a, b in eras():
        if within(Version(version), Version(a), Version(b) if b else None):
            return f"{a}-{b}" if b else f"{a}+"
    return None


def set_era_bound(since: str, key: str, old: str, new: str) -> None:
    """Rewrite one era's ``since`` or ``until`` in pools.toml (the era is named by its ``since``)."""
    text = POOLS.read_text()
    match = next(m for m in _ERA.finditer(text) if m.group("since") == since)
    head = match.group(0)
    line = f'{key} = "{old}"'
    if line not in head:
        raise AddError(f"{POOLS.relative_to(ROOT)}: the era since {since} has no line {line}")
    POOLS.write_text(text[: match.start()] + head.replace(line, f'{key} = "{new}"', 1) + text[match.end() :])


def era_candidates(version: str, known: list[str]) -> list[tuple[str, str, str]]:
    """(era's since, ``since`` or ``until``, the bound now) for a release no pool sizing era holds:
    the era that ends at the known release just below it (taken first: a post release carries
    its release's code and some of the next one's) and the era that starts at the known release
    just above it. An era only ever grows by its neighbour, so it never jumps over a release
    whose sizing disagreed."""
    v = Version(version)
    spans = eras()
    if any(Version(a) <= v and (b is None or v <= Version(b)) for a, b in spans):
        return []
    others = [r for r in known if r != version]
    below = [r for r in others if Version(r) < v]
    above = [r for r in others if Version(r) > v]
    out = []
    for a, b in spans:
        if below and b is not None and Version(b) == Version(below[-1]):
            out.append((a, "until", b))
    for a, _ in spans:
        if above and Version(a) == Version(above[0]):
            out.append((a, "since", a))
    return out


def choose_era(version: str, python: Path, examples: int, run: Callable[[], dict[str, dict]]) -> tuple[str | None, dict[str, dict]]:
    """Put the release in the pool sizing era its own sizing agrees with: each candidate era is
    widened to take it in and the pool differential run; the first with no open class stays.
    (its description, the last differential result)."""
    from pytest_sglang.judge.explain import pools

    result: dict[str, dict] = {}
    for since, key, bound in era_candidates(version, known_releases()):
        set_era_bound(since, key, bound, version)
        pools._data.cache_clear()
        new_since = version if key == "since" else since
        result = run()
        if not result["pool sizing"]["open"]:
            return f"the era since {since} ({key} {bound} -> {version})", result
        set_era_bound(new_since, key, version, bound)
        pools._data.cache_clear()
    return None, result


# ---- the differentials ------------------------------------------------------------------------


def differentials(version: str, python: Path, examples: int, only: tuple[str, ...] = ("launch", "post-init", "pool sizing")) -> dict[str, dict]:
    """The launch, post-init and pool-sizing differentials of one release on a fixed sample of
    fresh commands (and the pinned ones): per differential, the counts and the disagreement
    classes (``open``: those ``KNOWN`` does not explain; the launch differential knows none)."""
    import differential as launch_differential
    import pool_differential
    import postinit_differential

    out: dict[str, dict] = {}
    if "launch" in only:
        with quiet():
            report = launch_differential.run([version], lambda v: launch_differential.generate(v, examples, derandomize=True), python, log=lambda _m: None)
        counts = {"commands": report["generated"].get(version, 0), "accepted": report["accepted"].get(version, 0)}
        out["launch"] = {"counts": counts, "classes": sorted(report["classes"]), "open": sorted(report["classes"])}
    for name, module in (("post-init", postinit_differential), ("pool sizing", pool_differential)):
        if name not in only:
            continue
        def cases(v: str, module: Any = module) -> list[dict]:
            return module.generate(v, examples, derandomize=True) + module.pinned(v)

        with quiet():
            report = module.run([version], cases, python, log=lambda _m: None)
        open_classes = sorted(c for c in report["classes"] if not module.known(c, report.get("known", module.KNOWN)))
        out[name] = {"counts": module.per_release(report).get(version, {}), "classes": sorted(report["classes"]), "open": open_classes}
    return out


def store_differentials(version: str, python: Path) -> None:
    """The release's stored fixed sets (tests/data), which the fast tier checks explain against."""
    import pool_differential
    import postinit_differential

    # The launch set in a process of its own: Hypothesis draws other commands for it after the
    # post-init and pool generators ran in the same process, and the set must be the one
    # `differential.py --store VERSION` writes.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(HERE / "differential.py"), "--store", version], capture_output=True, text=True, env=env)
    if done.returncode not in (0, 1):  # 1: the set is stored and disagrees, which the differentials step reports
        raise AddError(f"differential.py --store {version} failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    with quiet():
        postinit_differential.write_stored(python, [version])
        pool_differential.write_stored(python, [version])


def contradicted_rules(result: dict[str, dict]) -> dict[str, str]:
    """Rule -> the open disagreement class that names it (``value: RULE``, ``error: RULE``,
    ``noop: RULE``)."""
    out: dict[str, str] = {}
    for part in result.values():
        for cls in part["open"]:
            kind, _, rest = cls.partition(": ")
            if kind in ("value", "error", "noop") and rest:
                out.setdefault(rest.split()[0], cls)
    return out


# ---- the command ------------------------------------------------------------------------------


class Steps:
    def __init__(self) -> None:
        self.times: dict[str, float] = {}

    def run(self, name: str, action: Callable[[], Any]) -> Any:
        print(f"  {name} ...", flush=True)
        started = time.monotonic()
        try:
            return action()
        finally:
            self.times[name] = time.monotonic() - started


def add(spec: str, *, examples: int = 12, differential: bool = True) -> int:
    import harness
    import locate_sources
    import postinit_coverage

    from pytest_sglang.judge.explain import kb as kb_module

    started = time.monotonic()
    steps = Steps()
    version, wheel = fetch_wheel(spec)
    before = known_releases()
    is_new = version not in before
    print(f"adding SGLang {version} from {wheel.name} ({'new' if is_new else 'known: its tables are written again'})", flush=True)
    python = steps.run("harness environment", harness.ensure_environment)
    steps.run("flag table, defaults, model tables, post-init walk", lambda: write_tables(version, python))
    _reload(kb_module)
    known = known_releases()
    other = nearest_known(version, known)

    kb = kb_module.load()
    extended = steps.run("rule ranges", lambda: extendable(kb, version, known))
    for rule_id, key, bound in extended:
        set_bound(rule_id, key, bound, version)
    _reload(kb_module)

    result: dict[str, dict] = {}
    reverted: list[tuple[str, str, str]] = []
    classes: dict[str, str] = {}
    era_taken: str | None = None
    if differential:
        era_taken, _ = steps.run("pool sizing era", lambda: choose_era(version, python, examples, lambda: differentials(version, python, examples, only=("pool sizing",))))
        result = steps.run("differentials", lambda: differentials(version, python, examples))
        classes = contradicted_rules(result)
        reverted = [e for e in extended if e[0] in classes]
        if reverted:
            for rule_id, key, bound in reverted:
                set_bound(rule_id, key, version, bound)
            _reload(kb_module)
            result = steps.run("differentials again", lambda: differentials(version, python, examples))

    kb = kb_module.load()
    same = identical(version, other) if other else {}
    flags = flag_changes(version, other) if other else []
    assignments = assignment_changes(version, other) if other else []
    previous = json.loads(REGISTRY.read_text())["releases"].get(version, {}) if REGISTRY.exists() else {}
    # A second run finds the ranges as the first one left them: what it took in then is kept.
    taken = {e["rule"]: (e["rule"], e["bound"], e["was"]) for e in previous.get("taken_in", [])}
    taken |= {e[0]: e for e in extended if e not in reverted}
    out = {e["rule"]: e for e in previous.get("kept_out", [])}
    out |= {rule_id: {"rule": rule_id, "bound": key, "because": classes[rule_id]} for rule_id, key, _ in reverted}
    taken_in = [taken[r] for r in sorted(taken) if r not in out]
    kept_out = [out[r] for r in sorted(out)]
    era = era_holding(version)
    write_registry(version, wheel, other, same, flags, assignments, taken_in, kept_out, era)

    locate_sources.kept_out_by_execution.cache_clear()
    problems, lock, _ = steps.run("source locks", lambda: locate_sources.check(kb))
    locate_sources.LOCK.write_text(json.dumps(dict(sorted(lock.items())), indent=1, sort_keys=True) + "\n")
    moved, vanished = _anchor_changes(lock, problems, version, other)
    if differential:
        steps.run("stored differential sets", lambda: store_differentials(version, python))
    table = postinit_coverage.measure(postinit_coverage.load_assignments(), kb)
    row = next(r for r in table.rows if r.release == version)
    _regenerate_parsed()

    print_summary(version, other, same, flags, assignments, kb, moved, vanished, problems, extended, reverted, result, row, table, era_taken)
    total = time.monotonic() - started
    print(f"time: {total:.0f} s (" + ", ".join(f"{k} {v:.0f} s" for k, v in steps.times.items()) + ")")
    return 1 if any(part["open"] for part in result.values()) else 0


def _clear_package_caches() -> None:
    from pytest_sglang.model.knowledge import fields, model_tables
    from pytest_sglang.parse import launch

    for function in (fields.release_fields, fields.renames, model_tables.model_table_versions, model_tables.model_table):
        function.cache_clear()
    for name in dir(launch):
        cached = getattr(launch, name)
        if hasattr(cached, "cache_clear"):
            cached.cache_clear()


def _reload(kb_module: Any) -> None:
    kb_module.load.cache_clear()
    _clear_package_caches()


def _regenerate_parsed() -> None:
    """The knowledge base's parsed form (``parsed.json``), as ``python -m pytest_sglang.judge.explain.kb`` writes it."""
    subprocess.run([sys.executable, "-m", "pytest_sglang.judge.explain.kb"], cwd=ROOT, check=True, capture_output=True)


def release_name(version: str) -> re.Pattern[str]:
    """The release's name where it stands alone (0.5.1 is not in 0.5.12 or 0.5.1.post1)."""
    return re.compile(rf"(?<![\w.]){re.escape(version)}(?![\w]|\.\w)")


def names(text: str, version: str) -> bool:
    """Whether a line names the release."""
    return release_name(version).search(text) is not None


def _anchor_changes(lock: dict, problems: list[str], version: str, other: str | None) -> tuple[list[str], list[str]]:
    """(anchors whose line in the new release differs from the nearest release's, anchors a
    rule covering the new release cites that its wheel lacks)."""
    moved = []
    for key, lines in sorted(lock.items()):
        if other is not None and other in lines and version in lines and lines[version] != lines[other]:
            moved.append(f"{key}: {other} line {lines[other]} -> {version} line {lines[version]}")
    vanished = [p for p in problems if p.startswith(("VANISHED", "PROBLEM")) and names(p, version)]
    return moved, vanished


def write_registry(version: str, wheel: Path, other: str | None, same: dict[str, bool], flags: list[str], assignments: list[dict],
                   taken_in: list[tuple[str, str, str]], kept_out: list[dict], era: str | None = None) -> None:
    data = json.loads(REGISTRY.read_text()) if REGISTRY.exists() else {"source": "", "releases": {}}
    data["source"] = "every release the knowledge base holds: its wheel, and what its tables share with the release it was compared with; written by python -m pytest_sglang.model.knowledge.release add"
    data["releases"][version] = {
        "wheel": wheel.name,
        "sha256": digest(wheel),
        "compared_with": other,
        "identical": same,
        "flag_changes": len(flags),
        "assignment_changes": len(assignments),
        # Rules whose range the command widened to take the release in (every anchor in its
        # wheel, no disagreement), and those it kept out because the release contradicted them.
        "taken_in": [{"rule": rule_id, "bound": key, "was": bound} for rule_id, key, bound in taken_in],
        "kept_out": kept_out,
        # The pool sizing era that holds the release (its own sizing agreed), or None.
        "pool_era": era,
    }
    data["releases"] = dict(sorted(data["releases"].items(), key=lambda kv: Version(kv[0])))
    REGISTRY.write_text(json.dumps(data, indent=1) + "\n")


def print_summary(version, other, same, flags, assignments, kb, moved, vanished, problems, extended, reverted, result, row, table, era_note=None) -> None:  # type: ignore[no-untyped-def]
    print()
    print(f"== SGLang {version}" + (f", compared with {other}" if other else ""))
    if same:
        equal = [k for k, v in same.items() if v]
        print("identical to " + str(other) + ": " + (", ".join(equal) if equal else "none of its tables"))
    print(f"flag table: {len(flags)} change(s) against {other}")
    for line in flags:
        print(f"  {line}")
    kinds = {k: sum(a["change"] == k for a in assignments) for k in ("new", "gone", "conditions")}
    print(f"post-init: against {other}, {kinds['new']} assignment(s) new, {kinds['gone']} gone, {kinds['conditions']} under changed conditions")
    for field in sorted({a["field"] for a in assignments}):
        mine = [a for a in assignments if a["field"] == field]
        about, _ = rules_touching(kb, field, version, mine[0])
        print(f"  {field}: {len(about)} rule(s) about it in {version}")
        for a in mine:
            _, near = rules_touching(kb, field, version, a)
            cited = f"  cited near by: {', '.join(near)}" if near else ""
            print(f"    {a['change']:<10} {a['file']}:{a['line']} {a['function']}: = {_clip(a['value'], 70)}{cited}")
            for line in condition_changes(a.get("added", []), a.get("dropped", [])):
                print(f"               {line}")
    if extended:
        kept = [e for e in extended if e not in reverted]
        print(f"rule ranges: {len(kept)} rule(s) now take {version} in (every anchor is in its wheel); {len(reverted)} put back, contradicted by the differential")
        for rule_id, key, bound in kept:
            print(f"  {rule_id}: {key} {bound} -> {version}")
        for rule_id, key, bound in reverted:
            print(f"  put back: {rule_id} ({key} {bound})")
    print(f"source locks: {len(moved)} anchor(s) at another line than in {other}; {len(vanished)} a rule covering {version} cites but its wheel lacks")
    for line in vanished:
        print(f"  {line}")
    for line in moved[:10]:
        print(f"  moved: {line}")
    if len(moved) > 10:
        print(f"  ... and {len(moved) - 10} more (sources.lock.json has each)")
    outside = [p for p in problems if names(p, version) and p not in vanished]
    if outside:
        print(f"rule ranges to check, as the wheel of {version} has every anchor of a rule whose range leaves it out: {len(outside)}")
        for line in outside:
            print(f"  {line}")
    print(f"post-init coverage: {row.assignments} assignments, {row.covered} covered by a rule, {row.out_of_scope} out of scope, "
          f"{row.uncovered} uncovered ({row.percent}% of those in scope)")
    if era_note:
        print(f"pool sizing: SGLang {version} now sized by {era_note}")
    for name, part in result.items():
        counts = ", ".join(f"{k} {v}" for k, v in part["counts"].items())
        print(f"{name} differential: {counts or 'no cases'}; open classes: {', '.join(part['open']) or 'none'}")


def pool_eras(versions: list[str], examples: int) -> int:
    """Only the pool sizing era of releases the knowledge base holds (their tables as they are)."""
    import harness

    python = harness.ensure_environment()
    failed = 0
    for version in versions:
        note, result = choose_era(version, python, examples, lambda v=version: differentials(v, python, examples, only=("pool sizing",)))
        if note is None and result:
            failed += 1
        data = json.loads(REGISTRY.read_text())
        if version in data["releases"]:
            data["releases"][version]["pool_era"] = era_holding(version)
            REGISTRY.write_text(json.dumps(data, indent=1) + "\n")
        print(f"{version}: " + (note or ("already in an era" if not result else "no era agrees: " + ", ".join(result["pool sizing"]["open"]))), flush=True)
    return 1 if failed else 0


def refresh_registry() -> int:
    """Every release's record again from the tables as they are: the release it is compared
    with (the newest older known one: the order releases were added in does not matter), what
    it shares with that one, the changes and its pool era; ``taken_in`` and ``kept_out`` stay,
    as only the add command's differentials decide them."""
    data = json.loads(REGISTRY.read_text())
    known = known_releases()
    for version, record in data["releases"].items():
        other = nearest_known(version, known)
        record["compared_with"] = other
        record["identical"] = identical(version, other) if other else {}
        record["flag_changes"] = len(flag_changes(version, other)) if other else 0
        record["assignment_changes"] = len(assignment_changes(version, other)) if other else 0
        record["pool_era"] = era_holding(version)
    REGISTRY.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{len(data['releases'])} release records written again")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_sglang.model.knowledge.release add", description=__doc__.split("\n\n")[0])
    parser.add_argument("release", help="an SGLang release on the package index (0.5.24) or a path to its wheel")
    parser.add_argument("--examples", type=int, default=12, help="fresh commands per differential (default 12)")
    parser.add_argument("--no-differential", action="store_true", help="write the tables only")
    parser.add_argument("--pool-era", action="store_true", help="only place known releases in a pool sizing era (release: a comma-separated list)")
    parser.add_argument("--refresh-registry", action="store_true", help="write every release's record in releases.json again from the tables (release: 'all')")
    args = parser.parse_args(argv)
    if args.refresh_registry:
        return refresh_registry()
    if args.pool_era:
        return pool_eras(args.release.split(","), args.examples)
    try:
        return add(args.release, examples=args.examples, differential=not args.no_differential)
    except AddError as exc:
        print(f"pytest-sglang release add: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
