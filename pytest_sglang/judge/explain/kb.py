"""The knowledge base: SGLang's rules as data, validated into typed models on load.

Files (``pytest_sglang/model/knowledge/``):

- ``knowledge.toml``: architecture lists, argument defaults, derived values, and how a user
  gives each fact a rule may need;
- ``rules/*.toml``: the rules, one ``[[rule]]`` table each (schema: :class:`Rule`);
- ``sources.lock.json``: for every source anchor, the line it is on in each release
  (written by ``tests/real_sglang/locate_sources.py``, checked in the real-SGLang tier).

``load()`` parses and validates everything once and caches it; every expression is compiled
then, so a malformed rule fails on load, naming its file and id, never mid-explanation.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from packaging.version import Version
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from pytest_sglang.base.errors import SGLangError
from pytest_sglang.judge.explain.expr import Expression, ExpressionError, compile_expression
from pytest_sglang.model.knowledge.model_tables import model_table, model_table_versions
from pytest_sglang.model.versions import nearest_release, parse_version, within
from pytest_sglang.parse.launch import table_versions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
# deprecated, unknown-flag, refused (a value argparse or SGLang's argument handling refuses) and
# unknown-arch (an architecture the release's model registry lacks) are built from the
# per-release flag and model tables, one finding per flag, value or architecture.
Kind = Literal["override", "cap", "noop", "error", "deprecated", "unknown-flag", "refused", "unknown-arch"]

# The names a rule expression may start with (see docs/explain.md, "Facts").
FACT_ROOTS = frozenset({"gpu", "model", "requested", "arg", "effective", "runtime", "list", "derived", "env"})


class KnowledgeError(SGLangError):
    """A knowledge-base file that does not validate."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceRef(_Strict):
    """Where SGLang does what a rule says: ``anchor`` must appear in ``file`` at ``lines`` of
    ``release`` (and, per the lock file, in that file in every release of the rule's range)."""

    release: str
    file: str = Field(pattern=r"^sglang/[\w/]+\.py$")
    lines: tuple[int, int]
    anchor: str = Field(min_length=8)
    # A text that must be *absent* in the rule's range: what a release outside it says instead
    # (``release`` and ``lines`` then cite where it first appears). A rule whose range ends
    # because something else changed (a new start-up error) is bounded this way.
    absent: bool = False

    @field_validator("lines")
    @classmethod
    def _ordered(cls, value: tuple[int, int]) -> tuple[int, int]:
        if value[0] < 1 or value[1] < value[0]:
            raise ValueError("lines is [first, last] with 1 <= first <= last")
        return value

    @property
    def key(self) -> str:
        return f"{self.file}::{self.anchor}"

    def cite(self, line: int | None = None, release: str | None = None) -> str:
        if line is not None and release is not None:
            return f"{self.file}:{line} (SGLang {release})"
        first, last = self.lines
        span = f"{first}" if first == last else f"{first}-{last}"
        return f"{self.file}:{span} (SGLang {self.release})"


class LogPattern(_Strict):
    pattern: str
    note: str

    @field_validator("pattern")
    @classmethod
    def _regex(cls, value: str) -> str:
        re.compile(value)
        return value


class Rule(_Strict):
    """One thing SGLang does to its configuration, in the releases ``since``..``until``."""

    id: str = Field(pattern=r"^[a-z0-9]+(?:[.-][a-z0-9]+)+$")
    title: str = Field(min_length=8)
    since: str
    until: str | None = None
    setting: str = Field(pattern=r"^(runtime\.)?[a-z_][a-z0-9_.]*$")
    # What the finding is about from the user's side: the flag they asked for (defaults to setting).
    flag: str | None = None
    kind: Kind
    severity: Severity
    when: str
    value: str | None = None
    # A cap whose setting counts differently from its flag: the request in the setting's terms
    # (``requested.context_length - 6``: the input limit a context length gives), which the cap
    # is compared with.
    requested_as: str | None = None
    value_words: str | None = None
    runs_on: str | None = None
    """For a rule gated on the GPU: where the feature does run (``"SM90 and SM10x"``)."""
    """How the value is computed, in words, where the expression is longer than a short formula."""
    explanation: str = Field(min_length=20)
    knobs: list[str] = Field(default_factory=list)
    log: str | None = None
    misleading_log: LogPattern | None = None
    not_cause_of: list[str] = Field(default_factory=list)
    sources: list[SourceRef] = Field(min_length=1)

    _when: Expression = PrivateAttr()
    _value: Expression | None = PrivateAttr(default=None)
    _requested_as: Expression | None = PrivateAttr(default=None)
    _since: Version = PrivateAttr()
    _until: Version | None = PrivateAttr(default=None)

    @field_validator("since", "until")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        if value is not None and parse_version(value) is None:
            raise ValueError(f"{value!r} is not an SGLang version")
        return value

    @field_validator("log")
    @classmethod
    def _log_regex(cls, value: str | None) -> str | None:
        if value is not None:
            re.compile(value)
        return value

    @model_validator(mode="after")
    def _compile(self) -> Rule:
        try:
            self._when = compile_expression(self.when, known_roots=FACT_ROOTS)
            self._value = compile_expression(self.value, known_roots=FACT_ROOTS) if self.value is not None else None
            self._requested_as = compile_expression(self.requested_as, known_roots=FACT_ROOTS) if self.requested_as is not None else None
        except ExpressionError as exc:
            raise ValueError(str(exc)) from None
        self._since = parse_version(self.since)  # type: ignore[assignment]
        self._until = parse_version(self.until) if self.until else None
        if self._until is not None and self._until < self._since:
            raise ValueError(f"until {self.until} is before since {self.since}")
        if self.kind in ("override", "cap") and self.value is None:
            raise ValueError(f"a rule of kind {self.kind!r} needs a value expression")
        return self

    @property
    def condition(self) -> Expression:
        return self._when

    @property
    def value_expression(self) -> Expression | None:
        return self._value

    @property
    def requested_as_expression(self) -> Expression | None:
        return self._requested_as

    @property
    def first(self) -> Version:
        return self._since

    @property
    def last(self) -> Version | None:
        return self._until

    def covers(self, version: Version) -> bool:
        return within(version, self._since, self._until)

    @property
    def range_text(self) -> str:
        if self.until is None:
            return f"SGLang {self.since}+"
        return f"SGLang {self.since}" if self.until == self.since else f"SGLang {self.since}-{self.until}"

    @property
    def reads(self) -> frozenset[str]:
        names = set(self._when.names)
        if self._value is not None:
            names |= self._value.names
        if self._requested_as is not None:
            names |= self._requested_as.names
        return frozenset(names)

    @property
    def needs_gpu(self) -> bool:
        """Whether deciding the rule needs a GPU fact (the rules that do not can be checked
        against SGLang's own offline resolution on a CPU machine)."""
        return any(name.startswith("gpu.") for name in self.reads)

    @property
    def requested_flag(self) -> str:
        return self.flag or self.setting.removeprefix("runtime.")


class FactHelp(_Strict):
    """What a fact is and how to give it: in a pytest run, on the command line, in a script."""

    what: str
    pytest: str
    cli: str
    library: str


class KnowledgeFile(_Strict):
    lists: dict[str, list[str]] = Field(default_factory=dict)
    defaults: dict[str, Any] = Field(default_factory=dict)
    derived: dict[str, str] = Field(default_factory=dict)
    facts: dict[str, FactHelp] = Field(default_factory=dict)
    families: dict[str, str] = Field(default_factory=dict)


class RuleFile(_Strict):
    """A rule file: its rules, and the lists, defaults and derived values they bring
    (merged into the knowledge base's; the same name defined twice is an error)."""

    rule: list[Rule] = Field(default_factory=list)
    lists: dict[str, list[str]] = Field(default_factory=dict)
    defaults: dict[str, Any] = Field(default_factory=dict)
    derived: dict[str, str] = Field(default_factory=dict)


class KnowledgeBase:
    """Every rule, list, default and derived value, compiled; and the source-line lock."""

    def __init__(self, knowledge: KnowledgeFile, rules: list[Rule], lock: dict[str, dict[str, int]], newest: str, files: dict[str, str] | None = None) -> None:
        self.knowledge = knowledge
        self.rules = rules
        self.by_id = {rule.id: rule for rule in rules}
        self.lock = lock
        self.newest = Version(newest)
        self.releases = sorted(Version(v) for v in table_versions())  # oldest first
        self.oldest = min(rule.first for rule in rules) if rules else Version("0.5.5")
        self.derived: dict[str, Expression] = {}
        for name, text in knowledge.derived.items():
            try:
                self.derived[name] = compile_expression(text, known_roots=FACT_ROOTS)
            except ExpressionError as exc:
                raise KnowledgeError(f"knowledge.toml [derived] {name}: {exc}") from None
        self.lists = {name: frozenset(members) for name, members in knowledge.lists.items()}
        # A list each release's model table holds is read per release (list_for); these are
        # the newest table's, for a situation whose release is unknown.
        self.release_lists = release_list_names()
        newest_table = model_table(model_table_versions()[-1]) if model_table_versions() else None
        for name in self.release_lists - set(self.lists):
            self.lists[name] = newest_table.lists.get(name, frozenset()) if newest_table else frozenset()
        self._list_cache: dict[tuple[str, str | None], frozenset[str]] = {}
        self.files = dict(files or {})
        self.order = _evaluation_order(rules, self.files, self.derived)
        self._applicable: dict[str | None, tuple[Rule, ...]] = {}
        through = _reads_through_derived(self.derived)
        # Every fact each rule reads, through its derived values too.
        self.reads_all: dict[str, frozenset[str]] = {
            rule.id: rule.reads.union(*(through.get(n.removeprefix("derived."), (frozenset(), frozenset()))[0] for n in rule.reads if n.startswith("derived.")))
            for rule in rules
        }

    def applicable(self, release: Version | None) -> tuple[Rule, ...]:
        """The rules that hold in a release, in evaluation order (``None``, an unknown release:
        those that hold in every release); computed once per release."""
        key = str(release) if release is not None else None
        if key not in self._applicable:
            if release is None:
                rules = (r for r in self.order if r.first <= self.oldest and r.last is None)
            else:
                rules = (r for r in self.order if r.covers(release))
            self._applicable[key] = tuple(rules)
        return self._applicable[key]

    def list_for(self, name: str, version: Version | None) -> frozenset[str]:
        """A list as the release reads it: its own model table's, when the table holds the
        list; a list that release does not define is empty (nothing is on it); a list no table
        holds is the knowledge files' (``KeyError`` for a name neither has)."""
        if name not in self.release_lists or version is None or not model_table_versions():
            return self.lists[name]
        key = (name, str(version))
        if key not in self._list_cache:
            table = model_table(nearest_release(version, model_table_versions()))
            self._list_cache[key] = table.lists.get(name, frozenset()) if table is not None else self.lists[name]
        return self._list_cache[key]

    def line_of(self, source: SourceRef, release: str) -> int | None:
        """The line ``source.anchor`` is on in ``release`` (from the lock), if known."""
        return self.lock.get(source.key, {}).get(release)

    def __len__(self) -> int:
        return len(self.rules)

    def __repr__(self) -> str:
        return f"<KnowledgeBase {len(self.rules)} rules, SGLang {self.oldest}-{self.newest}>"


def _evaluation_order(rules: list[Rule], files: dict[str, str], derived: dict[str, Expression] | None = None) -> list[Rule]:
    """Rules that set a value come before the rules of the same releases that read it, as ``effective.*`` or through a
    ``derived.*`` value (followed to its own names, derived values within derived values
    included), or ask whether it ``fired()``; a cycle is a knowledge-base error."""
    reads = _reads_through_derived(derived or {})
    setters: dict[str, list[str]] = {}
    for rule in rules:
        setters.setdefault(rule.setting, []).append(rule.id)
    by_id = {rule.id: rule for rule in rules}
    deps: dict[str, set[str]] = {}
    for rule in rules:
        wanted = set(rule.condition.rules)
        if rule.value_expression is not None:
            wanted |= rule.value_expression.rules
        names: set[str] = set(rule.reads)
        fired: set[str] = set()
        for name in rule.reads:
            if name.startswith("derived."):
                more, more_fired = reads.get(name.removeprefix("derived."), (frozenset(), frozenset()))
                names |= more
                fired |= more_fired
        wanted |= fired
        for name in names:
            if name.startswith("effective."):
                wanted |= {r for r in setters.get(name.removeprefix("effective."), []) if r != rule.id and _overlap(rule, by_id[r])}
        missing = [r for r in wanted if r not in by_id]
        if missing:
            raise KnowledgeError(f"{files.get(rule.id, 'a rule file')} rule {rule.id}: fired({missing[0]!r}) names no rule")
        deps[rule.id] = wanted
    ordered: list[Rule] = []
    state: dict[str, int] = {}

    def visit(rule_id: str, path: tuple[str, ...]) -> None:
        if state.get(rule_id) == 2:
            return
        if state.get(rule_id) == 1:
            raise KnowledgeError(f"{files.get(rule_id, 'a rule file')}: rules depend on each other in a cycle: {' -> '.join([*path, rule_id])}")
        state[rule_id] = 1
        for dep in sorted(deps[rule_id]):
            visit(dep, (*path, rule_id))
        state[rule_id] = 2
        ordered.append(by_id[rule_id])

    for rule in rules:
        visit(rule.id, ())
    return ordered


def _overlap(a: Rule, b: Rule) -> bool:
    """Whether two rules hold in a common release (only those can feed each other)."""
    return (b.last is None or a.first <= b.last) and (a.last is None or b.first <= a.last)


def _reads_through_derived(derived: dict[str, Expression]) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Every fact name and every ``fired()`` rule each derived value reads, through the derived
    values it reads in turn; a derived value that reads itself (directly or not) is an error."""
    done: dict[str, tuple[frozenset[str], frozenset[str]]] = {}

    def walk(name: str, path: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str]]:
        if name in done:
            return done[name]
        if name in path:
            raise KnowledgeError(f"[derived] values read each other in a cycle: {' -> '.join(f'derived.{n}' for n in (*path, name))}")
        expression = derived.get(name)
        if expression is None:
            return frozenset(), frozenset()
        names, fired = set(expression.names), set(expression.rules)
        for read in expression.names:
            if read.startswith("derived."):
                more, more_fired = walk(read.removeprefix("derived."), (*path, name))
                names |= more
                fired |= more_fired
        done[name] = (frozenset(names), frozenset(fired))
        return done[name]

    for name in derived:
        walk(name, ())
    return done


def _data() -> Any:
    return resources.files("pytest_sglang.model.knowledge")


PARSED = "parsed.json"


def _texts() -> tuple[str, dict[str, str], str]:
    root = _data()
    return (
        root.joinpath("knowledge.toml").read_text(encoding="utf-8"),
        {f"rules/{p.name}": p.read_text(encoding="utf-8") for p in sorted(root.joinpath("rules").iterdir(), key=lambda p: p.name) if p.name.endswith(".toml")},
        root.joinpath("sources.lock.json").read_text(encoding="utf-8"),
    )


def digest(knowledge_text: str, rule_texts: dict[str, str]) -> str:
    """What the TOML files say, in one hash: a parsed copy is used only while it matches."""
    h = hashlib.sha256(knowledge_text.encode())
    for name in sorted(rule_texts):
        h.update(b"\0" + name.encode() + b"\0" + rule_texts[name].encode())
    return h.hexdigest()


def parsed_copy(knowledge_text: str, rule_texts: dict[str, str]) -> str:
    """The TOML files parsed to JSON (``data/parsed.json``): the same data, read ten times faster.
    Written by ``python -m pytest_sglang.judge.explain.kb``; a test keeps it current."""
    return json.dumps(
        {"digest": digest(knowledge_text, rule_texts), "knowledge": tomllib.loads(knowledge_text), "rules": {n: tomllib.loads(t) for n, t in sorted(rule_texts.items())}},
        sort_keys=True,
        separators=(",", ":"),
    )


@lru_cache(maxsize=1)
def load() -> KnowledgeBase:
    """The packaged knowledge base (parsed, validated and compiled once per process). The TOML
    files are the source; their parsed JSON copy is read instead while it matches them."""
    knowledge_text, rule_texts, lock_text = _texts()
    parsed: dict[str, Any] | None = None
    try:
        candidate = json.loads(_data().joinpath(PARSED).read_text(encoding="utf-8"))
        if candidate.get("digest") == digest(knowledge_text, rule_texts):
            parsed = candidate
    except (OSError, ValueError):
        parsed = None
    return load_from(knowledge_text=knowledge_text, rule_texts=rule_texts, lock_text=lock_text, parsed=parsed)


def load_from(*, knowledge_text: str, rule_texts: dict[str, str], lock_text: str = "{}", parsed: dict[str, Any] | None = None) -> KnowledgeBase:
    """Build a knowledge base from texts (``load()`` reads the packaged ones; tests and
    rule authors can pass their own)."""
    try:
        knowledge = KnowledgeFile.model_validate(parsed["knowledge"] if parsed else tomllib.loads(knowledge_text))
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise KnowledgeError(f"knowledge.toml: {_first_error(exc)}") from None
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    merged = {"lists": dict(knowledge.lists), "defaults": dict(knowledge.defaults), "derived": dict(knowledge.derived)}
    for name, text in rule_texts.items():
        try:
            raw = parsed["rules"][name] if parsed else tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise KnowledgeError(f"{name}: {exc}") from None
        for section in ("lists", "defaults", "derived"):
            table = raw.get(section, {})
            if not isinstance(table, dict):
                raise KnowledgeError(f"{name}: [{section}] must be a table")
            for key, value in table.items():
                if key in merged[section]:
                    raise KnowledgeError(f"{name}: [{section}] {key} is defined twice")
                if section == "lists" and key in release_list_names():
                    raise KnowledgeError(f"{name}: [lists] {key} is defined twice: each release's model table (models/) holds it")
                merged[section][key] = value
        for index, entry in enumerate(raw.get("rule", [])):
            try:
                rule = Rule.model_validate(entry)
            except ValidationError as exc:
                label = entry.get("id") if isinstance(entry, dict) else None
                raise KnowledgeError(f"{name} rule {label or f'#{index + 1}'}: {_first_error(exc)}") from None
            if rule.id in seen:
                raise KnowledgeError(f"{name}: rule id {rule.id} is also in {seen[rule.id]}")
            seen[rule.id] = name
            rules.append(rule)
        extra = set(raw) - {"rule", "lists", "defaults", "derived"}
        if extra:
            raise KnowledgeError(f"{name}: unexpected table {sorted(extra)[0]!r} (a rule file holds [[rule]], [lists], [defaults] and [derived])")
    try:
        knowledge = KnowledgeFile.model_validate({**knowledge.model_dump(), **merged})
    except ValidationError as exc:
        raise KnowledgeError(f"rule files: {_first_error(exc)}") from None
    try:
        lock = json.loads(lock_text)
    except ValueError as exc:
        raise KnowledgeError(f"sources.lock.json: {exc}") from None
    newest = max(table_versions(), key=Version)
    for rule in rules:
        for name in rule.reads:
            if name.startswith("list.") and name.removeprefix("list.") not in knowledge.lists and name.removeprefix("list.") not in release_list_names():
                raise KnowledgeError(f"{seen[rule.id]} rule {rule.id}: {name} is not a list (knowledge.toml or a rule file's [lists])")
            if name.startswith("derived.") and name.removeprefix("derived.") not in knowledge.derived:
                raise KnowledgeError(f"{seen[rule.id]} rule {rule.id}: {name} is not a derived value (knowledge.toml or a rule file's [derived])")
    return KnowledgeBase(knowledge, rules, lock, newest, files=seen)



@lru_cache(maxsize=1)
def release_list_names() -> frozenset[str]:
    """The names of the lists the per-release model tables hold (any release's)."""
    names: set[str] = set()
    for version in model_table_versions():
        table = model_table(version)
        names |= set(table.lists) if table is not None else set()
    return frozenset(names)


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        return f"{where}: {msg}" if where else msg
    return " ".join(str(exc).split())


if __name__ == "__main__":  # python -m pytest_sglang.judge.explain.kb: rewrite model/knowledge/parsed.json
    from pathlib import Path

    from pytest_sglang.base.files import write_text

    _knowledge, _rules, _ = _texts()
    target = Path(__file__).parents[2] / "model" / "knowledge" / PARSED
    load_from(knowledge_text=_knowledge, rule_texts=_rules)  # files that do not load are not copied
    write_text(target, parsed_copy(_knowledge, _rules) + "\n", what="the parsed knowledge base")
    print(f"wrote {target}")
