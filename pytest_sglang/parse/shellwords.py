"""Reading pasted shell text as a shell would: the words of each simple command.

A launch command copied from a README, a chat or a terminal often carries shell around it:
surrounding backticks, a ``$ `` prompt, ``; echo done``, ``&& tail -f log``, ``| tee log``,
``> out.log 2>&1``, a trailing ``&``, ``# comment``, ``export VAR=...`` before it. None of it
reaches SGLang's argv. This splits the text into simple commands the way a POSIX shell does
(quotes, backslashes, comments at the start of a word, control operators, redirections), so the
caller can take the one that runs SGLang. Nothing here expands or runs anything: ``$VAR`` and
``$(...)`` stay as the literal text they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_sglang.base.secrets import REDACTED

# Control operators end a simple command; longest first.
_CONTROL = ("&&", "||", ";;", "|&", ";", "|", "&", "\n")
# Redirection operators, longest first; an optional file descriptor number may stand before them.
_REDIRECT = ("&>>", "&>", ">>", ">&", ">|", "<&", "<<<", "<<", "<>", ">", "<")


@dataclass
class Command:
    """One simple command: its words, with redirections left out."""

    words: list[str] = field(default_factory=list)
    redirections: list[str] = field(default_factory=list)


class ShellSyntaxError(ValueError):
    """Unbalanced quotes: the text is not one a shell would run."""


def simple_commands(text: str) -> list[Command]:
    """The simple commands in ``text``, in order (empty ones dropped). Linear in the text: runs
    of ordinary characters are taken whole (a regular expression), quotes with one search."""
    text = _unwrap(text)
    commands = [Command()]
    word: list[str] = []
    in_word = False  # a word has started (an empty quoted word '' counts)
    quoted = False  # some of the word was quoted (a quoted '2' before '>' is not a descriptor)
    pending_redirect: str | None = None
    i, n = 0, len(text)

    def finish_word() -> None:
        nonlocal word, in_word, quoted, pending_redirect
        if not in_word:
            return
        value = "".join(word)
        if pending_redirect is not None:
            commands[-1].redirections.append(pending_redirect + value)
            pending_redirect = None
        else:
            commands[-1].words.append(value)
        word, in_word, quoted = [], False, False

    while i < n:
        c = text[i]
        if c == "\\":
            if i + 1 < n and text[i + 1] == "\n":  # a line continuation
                i += 2
                continue
            word.append(text[i + 1] if i + 1 < n else "")
            in_word = True
            i += 2
            continue
        if c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise ShellSyntaxError("an unbalanced single quote")
            word.append(text[i + 1 : end])
            in_word = quoted = True
            i = end + 1
            continue
        if c == '"':
            i += 1
            while True:
                run = _DOUBLE_QUOTED_PLAIN.match(text, i)
                if run is not None:
                    word.append(run.group())
                    i = run.end()
                if i >= n:
                    raise ShellSyntaxError("an unbalanced double quote")
                if text[i] == '"':
                    break
                # a backslash: it escapes only " \\ $ ` and a newline (which it removes)
                if i + 1 < n and text[i + 1] in '"\\$`\n':
                    if text[i + 1] != "\n":
                        word.append(text[i + 1])
                    i += 2
                else:
                    word.append("\\")
                    i += 1
            in_word = quoted = True
            i += 1
            continue
        if c in " \t\r":
            finish_word()
            i += 1
            continue
        if c == "#" and not in_word:  # a comment runs to the end of the line
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c == "<" and text.startswith(REDACTED, i):  # the redactor's own mark stands for a value, not a redirection
            word.append(REDACTED)
            in_word = True
            i += len(REDACTED)
            continue
        redirect = _operator(text, i, _REDIRECT_BY_LENGTH) if c in "<>&" else None
        if redirect is not None:
            descriptor = "".join(word) if in_word and not quoted and "".join(word).isdigit() else ""
            if descriptor:
                word, in_word = [], False
            else:
                finish_word()
            i += len(redirect)
            if redirect in (">&", "<&"):  # 2>&1, >&2: the target is a descriptor, maybe written on
                j = i
                while j < n and (text[j].isdigit() or text[j] == "-"):
                    j += 1
                if j > i:
                    commands[-1].redirections.append(descriptor + redirect + text[i:j])
                    i = j
                    continue
            pending_redirect = descriptor + redirect
            continue
        control = _operator(text, i, _CONTROL_BY_LENGTH) if c in "&|;\n" else None
        if control is not None:
            finish_word()
            pending_redirect = None
            commands.append(Command())
            i += len(control)
            continue
        run = _SHELL_PLAIN.match(text, i)
        if run is not None:  # ordinary characters, taken whole
            word.append(run.group())
            i = run.end()
        else:  # a '#' inside a word
            word.append(c)
            i += 1
        in_word = True
    finish_word()
    return [command for command in commands if command.words]


def _operator(text: str, i: int, by_length: tuple[frozenset[str], ...]) -> str | None:
    """The longest operator of ``by_length`` (sets of 3, 2 and 1 characters) at ``i``."""
    for ops in by_length:
        if ops:
            candidate = text[i : i + len(next(iter(ops)))]
            if candidate in ops:
                return candidate
    return None


def split_words(text: str) -> list[str]:
    """The words ``shlex.split(text)`` gives (POSIX mode, no comments), in time linear in the
    text: ``shlex`` grows each word one character at a time (``self.token += c``), so one long
    word costs time quadratic in its length (a 1 MB word took tens of seconds).

    As ``shlex.split``: words are separated by spaces, tabs, carriage returns and newlines;
    ``'...'`` is literal; inside ``"..."`` a backslash escapes only ``"`` and ``\\`` (and stays
    before anything else); outside quotes it escapes any character (a newline too). Nothing
    else is special: no comments, operators or expansions. An unclosed quote raises
    ``ValueError("No closing quotation")``, a backslash at the end ``ValueError("No escaped
    character")``, with shlex's own messages."""
    words: list[str] = []
    parts: list[str] = []
    in_word = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _SHLEX_WHITESPACE:
            if in_word:
                words.append("".join(parts))
                parts, in_word = [], False
            i += 1
            continue
        in_word = True
        if c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise ValueError("No closing quotation")
            parts.append(text[i + 1 : end])
            i = end + 1
        elif c == '"':
            i += 1
            while True:
                run = _DOUBLE_QUOTED_PLAIN.match(text, i)
                if run is not None:
                    parts.append(run.group())
                    i = run.end()
                if i >= n:
                    raise ValueError("No closing quotation")
                if text[i] == '"':
                    i += 1
                    break
                if i + 1 >= n:  # a backslash, and nothing after it
                    raise ValueError("No escaped character")
                escaped = text[i + 1]
                parts.append(escaped if escaped in '"\\' else "\\" + escaped)
                i += 2
        elif c == "\\":
            if i + 1 >= n:
                raise ValueError("No escaped character")
            parts.append(text[i + 1])
            i += 2
        else:
            run = _SHLEX_PLAIN.match(text, i)
            assert run is not None  # c is none of the characters the pattern leaves out
            parts.append(run.group())
            i = run.end()
    if in_word:
        words.append("".join(parts))
    return words


# The operators by length, longest first (as _CONTROL and _REDIRECT list them).
_CONTROL_BY_LENGTH = tuple(frozenset(op for op in _CONTROL if len(op) == n) for n in (3, 2, 1))
_REDIRECT_BY_LENGTH = tuple(frozenset(op for op in _REDIRECT if len(op) == n) for n in (3, 2, 1))
# shlex's whitespace, and the runs of characters nothing in shlex.split treats specially.
_SHLEX_WHITESPACE = frozenset(" \t\r\n")
_SHLEX_PLAIN = re.compile(r"[^ \t\r\n'\"\\]+")
# Inside double quotes (shell and shlex alike): everything but the closing quote and a backslash.
_DOUBLE_QUOTED_PLAIN = re.compile(r'[^"\\]+')
# Outside quotes in shell text: what is never a quote, an escape, a blank, an operator's first
# character or a comment's start ('#' inside a word is ordinary, taken one at a time).
_SHELL_PLAIN = re.compile(r"[^\\'\" \t\r\n<>&|;#]+")


def _unwrap(text: str) -> str:
    """Markdown around a pasted command: code fences, surrounding backticks, a ``$`` prompt
    (each code fence becomes a line break)."""
    text = text.replace("```", "\n")
    if text.count("`") == 2:
        before, inside, _after = text.split("`")
        if not before.strip() or "sglang" in inside:  # `the command` (over several lines), maybe # a comment after
            return inside
    lines = []
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.count("`") == 2 and (stripped.startswith("`") and stripped.endswith("`") or "sglang" in stripped.split("`")[1]):
            line = stripped.split("`")[1]  # `the command`, or prose around it: Run `python -m sglang...` to start
        elif stripped.startswith("$ "):
            line = stripped[2:]
        lines.append(line)
    return "\n".join(lines)


unwrap_markdown = _unwrap
