"""Hostile input, round three: files pytest-sglang writes cannot be redirected, and files it reads
are bounded before they are read. Each case as a user meets it: the ``pytest-sglang`` command,
or a pytest run (pytester), and the one line it gives.

Writes: a planted ``.KEY.json.tmp`` or ``.KEY.bench.json.lock`` symbolic link redirects nothing;
a link or a FIFO where a baseline or capture goes is refused; ``init`` keeps what exists unless
``--force`` and does not write under CI. Reads: ``/dev/zero``, a FIFO, a directory, JSON nested
100,000 deep, a 400-digit number, ``nan`` and ``"fast"`` are each one line, at once. A deployment
key too long for a file name gets a readable name with a digest.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import fails_if_blocked

from pytest_sglang.base import files as _files
from pytest_sglang.cli.main import main
from pytest_sglang.judge.baseline.store import BENCH_SUFFIX, MAX_PLAIN_KEY_BYTES, NAME_MAX_BYTES, baseline_file, key_file_stem

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
PROFILE = ROOT / "pytest_sglang" / "simulator" / "profiles" / "qwen35-122b-a10b-4xrtx6000-baseline.json"
KEY = "Qwen3.5-122B-A10B__4xRTX-PRO-6000__sglang-0.5.12__tp4"  # BASELINE's default deployment key
BENCH_DATA = ROOT / "tests" / "data" / "bench_serving"
DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OBJECT = '{"a":' * 100_000 + "1" + "}" * 100_000
HUGE = "1" * 400
SMALL_BENCH = """
def test_small_benchmark(sglang_bench):
    result = sglang_bench.run(concurrency=[2], requests=4, input_len=16, output_len=4, repeats=1, warmup=0)
    sglang_bench.baseline(result, name="small")
"""


@pytest.fixture(autouse=True)
def never_hangs():
    """Every read here must return an error at once."""
    with fails_if_blocked(60):
        yield


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``pytest-sglang ARGS`` in this process: exit code, stdout, stderr."""
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and not re.search(r"\b[A-Z][A-Za-z]*Error\b", err), err  # no bare exception name
    for needle in needles:
        assert needle in err, err


def tree(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root``: file bytes, link targets, kinds."""
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = f"-> {os.readlink(path)}"
        elif path.is_file():
            out[rel] = path.read_bytes()
        else:
            out[rel] = "dir" if path.is_dir() else "other"
    return out


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


# ---- A. writes that cannot be redirected -----------------------------------------------------------


def test_baseline_update_does_not_follow_a_planted_tmp_symlink(tmp_path, capsys):
    """A pull request plants ``.KEY.json.tmp -> ../victim``: the update writes the baseline, the
    victim is untouched (the temporary file has a random name and is created exclusively)."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    folder = tmp_path / "baselines"
    folder.mkdir()
    (folder / f".{KEY}.json.tmp").symlink_to("../victim")
    code, out, err = cli(capsys, "baseline", BASELINE, "--dir", str(folder), "--update")
    assert code == 0, err
    assert victim.read_text() == "precious\n"
    assert json.loads((folder / f"{KEY}.json").read_text())["key"] == KEY
    assert sorted(p.name for p in folder.iterdir()) == sorted([f".{KEY}.json.tmp", f"{KEY}.json"])  # no temporary file left


def test_a_symlink_where_the_baseline_goes_is_refused_in_one_line_and_fails_the_update(pytester, tmp_path):
    """``--sglang-update-baseline`` with the baseline file a link (to a valid baseline elsewhere):
    not written through, said in one line, and the run does not pass."""
    folder = pytester.path / "base"
    pytester.makepyfile("def test_x(effective):\n    assert effective.tp_size == 4\n")
    assert pytester.runpytest("-p", "no:benchmark", f"--sglang-host={BASELINE}", "--sglang-baseline=base", "--sglang-update-baseline").ret == 0
    outside = tmp_path / "outside.json"
    doc = json.loads((folder / f"{KEY}.json").read_text())
    doc["effective"]["tp_size"]["value"] = 8  # so the update has something to write
    outside.write_text(json.dumps(doc))
    before = outside.read_bytes()
    (folder / f"{KEY}.json").unlink()
    (folder / f"{KEY}.json").symlink_to(outside)
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={BASELINE}", "--sglang-baseline=base", "--sglang-update-baseline")
    result.stdout.fnmatch_lines([f"NOT written base/{KEY}.json: * is a symbolic link: refusing to write the baseline through it*"])
    assert result.ret == 1
    assert outside.read_bytes() == before
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def _config_baseline(pytester: pytest.Pytester) -> Path:
    """A config baseline under the key ``qwen35`` (so the benchmark is not skipped for a failed check)."""
    pytester.makeini(f"[pytest]\nsglang_baseline_key =\n    {BASELINE} = qwen35\n")
    pytester.makepyfile(SMALL_BENCH)
    done = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={BASELINE}", "--sglang-baseline=base", "--sglang-update-baseline", "-k", "nothing")
    assert (pytester.path / "base" / "qwen35.json").is_file(), done.stdout.str()
    return pytester.path / "base"


def test_a_bench_baseline_check_does_not_truncate_through_a_symlinked_lock(pytester, tmp_path):
    folder = _config_baseline(pytester)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (folder / f".qwen35{BENCH_SUFFIX}.lock").symlink_to(victim)
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={BASELINE}", "--sglang-baseline=base", "--sglang-bench=smoke", "--sglang-bench-max-lag=1000")
    assert victim.read_text() == "precious\n"
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*.qwen35{BENCH_SUFFIX}.lock is a symbolic link: refusing to write the benchmark baseline lock file through it*"])
    assert "Traceback" not in result.stdout.str()


def test_a_fifo_as_the_bench_baseline_is_one_line_at_once(pytester):
    folder = _config_baseline(pytester)
    fifo(folder / f"qwen35{BENCH_SUFFIX}")
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={BASELINE}", "--sglang-baseline=base", "--sglang-bench=smoke", "--sglang-bench-max-lag=1000")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*benchmark baseline {folder}/qwen35{BENCH_SUFFIX} is not a regular file (a FIFO, a named pipe)*"])


def test_init_keeps_an_existing_reviewed_baseline_unless_force_and_force_keeps_its_policy(tmp_path, capsys):
    out = tmp_path / "suite"
    code, _, err = cli(capsys, "init", BASELINE, "-o", str(out), "--baseline-dir", "baselines")
    assert code == 0, err
    reviewed = out / "baselines" / f"{KEY}.json"
    doc = json.loads(reviewed.read_text())
    doc["policy"] = {"server_args.port": "ignore"}
    reviewed.write_text(json.dumps(doc, indent=2))
    for name in ("test_sglang_config.py", "pytest.ini"):
        (out / name).unlink()  # only the baseline is left: it alone must stop init
    before = tree(out)
    code, _, err = cli(capsys, "init", BASELINE, "-o", str(out), "--baseline-dir", "baselines")
    one_line_error(code, err, f"{reviewed} exists (a reviewed baseline, its policy section included)", "--force")
    assert tree(out) == before  # nothing written: not even the suite files
    code, _, err = cli(capsys, "init", BASELINE, "-o", str(out), "--baseline-dir", "baselines", "--force")
    assert code == 0, err
    assert json.loads(reviewed.read_text())["policy"] == {"server_args.port": "ignore"}


def test_init_keeps_existing_suite_files_unless_force(tmp_path, capsys):
    assert cli(capsys, "init", BASELINE, "-o", str(tmp_path))[0] == 0
    (tmp_path / "pytest.ini").write_text("# mine\n")
    code, _, err = cli(capsys, "init", BASELINE, "-o", str(tmp_path))
    one_line_error(code, err, "exists", "--force")
    assert (tmp_path / "pytest.ini").read_text() == "# mine\n"
    assert cli(capsys, "init", BASELINE, "-o", str(tmp_path), "--force")[0] == 0
    assert "sglang_hosts" in (tmp_path / "pytest.ini").read_text()


@pytest.mark.parametrize("value", ["true", "1", "yes"])
def test_init_refuses_to_write_under_ci(tmp_path, capsys, monkeypatch, value):
    monkeypatch.setenv("CI", value)
    code, _, err = cli(capsys, "init", BASELINE, "-o", str(tmp_path / "suite"), "--baseline-dir", "b")
    one_line_error(code, err, "init is refused when the CI environment variable is set")
    assert not (tmp_path / "suite").exists()


def test_init_output_that_is_a_file_is_one_line_not_file_exists_error(tmp_path, capsys):
    existing = tmp_path / "notes.txt"
    existing.write_text("mine\n")
    code, _, err = cli(capsys, "init", BASELINE, "-o", str(existing))
    one_line_error(code, err, f"-o {existing}: is a file, not a directory")
    assert "FileExistsError" not in err and existing.read_text() == "mine\n"


def test_init_does_not_write_through_a_planted_suite_symlink(tmp_path, capsys):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "suite"
    out.mkdir()
    (out / "pytest.ini").symlink_to(victim)
    code, _, err = cli(capsys, "init", BASELINE, "-o", str(out), "--force")
    one_line_error(code, err, "is a symbolic link: refusing to write the starter file through it")
    assert victim.read_text() == "precious\n"


def test_capture_output_that_is_a_symlink_is_refused(tmp_path, capsys):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "cap.json").symlink_to(victim)
    code, _, err = cli(capsys, "capture", BASELINE, "-o", str(tmp_path / "cap.json"))
    one_line_error(code, err, "is a symbolic link: refusing to write the capture through it")
    assert victim.read_text() == "precious\n"


def test_the_writer_refuses_links_and_special_files_and_keeps_the_mode(tmp_path):
    target = tmp_path / "f.json"
    target.write_text("old")
    target.chmod(0o600)
    _files.write_text(target, "new", what="baseline")
    assert target.read_text() == "new" and (target.stat().st_mode & 0o777) == 0o600
    fresh = tmp_path / "deeper" / "g.json"
    _files.write_text(fresh, "x", what="baseline")
    assert fresh.read_text() == "x" and (fresh.stat().st_mode & 0o777) == 0o644 & ~_umask()
    with pytest.raises(_files.FileExistsRefused):
        _files.write_text(target, "newer", what="baseline", overwrite=False)
    assert target.read_text() == "new"
    fifo(tmp_path / "p.json")
    with pytest.raises(_files.FileError, match=r"p.json is not a regular file \(a FIFO, a named pipe\): refusing to write the baseline there"):
        _files.write_text(tmp_path / "p.json", "x", what="baseline")
    (tmp_path / "d.json").mkdir()
    with pytest.raises(_files.FileError, match=r"is not a regular file \(a directory\)"):
        _files.write_text(tmp_path / "d.json", "x", what="baseline")
    (tmp_path / "dangling.json").symlink_to(tmp_path / "nowhere")
    with pytest.raises(_files.FileError, match="is a symbolic link"):
        _files.write_text(tmp_path / "dangling.json", "x", what="baseline")
    assert not (tmp_path / "nowhere").exists()
    assert not [p for p in tmp_path.rglob("*.tmp")]  # no temporary file left by a refusal


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_the_lock_is_never_truncated_and_refuses_links_and_fifos(tmp_path):
    lock = tmp_path / ".k.lock"
    lock.write_text("left by another tool\n")
    with _files.locked(lock):
        pass
    assert lock.read_text() == "left by another tool\n"
    (tmp_path / ".l.lock").symlink_to(lock)
    with pytest.raises(_files.FileError, match="is a symbolic link"):
        with _files.locked(tmp_path / ".l.lock"):
            pass
    fifo(tmp_path / ".f.lock")
    with pytest.raises(_files.FileError, match=r"is not a regular file \(a FIFO"):
        with _files.locked(tmp_path / ".f.lock"):
            pass


# ---- B. every input bounded before it is read -------------------------------------------------------


def _limited(args: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    """``pytest-sglang ARGS`` in a child with 1 GiB of address space: a reader that streams
    /dev/zero dies of MemoryError there instead of taking the machine down."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", *args], capture_output=True, text=True, timeout=50, preexec_fn=limit)
    return done, time.monotonic() - start


@pytest.mark.parametrize(
    "args, message",
    [
        (["show", "replay:/dev/zero"], "replay:/dev/zero is not a regular file (a character device)"),
        (["bench", "--import", "/dev/zero"], "bench_serving result /dev/zero is not a regular file (a character device)"),
    ],
)
def test_dev_zero_is_refused_at_once_not_read_until_memory_runs_out(args, message):
    done, seconds = _limited(args)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "MemoryError" not in done.stderr
    assert seconds < 30


def test_replay_of_dev_zero_in_a_pytest_run_is_one_line(pytester):
    pytester.makepyfile("def test_x(effective):\n    assert effective.tp_size\n")
    result = pytester.runpytest("-p", "no:benchmark", "--sglang-host=replay:/dev/zero")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*replay:/dev/zero is not a regular file (a character device)*"])


@pytest.mark.parametrize("kind", ["fifo", "directory"])
@pytest.mark.parametrize(
    "reader",
    ["replay", "bench-import", "sim-profile", "launch-file"],
)
def test_a_fifo_or_directory_is_one_line_at_once_for_each_cli_reader(tmp_path, capsys, kind, reader):
    path = tmp_path / "input.json"
    if kind == "fifo":
        fifo(path)
        said = "is not a regular file (a FIFO, a named pipe)"
    else:
        path.mkdir()
        said = "is a directory" if reader == "replay" else "is not a regular file (a directory)"
    args = {
        "replay": ["show", f"replay:{path}"],
        "bench-import": ["bench", "--import", str(path)],
        "sim-profile": ["show", f"sim://{path}"],
        "launch-file": ["explain", "--launch-file", str(path)],
    }[reader]
    start = time.monotonic()
    code, _, err = cli(capsys, *args)
    one_line_error(code, err, said, str(path))
    assert time.monotonic() - start < 30
    assert "does not exist" not in err  # sim:///fifo.json used to say so


@pytest.mark.parametrize("kind", ["fifo", "directory", "deep", "huge-policy-number"])
def test_a_bad_file_in_the_baseline_folder_stops_the_run_in_one_line(pytester, kind):
    folder = pytester.path / "base"
    folder.mkdir()
    odd = folder / "odd.json"
    if kind == "fifo":
        fifo(odd)
        said = "is not a regular file (a FIFO, a named pipe)"
    elif kind == "directory":
        odd.mkdir()
        said = "is not a regular file (a directory)"
    elif kind == "deep":
        odd.write_text(DEEP)
        said = "nests more than 100 arrays/objects deep (line 1)"
    else:
        odd.write_text(json.dumps({"effective": {}, "policy": {"effective.*": {"absolute": int(HUGE)}}}))
        said = ": policy section: a value out of range or of the wrong kind"
    pytester.makepyfile("def test_x(effective):\n    assert effective.tp_size\n")
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={BASELINE}", "--sglang-baseline=base")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*baseline {odd}{'' if said.startswith(':') else ' '}{said}*"])
    text = result.stdout.str() + result.stderr.str()
    assert "RecursionError" not in text and "Traceback" not in text


@pytest.mark.parametrize(
    "reader, message",
    [
        ("replay", "nests more than 100 arrays/objects deep (line 1)"),
        ("sim-profile", "nests more than 100 arrays/objects deep (line 1)"),
        ("bench-import", "input.json:1: nests more than 100 arrays/objects deep"),
    ],
)
def test_json_nested_100000_deep_is_one_line_not_recursion_error(tmp_path, capsys, reader, message):
    path = tmp_path / "input.json"
    path.write_text(DEEP_OBJECT)
    args = {"replay": ["show", f"replay:{path}"], "sim-profile": ["show", f"sim://{path}"], "bench-import": ["bench", "--import", str(path)]}[reader]
    code, _, err = cli(capsys, *args)
    one_line_error(code, err, message)
    assert "RecursionError" not in err


def test_a_deep_bench_baseline_is_one_line(tmp_path):
    from pytest_sglang.judge.bench.compare import BenchBaselineError
    from pytest_sglang.plugin.bench_session import _read

    path = tmp_path / f"k{BENCH_SUFFIX}"
    path.write_text(DEEP)
    with pytest.raises(BenchBaselineError, match="nests more than 100 arrays/objects deep") as raised:
        _read(path)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "levels, said",
    [
        ({"concurrency=8": {"ttft_p99_ms": [int(HUGE)]}}, "level 'concurrency=8': ttft_p99_ms[0] = a number of 400 digits is above 2^53"),
        ({"concurrency=8": {"ttft_p99_ms": [1.0, "fast"]}}, "level 'concurrency=8': ttft_p99_ms[1] = 'fast' is not a number"),
        ({"concurrency=8": {"ttft_p99_ms": [float("nan")]}}, "level 'concurrency=8': ttft_p99_ms[0] = NaN is not a finite number"),
        ({"concurrency=8": {"ttft_p99_ms": 3}}, "level 'concurrency=8': ttft_p99_ms is not a list of numbers"),
        ({"concurrency=8": [1, 2]}, "level 'concurrency=8' is not an object of figures"),
        ([1, 2], "levels is not an object"),
    ],
)
def test_odd_figures_in_a_bench_baseline_are_one_line(tmp_path, levels, said):
    from pytest_sglang.judge.bench.compare import BenchBaselineError
    from pytest_sglang.plugin.bench_session import _read

    path = tmp_path / f"k{BENCH_SUFFIX}"
    path.write_text(json.dumps({"kind": "pytest-sglang bench baseline", "benchmarks": {"small": {"levels": levels}}}))
    with pytest.raises(BenchBaselineError, match=re.escape(f"benchmark 'small': {said}")) as raised:
        _read(path)
    assert "\n" not in str(raised.value)


def _jsonl_line(**changes: object) -> str:
    data = json.loads((BENCH_DATA / "sglang-c8-summary.jsonl").read_text().splitlines()[0])
    data.update(changes)
    return json.dumps(data)


def _summary_text(row: str, value: str) -> str:
    text = (BENCH_DATA / "sglang-c8-summary.txt").read_text()
    changed, n = re.subn(rf"^{re.escape(row)}:\s+\S+", f"{row}: {value}", text, count=1, flags=re.M)
    assert n == 1
    return changed


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(needle))


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("huge.jsonl", lambda: _jsonl_line(completed=int(HUGE)), "huge.jsonl:1: completed = a number of 400 digits is above 2^53"),
        ("huge-extra.jsonl", lambda: _jsonl_line(accept_length=int(HUGE)), "huge-extra.jsonl:1: accept_length = a number of 400 digits is above 2^53"),
        ("huge-rate.jsonl", lambda: _jsonl_line(request_rate=int(HUGE)), "huge-rate.jsonl:1: request_rate = a number of 400 digits is above 2^53"),
        ("fast.jsonl", lambda: _jsonl_line(request_rate="fast"), "fast.jsonl:1: request_rate = 'fast' is not a positive number, inf or 'trace'"),
        ("nan-count.jsonl", lambda: _jsonl_line(completed=float("nan")), "nan-count.jsonl:1: completed = NaN is not a finite number"),
        ("inf-concurrency.jsonl", lambda: _jsonl_line(max_concurrency=float("inf")), "inf-concurrency.jsonl:1: max_concurrency = +Inf is not a finite number"),
        ("deep.jsonl", lambda: _jsonl_line() + "\n" + DEEP_OBJECT, "deep.jsonl:2: nests more than 100 arrays/objects deep"),
        ("nan.txt", lambda: _summary_text("Successful requests", "nan"), "nan.txt:{line}: 'Successful requests' = NaN is not a finite number"),
        ("huge.txt", lambda: _summary_text("Successful requests", HUGE), "huge.txt:{line}: bench_serving row 'Successful requests' has '1111"),
        ("huge-float.txt", lambda: _summary_text("Benchmark duration (s)", HUGE + ".5"), "huge-float.txt:{line}: bench_serving row 'Benchmark duration (s)' has '1111"),
    ],
)
def test_odd_numbers_in_a_bench_serving_import_name_the_file_and_line(tmp_path, capsys, name, content, message):
    text = content()
    path = tmp_path / name
    path.write_text(text)
    if "{line}" in message:
        row = "Successful requests" if "Successful" in message else "Benchmark duration (s)"
        message = message.format(line=_line_of(text, row))
    code, _, err = cli(capsys, "bench", "--import", str(path))
    one_line_error(code, err, message)
    for bare in ("RecursionError", "OverflowError", "ValueError", "TypeError"):
        assert bare not in err


def test_the_reader_caps_size_from_fstat_and_while_reading(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2048)
    with pytest.raises(_files.FileError, match=r"big.json is 2 KiB, over the 1 KiB this file may be"):
        _files.read_text(big, cap_bytes=1024, what=str(big))
    # /proc files say they are empty and then give more: the cap holds while reading.
    with pytest.raises(_files.FileError, match="grew past the 16 bytes this file may be while it was read"):
        _files.read_text("/proc/self/status", cap_bytes=16, what="/proc/self/status")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"a": 1}\n{"b": "\xff"}\n')
    with pytest.raises(_files.FileError, match=r"is not UTF-8 text \(line 2: byte 0xff\)"):
        _files.read_text(bad, cap_bytes=1024, what=str(bad))
    assert _files.read_text(bad, cap_bytes=1024, what=str(bad), errors="replace").endswith('"\ufffd"}\n')
    with pytest.raises(_files.MissingFileError, match="gone.json does not exist"):
        _files.read_text(tmp_path / "gone.json", cap_bytes=1024, what=str(tmp_path / "gone.json"))


def test_the_nesting_scan_skips_strings_and_escapes():
    assert _files.nesting_too_deep('{"a": "[[[[[[[[[[[[[[[[[[[[[\\"[[[[[["}', limit=3) is None
    assert _files.nesting_too_deep("[[[[", limit=3) == 1
    assert _files.nesting_too_deep('"\\\\"\n[[[[', limit=3) == 2  # an escaped backslash ends the string
    text = '"' + '\\"' * 50_000  # an unterminated string of escaped quotes: linear, not quadratic
    start = time.monotonic()
    assert _files.nesting_too_deep(text + "[" * 200, limit=100) is None
    assert time.monotonic() - start < 5


# ---- C. long deployment keys map to safe file names ---------------------------------------------------


def test_short_keys_keep_their_file_names():
    for key in (KEY, "qwen35-prod", "a" * MAX_PLAIN_KEY_BYTES):
        assert key_file_stem(key) == key
        assert baseline_file(Path("b"), key) == Path("b") / f"{key}.json"


@pytest.mark.parametrize("key", ["k" * 300, "x" * (MAX_PLAIN_KEY_BYTES + 1), "model/../../etc/passwd", "é" * 200, ".hidden"])
def test_long_or_unsafe_keys_get_a_readable_name_with_a_digest(key):
    stem = key_file_stem(key)
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*-[0-9a-f]{16}", stem), stem
    assert len(f".{stem}{BENCH_SUFFIX}.lock".encode()) <= NAME_MAX_BYTES
    assert key_file_stem(key) == stem and key_file_stem(key + "2") != stem  # stable, and distinct keys stay apart


def test_a_300_byte_deployment_key_writes_and_matches_its_baseline(pytester):
    long_key = "prod-" + "k" * 295
    pytester.makeini(f"[pytest]\nsglang_baseline_key =\n    {BASELINE} = {long_key}\n")
    pytester.makepyfile("def test_x(effective):\n    assert effective.tp_size == 4\n")
    wrote = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={BASELINE}", "--sglang-baseline=base", "--sglang-update-baseline")
    assert wrote.ret == 0, wrote.stdout.str()
    (written,) = (pytester.path / "base").glob("*.json")
    assert written.name == f"{key_file_stem(long_key)}.json" and len(written.name) < 200
    assert json.loads(written.read_text())["key"] == long_key
    assert "File name too long" not in wrote.stdout.str()
    again = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={BASELINE}", "--sglang-baseline=base")
    again.assert_outcomes(passed=2)
    assert "no host used" not in again.stdout.str()


def test_a_default_key_over_255_bytes_writes_and_matches_its_baseline(pytester, tmp_path):
    profile = json.loads(PROFILE.read_text())
    profile["model"]["model_path"] = "org/" + "Long-Model-Name-" * 9
    profile["gpu"]["name"] = "NVIDIA " + "Very-Long-GPU-" * 10
    path = tmp_path / "long.json"
    path.write_text(json.dumps(profile))
    pytester.makepyfile("def test_x(effective):\n    assert effective.tp_size == 4\n")
    wrote = pytester.runpytest("-p", "no:benchmark", f"--sglang-host=sim://{path}", "--sglang-baseline=base", "--sglang-update-baseline")
    assert wrote.ret == 0, wrote.stdout.str()
    (written,) = (pytester.path / "base").glob("*.json")
    assert len(json.loads(written.read_text())["key"]) > NAME_MAX_BYTES and len(written.name.encode()) <= NAME_MAX_BYTES
    pytester.runpytest("-p", "no:benchmark", f"--sglang-host=sim://{path}", "--sglang-baseline=base").assert_outcomes(passed=2)


def test_nothing_is_left_behind_in_a_copied_folder(tmp_path, capsys):
    """A baseline written twice into a folder holding other files leaves only its file."""
    folder = tmp_path / "b"
    folder.mkdir()
    shutil.copy(PROFILE, folder / "unrelated.txt")
    for _ in range(2):
        assert cli(capsys, "baseline", BASELINE, "--dir", str(folder), "--update")[0] == 0
    assert sorted(p.name for p in folder.iterdir()) == sorted(["unrelated.txt", f"{KEY}.json"])
