"""The launch command: what was *requested*, read with SGLang's own flag table.

Accepts a shell command line (``python -m sglang.launch_server ...``, ``sglang serve ...``,
environment prefixes, backslash continuations, a markdown fence), a systemd unit (its
``ExecStart=`` and ``Environment=``), ``/server_info.launch_command`` (argv without the
entry point), an argv list, or argv written as a list: a Python list literal
(``prepare_server_args([...])``) or a YAML list (a Kubernetes container's ``command:`` and
``args:``), see :mod:`pytest_sglang.parse.listforms`. Flags are matched as argparse does: exact
spellings, aliases (``--tp-size``/``--tensor-parallel-size``), and unambiguous prefixes
(``--tp``); values go through the release's converters and its own argparse actions.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import cached_property, lru_cache
from importlib import resources
from typing import Any, Callable, Mapping, Sequence

from packaging.version import Version

from pytest_sglang.base.argv import ENV_ASSIGNMENT, option_like
from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.secrets import clip, forms
from pytest_sglang.model.versions import as_release, nearest_release, parse_version
from pytest_sglang.parse.listforms import ListForm, read_list_form
from pytest_sglang.parse.redact import MAX_COMMAND, REDACTED, is_refused_command, is_secret_env, is_secret_flag, is_secret_key, redact_command_all, scrub, secret_values, word_secrets
from pytest_sglang.parse.redact import _secret_positions as secret_positions
from pytest_sglang.parse.shellscript import Command, ExpansionTooLarge, Script, is_unresolved, literal_words, plain, read_script, reason, shell_word, unmarked, unresolved_parts, why
from pytest_sglang.parse.shellwords import ShellSyntaxError, split_words

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
    # What the release's ConfigArgumentMerger computes from its parser: store_true keys and
    # refused keys (with their action's class), when the table records them.
    config: dict[str, Any] = field(default_factory=dict)
    # The release's own argparse action classes its flags use (an entry's "action"), each with
    # its source: what :data:`ACTIONS` models.
    action_sources: dict[str, str] = field(default_factory=dict)

    @property
    def merges_config(self) -> bool:
        """Whether the release merges a ``--config`` YAML file into argv (0.5.3+)."""
        return bool(self.config.get("merger", True))

    def lookup(self, flag: str) -> tuple[str | None, str | None]:
        """(field, problem): exact spelling, else a unique prefix, as argparse matches."""
        full, problem = self.spelling(flag)
        return (self.by_flag[full] if full else None), problem

    def spelling(self, flag: str) -> tuple[str | None, str | None]:
        """(the full flag argparse takes ``flag`` for, problem)."""
        if flag in self.by_flag:
            return flag, None
        # The flags ``flag`` is a prefix of sit together in sorted order: at most five are looked at.
        ordered = self._ordered_flags
        start = bisect_left(ordered, flag)
        matches = [f for f in ordered[start : start + 5] if f.startswith(flag)]
        if len(matches) == 1:
            return matches[0], None
        if len(matches) > 1:
            shown = ", ".join(matches[:4]) + (", ..." if len(matches) > 4 else "")
            return None, f"{flag} is ambiguous in SGLang {self.sglang_version} (could be {shown}): SGLang refuses to start"
        return None, None

    @cached_property
    def _ordered_flags(self) -> tuple[str, ...]:
        return tuple(sorted(self.by_flag))

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
    return FlagTable(
        sglang_version=data["sglang_version"],
        fields=data["fields"],
        by_flag=by_flag,
        actions=actions,
        config=data.get("config") or {},
        action_sources=data.get("actions") or {},
    )


def _knowledge_data() -> Any:
    return resources.files("pytest_sglang.model.knowledge").joinpath("flags")


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
    return known[-1] if wanted is None else nearest_release(wanted, known)


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
    if Version(chosen) == wanted:
        return chosen, None
    release = as_release(wanted)
    if wanted.is_devrelease:
        return chosen, f"SGLang {_text(version)} is a development build: read with the flag table of {chosen}, the newest release before it"
    if release < Version(known[0]):
        if strict:
            raise SpecError(f"no flag table for SGLang {_text(version)}: {tables}")
        return chosen, f"no flag table for SGLang {_text(version)}: read with {chosen}'s, the oldest"
    if release != Version(chosen):
        return chosen, f"no flag table for SGLang {_text(version)}: read with {chosen}'s"
    return chosen, None


def _text(version: object) -> str:
    """A version as text for a one-line message (whatever a server or a caller handed over)."""
    return clip(version, 43, ellipsis="...")


def _shown(version: object) -> str:
    return clip(repr(str(version)), 46, ellipsis="...", one_line=False)


@dataclass(frozen=True)
class Refusal:
    """A part of the command the release refuses to start with.

    ``kind``: ``unknown-flag``, ``ambiguous-flag``, ``unrecognized`` (words no flag takes:
    unquoted JSON split by the shell, a value after a switch), ``invalid-choice``,
    ``invalid-value`` (a value its converter or action refuses), ``missing-value``,
    ``required``, ``deprecated`` (a retired flag the release refuses), ``config`` (the
    ``--config`` file) or ``serve`` (``sglang serve``'s own checks). ``flag``: the flag or word
    as the command wrote it. ``message``: what SGLang says, as its argparse or its code words it
    (``argument --tp-size/--tensor-parallel-size: invalid int value: '{5,'``). ``value``: the
    value refused, for a choice or a value."""

    kind: str
    flag: str
    message: str
    value: str | None = None


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
    # What the release refuses to start with, one entry per flag, value or word (the problems
    # that say "SGLang refuses to start" are these, in words).
    refusals: list[Refusal] = field(default_factory=list)
    # The words argparse does not recognise, in order (unknown flags and their values, stray words).
    unrecognized: list[str] = field(default_factory=list)
    # Deprecated spellings used, each with the flag SGLang names instead ("" when it names none).
    deprecated: dict[str, str] = field(default_factory=dict)
    # The full flag that set each field, as argparse completed the spelling used.
    flags: dict[str, str] = field(default_factory=dict)
    config_file: str | None = None
    flag_table_version: str = ""
    # How the text was written: "shell", "systemd unit", "argv", "Python list" or "YAML list".
    form: str = ""
    # Why a list form could not be read (too long, nested too deep, not balanced), when it could not.
    read_error: str | None = None
    # Fields whose value the shell text does not give (a variable it never sets, $(...), $1),
    # each with how it was written ("$MAX_RUNNING_REQUESTS"); "env.NAME" for the environment.
    # They are not in ``requested``: a value not known is never judged as the text it was written as.
    unresolved: dict[str, str] = field(default_factory=dict)
    # For each of those, why it is not known ("`$MAX_RUNNING_REQUESTS` is not set in this file").
    unresolved_why: dict[str, str] = field(default_factory=dict)
    # Words no flag took whose value is not known ($EXTRA_ARGS): they may hold more flags.
    unresolved_words: list[str] = field(default_factory=list)
    # What reading the shell text says: a missing '\' that ends the command early, defaults the
    # script gives variables it does not set, the values and words that are not known.
    notes: list[str] = field(default_factory=list)
    # The argv that was judged, as one shell-quoted line: the entry point and its words, secrets
    # redacted, a part not known written as it was ("$TP").
    command_line: str = ""

    def __getitem__(self, name: str) -> Any:
        return self.requested[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.requested.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self.requested

    def require_arguments(self) -> None:
        """Raise :class:`SpecError` (one line) when the command gives SGLang nothing to read: a
        list form that cannot be read, no words after the entry point, only a ``...``
        placeholder, or no entry point and no flag at all (a flag of another release counts:
        which releases accept it is the caller's to judge)."""
        if self.read_error:
            raise SpecError(f"the launch command cannot be read: {self.read_error}")
        placeholder = all(word in _PLACEHOLDERS for word in self.argv)
        if placeholder or (self.entrypoint is None and not self.requested and not self.unknown):
            shown = clip(self.text, 63, ellipsis="...")
            raise SpecError(
                f"the launch command {shown!r} has no SGLang arguments: give the whole command, "
                "e.g. 'python -m sglang.launch_server --model-path MODEL --tp 2'"
            )


# What stands for the arguments in a shortened command (``python -m sglang.launch_server ...``).
_PLACEHOLDERS = ("...", "\u2026")


@dataclass
class _Split:
    words: list[str]
    env: dict[str, str]
    problems: list[str]
    form: str
    read_error: str | None = None
    refused: bool = False  # too long to read: nothing of the text is parsed or shown
    notes: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)  # values of variables that made a secret's value


def split_command(text: str) -> tuple[list[str], dict[str, str], list[str]]:
    """Words of a command line (or a systemd unit, or a list form), its environment, and
    problems found.

    Pasted shell text is read as a shell reads it (see :mod:`pytest_sglang.parse.shellwords`): of the
    simple commands in it, the one that runs SGLang is taken; ``export VAR=...`` before it and
    ``VAR=...`` or ``env`` in front of it are its environment; redirections, pipes, ``;``,
    ``&&``, a trailing ``&``, comments, backticks and a ``$`` prompt are not part of argv.
    Variables, arrays and arithmetic the text sets are expanded (:mod:`pytest_sglang.parse.shellscript`);
    a part of a word the text does not give is marked in it (``shellscript.plain(word)`` shows it
    as written, ``$TP``). A Python or YAML list of argv strings is read as that list
    (:mod:`pytest_sglang.parse.listforms`)."""
    split = _split(text)
    return split.words, split.env, split.problems


# More words than any launch command has (a real one has some tens, a few hundred at most).
MAX_WORDS = 10_000
# Different values of secret flags (a real command has one api key, maybe an admin key and a token).
MAX_SECRET_VALUES = 64


def _refused(note: str, form: str) -> _Split:
    return _Split(words=[], env={}, problems=[note], form=form, read_error=note, refused=True)


def oversized(length: int) -> str:
    """Why a launch command of ``length`` characters is not read."""
    return f"it is {length} characters long, over the {MAX_COMMAND} a launch command is read up to (a real one is a few KB): it is not read"


def _split(text: str) -> _Split:
    if len(text) > MAX_COMMAND:  # refused before any reading: nothing of it is parsed or shown
        listed = read_list_form(text[: MAX_COMMAND + 1])  # bounded work, only to name a list form in the note
        if listed is not None and listed.error is not None:
            return _refused(listed.error, listed.form)
        return _refused(oversized(len(text)), "shell")
    if is_refused_command(text):  # what the redactor left of a command over the limit
        return _refused(f"it was over the {MAX_COMMAND}-character limit and not kept", "shell")
    listed = read_list_form(text)
    if listed is not None:
        return _from_list_form(listed)
    # '[^\S\n]*', not '\s*', before ExecStart: from every one of a run of newlines '\s*' would scan
    # the whole run again (a text of 40,000 newlines took 6 s); the lines matched are the same.
    systemd = bool(re.search(r"^[^\S\n]*ExecStart\s*=", text, re.M))
    return _split_shell(text, form="systemd unit" if systemd else "shell")


def _from_list_form(listed: ListForm) -> _Split:
    """The argv of a list form: of its lists (a manifest's containers), the one that runs
    SGLang; a ``sh -c SCRIPT`` list is the script, read as shell text."""
    if listed.error is not None:
        return _Split(words=[], env={}, problems=[listed.error], form=listed.form, read_error=listed.error)
    splits: list[_Split] = []
    for candidate in listed.candidates:
        script = _shell_script(candidate.words)
        if script is None:
            splits.append(_Split(words=list(candidate.words), env=dict(candidate.env), problems=[], form=listed.form))
        else:
            inner = _split_shell(script, form=listed.form, env=candidate.env)
            if inner.refused:
                return inner
            splits.append(_Split(words=inner.words, env={**candidate.env, **inner.env}, problems=inner.problems, form=listed.form, notes=inner.notes, secrets=inner.secrets))
    chosen = next((s for s in splits if _entrypoint(s.words)[0] is not None), None)
    chosen = chosen or next((s for s in splits if s.words and s.words[0].startswith("-")), splits[0])
    chosen.problems = list(listed.notes) + chosen.problems
    chosen.notes = list(listed.assumed) + list(chosen.notes or [])
    return chosen


_SHELLS = ("sh", "bash", "dash", "ash", "zsh", "ksh")


def _shell_script(words: list[str]) -> str | None:
    """The script of ``sh -c SCRIPT`` (``/bin/bash -lc``, ...), as containers often start SGLang."""
    if not words or os.path.basename(words[0]) not in _SHELLS:
        return None
    for i, word in enumerate(words[1:], start=1):
        if re.fullmatch(r"-[a-z]*c[a-z]*", word):
            return words[i + 1] if i + 1 < len(words) else None
        if not word.startswith("-"):
            return None
    return None


def _split_shell(text: str, *, form: str, env: Mapping[str, str] | None = None, depth: int = 0) -> _Split:
    """The command that runs SGLang, of shell text read as bash reads it (variables, arrays and
    arithmetic expanded: :mod:`pytest_sglang.parse.shellscript`); ``env`` is the environment the
    text starts with (a container's ``env:``). Without such a command, the script of a
    ``bash -c SCRIPT`` in it (``docker run IMAGE bash -c "..."``) is read the same way."""
    problems: list[str] = []
    start: dict[str, str] = dict(env or {})
    if form == "systemd unit":
        text, unit_env = _from_systemd_unit(text, problems)
        start.update(unit_env)  # systemd puts Environment= values in for $X and ${X}
    script: Script | None = None
    try:
        script = read_script(text, env=start, until=lambda words: _entrypoint(words)[0] is not None)
        commands = [(command.words, command.env) for command in script.commands]
    except ShellSyntaxError as exc:
        problems.append(f"the command line has {exc}; read it word by word")
        commands = [(literal_words(text.replace("```", " ")), start)]
    except ExpansionTooLarge as exc:
        return _refused(str(exc), form)
    if sum(len(words) for words, _ in commands) > MAX_WORDS:
        return _refused(f"it has more than {MAX_WORDS} words (a real launch command has some tens): it is not read", form)
    chosen = next((i for i, (words, _) in enumerate(commands) if _entrypoint(words)[0] is not None), None)
    if chosen is None and depth < 3:
        for words, command_env in commands:
            inner_script = next((_shell_script(words[i:]) for i, word in enumerate(words) if os.path.basename(plain(word)) in _SHELLS), None)
            if inner_script is not None:
                inner = _split_shell(plain(inner_script), form=form, env=command_env, depth=depth + 1)
                inner.problems = problems + inner.problems
                return inner
    chosen = chosen or 0
    words, command_env = commands[chosen] if commands else ([], start)
    words, environment = list(words), dict(command_env)
    # Leading VAR=value words and an 'env' prefix are the process environment.
    while words and (words[0] == "env" or ENV_ASSIGNMENT.match(words[0])):
        word = words.pop(0)
        if word != "env":
            name, value = _assignment(word)
            environment[name] = value
    split = _Split(words=words, env=environment, problems=problems, form=form)
    if script is not None and script.commands:
        _shell_notes(script, script.commands[chosen], split)
        _later_launches(script, script.commands[chosen], split)
    return split


# Another SGLang server started further on in the same text (an else branch, a decode server).
_LAUNCH_LATER = re.compile(r"(?m)^[^#\n]*?(?<![\w.-])(?:python3?(?:\.\d+)?\s+-m\s+sglang\.launch_server|sglang\s+serve)(?![\w.-])")


def _later_launches(script: Script, command: Command, split: _Split) -> None:
    """The first command that starts SGLang is the one judged; a note names the others, so a
    script with two (an if and its else, a prefill and a decode server) says which was judged."""
    later = [m.start() for m in _LAUNCH_LATER.finditer(script.text, command.end)]
    if not later:
        return
    first = script.text.count("\n", 0, command.start) + 1
    lines = ", ".join(str(script.text.count("\n", 0, at) + 1) for at in later[:5]) + (", ..." if len(later) > 5 else "")
    split.notes.append(
        f"the text starts SGLang more than once (line {first}, and line{'s' if len(later) > 1 else ''} {lines}): the first is judged; "
        "give another alone to judge it (which one runs may depend on a branch)"
    )


# Linear: a flag is matched only where a run of word characters starts (the look-behind).
_SECRET_REFERENCE = re.compile(r"""(?<![\w-])(--?[\w-]+)(?:=|[ \t]+|[ \t]*\\\n[ \t]*)["']?\$\{?([A-Za-z_]\w*)""")


def _shell_notes(script: Script, command: Command, split: _Split) -> None:
    """What reading the text as a shell says about the command taken: the lines a missing
    ``\\`` leaves out, the defaults used for variables the text does not set; and the values of
    the variables that made a secret (hidden wherever they show)."""
    line, line_text, left = script.lines_after(command)
    if left:
        shown = [clip(redact_command_all(" ".join(part.split()[:2])), 40, ellipsis="...") for part in left[:3]]
        more = ", ..." if len(left) > 3 else ""
        ending = "is empty after a '\\'" if not line_text.strip() else "ends with a space after its '\\'" if re.search(r"\\[ \t]+$", line_text) else "ends without '\\'"
        count = f"the {len(left)} lines after it" if len(left) > 1 else "the line after it"
        split.notes.append(f"line {line} {ending}: {count} ({', '.join(shown)}{more}) {'are' if len(left) > 1 else 'is'} not part of the command; add the backslash if they belong to it")
    if script.defaults_used:
        listed = ", ".join(f"`{name}`" for name in script.defaults_used[:6]) + (", ..." if len(script.defaults_used) > 6 else "")
        many = len(script.defaults_used) > 1
        split.notes.append(f"{listed} {'are' if many else 'is'} not set in this file: the default{'s' if many else ''} the script gives {'them' if many else 'it'} {'are' if many else 'is'} used")
    names: list[str] = []
    for index, _inline in secret_positions(command.words).items():
        names += command.sources.get(index, [])
    # A variable the text gives a secret flag anywhere (a line left out of the command too).
    names += [m.group(2) for m in _SECRET_REFERENCE.finditer(script.text) if is_secret_flag(m.group(1))]
    for name, value in command.env.items():
        if is_secret_env(name):
            names.append(name)
            split.secrets.append(value)
    split.secrets += script.made_of(names)


def _assignment(word: str) -> tuple[str, str]:
    name, _, value = word.partition("=")
    return name, value


def _from_systemd_unit(text: str, problems: list[str]) -> tuple[str, dict[str, str]]:
    env: dict[str, str] = {}
    joined = re.sub(r"\\\r?\n", " ", text)
    exec_start = ""
    for line in joined.split("\n"):  # systemd's lines: a '\r' or '\u2028' inside a quoted word is no line break
        key, _, value = line.strip().partition("=")
        key = key.strip()
        if key == "ExecStart":
            exec_start = value.strip().lstrip("@-:+!")
        elif key == "Environment":
            try:
                items = split_words(value)
            except ValueError:  # an unbalanced quote: systemd refuses the line; read it word by word
                problems.append("an Environment= line has unbalanced quotes; read it word by word")
                items = value.split()
            for item in items:
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
    marked: bool = False,
) -> LaunchCommand:
    """Parse a launch command into the fields it requests, with SGLang's flag table.

    ``sglang_version`` picks the table: that release's own (``'0.5.12'``, ``'0.5.8.post1'``);
    a newer release than the package knows is read with the newest table and ``problems``
    says so; ``None`` means the newest. A string that is not a version, or a release older
    than the oldest table, raises :class:`~pytest_sglang.base.errors.SpecError`, unless
    ``strict_version=False`` (for a version a server reported): then the nearest table is
    used, with a note in ``problems``.

    ``config_loader(path)`` returns the mapping of a ``--config`` YAML file (the caller knows
    where it lives: locally, or on the host over SSH); without it the file is only named.

    ``marked=True`` says a list of words comes from :func:`split_command` and may hold its marks
    for parts not known; otherwise any such character in what is given is removed first.
    """
    table_version, table_note = _table_for(sglang_version, strict=strict_version)
    # The shell reader marks a part it cannot know with private-use characters: text as given never holds them.
    if isinstance(command, str):
        command = unmarked(command)
    elif not marked:
        command = [unmarked(str(word)) for word in command]
    if isinstance(command, str):
        split = _split(command)
        # A list form is shown as the command line it stands for (its text may hold a secret
        # in a shape no shell redaction knows: '"--api-key", "sk-..."', 'value: hf_...').
        text = shlex.join(plain(word) for word in split.words) if split.form in ("Python list", "YAML list") else command
    else:
        words = [str(word) for word in command]
        size = sum(len(word) + 1 for word in words)
        if size > MAX_COMMAND or len(words) > MAX_WORDS:
            note = oversized(size) if size > MAX_COMMAND else f"it has {len(words)} words, more than the {MAX_WORDS} a launch command is read up to: it is not read"
            split = _refused(note, "argv")
        else:
            split = _Split(words=words, env={}, problems=[], form="argv")
        text = shlex.join(plain(word) for word in split.words)
    if split.refused:  # nothing of a command that is not read is shown: only what stands in its place
        text = f"<launch command not read: {split.read_error}>"
    words, env, problems = split.words, split.env, split.problems
    entrypoint, argv, more = _entrypoint(words)
    problems += [] if split.refused else more
    if table_note:
        problems.insert(0, table_note)
    table = flag_table(table_version)
    result = LaunchCommand(
        text=text if split.refused else redact_command_all(" ".join(text.split())),
        entrypoint=entrypoint,
        env={k: (REDACTED if is_secret_env(k) else plain(v)) for k, v in env.items()},
        argv=redact_command_all(shlex.join(plain(word) for word in argv)).split(" ") if argv else [],
        requested={},
        problems=problems,
        flag_table_version=table.sglang_version,
        form=split.form,
        read_error=split.read_error,
        notes=list(split.notes),
    )
    for name, value in env.items():  # an environment value the text does not give is not known
        if is_unresolved(value):
            result.unresolved[f"env.{name}"] = ", ".join(dict.fromkeys(shown for _, shown in unresolved_parts(value)))
            result.unresolved_why[f"env.{name}"] = why(*unresolved_parts(value)[0])
    written = list(argv)  # as the command gives them, before sglang serve's own rewrites
    if entrypoint == "sglang serve":
        argv = _serve_rewrites(argv, table, result)
    # Whatever follows a secret flag is hidden in every message and value, below: a command
    # with more secret values than any real one has is refused instead (each would be searched
    # for in every message: time quadratic in the command's length).
    hidden = secret_values(argv, not_secret=lambda flag: _known_not_secret(table, flag))
    # ... and in a word that is itself a command ('sh -c "... --api-key X"', a value with
    # spaces), or a JSON value with credential keys ('{"hf_token": "hf_..."}')
    hidden += [value for word in argv for value in word_secrets(word)]
    # A part not known is no secret ('--api-key $KEY' hides nothing); the text around it may be one.
    hidden = [plain(value) for value in hidden if not is_unresolved(value) or plain(value) != "".join(shown for _, shown in unresolved_parts(value))]
    hidden += [value for value in split.secrets if value and not is_unresolved(value)]
    if len(set(hidden)) > MAX_SECRET_VALUES:
        note = f"it gives {len(set(hidden))} different values to secret flags (--api-key, --hf-token, ...), more than the {MAX_SECRET_VALUES} a launch command is read with: it is not read"
        result.problems, result.read_error = [note], note
        return result
    # Before 0.5.3 no merger reads --config (the table says): argparse meets it as an unknown flag.
    config_path = _config_file(argv, result) if table.merges_config else None
    config_unread = config_path is not None  # until its mapping is read: what it sets is not known
    if config_path is not None:
        result.config_file = config_path
        if config_loader is not None:
            mapping = _load_config(config_path, config_loader, result)
            if mapping is not None:
                config_unread = False
                _apply(result, table, _config_words(mapping, table, result), from_config=True)
        else:
            result.problems.append(f"--config {config_path}: the file was not read; values it sets are missing here")
    _apply(result, table, argv, from_config=False)
    _hold_back_unresolved(result)
    for dest, entry in table.fields.items():
        if entry.get("required") and dest not in result.requested and dest not in result.unresolved and not result.unresolved_words and not config_unread:
            result.problems.append(f"{entry['flags'][0]} is required: SGLang refuses to start (the following arguments are required)")
            missing = [_names(e) for d, e in table.fields.items() if e.get("required") and d not in result.requested]
            _refuse(result, "required", entry["flags"][0], f"the following arguments are required: {', '.join(missing)}")
    for name in list(result.requested):
        if is_secret_key(name) and result.requested[name] not in (None, False, ""):
            result.requested[name] = REDACTED
    # A secret may also land where no secret belongs (a stray word after a misplaced flag):
    # whatever followed a secret flag is scrubbed from every message and value.
    if hidden:
        hide = _Hider(hidden)
        result.text, result.argv = hide(result.text), [hide(word) for word in result.argv]  # '--other-flag X' as well
        result.problems = [hide(problem) for problem in result.problems]
        result.unknown = {hide(flag): _scrubbed(value, hide) for flag, value in result.unknown.items()}  # '--api-key -abc...': a "flag"
        result.requested = {name: _scrubbed(value, hide) for name, value in result.requested.items()}
        result.notes = [hide(note) for note in result.notes]
        result.unresolved = {name: hide(shown) for name, shown in result.unresolved.items()}
        result.unresolved_why = {name: hide(text) for name, text in result.unresolved_why.items()}
        result.unresolved_words = [hide(word) for word in result.unresolved_words]
    _finish_refusals(result, _Hider(hidden) if hidden else None)
    result.command_line = _command_line(entrypoint, written, hidden, table)
    return result


def _hold_back_unresolved(result: LaunchCommand) -> None:
    """A value the shell text does not give is never judged as the text it was written as: a
    field whose value holds one leaves ``requested`` for ``unresolved``, what SGLang's parser
    would have said of that text (not a number, not a choice) is not said, and a note names it."""
    for dest in list(result.requested):
        parts = _unresolved_in(result.requested[dest])
        if parts:
            del result.requested[dest]
            result.unresolved[dest] = ", ".join(dict.fromkeys(shown for _, shown in parts))
            result.unresolved_why[dest] = why(*parts[0])
    for flag in list(result.unknown):
        result.unknown[flag] = _plain_value(result.unknown[flag])
    result.problems = [p for p in result.problems if not _names_unresolved(p)]
    for dest, shown in result.unresolved.items():
        if not dest.startswith("env."):
            result.notes.append(f"{result.unresolved_why[dest]}: {dest} is unknown, and rules that read it are undecided")


def _unresolved_in(value: Any) -> list[tuple[str, str]]:
    if isinstance(value, str):
        return unresolved_parts(value)
    if isinstance(value, (list, tuple)):
        return [part for item in value for part in _unresolved_in(item)]
    if isinstance(value, dict):
        return [part for item in [*value.keys(), *value.values()] for part in _unresolved_in(item)]
    return []


def _plain_value(value: Any) -> Any:
    if isinstance(value, str):
        return plain(value)
    if isinstance(value, list):
        return [_plain_value(item) for item in value]
    return value


def _names_unresolved(problem: str) -> bool:
    """A message about a word not known (as written, or as repr() escapes it)."""
    return "\\ue000" in problem or is_unresolved(problem)


def _unresolved_word(result: LaunchCommand, word: str) -> bool:
    """A word no flag took that holds a value not known ($EXTRA_ARGS, a flag written --$NAME):
    it may be flags, and it is not judged. Whether it was."""
    if not is_unresolved(word):
        return False
    kind, shown = unresolved_parts(word)[0]
    written = plain(word)
    result.unresolved_words.append(written)
    what = why(kind, shown) if written == shown else f"`{written}` holds `{shown}`, which {reason(kind)}"
    result.notes.append(f"{what}: it may hold more flags, which are not judged")
    return True


def _command_line(entrypoint: str | None, argv: list[str], hidden: list[str], table: FlagTable) -> str:
    """The argv judged as one line: the entry point, then each word shell-quoted (a part not
    known as it was written), the values of secret flags redacted."""
    plain_argv = [plain(word) for word in argv]
    secret = secret_positions(plain_argv)
    shown: list[str] = []
    for i, word in enumerate(argv):
        flag_word = plain_argv[i] if secret.get(i) else plain_argv[i - 1] if i in secret else ""
        if i in secret and not _known_not_secret(table, flag_word.partition("=")[0]):
            shown.append(f"{plain_argv[i].partition('=')[0]}={REDACTED}" if secret[i] else REDACTED)
        else:
            shown.append(shell_word(word))
    line = " ".join([entrypoint or "", *shown]).strip()
    found = [value for word in plain_argv for value in word_secrets(word)]
    return _Hider([*hidden, *found])(line) if hidden or found else scrub(line)


def _known_not_secret(table: FlagTable, flag: str) -> bool:
    """A flag the release's table resolves to a field that holds no secret."""
    full, _ = table.spelling(flag)
    return full is not None and not is_secret_key(table.by_flag[full])


class _Hider:
    """``scrub(text, hidden)`` for many texts: the spellings of the hidden values are worked out
    once, not once per text (a command of thousands of secret flags and stray words took a
    time quadratic in its length)."""

    def __init__(self, hidden: list[str]) -> None:
        self.values = frozenset(hidden)
        spellings = (sorted(forms(value), key=len, reverse=True) for value in dict.fromkeys(hidden))
        self.forms = list(dict.fromkeys(form for group in spellings for form in group))

    def __call__(self, text: str) -> str:
        text = scrub(text)  # the registered secrets
        for form in self.forms:
            if form in text:
                text = text.replace(form, REDACTED)
        return text


def _scrubbed(value: Any, hide: _Hider) -> Any:
    if isinstance(value, str):
        return REDACTED if value in hide.values else hide(value)
    if isinstance(value, list):
        return [_scrubbed(v, hide) for v in value]
    if isinstance(value, dict):
        return {k: _scrubbed(v, hide) for k, v in value.items()}
    return value


@lru_cache(maxsize=None)
def _entrypoint_rules() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_knowledge_data().joinpath("sglang-entrypoints.json").read_text())
    return data


def entrypoint_rule(kind: str, sglang_version: str) -> dict[str, Any]:
    """What the release does before argparse (``kind``: "serve" or "config_merger")."""
    from packaging.specifiers import SpecifierSet

    version = Version(sglang_version)
    rules = _entrypoint_rules()[kind]
    return next((rule for rule in rules if version in SpecifierSet(rule["releases"])), rules[-1])


def _serve_rewrites(argv: list[str], table: FlagTable, result: LaunchCommand) -> list[str]:
    """``sglang serve``'s own argv rewrites before ``prepare_server_args``: ``--model-type``
    taken out (0.5.10+), a first word that is not a flag made ``--model-path`` (0.5.16+)."""
    rule = entrypoint_rule("serve", table.sglang_version)
    if rule.get("absent"):
        result.problems.append(f"sglang serve: SGLang {table.sglang_version} has no 'sglang serve' command, so this command starts no server (use python -m sglang.launch_server)")
        _refuse(result, "no-serve", "sglang serve", "sglang: command not found")
        return argv
    if rule["model_type"] is not None:
        kept: list[str] = []
        backend = "auto"
        i = 0
        while i < len(argv):
            word = argv[i]
            if word == "--model-type":
                if i + 1 >= len(argv):
                    result.problems.append("--model-type needs a value: sglang serve refuses to start")
                    _refuse(result, "serve", word, "--model-type needs a value")
                    return kept
                backend = argv[i + 1]
                i += 2
                continue
            if word.startswith("--model-type="):
                backend = word.split("=", 1)[1]
                i += 1
                continue
            kept.append(word)
            i += 1
        if is_unresolved(backend):
            result.notes.append(f"{why(*unresolved_parts(backend)[0])}: which server sglang serve starts (--model-type) is not known")
        elif backend not in rule["model_type"]:
            result.problems.append(
                f"--model-type {backend!r} is not one of SGLang {table.sglang_version}'s serve backends "
                f"({', '.join(rule['model_type'])}): sglang serve refuses to start"
            )
            valid = ", ".join(rule["model_type"])
            said = f"Unknown serve backend '{backend}'. Available values: {valid}." if Version(table.sglang_version) >= Version("0.5.18") else f"Error: invalid --model-type '{backend}'. Valid values are: {valid}."
            _refuse(result, "serve", "--model-type", said)
        elif backend == "diffusion":
            result.problems.append("--model-type diffusion runs SGLang's diffusion server: its flags are not SGLang's server arguments and are not read here")
        argv = kept
    if rule["positional_model"] and argv and not argv[0].startswith("-"):
        argv = ["--model-path", argv[0], *argv[1:]]
    # serve looks for the model itself, before argparse, by exact words only (no prefixes).
    words = rule["model_path_words"]
    if not any(word in words or word.split("=", 1)[0] in words and "=" in word or is_unresolved(word) for word in argv):
        result.problems.append(f"sglang serve finds no {' or '.join(words)} word: SGLang {table.sglang_version} refuses to start (--model-path is required)")
        _refuse(result, "serve", "--model-path", "Error: --model-path is required. Please provide the path to the model.")
    return argv


def _config_file(argv: list[str], result: LaunchCommand) -> str | None:
    """The file SGLang merges: only the separate word ``--config`` (``--config=FILE`` is an
    ordinary flag SGLang stores and never reads), once, with a file after it."""
    where = [i for i, word in enumerate(argv) if word == "--config"]
    for word in argv:
        if word.startswith("--config="):
            result.problems.append(
                f"{word}: SGLang merges a config file only when --config and the file are separate words; "
                "this file's values are not in effect"
            )
    if len(where) > 1:
        result.problems.append("--config is given more than once: SGLang refuses to start (Multiple config files specified! Only one allowed.)")
        _refuse(result, "config", "--config", "Multiple config files specified! Only one allowed.")
        return None
    if not where:
        return None
    if where[0] == len(argv) - 1:
        result.problems.append("--config has no file after it: SGLang refuses to start")
        _refuse(result, "config", "--config", "No config file specified after --config flag!")
        return None
    path = argv[where[0] + 1]
    if is_unresolved(path):
        result.notes.append(f"{why(*unresolved_parts(path)[0])}: the --config file is not known, and the values it sets are missing here")
        return None
    suffix = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    if suffix not in ("yaml", "yml"):
        result.problems.append(f"--config {path}: SGLang reads only .yaml or .yml files and refuses to start (Config file must be YAML format)")
        _refuse(result, "config", "--config", f"Config file must be YAML format, got: {'.' + suffix if suffix else ''}")
        return None
    return path


def _load_config(path: str, loader: Callable[[str], Mapping[str, Any]], result: LaunchCommand) -> Mapping[str, Any] | None:
    try:
        mapping = loader(path)
    except FileNotFoundError:
        result.problems.append(f"--config {path}: no such file: SGLang refuses to start (Config file not found)")
        _refuse(result, "config", "--config", f"Config file not found: {path}")
        return None
    except Exception as exc:  # a loader's YAML error, a permission error: the user's to see
        result.problems.append(f"--config {path} cannot be read ({clip(str(exc), 200)}): SGLang refuses to start")
        _refuse(result, "config", "--config", clip(str(exc), 200))
        return None
    if mapping is None:
        return {}
    if not isinstance(mapping, Mapping):
        result.problems.append(f"--config {path}: SGLang refuses to start (Config file must contain a dictionary at root level)")
        _refuse(result, "config", "--config", "Config file must contain a dictionary at root level")
        return None
    return mapping


def _config_words(config: Mapping[str, Any], table: FlagTable, result: LaunchCommand) -> list[str]:
    """A --config mapping as the flags the release's ``ConfigArgumentMerger`` makes of it:
    ``--<key>`` exactly as the key is written (so ``chunked_prefill_size:`` is not a flag);
    booleans, lists and mappings as that release writes them; a key of an action the merger
    does not support refuses to start (0.5.8+)."""
    rule = entrypoint_rule("config_merger", table.sglang_version)
    store_true, unsupported = _config_keys(table)
    words: list[str] = []
    for key, value in config.items():
        key = str(key)
        flag = f"--{key}"
        normal = key.replace("-", "_")
        if rule["unsupported_keys"] and normal in unsupported:
            result.problems.append(f"--config {result.config_file}: SGLang refuses to start (Unsupported config option '{normal}' with action '{unsupported[normal]}')")
            _refuse(result, "config", "--config", f"Unsupported config option '{normal}' with action '{unsupported[normal]}'")
            return []
        if isinstance(value, bool):
            if rule["booleans"] == "flag_when_true" or normal in store_true:
                words += [flag] if value else []
            else:
                words += [flag, str(value).lower()]
        elif isinstance(value, list):
            words += [flag, *(str(v) for v in value)] if value else []
        elif isinstance(value, dict):
            words += [flag, json.dumps(value) if rule["mappings"] == "json" else str(value)]
        else:
            words += [flag, str(value)]
    return words


def _config_keys(table: FlagTable) -> tuple[set[str], dict[str, str]]:
    """(the keys the merger writes as bare flags, the keys it refuses with their action's
    class), as the release's own merger computes them from its parser (the table's ``config``)."""
    return set(table.config.get("store_true", ())), dict(table.config.get("unsupported", {}))


# argparse's patterns for how many words a flag consumes, over the kinds of the words that
# follow it: 'A' a value, 'O' a flag, '-' the first '--'. For flags argparse takes the '-'
# out of its patterns (``_get_nargs_pattern``), so a flag never consumes '--' or what follows.
_NARGS_PATTERN = {None: "A", "?": "A?", "*": "A*", "+": "AA*"}
_NARGS_RE = {nargs: re.compile(pattern) for nargs, pattern in _NARGS_PATTERN.items()}


def _kinds(argv: list[str]) -> str:
    """One letter per word, as argparse classifies them: after the first ``--`` every word is a
    value, whatever it looks like; before it, option-like words are flags."""
    out = []
    ended = False
    for word in argv:
        if ended:
            out.append("A")
        elif word == "--":
            out.append("-")
            ended = True
        else:
            out.append("O" if option_like(word) else "A")
    return "".join(out)


def _apply(result: LaunchCommand, table: FlagTable, argv: list[str], *, from_config: bool) -> None:
    kinds = _kinds(argv)
    first_dash = kinds.find("-")
    i = 0
    while i < len(argv):
        word = argv[i]
        kind_of_word = kinds[i]
        i += 1
        if kind_of_word == "-":
            # The '--' itself: what follows it is values only, and argparse keeps a '--' that no
            # flag took as its value among the arguments it does not recognise.
            result.problems.append("stray '--' (no flag took it): SGLang refuses to start (unrecognized arguments: --)")
            _unrecognized(result, word, stray=True)
            continue
        if kind_of_word == "A":
            if _unresolved_word(result, word):  # $EXTRA_ARGS: not known, never a stray word
                continue
            after = " after '--'" if 0 <= first_dash < i else ""
            result.problems.append(f"stray word {word!r}{after} (not a flag's value): SGLang refuses to start (unrecognized arguments)")
            _unrecognized(result, word, stray=True)
            continue
        flag, eq, inline = word.partition("=")
        if _unresolved_word(result, flag):  # --$NAME: which flag it is, is not known
            i = _values(argv, kinds, i, inline if eq else None, nargs="*")[1]
            continue
        if flag == "--config" and not eq and not from_config and table.merges_config:
            i += 1  # the merger took '--config FILE' out of argv (see _merge_config)
            continue
        full, problem = table.spelling(flag)
        if problem:
            result.problems.append(problem)
            _refuse(result, "ambiguous-flag", flag, f"ambiguous option: {word} could match {', '.join(_prefix_matches(table, flag))}")
        if full is None:
            values, i = _values(argv, kinds, i, inline if eq else None, nargs="*")
            guessed = _guess(values)
            secret = is_secret_flag(flag) or is_secret_key(flag.lstrip("-").replace("-", "_"))
            result.unknown[flag] = REDACTED if secret and guessed not in (True, None, "") else guessed
            if not problem:
                result.problems.append(f"{flag} is not a flag of SGLang {table.sglang_version}")
                if secret:  # the message lists the words: a secret flag's value is not among them
                    _unrecognized(result, f"{flag}={REDACTED}" if eq else flag, *([REDACTED] * len(values) if not eq else []))
                else:
                    _unrecognized(result, word, *([] if eq else values))
            continue
        dest = table.by_flag[full]
        entry = table.action(full)
        refusals_before = len(result.refusals)
        kind = entry["kind"]
        # Messages name the flag as written and, for a prefix or an alias, as argparse names it.
        label = flag if flag == entry["flags"][0] else f"{flag} ({'/'.join(entry['flags'])})"
        if entry.get("deprecated"):
            result.deprecated[full] = entry.get("instead") or ""
        if kind == "ignored":
            if entry.get("refused"):
                result.problems.append(f"{full}: SGLang {table.sglang_version} refuses to start ({entry['refused']})")
                _refuse(result, "deprecated", flag, entry["refused"])
            elif eq:
                result.problems.append(f"{flag} takes no value (got {inline!r})")
                _refuse(result, "invalid-value", flag, f"argument {_names(entry)}: ignored explicit argument {inline!r}")
            continue  # accepted and ignored: it sets nothing
        if kind in ("store_true", "store_false", "store_const", "boolean_optional"):
            value: Any
            if kind == "boolean_optional":
                value = not full.startswith("--no-")
            else:
                value = {"store_true": True, "store_false": False}.get(kind, entry.get("const"))
            if entry.get("takes_value"):
                values, i = _values(argv, kinds, i, inline if eq else None, nargs=None)
                _convert(values, entry, label, result, many=False, written=flag)  # checked against its choices, not stored
            elif eq:
                result.problems.append(f"{flag} takes no value (got {inline!r})")
                _refuse(result, "invalid-value", flag, f"argument {_names(entry)}: ignored explicit argument {inline!r}")
        else:
            values, i = _values(argv, kinds, i, inline if eq else None, nargs=entry.get("nargs"))
            before = len(result.problems)
            value = _convert(values, entry, label, result, many=entry.get("nargs") in ("+", "*"), written=flag)
            if len(result.problems) == before:  # argparse calls the action only with values it converted
                value = _act(value, entry, label, result, written=flag)
        if len(result.refusals) > refusals_before and not _unresolved_in(value):
            continue  # a value the release refuses is in effect nowhere: the refusal says it (a value not known stays, to be named)
        result.requested[dest] = value
        result.spelled[dest] = flag if not from_config else f"--config {result.config_file}"
        result.flags[dest] = full


def _values(argv: list[str], kinds: str, i: int, inline: str | None, *, nargs: Any) -> tuple[list[str], int]:
    """The words a flag at ``i`` consumes, as argparse's nargs patterns consume them (an
    option-like word is never a value, ``-.5`` and ``'-x y'`` are, '--' never is)."""
    if inline is not None:
        return [inline], i
    pattern = _NARGS_RE.get(nargs, _NARGS_RE[None])
    match = pattern.match(kinds, i)  # at i, without copying the rest (a copy per flag is quadratic)
    taken = len(match.group(0)) if match else 0
    if nargs is None and not taken:
        return [], i
    return argv[i : i + taken], i + taken


def _refuse(result: LaunchCommand, kind: str, flag: str, message: str, value: str | None = None) -> None:
    result.refusals.append(Refusal(kind=kind, flag=flag, message=message, value=value))


def _unrecognized(result: LaunchCommand, word: str, *values: str, stray: bool = False) -> None:
    """Words argparse keeps as not recognised: an unknown flag (with the values it seems to
    take), or a word no flag took. Its message, which lists them all, is written at the end."""
    if stray:  # one refusal for every word no flag takes: argparse names them in one message
        at = next((i for i, r in enumerate(result.refusals) if r.kind == "unrecognized"), None)
        if at is None:
            _refuse(result, "unrecognized", word, "", word)
        else:
            result.refusals[at] = replace(result.refusals[at], value=f"{result.refusals[at].value} {word}")
    else:
        _refuse(result, "unknown-flag", word.partition("=")[0], "")
    result.unrecognized += [word, *values]


def _finish_refusals(result: LaunchCommand, hide: Callable[[str], str] | None) -> None:
    """argparse's one message for every word it does not recognise; no refusal of a value the
    shell text does not give (it is not known); secrets hidden."""
    said = "unrecognized arguments: " + " ".join(plain(w) for w in result.unrecognized)
    kept = []
    for refusal in result.refusals:
        if not refusal.message:
            refusal = replace(refusal, message=said)
        if _names_unresolved(refusal.flag) or (refusal.kind not in ("unknown-flag", "unrecognized") and _names_unresolved(refusal.message)):
            continue
        shown = hide or scrub
        kept.append(replace(refusal, flag=shown(refusal.flag), message=shown(refusal.message), value=None if refusal.value is None else shown(refusal.value)))
    result.refusals = kept
    result.unrecognized = [hide(w) for w in result.unrecognized] if hide else result.unrecognized


def _names(entry: dict[str, Any]) -> str:
    """How argparse names a flag in its messages: every spelling of its action, joined by '/'."""
    return "/".join(entry["flags"])


def _prefix_matches(table: FlagTable, flag: str) -> list[str]:
    """Every full spelling ``flag`` abbreviates (argparse lists them in an ambiguity error)."""
    ordered = table._ordered_flags
    out = []
    for full in ordered[bisect_left(ordered, flag) :]:
        if not full.startswith(flag):
            break
        out.append(full)
    return out


# argparse's words for a flag given no value, by its nargs (``_match_argument``).
_EXPECTED = {None: "expected one argument", "+": "expected at least one argument"}


def _convert(values: list[str], entry: dict[str, Any], flag: str, result: LaunchCommand, *, many: bool, written: str = "") -> Any:
    if not values and entry.get("nargs") not in ("*", "?"):
        result.problems.append(f"{flag} needs a value")
        nargs = entry.get("nargs")
        _refuse(result, "missing-value", written or flag, f"argument {_names(entry)}: {_EXPECTED.get(nargs) or f'expected {nargs} arguments'}")
        return None
    if not values and entry.get("nargs") == "?":
        # argparse stores the flag's const (converted when it is text), as for --model-checksum
        const = entry.get("const")
        return _typed(const, entry.get("type"), flag, result, entry=entry, written=written) if isinstance(const, str) else const
    before = len(result.refusals)
    converted = [_typed(v, entry.get("type"), flag, result, entry=entry, written=written) for v in values]
    del result.refusals[before + 1 :]  # argparse stops at the first value it cannot convert: one refusal
    choices = entry.get("choices")
    if choices:
        for v in values:
            if v not in choices:
                result.problems.append(f"{flag} {v!r} is not one of SGLang {result.flag_table_version}'s choices ({', '.join(choices[:8])}{', ...' if len(choices) > 8 else ''})")
                if len(result.refusals) == before:  # argparse checks the choice of a value it converted
                    listed = ", ".join(repr(c) for c in choices[:8]) + (", ..." if len(choices) > 8 else "")
                    _refuse(result, "invalid-choice", written or flag, f"argument {_names(entry)}: invalid choice: {v!r} (choose from {listed})", v)
    if many:
        return converted
    return converted[0] if converted else None


def _typed(value: str, type_name: str | None, flag: str, result: LaunchCommand, *, entry: dict[str, Any] | None = None, written: str = "") -> Any:
    """``value`` converted as the release's argparse converts it (the converter's name is in
    its flag table, with its source); a value the converter refuses is a problem, as argparse
    refuses to start on it."""
    convert = CONVERTERS.get(type_name or "str")
    if convert is None:
        return value  # a converter this package does not know: the text as given
    try:
        return convert(value)
    except (ValueError, TypeError, ArithmeticError) as exc:
        reason = f": {exc}" if isinstance(exc, _Refused) and str(exc) else ""
        result.problems.append(f"{flag} {value!r} is not a valid {_TYPE_WORDS.get(type_name or 'str', type_name)}{reason}: SGLang refuses to start")
        # argparse prints a converter's ArgumentTypeError as it is, and a ValueError as "invalid TYPE value"
        said = exc.sglang if isinstance(exc, _Refused) and exc.sglang else f"invalid {type_name or 'str'} value: {value!r}"
        _refuse(result, "invalid-value", written or flag, f"argument {_names(entry)}: {said}" if entry else said, value)
    return value


class _Refused(ValueError):
    """A converter's own refusal (SGLang's converters raise ``argparse.ArgumentTypeError``,
    whose message argparse prints as it is): ``sglang`` is that message, when it is known."""

    def __init__(self, message: str, sglang: str | None = None) -> None:
        super().__init__(message)
        self.sglang = message if sglang is None else sglang


def human_readable_int(value: str) -> int:
    """SGLang's ``human_readable_int`` (0.5.10+): ``128k`` is 128000, ``1Mi`` is 1048576,
    ``25.6k`` is 25600; decimals only with SI suffixes; suffixes are case-sensitive."""
    text = value.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", text)
    if match:
        number, suffix = match.groups()
        if suffix.endswith("i"):
            if "." in number:
                said = f"Decimals are not allowed with IEC suffixes like '{suffix}'. Use an integer IEC value such as '{int(Decimal(number))}{suffix}', or an SI value such as '{number}{suffix[0]}'."
                raise _Refused(f"decimals are not allowed with IEC suffixes like {suffix!r}", said)
            return int(number) * {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[suffix]
        return int(Decimal(number) * {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}[suffix])
    try:
        return int(text)
    except ValueError:
        said = f"Invalid integer value: '{text}'. Use a plain integer, SI suffixes (1k, 1M), or IEC suffixes (1Ki, 1Mi). Suffixes are case-sensitive."
        raise _Refused("", said) from None


def _nullable_str(value: str) -> str | None:
    return None if not value or value == "None" else value


def _json(value: str) -> Any:
    return json.loads(value)


def _json_list(value: str) -> Any:
    """SGLang's ``json_list_type``: JSON, refused with its own words."""
    try:
        return json.loads(value)
    except ValueError:
        raise _Refused("", f"Invalid JSON list: {value}. Please provide a valid JSON list.") from None


def _cuda_graph_config(value: str) -> dict[str, Any]:
    """``--cuda-graph-config`` (0.5.14+): a JSON object of phase -> settings object."""
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise _Refused("", f"--cuda-graph-config must be JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise _Refused(f"--cuda-graph-config must be a JSON object, got {type(parsed).__name__}")
    for phase, settings in parsed.items():
        if phase not in ("decode", "prefill"):  # Phase.ALL in every release that has the flag
            raise _Refused(f"--cuda-graph-config: unknown phase {phase!r}, expected one of ('decode', 'prefill')")
        if not isinstance(settings, dict):
            raise _Refused(f"--cuda-graph-config[{phase!r}] must be a JSON object, got {type(settings).__name__}")
        if "backend" in settings and settings["backend"] == "tc_piecewise":
            raise _Refused("tc_piecewise was removed; select breakable, full, or disabled")
    return parsed


def _cuda_graph_backend(value: str) -> str:
    if value == "tc_piecewise":
        raise _Refused("tc_piecewise was removed; select breakable, full, or disabled")
    return value


# Converter names as SGLang's argparse actions carry them (``type.__name__``), each the same
# conversion; the flag tables hold each release's source of them.
CONVERTERS: dict[str, Callable[[str], Any]] = {
    "str": str,
    "int": int,
    "float": float,
    "human_readable_int": human_readable_int,
    "nullable_str": _nullable_str,
    "loads": _json,
    "json": _json,
    "json_list_type": _json_list,
    "parse_cuda_graph_config_arg": _cuda_graph_config,
    "parse_cuda_graph_backend_arg": _cuda_graph_backend,
}
_TYPE_WORDS = {
    "int": "whole number",
    "float": "number",
    "human_readable_int": "whole number (plain, or with a suffix such as 128k or 1Mi)",
    "loads": "JSON value",
    "json": "JSON value",
    "json_list_type": "JSON value",
    "parse_cuda_graph_config_arg": "CUDA graph configuration",
    "parse_cuda_graph_backend_arg": "CUDA graph backend",
}


def _act(value: Any, entry: dict[str, Any], flag: str, result: LaunchCommand, *, written: str = "") -> Any:
    """What the flag's own argparse action (the table's ``action``, when SGLang's and not
    argparse's) stores of the converted ``value``; an action's refusal is a problem, as SGLang
    fails on it before it starts."""
    name = entry.get("action") or ""
    model = ACTIONS.get(name)
    for marker, older in _EARLIER_ACTIONS.get(name, ()):
        if marker in flag_table(result.flag_table_version).action_sources.get(name, ""):
            model = older
    if model is None:
        return value
    try:
        return model(value)
    except (ValueError, TypeError, ArithmeticError) as exc:
        result.problems.append(f"{flag}: {exc}: SGLang refuses to start")
        # the action raises from inside argparse: SGLang stops with the exception's own text
        _refuse(result, "invalid-value", written or flag, exc.sglang if isinstance(exc, _Refused) else str(exc))
    return value


def lora_paths(values: list[str] | None) -> list[Any]:
    """SGLang's ``LoRAPathAction`` (0.5.1 to 0.5.23): each value stripped of
    surrounding whitespace; one that starts with ``{`` and ends with ``}`` is parsed as JSON and
    must hold ``lora_name`` and ``lora_path``; any other stays text (``name=path`` is split later,
    when ServerArgs resolves)."""
    out: list[Any] = []
    for value in values or []:
        text = value.strip()
        if text.startswith("{") and text.endswith("}"):
            try:
                parsed = json.loads(text)
            except ValueError as exc:
                raise _Refused(f"{text!r} is not valid JSON ({exc})", str(exc)) from None
            if "lora_path" not in parsed or "lora_name" not in parsed:
                raise _Refused(f"{text!r} looks like a JSON str, but it does not contain 'lora_name' and 'lora_path' keys.")
            out.append(parsed)
        else:
            out.append(text)
    return out


def lora_paths_by_name(values: list[str] | None) -> dict[str, str]:
    """SGLang 0.5.0rc2's ``LoRAPathAction``: ``{name: path}``, a value ``name=path`` split at its
    first ``=``, any other value its own name; nothing stripped, nothing refused."""
    out: dict[str, str] = {}
    for value in values or []:
        name, split, path = value.partition("=")
        if split:
            out[name] = path
        else:
            out[value] = value
    return out


# Actions an earlier release implements otherwise: (a line of that release's source, its model),
# chosen by the source the release's flag table holds, so the release decides and not its number.
_EARLIER_ACTIONS: dict[str, tuple[tuple[str, Callable[[Any], Any]], ...]] = {
    "LoRAPathAction": (("getattr(namespace, self.dest)[name] = path", lora_paths_by_name),),
}


# SGLang's own argparse action classes (a table entry's "action"; the table keeps each release's
# source of them under "actions"), each modelled as what it stores of the converted values. The
# deprecated ones store what their entry's kind says, and warn (their entry is "deprecated" and
# names the flag SGLang names "instead"); ``None`` marks that nothing more is done.
ACTIONS: dict[str, Callable[[Any], Any] | None] = {
    "LoRAPathAction": lora_paths,
    # kind "ignored": takes no value, stores nothing; 0.5.18+ may refuse with the entry's "refused" message
    "DeprecatedAction": None,
    # kind "store_true"
    "DeprecatedStoreTrueAction": None,
    # kind "store_const": stores its const_value; 0.5.23's --monokernel-backend takes a value, checked against its choices
    "DeprecatedStoreConstAction": None,
    # kind "store": the converted value, into the newer field
    "DeprecatedAliasStoreAction": None,
}


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
