"""Secrets never leave the collector: every value that could hold one is replaced here.

SGLang returns its own ``api_key``, ``admin_api_key`` and ``ssl_keyfile_password`` in
``/server_info`` (all versions), prints them in the start-up line, and keeps ``--api-key X``
verbatim inside ``launch_command`` (0.5.20+). We redact at the boundary, before anything is
parsed, stored, rendered or written, so no later step can leak them.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from ._argv import ENV_ASSIGNMENT, option_like

REDACTED = "<redacted>"

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
    return key in SECRET_KEYS or bool(_SECRET_NAME.search(key))


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


def redact_mapping(data: Any) -> Any:
    """Deep copy of JSON-like data with secret fields and launch commands redacted."""
    if isinstance(data, dict):
        out: dict[Any, Any] = {}
        for key, value in data.items():
            if isinstance(key, str) and is_secret_key(key):
                out[key] = redact_value(key, value)
            elif key in ("launch_command", "_launch_command") and isinstance(value, str):
                out[key] = redact_command(value)
            elif key in ("launch_command", "_launch_command") and isinstance(value, list) and all(isinstance(w, str) for w in value):
                out[key] = shlex.split(redact_command(shlex.join(value)))  # an argv list
            else:
                out[key] = redact_mapping(value)
        return out
    if isinstance(data, list):
        return [redact_mapping(v) for v in data]
    return data


def redact_command(command: str) -> str:
    """Redact secret flag values in a command line: ``--api-key X``, ``--api-key=X``, ``HF_TOKEN=X``."""
    try:
        words = shlex.split(command, posix=True)
    except ValueError:
        words = command.split()
    secret = _secret_positions(words)
    out: list[str] = []
    for i, word in enumerate(words):
        if i in secret:
            out.append(f"{word.partition('=')[0]}={REDACTED}" if secret[i] else REDACTED)
        elif ENV_ASSIGNMENT.match(word) and is_secret_env(word.partition("=")[0]):
            out.append(f"{word.partition('=')[0]}={REDACTED}")
        else:
            out.append(word)
    return " ".join(shlex.quote(w) if w != REDACTED and not w.endswith("=" + REDACTED) else w for w in out)


def _secret_positions(words: list[str]) -> dict[int, bool]:
    """Where the values of secret flags sit in an argv, as argparse reads it: the index of a
    ``--flag=value`` word (True: the value is inline) or of the word after ``--flag`` (False;
    never an option-like word, which argparse does not take as a value)."""
    found: dict[int, bool] = {}
    for i, word in enumerate(words):
        flag, eq, _ = word.partition("=")
        if i in found or not is_secret_flag(flag):
            continue
        if eq:
            found[i] = True
        elif i + 1 < len(words) and not option_like(words[i + 1]):
            found[i + 1] = False
    return found


def secret_values(words: list[str]) -> list[str]:
    """The values secret flags take in an argv (``--api-key X``, ``--api=X``), to scrub elsewhere."""
    values = (words[i].partition("=")[2] if inline else words[i] for i, inline in _secret_positions(words).items())
    return [value for value in values if value]


def scrub(text: str, secrets: list[str]) -> str:
    """Remove known secret strings (e.g. the user's api key) from free text."""
    for secret in secrets:
        if secret and len(secret) >= 3:
            text = text.replace(secret, REDACTED)
    return text


_QUOTED = r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\""""
# Any field or flag in these shapes; is_secret_key and _FLAG_SECRET decide which are secrets.
_REPR_FIELD = re.compile(rf"\b(\w+)=({_QUOTED})")  # ServerArgs(api_key='...')
_DICT_FIELD = re.compile(rf"""(['"])(\w+)\1(\s*:\s*)({_QUOTED})""")  # {'api_key': '...'}
_CLI_FLAG = re.compile(r"(--[\w-]+)([=\s\x00])([^\s\x00]+)")  # --api-key x (also NUL-separated, as in /proc/PID/cmdline)


def redact_log_line(line: str) -> str:
    """A log line with secret values replaced: ``api_key='x'`` in the ``ServerArgs(...)`` line,
    ``'api_key': 'x'`` in the dict line, ``--api-key x`` in a logged command line."""
    if "key" not in line and "password" not in line and "token" not in line and "secret" not in line and "--" not in line:
        return line
    line = _REPR_FIELD.sub(lambda m: f"{m.group(1)}='{REDACTED}'" if is_secret_key(m.group(1)) else m.group(0), line)
    line = _DICT_FIELD.sub(
        lambda m: f"{m.group(1)}{m.group(2)}{m.group(1)}{m.group(3)}'{REDACTED}'" if is_secret_key(m.group(2)) else m.group(0),
        line,
    )
    return _CLI_FLAG.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}" if is_secret_flag(m.group(1)) else m.group(0), line)
