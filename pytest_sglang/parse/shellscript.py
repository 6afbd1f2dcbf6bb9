"""Shell text read as bash reads it, without running anything: variables, arrays, arithmetic.

A launch script sets values before the command that uses them (``TP=4``, ``export X=...``,
``ARGS=(--tp 4 --dp 2)``, ``--dp $((num_prefill * 8))``). This reads the text once, in order,
and expands each simple command's words as bash would: parameters (``$X``, ``${X}``,
``${X:-default}``, ``${X-default}``, ``${X:=default}``, ``${X:+alt}``, ``${#X}``), arrays
(``A=(...)``, ``A+=(...)``, ``A[i]=v``, ``"${A[@]}"``, ``${A[*]}``, ``${A[i]}``, ``${#A[@]}``),
integer arithmetic (``$((...))``, ``((...))``, ``let``, ``declare -i``), brace expansion
(``{1..4}``, ``{a,b}``), quoting and the splitting of unquoted results into words (the default
``IFS``). Tilde and file-name patterns are kept as written.

Nothing runs: a value this text does not give (a variable it never sets, ``$(...)``, backticks,
``$1``, an expansion not evaluated here such as ``${X#prefix}``) is an *unresolved* value. It travels inside the word
as a mark (:data:`MARK_OPEN` + a kind letter + what it was written as + :data:`MARK_CLOSE`) so
whoever reads the word knows which part is not known; :func:`plain` shows the word as written.

Control flow is not run either. Assignments are taken in text order; a variable set inside an
``if``/``case``/loop/function body, or after ``&&``/``||``, is known inside that branch and
unresolved after it (whether the branch ran is not known); one set in a subshell, a pipeline or
the background is not set after it; a function body reads the values set before it, and a
variable set again later in the text is unresolved there (when the function runs is not known).

Bounded: one pass over the text; the characters expansion produces (and the copies it keeps)
are counted, and past ``max(4 x the text, 1 MiB)`` the reading stops with
:class:`ExpansionTooLarge`, naming the variable; one brace expansion makes at most
:data:`MAX_BRACE_WORDS` words; nesting of ``${...}``, ``$(( ))``, arithmetic and control flow
is limited to :data:`MAX_NESTING` (deeper is a :class:`ShellSyntaxError`).
"""

from __future__ import annotations

import re
import shlex
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping, TypeVar, Union

from pytest_sglang.parse.shellwords import REDACTED, ShellSyntaxError, unwrap_markdown

_T = TypeVar("_T")

# An unresolved part of a word: MARK_OPEN, a kind letter (see _WHY), its text as written, MARK_CLOSE.
# Unicode private-use characters: no text a user pastes is read with them in it (they are removed).
MARK_OPEN = "\ue000"
MARK_CLOSE = "\ue001"
_MARKED = re.compile("\ue000(.)([^\ue000\ue001]*)\ue001")
_MARK_CHARS = re.compile("[\ue000\ue001]")

# What each kind of unresolved value is, said after its text ("`$X` is not set in this file").
_WHY = {
    "V": "is not set in this file",
    "C": "is a command's output, not run here",
    "A": "is an argument the script is run with, not known here",
    "L": "is set by a loop or read, not followed here",
    "B": "is set in a branch (if, case, loop, function, && or ||) that may not run",
    "F": "is set again after the function that reads it, and when that function runs is not known",
    "X": "is an expansion not evaluated here",
    "N": "is arithmetic that cannot be computed here",
    "R": "is set by the shell when it runs",
    "E": "is set where the manifest is used (compose's shell or .env file, a container's environment), not in this file",
}

MAX_NESTING = 64
# The expansion output allowed: this many times the text, or MIN_BUDGET characters if larger.
BUDGET_FACTOR = 4
MIN_BUDGET = 1 << 20


class ExpansionTooLarge(ValueError):
    """Expanding the text makes far more text than it holds (``B=$A$A``, ``C=$B$B``, ...)."""


def plain(word: str) -> str:
    """A word as written: each unresolved part shown as its shell text (``$MAX_RUNNING_REQUESTS``)."""
    if MARK_OPEN not in word:
        return word
    return _MARKED.sub(lambda m: m.group(2), word)


def unmarked(text: str) -> str:
    """Text as a user gave it, without the private-use characters this module marks with (a
    pasted word holding one would otherwise read as a mark)."""
    return _MARK_CHARS.sub("", text) if MARK_OPEN in text or MARK_CLOSE in text else text


def is_unresolved(text: str) -> bool:
    return MARK_OPEN in text


def unresolved_parts(word: str) -> list[tuple[str, str]]:
    """(kind, text as written) of each unresolved part of a word."""
    return [(m.group(1), m.group(2)) for m in _MARKED.finditer(word)]


def why(kind: str, shown: str) -> str:
    """``"`$X` is not set in this file"``: an unresolved part, and why it is not known."""
    return f"`{shown}` {_WHY.get(kind, _WHY['X'])}"


def reason(kind: str) -> str:
    """Why a part of this kind is not known, after its text: "is not set in this file"."""
    return _WHY.get(kind, _WHY["X"])


# What shlex leaves unquoted.
_SAFE = re.compile(r"[\w@%+=:,./-]+", re.ASCII)


def shell_word(word: str) -> str:
    """A word as a shell line shows it: quoted as :func:`shlex.quote` quotes it, and a part not
    known written as it was (``--tp=$TP``, ``"--name=a b$SUFFIX"``), so the line reads back the same."""
    if not is_unresolved(word):
        return shlex.quote(word)
    pieces: list[tuple[str, bool]] = []
    pos = 0
    for m in _MARKED.finditer(word):
        if m.start() > pos:
            pieces.append((word[pos : m.start()], False))
        pieces.append((m.group(2), True))
        pos = m.end()
    if pos < len(word):
        pieces.append((word[pos:], False))
    if all(marked or _SAFE.fullmatch(text) for text, marked in pieces):
        return "".join(text for text, _ in pieces)
    return '"' + "".join(text if marked else re.sub(r'([\\"$`])', r"\\\1", text) for text, marked in pieces) + '"'


def literal_words(text: str) -> list[str]:
    """The blank-separated words of text a shell would not read (an unbalanced quote): from a
    ``$`` or a backtick on, a word is not known."""
    out: list[str] = []
    for word in text.split():
        cut = min((k for k in (word.find("$"), word.find("`")) if k >= 0), default=-1)
        out.append(word if cut < 0 else word[:cut] + _mark("X", _clip(word[cut:])))
    return out


def mark(kind: str, shown: str) -> str:
    """An unresolved part of a word (see :data:`MARK_OPEN`), for readers of other text forms."""
    return _mark(kind, shown)


def _mark(kind: str, shown: str) -> str:
    # No blank inside: a mark is one piece of a word, whatever splits the word around it.
    return f"{MARK_OPEN}{kind}{''.join(_MARK_CHARS.sub('', shown).split())}{MARK_CLOSE}"


# ---- the words of the text, as bash's lexer makes them ------------------------------------------


class Lit:
    """Literal text of a word, quoted or not. Built in pieces (joined when read): a word of
    many escapes would otherwise be copied once per character."""

    __slots__ = ("_pieces", "quoted")

    def __init__(self, text: str, quoted: bool) -> None:
        self._pieces = [text]
        self.quoted = quoted

    @property
    def text(self) -> str:
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0]

    def add(self, text: str) -> None:
        self._pieces.append(text)

    def __repr__(self) -> str:
        return f"Lit({self.text!r}, {self.quoted})"


@dataclass
class Param:
    """``$X``, ``${X}``, ``${X:-word}``, ``${#X}``, ``${A[i]}``..."""

    name: str
    quoted: bool
    index: list[Part] | None = None  # the subscript's parts; '@' and '*' as a Lit
    op: str | None = None
    arg: list[Part] | None = None
    length: bool = False


@dataclass
class Arith:
    parts: list[Part]
    quoted: bool
    raw: str


@dataclass
class Subst:
    """``$(...)``, backticks, ``<(...)``: a command's output; or an expansion not evaluated here."""

    kind: str
    shown: str
    quoted: bool


Part = Union[Lit, Param, Arith, Subst]


@dataclass
class Word:
    parts: list[Part]
    start: int
    end: int

    def literal(self) -> str | None:
        """The text, when the word is unquoted literal text only (a keyword, an operator-like word)."""
        if all(isinstance(p, Lit) and not p.quoted for p in self.parts):
            return "".join(p.text for p in self.parts)  # type: ignore[union-attr]
        return None


@dataclass
class ArrayAssign:
    name: str
    append: bool
    elements: list[Word]
    start: int
    end: int


@dataclass
class Op:
    text: str
    start: int


@dataclass
class Redir:
    text: str
    start: int


@dataclass
class ArithCommand:
    """``(( expr ))`` at the start of a command."""

    parts: list[Part]
    start: int
    end: int


Token = Union[Word, ArrayAssign, Op, Redir, ArithCommand]

_CONTROL = ("&&", "||", ";;&", ";;", ";&", "|&", ";", "|", "&", "(", ")")
_REDIRECT = ("&>>", "&>", ">>", ">&", ">|", "<&", "<<<", "<<-", "<<", "<>", ">", "<")
# Runs of characters with no meaning to the lexer, in each context.
_PLAIN_WORD = re.compile(r"[^\\'\"`$ \t\r\n<>&|;()]+")
_PLAIN_DQ = re.compile(r'[^"\\$`]+')
_PLAIN_ARG = re.compile(r"[^\\'\"`$}]+")
_PLAIN_ARITH = re.compile(r"[^\\$`()'\"]+")
_PLAIN_SUBSCRIPT = re.compile(r"[^\\$`\]]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[([^\]]*)\])?(\+?)=")
_SPECIAL = "@*#?-$!0"


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.i = 0
        self.depth = 0
        self.tokens: list[Token] = []
        self.heredocs: list[tuple[str, bool]] = []

    # -- top level --------------------------------------------------------------------------------
    def run(self) -> list[Token]:
        text, n = self.text, self.n
        while self.i < n:
            c = text[self.i]
            if c in " \t\r":
                self.i += 1
            elif c == "\\" and text.startswith("\\\n", self.i):
                self.i += 2
            elif c == "#":
                end = text.find("\n", self.i)
                self.i = n if end < 0 else end
            elif c == "\n":
                self.tokens.append(Op("\n", self.i))
                self.i += 1
                if self.heredocs:
                    self._skip_heredocs()
            elif c == "<" and text.startswith(REDACTED, self.i):  # the redactor's mark is a value
                self._word()
            elif c in "<>" and self.i + 1 < n and text[self.i + 1] == "(":
                self._word()  # process substitution: a word
            elif c in "&|;()<>":
                if c == "(" and text.startswith("((", self.i) and self._at_command_start():
                    start = self.i
                    self.i += 2
                    parts = self._arith_parts()
                    if parts is not None:
                        self.tokens.append(ArithCommand(parts, start, self.i))
                        continue
                    self.i = start  # '( (' : two subshells
                redirect = self._operator(_REDIRECT)
                if redirect is not None:
                    self._redirect(redirect, "")
                    continue
                op = self._operator(_CONTROL) or c
                self.tokens.append(Op(op, self.i))
                self.i += len(op)
            else:
                self._word()
        return self.tokens

    def _at_command_start(self) -> bool:
        last = self.tokens[-1] if self.tokens else None
        return last is None or isinstance(last, Op) or (isinstance(last, Word) and last.literal() in _OPENERS)

    def _operator(self, ops: tuple[str, ...]) -> str | None:
        for op in ops:
            if self.text.startswith(op, self.i):
                return op
        return None

    def _redirect(self, op: str, descriptor: str) -> None:
        start = self.i
        self.i += len(op)
        if op in (">&", "<&"):  # 2>&1, >&2, <&-: the target is a descriptor
            j = self.i
            while j < self.n and (self.text[j].isdigit() or self.text[j] == "-"):
                j += 1
            if j > self.i:
                self.tokens.append(Redir(descriptor + op + self.text[self.i : j], start))
                self.i = j
                return
        self.tokens.append(Redir(descriptor + op, start))
        if op in ("<<", "<<-"):
            while self.i < self.n and self.text[self.i] in " \t":
                self.i += 1
            before = len(self.tokens)
            self._word()
            if len(self.tokens) > before and isinstance(self.tokens[-1], Word):
                delimiter = "".join(p.text if isinstance(p, Lit) else "" for p in self.tokens[-1].parts)
                self.heredocs.append((delimiter, op == "<<-"))

    def _skip_heredocs(self) -> None:
        """The bodies of here-documents begun on the line just ended: not commands."""
        text = self.text
        for delimiter, strip_tabs in self.heredocs:
            while self.i < self.n:
                end = text.find("\n", self.i)
                line = text[self.i : self.n if end < 0 else end]
                self.i = self.n if end < 0 else end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
        self.heredocs = []

    # -- words ----------------------------------------------------------------------------------
    def _word(self) -> None:
        start = self.i
        parts: list[Part] = []
        text, n = self.text, self.n
        while self.i < n:
            c = text[self.i]
            if c in " \t\r\n;&|)":
                break
            if c == "(":
                head = _joined_literal(parts)
                match = _ASSIGN.fullmatch(head) if head is not None else None
                if match is not None and match.group(2) is None:
                    self.i += 1
                    self.tokens.append(ArrayAssign(match.group(1), bool(match.group(3)), self._array_elements(), start, self.i))
                    return
                break
            if c in "<>":
                if text.startswith(REDACTED, self.i):
                    parts.append(Lit(REDACTED, False))
                    self.i += len(REDACTED)
                    continue
                if self.i + 1 < n and text[self.i + 1] == "(":  # <(...) >(...)
                    begin = self.i
                    self.i += 1
                    self._skip_parens()
                    parts.append(Subst("C", _shown_command(text[begin : self.i], c + "("), False))
                    continue
                head = _joined_literal(parts)
                redirect = self._operator(_REDIRECT)
                if redirect is not None and head is not None and head.isdigit():
                    self._redirect(redirect, head)  # 2>file: the digits are its descriptor
                    return
                break
            if not self._part(parts, quoted=False):
                run = _PLAIN_WORD.match(text, self.i)
                if run is None:  # a character no context takes: one at a time
                    _add_lit(parts, c, False)
                    self.i += 1
                else:
                    _add_lit(parts, run.group(), False)
                    self.i = run.end()
        if self.i > start:
            self.tokens.append(Word(parts, start, self.i))

    def _array_elements(self) -> list[Word]:
        """The words of ``NAME=( ... )`` up to its ``)`` (newlines and comments allowed)."""
        elements: list[Word] = []
        text, n = self.text, self.n
        while True:
            while self.i < n and text[self.i] in " \t\r\n":
                self.i += 1
            if self.i >= n:
                raise ShellSyntaxError("an unclosed array ( ... )")
            c = text[self.i]
            if c == ")":
                self.i += 1
                return elements
            if c == "\\" and text.startswith("\\\n", self.i):
                self.i += 2
                continue
            if c == "#":
                end = text.find("\n", self.i)
                self.i = n if end < 0 else end
                continue
            start = self.i
            parts: list[Part] = []
            while self.i < n and text[self.i] not in " \t\r\n)":
                if not self._part(parts, quoted=False):
                    run = _PLAIN_WORD.match(text, self.i)
                    if run is None:
                        _add_lit(parts, text[self.i], False)
                        self.i += 1
                    else:
                        _add_lit(parts, run.group(), False)
                        self.i = run.end()
            elements.append(Word(parts, start, self.i))

    def _part(self, parts: list[Part], *, quoted: bool) -> bool:
        """One quoted string, escape or expansion at ``self.i`` added to ``parts``; False when
        the character there is none of these."""
        text, n = self.text, self.n
        c = text[self.i]
        if c == "\\":
            if self.i + 1 < n and text[self.i + 1] == "\n":
                self.i += 2
                return True
            _add_lit(parts, text[self.i + 1] if self.i + 1 < n else "", True)
            self.i += 2
            return True
        if c == "'":
            end = text.find("'", self.i + 1)
            if end < 0:
                raise ShellSyntaxError("an unbalanced single quote")
            _add_lit(parts, text[self.i + 1 : end], True)
            self.i = end + 1
            return True
        if c == '"':
            self.i += 1
            self._double_quoted(parts)
            return True
        if c == "`":
            parts.append(self._backticks(quoted))
            return True
        if c == "$":
            self._dollar(parts, quoted)
            return True
        return False

    def _double_quoted(self, parts: list[Part]) -> None:
        text, n = self.text, self.n
        count = len(parts)
        while True:
            run = _PLAIN_DQ.match(text, self.i)
            if run is not None:
                _add_lit(parts, run.group(), True)
                self.i = run.end()
            if self.i >= n:
                raise ShellSyntaxError("an unbalanced double quote")
            c = text[self.i]
            if c == '"':
                self.i += 1
                if len(parts) == count:  # "" is a word even when empty ("${A[@]}" of no items is none)
                    _add_lit(parts, "", True)
                return
            if c == "\\":
                if self.i + 1 < n and text[self.i + 1] in '"\\$`\n':
                    if text[self.i + 1] != "\n":
                        _add_lit(parts, text[self.i + 1], True)
                    self.i += 2
                else:
                    _add_lit(parts, "\\", True)
                    self.i += 1
            elif c == "`":
                parts.append(self._backticks(True))
            else:
                self._dollar(parts, True)

    def _backticks(self, quoted: bool) -> Subst:
        start = self.i
        j = self.i + 1
        while True:
            k = self.text.find("`", j)
            if k < 0:
                raise ShellSyntaxError("an unbalanced backtick")
            backslashes = 0
            while self.text[k - 1 - backslashes] == "\\" and k - 1 - backslashes > start:
                backslashes += 1
            if backslashes % 2 == 0:
                break
            j = k + 1
        self.i = k + 1
        return Subst("C", _shown_command(self.text[start : self.i], "`"), quoted)

    def _skip_parens(self) -> None:
        """From a ``(`` past its matching ``)``, over quotes and nested parentheses."""
        text, n = self.text, self.n
        depth = 0
        while self.i < n:
            c = text[self.i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return
            elif c == "\\":
                self.i += 1
            elif c == "'":
                end = text.find("'", self.i + 1)
                if end < 0:
                    raise ShellSyntaxError("an unbalanced single quote")
                self.i = end
            elif c == '"':
                scratch: list[Part] = []
                self.i += 1
                self._nested(lambda: self._double_quoted(scratch))
                continue
            elif c == "`":
                self._backticks(True)
                continue
            self.i += 1
        raise ShellSyntaxError("an unclosed $( ... )")

    def _nested(self, read: Callable[[], _T]) -> _T:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise ShellSyntaxError(f"expansions nested more than {MAX_NESTING} deep")
        try:
            return read()
        finally:
            self.depth -= 1

    def _dollar(self, parts: list[Part], quoted: bool) -> None:
        text, n = self.text, self.n
        start = self.i
        nxt = text[self.i + 1] if self.i + 1 < n else ""
        if nxt == "{":
            self.i += 2
            parts.append(self._nested(lambda: self._brace(start, quoted)))
        elif nxt == "(":
            if text.startswith("((", self.i + 1):
                self.i += 3
                inner = self._nested(self._arith_parts)
                if inner is not None:
                    parts.append(Arith(inner, quoted, text[start : self.i]))
                    return
            self.i = start + 1
            self._skip_parens()
            parts.append(Subst("C", _shown_command(text[start : self.i], "$("), quoted))
        elif nxt == "'" and not quoted:
            self.i += 2
            parts.append(Lit(self._ansi_c(), True))
        elif nxt == '"' and not quoted:
            self.i += 1  # $"...": a translated string, read as "..."
        elif nxt and (nxt.isalpha() or nxt == "_") and nxt.isascii():
            match = _NAME.match(text, self.i + 1)
            assert match is not None
            self.i = match.end()
            parts.append(Param(match.group(), quoted))
        elif nxt.isdigit() or (nxt and nxt in _SPECIAL):
            self.i += 2
            parts.append(Param(nxt, quoted))
        else:
            _add_lit(parts, "$", quoted)
            self.i += 1

    def _ansi_c(self) -> str:
        """The text of ``$'...'`` with its escapes (``\\n``, ``\\t``, ``\\xHH``, ``\\'``...)."""
        text, n = self.text, self.n
        out: list[str] = []
        while self.i < n:
            c = text[self.i]
            if c == "'":
                self.i += 1
                return "".join(out)
            if c == "\\" and self.i + 1 < n:
                e = text[self.i + 1]
                simple = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
                if e in simple:
                    out.append(simple[e])
                    self.i += 2
                    continue
                match = re.compile(r"x([0-9A-Fa-f]{1,2})|([0-7]{1,3})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})").match(text, self.i + 1)
                if match is not None:
                    digits = next(g for g in match.groups() if g)
                    code = int(digits, 8 if match.group(2) else 16)
                    out.append(chr(code) if code < 0x110000 and code != 0 else "")
                    self.i = match.end()
                    continue
                out.append("\\" + e)
                self.i += 2
                continue
            out.append(c)
            self.i += 1
        raise ShellSyntaxError("an unbalanced single quote")

    def _brace(self, start: int, quoted: bool) -> Part:
        """``${...}`` after its ``${``."""
        text, n = self.text, self.n
        length = False
        if self.i < n and text[self.i] == "#" and self.i + 1 < n and text[self.i + 1] != "}":
            length = True
            self.i += 1
        if self.i < n and text[self.i] == "!":
            return self._unsupported(start, quoted)
        match = _NAME.match(text, self.i)
        if match is not None:
            name = match.group()
            self.i = match.end()
        elif self.i < n and text[self.i].isdigit():
            j = self.i
            while j < n and text[j].isdigit():
                j += 1
            name, self.i = text[self.i : j], j
        elif self.i < n and text[self.i] in _SPECIAL:
            name = text[self.i]
            self.i += 1
        else:
            return self._unsupported(start, quoted)
        index: list[Part] | None = None
        if self.i < n and text[self.i] == "[" and match is not None:
            self.i += 1
            index = self._until("]", _PLAIN_SUBSCRIPT)
        if self.i >= n:
            raise ShellSyntaxError("an unclosed ${")
        if text[self.i] == "}":
            self.i += 1
            return Param(name, quoted, index, None, None, length)
        if length:
            return self._unsupported(start, quoted)
        op = next((o for o in (":-", ":=", ":+", ":?", "-", "=", "+", "?") if text.startswith(o, self.i)), None)
        if op is None:
            return self._unsupported(start, quoted)
        self.i += len(op)
        arg = self._brace_arg(quoted)
        return Param(name, quoted, index, op, arg)

    def _brace_arg(self, quoted: bool) -> list[Part]:
        """The word of ``${X:-word}`` up to its ``}``: quotes and expansions inside are read."""
        text, n = self.text, self.n
        parts: list[Part] = []
        while self.i < n and text[self.i] != "}":
            if quoted and text[self.i] == "'":  # inside "...", a single quote is a character
                _add_lit(parts, "'", True)
                self.i += 1
                continue
            if quoted and text[self.i] == "\\" and self.i + 1 < n and text[self.i + 1] not in '"\\$`}\n':
                _add_lit(parts, "\\", True)  # inside "...": a backslash stays before other characters
                self.i += 1
                continue
            if not self._part(parts, quoted=quoted):
                run = _PLAIN_ARG.match(text, self.i)
                assert run is not None
                _add_lit(parts, run.group(), quoted)
                self.i = run.end()
        if self.i >= n:
            raise ShellSyntaxError("an unclosed ${")
        self.i += 1
        if quoted:
            parts = [Lit(p.text, True) if isinstance(p, Lit) else p for p in parts]
        return parts

    def _unsupported(self, start: int, quoted: bool) -> Subst:
        self._brace_arg(quoted)  # read past the matching '}' (its parts are not used)
        return Subst("X", self.text[start : self.i], quoted)

    def _until(self, close: str, plain: re.Pattern[str]) -> list[Part]:
        text, n = self.text, self.n
        parts: list[Part] = []
        while self.i < n and text[self.i] != close:
            if not self._part(parts, quoted=True):
                run = plain.match(text, self.i)
                assert run is not None
                _add_lit(parts, run.group(), True)
                self.i = run.end()
        if self.i >= n:
            raise ShellSyntaxError(f"an unclosed {close}")
        self.i += 1
        return parts

    def _arith_parts(self) -> list[Part] | None:
        """The expression of ``$(( ... ))`` after its ``$((``, up to ``))``; None when the
        parentheses close otherwise (then it is ``$( (...) )``, a command)."""
        text, n = self.text, self.n
        parts: list[Part] = []
        depth = 0
        while self.i < n:
            c = text[self.i]
            if c == "(":
                depth += 1
                _add_lit(parts, c, True)
                self.i += 1
            elif c == ")":
                if depth == 0:
                    if text.startswith("))", self.i):
                        self.i += 2
                        return parts
                    return None
                depth -= 1
                _add_lit(parts, c, True)
                self.i += 1
            elif c in "'\"":  # quotes inside arithmetic are removed
                self.i += 1
            elif not self._part(parts, quoted=True):
                run = _PLAIN_ARITH.match(text, self.i)
                assert run is not None
                _add_lit(parts, run.group(), True)
                self.i = run.end()
        return None


_OPENERS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"})


def _add_lit(parts: list[Part], text: str, quoted: bool) -> None:
    last = parts[-1] if parts else None
    if isinstance(last, Lit) and last.quoted == quoted:
        last.add(text)
    else:
        parts.append(Lit(text, quoted))


def _joined_literal(parts: list[Part]) -> str | None:
    if parts and all(isinstance(p, Lit) and not p.quoted for p in parts):
        return "".join(p.text for p in parts)  # type: ignore[union-attr]
    return None


def _shown_command(raw: str, opener: str) -> str:
    """``$(nproc ...)``: a command substitution shown by its first word only (the rest may hold
    anything, a secret too)."""
    inner = raw[len(opener) : -1] if raw.endswith(")" if opener != "`" else "`") else raw[len(opener) :]
    first = inner.split(None, 1)[0] if inner.split() else ""
    first = first if re.fullmatch(r"[\w./-]{1,30}", first) else "..."
    more = " ..." if len(inner.split()) > 1 or first == "..." and inner.strip() else ""
    close = "`" if opener == "`" else ")"
    return f"{opener}{first}{more}{close}" if first != "..." else f"{opener}...{close}"


# ---- commands -----------------------------------------------------------------------------------


@dataclass
class Assignment:
    name: str
    value: Word | ArrayAssign | None  # None: a name alone (export X)
    append: bool = False
    index: str | None = None


@dataclass
class _Simple:
    """One simple command as written: leading keywords, assignments, words, where it ends."""

    keywords: list[str]
    assignments: list[Assignment]
    words: list[Word | ArrayAssign]
    arith: ArithCommand | None
    before: str  # the operator before it ('' at the start)
    after: str  # the operator that ends it ('' at the end of the text)
    start: int
    end: int  # where its ending operator starts (the text's end for the last)
    function_head: bool = False  # 'function NAME' (its body follows)


@dataclass
class Command:
    """A simple command of the text, expanded: its words (unresolved parts marked), the
    environment it runs with (exported variables and its own ``VAR=value`` prefixes; worked out
    for the first command and the one :func:`read_script` is asked for), where it is in the text."""

    words: list[str]
    env: dict[str, str]
    start: int
    end: int
    after: str
    sources: dict[int, list[str]] = field(default_factory=dict)  # word index -> the variables it was made of


@dataclass
class Script:
    text: str  # the text read (markdown taken off)
    commands: list[Command]
    defaults_used: list[str]  # `$X` not set in the text whose ${X:-default} was taken
    values: dict[str, list[str]]  # every value each variable held (to hide a secret's parts) ...
    sources: dict[str, list[str]]  # ... and the variables that made each one
    line_starts: list[int] = field(default_factory=list)
    fence_lines: list[int] = field(default_factory=list)

    def line_of(self, offset: int) -> int:
        """The line number (1-based, of the text as given) of an offset into :attr:`text`."""
        line = bisect_right(self.line_starts, offset)
        return line - bisect_left(self.fence_lines, line - 1)

    def made_of(self, names: list[str]) -> list[str]:
        """The values of these variables and of every variable they were made of."""
        seen: set[str] = set()
        todo = list(names)
        out: list[str] = []
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            out += self.values.get(name, [])
            todo += self.sources.get(name, [])
        return out

    def lines_after(self, command: Command) -> tuple[int, str, list[str]]:
        """(the command's last line, its text, the lines right after it that start with a flag):
        what a missing ``\\`` at the end of that line leaves out of the command."""
        if command.after != "\n":
            return 0, "", []
        text = self.text
        end = command.end  # the newline that ended it
        begin = text.rfind("\n", 0, end) + 1
        out: list[str] = []
        i = end + 1
        while i < len(text) and len(out) < 10_000:
            j = text.find("\n", i)
            line = text[i : len(text) if j < 0 else j]
            i = len(text) if j < 0 else j + 1
            stripped = line.strip()
            if not stripped:
                continue
            if not _FLAG_LINE.match(stripped):
                break
            out.append(stripped)
        return self.line_of(end), text[begin:end], out


_FLAG_LINE = re.compile(r"-{1,2}[A-Za-z]")
_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "time", "case", "esac", "for", "select", "function"})
_DECLARE = frozenset({"export", "declare", "typeset", "local", "readonly"})
_BUILTINS = _DECLARE | {"unset", "read", "mapfile", "readarray", "let", "set"}


def _commands(tokens: list[Token]) -> list[_Simple]:
    """The tokens grouped into simple commands (redirections and their targets left out)."""
    out: list[_Simple] = []
    words: list[Word | ArrayAssign] = []
    arith: ArithCommand | None = None
    before = ""
    start = 0
    skip_target = False
    for token in tokens:
        if isinstance(token, Redir):
            skip_target = not _DUPLICATE.search(token.text)  # '2>&1' has its target in it
            continue
        if skip_target and isinstance(token, (Word, ArrayAssign)):
            skip_target = False
            continue
        skip_target = False
        if isinstance(token, ArithCommand):
            arith = token
            continue
        if isinstance(token, (Word, ArrayAssign)):
            if not words and arith is None:
                start = token.start
            words.append(token)
            continue
        out.append(_simple(words, arith, before, token.text, start, token.start))
        words, arith, before = [], None, token.text
        start = token.start + len(token.text)
    if words or arith is not None:
        last = tokens[-1]
        out.append(_simple(words, arith, before, "", start, last.end if isinstance(last, (Word, ArrayAssign, ArithCommand)) else start))
    return out


_DUPLICATE = re.compile(r"[<>]&[\d-]+$")


def _simple(words: list[Word | ArrayAssign], arith: ArithCommand | None, before: str, after: str, start: int, end: int) -> _Simple:
    keywords: list[str] = []
    rest = list(words)
    function_head = False
    while rest and isinstance(rest[0], Word) and rest[0].literal() in _KEYWORDS:
        keyword = _literal(rest.pop(0)) or ""
        keywords.append(keyword)
        if keyword == "function":
            function_head = True
            if rest:
                rest.pop(0)  # its name
            continue
        if keyword in ("for", "select", "case"):
            break
    assignments: list[Assignment] = []
    if keywords[-1:] not in (["for"], ["select"], ["case"]):
        while rest:
            assignment = _assignment(rest[0])
            if assignment is None:
                break
            assignments.append(assignment)
            rest.pop(0)
    return _Simple(keywords, assignments, rest, arith, before, after, start, end, function_head)


def _assignment(token: Word | ArrayAssign) -> Assignment | None:
    if isinstance(token, ArrayAssign):
        return Assignment(token.name, token, token.append)
    first = token.parts[0] if token.parts else None
    if not isinstance(first, Lit) or first.quoted:
        return None
    match = _ASSIGN.match(first.text)
    if match is None:
        return None
    rest = first.text[match.end() :]
    value = Word(([Lit(rest, False)] if rest else []) + token.parts[1:], token.start, token.end)
    return Assignment(match.group(1), value, bool(match.group(3)), match.group(2))


def _literal(token: Word | ArrayAssign) -> str | None:
    return token.literal() if isinstance(token, Word) else None


# ---- brace expansion: {a,b}, {1..8} ------------------------------------------------------------

_LBRACE, _COMMA, _RBRACE = "{", ",", "}"
_SEQUENCE = re.compile(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?|([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?")
MAX_BRACE_WORDS = 10_000


class _Brace:
    """An unquoted ``{``, ``,`` or ``}`` of a word."""

    __slots__ = ("char",)

    def __init__(self, char: str) -> None:
        self.char = char


def _atoms(parts: list[Part]) -> list[Part | _Brace]:
    out: list[Part | _Brace] = []
    for part in parts:
        if isinstance(part, Lit) and not part.quoted and any(c in part.text for c in "{,}"):
            for piece in re.split(r"([{,}])", part.text):
                if piece in ("{", ",", "}"):
                    out.append(_Brace(piece))
                elif piece:
                    out.append(Lit(piece, False))
        else:
            out.append(part)
    return out


def brace_expand(parts: list[Part], budget: _Expander) -> list[list[Part]]:
    """The words bash's brace expansion makes of one word (a word without a brace list, as it is)."""
    if not any(isinstance(p, Lit) and not p.quoted and "{" in p.text and "}" in p.text for p in parts):
        return [parts]
    results = _expand_atoms(_atoms(parts), 0, budget)
    return [_merged(r) for r in results]


def _merged(atoms: list[Part | _Brace]) -> list[Part]:
    out: list[Part] = []
    for a in atoms:
        if isinstance(a, _Brace):
            _add_lit(out, a.char, True)  # a brace left as text is not special any more
        elif isinstance(a, Lit):
            _add_lit(out, a.text, a.quoted)
        else:
            out.append(a)
    return out


def _expand_atoms(atoms: list[Part | _Brace], depth: int, budget: _Expander) -> list[list[Part | _Brace]]:
    """Left to right: literal runs and brace groups, each group's alternatives expanded in turn
    (nested groups recursively, to :data:`MAX_NESTING`); the words are every combination."""
    if depth > MAX_NESTING:
        raise ShellSyntaxError(f"braces nested more than {MAX_NESTING} deep")
    segments: list[list[list[Part | _Brace]]] = []
    run: list[Part | _Brace] = []
    i = 0
    while i < len(atoms):
        a = atoms[i]
        if isinstance(a, _Brace) and a.char == _LBRACE:
            close, commas = _matching(atoms, i)
            alternatives: list[list[Part | _Brace]] | None = None
            if close is not None and commas:
                bounds = [i, *commas, close]
                alternatives = []
                for lo, hi in zip(bounds, bounds[1:]):
                    alternatives += _expand_atoms(atoms[lo + 1 : hi], depth + 1, budget)
            elif close is not None:
                sequence = _sequence(atoms[i + 1 : close])
                if sequence is not None:
                    alternatives = [[Lit(s, True)] for s in sequence]
            if alternatives is not None:
                segments.append([run])
                segments.append(alternatives)
                run = []
                count = 1
                for segment in segments:
                    count *= len(segment)
                    if count > MAX_BRACE_WORDS:
                        raise ExpansionTooLarge(f"brace expansion makes more than {MAX_BRACE_WORDS} words of one word")
                i = close + 1  # type: ignore[operator]
                continue
        run.append(a)
        i += 1
    segments.append([run])
    results: list[list[Part | _Brace]] = [[]]
    for segment in segments:
        results = [r + alt for r in results for alt in segment]
        budget.used += sum(len(r) for r in results)  # the work done, in parts
        if budget.used > budget.budget:
            raise ExpansionTooLarge(f"brace expansion makes more than {budget.budget} parts of words: it is not read")
    return results


def _matching(atoms: list[Part | _Brace], i: int) -> tuple[int | None, list[int]]:
    depth = 0
    commas: list[int] = []
    for j in range(i, len(atoms)):
        a = atoms[j]
        if not isinstance(a, _Brace):
            continue
        if a.char == _LBRACE:
            depth += 1
        elif a.char == _RBRACE:
            depth -= 1
            if depth == 0:
                return j, commas
        elif depth == 1:
            commas.append(j)
    return None, []


def _sequence(atoms: list[Part | _Brace]) -> list[str] | None:
    if len(atoms) != 1 or not isinstance(atoms[0], Lit) or atoms[0].quoted:
        return None
    match = _SEQUENCE.fullmatch(atoms[0].text)
    if match is None:
        return None
    step_text = match.group(3) or match.group(6)
    step = abs(int(step_text)) if step_text else 1
    step = step or 1
    if match.group(1) is not None:
        a, b = int(match.group(1)), int(match.group(2))
        if abs(b - a) // step + 1 > MAX_BRACE_WORDS:
            raise ExpansionTooLarge(f"brace expansion makes more than {MAX_BRACE_WORDS} words of one word")
        width = max(len(match.group(1)), len(match.group(2))) if re.match(r"-?0\d", match.group(1)) or re.match(r"-?0\d", match.group(2)) else 0
        values = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
        return [str(v).zfill(width) if v >= 0 else "-" + str(-v).zfill(width - 1) for v in values]
    a_char, b_char = match.group(4), match.group(5)
    codes = range(ord(a_char), ord(b_char) + 1, step) if a_char <= b_char else range(ord(a_char), ord(b_char) - 1, -step)
    return [chr(c) for c in codes]


# ---- variables and expansion --------------------------------------------------------------------


@dataclass
class _Var:
    value: str | None = None
    items: dict[int, str] | None = None
    exported: bool = False
    integer: bool = False
    unknown: str | None = None  # the kind letter when the value is not known
    made_of: list[str] = field(default_factory=list)  # the variables whose values made it
    top: int = 0  # an array's highest index + 1 (where A+=(...) goes)

    def copy(self) -> _Var:
        return _Var(self.value, dict(self.items) if self.items is not None else None, self.exported, self.integer, self.unknown, list(self.made_of), self.top)


@dataclass
class _Scope:
    kind: str  # "if", "loop", "case", "function", "group", "subshell", "and-or"
    saved: dict[str, _Var | None] = field(default_factory=dict)
    function_end: int | None = None


_BREAK = object()  # a word boundary inside "${A[@]}"
_IFS = re.compile(r"[ \t\n]+")


class _Expander:
    def __init__(self, text_length: int, env: Mapping[str, str]) -> None:
        self.vars: dict[str, _Var] = {name: _Var(value=value, exported=True) for name, value in env.items()}
        self.budget = max(BUDGET_FACTOR * text_length, MIN_BUDGET)
        self.used = 0
        self.defaults_used: dict[str, None] = {}
        self.allexport = False
        self.scopes: list[_Scope] = []
        self.function_end: int | None = None  # inside a function body: the index of its last command
        self.last_assigned: dict[str, int] = {}
        self.arith_depth = 0
        self.made_of: list[str] = []  # variables read while expanding the current word
        self.history: dict[str, list[str]] = {}  # every value each scalar held (to hide a secret's parts)

    def charge(self, text: str, name: str) -> str:
        self.used += len(text)
        if self.used > self.budget:
            raise ExpansionTooLarge(f"expanding {name} makes more than {self.budget} characters (over {BUDGET_FACTOR} times the text, or 1 MiB): it is not read")
        return text

    # -- scopes: what a branch, a loop or a subshell does to the variables it sets --------------
    def touch(self, name: str) -> None:
        for scope in self.scopes:
            if name not in scope.saved:
                var = self.vars.get(name)
                if var is not None and var.items:
                    self.charge_work(len(var.items), name)  # the copy kept, counted as output
                scope.saved[name] = None if var is None else var.copy()

    def charge_work(self, size: int, name: str) -> None:
        self.used += size
        if self.used > self.budget:
            self.charge("", "$" + name)

    def open(self, kind: str, function_end: int | None = None) -> None:
        if len(self.scopes) >= MAX_NESTING:  # each assignment is noted in every open scope
            raise ShellSyntaxError(f"if, case, loops, functions and subshells nested more than {MAX_NESTING} deep")
        self.scopes.append(_Scope(kind, function_end=function_end))
        self._function_end()

    def branch(self) -> None:
        """The next branch of an if or a case starts from the values before the first."""
        scope = self.scopes[-1]
        for name, before in scope.saved.items():
            if before is None:
                self.vars.pop(name, None)
            else:
                self.vars[name] = before.copy()

    def close(self) -> None:
        scope = self.scopes.pop()
        self._function_end()
        if scope.kind == "group":
            return
        for name, before in scope.saved.items():
            if scope.kind == "subshell":  # nothing it sets is seen after it
                if before is None:
                    self.vars.pop(name, None)
                else:
                    self.vars[name] = before
            else:  # it may or may not have run: what it set is not known after it
                now = self.vars.get(name)
                exported = bool(now and now.exported) or bool(before and before.exported)
                self.vars[name] = _Var(unknown=now.unknown if now is not None and now.unknown else "B", exported=exported)

    def _function_end(self) -> None:
        ends = [s.function_end for s in self.scopes if s.function_end is not None]
        self.function_end = min(ends) if ends else None

    # -- reading variables ---------------------------------------------------------------------
    def lookup(self, name: str, shown: str) -> _Var | str:
        """The variable, or the mark of why its value is not known."""
        if name.isdigit() or name in "@*#":
            return _mark("A", shown)
        if name in _SPECIAL:
            return _mark("R", shown)
        if self.function_end is not None and self.last_assigned.get(name, -1) > self.function_end:
            return _mark("F", shown)
        var = self.vars.get(name)
        if var is None:
            return _mark("V", shown)
        if var.unknown is not None:
            return _mark(var.unknown, shown)
        self.made_of.append(name)
        return var

    # -- words -----------------------------------------------------------------------------------
    def words(self, word: Word) -> list[str]:
        """The words bash makes of ``word``: brace expansion, then each result expanded."""
        out: list[str] = []
        for parts in brace_expand(word.parts, self):
            out += self.fields(parts)
        return out

    def fields(self, parts: list[Part]) -> list[str]:
        """The parts expanded, unquoted results split on blanks, empty unquoted results dropped."""
        out: list[str] = []
        current: list[str] = []
        started = False
        for piece, splittable in self.pieces(parts):
            if piece is _BREAK:
                out.append("".join(current))
                current, started = [], False
                continue
            assert isinstance(piece, str)
            if not splittable:
                current.append(piece)
                started = True
                continue
            for k, chunk in enumerate(_IFS.split(piece)):
                if k and started:
                    out.append("".join(current))
                    current, started = [], False
                if chunk:
                    current.append(chunk)
                    started = True
        if started:
            out.append("".join(current))
        return out

    def string(self, parts: list[Part]) -> str:
        """The parts expanded without splitting (an assignment's value): ``"${A[@]}"`` joined by spaces."""
        out: list[str] = []
        for piece, _ in self.pieces(parts):
            out.append(" " if piece is _BREAK else piece)  # type: ignore[arg-type]
        return "".join(out)

    def pieces(self, parts: list[Part]) -> Iterator[tuple[object, bool]]:
        """(text, whether it is split) for each part; ``_BREAK`` between the items of ``"${A[@]}"``."""
        for part in parts:
            if isinstance(part, Lit):
                yield part.text, not part.quoted
            elif isinstance(part, Subst):
                yield _mark(part.kind, part.shown), False
            elif isinstance(part, Arith):
                yield self.charge(self.arithmetic(part), part.raw), not part.quoted
            else:
                yield from self.param(part)

    def param(self, p: Param) -> Iterator[tuple[object, bool]]:
        shown = _shown_param(p)
        found = self.lookup(p.name, shown)
        if isinstance(found, str):  # not known here
            if p.op in ("-", ":-", "=", ":=") and found[1] == "V":  # never set in the text: its default
                self.defaults_used[shown] = None
                if p.op.endswith("="):
                    self.assign(p.name, self.string(p.arg or []), index=None, append=False)
                yield from self._arg(p)
                return
            yield found, False
            return
        var = found
        if var.items is not None and self.made_of and self.made_of[-1] == p.name:
            self.made_of.pop()  # an item is its own value: what made the others is not this word's
        index = self._subscript(p, var) if p.index is not None else None
        if index == "?":
            yield _mark("N", shown), False
            return
        if p.length and index in ("@", "*"):
            yield str(len(var.items) if var.items is not None else int(var.value is not None)), not p.quoted
            return
        if index in ("@", "*"):
            values = [v for _, v in sorted(var.items.items())] if var.items is not None else ([] if var.value is None else [var.value])
            is_set, empty = bool(values), not values or values == [""]
        else:
            value = _element(var, index)
            values = [] if value is None else [value]
            is_set, empty = value is not None, not value
        if p.length:
            if any(is_unresolved(v) for v in values):
                yield _mark("X", shown), False
            else:
                yield str(len(values) if index in ("@", "*") else len(values[0]) if values else 0), not p.quoted
            return
        if p.op is not None:
            use_other = not is_set or (p.op.startswith(":") and empty)
            if p.op[-1] in "-=":
                if use_other:
                    if p.op.endswith("="):
                        self.assign(p.name, self.string(p.arg or []), index=None, append=False)
                    yield from self._arg(p)
                    return
            elif p.op[-1] == "+":
                if not use_other:
                    yield from self._arg(p)
                elif p.quoted:
                    yield "", False
                return
            elif use_other:  # ${X:?message}: the script stops here
                yield _mark("X", shown), False
                return
        if index == "@" and p.quoted:
            for k, value in enumerate(values):
                if k:
                    yield _BREAK, False
                yield self.charge(value, shown), False
            return
        yield self.charge(" ".join(values), shown), not p.quoted

    def _arg(self, p: Param) -> Iterator[tuple[object, bool]]:
        for piece, splittable in self.pieces(p.arg or []):
            yield piece, splittable and not p.quoted

    def _subscript(self, p: Param, var: _Var) -> int | str:
        text = self.string(p.index or []).strip()
        if text in ("@", "*"):
            return text
        if is_unresolved(text):
            return "?"
        try:
            value = self.evaluate(text)
        except (_ArithError, _Unknown):
            return "?"
        if value < 0:
            value += var.top if var.items is not None else int(var.value is not None)
        return value

    # -- arithmetic ------------------------------------------------------------------------------
    def arithmetic(self, part: Arith) -> str:
        text = self.string(part.parts)
        marks = unresolved_parts(text)
        if marks:
            self.forget_assigned(text)
            return _mark(*marks[0])
        try:
            return str(self.evaluate(text))
        except _Unknown as exc:
            self.forget_assigned(text)
            return _mark(exc.kind, exc.shown)
        except _ArithError:
            self.forget_assigned(text)
            return _mark("N", _clip(part.raw))

    def evaluate(self, text: str) -> int:
        self.arith_depth += 1
        try:
            if self.arith_depth > 8:
                raise _ArithError("variables refer to each other too deep")
            return _Arith(text, self).run()
        finally:
            self.arith_depth -= 1

    def arith_var(self, name: str) -> int:
        found = self.lookup(name, "$" + name)
        if isinstance(found, str):
            raise _Unknown(found[1], "$" + name)
        value = _element(found, 0)
        if value is None or not value.strip():
            return 0
        if is_unresolved(value):
            raise _Unknown(unresolved_parts(value)[0][0], "$" + name)
        text = value.strip()
        if _DECIMAL.fullmatch(text):
            return _wrap(int(text))
        return self.evaluate(text)

    def forget_assigned(self, text: str) -> None:
        """An arithmetic not computed may have assigned: the names it may assign are not known after it."""
        for match in _ARITH_ASSIGNED.finditer(text):
            name = match.group(1) or match.group(2)
            if name:
                self.forget(name, "N")

    # -- assignments -----------------------------------------------------------------------------
    def assign(self, name: str, value: str, *, index: str | None, append: bool, exported: bool | None = None) -> None:
        self.touch(name)
        var = self.vars.get(name)
        if var is not None and var.unknown is not None and append:  # appending to a value not known
            return
        if var is None or var.unknown is not None:
            var = _Var(exported=bool(var and var.exported), integer=bool(var and var.integer))
            self.vars[name] = var
        made_of = list(self.made_of)
        if var.integer and not is_unresolved(value):
            try:
                number = self.evaluate(value)
                value = str(_wrap(number + (self.arith_var(name) if append else 0)))
                append = False
            except (_ArithError, _Unknown):
                value = _mark("N", "$" + name)
        if index is not None:
            try:
                slot = self.evaluate(index) if index.strip() else 0
            except (_ArithError, _Unknown):
                self.forget(name, "N")
                return
            if var.items is None:
                var.items, var.top = ({} if var.value is None else {0: var.value}), int(var.value is not None)
            if slot < 0:
                slot += var.top
            var.items[slot] = self.charge(var.items.get(slot, "") + value if append else value, "$" + name)
            var.value, var.top = None, max(var.top, slot + 1)
        elif var.items is not None:
            var.items[0] = self.charge(var.items.get(0, "") + value if append else value, "$" + name)
            var.top = max(var.top, 1)
        else:  # an append is counted whole: X+=y, again and again, copies X each time
            var.value = self.charge((var.value or "") + value if append else value, "$" + name)
        var.made_of = made_of + (var.made_of if append else [])
        if var.value is not None:
            self.history.setdefault(name, []).append(var.value)
        if exported or self.allexport:
            var.exported = True

    def assign_array(self, name: str, elements: list[Word], append: bool, exported: bool | None = None) -> None:
        # Every item is expanded first, then assigned (A+=(x "${A[0]}") reads A as it was).
        self.made_of = []
        planned: list[tuple[int | None, str]] = []
        for element in elements:
            head = element.parts[0] if element.parts else None
            match = re.match(r"\[([^\]]*)\]\+?=", head.text) if isinstance(head, Lit) and not head.quoted else None
            if match is None:
                planned += [(None, self.charge(value, "$" + name)) for value in self.words(element)]
                continue
            rest = head.text[match.end() :]  # type: ignore[union-attr]
            value = self.string(([Lit(rest, False)] if rest else []) + element.parts[1:])
            try:
                planned.append((self.evaluate(match.group(1)), self.charge(value, "$" + name)))
            except (_ArithError, _Unknown):
                self.forget(name, "N")
                return
        made_of = list(self.made_of)
        self.touch(name)
        var = self.vars.get(name)
        if append and var is not None and var.unknown is not None:
            return
        if append and var is not None:  # A+=(...): onto the same items, after the highest index
            if var.items is None:
                var.items, var.top, var.value = ({} if var.value is None else {0: var.value}), int(var.value is not None), None
            target = var
        else:
            target = _Var(items={}, exported=bool(var and var.exported))
        items = target.items
        assert items is not None
        slot = target.top
        for index, value in planned:
            slot = slot if index is None else index
            items[slot] = value
            slot += 1
            target.top = max(target.top, slot)
        target.exported = target.exported or bool(exported) or self.allexport
        target.made_of = made_of + (target.made_of if target is var else [])
        self.vars[name] = target

    def forget(self, name: str, kind: str) -> None:
        self.touch(name)
        old = self.vars.get(name)
        self.vars[name] = _Var(unknown=kind, exported=bool(old and old.exported))

    def environment(self, prefix: dict[str, str]) -> dict[str, str]:
        env: dict[str, str] = {}
        for name, var in self.vars.items():
            if var.exported:
                if var.unknown is not None:
                    env[name] = _mark(var.unknown, "$" + name)
                elif var.items is not None or var.value is not None:
                    env[name] = (var.items.get(0, "") if var.items is not None else var.value) or ""
        env.update(prefix)
        return env


_DECIMAL = re.compile(r"-?[1-9]\d*|0")
# A name an arithmetic expression may assign: before an assignment operator, or beside ++/--.
_ARITH_ASSIGNED = re.compile(r"([A-Za-z_]\w*)\s*(?:[-+*/%&^|]|<<|>>|\*\*)?=(?!=)|(?:\+\+|--)\s*([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*(?:\+\+|--)")


def _element(var: _Var, index: int | str | None) -> str | None:
    if index is None or index == 0:
        return var.items.get(0) if var.items is not None else var.value
    if var.items is not None and isinstance(index, int):
        return var.items.get(index)
    return None


def _shown_param(p: Param) -> str:
    if p.name.isdigit() or p.name in _SPECIAL:
        return "$" + p.name if len(p.name) == 1 else "${" + p.name + "}"
    if p.index is not None:
        inner = "".join(x.text if isinstance(x, Lit) else "..." for x in p.index)
        return _clip("${" + ("#" if p.length else "") + p.name + "[" + inner + "]}")
    return "${#" + p.name + "}" if p.length else "$" + p.name


def _clip(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---- integer arithmetic, as bash computes it (64-bit, wrapping) ---------------------------------


class _ArithError(ValueError):
    pass


class _Unknown(Exception):
    def __init__(self, kind: str, shown: str) -> None:
        super().__init__(shown)
        self.kind, self.shown = kind, shown


def _wrap(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


_ARITH_TOKEN = re.compile(r"\s*(?:(\d[0-9A-Za-z#@_]*)|([A-Za-z_][A-Za-z0-9_]*)|(\*\*=|<<=|>>=|\+\+|--|\*\*|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&^|]=|[-+*/%()<>=!~&^|?:,]))")
_BINARY = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="), ("<<", ">>"), ("+", "-"), ("*", "/", "%")]
_ASSIGN_OPS = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|=", "**="})


class _Arith:
    """A recursive-descent evaluator of bash's ``$(( ))`` over the script's variables (the side of
    ``&&``, ``||`` or ``?:`` not taken is read, not evaluated)."""

    def __init__(self, text: str, expander: _Expander) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos, text = 0, text.strip()
        while pos < len(text):
            match = _ARITH_TOKEN.match(text, pos)
            if match is None:
                raise _ArithError(f"unexpected {text[pos:].strip()[:1]!r}")
            number, name, op = match.groups()
            self.tokens.append(("num", number) if number else ("name", name) if name else ("op", op))
            pos = match.end()
            if len(self.tokens) > 10_000:
                raise _ArithError("too long")
        self.pos = 0
        self.x = expander
        self.skip = 0  # > 0 while reading a side that is not evaluated
        self.depth = 0

    def run(self) -> int:
        if not self.tokens:
            return 0
        value = self.comma()
        if self.pos != len(self.tokens):
            raise _ArithError("syntax error")
        return value

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) and self.tokens[self.pos][0] == "op" else None

    def take(self, op: str) -> None:
        if self.peek() != op:
            raise _ArithError(f"expected {op}")
        self.pos += 1

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise _ArithError("nested too deep")

    def comma(self) -> int:
        value = self.assignment()
        while self.peek() == ",":
            self.pos += 1
            value = self.assignment()
        return value

    def assignment(self) -> int:
        self.nest()
        try:
            if self.pos + 1 < len(self.tokens) and self.tokens[self.pos][0] == "name" and self.tokens[self.pos + 1][0] == "op" and self.tokens[self.pos + 1][1] in _ASSIGN_OPS:
                name, op = self.tokens[self.pos][1], self.tokens[self.pos + 1][1]
                self.pos += 2
                right = self.assignment()
                if self.skip:
                    return 0
                value = right if op == "=" else self.binary(op[:-1], self.x.arith_var(name), right)
                self.x.assign(name, str(value), index=None, append=False)
                return value
            return self.ternary()
        finally:
            self.depth -= 1

    def ternary(self) -> int:
        condition = self.level(0)
        if self.peek() != "?":
            return condition
        self.pos += 1
        take_first = bool(condition) or bool(self.skip)
        self.skip += 0 if take_first else 1
        first = self.assignment()
        self.skip -= 0 if take_first else 1
        self.take(":")
        self.skip += 1 if take_first else 0
        second = self.assignment()
        self.skip -= 1 if take_first else 0
        return first if take_first else second

    def level(self, k: int) -> int:
        if k == len(_BINARY):
            return self.power()
        left = self.level(k + 1)
        while self.peek() in _BINARY[k]:
            op = self.peek() or ""
            self.pos += 1
            if op in ("&&", "||"):
                decided = (op == "&&" and not left) or (op == "||" and bool(left))
                self.skip += 1 if decided else 0
                right = self.level(k + 1)
                self.skip -= 1 if decided else 0
                left = int(bool(left)) if decided else int(bool(right))
                continue
            right = self.level(k + 1)
            left = 0 if self.skip else self.binary(op, left, right)
        return left

    def binary(self, op: str, a: int, b: int) -> int:
        if op in ("/", "%"):
            if b == 0:
                raise _ArithError("division by 0")
            quotient = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
            return _wrap(quotient if op == "/" else a - quotient * b)
        if op == "**":
            if b < 0:
                raise _ArithError("exponent less than 0")
            return _wrap(pow(a, b, 1 << 64))
        if op == "<<":
            return _wrap(a << (b & 63))
        if op == ">>":
            return a >> (b & 63)
        results = {"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b, "==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}
        if op not in results:
            raise _ArithError(f"operator {op}")
        return _wrap(int(results[op]))

    def power(self) -> int:
        base = self.unary()
        if self.peek() == "**":
            self.pos += 1
            self.nest()
            exponent = self.power()  # right-associative
            self.depth -= 1
            return 0 if self.skip else self.binary("**", base, exponent)
        return base

    def unary(self) -> int:
        op = self.peek()
        if op in ("+", "-", "!", "~"):
            self.pos += 1
            self.nest()
            value = self.unary()
            self.depth -= 1
            return {"+": value, "-": _wrap(-value), "!": int(not value), "~": _wrap(~value)}[op]
        if op in ("++", "--") and (self.pos + 1 >= len(self.tokens) or self.tokens[self.pos + 1][0] != "name"):
            self.pos += 1  # '--0' is two minus signs, as bash reads it when no variable follows
            self.nest()
            value = self.unary()
            self.depth -= 1
            return value
        if op in ("++", "--"):
            self.pos += 1
            name = self.tokens[self.pos][1]
            self.pos += 1
            if self.skip:
                return 0
            value = _wrap(self.x.arith_var(name) + (1 if op == "++" else -1))
            self.x.assign(name, str(value), index=None, append=False)
            return value
        return self.operand()

    def operand(self) -> int:
        if self.pos >= len(self.tokens):
            raise _ArithError("missing operand")
        kind, text = self.tokens[self.pos]
        self.pos += 1
        if kind == "num":
            return _number(text)
        if kind == "name":
            if self.peek() in ("++", "--"):
                op = self.peek()
                self.pos += 1
                if self.skip:
                    return 0
                value = self.x.arith_var(text)
                self.x.assign(text, str(_wrap(value + (1 if op == "++" else -1))), index=None, append=False)
                return value
            return 0 if self.skip else self.x.arith_var(text)
        if text == "(":
            self.nest()
            value = self.comma()
            self.take(")")
            self.depth -= 1
            return value
        raise _ArithError(f"unexpected {text}")


def _number(text: str) -> int:
    """A bash integer constant: decimal, 0x hex, leading-0 octal, BASE#digits."""
    try:
        if "#" in text:
            base_text, digits = text.split("#", 1)
            base = int(base_text)
            if not 2 <= base <= 64 or not digits:
                raise _ArithError("bad base")
            alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ@_"
            digits = digits.lower() if base <= 36 else digits
            value = 0
            for d in digits:
                v = alphabet.find(d)
                if not 0 <= v < base:
                    raise _ArithError("value too great for base")
                value = value * base + v
            return _wrap(value)
        if text[:2] in ("0x", "0X"):
            return _wrap(int(text[2:], 16))
        if text.startswith("0") and len(text) > 1:
            return _wrap(int(text[1:], 8))
        return _wrap(int(text))
    except ValueError:
        raise _ArithError(f"bad number {text}") from None


# ---- reading a whole text -----------------------------------------------------------------------


def read_script(text: str, *, env: Mapping[str, str] | None = None, until: Callable[[list[str]], bool] | None = None) -> Script:
    """The simple commands of ``text``, words expanded as bash expands them (the module's
    docstring says how far); the environment is worked out for the first command and for the
    first for which ``until(words)`` holds. ``env`` is the environment the text starts with (a systemd unit's ``Environment=``, a
    container's ``env:``). Raises :class:`ShellSyntaxError` on text a shell would not read, and
    :class:`ExpansionTooLarge` past the expansion budget."""
    unwrapped, fence_lines = _unwrap_with_lines(_MARK_CHARS.sub("", text))  # the marks are this module's own
    simples = _commands(_Lexer(unwrapped).run())
    x = _Expander(len(text), env or {})
    heads = _function_heads(simples)
    ends = _function_ends(simples, heads)
    for k, simple in enumerate(simples):
        names = [a.name for a in simple.assignments]
        if simple.words and _literal(simple.words[0]) in _DECLARE:
            names += [a.name for a in map(_assignment, simple.words[1:]) if a is not None]
        for name in names:
            x.last_assigned[name] = k
    commands: list[Command] = []
    pending_function = False
    found = False
    for k, simple in enumerate(simples):
        pending_function = _structure(simple, x, k, ends, heads, pending_function or simple.function_head)
        if k in heads:
            pending_function = True
        isolated = simple.after in ("|", "|&", "&") or simple.before in ("|", "|&")
        conditional = simple.before in ("&&", "||")
        if isolated or conditional:
            x.open("subshell" if isolated else "and-or")
        try:
            words = _run(simple, x)
        finally:
            if isolated or conditional:
                x.close()
        if words is not None:
            command = Command(words[0], {}, simple.start, simple.end, simple.after, words[1])
            wanted = not found and until is not None and until(command.words)
            if not commands or wanted:
                command.env = x.environment(words[2])
            found = found or wanted
            commands.append(command)
        if simple.after == ")" and x.scopes and x.scopes[-1].kind == "subshell":
            x.close()
        if simple.after in (";;", ";&", ";;&") and x.scopes and x.scopes[-1].kind == "case":
            x.branch()
    line_starts = [0] + [m.end() for m in re.finditer("\n", unwrapped)]
    sources = {name: var.made_of for name, var in x.vars.items() if var.made_of}
    return Script(unwrapped, commands, list(x.defaults_used), x.history, sources, line_starts, fence_lines)


def _function_heads(simples: list[_Simple]) -> set[int]:
    """``NAME ()``: a command of one word ended by ``(``, then nothing up to ``)``."""
    return {
        k
        for k, s in enumerate(simples[:-1])
        if s.after == "(" and len(s.words) == 1 and not s.assignments and not simples[k + 1].words and simples[k + 1].after == ")"
    }


def _function_ends(simples: list[_Simple], heads: set[int]) -> dict[int, int]:
    """For the command that opens each function body with ``{``, the command that closes it."""
    out: dict[int, int] = {}
    stack: list[tuple[bool, int]] = []
    pending = False
    for k, simple in enumerate(simples):
        pending = pending or simple.function_head
        for keyword in simple.keywords:
            if keyword == "{":
                stack.append((pending, k))
                pending = False
            elif keyword == "}" and stack:
                is_function, at = stack.pop()
                if is_function:
                    out[at] = k
        if k in heads:
            pending = True
        elif simple.words and not simple.function_head:
            pending = False
    return out


def _structure(simple: _Simple, x: _Expander, k: int, ends: dict[int, int], heads: set[int], pending_function: bool) -> bool:
    """Follow if/case/loops/functions/groups/subshells by their keywords and parentheses;
    returns whether a function's ``{`` is still awaited."""
    if simple.before == "(" and k - 1 not in heads:
        x.open("subshell")
    for keyword in simple.keywords:
        if keyword in ("if", "while", "until", "for", "select", "case"):
            x.open("case" if keyword == "case" else "if" if keyword == "if" else "loop")
        elif keyword in ("elif", "else") and x.scopes and x.scopes[-1].kind == "if":
            x.branch()
        elif keyword == "{":
            x.open("function" if pending_function else "group", ends.get(k) if pending_function else None)
            pending_function = False
        elif keyword in ("fi", "done", "esac", "}") and x.scopes:
            x.close()
    if simple.keywords[-1:] in (["for"], ["select"]) and simple.words:
        name = _literal(simple.words[0])
        if name and _NAME.fullmatch(name):
            x.forget(name, "L")
    return pending_function and not simple.words


def _run(simple: _Simple, x: _Expander) -> tuple[list[str], dict[int, list[str]], dict[str, str]] | None:
    """One simple command: its assignments applied (to the shell, or as its own environment) and
    its words expanded (the words, the variables each word was made of, its own environment);
    None for a command of assignments or a builtin that sets variables (followed here)."""
    if simple.arith is not None:
        x.made_of = []
        text = x.string(simple.arith.parts)
        try:
            if is_unresolved(text):
                raise _ArithError("unresolved")
            x.evaluate(text)
        except (_ArithError, _Unknown):
            x.forget_assigned(text)
    if simple.keywords[-1:] in (["for"], ["select"], ["case"]):
        return None
    if not simple.words:
        for a in simple.assignments:
            _apply(a, x)
        return None
    head = _literal(simple.words[0])
    if head in _BUILTINS:
        _builtin(head or "", simple.words[1:], x)
        return None
    words: list[str] = []
    sources: dict[int, list[str]] = {}
    for token in simple.words:
        x.made_of = []
        if isinstance(token, ArrayAssign):  # not an assignment here: a word bash would refuse
            words.append(f"{token.name}=(...)")
            continue
        for value in x.words(token):
            if x.made_of:
                sources[len(words)] = list(x.made_of)
            words.append(value)
    prefix: dict[str, str] = {}
    for a in simple.assignments:  # after the words, as POSIX orders it
        x.made_of = []
        prefix[a.name] = x.charge(x.string(a.value.parts), "$" + a.name) if isinstance(a.value, Word) else ""
    return words, sources, prefix


def _apply(a: Assignment, x: _Expander, *, exported: bool | None = None) -> None:
    x.made_of = []
    if isinstance(a.value, ArrayAssign):
        x.assign_array(a.name, a.value.elements, a.append, exported)
    elif a.value is None:  # 'export X': the value it has (or the environment's, not known)
        var = x.vars.get(a.name)
        if exported and var is not None:
            var.exported = True
        elif exported:
            x.vars[a.name] = _Var(unknown="V", exported=True)
    else:
        x.assign(a.name, x.string(a.value.parts), index=a.index, append=a.append, exported=exported)


def _builtin(name: str, args: list[Word | ArrayAssign], x: _Expander) -> None:
    if name in _DECLARE:
        options = ""
        for token in args:
            flag = _literal(token)
            if flag is not None and len(flag) > 1 and flag[0] in "-+" and _NAME.fullmatch(flag[1:]):
                options += flag[1:] if flag[0] == "-" else ""
                continue
            a = _assignment(token)
            if a is None:
                bare = _literal(token)
                if bare is None or not _NAME.fullmatch(bare):
                    continue
                a = Assignment(bare, None)
            if "A" in options or "n" in options:  # associative arrays, references: not followed
                x.forget(a.name, "X")
                continue
            if "i" in options:
                x.vars.setdefault(a.name, _Var()).integer = True
            if "a" in options and isinstance(a.value, Word):  # declare -a A=x: the item 0
                a = Assignment(a.name, ArrayAssign(a.name, False, [a.value], a.value.start, a.value.end), a.append)
            _apply(a, x, exported=True if (name == "export" or "x" in options) else None)
        return
    words = [w for token in args if isinstance(token, Word) for w in x.words(token)]
    if name == "unset":
        if "-f" in words:
            return
        for word in words:
            if _NAME.fullmatch(word):
                x.touch(word)
                x.vars[word] = _Var(exported=False)
    elif name in ("read", "mapfile", "readarray"):
        for word in words:
            if _NAME.fullmatch(word):
                x.forget(word, "L")
    elif name == "let":
        for word in words:
            try:
                x.evaluate(word)
            except (_ArithError, _Unknown):
                x.forget_assigned(word)
    elif name == "set":
        for k, word in enumerate(words):
            if re.fullmatch(r"-[a-zA-Z]*a[a-zA-Z]*", word) or (word == "-o" and words[k + 1 : k + 2] == ["allexport"]):
                x.allexport = True
            elif re.fullmatch(r"\+[a-zA-Z]*a[a-zA-Z]*", word) or (word == "+o" and words[k + 1 : k + 2] == ["allexport"]):
                x.allexport = False


def _unwrap_with_lines(text: str) -> tuple[str, list[int]]:
    """The text with markdown around it taken off (:func:`unwrap_markdown`), and the lines of the
    unwrapped text a code fence ended (each fence becomes a line break there)."""
    fences: list[int] = []
    newlines = 0
    for k, piece in enumerate(text.split("```")):
        if k:
            fences.append(newlines)
            newlines += 1
        newlines += piece.count("\n")
    return unwrap_markdown(text), fences
