"""The verdict file cannot be planted or left stale, and every output path is written where it
was asked or refused in one line.

As users meet it: a pytest run (pytester; a killed run as a real process) and the
``pytest-sglang`` command. A report path that is a link, a FIFO or a folder, two outputs at one
path, a folder of the path that is a link inside the working directory, and ``-`` where no
standard input is read are each one line before anything runs; a report left by an earlier run
is replaced by a ``hold`` placeholder when the run starts; a report that cannot be written at
the end fails the run. A property test over path shapes holds the writer to: written where
asked and nothing else changed, or one line and nothing changed.
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import fails_if_blocked, property_settings

from pytest_sglang.cli.main import main
from pytest_sglang.plugin.report import PLACEHOLDER_REASON, placeholder_document
from pytest_sglang.render.report.schema import validate

BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
SUITE = "def test_tp(effective):\n    assert effective.tp_size == 4\n"
OPTIONS = ("--sglang-report-json", "--sglang-report-md", "--sglang-report-html")
PROMOTE = json.dumps({"verdict": "promote", "exit_status": 0})


@pytest.fixture(autouse=True)
def never_hangs():
    """A FIFO at a path is refused, never opened: nothing here may block."""
    with fails_if_blocked(120):
        yield


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(SUITE)
    return pytester.runpytest("-p", "no:benchmark", *args)


def error_lines(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines + result.errlines if line.startswith("ERROR")]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line(code: int, err: str, needle: str, status: int = 2) -> None:
    assert code == status, err
    assert err.count("\n") == 1 and err.startswith("pytest-sglang: ") and needle in err, err
    assert "Traceback" not in err


def placeholder(path: Path) -> bool:
    doc = json.loads(path.read_text())
    return validate(doc) == [] and doc["verdict"] == "hold" and doc["reasons"] == [PLACEHOLDER_REASON]


# ---- a pytest run ---------------------------------------------------------------------------------


@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_a_link_or_fifo_at_a_report_path_is_a_usage_error_before_anything_runs(pytester, option, kind):
    pytester.path.joinpath("promote.json").write_text(PROMOTE)
    planted = pytester.path / "sglang-report.out"
    if kind == "link":
        planted.symlink_to("promote.json")
    else:
        os.mkfifo(planted)
    result = run(pytester, f"--sglang-host={BASELINE}", f"{option}=sglang-report.out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    why = "is a symbolic link: refusing to write the report through it" if kind == "link" else "is not a regular file (a FIFO, a named pipe)"
    assert error_lines(result) == [f"ERROR: {option}: {planted} {why}" + error_lines(result)[0].split(why, 1)[1]]
    assert "passed" not in result.stdout.str()  # nothing ran
    assert pytester.path.joinpath("promote.json").read_text() == PROMOTE
    assert planted.is_symlink() if kind == "link" else stat.S_ISFIFO(planted.lstat().st_mode)


@pytest.mark.parametrize(
    "stop, said",
    [
        (["--sglang-host=bogus://x"], "ERROR: --sglang-host scheme 'bogus' is not supported: use one of http://, https://, sim://"),
        ([f"--sglang-host={BASELINE}", "--no-such-option"], "ERROR: usage: *"),
        ([f"--sglang-host={BASELINE}", "--broken-conftest"], "ImportError while loading conftest *"),
    ],
    ids=["bad-host", "unknown-option", "broken-conftest"],
)
def test_a_report_left_by_an_earlier_run_does_not_survive_a_run_stopped_in_start_up(pytester, stop, said):
    """The reports are dealt with as soon as pytest has loaded its plugins: an option it does
    not know, a conftest.py that does not import, or a bad host ends the run later in start-up
    and leaves the placeholder, not the earlier verdict."""
    out = pytester.path / "out"
    out.mkdir()
    for name in ("r.json", "r.md", "r.html"):
        out.joinpath(name).write_text(PROMOTE)
    if "--broken-conftest" in stop:
        pytester.makeconftest("raise ImportError('broken')")
        stop = stop[:-1]
    result = run(pytester, *stop, "--sglang-report-json=out/r.json", "--sglang-report-md=out/r.md", "--sglang-report-html=out/r.html")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.no_fnmatch_line("*passed*")
    assert fnmatch.fnmatch((result.outlines + result.errlines)[0] if "conftest" in said else error_lines(result)[0], said)
    assert placeholder(out / "r.json")
    assert (out / "r.md").read_text().startswith("## SGLang promotion gate: ❌ HOLD\n")
    assert PLACEHOLDER_REASON in (out / "r.md").read_text() and "PROMOTE" not in (out / "r.html").read_text()


def test_a_killed_run_leaves_the_placeholder_not_the_earlier_verdict(tmp_path):
    """A run killed mid-way (SIGKILL: no hook runs) leaves the placeholder the run wrote when
    it started; the earlier run's promote is gone."""
    tmp_path.joinpath("test_slow.py").write_text("import time\n\ndef test_slow(effective):\n    time.sleep(60)\n")
    report = tmp_path / "sglang-report.json"
    report.write_text(PROMOTE)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:benchmark", f"--sglang-host={BASELINE}", "--sglang-report-json=sglang-report.json", "test_slow.py"]
    process = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while report.read_text() == PROMOTE and process.poll() is None:
            assert time.monotonic() < deadline, "the run never replaced the earlier report"
            time.sleep(0.02)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == -signal.SIGKILL
    assert placeholder(report)


def test_a_run_replaces_the_earlier_report_with_its_own(pytester):
    pytester.path.joinpath("sglang-report.json").write_text(PROMOTE)
    result = run(pytester, f"--sglang-host={BASELINE}", "--sglang-report-json=sglang-report.json")
    assert result.ret == 0
    doc = json.loads(pytester.path.joinpath("sglang-report.json").read_text())
    assert validate(doc) == [] and doc["verdict"] == "promote" and doc["counts"]["passed"] == 1


SWAP = """
import os

def test_swap(effective):
    os.remove({name!r})
    {plant}
"""


@pytest.mark.parametrize(
    "swapped, plant",
    [("r.html", "os.mkfifo('r.html')"), ("r.json", "os.symlink('promote.json', 'r.json')")],
    ids=["html-becomes-a-fifo", "json-becomes-a-link"],
)
def test_a_report_that_cannot_be_written_at_the_end_fails_the_run(pytester, swapped, plant):
    """The path passed the start-up check, then changed during the run: the write is refused,
    the run exits 1 with one line naming the file, and the reports that were written say hold
    with that reason (the JSON report is written last, never with a verdict that the other
    reports contradict)."""
    pytester.path.joinpath("promote.json").write_text(PROMOTE)
    pytester.makepyfile(SWAP.format(name=swapped, plant=plant))
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={BASELINE}", "--sglang-report-json=r.json", "--sglang-report-md=r.md", "--sglang-report-html=r.html")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    path = pytester.path / swapped
    problems = [line for line in result.outlines if line.startswith(f"sglang: {pytester.path}")]
    assert len(problems) == 1 and problems[0].startswith(f"sglang: {path} is ")
    written = {name for name in ("r.json", "r.md", "r.html") if name != swapped}
    assert sorted(line for line in result.outlines if "report written to" in line) == sorted(f"sglang: report written to {pytester.path / n}" for n in written)
    md = (pytester.path / "r.md").read_text()
    assert md.startswith("## SGLang promotion gate: ❌ HOLD\n") and "report not written: " in md
    if swapped == "r.json":
        assert pytester.path.joinpath("promote.json").read_text() == PROMOTE
    else:
        doc = json.loads((pytester.path / "r.json").read_text())
        assert validate(doc) == [] and doc["verdict"] == "hold" and doc["exit_status"] == 1
        assert doc["reasons"] == [f"report not written: {problems[0].removeprefix('sglang: ')}"]


@pytest.mark.parametrize(
    "args, said",
    [
        (["--sglang-report-json=out/r", "--sglang-report-html=out/r"], "--sglang-report-json {p}/out/r and --sglang-report-html {p}/out/r name the same file"),
        (["--sglang-report-md=out/r.md", "--sglang-report-json=out/../out/r.md"], "--sglang-report-json {p}/out/../out/r.md and --sglang-report-md {p}/out/r.md name the same file"),
        (["--sglang-report-json=r.xml", "--junitxml=./r.xml"], "--sglang-report-json {p}/r.xml and --junitxml ./r.xml name the same file"),
    ],
    ids=["json-and-html", "two-spellings", "junit"],
)
def test_two_outputs_at_one_path_are_a_usage_error_and_nothing_is_written(pytester, args, said):
    result = run(pytester, f"--sglang-host={BASELINE}", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert error_lines(result) == [f"ERROR: {said.format(p=pytester.path)}: give each its own path"]
    assert sorted(p.name for p in pytester.path.iterdir()) == sorted(["test_two_outputs_at_one_path_are_a_usage_error_and_nothing_is_written.py"])


def test_a_linked_folder_inside_the_working_directory_is_refused(pytester):
    target = pytester.path / "elsewhere"
    target.mkdir()
    pytester.path.joinpath("linkdir").symlink_to("elsewhere")
    for given_as in ("linkdir/p.html", str(pytester.path / "linkdir" / "p.html")):
        result = run(pytester, f"--sglang-host={BASELINE}", f"--sglang-report-html={given_as}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert error_lines(result) == [
            f"ERROR: --sglang-report-html: cannot write the report {pytester.path / 'linkdir' / 'p.html'}: its folder {pytester.path / 'linkdir'} "
            "is a symbolic link, and pytest-sglang follows none in a relative path or below the working directory (give the folder it points to)"
        ]
    assert list(target.iterdir()) == []


def test_your_own_linked_folder_outside_the_working_directory_is_followed(pytester, tmp_path_factory):
    """``~/reports -> /mnt/reports``: a link of your own, outside the working directory."""
    outside = tmp_path_factory.mktemp("outside")
    (outside / "mnt-reports").mkdir()
    (outside / "reports").symlink_to(outside / "mnt-reports")
    result = run(pytester, f"--sglang-host={BASELINE}", f"--sglang-report-md={outside / 'reports' / 'r.md'}")
    assert result.ret == 0
    assert (outside / "mnt-reports" / "r.md").read_text().startswith("## SGLang promotion gate: ✅ PROMOTE\n")


@pytest.mark.parametrize(
    "args, said",
    [
        (["--sglang-report-md=-"], "--sglang-report-md -: give a file path (a report is written to a file, not to standard output)"),
        ([f"--sglang-host={BASELINE}", "--sglang-ssh-known-hosts=-"], "--sglang-ssh-known-hosts -: give the file (standard input is not read)"),
        ([f"--sglang-host={BASELINE}", "--sglang-ssh-key=-"], "--sglang-ssh-key -: standard input ('-') is not read here: give the SSH private key file"),
        (["--sglang-host=http://127.0.0.1:9", "--sglang-ssh=local", "--sglang-logs=file:-"], "--sglang-logs 'file:-': give the path of the SGLang log on the host (standard input is not read)"),
        ([f"--sglang-host={BASELINE}", "--sglang-baseline=-"], "--sglang-baseline -: give the baseline folder (standard input is not read)"),
    ],
    ids=["report-md", "known-hosts", "ssh-key", "logs", "baseline"],
)
def test_a_dash_where_no_standard_input_is_read_is_a_usage_line(pytester, args, said):
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert error_lines(result) == [f"ERROR: {said}"]


# ---- the command line -----------------------------------------------------------------------------


@pytest.fixture
def run_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "RUN.json"
    path.write_text(json.dumps(placeholder_document()))
    return path


def test_report_two_outputs_at_one_path_or_at_the_input_are_refused(run_json, capsys):
    code, out, err = cli(capsys, "report", "RUN.json", "--html", "X", "--md", "X")
    one_line(code, err, "--html X and --md X name the same file: give each its own path")
    code, out, err = cli(capsys, "report", "RUN.json", "--md", "./RUN.json")
    one_line(code, err, "the JSON report RUN.json and --md ./RUN.json name the same file")
    assert sorted(p.name for p in run_json.parent.iterdir()) == ["RUN.json"] and out == ""


def test_report_refuses_a_linked_folder_a_link_and_a_fifo_before_writing_anything(run_json, capsys):
    folder = run_json.parent
    (folder / "elsewhere").mkdir()
    (folder / "linkdir").symlink_to("elsewhere")
    os.mkfifo(folder / "fifo.md")
    (folder / "link.md").symlink_to("RUN.json")
    code, _, err = cli(capsys, "report", "RUN.json", "--html", "ok.html", "--md", "linkdir/p.md")
    one_line(code, err, "cannot write the report linkdir/p.md: its folder linkdir is a symbolic link")
    code, _, err = cli(capsys, "report", "RUN.json", "--html", "ok.html", "--md", "fifo.md")
    one_line(code, err, "fifo.md is not a regular file (a FIFO, a named pipe): refusing to write the report there")
    code, _, err = cli(capsys, "report", "RUN.json", "--html", "ok.html", "--md", "link.md")
    one_line(code, err, "--md link.md name the same file")  # the link leads to the report read
    assert not (folder / "ok.html").exists() and list((folder / "elsewhere").iterdir()) == []


def test_report_reads_standard_input_for_dash(run_json, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(run_json.read_text()))
    code, out, err = cli(capsys, "report", "-", "--md", "out.md")
    assert (code, err) == (0, "") and out == "pytest-sglang: wrote out.md (verdict hold)\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO("[1, 2]"))
    code, out, err = cli(capsys, "report", "-", "--md", "out.md")
    one_line(code, err, "JSON report on standard input is not a pytest-sglang report")
    code, out, err = cli(capsys, "report", "RUN.json", "--md", "-")
    one_line(code, err, "--md -: give a file path (the report is written to a file, not to standard output)")


def test_bench_imports_standard_input_and_refuses_to_write_over_what_it_imports(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = Path(__file__).parent / "data" / "bench_serving" / "sglang-c8-summary.jsonl"
    monkeypatch.setattr(sys, "stdin", io.StringIO(data.read_text()))
    code, out, err = cli(capsys, "bench", "--import", "-", "--json")
    assert code == 0 and json.loads(out)["levels"]
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, out, err = cli(capsys, "bench", "--import", "-")
    one_line(code, err, "standard input: no 'Serving Benchmark Result' block")
    (tmp_path / "in.jsonl").write_text(data.read_text())
    code, out, err = cli(capsys, "bench", "--import", "in.jsonl", "-o", "in.jsonl")
    one_line(code, err, "--import in.jsonl and -o in.jsonl name the same file")
    assert (tmp_path / "in.jsonl").read_text() == data.read_text()
    code, out, err = cli(capsys, "bench", "--import", "in.jsonl", "-o", "-")
    one_line(code, err, "-o -: give a file path")


@pytest.mark.parametrize(
    "args, said",
    [
        (["show", "replay:-"], "replay:-: standard input ('-') is not read here: a capture is a JSON file written by pytest-sglang capture"),
        (["diff", "-", "b.json"], "diff reads no standard input: give A and B as targets"),
        (["capture", BASELINE, "--ssh-key", "-", "-o", "c.json"], "--ssh-key -: standard input ('-') is not read here"),
        (["capture", BASELINE, "-o", "-"], "-o -: give a file path (a capture is written to a file, not to standard output)"),
    ],
    ids=["show-replay", "diff", "ssh-key", "capture-output"],
)
def test_a_dash_where_the_command_reads_no_standard_input_is_one_line(tmp_path, capsys, monkeypatch, args, said):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, *args)
    one_line(code, err, said)


def test_capture_refuses_a_linked_folder_before_reading_the_target(tmp_path, capsys, monkeypatch):
    """Port 9 answers nothing: reaching it would be exit 3. The path is refused first."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "linkdir").symlink_to("elsewhere")
    code, out, err = cli(capsys, "capture", "http://127.0.0.1:9", "-o", "linkdir/c.json", "--timeout", "1")
    one_line(code, err, "cannot write the capture linkdir/c.json: its folder linkdir is a symbolic link")


# ---- the property: written where asked and nothing else changed, or one line ------------------

# An existing folder, a missing one, a link of yours to a folder, a file; as root, also a link
# that belongs to another user (root can give it away).
FOLDERS = ("dir", "new", "link", "file") + (("foreign-link",) if os.geteuid() == 0 else ())
FINALS = ("missing", "file", "link", "fifo", "dir")


@st.composite
def path_shapes(draw: Any) -> dict[str, Any]:
    folders: list[str] = []
    for _ in range(draw(st.integers(0, 3))):
        folders.append("new" if folders and folders[-1] == "new" else draw(st.sampled_from(FOLDERS)))
    return {
        "folders": folders,
        "final": "missing" if folders and folders[-1] == "new" else draw(st.sampled_from(FINALS)),
        # relative; absolute below the working directory; absolute through your own link outside it
        "base": draw(st.sampled_from(("relative", "relative-up", "absolute", "own-link"))),
        "twice": draw(st.booleans()),
    }


def _snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    out: dict[str, tuple[Any, ...]] = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(folder) / name
            mode = path.lstat().st_mode
            key = str(path.relative_to(root))
            if stat.S_ISLNK(mode):
                out[key] = ("link", os.readlink(path))
            elif stat.S_ISDIR(mode):
                out[key] = ("dir",)
            elif stat.S_ISFIFO(mode):
                out[key] = ("fifo",)
            else:
                out[key] = ("file", path.read_bytes())
    return out


def _build(root: Path, shape: dict[str, Any]) -> tuple[str, bool]:
    """The tree for ``shape`` under ``root`` (the working directory is ``root/work``), the path
    to give, and whether the writer must refuse it."""
    work, outside = root / "work", root / "outside"
    work.mkdir()
    outside.mkdir()
    (outside / "target").mkdir()
    (outside / "promote.json").write_text(PROMOTE)
    (root / "own").symlink_to(outside / "target")  # your own link, outside the working directory
    start = root / "own" if shape["base"] == "own-link" else work
    real = outside / "target" if shape["base"] == "own-link" else work
    refused = False
    parts: list[str] = []
    for i, kind in enumerate(shape["folders"]):
        name = f"d{i}"
        parts.append(name)
        real = real / name
        if kind == "dir":
            real.mkdir()
        elif kind in ("link", "foreign-link"):
            (outside / f"l{i}").mkdir()
            real.symlink_to(outside / f"l{i}")
            if kind == "foreign-link":
                os.lchown(real, 54321, 54321)
            real = outside / f"l{i}"
            # Inside the working directory no link is followed; outside it, yours are.
            refused = refused or shape["base"] != "own-link" or kind == "foreign-link"
        elif kind == "file":
            real.write_text("a file")
            refused = True
            break  # nothing can be made below a file
    else:
        final = real / "out.html"
        if shape["final"] == "file":
            final.write_text("an older page")
        elif shape["final"] == "link":
            final.symlink_to(outside / "promote.json")
            refused = True
        elif shape["final"] == "fifo":
            os.mkfifo(final)
            refused = True
        elif shape["final"] == "dir":
            final.mkdir()
            refused = True
    relative = Path(*parts, "out.html")
    given = {"relative": str(relative), "relative-up": str(Path("..", "work", relative))}.get(shape["base"], str(start / relative))
    return given, refused or shape["twice"]


@property_settings()
@given(path_shapes())
def test_every_output_path_is_written_where_asked_or_refused_in_one_line(shape):
    root = Path(tempfile.mkdtemp(prefix="pytest-sglang-paths-"))
    try:
        _check_shape(root, shape)
    finally:
        shutil.rmtree(root)


def _check_shape(root: Path, shape: dict[str, Any]) -> None:
    (root / "RUN.json").write_text(json.dumps(placeholder_document()))
    given, refused = _build(root, shape)
    md = given if shape["twice"] else str(root / "work" / "summary.md")
    before = _snapshot(root)
    here = os.getcwd()
    os.chdir(root / "work")
    try:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["report", str(root / "RUN.json"), "--html", given, "--md", md, "--no-charts"])
    finally:
        os.chdir(here)
    after = _snapshot(root)
    if refused:
        assert code == 2 and err.getvalue().count("\n") == 1 and err.getvalue().startswith("pytest-sglang: "), (shape, err.getvalue())
        assert after == before, shape  # nothing written, nothing made
        return
    assert (code, err.getvalue()) == (0, ""), shape
    page = Path(os.path.realpath(Path(root / "work", given)))
    assert page.read_text().startswith("<!DOCTYPE html>") and Path(md).read_text().startswith("## SGLang promotion gate: ❌ HOLD\n")
    written = {str(page.relative_to(root)), str(Path(md).relative_to(root))}
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert changed <= written | {k for k, v in after.items() if v == ("dir",) and k not in before}, (shape, changed)
