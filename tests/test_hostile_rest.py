"""Hostile input, round three, the remaining items: each fixed where it happens, with its
regression test and, where a class of inputs is involved, a property.

- ``pytest --sglang-update-baseline tests/`` runs ``tests/`` (the word is no longer the
  option's value); ``=force`` keeps working;
- ``--timeout`` of the command line and ``--sglang-timeout`` take a positive finite number of
  seconds, checked by one validator; ``-1``, ``nan``, ``inf``, ``0`` are one usage line;
- a token count over 2^53 is refused where a frame is read and where a record is built;
- outside text is shortened only by :func:`pytest_sglang.base.secrets.clip` (an AST scan keeps it so),
  and no piece of a key survives a cut at any converted site;
- ``explain --startup-line``, a model's ``config.json`` and the SSH key are read through the
  bounded reader: a FIFO or ``/dev/zero`` is one line at once;
- the registry builds its scrubber once per change, at the next scrub;
- a secret flag's value that starts with ``-`` and credential keys inside a flag's JSON value are
  hidden (the property is in test_fuzz_launch.py);
- the simulator reads a profile's launch command with the linear tokenizer;
- the benchmark's failed-host file is appended without following a link.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support import fails_if_blocked, property_settings

from pytest_sglang.base import files as _files
from pytest_sglang.base import secrets
from pytest_sglang.base.errors import SpecError
from pytest_sglang.cli.main import main, seconds
from pytest_sglang.plugin.baseline import respell_update_option
from pytest_sglang.target.options import MAX_SECONDS, NumberProblem, TargetOptions, checked_number

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pytest_sglang"
SETTINGS = property_settings(suppress_health_check=list(hypothesis.HealthCheck))
QUICK = hypothesis.settings(SETTINGS, max_examples=100) if "ODD_VALUES_EXAMPLES" not in os.environ else SETTINGS
BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
LLAMA = "sim://llama31-8b-1xh100-0.5.9"
RUN = ("-p", "no:benchmark", "-p", "no:cacheprovider")


@pytest.fixture
def never_hangs() -> Iterator[None]:
    """A read that blocks fails the test instead of hanging the run."""
    with fails_if_blocked(30):
        yield


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """``pytest-sglang ARGS`` in this process: exit code (argparse's exit too) and stderr."""
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def one_line(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and not re.search(r"\b[A-Z][A-Za-z]*Error\b", err), err
    for needle in needles:
        assert needle in err, err


# ---- 1. --sglang-update-baseline tests/ -------------------------------------------------------------

SUITE_IN_TESTS = "def test_tp(effective):\n    assert effective.tp_size == 4\n"
# A conftest of tests/ with its own option: it is registered only if tests/ is known to pytest's
# early parse (the initial conftests), as any test path given on the command line is.
CONFTEST_IN_TESTS = "def pytest_addoption(parser):\n    parser.addoption('--from-tests-conftest', action='store_true')\n"


def _two_folders(pytester: pytest.Pytester) -> None:
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_in_tests.py").write_text(SUITE_IN_TESTS)
    (pytester.path / "tests" / "conftest.py").write_text(CONFTEST_IN_TESTS)
    (pytester.path / "elsewhere").mkdir()
    (pytester.path / "elsewhere" / "test_elsewhere.py").write_text("def test_not_asked_for():\n    assert False\n")


def test_update_baseline_followed_by_a_path_runs_that_path_and_writes_the_baseline(pytester: pytest.Pytester) -> None:
    _two_folders(pytester)
    result = pytester.runpytest(*RUN, f"--sglang-host={BASELINE}", "--sglang-baseline=base", "--sglang-update-baseline", "tests/", "--from-tests-conftest")
    result.assert_outcomes(passed=2)  # the test in tests/ and the baseline check; elsewhere/ not collected
    assert "test_not_asked_for" not in result.stdout.str()
    assert len(list((pytester.path / "base").glob("*.json"))) == 1
    # and the check passes against what it wrote, with the path first this time
    pytester.runpytest(*RUN, "tests/", f"--sglang-host={BASELINE}", "--sglang-baseline=base").assert_outcomes(passed=2)


def test_update_baseline_force_keeps_working_under_ci_with_a_path_after_it(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _two_folders(pytester)
    monkeypatch.setenv("CI", "1")
    for spelling in (["--sglang-update-baseline=force"], ["--sglang-update-baseline", "force"]):
        result = pytester.runpytest(*RUN, f"--sglang-host={BASELINE}", "--sglang-baseline=base", *spelling, "tests")
        result.assert_outcomes(passed=2)
    refused = pytester.runpytest(*RUN, f"--sglang-host={BASELINE}", "--sglang-baseline=base", "--sglang-update-baseline", "tests")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["ERROR: --sglang-update-baseline is refused when the CI environment variable is set*"])


def test_update_baseline_with_an_explicit_other_value_is_still_one_usage_line(pytester: pytest.Pytester) -> None:
    _two_folders(pytester)
    result = pytester.runpytest(*RUN, f"--sglang-host={BASELINE}", "--sglang-baseline=base", "--sglang-update-baseline=tests/")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.stderr.lines if line.startswith("ERROR:")] == ["ERROR: --sglang-update-baseline takes no value or =force, not 'tests/'"]


@pytest.mark.parametrize(
    "given, read",
    [
        (["--sglang-update-baseline", "tests/"], ["--sglang-update-baseline=yes", "tests/"]),
        (["-x", "--sglang-update-baseline", "a.py", "b.py"], ["-x", "--sglang-update-baseline=yes", "a.py", "b.py"]),
        (["--sglang-update-baseline", "force", "tests"], ["--sglang-update-baseline", "force", "tests"]),
        (["--sglang-update-baseline=force", "tests"], ["--sglang-update-baseline=force", "tests"]),
        (["--sglang-update-baseline", "-k", "x"], ["--sglang-update-baseline", "-k", "x"]),
        (["tests", "--sglang-update-baseline"], ["tests", "--sglang-update-baseline"]),
        (["--", "--sglang-update-baseline", "tests"], ["--", "--sglang-update-baseline", "tests"]),
    ],
)
def test_the_word_after_a_bare_update_option_is_given_back_as_a_test_path(given: list[str], read: list[str]) -> None:
    assert respell_update_option(given) == read


# ---- 2. --timeout and --sglang-timeout: one validator ------------------------------------------------


@pytest.mark.parametrize(
    "value, said",
    [
        ("-1", "must be more than 0 seconds, not '-1'"),
        ("0", "must be more than 0 seconds, not '0'"),
        ("nan", "must be a finite number of seconds, not 'nan'"),
        ("inf", "must be a finite number of seconds, not 'inf'"),
        ("-inf", "must be a finite number of seconds, not '-inf'"),
        ("1e12", "must be at most 86400 seconds (one day), not '1e12'"),
        ("soon", "must be a number of seconds, not 'soon'"),
    ],
)
@pytest.mark.parametrize("command", [["explain", LLAMA], ["show", LLAMA], ["bench", LLAMA, "--concurrency", "1"]], ids=["explain", "show", "bench"])
def test_cli_timeout_out_of_range_is_one_usage_line_naming_the_option(capsys: pytest.CaptureFixture[str], command: list[str], value: str, said: str) -> None:
    code, err = cli(capsys, *command, f"--timeout={value}")
    one_line(code, err, "argument --timeout: " + said)


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf"])
def test_bench_duration_out_of_range_is_one_usage_line_naming_the_option(capsys: pytest.CaptureFixture[str], value: str) -> None:
    """``--duration`` is checked as ``--timeout`` is, and the line names the option, not a field."""
    code, err = cli(capsys, "bench", LLAMA, "--concurrency", "1", f"--duration={value}")
    one_line(code, err, "argument --duration: ")
    assert "duration_s" not in err


def test_cli_timeout_takes_a_positive_number(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = cli(capsys, "show", LLAMA, "--timeout", "2.5")
    assert code == 0, err


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "0"])
def test_sglang_timeout_says_the_same_as_the_cli_timeout(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile("def test_x(effective):\n    pass\n")
    result = pytester.runpytest(*RUN, f"--sglang-host={LLAMA}", f"--sglang-timeout={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    with pytest.raises(argparse.ArgumentTypeError) as cli_said:
        seconds(value)
    assert [line for line in result.stderr.lines if line.startswith("ERROR:")] == [f"ERROR: --sglang-timeout {cli_said.value}"]


NUMBER_TEXT = st.one_of(
    st.sampled_from(["nan", "-nan", "inf", "-inf", "infinity", "0", "-0", "0.0", "1e400", "-1e-400", "1e-400", "86400", "86400.0001", "1_0", " 5 ", "0x10", "", "٣"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**30), 10**30).map(str),
    st.text(max_size=8),
)


@SETTINGS
@hypothesis.given(text=NUMBER_TEXT)
def test_the_number_check_accepts_only_positive_finite_seconds_and_says_so_in_one_line(text: str) -> None:
    try:
        value = checked_number(text, maximum=MAX_SECONDS)
    except NumberProblem as exc:
        message = str(exc)
        assert message.startswith("must be ") and "\n" not in message and len(message) < 200
        return
    assert isinstance(value, float) and math.isfinite(value) and 0 < value <= MAX_SECONDS


def test_the_library_check_of_timeouts_is_the_same_check() -> None:
    for value, said in ((-1.0, "more than 0 seconds"), (math.nan, "a finite number"), (math.inf, "a finite number"), (0.0, "more than 0 seconds")):
        with pytest.raises(SpecError, match=f"^`timeout` must be {said}"):
            TargetOptions(timeout=value).validate()
    TargetOptions(wait_ready=0.0).validate()  # 0: read at once


# ---- 3. token counts past 2^53 ----------------------------------------------------------------------


def test_a_record_built_with_a_huge_count_is_refused_in_one_line() -> None:
    from pytest_sglang.model.bench import MAX_TOKENS, RequestRecord

    for field in ("input_tokens", "output_tokens"):
        with pytest.raises(ValueError, match=rf"^RequestRecord\.{field} is over 2\^53 \(1329 bits\): a token count is a whole number from 0 to 2\^53$"):
            RequestRecord(0, 0.0, **{field: 10**400})
    record = RequestRecord(0, 0.0, first_token=1.0, end=2.0, output_tokens=MAX_TOKENS)
    assert record.tpot() == pytest.approx(1 / (MAX_TOKENS - 1))
    with pytest.raises(ValueError, match="output_tokens is over 2"):
        record.output_tokens = MAX_TOKENS + 1
    with pytest.raises(ValueError, match="output_tokens is not a whole number"):
        record.output_tokens = 5.0  # type: ignore[assignment]
    record.output_tokens = None  # the server did not say


@SETTINGS
@hypothesis.given(count=st.one_of(st.integers(-(2**70), 2**70), st.integers(0, 2**60).map(lambda n: 2**53 + n), st.just(10**400)))
def test_tpot_never_overflows_on_a_record_the_library_built(count: int) -> None:
    from pytest_sglang.model.bench import RequestRecord

    try:
        record = RequestRecord(0, 0.0, first_token=0.5, end=1.5, output_tokens=count)
    except ValueError as exc:
        assert count < 0 or count > 2**53
        assert "\n" not in str(exc)
        return
    tpot = record.tpot()
    assert tpot is None or (math.isfinite(tpot) and tpot > 0)


@pytest.mark.parametrize("value", [2**53 + 1, 10**400, 1e300, 2.0**60])
def test_a_frame_count_past_2_53_is_refused_where_the_frame_is_read(value: float) -> None:
    from pytest_sglang.collect.bench import load

    with pytest.raises(load._BadFrame, match=r"^a stream frame's usage\.completion_tokens is not a count of tokens: .*, over 2\^53$"):
        load._count_field({"completion_tokens": value}, "completion_tokens", "usage")
    assert load._count_field({"completion_tokens": 2**53}, "completion_tokens", "usage") == 2**53


# ---- 4. outside text is shortened by clip only ------------------------------------------------------

# A cut looks like one of these: a slice from the start (or of the end) with a bound of 4 or
# more characters, put straight into an f-string, joined to an ellipsis, taken of a text a call
# just made (str(), repr(), " ".join(), .strip(), .decode()...), handed to str()/repr(), or the
# "x if len(x) <= N else x[:M]" idiom. A list slice (", ".join(names[:5])) is none of these.
_TEXT_CALLS = {"str", "repr", "join", "strip", "lstrip", "rstrip", "decode", "format", "lower", "upper", "replace"}
# Slices that are not outside text shortened for a reader, each with its reason.
_NOT_A_CUT = {
    ("pytest_sglang/render/capture.py", "stem[:150]"): "a file name made of [A-Za-z0-9._-] only, not a message",
    ("pytest_sglang/collect/bench/load.py", "payload[:1024]"): "bounds repr()'s work on a long frame before clip cuts it to 80 characters",
    ("pytest_sglang/render/report/schema.py", "value[:1024]"): "bounds repr()'s work on a long value before clip cuts it to 100 characters",
}


def _bound(node: ast.Subscript) -> bool:
    piece = node.slice
    if not isinstance(piece, ast.Slice) or piece.step is not None:
        return False

    def size(n: ast.expr | None) -> bool:
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value >= 4
        if isinstance(n, ast.Name):
            return n.id.isupper()
        return isinstance(n, ast.BinOp) and size(n.left)

    if piece.lower is None and piece.upper is not None:
        return size(piece.upper)
    return piece.upper is None and isinstance(piece.lower, ast.UnaryOp) and isinstance(piece.lower.op, ast.USub) and size(piece.lower.operand)


def _called(node: ast.AST, names: set[str]) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else "") in names


def _ellipsis(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and ("..." in node.value or "\u2026" in node.value)


def _len_test(node: ast.AST) -> bool:
    return isinstance(node, ast.Compare) and any(_called(n, {"len"}) for n in ast.walk(node))


def text_cuts(source: str) -> list[tuple[int, str, str]]:
    """Where ``source`` shortens text by slicing: (line, the slice, which shape)."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "shorten" and isinstance(node.value, ast.Name) and node.value.id == "textwrap":
            found.append((node.lineno, "textwrap.shorten", "textwrap"))
        if not (isinstance(node, ast.Subscript) and _bound(node)):
            continue
        parent = parents.get(node)
        shape = None
        if isinstance(parent, ast.FormattedValue):
            shape = "in an f-string"
        elif isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Add) and (_ellipsis(parent.left) or _ellipsis(parent.right)):
            shape = "joined to an ellipsis"
        elif isinstance(node.value, ast.JoinedStr) or _called(node.value, _TEXT_CALLS):
            shape = "of a text just made"
        elif _called(parent, {"str", "repr"}):  # type: ignore[arg-type]
            shape = "handed to str()/repr()"
        else:
            up = parent
            while up is not None and not isinstance(up, (ast.stmt, ast.IfExp)):
                up = parents.get(up)
            if isinstance(up, ast.IfExp) and _len_test(up.test):
                shape = "the len() idiom"
        if shape:
            found.append((node.lineno, ast.unparse(node), shape))
    return found


@pytest.mark.parametrize(
    "source, shapes",
    [
        ("f'{verify[:20]}'", ["in an f-string"]),
        ("x = text[:40] + '...'", ["joined to an ellipsis"]),
        ("x = repr(text[:40]) + '...'", ["handed to str()/repr()"]),
        ("x = ' '.join(str(exc).split())[:200]", ["of a text just made"]),
        ("x = name if len(name) <= 80 else name[:77]", ["the len() idiom"]),
        ("x = a[-300:] + '\u2026'", ["joined to an ellipsis"]),
        ("import textwrap\ntextwrap.shorten(t, 80)", ["textwrap"]),
        ("x = ', '.join(names[:5])", []),
        ("x = f\"{', '.join(ids[:6])}\"", []),
        ("x = rest[:1] in ('|', '>')", []),
        ("x = hashlib.sha256(b).hexdigest()[:16]", []),
        ("x = words[:chosen]", []),
    ],
)
def test_the_cut_scan_finds_each_shape_and_nothing_else(source: str, shapes: list[str]) -> None:
    assert [shape for _, _, shape in text_cuts(source)] == shapes


def test_no_module_shortens_outside_text_but_through_clip() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel == "pytest_sglang/base/secrets.py":
            continue
        for line, piece, shape in text_cuts(path.read_text(encoding="utf-8")):
            if (rel, piece) not in _NOT_A_CUT:
                found.append(f"{rel}:{line}: {piece} ({shape}): shorten outside text with pytest_sglang.base.secrets.clip")
    assert not found, "\n".join(found)


@contextmanager
def registry(*values: str) -> Iterator[None]:
    """A registry of just these secrets for the block (nothing registered process-wide)."""
    saved = secrets.SECRETS
    secrets.SECRETS = secrets.Registry()
    secrets.SECRETS.add(*values)
    try:
        yield
    finally:
        secrets.SECRETS = saved


def _session_problem(text: str) -> str:
    from pytest_sglang.plugin.bench_session import _entry_problem

    return str(_entry_problem({"levels": {text: 1}}))


def _body_decoder(text: str) -> str:
    from pytest_sglang.collect._body import BodyError, _decoder

    try:
        _decoder(f"gzip, {text}", 100)
    except BodyError as exc:
        return exc.detail
    return ""


def _startup_snippet(text: str) -> str:
    from pytest_sglang.base.errors import ParseError
    from pytest_sglang.parse.lines import parse_startup_line

    try:
        parse_startup_line(text)
    except ParseError as exc:
        return str(exc)
    return ""


def _bench_error(text: str) -> str:
    from pytest_sglang.collect.bench.bench_serving import _distinct_errors

    return " ".join(_distinct_errors([text]))


def _site(module: str, name: str) -> Callable[[str], str]:
    def call(text: str) -> str:
        import importlib

        return str(getattr(importlib.import_module(module), name)(text))

    call.__name__ = f"{module}.{name}"
    return call


SITES = [
    _site("pytest_sglang.parse.launch", "_text"),
    _site("pytest_sglang.parse.launch", "_shown"),
    _site("pytest_sglang.parse.listforms", "_shown"),
    _site("pytest_sglang.collect.bench.bench_serving", "_brief"),
    _site("pytest_sglang.collect.bench.bench_serving", "_shown"),
    _site("pytest_sglang.collect.http", "_clip"),
    _session_problem,
    _body_decoder,
    _startup_snippet,
    _bench_error,
]
KEY_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
FILLER = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ,:/_-", max_size=260)


@QUICK
@hypothesis.given(key=st.text(alphabet=KEY_CHARS, min_size=8, max_size=40), before=FILLER, after=FILLER, site=st.sampled_from(SITES))
def test_no_piece_of_a_key_survives_a_cut_at_any_converted_site(key: str, before: str, after: str, site: Callable[[str], str]) -> None:
    """The key stands anywhere around the cut (the filler's length moves it): the message holds
    neither the key nor any piece of it of 6 characters or more."""
    with registry(key):
        shown = site(before + key + after)
    pieces = {key[i : i + secrets.FRAGMENT] for i in range(len(key) - secrets.FRAGMENT + 1)}
    assert not any(piece in shown for piece in pieces), (site.__name__, shown)


# ---- 5. reads that could hang or stream forever --------------------------------------------------------


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.usefixtures("never_hangs")
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_explain_startup_line_of_a_fifo_or_dev_zero_is_one_line_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    path = _fifo(tmp_path / "server.log") if kind == "fifo" else Path("/dev/zero")
    started = time.monotonic()
    code, err = cli(capsys, "explain", "--startup-line", str(path))
    one_line(code, err, f"--startup-line {path} is not a regular file", "server_args=")
    assert time.monotonic() - started < 10


def test_explain_startup_line_from_standard_input_of_dev_zero_is_capped() -> None:
    started = time.monotonic()
    with open("/dev/zero", "rb") as zero:
        done = subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", "explain", "--startup-line", "-"], stdin=zero, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    said = "pytest-sglang: --startup-line -: standard input holds more than the 64 MiB it may be; give the line itself (grep -m1 server_args= LOG)"
    assert done.stderr.strip() == said
    assert time.monotonic() - started < 30


@pytest.mark.usefixtures("never_hangs")
@pytest.mark.parametrize("kind", ["fifo-in-folder", "fifo-file", "link-to-dev-zero"])
def test_a_model_config_that_is_a_fifo_or_dev_zero_is_one_line_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    if kind == "fifo-in-folder":
        (tmp_path / "model").mkdir()
        _fifo(tmp_path / "model" / "config.json")
        given, named = tmp_path / "model", tmp_path / "model" / "config.json"
    elif kind == "fifo-file":
        given = named = _fifo(tmp_path / "config.json")
    else:
        given = named = tmp_path / "config.json"
        given.symlink_to("/dev/zero")
    code, err = cli(capsys, "explain", "--launch", "python -m sglang.launch_server --model-path m", "--model", str(given))
    kind_said = "a character device" if kind == "link-to-dev-zero" else "a FIFO, a named pipe"
    one_line(code, err, f"model config {named} is not a regular file ({kind_said})")


@pytest.mark.usefixtures("never_hangs")
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
@pytest.mark.parametrize("option", ["ssh_key", "ssh_known_hosts"])
def test_an_ssh_key_or_known_hosts_that_is_a_fifo_or_device_is_one_line_before_paramiko_opens_it(tmp_path: Path, kind: str, option: str) -> None:
    path = {"fifo": lambda: _fifo(tmp_path / "id_ed25519"), "dev-zero": lambda: Path("/dev/zero"), "directory": lambda: tmp_path}[kind]()
    with pytest.raises(SpecError) as raised:
        TargetOptions(**{option: str(path)}).validate()  # type: ignore[arg-type]
    message = str(raised.value)
    flag = f"`{option}`"  # the setting's name: each front end gives it as its own flag
    said = {"fifo": "is not a regular file (a FIFO, a named pipe)", "dev-zero": "is not a regular file (a character device)", "directory": "directory"}[kind]
    assert message.startswith(f"{flag} {path}") and said in message and "\n" not in message


@pytest.mark.usefixtures("never_hangs")
def test_an_ssh_key_that_is_a_fifo_stops_a_pytest_run_in_one_line(pytester: pytest.Pytester, tmp_path: Path) -> None:
    key = _fifo(tmp_path / "id_ed25519")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*RUN, "--sglang-ssh-key", str(key))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.stderr.lines if line.startswith("ERROR:")] == [
        f"ERROR: --sglang-ssh-key {key} is not a regular file (a FIFO, a named pipe): give the SSH private key file"
    ]


def test_an_ssh_key_over_the_cap_is_refused_before_paramiko_reads_it(tmp_path: Path) -> None:
    from pytest_sglang.collect.shell.ssh import KEY_CAP_BYTES

    key = tmp_path / "id_rsa"
    with open(key, "wb") as f:
        f.truncate(KEY_CAP_BYTES + 1)  # sparse: no disk used
    with pytest.raises(SpecError, match=r"^`ssh_key` .*id_rsa is 1 MiB, over the 1 MiB this file may be: is it the right file\?$"):
        TargetOptions(ssh_key=str(key)).validate()


# ---- 6. the registry builds its scrubber once per change ---------------------------------------------


def test_adding_secrets_builds_nothing_and_the_next_scrub_builds_once(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    real = secrets._Matcher

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, values):  # type: ignore[no-untyped-def]
            built.append(len(values))
            super().__init__(values)

    monkeypatch.setattr(secrets, "_Matcher", Counting)
    reg = secrets.Registry()
    for i in range(200):
        reg.add(f"sk-lazy-{i:04d}-KEY")
    assert built == []
    text = "a sk-lazy-0007-KEY b sk-lazy-0199-KEY c"
    assert reg.scrub(text) == "a <redacted> b <redacted> c"
    assert reg.scrub(text) == "a <redacted> b <redacted> c"
    assert built == [200]  # once, for the set as it is now
    reg.add("sk-lazy-0007-KEY")  # known already: no change
    reg.scrub(text)
    assert built == [200]
    reg.add("sk-one-more-KEY")
    assert reg.scrub("sk-one-more-KEY") == "<redacted>" and built == [200, 201]


@SETTINGS
@hypothesis.given(
    values=st.lists(st.text(alphabet=KEY_CHARS + "-_", min_size=4, max_size=20), max_size=12),
    text=st.text(alphabet=KEY_CHARS + "-_ ab…", max_size=120),
    split=st.integers(0, 12),
)
def test_a_registry_filled_a_secret_at_a_time_scrubs_as_one_filled_at_once(values: list[str], text: str, split: int) -> None:
    at_once = secrets.Registry()
    at_once.add(*values)
    bit_by_bit = secrets.Registry()
    for i, value in enumerate(values):
        bit_by_bit.add(value)
        if i == split:
            bit_by_bit.scrub(text)  # built in between: rebuilt after the next add
    assert bit_by_bit.scrub(text) == at_once.scrub(text) == secrets._Matcher(frozenset(v for v in values if len(v.strip()) >= 4)).scrub(text) if values else True


# ---- 7. secrets in launch commands: the regressions (the property is test_fuzz_launch.py's) ---------


def test_a_secret_value_starting_with_a_dash_is_hidden_everywhere() -> None:
    from pytest_sglang.model.facts import Endpoint, Facts
    from pytest_sglang.normaliser.snapshot import normalise
    from pytest_sglang.parse.launch import parse_launch_command
    from pytest_sglang.parse.redact import redact_command, redact_mapping

    command = "python -m sglang.launch_server --model-path m --api-key -abc123secret --tp 2"
    assert redact_command(command) == "python -m sglang.launch_server --model-path m --api-key <redacted> --tp 2"
    launch = parse_launch_command(command, sglang_version="0.5.23")
    assert "abc123secret" not in repr(launch) and launch.requested["tp_size"] == 2
    body = redact_mapping({"launch_command": command, "version": "0.5.23"})
    facts = Facts(target="http://gpu1:30000", endpoints={"server_info": Endpoint(path="/server_info", status=200, body=body)})
    assert "abc123secret" not in repr(body) + repr(normalise(facts))
    # a key left out: the next flag is kept as the flag it is
    assert redact_command("--api-key --port 30000") == "--api-key --port 30000"


JSON_ARGS = '{"hf_token": "hf_abcdefgh1234", "api_key": "sk-json-5678", "rope_scaling": {"type": "yarn-x", "factor": 4}, "num_key_value_heads": 8, "pad_token": "<pad>"}'


def test_credential_keys_inside_a_json_flag_value_are_hidden_and_the_rest_kept_as_written() -> None:
    from pytest_sglang.parse.launch import parse_launch_command
    from pytest_sglang.parse.redact import redact_command_all

    command = "python -m sglang.launch_server --model-path m --json-model-override-args " + shlex.quote(JSON_ARGS)
    redacted = redact_command_all(command)
    kept = json.loads(shlex.split(redacted)[-1])
    assert kept == {"hf_token": "<redacted>", "api_key": "<redacted>", "rope_scaling": {"type": "yarn-x", "factor": 4}, "num_key_value_heads": 8, "pad_token": "<pad>"}
    launch = parse_launch_command(command, sglang_version="0.5.23")
    assert "hf_abcdefgh1234" not in repr(launch) and "sk-json-5678" not in repr(launch)
    assert json.loads(launch.requested["json_model_override_args"])["rope_scaling"] == {"type": "yarn-x", "factor": 4}


def test_a_json_value_with_dashes_and_spaces_is_no_longer_read_as_a_command() -> None:
    """It used to be split as a shell command and joined again, its quotes gone."""
    from pytest_sglang.parse.redact import redact_command

    value = '{"rope_scaling": {"type": "yarn-x", "original_max_position_embeddings": 8192}}'
    command = "--json-model-override-args " + shlex.quote(value)
    assert redact_command(command) == command


def test_a_command_inside_a_json_string_has_its_secret_hidden_where_it_stands() -> None:
    from pytest_sglang.parse.redact import redact_command

    value = json.dumps(["sh", "-c", "serve --api-key sk-inner-123456 --tp 2"])
    assert redact_command("--x " + shlex.quote(value)) == "--x " + shlex.quote(json.dumps(["sh", "-c", "serve --api-key <redacted> --tp 2"]))


def test_a_json_value_of_thousands_of_commands_is_read_in_linear_time() -> None:
    from pytest_sglang.parse.redact import redact_command

    value = json.dumps([f"serve --api-key sk-{i:06d}" for i in range(9000)])  # 261 KB
    started = time.process_time()
    out = redact_command("--x " + shlex.quote(value))
    assert time.process_time() - started < 5.0 and "sk-000001" not in out


@pytest.mark.parametrize(
    "name, secret",
    [("hf_token", True), ("apiKey", True), ("x-api-key", True), ("Authorization", True), ("client_secret", True), ("db.password", True), ("token", True),
     ("num_key_value_heads", False), ("max_tokens", False), ("tokenizer", False), ("key_value", False), ("rope_type", False)],
)
def test_which_json_keys_name_a_credential(name: str, secret: bool) -> None:
    from pytest_sglang.parse.redact import is_secret_json_key

    assert is_secret_json_key(name) is secret


# ---- 8. the simulator reads a launch command with the linear tokenizer --------------------------------


@SETTINGS
@hypothesis.given(text=st.text(alphabet="ab -=.'\"\\\n\t", max_size=200).map(lambda t: "python -m sglang.launch_server " + t))
def test_the_simulator_reads_a_profile_s_launch_command_as_shlex_did(text: str) -> None:
    from pytest_sglang.simulator.profile import _argv_of

    try:
        words = shlex.split(text)
    except ValueError:
        with pytest.raises(ValueError):
            _argv_of(text)
        return
    assert _argv_of(text) == " ".join(words[words.index("sglang.launch_server") + 1 :] if "sglang.launch_server" in words else words)


def test_the_simulator_reads_a_megabyte_launch_command_in_linear_time() -> None:
    from pytest_sglang.simulator.profile import _argv_of

    text = "python -m sglang.launch_server " + "\\a" * (1 << 19)
    started = time.process_time()
    assert _argv_of(text) == "a" * (1 << 19)
    assert time.process_time() - started < 5.0  # shlex took minutes


# ---- 9. the failed-host file of the benchmarks --------------------------------------------------------


def _bench_state(folder: Path):  # type: ignore[no-untyped-def]
    from pytest_sglang.plugin.bench import BenchPlugin

    state = BenchPlugin.__new__(BenchPlugin)  # the two methods use these only
    state.failed_hosts = {}
    state._shared = folder
    return state


def test_the_failed_host_file_is_appended_never_through_a_planted_link(tmp_path: Path) -> None:
    shared, outside = tmp_path / "shared", tmp_path / "victim.txt"
    shared.mkdir()
    outside.write_text("keep me\n")
    first = _bench_state(shared)
    target = first._host_file("http://gpu1:30000", "failed")
    target.symlink_to(outside)
    first.mark_failed("http://gpu1:30000", "lint failed")  # refused quietly: the link is left alone
    assert outside.read_text() == "keep me\n" and target.is_symlink()
    assert _bench_state(shared).failure_of("http://gpu1:30000") is None  # nothing read through the link
    target.unlink()
    first.mark_failed("http://gpu1:30000", "lint failed")
    _bench_state(shared).mark_failed("http://gpu1:30000", "baseline failed")  # another worker
    assert target.read_text() == "lint failed\nbaseline failed\n"  # appended, not truncated
    assert _bench_state(shared).failure_of("http://gpu1:30000") == "lint failed"


@pytest.mark.usefixtures("never_hangs")
def test_append_text_refuses_a_fifo_and_a_link_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(_files.FileError, match=r"is not a regular file \(a FIFO, a named pipe\): refusing to write the log there$"):
        _files.append_text(_fifo(tmp_path / "f"), "x\n", what="log")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(_files.FileError, match=r"is a symbolic link: refusing to write the log through it"):
        _files.append_text(tmp_path / "link", "x\n", what="log")
    assert not (tmp_path / "elsewhere").exists()
