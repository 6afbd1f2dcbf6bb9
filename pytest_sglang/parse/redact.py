"""Secrets never leave the collector: every value that could hold one is replaced here.

SGLang returns its own ``api_key``, ``admin_api_key`` and ``ssl_keyfile_password`` in
``/server_info`` (all versions), prints them in the start-up line, and keeps ``--api-key X``
verbatim inside ``launch_command`` (0.5.20+). We redact at the boundary, before anything is
parsed, stored, rendered or written, so no later step can leak them.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import shlex
from typing import Any, Iterable

from pytest_sglang.base.argv import ENV_ASSIGNMENT
from pytest_sglang.base.secrets import MIN_LENGTH, REDACTED, forms, note_found, remove
from pytest_sglang.base.secrets import scrub as _scrub
from pytest_sglang.parse.quoted import replace_quoted
from pytest_sglang.parse.shellwords import split_words

SECRET_KEYS = frozenset(
    {
        "api_key",
        "admin_api_key",
        "ssl_keyfile_password",
        "watermark_key",
        "watermark_key_b",
        "watermark_config",
        "hf_token",
    }
)
# A future field whose name ends like a credential (``foo_api_key``, ``bar_password``,
# ``hub_access_token``). Not every "token" is one: SGLang has dozens of token counts and
# ``speculative_token_map``, ``bucket_time_to_first_token``, ``tbo_token_distribution_threshold``.
_SECRET_NAME = re.compile(r"(^|_)(api_key|password|passwd|secret|access_token|auth_token|hf_token|watermark_key)$", re.I)

_FLAG_SECRET = re.compile(r"^--?(?:[\w-]*-)?(api-key|admin-api-key|ssl-keyfile-password|password|token|secret|watermark-key(?:-b)?|watermark-config|hf-token)$", re.I)
_ENV_SECRET = re.compile(r"API_KEY|TOKEN|PASSWORD|SECRET", re.I)


# SGLang's secret flags, and the exact flags that are prefixes of them without being secret.
# argparse takes any unambiguous prefix (``--api sk-...`` is ``--api-key``), so a prefix of a
# secret flag hides its value too.
_SECRET_FLAGS = ("--api-key", "--admin-api-key", "--ssl-keyfile-password", "--hf-token", "--watermark-key", "--watermark-config")
_NOT_SECRET_FLAGS = frozenset({"--ssl-keyfile"})


def is_secret_key(key: str) -> bool:
    # Cached for names of a usual length: an answer's field names repeat (every server of a
    # fleet sends the same some hundreds), and the pattern search was a third of reading one.
    # A hostile server's megabyte-long names are not kept.
    return _is_secret_name(key) if len(key) <= 128 else _secret_name(key)


def _secret_name(key: str) -> bool:
    return key in SECRET_KEYS or bool(_SECRET_NAME.search(key))


_is_secret_name = functools.lru_cache(maxsize=4096)(_secret_name)


def is_secret_env(name: str) -> bool:
    """An environment variable that holds a credential (``HF_TOKEN``, ``OPENAI_API_KEY``, ``DB_PASSWD``)."""
    return bool(_ENV_SECRET.search(name)) or "KEY" in name or is_secret_key(name.lower())


def is_secret_flag(flag: str) -> bool:
    """``--api-key``, ``--foo-password``, and any abbreviation argparse would read as a secret flag."""
    if _FLAG_SECRET.match(flag):
        return True
    lowered = flag.lower()
    return (
        lowered.startswith("--")
        and len(lowered) > 2
        and lowered not in _NOT_SECRET_FLAGS
        and any(secret.startswith(lowered) for secret in _SECRET_FLAGS)
    )


def redact_value(key: str, value: Any) -> Any:
    if value is None or value == "" or value is False:
        return value
    return REDACTED


# SGLang's answers nest a few levels (internal_states[0].cuda_graph_config.decode...); a body
# nested deeper than this is refused before anything walks it recursively.
MAX_DEPTH = 64


class TooDeep(ValueError):
    """JSON-like data nested deeper than :data:`MAX_DEPTH`."""


# A launch command is some hundreds of characters, a few KB with long JSON values; one longer
# than this is no command anyone typed. It is not read, and not kept either: the value is
# replaced whole by a note, so nothing of it (and no secret in it) travels further.
MAX_COMMAND = 256 * 1024  # characters
_REFUSED = re.compile(r"<launch command of \d+ characters not kept: over the \d+-character limit>")
LAUNCH_KEYS = ("launch_command", "_launch_command")


def refused_command(length: int) -> str:
    """What stands for a launch command of ``length`` characters, over :data:`MAX_COMMAND`."""
    return f"<launch command of {length} characters not kept: over the {MAX_COMMAND}-character limit>"


def is_refused_command(value: Any) -> bool:
    """Whether ``value`` is the note :func:`refused_command` leaves in a command's place."""
    return isinstance(value, str) and _REFUSED.fullmatch(value) is not None


def _secret_strings(data: Any, limit: int = MAX_DEPTH) -> list[str]:
    """The string values held under secret keys anywhere in ``data``; :class:`TooDeep` once
    the walk (without recursion) is deeper than ``limit``."""
    found: list[str] = []
    todo: list[tuple[Any, int]] = [(data, 1)]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, dict):
            if depth > limit:
                raise TooDeep(f"JSON nested deeper than {MAX_DEPTH} levels")
            for key, child in value.items():
                if isinstance(key, str) and isinstance(child, str) and child and is_secret_key(key):
                    found.append(child)
                elif isinstance(child, (dict, list)):
                    todo.append((child, depth + 1))
        elif isinstance(value, list):
            if depth > limit:
                raise TooDeep(f"JSON nested deeper than {MAX_DEPTH} levels")
            todo.extend((child, depth + 1) for child in value if isinstance(child, (dict, list)))
    return found


def redact_mapping(data: Any) -> Any:
    """Deep copy of JSON-like data with secret fields and launch commands redacted.

    The values of secret fields are noted as found secrets (see
    :func:`pytest_sglang.base.secrets.collecting`) and removed from every other
    string of the same data too: SGLang joins ``launch_command`` unquoted, so a key with spaces
    (``--api-key horse battery``) is only found whole through the ``api_key`` field beside it.
    Data nested deeper than :data:`MAX_DEPTH` is refused with :class:`TooDeep`."""
    # One walk copies and redacts the fields, and finds the secret values; only when it found
    # one long enough to look for does a second walk remove it from every other string.
    found: list[str] = []
    out = _redacted(data, [], found)
    if not found:
        return out
    note_found(*found)
    spellings = _spellings(found)
    return _redacted(data, spellings) if spellings else out


def _spellings(values: Iterable[str]) -> list[str]:
    """The values worth looking for elsewhere (long enough, not a ``<redacted>`` already): what
    :func:`_replaced` removes, in every spelling."""
    return list(dict.fromkeys(v for v in values if isinstance(v, str) and len(v.strip()) >= MIN_LENGTH and REDACTED not in v))


def _replaced(text: str, known: list[str]) -> str:
    """``text`` without the registered secrets and these values, in every spelling the scrubber
    knows. Plain searches (:func:`~pytest_sglang.base.secrets.remove`), no pattern: a value a
    host sends may be megabytes long, and compiling a pattern of it costs far more."""
    return remove(text, known)


def _redacted(data: Any, known: list[str], found: list[str] | None = None, depth: int = 1) -> Any:
    """``data`` copied with secret fields, launch commands and ``known`` spellings redacted;
    the values under secret keys are added to ``found`` if given. The recursion is bounded:
    :class:`TooDeep` past :data:`MAX_DEPTH` levels, before anything deeper is touched."""
    if isinstance(data, (dict, list)) and depth > MAX_DEPTH:
        raise TooDeep(f"JSON nested deeper than {MAX_DEPTH} levels")
    if isinstance(data, dict):
        out: dict[Any, Any] = {}
        for key, value in data.items():
            if isinstance(key, str) and is_secret_key(key):
                if found is not None and isinstance(value, str) and value:
                    found.append(value)
                elif found is not None and isinstance(value, (dict, list)):
                    found.extend(_secret_strings(value, MAX_DEPTH - depth))
                out[key] = redact_value(key, value)
            elif key in LAUNCH_KEYS and isinstance(value, str):
                out[key] = refused_command(len(value)) if len(value) > MAX_COMMAND else redact_command_all(_replaced(value, known))
            elif key in LAUNCH_KEYS and isinstance(value, list) and all(isinstance(w, str) for w in value):
                size = sum(len(w) + 1 for w in value)  # an argv list: its words, as a line
                if size > MAX_COMMAND:
                    out[key] = refused_command(size)
                else:
                    out[key] = split_words(redact_command_all(shlex.join(_replaced(w, known) for w in value)))
            elif isinstance(value, (dict, list)):
                out[key] = _redacted(value, known, found, depth + 1)
            elif known and isinstance(value, str):
                out[key] = _replaced(value, known)
            else:  # a number, a bool, None, or a string with no secret known to remove
                out[key] = value
        return out
    if isinstance(data, list):
        return [_redacted(v, known, found, depth + 1) for v in data]
    if isinstance(data, str) and known:
        return _replaced(data, known)
    return data


def redact_command(command: str, _depth: int = 0) -> str:
    """Redact secret flag values in a command line: ``--api-key X``, ``--api-key=X``, ``HF_TOKEN=X``
    (and systemd's ``Environment=HF_TOKEN=X``), also inside a word that is itself a command
    (``bash -c "... --api-key X"``). Each value removed is noted as a found secret, so it is
    scrubbed wherever else it shows up. The words are read as ``shlex.split`` reads them
    (:func:`~pytest_sglang.parse.shellwords.split_words`), in linear time."""
    return _redact_command(command, _depth, None)


def redact_command_all(command: str) -> str:
    """:func:`redact_command`, and each value it removed scrubbed from the rest of the command
    too (``--api-key X --served-model-name X``): for text that is shown or kept."""
    found: list[str] = []
    text = _redact_command(command, 0, found)
    return _replaced(text, _spellings(found)) if found else text


def command_secrets(command: str) -> list[str]:
    """The values :func:`redact_command` removes from ``command``, embedded commands' too."""
    found: list[str] = []
    _redact_command(command, 0, found)
    return found


def word_secrets(word: str) -> list[str]:
    """The secrets one argv word holds: the strings under credential keys of a JSON (or Python
    dict) value (``{"hf_token": "..."}``), and the values of secret flags in a command inside
    it or inside a word with spaces (``sh -c "... --api-key X"``)."""
    found: list[str] = []
    if _holds_mapping(word):

        def removed(value: str) -> None:
            note_found(value)
            found.append(value)

        _redact_mapping_text(word, 0, removed)
    elif len(word.split()) > 1:
        _redact_command(word, 1, found)
    return found


def _redact_command(command: str, depth: int, found: list[str] | None, known: tuple[str, ...] = ()) -> str:
    here: list[str] = []

    def removed(value: str) -> None:
        note_found(value)
        if value:
            here.append(value)

    try:
        words = split_words(command)
    except ValueError:
        words = command.split()
    secret = _secret_positions(words)
    # The values of this command's secret flags, known before any other word is split or quoted:
    # a word that holds one escaped (``--chat-template "it\\'s-a-key"``) or with spaces loses it
    # first, before quoting or reading it as a command could cut it into pieces no scrubber finds.
    known = known + tuple(words[i].partition("=")[2] if inline else words[i] for i, inline in secret.items())
    out: list[str] = []
    for i, word in enumerate(words):
        name, _, value = word.partition("=")
        if i in secret:
            removed(value if secret[i] else word)
            out.append(f"{name}={REDACTED}" if secret[i] else REDACTED)
        elif ENV_ASSIGNMENT.match(word) and is_secret_env(name):
            removed(value)
            out.append(f"{name}={REDACTED}")
        elif ENV_ASSIGNMENT.match(word) and ENV_ASSIGNMENT.match(value) and is_secret_env(value.partition("=")[0]):
            removed(value.partition("=")[2])  # systemd's Environment=HF_TOKEN=X
            out.append(f"{name}={value.partition('=')[0]}={REDACTED}")
        elif _holds_mapping(word := _replaced(word, _spellings(known + tuple(here)))):  # --json-model-override-args '{"hf_token": "..."}'
            out.append(_redact_mapping_text(word, depth, removed))
        elif depth < 3 and len(word.split()) > 1 and ("-" in word or "=" in word):
            out.append(_Embedded(_redact_command(word, depth + 1, here, known + tuple(here))))  # sh -c "...", a wrapper's argument
        else:
            out.append(word)
    if found is not None:
        found.extend(here)
    return " ".join(w if isinstance(w, _Embedded) or w == REDACTED or w.endswith("=" + REDACTED) else shlex.quote(w) for w in out)


class _Embedded(str):
    """An embedded command, already redacted; quoted as one word."""

    def __new__(cls, text: str) -> "_Embedded":
        return super().__new__(cls, shlex.quote(text))


# A word spelt as a flag is (``--port``, ``--tp-size=2``): lower-case words joined by '-' or '_'.
_FLAG_SHAPED = re.compile(r"--[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*(?:=.*)?", re.S)


def _value_of_secret_flag(word: str) -> bool:
    """Whether the word after a secret flag is taken as its value (and hidden): any word but
    ``--`` and one spelt as a flag is. argparse refuses ``--api-key -abc123secret`` (a value
    that looks like an option), but the text still holds the key: it is hidden all the same,
    while ``--api-key --port 30000`` (a key left out) keeps ``--port``."""
    return word != "--" and not _FLAG_SHAPED.fullmatch(word)


def _secret_positions(words: list[str]) -> dict[int, bool]:
    """Where the values of secret flags sit in an argv, as argparse reads it: the index of a
    ``--flag=value`` word (True: the value is inline) or of the word after ``--flag`` (False;
    any word but one spelt as a flag, :func:`_value_of_secret_flag`)."""
    found: dict[int, bool] = {}
    for i, word in enumerate(words):
        flag, eq, _ = word.partition("=")
        if i in found or not is_secret_flag(flag):
            continue
        if eq:
            found[i] = True
        elif i + 1 < len(words):
            j = i + 1
            while j + 1 < len(words) and "\n" in words[j] and not words[j].strip():  # a '\\<newline>' continuation: a word to shlex
                j += 1
            if _value_of_secret_flag(words[j]):
                found[j] = False
    return found


# A key and a quoted string value inside a flag's JSON (or Python dict) value:
# '{"hf_token": "hf_...", "api_key": "..."}', "{'password': '...'}". Linear: no nested repeats.
_PAIR = re.compile(r"""(["'])([A-Za-z0-9_.\-]{1,80})\1(\s*:\s*)("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')""", re.S)
# Key names that hold a credential inside such a value: a last word token, key, secret,
# password, authorization (camelCase read as words: apiKey, hfToken).
_SECRET_WORD = re.compile(r"(?:^|_)(?:token|key|secret|password|passwd|pwd|authorization|auth|credential|credentials|bearer)$")
# What a tokenizer's special-token field holds ("pad_token": "<pad>", "[PAD]", "<|endoftext|>"):
# a token, not a credential.
_SPECIAL_TOKEN = re.compile(r"<\|?[^<>\s]{0,40}\|?>|\[[A-Za-z_]{1,24}\]")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# A quoted string of JSON or Python, escapes included.
_STRING = re.compile(r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'""", re.S)


def is_secret_json_key(name: str) -> bool:
    """Whether a key inside a flag's JSON value names a credential: SGLang's secret fields, and
    any name whose last word is token, key, secret, password or authorization (``hf_token``,
    ``apiKey``, ``x-api-key``); not ``num_key_value_heads`` nor ``max_tokens``."""
    words = _CAMEL.sub("_", name).lower().replace("-", "_").replace(".", "_")
    return is_secret_key(words) or bool(_SECRET_WORD.search(words))


def _holds_mapping(word: str) -> bool:
    """A word that is (or, after ``--flag=``, holds) a JSON or Python mapping or list."""
    value = word.partition("=")[2] if word.startswith("-") else word
    return value.lstrip()[:1] in ("{", "[")


def _unquoted(literal: str) -> str:
    """A quoted string of JSON or Python as its value (the text inside the quotes if it does
    not read as one)."""
    try:
        value = json.loads(literal) if literal[0] == '"' else ast.literal_eval(literal)
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        return literal[1:-1]
    return value if isinstance(value, str) else literal[1:-1]


def _redact_mapping_text(word: str, depth: int, removed: Any) -> str:
    """A JSON (or Python dict) value with the string of every key that names a credential
    replaced, its quotes kept (``{"hf_token": "<redacted>"}``); the rest as written. A command
    inside one of its strings (``["sh", "-c", "... --api-key X"]``) has its secrets hidden
    where they stand, string by string (linear in the value's length)."""

    def pair(match: re.Match[str]) -> str:
        quote, name, colon, literal = match.groups()
        value = _unquoted(literal)
        if not is_secret_json_key(name) or not value or value == REDACTED or (name.lower().endswith("token") and _SPECIAL_TOKEN.fullmatch(value)):
            return match.group(0)
        removed(value)
        if literal[1:-1] != value:
            removed(literal[1:-1])  # as escaped in the text
        return f"{quote}{name}{quote}{colon}{literal[0]}{REDACTED}{literal[0]}"

    def string(match: re.Match[str]) -> str:
        literal = match.group(0)
        value = _unquoted(literal)
        if len(value.split()) <= 1:
            return literal
        inner: list[str] = []
        _redact_command(value, depth + 1, inner)
        for secret in inner:
            removed(secret)
        for form in sorted({f for v in inner for f in forms(v)}, key=len, reverse=True):
            literal = literal.replace(form, REDACTED)
        return literal

    out = _PAIR.sub(pair, word)
    return _STRING.sub(string, out) if depth < 3 else out


def secret_values(words: list[str], not_secret: Any = None) -> list[str]:
    """The values secret flags take in an argv (``--api-key X``, ``--api=X``), to scrub elsewhere.
    ``not_secret(flag)`` may clear a flag that only looks secret (``--prompt-token``, a prefix
    of SGLang's ``--prompt-tokens-buckets``)."""
    found = []
    for i, inline in _secret_positions(words).items():
        flag_word = words[i] if inline else words[i - 1]
        if not_secret is not None and not_secret(flag_word.partition("=")[0]):
            continue
        found.append(words[i].partition("=")[2] if inline else words[i])
    return [value for value in found if value]


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove known secret strings (every registered one, and ``secrets``) from free text."""
    return _scrub(text, secrets)


# Any field or flag in these shapes; is_secret_key and _FLAG_SECRET decide which are secrets.
# A field's quoted value is read by replace_quoted: a pattern for it kept a record per character
# (270 bytes of memory per byte of a long value).
_REPR_FIELD = re.compile(r"""\b(\w+)=(?=['"])""")  # ServerArgs(api_key='...')
_DICT_FIELD = re.compile(r"""(['"])(\w+)\1(\s*:\s*)(?=['"])""")  # {'api_key': '...'}
_CLI_FLAG = re.compile(r"(--[\w-]+)([=\s\x00])([^\s\x00]+)")  # --api-key x (also NUL-separated, as in /proc/PID/cmdline)


def redact_log_line(line: str) -> str:
    """A log line with secret values replaced: ``api_key='x'`` in the ``ServerArgs(...)`` line,
    ``'api_key': 'x'`` in the dict line, ``--api-key x`` in a logged command line."""
    if "key" not in line and "password" not in line and "token" not in line and "secret" not in line and "--" not in line:
        return line
    line = replace_quoted(line, _REPR_FIELD, lambda m: f"{m.group(1)}='{REDACTED}'" if is_secret_key(m.group(1)) else None)
    line = replace_quoted(
        line,
        _DICT_FIELD,
        lambda m: f"{m.group(1)}{m.group(2)}{m.group(1)}{m.group(3)}'{REDACTED}'" if is_secret_key(m.group(2)) else None,
    )
    if not any(is_secret_flag(m.group(1)) for m in _CLI_FLAG.finditer(line)):
        return line  # not a copy of a long line that holds no secret
    return _CLI_FLAG.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}" if is_secret_flag(m.group(1)) else m.group(0), line)
