"""The launch command: what was *requested*, read with SGLang's own flag table.

Accepts a shell command line (``python -m sglang.launch_server ...``, ``sglang serve ...``,
environment prefixes, backslash continuations, a markdown fence), a systemd unit (its
``ExecStart=`` and ``Environment=``), ``/server_info.launch_command`` (argv without the
entry point) or an argv list. Flags are matched as argparse does: exact spellings, aliases
(``--tp-size``/``--tensor-parallel-size``), and unambiguous prefixes (``--tp``).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Callable, Mapping, Sequence

from packaging.version import Version

from ._argv import ENV_ASSIGNMENT, NEGATIVE_NUMBER, option_like
from .errors import SpecError
from .redact import REDACTED, is_secret_env, is_secret_flag, is_secret_key, redact_command, scrub, secret_values
from .versions import parse_version

# SGLang's own flag tables, one per release, each the argparse parser of that release
# (tests/real_sglang/flag_table_live.py writes them and the real tier checks them).
_TABLE_PREFIX = "sglang-cli-"


@dataclass(frozen=True)
class FlagTable:
    """SGLang's argparse table for one version (generated from the real package)."""

    sglang_version: str
    fields: dict[str, dict[str, Any]]
    by_flag: dict[str, str]
    actions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def lookup(self, flag: str) -> tuple[str | None, str | None]:
        """(field, problem): exact spelling, else a unique prefix, as argparse matches."""
        full, problem = self.spelling(flag)
        return (self.by_flag[full] if full else None), problem

    def spelling(self, flag: str) -> tuple[str | None, str | None]:
        """(the full flag argparse takes ``flag`` for, problem)."""
        if flag in self.by_flag:
            return flag, None
        matches = sorted(f for f in self.by_flag if f.startswith(flag))
        if len(matches) == 1:
            return matches[0], None
        if len(matches) > 1:
            shown = ", ".join(matches[:4]) + (", ..." if len(matches) > 4 else "")
            return None, f"{flag} is ambiguous in SGLang {self.sglang_version} (could be {shown}): SGLang refuses to start"
        return None, None

    def action(self, full_flag: str) -> dict[str, Any]:
        """The argparse action a full spelling belongs to: the field's own, or one of its
        further spellings (a deprecated alias, a legacy switch storing a constant)."""
        return self.actions.get(full_flag) or self.fields[self.by_flag[full_flag]]


@lru_cache(maxsize=None)
def flag_table(sglang_version: str | None = None) -> FlagTable:
    """The table of the given version, or of the nearest version we have one for."""
    name = f"{_TABLE_PREFIX}{_nearest_table(sglang_version)}.json"
    data = json.loads(_knowledge_data().joinpath(name).read_text())
    by_flag: dict[str, str] = {}
    actions: dict[str, dict[str, Any]] = {}
    for dest, entry in data["fields"].items():
        for flag in entry["flags"]:
            by_flag[flag] = dest
        for alias in entry.get("aliases", ()):
            for flag in alias["flags"]:
                by_flag[flag] = dest
                actions[flag] = alias
    return FlagTable(sglang_version=data["sglang_version"], fields=data["fields"], by_flag=by_flag, actions=actions)


def _knowledge_data() -> Any:
    return resources.files("pytest_sglang").joinpath("knowledge_data")


@lru_cache(maxsize=None)
def table_versions() -> tuple[str, ...]:
    """The SGLang releases the package has a flag table for, oldest first."""
    names = (p.name for p in _knowledge_data().iterdir() if p.name.startswith(_TABLE_PREFIX) and p.name.endswith(".json"))
    return tuple(sorted((n[len(_TABLE_PREFIX) : -len(".json")] for n in names), key=Version))


def _nearest_table(version: str | None) -> str:
    """The release's own table; for a release without one, the newest older table (a newer
    SGLang than the package knows gets the newest; an older one, the oldest)."""
    wanted = parse_version(version)
    known = list(table_versions())
    if wanted is None:
        return known[-1]
    wanted = Version(wanted.base_version)
    older = [v for v in known if Version(v) <= wanted]
    return older[-1] if older else known[0]


def _table_for(version: str | None, *, strict: bool) -> tuple[str, str | None]:
    """(the table to read with, a note when it is not the release's own).

    No version means the newest table. A release newer than the newest table is read with
    the newest, and the note says so. A string that is not a version, or a release older than
    the oldest table, is a :class:`SpecError` when ``strict``; otherwise the nearest table is
    used with a note (a server reports what it reports)."""
    known = table_versions()
    if version is None:
        return known[-1], None
    chosen = _nearest_table(version)
    wanted = parse_version(version)
    tables = f"flag tables exist for SGLang {known[0]} to {known[-1]}"
    if wanted is None:
        if strict:
            raise SpecError(f"sglang_version {_shown(version)} is not a version: give an SGLang release such as {known[-1]!r} ({tables})")
        return chosen, f"SGLang version {_shown(version)} is not a version: read with {chosen}'s flag table"
    base = Version(wanted.base_version)
    if base < Version(known[0]):
        if strict:
            raise SpecError(f"no flag table for SGLang {_text(version)}: {tables}")
        return chosen, f"no flag table for SGLang {_text(version)}: read with {chosen}'s, the oldest"
    if base != Version(chosen):
        return chosen, f"no flag table for SGLang {_text(version)}: read with {chosen}'s"
    return chosen, None


def _text(version: object) -> str:
    """A version as text for a one-line message (whatever a server or a caller handed over)."""
    text = " ".join(str(version).split())
    return text if len(text) <= 40 else text[:40] + "..."


def _shown(version: object) -> str:
    text = str(version)
    return repr(text) if len(text) <= 40 else repr(text[:40]) + "..."


@dataclass
class LaunchCommand:
    """A parsed launch command. ``requested`` maps ServerArgs field names to typed values,
    exactly those the command (and its ``--config`` file) set; secrets are redacted."""

    text: str
    entrypoint: str | None
    env: dict[str, str]
    argv: list[str]
    requested: dict[str, Any]
    spelled: dict[str, str] = field(default_factory=dict)
    unknown: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    # Deprecated spellings used, each with the flag SGLang names instead ("" when it names none).
    deprecated: dict[str, str] = field(default_factory=dict)
    # The full flag that set each field, as argparse completed the spelling used.
    flags: dict[str, str] = field(default_factory=dict)
    config_file: str | None = None
    flag_table_version: str = ""

    def __getitem__(self, name: str) -> Any:
        return self.requested[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.requested.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self.requested


def split_command(text: str) -> tuple[list[str], dict[str, str], list[str]]:
    """Words of a command line (or a systemd unit), its environment, and problems found."""
    problems: list[str] = []
    env: dict[str, str] = {}
    if re.search(r"^\s*ExecStart\s*=", text, re.M):
        text, env = _from_systemd_unit(text, problems)
    text = text.replace("```", " ")
    text = re.sub(r"\\\r?\n", " ", text)
    try:
        words = shlex.split(text, comments=False, posix=True)
    except ValueError as exc:
        problems.append(f"the command line has {exc} (unbalanced quotes?); read it word by word")
        words = text.split()
    # Leading VAR=value words and an 'env' prefix are the process environment.
    while words and (words[0] == "env" or ENV_ASSIGNMENT.match(words[0])):
        word = words.pop(0)
        if word != "env":
            name, _, value = word.partition("=")
            env[name] = value
    return words, env, problems


def _from_systemd_unit(text: str, problems: list[str]) -> tuple[str, dict[str, str]]:
    env: dict[str, str] = {}
    joined = re.sub(r"\\\r?\n", " ", text)
    exec_start = ""
    for line in joined.splitlines():
        key, _, value = line.strip().partition("=")
        key = key.strip()
        if key == "ExecStart":
            exec_start = value.strip().lstrip("@-:+!")
        elif key == "Environment":
            for item in shlex.split(value):
                name, eq, val = item.partition("=")
                if eq:
                    env[name] = val
    if not exec_start:
        problems.append("the unit has no ExecStart= line")
    return exec_start, env


def _entrypoint(words: list[str]) -> tuple[str | None, list[str], list[str]]:
    """(entry point, the arguments after it, problems)."""
    for i, word in enumerate(words):
        if word == "-m" and i + 1 < len(words) and words[i + 1] in ("sglang.launch_server", "sglang.serve"):
            return f"python -m {words[i + 1]}", words[i + 2 :], []
        if word.endswith("sglang/launch_server.py"):
            return "launch_server.py", words[i + 1 :], []
        if (word == "sglang" or word.endswith("/sglang")) and i + 1 < len(words) and words[i + 1] == "serve":
            return "sglang serve", words[i + 2 :], []
    if words and words[0].startswith("-"):
        return None, words, []  # already the arguments (e.g. /server_info launch_command)
    return None, words, ["no 'python -m sglang.launch_server' or 'sglang serve' found; read every flag anyway"]


def parse_launch_command(
    command: str | Sequence[str],
    *,
    sglang_version: str | None = None,
    config_loader: Callable[[str], Mapping[str, Any]] | None = None,
    strict_version: bool = True,
) -> LaunchCommand:
    """Parse a launch command into the fields it requests, with SGLang's flag table.

    ``sglang_version`` picks the table: that release's own (``'0.5.12'``, ``'0.5.8.post1'``);
    a newer release than the package knows is read with the newest table and ``problems``
    says so; ``None`` means the newest. A string that is not a version, or a release older
    than the oldest table, raises :class:`~pytest_sglang.errors.SpecError`, unless
    ``strict_version=False`` (for a version a server reported): then the nearest table is
    used, with a note in ``problems``.

    ``config_loader(path)`` returns the mapping of a ``--config`` YAML file (the caller knows
    where it lives: locally, or on the host over SSH); without it the file is only named.
    """
    table_version, table_note = _table_for(sglang_version, strict=strict_version)
    if isinstance(command, str):
        words, env, problems = split_command(command)
        text = command
    else:
        words, env, problems = list(command), {}, []
        text = shlex.join(words)
    entrypoint, argv, more = _entrypoint(words)
    problems += more
    if table_note:
        problems.insert(0, table_note)
    table = flag_table(table_version)
    result = LaunchCommand(
        text=redact_command(" ".join(text.split())),
        entrypoint=entrypoint,
        env={k: (REDACTED if is_secret_env(k) else v) for k, v in env.items()},
        argv=redact_command(shlex.join(argv)).split(" ") if argv else [],
        requested={},
        problems=problems,
        flag_table_version=table.sglang_version,
    )
    config_path = _config_path(argv)
    if config_path is not None:
        result.config_file = config_path
        if config_loader is not None:
            _apply(result, table, _config_words(config_loader(config_path), table, result), from_config=True)
        else:
            result.problems.append(f"--config {config_path}: the file was not read; values it sets are missing here")
    _apply(result, table, argv, from_config=False)
    for name in list(result.requested):
        if is_secret_key(name) and result.requested[name] not in (None, False, ""):
            result.requested[name] = REDACTED
    # A secret may also land where no secret belongs (a stray word after a misplaced flag):
    # whatever followed a secret flag is scrubbed from every message and value.
    hidden = secret_values(argv)
    if hidden:
        result.problems = [scrub(problem, hidden) for problem in result.problems]
        result.unknown = {flag: _scrubbed(value, hidden) for flag, value in result.unknown.items()}
        result.requested = {name: _scrubbed(value, hidden) for name, value in result.requested.items()}
    return result


def _scrubbed(value: Any, hidden: list[str]) -> Any:
    if isinstance(value, str):
        return REDACTED if value in hidden else scrub(value, hidden)
    if isinstance(value, list):
        return [_scrubbed(v, hidden) for v in value]
    return value


def _config_path(argv: list[str]) -> str | None:
    for i, word in enumerate(argv):
        if word == "--config" and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith("--config="):
            return word.split("=", 1)[1]
    return None


def _config_words(config: Mapping[str, Any], table: FlagTable, result: LaunchCommand) -> list[str]:
    """A --config mapping as the flags SGLang makes of it (0.5.23 ``ConfigArgumentMerger``):
    ``--<key>`` exactly as the key is written, so ``chunked_prefill_size:`` is not a flag;
    store-true keys appear only when true; other booleans as ``true``/``false``; lists
    expand; mappings become JSON."""
    store_true = {dest for dest, entry in table.fields.items() if entry["kind"] == "store_true"}
    store_true |= {
        flag[2:].replace("-", "_")
        for flag in table.by_flag
        if flag.startswith("--") and table.action(flag)["kind"] in ("store_true", "store_const", "ignored")
    }
    words: list[str] = []
    for key, value in config.items():
        flag = f"--{key}"
        if isinstance(value, bool):
            if str(key).replace("-", "_") in store_true:
                words += [flag] if value else []
            else:
                words += [flag, str(value).lower()]
        elif isinstance(value, list):
            words += [flag, *(str(v) for v in value)] if value else []
        elif isinstance(value, dict):
            words += [flag, json.dumps(value)]
        else:
            words += [flag, str(value)]
    return words


def _apply(result: LaunchCommand, table: FlagTable, argv: list[str], *, from_config: bool) -> None:
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if not word.startswith("-") or NEGATIVE_NUMBER.match(word):
            result.problems.append(f"stray word {word!r} (not a flag's value)")
            continue
        flag, eq, inline = word.partition("=")
        if flag == "--config":
            i += 0 if eq else 1
            continue
        full, problem = table.spelling(flag)
        if problem:
            result.problems.append(problem)
        if full is None:
            values, i = _values(argv, i, inline if eq else None, nargs="*")
            guessed = _guess(values)
            secret = is_secret_flag(flag) or is_secret_key(flag.lstrip("-").replace("-", "_"))
            result.unknown[flag] = REDACTED if secret and guessed not in (True, None, "") else guessed
            if not problem:
                result.problems.append(f"{flag} is not a flag of SGLang {table.sglang_version}")
            continue
        dest = table.by_flag[full]
        entry = table.action(full)
        kind = entry["kind"]
        if entry.get("deprecated"):
            result.deprecated[full] = entry.get("instead") or ""
        if kind == "ignored":
            if entry.get("refused"):
                result.problems.append(f"{full}: SGLang {table.sglang_version} refuses to start ({entry['refused']})")
            elif eq:
                result.problems.append(f"{flag} takes no value (got {inline!r})")
            continue  # accepted and ignored: it sets nothing
        if kind in ("store_true", "store_false", "store_const", "boolean_optional"):
            value: Any
            if kind == "boolean_optional":
                value = not full.startswith("--no-")
            else:
                value = {"store_true": True, "store_false": False}.get(kind, entry.get("const"))
            if entry.get("takes_value"):
                values, i = _values(argv, i, inline if eq else None, nargs=None)
                _convert(values, entry, flag, result, many=False)  # checked against its choices, not stored
            elif eq:
                result.problems.append(f"{flag} takes no value (got {inline!r})")
        else:
            values, i = _values(argv, i, inline if eq else None, nargs=entry.get("nargs"))
            value = _convert(values, entry, flag, result, many=entry.get("nargs") in ("+", "*"))
        result.requested[dest] = value
        result.spelled[dest] = flag if not from_config else f"--config {result.config_file}"
        result.flags[dest] = full


def _values(argv: list[str], i: int, inline: str | None, *, nargs: Any) -> tuple[list[str], int]:
    if inline is not None:
        return [inline], i
    if nargs in ("+", "*"):
        values = []
        while i < len(argv) and (not argv[i].startswith("-") or NEGATIVE_NUMBER.match(argv[i])):
            values.append(argv[i])
            i += 1
        return values, i
    if nargs == "?":
        if i < len(argv) and (not argv[i].startswith("-") or NEGATIVE_NUMBER.match(argv[i])):
            return [argv[i]], i + 1
        return [], i
    # argparse never takes an option-like word ("--x", "-x", not "-5" or "-") as a value.
    if i < len(argv) and not option_like(argv[i]):
        return [argv[i]], i + 1
    return [], i


def _convert(values: list[str], entry: dict[str, Any], flag: str, result: LaunchCommand, *, many: bool) -> Any:
    if not values and entry.get("nargs") not in ("*", "?"):
        result.problems.append(f"{flag} needs a value")
        return None
    converted = [_typed(v, entry.get("type"), flag, result) for v in values]
    choices = entry.get("choices")
    if choices:
        for v in values:
            if v not in choices:
                result.problems.append(f"{flag} {v!r} is not one of SGLang {result.flag_table_version}'s choices ({', '.join(choices[:8])}{', ...' if len(choices) > 8 else ''})")
    if many:
        return converted
    return converted[0] if converted else None


def _typed(value: str, type_name: str | None, flag: str, result: LaunchCommand) -> Any:
    try:
        if type_name == "int":
            return int(value)
        if type_name == "float":
            return float(value)
        if type_name == "json":
            return json.loads(value)
    except ValueError:
        result.problems.append(f"{flag} {value!r} is not a valid {type_name}")
    return value


def _guess(values: list[str]) -> Any:
    """A value for a flag this table does not know (an older or newer SGLang)."""
    if not values:
        return True
    typed: list[Any] = []
    for v in values:
        for cast in (int, float):
            try:
                typed.append(cast(v))
                break
            except ValueError:
                continue
        else:
            typed.append(v)
    return typed[0] if len(typed) == 1 else typed
