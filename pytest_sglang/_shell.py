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

from dataclasses import dataclass, field

from .secrets import REDACTED

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
    """The simple commands in ``text``, in order (empty ones dropped)."""
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
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\$`\n':
                    if text[i + 1] != "\n":
                        word.append(text[i + 1])
                    i += 2
                    continue
                word.append(text[i])
                i += 1
            if i >= n:
                raise ShellSyntaxError("an unbalanced double quote")
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
        if text.startswith(REDACTED, i):  # the redactor's own mark stands for a value, not a redirection
            word.append(REDACTED)
            in_word = True
            i += len(REDACTED)
            continue
        redirect = next((op for op in _REDIRECT if text.startswith(op, i)), None)
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
        control = next((op for op in _CONTROL if text.startswith(op, i)), None)
        if control is not None:
            finish_word()
            pending_redirect = None
            commands.append(Command())
            i += len(control)
            continue
        word.append(c)
        in_word = True
        i += 1
    finish_word()
    return [command for command in commands if command.words]


def _unwrap(text: str) -> str:
    """Markdown around a pasted command: code fences, surrounding backticks, a ``$`` prompt."""
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
