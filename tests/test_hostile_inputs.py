"""Hostile input, round three: what a host, a capture, a baseline file or a user hands over is
read in time linear in its size, fails only its own host with one line, and never echoes a
secret.

- the shell tokenizer (:func:`pytest_sglang.parse.shellwords.split_words`, ``simple_commands``) reads
  exactly as ``shlex`` and the former character reader did, in linear time;
- a launch command over :data:`pytest_sglang.parse.redact.MAX_COMMAND` is refused with a note, at
  the collection boundary and wherever a command is parsed, and nothing of it is echoed;
- a target whose facts cannot be normalised fails its own tests in one line; the others run;
- baseline documents with fields of the wrong type compare as differences;
- a misspelt ``sim://`` profile is one usage error with the close names.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import property_settings

from pytest_sglang.base.errors import SpecError, TargetError
from pytest_sglang.base.secrets import collecting
from pytest_sglang.model.facts import Endpoint, Facts
from pytest_sglang.normaliser.snapshot import normalise
from pytest_sglang.parse.launch import MAX_SECRET_VALUES, parse_launch_command
from pytest_sglang.parse.redact import MAX_COMMAND, REDACTED, is_refused_command, redact_command, redact_mapping
from pytest_sglang.parse.shellwords import Command, ShellSyntaxError, simple_commands, split_words
from pytest_sglang.target.spec import parse_spec

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

SETTINGS = property_settings()  # 300 fixed examples; ODD_VALUES_EXAMPLES=N searches deeper
SECRET = "sk-hostile-7Qz93kXw"
LLAMA = "sim://llama31-8b-1xh100-0.5.9"
MB = 1 << 20
# Generous: each of these takes well under a second; the quadratic readers took tens of seconds.
# Measured as this process's CPU time, so a busy machine does not make a linear reader look slow.
LINEAR_SECONDS = 8.0


# ---- the tokenizer: shlex's words, in linear time -------------------------------------------------

# Fragments that exercise every rule of shlex.split: quotes (balanced and not), backslashes
# inside and outside quotes, every whitespace shlex knows and some it does not, NUL, unicode.
FRAGMENTS = st.one_of(
    st.sampled_from(["'", '"', "\\", " ", "\t", "\r", "\n", "\x00", "\x0b", "\u00a0", "\u2028", "#", ";", "&&", "|", ">", "2>&1", "$x", "`", "é", "😀", "--api-key", "=", "''", '""', '\\"', "\\\\", "\\\n"]),
    st.text(alphabet="ab-=./", min_size=1, max_size=8),
    st.text(max_size=6),
)
ANY_TEXT = st.lists(FRAGMENTS, max_size=400).map("".join)


def shlex_words(text: str) -> object:
    try:
        return shlex.split(text)
    except ValueError as exc:
        return ("ValueError", str(exc))


def our_words(text: str) -> object:
    try:
        return split_words(text)
    except ValueError as exc:
        return ("ValueError", str(exc))


@SETTINGS
@hypothesis.given(text=ANY_TEXT)
def test_split_words_gives_what_shlex_split_gives_for_any_text(text):
    assert our_words(text) == shlex_words(text)


@pytest.mark.parametrize(
    "text",
    ["", "a", "a b", "'a b'", '"a b"', "a'b'c", 'a"\\"b"', '"\\$x"', "'\\'", "\\'", "a\\ b", "''", "a '' b", '""', "\\\nx", "'", '"', "\\", '"a\\', "\x00 \x00", "\u00a0a"],
)
def test_split_words_on_the_corner_cases_shlex_documents(text):
    assert our_words(text) == shlex_words(text)


# Ordinary pasted shell text, where a shell and shlex.shlex (punctuation_chars, '#' comments)
# agree: words of letters, quoted words without operators in them, escapes of ordinary
# characters, blanks, control operators and comments at the start of a word.
WORD_CHARS = "abcxyz019-=./:,@%+_"
PLAIN = st.text(alphabet=WORD_CHARS, min_size=1, max_size=12)
SINGLE = st.text(alphabet=WORD_CHARS + " \t\n\"\\$", max_size=12).map(lambda s: f"'{s}'")
DOUBLE = st.lists(st.one_of(st.text(alphabet=WORD_CHARS + " \t\n'", min_size=1, max_size=6), st.sampled_from(['\\"', "\\\\", "\\a"])), max_size=4).map(lambda p: '"' + "".join(p) + '"')
ESCAPED = st.sampled_from(WORD_CHARS + " '\"#").map(lambda c: "\\" + c)  # not an operator: shlex's token would look like one
WORD = st.lists(st.one_of(PLAIN, SINGLE, DOUBLE, ESCAPED), min_size=1, max_size=3).map("".join)
SEPARATOR = st.sampled_from([" ", "  ", "\t", " ; ", ";", " && ", "&&", " || ", " | ", "|", " & ", "\n", " \n ", " # a comment; with | words\n", "\n# comment\n"])
ORDINARY_SHELL = st.lists(st.tuples(WORD, SEPARATOR), max_size=40).map(lambda parts: "".join(w + s for w, s in parts))


def shlex_shell_words(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return [token for token in lexer if not (token and set(token) <= set(";&|"))]


@SETTINGS
@hypothesis.given(text=ORDINARY_SHELL)
def test_simple_commands_reads_ordinary_shell_text_as_shlex_does(text):
    ours = [word for command in simple_commands(text) for word in command.words]
    assert ours == shlex_shell_words(text)


# The character-at-a-time reader simple_commands was before it took runs of ordinary
# characters whole (kept here, unchanged, as the reference the new one must agree with).
_CONTROL = ("&&", "||", ";;", "|&", ";", "|", "&", "\n")
_REDIRECT = ("&>>", "&>", ">>", ">&", ">|", "<&", "<<<", "<<", "<>", ">", "<")


def reference_simple_commands(text: str) -> list[Command]:  # noqa: C901  (a verbatim copy)
    from pytest_sglang.parse.shellwords import _unwrap

    text = _unwrap(text)
    commands = [Command()]
    word: list[str] = []
    in_word = quoted = False
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
            if i + 1 < n and text[i + 1] == "\n":
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
        if c == "#" and not in_word:
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith(REDACTED, i):
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
            if redirect in (">&", "<&"):
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


def read_with(reader, text: str) -> object:  # type: ignore[no-untyped-def]
    try:
        return [(c.words, c.redirections) for c in reader(text)]
    except ShellSyntaxError as exc:
        return ("ShellSyntaxError", str(exc))


SHELL_TEXT = st.lists(
    st.one_of(FRAGMENTS, st.sampled_from(["<redacted>", "2>", "&>>", ">&2", "<<<", "3<&-", "```", "`", "$ ", "\n$ x", "#x", "a#b", "１>x", "²>x"])), max_size=300
).map("".join)


@SETTINGS
@hypothesis.given(text=SHELL_TEXT)
def test_simple_commands_reads_any_text_as_the_character_reader_did(text):
    assert read_with(simple_commands, text) == read_with(reference_simple_commands, text)


@pytest.mark.parametrize(
    "shape",
    [
        pytest.param(lambda n: "a" * n, id="one-long-word"),
        pytest.param(lambda n: "'" + "a" * n + "'", id="single-quoted"),
        pytest.param(lambda n: '"' + "a\\\\" * (n // 3) + '"', id="double-quoted-escapes"),
        pytest.param(lambda n: "\\a" * (n // 2), id="escapes"),
        pytest.param(lambda n: "ab " * (n // 3), id="many-words"),
        pytest.param(lambda n: "--api-key " + SECRET + " --served-model-name " + "a" * n, id="secret-then-long-word"),
    ],
)
def test_one_megabyte_is_read_in_linear_time(shape):
    text = shape(MB)
    for read in (split_words, simple_commands, redact_command):
        started = time.process_time()
        out = read(text)
        elapsed = time.process_time() - started
        assert elapsed < LINEAR_SECONDS, f"{read.__name__} took {elapsed:.1f}s on 1 MB"
    assert SECRET not in out  # redact_command's, the last one


# ---- the size cap: over 256 KB, refused with a note, never echoed ---------------------------------


def big_command(size: int = MB) -> str:
    return f"--model-path meta-llama/Llama-3.1-8B-Instruct --api-key {SECRET} --served-model-name " + "a" * size


def test_a_launch_command_over_the_cap_is_replaced_by_a_note_at_the_collection_boundary():
    started = time.process_time()
    with collecting():
        body = redact_mapping({"launch_command": big_command(), "tp_size": 1})
        argv = redact_mapping({"launch_command": big_command().split(" ")})
    assert time.process_time() - started < 1.0
    for value in (body["launch_command"], argv["launch_command"]):
        assert is_refused_command(value) and SECRET not in value and len(value) < 200
        assert re.fullmatch(rf"<launch command of \d+ characters not kept: over the {MAX_COMMAND}-character limit>", value)
    assert body["tp_size"] == 1


def test_a_launch_command_under_the_cap_is_still_read_and_redacted():
    body = redact_mapping({"launch_command": big_command(MAX_COMMAND - 1000)})
    assert SECRET not in body["launch_command"] and f"--api-key {REDACTED}" in body["launch_command"]
    launch = parse_launch_command(body["launch_command"], sglang_version="0.5.23")
    assert launch.read_error is None and launch.requested["served_model_name"] == "a" * (MAX_COMMAND - 1000)


def facts_with(launch_command: object, **extra: object) -> Facts:
    body = {"version": "0.5.23", "tp_size": 2, "launch_command": launch_command, **extra}
    return Facts(target="http://gpu1:30000", endpoints={"server_info": Endpoint(path="/server_info", status=200, body=body)})


@pytest.mark.parametrize("given", ["raw", "noted"], ids=["a-raw-command-as-a-capture-holds-it", "the-note-the-redactor-left"])
def test_the_normaliser_does_not_read_a_command_over_the_cap_and_says_why(given):
    from pytest_sglang.target.target import Target

    command = big_command() if given == "raw" else redact_mapping({"launch_command": big_command()})["launch_command"]
    started = time.process_time()
    snapshot = normalise(facts_with(command))
    assert time.process_time() - started < 2.0
    assert snapshot.launch_command is None and snapshot.requested is None
    assert snapshot.effective.tp_size == 2  # the rest of /server_info is read as ever
    assert snapshot.launch_command_refused and "over the 262144" in snapshot.launch_command_refused
    target = Target(parse_spec("http://gpu1:30000"), facts_with(command))
    reason = target.launch_unknown_reason()
    assert "launch command" in reason and "not read" in reason and SECRET not in reason
    assert any("not read" in warning for warning in target.warnings)


def test_parse_launch_command_refuses_a_text_over_the_cap_in_one_line_without_echoing_it():
    text = "python -m sglang.launch_server " + big_command()
    started = time.process_time()
    launch = parse_launch_command(text, sglang_version="0.5.23")
    assert time.process_time() - started < 1.0
    assert launch.read_error and "characters long, over the 262144" in launch.read_error
    assert launch.requested == {} and launch.argv == [] and SECRET not in repr(launch) and len(launch.text) < 300
    with pytest.raises(SpecError) as raised:
        launch.require_arguments()
    assert "\n" not in str(raised.value) and "cannot be read" in str(raised.value)
    # an argv list over the cap, too
    argv = parse_launch_command(big_command().split(" "), sglang_version="0.5.23")
    assert argv.read_error and SECRET not in repr(argv)


def test_a_command_with_more_secret_values_than_any_real_one_is_refused_without_showing_them():
    text = "python -m sglang.launch_server --model-path m " + " ".join(f"--api-key sk-many-{i:06d} --unknown-{i}" for i in range(MAX_SECRET_VALUES + 5))
    started = time.process_time()
    launch = parse_launch_command(text, sglang_version="0.5.23")
    assert time.process_time() - started < 2.0
    assert launch.read_error and "secret flags" in launch.read_error and "sk-many-" not in repr(launch)


def test_explain_launch_file_of_one_megabyte_is_one_line_at_once(tmp_path):
    path = tmp_path / "launch.sh"
    path.write_text("python -m sglang.launch_server " + big_command() + "\n")
    started = time.process_time()
    done = subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", "explain", "--launch-file", str(path)], capture_output=True, text=True, timeout=120)
    elapsed = time.process_time() - started
    assert done.returncode == 2 and elapsed < 30  # process start-up included; it took 34 s before
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1
    assert "over the 262144" in done.stderr and SECRET not in done.stderr and "Traceback" not in done.stderr


# ---- one error boundary per host ----------------------------------------------------------------


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> dict:
    """A capture of the bundled llama profile, as JSON (each test edits its own copy)."""
    from pytest_sglang import connect
    from pytest_sglang.render.capture import write_capture

    path = tmp_path_factory.mktemp("captures") / "llama.json"
    with connect(LLAMA) as target:
        write_capture(target, path)
    return json.loads(path.read_text())


def edited(capture: dict, where: Path, edit) -> str:  # type: ignore[no-untyped-def]
    data = json.loads(json.dumps(capture))
    edit(data["facts"])
    where.write_text(json.dumps(data))
    return f"replay:{where.name}"


def set_server_info(value: object):  # type: ignore[no-untyped-def]
    return lambda facts: facts["endpoints"]["server_info"].update(body=value)


def outcomes_by_host(result: pytest.RunResult) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for report in result.reprec.getreports("pytest_runtest_logreport"):  # type: ignore[attr-defined]
        host = report.nodeid.split("[", 1)[1].rstrip("]")
        if report.when == "call" or report.outcome != "passed":
            out.setdefault(host, set()).add(report.outcome)
    return out


SUITE = """
def test_tp(effective):
    assert effective.tp_size == 1

def test_version(sglang):
    assert sglang.version == "0.5.9"
"""


def test_a_capture_whose_server_info_is_a_list_fails_its_own_tests_in_one_line_beside_a_healthy_host(pytester, capture):
    bad = edited(capture, pytester.path / "list.json", set_server_info([1, 2]))
    odd_sm = edited(capture, pytester.path / "sm.json", lambda facts: facts.update(overrides={"sm": "abc"}))
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={bad}", f"--sglang-host={LLAMA}", f"--sglang-host={odd_sm}")
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text
    by_host = outcomes_by_host(result)
    assert by_host[LLAMA] == {"passed"} and by_host[odd_sm] == {"passed"}  # 'sm': 'abc' is passed over with a warning
    assert by_host[bad] == {"failed"}
    result.assert_outcomes(passed=4, errors=2)
    errors = [line for line in result.stdout.str().split("SGLang gate: HOLD")[0].splitlines() if line.startswith(f"{bad}: ")]  # the gate's closing section says it again
    assert len(errors) == 2 and all("/server_info is a JSON list, not an object" in line for line in errors)
    result.stdout.fnmatch_lines([f"sglang: {odd_sm}: WARNING the --sglang-sm override 'abc' is not a compute capability*"])


def test_any_failure_while_normalising_is_one_target_error_naming_the_target(tmp_path, capture, monkeypatch):
    from pytest_sglang import connect
    from pytest_sglang.target import core as target_module

    path = tmp_path / "cap.json"
    path.write_text(json.dumps(capture))

    def broken(facts):  # type: ignore[no-untyped-def]
        raise KeyError("a shape no SGLang answers with")

    monkeypatch.setattr(target_module, "normalise", broken)
    with pytest.raises(TargetError) as raised:
        connect(f"replay:{path}")
    message = str(raised.value)
    assert message.startswith(f"replay:{path}: its configuration could not be normalised (KeyError") and "the other hosts are not affected" in message
    assert raised.value.__traceback__ is not None and raised.value.__cause__ is None and "\n" not in message


@pytest.mark.parametrize("override", ["abc", True, 10**400, [90], {"sm": 90}, 9.5, "", "9.0", "sm_120", 90])
def test_an_sm_override_of_any_type_is_used_or_passed_over_with_a_warning(override):
    facts = facts_with(None).model_copy(update={"overrides": {"sm": override}})
    snapshot = normalise(facts)
    if override in ("9.0", 90):
        assert snapshot.effective.sm == 90
    elif override == "sm_120":
        assert snapshot.effective.sm == 120
    else:
        assert snapshot.effective.sm is None and any("`sm` override" in w for w in snapshot.warnings)


@pytest.mark.parametrize(
    "name, body",
    [("server_info", [1, 2]), ("server_info", "text"), ("server_info", 5), ("model_info", [1]), ("loads", "x"), ("models", {"data": {"x": 1}}), ("models", {"data": "abc"})],
)
def test_endpoint_bodies_of_the_wrong_type_are_one_target_error_or_ignored(name, body):
    facts = facts_with(None)
    endpoints = dict(facts.endpoints)
    endpoints[name] = Endpoint(path=f"/{name}", status=200, body=body)
    facts = facts.model_copy(update={"endpoints": endpoints})
    if name == "server_info":
        with pytest.raises(TargetError, match=r"^http://gpu1:30000: /server_info is a JSON \w+, not an object"):
            normalise(facts)
    else:
        assert normalise(facts).effective.tp_size == 2


# ---- baselines of the wrong shape: differences, not AttributeError ---------------------------------

DOC = {
    "sglang_version": "0.5.23",
    "effective": {"tp_size": {"value": 4, "source": "/server_info tp_size"}, "max_running_requests": {"value": 26, "source": "x", "requested": 26}},
    "server_args": {"tp_size": 4},
    "server_args_source": "/server_info",
    "model": {"architecture": "Qwen3_5MoeForConditionalGeneration"},
    "gpu": {"name": "RTX PRO 6000", "count": 4},
    "launch": {"entrypoint": "python -m sglang.launch_server", "requested": {"tp_size": 4}, "env": {}, "source": "x"},
    "findings": [{"id": "attention.default-mha.v2", "setting": "attention_backend", "severity": "info", "status": "confirmed", "summary": "s"}],
}
WRONG = [[1, 2], "abc", 5, True, 1.5, {"value": [1, 2]}]


def put(doc: dict, path: tuple, value: object) -> dict:
    doc = json.loads(json.dumps(doc))
    where = doc
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    "path",
    [("effective",), ("server_args",), ("model",), ("gpu",), ("launch",), ("findings",), ("launch", "requested"), ("launch", "env"), ("effective", "tp_size"), ("effective", "tp_size", "source"), ("findings", 0), ("findings", 0, "id"), ("server_args_source",)],
    ids=lambda p: ".".join(map(str, p)),
)
@pytest.mark.parametrize("value", WRONG, ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("side", ["baseline", "live"])
def test_a_field_of_the_wrong_type_compares_as_a_difference(path, value, side):
    from pytest_sglang.judge.baseline.compare import changes, summary

    odd = put(DOC, path, value)
    baseline, live = (odd, DOC) if side == "baseline" else (DOC, odd)
    found = changes(baseline, live)
    assert summary(found)
    for change in found:
        change.text()
        json.dumps(change.to_dict(), default=str)
    paths = {d.path for c in found for d in c.members}
    section = ".".join(map(str, path))
    whole = section in ("effective", "server_args", "model", "gpu", "launch", "launch.requested", "launch.env", "findings")
    if whole and not isinstance(value, dict) and not (section == "findings" and isinstance(value, list)):
        assert section in paths  # a section of the wrong type is compared whole: one difference


def test_a_document_that_is_not_an_object_is_one_line_spec_error():
    from pytest_sglang.judge.baseline.compare import changes

    with pytest.raises(SpecError, match="a configuration document is a JSON object, not a list"):
        changes([1, 2], DOC)  # type: ignore[arg-type]


def test_a_baseline_file_with_effective_as_a_list_fails_as_a_difference_not_an_internal_error(pytester):
    pytester.makepyfile("def test_tp(effective):\n    assert effective.tp_size == 1\n")
    written = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={LLAMA}", "--sglang-baseline=base", "--sglang-update-baseline")
    written.assert_outcomes(passed=2)  # the test, and the baseline check
    (file,) = (pytester.path / "base").glob("*.json")
    doc = json.loads(file.read_text())
    doc["effective"] = [1, 2]
    file.write_text(json.dumps(doc))
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={LLAMA}", "--sglang-baseline=base")
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "AttributeError" not in text and "Traceback" not in text
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*effective: [[]1, 2[]] -> (absent)*"])


# ---- usage: a misspelt sim:// profile, skip reasons naming their host -------------------------------


def test_a_misspelt_sim_profile_is_one_usage_error_with_the_close_names(pytester):
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("-p", "no:benchmark", "--sglang-host=sim://llama31-8b-1xh100-0.5.8?api_key=sk-typo-key-123")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1
    assert "unknown simulator profile 'llama31-8b-1xh100-0.5.8' (did you mean sim://llama31-8b-1xh100-0.5.9?)" in errors[0]
    assert "sk-typo-key-123" not in result.stdout.str() + result.stderr.str()
    assert not re.search(r"\d+ (passed|failed|error)", result.stdout.str())  # no test ran, none errored


def test_skip_reasons_name_their_host(pytester, capture):
    def edit(facts: dict) -> None:
        facts["host"] = None
        facts["endpoints"]["server_info"]["body"]["launch_command"] = f"--api-key {SECRET} --served-model-name " + "a" * (MAX_COMMAND + 10)

    host = edited(capture, pytester.path / "nohost.json", edit)
    pytester.makepyfile(
        """
        import pytest

        def test_requested(requested):
            pass

        def test_logs(sglang_logs):
            pass

        @pytest.mark.requires_sglang(">=0.6")
        def test_new(sglang):
            pass

        @pytest.mark.requires_gpus(64)
        def test_many(sglang):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={host}", "-rs")
    result.assert_outcomes(skipped=4)
    reasons = [line for line in result.stdout.lines if line.startswith("SKIPPED")]
    assert len(reasons) == 4 and all(host in line for line in reasons), reasons
    text = result.stdout.str()
    assert SECRET not in text and "over the 262144" in text
