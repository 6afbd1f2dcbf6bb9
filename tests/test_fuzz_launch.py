"""Fuzz tier: hostile launch commands and pasted shell text.

Whatever text a user pastes or a host reports as its launch command (random quotes and
backslashes, huge tokens, NULs, unicode, markdown, list forms, systemd units, secret flags with
values), the readers answer or raise the package's own one-line error, in bounded time, and no
value given to ``--api-key`` (or another secret flag; one that starts with ``-`` too) nor held
under a credential key of a flag's JSON value (``{"hf_token": ...}``) reaches anything they return.

A fixed set of examples (derandomized, no deadline), a few seconds each way; a deeper, random
search: ``ODD_VALUES_EXAMPLES=5000 pytest tests/test_fuzz_launch.py``. The tests redact outside a
collection (:func:`pytest_sglang.base.secrets.collecting`), so the hundreds of secrets they make up
are never registered process-wide.
"""

from __future__ import annotations

import os
import shlex
import time

import pytest
from support import property_settings

from pytest_sglang.base.errors import SGLangError, SpecError
from pytest_sglang.model.facts import Endpoint, Facts
from pytest_sglang.normaliser.snapshot import normalise
from pytest_sglang.parse.launch import parse_launch_command, split_command
from pytest_sglang.parse.redact import MAX_COMMAND, redact_command, redact_mapping
from pytest_sglang.parse.shellwords import ShellSyntaxError, simple_commands

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

# 120 fixed examples per test unless ODD_VALUES_EXAMPLES asks for a deeper, random search.
SETTINGS = property_settings(suppress_health_check=list(hypothesis.HealthCheck), database=None)
SETTINGS = SETTINGS if "ODD_VALUES_EXAMPLES" in os.environ else hypothesis.settings(SETTINGS, max_examples=120)
# One call's time limit: the slowest reader takes well under a second on the largest text here.
SECONDS = 10.0

# ---- hostile text ------------------------------------------------------------------------------

HUGE = st.builds(lambda c, n: c * n, st.sampled_from(["a", "'", '"', "\\", " ", "\x00", "é", "-", "=", "\n", "ab'c\"d\\ "]), st.integers(1_000, MAX_COMMAND + 5_000))
PIECES = st.one_of(
    st.sampled_from(
        [
            "'", '"', "\\", "\\\n", " ", "\t", "\n", "\r\n", "\x00", "\u2028", "\u00a0", "#", "# comment", ";", "&&", "||", "|", "&", ">", "2>&1",
            "< in", "<<<", "$(", ")", "`", "```", "```bash\n", "$ ", "${X}", "--", "-", "=", "--api-key", "--api-key=", "--api", "--hf-token",
            "--admin-api-key", "--tp", "--tp-size", "4", "--model-path", "--config", "x.yaml", "python -m sglang.launch_server", "sglang serve",
            "sh -c", "bash -lc", "docker run --gpus all img", "kubectl exec pod --", "export HF_TOKEN=", "HF_TOKEN=", "env", "ExecStart=",
            "Environment=", "[", "]", "prepare_server_args([", "])", '", "', "args:", "- ", "command:", "{", "}", "<redacted>", "😀", "ｓｇｌａｎｇ",
            "\ud800", "１>x",
        ]
    ),
    st.text(max_size=12),
)
HOSTILE_TEXT = st.one_of(
    st.lists(PIECES, max_size=60).map("".join),
    st.tuples(st.lists(PIECES, max_size=10).map("".join), HUGE, st.lists(PIECES, max_size=10).map("".join)).map("".join),
)
VERSIONS = st.sampled_from([None, "0.5.23", "0.5.9", "0.5.5", "99.1", "not-a-version"])


def timed(call, *args, **kwargs):  # type: ignore[no-untyped-def]
    started = time.process_time()
    try:
        return call(*args, **kwargs)
    finally:
        elapsed = time.process_time() - started
        assert elapsed < SECONDS, f"{call.__name__} took {elapsed:.1f}s"


@SETTINGS
@hypothesis.given(text=HOSTILE_TEXT, version=VERSIONS)
def test_any_pasted_text_is_read_or_refused_with_the_package_s_own_error_in_bounded_time(text, version):
    timed(redact_command, text)
    timed(split_command, text)
    try:
        launch = timed(parse_launch_command, text, sglang_version=version, strict_version=version != "not-a-version")
    except SGLangError as exc:  # a version that is not one, with strict_version
        assert version == "not-a-version" and "\n" not in str(exc)
        return
    assert isinstance(launch.text, str) and isinstance(launch.problems, list)
    if launch.read_error is not None:
        assert "\n" not in launch.read_error
    try:
        launch.require_arguments()
    except SpecError as exc:
        assert "\n" not in str(exc)


# ---- no secret value reaches any output -----------------------------------------------------------

SECRET_CHARS = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
SECRETS = st.one_of(
    st.text(alphabet=SECRET_CHARS, min_size=10, max_size=24).map(lambda s: "sk-" + s),
    # a key that starts with '-': argparse refuses it as a value, the text still holds it
    st.text(alphabet=SECRET_CHARS, min_size=10, max_size=24).map(lambda s: "-" + s),
    st.text(alphabet=SECRET_CHARS, min_size=10, max_size=24).map(lambda s: "--K" + s),
)
# Words of a command: anything at all, huge ones too (never the secret itself: that is placed below).
WORDS = st.lists(st.one_of(st.text(max_size=10), st.sampled_from(["--tp", "2", "--model-path", "m", "--zz", "-x", "--", "a b", "'", '"', "\\", "\x00", "é😀", "--api", "--prompt-token"]), HUGE.map(lambda w: w[:20_000])), max_size=12)
# How the secret is given: as SGLang's argparse reads a secret flag's value.
SECRET_FORMS = st.sampled_from(
    [
        ["--api-key", "{s}"],
        ["--api-key={s}"],
        ["--api", "{s}"],
        ["--admin-api-key", "{s}"],
        ["--hf-token={s}"],
        ["--ssl-keyfile-password", "{s}"],
        ["--api-key", "{s}", "--served-model-name", "{s}"],  # and again where no secret belongs
        ["--api-key", "{s}", "{s}"],  # and as a stray word after it
        # inside a flag's JSON (or Python dict) value, under a key that names a credential
        ["--json-model-override-args", '{{"hf_token": "{s}", "rope_scaling": {{"type": "yarn-x", "factor": 4}}}}'],
        ['--json-model-override-args={{"api_key": "{s}", "num_key_value_heads": 8}}'],
        ["--json-model-override-args", '{{"nested": [{{"password": "{s}"}}], "pad_token": "<pad>"}}'],
        ["--json-model-override-args", '{{"headers": {{"Authorization": "{s}"}}, "secretKey": "{s}"}}'],
        ["--json-model-override-args", "{{'hfToken': '{s}'}}"],
    ]
)
# How the words are written down: as a shell line, decorated as pasted text often is, or as a list form.
LAYOUTS = st.sampled_from(["plain", "prompt", "fence", "pipes", "continued", "sh-c", "python-list", "yaml", "systemd", "env-prefix", "argv"])


def layout(kind: str, words: list[str]) -> str | list[str]:
    line = shlex.join(words)
    entry = "python -m sglang.launch_server " + line
    if kind == "plain":
        return entry
    if kind == "prompt":
        return "$ " + entry + " # started by hand"
    if kind == "fence":
        return "```bash\n" + entry + "\n```"
    if kind == "pipes":
        return "export CUDA_VISIBLE_DEVICES=0; " + entry + " 2>&1 | tee log &"
    if kind == "continued":
        return "python -m sglang.launch_server \\\n  " + " \\\n  ".join(shlex.quote(w) for w in words)
    if kind == "sh-c":
        return "sh -c " + shlex.quote(entry)
    if kind == "python-list":
        return "prepare_server_args([" + ", ".join(repr(w) for w in words) + "])"
    if kind == "yaml":
        return "command: [python3, -m, sglang.launch_server]\nargs: [" + ", ".join(repr(w) for w in words) + "]\n"
    if kind == "systemd":
        return "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server " + line + "\n"
    if kind == "env-prefix":
        return "HF_TOKEN=hf_not_the_secret " + entry
    return ["python", "-m", "sglang.launch_server", *words]


@SETTINGS
@hypothesis.given(secret=SECRETS, before=WORDS, after=WORDS, form=SECRET_FORMS, kind=LAYOUTS, version=st.sampled_from([None, "0.5.23", "0.5.9"]))
def test_no_value_of_a_secret_flag_reaches_anything_returned(secret, before, after, form, kind, version):
    hypothesis.assume(not any(secret in word for word in before + after))
    words = [*before, *(part.format(s=secret) for part in form), *after]
    command = layout(kind, words)
    text = command if isinstance(command, str) else shlex.join(command)

    redacted = timed(redact_command, text)
    if kind not in ("python-list", "yaml") and form.count("{s}") == 1:  # shell text, the value given once
        assert secret not in redacted
    launch = timed(parse_launch_command, command, sglang_version=version, strict_version=False)
    assert secret not in repr(launch)
    try:
        launch.require_arguments()
    except SpecError as exc:
        assert secret not in str(exc)

    # As a host reports it: /server_info launch_command (text, or an argv list), read through the
    # collection boundary and the normaliser.
    reported = words if kind == "argv" else " ".join(shlex.quote(w) for w in words)
    body = timed(redact_mapping, {"launch_command": reported, "version": "0.5.23", "tp_size": 1})
    facts = Facts(target="http://gpu1:30000", endpoints={"server_info": Endpoint(path="/server_info", status=200, body=body)})
    snapshot = timed(normalise, facts)
    shown = repr(body) + repr(snapshot)
    assert secret not in shown


def shell_reads_the_pair(command: str, secret: str) -> bool:
    """Whether a shell reads ``--api-key SECRET`` as two words of one command (the package's
    own shell reader is the oracle: quotes, comments, continuations, operators)."""
    try:
        commands = simple_commands(command)
    except ShellSyntaxError:
        return False
    return any(c.words[i : i + 2] == ["--api-key", secret] for c in commands for i in range(len(c.words) - 1))


@SETTINGS
@hypothesis.given(secret=SECRETS, text=HOSTILE_TEXT, glue=st.sampled_from(["\n", " ", " \\\n ", "; ", " '", ' "', " #", "\\\n"]))
def test_a_secret_flag_inside_hostile_text_is_hidden_wherever_a_shell_reads_it_as_one(secret, text, glue):
    hypothesis.assume(secret not in text)
    command = f"{text}{glue}python -m sglang.launch_server --api-key {secret} --tp 2{glue}{text}"
    launch = timed(parse_launch_command, command, sglang_version="0.5.23")
    body = timed(redact_mapping, {"launch_command": command})
    facts = Facts(target="http://gpu1:30000", endpoints={"server_info": Endpoint(path="/server_info", status=200, body=body)})
    snapshot = timed(normalise, facts)
    if len(command) <= MAX_COMMAND and shell_reads_the_pair(command, secret):
        assert secret not in timed(redact_command, command)
        assert secret not in repr(launch) and secret not in repr(body) + repr(snapshot)
