"""A launch command written as a list of argv strings, as code and manifests carry it.

* Python: a list literal (``["--model-path", "m", "--tp", "4"]``), the argument of
  ``prepare_server_args([...])`` (``server_args = prepare_server_args([...])``), or a list holding
  the entry point (``subprocess.Popen(["python3", "-m", "sglang.launch_server", ...])``).
* YAML: a Kubernetes container's ``command:`` and ``args:`` (block ``- --model-path`` lines or
  flow ``["--tp", "4"]``), a compose service's ``command:``, or a bare ``- --model-path`` list;
  with the ``env:`` (``- name: X`` / ``value: Y``) or ``environment:`` of the same container.

Nothing is evaluated or imported: Python text goes through :func:`ast.parse` and only literals
are taken (any other expression stays as its source text in braces, as ``$VAR`` stays in shell
text, and a note says so); YAML goes through a reader of these list forms alone, so PyYAML is
not needed. A text longer than :data:`MAX_TEXT`, a list longer than :data:`MAX_ITEMS` or brackets
nested deeper than :data:`MAX_DEPTH` is refused with a one-line reason, before any parsing.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field

from pytest_sglang.base.secrets import clip
from pytest_sglang.parse.shellscript import mark
from pytest_sglang.parse.shellwords import ShellSyntaxError, simple_commands

MAX_TEXT = 256 * 1024  # characters
MAX_ITEMS = 10_000  # words in one list
MAX_DEPTH = 50  # nested brackets

_FENCE = re.compile(r"^[ \t]*```[\w+-]*[ \t]*$", re.M)
_PREPARE = re.compile(r"\bprepare_server_args\s*\(")
_KEY = re.compile(r"^(?P<indent> *)(?P<dash>- +)?(?P<key>command|args|env|environment) *:(?: +(?P<rest>.*))?$")
_ITEM = re.compile(r"^(?P<indent> *)-(?: +(?P<rest>.*))?$")
# YAML 1.1 plain scalars that are not strings (Kubernetes decodes them so and refuses them in args).
_NOT_STRING = re.compile(
    r"[-+]?(?:\d[\d_]*|0x[\da-fA-F_]+|0o?[0-7_]+)|[-+]?(?:\d[\d_]*)?\.\d*(?:[eE][-+]?\d+)?|[-+]?\d+[eE][-+]?\d+"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)|~|null|Null|NULL|true|True|TRUE|false|False|FALSE"
    r"|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|y|Y|n|N"
)


class ListFormError(ValueError):
    """Text that is a list form but cannot be read: the reason, in one line."""


@dataclass
class Candidate:
    """One argv a list form gives (a container's ``command`` + ``args``, one Python list)."""

    words: list[str]
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class ListForm:
    form: str  # "Python list" or "YAML list"
    candidates: list[Candidate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    # What the reader assumed, said to the user with the findings (a default compose would use).
    assumed: list[str] = field(default_factory=list)


def read_list_form(text: str) -> ListForm | None:
    """The argv lists ``text`` holds, or ``None`` when it is not a list form (shell text)."""
    body = _FENCE.sub("", text).strip()
    form, surely = _which(body)
    if form is None:
        return None
    result = ListForm(form=form)
    try:
        if len(body) > MAX_TEXT:
            raise ListFormError(f"it is longer than {MAX_TEXT} characters")
        _check_depth(body)
        if form == "Python list":
            result.candidates = _python(body, result.notes)
            for candidate in result.candidates:  # a "$X" in a list is most often a template's: not known
                candidate.words = [_compose_text(word, [], known=False, escapes=False) if "$" in word else word for word in candidate.words]
        else:
            result.candidates = _yaml(body, result.notes, result.assumed)
    except ListFormError as exc:
        if not surely:
            return None  # text that only may be a list (code, a bullet list): read it as shell text
        result.error = f"the {form} cannot be read: {exc}"
        result.candidates = []
    if result.error is None and not result.candidates:
        return None
    for candidate in result.candidates:
        candidate.words = [_characters(word) for word in candidate.words]
        candidate.env = {_characters(k): _characters(v) for k, v in candidate.env.items()}
        if len(candidate.words) > MAX_ITEMS:
            result.error = f"the {form} cannot be read: it has more than {MAX_ITEMS} items"
            result.candidates = []
            break
    return result


# What a manifest is: compose interpolates ${VAR} and $VAR in its values (with ${VAR:-default});
# Kubernetes replaces $(VAR) in command and args with the container's env (and nothing else).
_COMPOSE = re.compile(r"^(?:services|x-[\w-]+) *:|^ +(?:environment|restart|entrypoint|healthcheck|deploy|depends_on) *:", re.M)
_KUBERNETES = re.compile(r"^ *(?:- +)?(?:apiVersion|kind|containers|initContainers|args) *:", re.M)
_K8S_VAR = re.compile(r"\$\$\(|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class _Manifest:
    """How the tool that runs a YAML manifest makes its words: compose interpolates its values
    (a default the file gives is used, a variable without one is not known); Kubernetes replaces
    ``$(VAR)`` in command and args with the container's ``env`` (a name it does not set there is
    not known: ``envFrom`` and ``valueFrom`` are not read); a YAML list of neither kind keeps its
    ``$`` parts not known. A part not known travels as a shell reader's mark, never judged."""

    def __init__(self, body: str, notes: list[str]) -> None:
        self.kubernetes = bool(_KUBERNETES.search(body))
        self.compose = not self.kubernetes and bool(_COMPOSE.search(body))
        self.notes = notes
        self.defaulted: list[str] = []

    def words(self, value: str | list[str], env: dict[str, str]) -> list[str]:
        """A container's ``command`` or ``args``: a list of words, or a command line (split
        after compose's interpolation, as compose splits it)."""
        if isinstance(value, str):
            return _shell_words(self.text(value, env))
        return [self.text(word, env) for word in value]

    def text(self, text: str, env: dict[str, str]) -> str:
        if "$" not in text:
            return text
        if self.kubernetes:
            return _K8S_VAR.sub(lambda m: _k8s(m, env), text)
        return _compose_text(text, self.defaulted, known=self.compose)

    def note(self) -> None:
        if self.defaulted:
            names = list(dict.fromkeys(self.defaulted))
            shown = ", ".join(f"`${name}`" for name in names)
            self.notes.append(f"{shown} {'is' if len(names) == 1 else 'are'} set where compose runs, not in this file: the defaults the file gives are used")


def _k8s(match: re.Match[str], env: dict[str, str]) -> str:
    if match.group(0) == "$$(":
        return "$("
    name = match.group(1)
    return env[name] if name in env else mark("E", match.group(0))


def _compose_text(text: str, defaulted: list[str], *, known: bool, escapes: bool = True) -> str:
    """``text`` with compose's interpolation done: ``$$`` is ``$``; ``${VAR:-d}`` / ``${VAR-d}``
    is its default ``d`` (itself interpolated) when ``known`` (a compose file); any other
    ``${...}`` or ``$VAR`` is not known."""
    out: list[str] = []
    i = 0
    while i < len(text):
        j = text.find("$", i)
        if j < 0:
            out.append(text[i:])
            break
        out.append(text[i:j])
        if text.startswith("$$", j):
            out.append("$" if escapes else "$$")
            i = j + 2
        elif text.startswith("${", j):
            end, depth = j + 2, 1
            while end < len(text) and depth:
                if text.startswith("${", end):
                    depth, end = depth + 1, end + 2
                    continue
                depth -= text[end] == "}"
                end += 1
            if depth:  # no closing brace: compose refuses the file; the rest is not known
                out.append(mark("E", text[j:]))
                break
            body = text[j + 2 : end - 1]
            parts = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(:?-)(.*)\Z", body, re.S)
            if known and parts:
                defaulted.append(parts.group(1))
                out.append(_compose_text(parts.group(3), defaulted, known=known, escapes=escapes))
            else:
                out.append(mark("E", text[j:end]))
            i = end
        else:
            name = re.match(r"[A-Za-z_][A-Za-z0-9_]*", text[j + 1 :])
            if name:
                out.append(mark("E", "$" + name.group(0)))
                i = j + 1 + name.end()
            else:
                out.append("$")
                i = j + 1
    return "".join(out)


def _characters(text: str) -> str:
    """A ``\\ud83d\\ude00`` escape pair (JSON writes one, a Python literal keeps two halves) as the one
    character they spell; a lone half, which no process argument can hold, as U+FFFD."""
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _which(body: str) -> tuple[str | None, bool]:
    """(the list form ``body`` is written in, whether surely: a text that only may be one is
    read as shell text when it cannot be read as a list)."""
    if body.startswith("[") and len(body) <= MAX_TEXT:
        end = _closing(body, 0)
        if end is None or _uncommented(body[end:]):
            return None, False  # '[ -f x ] && ...': shell text, not a list
    if _PREPARE.search(body) or re.match(r"\[\s*(?:[rRuU]?[\"']|\]|\.\.\.)", body):
        return "Python list", True
    if body.startswith("[") or any(_KEY.match(line) for line in body.splitlines()):
        return "YAML list", True
    if _ITEM.match(body.splitlines()[0] if body else ""):
        return "YAML list", False  # '- --model-path' lines, or a Markdown bullet list
    if "[" in body and "sglang" in body and re.search(r"\[\s*[\"']", body):
        return "Python list", False  # code that builds the command as a list (subprocess.Popen([...]))
    return None, False


def _check_depth(body: str) -> None:
    """Refuse brackets nested deeper than MAX_DEPTH (quoted text aside), before any parser
    recurses into them."""
    depth = 0
    quote = ""
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote or c == "\n":
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
            if depth > MAX_DEPTH:
                raise ListFormError(f"its brackets are nested more than {MAX_DEPTH} deep")
        elif c in ")]}":
            depth = max(depth - 1, 0)
        i += 1


# ---- Python ------------------------------------------------------------------------------------


def _python(body: str, notes: list[str]) -> list[Candidate]:
    tree = _parsed(body)
    if tree is None:
        # Not a whole Python text (a snippet around the call, a list with text after it): the
        # call's argument list, or the leading list, alone.
        match = _PREPARE.search(body)
        if not match and not body.startswith("["):
            return []  # code that does not parse: read as shell text
        start = match.end() - 1 if match else 0
        end = _closing(body, start)
        if end is None:
            raise ListFormError("its brackets or quotes are not balanced")
        if not match and body[end:].strip():
            if body.startswith("["):
                return _yaml(body, notes, [])  # [--tp, 4]: a YAML flow list, not Python
            return []
        tree = _parsed(("prepare_server_args" if match else "") + body[start:end])
        if tree is None:
            if body.startswith("["):
                return _yaml(body, notes, [])
            raise ListFormError("it is not valid Python")
    node = _argv_node(tree)
    if node is None:
        return []
    return [Candidate(words=_python_words(node, notes))]


def _parsed(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _closing(text: str, start: int) -> int | None:
    """The index after the bracket that closes the one at ``start`` (quotes respected)."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack: list[str] = []
    quote = ""
    i, n = start, len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                quote = ""
                continue
        elif c in "\"'":
            quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else c
            i += len(quote)
            continue
        elif c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            if not stack or stack.pop() != c:
                return None
            if not stack:
                return i + 1
        i += 1
    return None


def _argv_node(tree: ast.Module) -> ast.expr | None:
    """prepare_server_args's argument; else a whole-text list; else a list holding the entry point."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) == "prepare_server_args":
            if node.args:
                return node.args[0]
            given = next((k.value for k in node.keywords if k.arg == "argv"), None)
            if given is None:
                raise ListFormError("prepare_server_args() is called without arguments")
            return given
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, (ast.List, ast.Tuple)):
        return tree.body[0].value
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)):
            texts = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if "sglang.launch_server" in texts or any(t.endswith("launch_server.py") for t in texts) or _serve(texts):
                return node
    return None


def _serve(texts: list[str]) -> bool:
    return any((a == "sglang" or a.endswith("/sglang")) and b == "serve" for a, b in zip(texts, texts[1:]))


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _python_words(node: ast.expr, notes: list[str]) -> list[str]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # ["--model-path", m] + extra
        return _python_words(node.left, notes) + _python_words(node.right, notes)
    if not isinstance(node, (ast.List, ast.Tuple)):
        shown = _shown(ast.unparse(node))
        notes.append(f"{shown} is not a list literal: its words are not read")
        return []
    if len(node.elts) > MAX_ITEMS:
        raise ListFormError(f"it has more than {MAX_ITEMS} items")
    words: list[str] = []
    for item in node.elts:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            words.append(item.value)
        elif isinstance(item, ast.Constant) and item.value is Ellipsis:
            words.append("...")
        elif isinstance(item, ast.Constant):
            words.append(str(item.value))
            notes.append(f"list item {_shown(repr(item.value), quote=False)} is not a string: SGLang's argparse fails on it (quote it)")
        elif isinstance(item, ast.Starred):
            notes.append(f"list item {_shown(ast.unparse(item))} is not a literal: its words are not read")
        elif isinstance(item, ast.JoinedStr):  # f"--tp={tp}": the text, with {tp} left as written
            words.append("".join(str(v.value) if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}" for v in item.values if isinstance(v, (ast.Constant, ast.FormattedValue))))
            notes.append(f"list item {_shown(ast.unparse(item))} is not a literal: read with its {{...}} as written")
        else:
            source = ast.unparse(item)
            words.append("{" + source + "}")
            notes.append(f"list item {_shown(source)} is not a literal: read as {{{_shown(source, quote=False)}}}")
    return words


def _shown(text: str, *, quote: bool = True) -> str:
    one = clip(text, 63, ellipsis="...")
    return repr(one) if quote else one


# ---- YAML --------------------------------------------------------------------------------------


@dataclass
class _Key:
    start: int  # the key's line
    end: int  # the line after its value
    indent: int  # the line's leading spaces
    column: int  # where the key starts
    key: str
    value: object  # list[str] (command, args), dict[str, str] (env), or str (a command line)


def _yaml(body: str, notes: list[str], assumed: list[str]) -> list[Candidate]:
    lines = body.replace("\t", "    ").splitlines()
    manifest = _Manifest(body, assumed)
    if body.startswith("["):
        words, end = _flow(lines, 0, 0, notes)
        if any(_content(line) for line in lines[end:]):
            raise ListFormError("there is text after the list")
        return [Candidate(words=manifest.words(words, {}))]
    first = _ITEM.match(lines[0])
    if first and not _KEY.match(lines[0]):
        try:
            words, end = _block(lines, 0, len(first.group("indent")), notes)
        except ListFormError:
            return []  # a Markdown bullet list, not an argv
        if any(_content(line) for line in lines[end:]) or len(words) < 2 or not any(w.startswith("--") for w in words):
            return []  # a Markdown bullet list (of commands), not an argv
        return [Candidate(words=manifest.words(words, {}))]
    keys: list[_Key] = []
    i = 0
    while i < len(lines):
        match = _KEY.match(lines[i])
        if not match:
            i += 1
            continue
        start = i
        indent = len(match.group("indent"))
        column = indent + len(match.group("dash") or "")
        key = match.group("key")
        rest = _uncommented(match.group("rest") or "")
        value: object
        if key in ("env", "environment"):
            value, i = _environment(lines, i, column, rest, notes)
        elif rest.startswith("["):
            value, i = _flow(lines, i, lines[i].index("[", column), notes)
        elif rest:
            text, i = _scalar_value(lines, i, column, rest, notes)
            value = text  # a command line (compose): read as the shell would split it
        else:
            value, i = _block(lines, i + 1, None, notes, parent=column)
        keys.append(_Key(start=start, end=i, indent=indent, column=column, key=key, value=value))
    found = _containers(keys, lines, manifest)
    manifest.note()
    return found


def _containers(keys: list[_Key], lines: list[str], manifest: _Manifest) -> list[Candidate]:
    """Keys of one mapping (one container) together: same column, no line between them less
    indented than it, no key twice."""
    groups: list[list[_Key]] = []
    for key in keys:
        group = groups[-1] if groups else None
        if (
            group is None
            or group[-1].column != key.column
            or key.indent < key.column
            or any(k.key == key.key for k in group)
            or any(_content(line) and _indent(line) < key.column for line in lines[group[-1].end : key.start])
        ):
            groups.append([key])
        else:
            group.append(key)
    out: list[Candidate] = []
    for group in groups:
        parts = {k.key: k.value for k in group}
        if "command" not in parts and "args" not in parts:
            continue
        env = parts.get("env") or parts.get("environment") or {}
        env = dict(env) if isinstance(env, dict) else {}
        words: list[str] = []
        for name in ("command", "args"):
            value = parts.get(name)
            if isinstance(value, (str, list)):
                words += manifest.words(value, env)
        out.append(Candidate(words=words, env=env))
    return out


def _shell_words(text: str) -> list[str]:
    try:
        commands = simple_commands(text)
    except ShellSyntaxError as exc:
        raise ListFormError(f"its command line has {exc}") from None
    return commands[0].words if commands else []


def _content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _uncommented(text: str) -> str:
    """A plain value without its `` # comment`` (quoted text kept whole)."""
    quote = ""
    for i, c in enumerate(text):
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'" and (i == 0 or text[i - 1] in " [,"):
            quote = c
        elif c == "#" and (i == 0 or text[i - 1] == " "):
            return text[:i].rstrip()
    return text.strip()


def _block(lines: list[str], i: int, indent: int | None, notes: list[str], *, parent: int | None = None) -> tuple[list[str], int]:
    """A block sequence of strings from line ``i``: ``(words, the line after it)``. Its items
    sit at ``indent`` (the first item's, when ``None``: not left of ``parent``)."""
    words: list[str] = []
    while i < len(lines):
        line = lines[i]
        if not _content(line):
            i += 1
            continue
        match = _ITEM.match(line)
        at = _indent(line)
        if indent is None:
            if not match or (parent is not None and at < parent):
                return words, i  # no items: an empty (null) value
            indent = at
        if not match or at != indent:
            break
        rest = match.group("rest") or ""
        word, i = _item(lines, i, indent, rest, notes)
        words.append(word)
        if len(words) > MAX_ITEMS:
            raise ListFormError(f"it has more than {MAX_ITEMS} items")
    return words, i


def _item(lines: list[str], i: int, indent: int, rest: str, notes: list[str]) -> tuple[str, int]:
    """One list item's string, from ``rest`` (the text after ``- ``) and the lines that continue it."""
    stripped = rest.strip()
    if stripped.startswith(("- ", "[", "{")) or stripped == "-" or re.match(r"^[^\"'#][^#]*?: ", stripped + " ") and not stripped.startswith(("'", '"')):
        raise ListFormError(f"line {i + 1}: the item {_shown(stripped)} is not a string (quote it)")
    return _scalar_value(lines, i, indent, stripped, notes)


def _scalar_value(lines: list[str], i: int, indent: int, rest: str, notes: list[str]) -> tuple[str, int]:
    """A scalar starting with ``rest`` on line ``i`` (quoted, a ``|``/``>`` block, or plain),
    continued by the following lines indented past ``indent``: ``(text, the line after it)``."""
    rest = rest.strip()
    following = _continuation(lines, i + 1, indent)
    if rest[:1] in ("|", ">"):
        header = _uncommented(rest)
        if not re.fullmatch(r"[|>][-+]?\d?|[|>]\d?[-+]?", header):
            raise ListFormError(f"line {i + 1}: {_shown(header)} is not a block scalar header")
        texts = [line for line in lines[i + 1 : following]]
        body_indent = min((_indent(t) for t in texts if t.strip()), default=0)
        kept = [t[body_indent:] for t in texts]
        while kept and not kept[-1].strip():
            kept.pop()
        text = "\n".join(kept) if header[0] == "|" else _folded(kept)
        return text + ("" if "-" in header else "\n"), following
    if rest[:1] in ("'", '"'):
        quote = rest[0]
        extra = _extent(rest, lines, i + 1, quote)
        if extra is None:
            raise ListFormError(f"line {i + 1}: an unbalanced {'single' if quote == chr(39) else 'double'} quote")
        joined = "\n".join([rest, *lines[i + 1 : i + 1 + extra]])
        end = _closing_quote(joined, quote, 0)
        assert end is not None
        if _uncommented(joined[end + 1 :]):
            raise ListFormError(f"line {i + 1}: text after the closing quote")
        inner = _fold_quoted(joined[1:end])
        return (_double_quoted(inner, i) if quote == '"' else inner.replace("''", "'")), i + 1 + extra
    text = " ".join([_uncommented(rest)] + [_uncommented(line.strip()) for line in lines[i + 1 : following] if _content(line)])
    if _NOT_STRING.fullmatch(text):
        notes.append(f"list item {text} is not a string in YAML: Kubernetes refuses it in command and args (quote it: {json.dumps(text)})")
    return text, following


def _continuation(lines: list[str], i: int, indent: int) -> int:
    while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
        i += 1
    while i > 0 and i <= len(lines) and not lines[i - 1].strip():
        i -= 1  # blank lines after the value belong to no one
    return i


def _folded(lines: list[str]) -> str:
    out = ""
    for line in lines:
        if not out:
            out = line
        elif not line.strip() or line.startswith(" ") or out.endswith("\n"):
            out += "\n" + line
        else:
            out += " " + line
    return out


def _closing_quote(text: str, quote: str, start: int) -> int | None:
    """Where the quote opened at ``start`` closes (``''`` is a quote inside single quotes)."""
    i = start + 1
    while i < len(text):
        if quote == '"' and text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            if quote == "'" and text[i + 1 : i + 2] == "'":
                i += 2
                continue
            return i
        i += 1
    return None


def _extent(first: str, lines: list[str], j: int, quote: str = "") -> int | None:
    """How many of the lines from ``lines[j]`` on continue what starts at ``first[0]``: a flow
    list (``quote`` empty) or a quoted scalar; ``None`` when it never closes. One pass over the
    lines it spans."""
    depth, extra, text = 0, 0, first
    inside = quote
    pos = 1 if quote else 0
    last = ""  # the last character outside quotes that was not a blank
    while True:
        while pos < len(text):
            c = text[pos]
            if inside:
                if inside == '"' and c == "\\":
                    pos += 2
                    continue
                if c == inside:
                    if inside == "'" and text[pos + 1 : pos + 2] == "'":
                        pos += 2
                        continue
                    if quote:
                        return extra
                    inside, last = "", c
            elif c in "\"'" and last in ("[", ","):
                inside = c
            elif c == "#" and (pos == 0 or text[pos - 1] in " \t"):
                break  # a comment, to the end of the line
            elif c == "[":
                depth += 1
            elif c == "]":
                depth -= 1
                if depth == 0:
                    return extra
            if not inside and c not in " \t":
                last = c
            pos += 1
        if j + extra >= len(lines):
            return None
        text, pos = lines[j + extra], 0
        extra += 1


def _fold_quoted(text: str) -> str:
    """A quoted scalar over several lines: a line break is a space, an empty line a newline."""
    if "\n" not in text:
        return text
    parts = [p.strip() for p in text.split("\n")]
    out = parts[0]
    for part in parts[1:]:
        out += "\n" if not part else ("" if out.endswith("\n") else " ") + part
    return out


_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r", "e": "\x1b",
            " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}  # fmt: skip


def _double_quoted(text: str, line: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        code = text[i + 1 : i + 2]
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
            i += 2
            continue
        size = {"x": 2, "u": 4, "U": 8}.get(code)
        digits = text[i + 2 : i + 2 + size] if size else ""
        if size and re.fullmatch(r"[0-9a-fA-F]+", digits) and len(digits) == size and int(digits, 16) <= 0x10FFFF:
            out.append(chr(int(digits, 16)))
            i += 2 + size
            continue
        raise ListFormError(f"line {line + 1}: {_shown(text[i : i + 2])} is not a YAML escape")
    return "".join(out)


def _flow(lines: list[str], i: int, start: int, notes: list[str]) -> tuple[list[str], int]:
    """A flow sequence ``[a, "b", 'c']`` starting at column ``start`` of line ``i``, maybe over
    several lines: ``(words, the line after it)``."""
    extra = _extent(lines[i][start:], lines, i + 1)
    if extra is None:
        raise ListFormError(f"line {i + 1}: the [ ... ] list is not closed")
    text = "\n".join([lines[i][start:], *lines[i + 1 : i + 1 + extra]])
    words: list[str] = []
    pos, n = 1, len(text)
    while True:
        while True:  # blanks, line ends and comments between items
            while pos < n and text[pos] in " \n":
                pos += 1
            if pos < n and text[pos] == "#" and text[pos - 1] in " \n[,":
                end = text.find("\n", pos)
                pos = n if end < 0 else end
                continue
            break
        if pos >= n:
            raise ListFormError(f"line {i + 1}: the [ ... ] list is not closed")
        c = text[pos]
        if c == "]":
            if _uncommented(text[pos + 1 :].split("\n", 1)[0]):
                raise ListFormError(f"line {i + 1}: text after the list")
            return words, i + 1 + extra
        if c in "[{":
            raise ListFormError(f"line {i + 1}: a list item is not a string")
        if c in "\"'":
            closing = _closing_quote(text, c, pos)
            if closing is None:
                raise ListFormError(f"line {i + 1}: an unbalanced {'single' if c == chr(39) else 'double'} quote")
            inner = _fold_quoted(text[pos + 1 : closing])
            words.append(_double_quoted(inner, i) if c == '"' else inner.replace("''", "'"))
            pos = closing + 1
        else:
            match = _PLAIN_IN_FLOW.match(text, pos)
            assert match is not None
            word = _uncommented(match.group(0))
            if not word:
                raise ListFormError(f"line {i + 1}: an empty item in the [ ... ] list")
            if _NOT_STRING.fullmatch(word):
                notes.append(f"list item {word} is not a string in YAML: Kubernetes refuses it in command and args (quote it: {json.dumps(word)})")
            words.append(word)
            pos = match.end()
        if len(words) > MAX_ITEMS:
            raise ListFormError(f"it has more than {MAX_ITEMS} items")
        while pos < n and text[pos] in " \n":
            pos += 1
        if pos < n and text[pos] == ",":
            pos += 1
        elif pos < n and text[pos] != "]":
            raise ListFormError(f"line {i + 1}: expected ',' or ']' in the [ ... ] list")


_PLAIN_IN_FLOW = re.compile(r"[^,\]\n]*")


def _environment(lines: list[str], i: int, column: int, rest: str, notes: list[str]) -> tuple[dict[str, str], int]:
    """A container's environment: Kubernetes ``- name: X`` / ``value: Y`` items, or compose's
    ``- X=Y`` items or ``X: Y`` mapping (values read as plain or quoted scalars)."""
    env: dict[str, str] = {}
    end = _continuation(lines, i + 1, column)
    if end == i + 1:  # "env:" with its items at the key's own column (Kubernetes style)
        end = i + 1
        while end < len(lines) and (not _content(lines[end]) or _ITEM.match(lines[end]) and _indent(lines[end]) == column or _indent(lines[end]) > column):
            end += 1
    if rest:
        return env, i + 1  # a flow form: not read
    name: str | None = None
    for line in lines[i + 1 : end]:
        if not _content(line):
            continue
        stripped = line.strip()
        text = stripped[1:].strip() if stripped.startswith("-") else stripped
        if stripped.startswith("-"):
            name = None
        key, colon, value = text.partition(":")
        value = _plain_or_quoted(_uncommented(value))
        if colon and key.strip() == "name":
            name = value
        elif colon and key.strip() == "value" and name is not None:
            env[name] = value
        elif stripped.startswith("-") and "=" in text and not colon:  # compose: - X=Y
            k, _, v = _plain_or_quoted(text).partition("=")
            env[k] = v
        elif colon and not stripped.startswith("-") and _indent(line) > column and key.strip() not in ("valueFrom", "secretKeyRef", "configMapKeyRef", "fieldRef", "key"):
            env.setdefault(key.strip(), value)  # compose: X: Y
    return env, end


def _plain_or_quoted(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            return _double_quoted(text[1:-1], 0)
        except ListFormError:
            return text[1:-1]
    return text
