"""Hostile files, fuzzed: capture files (``replay:FILE``), baseline files and their policies,
bench_serving imports, and the writers' folders with links, FIFOs and directories planted in
them. Whatever the file holds, pytest-sglang answers or gives one line naming the file (no
traceback, no bare exception name), at once, and writes nothing outside the folder it was given.

Fixed example sets (``derandomize=True``) so CI cannot fail by chance; modest counts so the
module runs in well under 30 s. A deeper, random search:
``FUZZ_FILES_EXAMPLES=2000 pytest tests/test_fuzz_files.py``."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_sglang.base.errors import SGLangError

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
BENCH_DATA = ROOT / "tests" / "data" / "bench_serving"
BARE_EXCEPTION = re.compile(r"\b(?:[A-Z][A-Za-z]*Error|Exception|Traceback)\b")


def settings(examples: int) -> Any:
    """A fixed example set; ``FUZZ_FILES_EXAMPLES=2000`` runs a deeper, random search."""
    deep = "FUZZ_FILES_EXAMPLES" in os.environ
    return hypothesis.settings(
        max_examples=int(os.environ.get("FUZZ_FILES_EXAMPLES", examples)),
        deadline=None,
        derandomize=not deep,
        database=None,
        suppress_health_check=[hypothesis.HealthCheck.too_slow, hypothesis.HealthCheck.data_too_large],
    )


def one_line(message: str) -> None:
    assert message.strip() and "\n" not in message.strip(), message
    assert not BARE_EXCEPTION.search(message), message


# ---- hostile JSON ---------------------------------------------------------------------------------


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


HOSTILE_VALUES = st.one_of(
    st.sampled_from(
        [
            10**400,
            -(10**400),
            float("nan"),
            float("inf"),
            float("-inf"),
            "",
            "fast",
            "nan",
            None,
            True,
            [],
            {},
            "x" * 5000,
            "\x00\u202e\ud7ff",
            "1e999",
            _deep(150),
            {"format": "pytest-sglang-capture/1"},
            "waive until 9999-99-99: later",
            "relative 1e400%",
            "absolute -1",
        ]
    ),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON document a value can be replaced (the root included)."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):
            yield from _paths(v, (*prefix, i))


def _replace(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(doc))
    node = copy
    for step in path[:-1]:
        if not isinstance(node, (dict, list)) or (isinstance(node, list) and not (isinstance(step, int) and step < len(node))) or (isinstance(node, dict) and step not in node):
            return doc  # an earlier replacement took this place away
        node = node[step]
    if isinstance(node, dict) or (isinstance(node, list) and isinstance(path[-1], int) and path[-1] < len(node)):
        node[path[-1]] = new
    return copy


def mutated_json(base: Any, under: tuple[Any, ...] = ()) -> Any:
    """A strategy: ``base`` with up to three places (below ``under``) replaced by hostile
    values, then written as text (NaN and Infinity as Python's json writes them) and perhaps
    broken as bytes."""
    paths = [p for p in _paths(base) if p[: len(under)] == under]

    @st.composite
    def build(draw: Any) -> bytes:
        doc = base
        for _ in range(draw(st.integers(0, 3))):
            doc = _replace(doc, draw(st.sampled_from(paths[1:] or paths)), draw(HOSTILE_VALUES))
        text = json.dumps(doc).encode("utf-8", "surrogatepass")
        how = draw(st.sampled_from(["as-is", "as-is", "as-is", "truncate", "bad-utf8", "bom", "deep-prefix"]))
        if how == "truncate":
            text = text[: draw(st.integers(0, len(text)))]
        elif how == "bad-utf8":
            at = draw(st.integers(0, len(text)))
            text = text[:at] + b"\xff\xfe" + text[at:]
        elif how == "bom":
            text = b"\xef\xbb\xbf" + text
        elif how == "deep-prefix":
            text = b"[" * 5000 + text
        return text

    return build()


_ODD_KINDS = ["fifo", "directory", "dev-zero-link", "dangling-link", "empty"]
# Half the examples are regular files with hostile content, half are hostile kinds of file.
KINDS = st.sampled_from(_ODD_KINDS + ["file"] * len(_ODD_KINDS))


def place(folder: Path, name: str, kind: str, content: bytes) -> Path:
    path = folder / name
    if kind == "file":
        path.write_bytes(content)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "dev-zero-link":
        path.symlink_to("/dev/zero")
    elif kind == "dangling-link":
        path.symlink_to(folder / "nowhere")
    else:
        path.write_bytes(b"")
    return path


def snapshot(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st_ = os.lstat(p)
            rel = str(p.relative_to(root))
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isfile(p):
                out[rel] = ("file", p.read_bytes(), st_.st_mode)
            else:
                out[rel] = ("other", st_.st_mode)
    return out


@contextlib.contextmanager
def bounded(seconds: float) -> Iterator[None]:
    start = time.monotonic()
    yield
    assert time.monotonic() - start < seconds, f"took {time.monotonic() - start:.1f} s"


def run_cli(*args: str) -> tuple[int, str]:
    from pytest_sglang.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, err.getvalue()


# ---- fixtures: one real capture, baseline and live document ----------------------------------------


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from pytest_sglang.judge.baseline import document
    from pytest_sglang.judge.baseline.store import file_content
    from pytest_sglang.render.capture import write_capture
    from pytest_sglang.target.target import connect

    folder = tmp_path_factory.mktemp("real")
    with connect(BASELINE) as target:
        write_capture(target, folder / "cap.json")
        live = document(target)
    capture = json.loads((folder / "cap.json").read_text())
    baseline = file_content(live, "k", None)
    baseline["policy"] = {"server_args.port": "ignore", "effective.max_running_requests": {"relative": 0.1}}
    return {"capture": capture, "live": live, "baseline": baseline}


# ---- captures --------------------------------------------------------------------------------------


def test_any_capture_file_replays_or_is_one_line(real: dict[str, Any]) -> None:
    # Anywhere in the file, or inside the HTTP answers it holds (which the facts model takes as
    # they came, so hostile values there reach the normaliser, the document and explain).
    strategy = st.one_of(mutated_json(real["capture"]), mutated_json(real["capture"], ("facts", "endpoints")))

    @settings(30)
    @hypothesis.given(content=strategy, kind=KINDS)
    def check(content: bytes, kind: str) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            path = place(root, "cap.json", kind, content)
            before = snapshot(root)
            with bounded(20):
                code, err = run_cli("show", f"replay:{path}")
            assert code in (0, 2, 3), err
            if code:
                one_line(err)
                assert str(path) in err or "replay:" in err, err
            assert snapshot(root) == before  # reading writes nothing

    check()


# ---- baseline files and policies ------------------------------------------------------------------------


POLICY_ENTRIES = st.dictionaries(
    st.sampled_from(["*", "effective.*", "server_args.*", "effective.max_running_requests", "server_args.port", "effective.[", "effective.\x00", "effective." + "a" * 300, "nowhere"]),
    st.one_of(
        HOSTILE_VALUES,
        st.sampled_from(["ignore", "absolute 5", "relative 10%", "waive until 2099-01-01: ok", "waive until 2000-01-01: old"]),
        st.fixed_dictionaries({"absolute": HOSTILE_VALUES}),
        st.fixed_dictionaries({"relative": HOSTILE_VALUES}),
        st.fixed_dictionaries({"waive": HOSTILE_VALUES, "until": HOSTILE_VALUES}),
        st.fixed_dictionaries({}, optional={"absolute": HOSTILE_VALUES, "relative": HOSTILE_VALUES, "waive": HOSTILE_VALUES, "until": HOSTILE_VALUES}),
    ),
    max_size=4,
)
POLICY_LINES = st.lists(
    st.one_of(
        st.text(max_size=40),
        st.builds(lambda k, r: f"{k} = {r}", st.sampled_from(["effective.*", "server_args.port", "*"]), st.sampled_from(["ignore", "absolute 1" + "0" * 400, "relative 1e400%", "relative nan%", "absolute -0", "waive until 2099-01-01: x", "waive until 99999-01-01: x"])),
    ),
    max_size=3,
)


def test_any_baseline_file_and_policy_compares_or_is_one_line(real: dict[str, Any]) -> None:
    from pytest_sglang.judge.baseline.compare import Policy, changes, summary
    from pytest_sglang.judge.baseline.store import load_baseline

    strategy = st.one_of(mutated_json(real["baseline"]), mutated_json(real["baseline"], ("effective",)), mutated_json(real["baseline"], ("server_args",)))

    @settings(30)
    @hypothesis.given(content=strategy, policy=POLICY_ENTRIES, use_policy=st.booleans(), lines=POLICY_LINES, kind=KINDS)
    def check(content: bytes, policy: dict[str, Any], use_policy: bool, lines: list[str], kind: str) -> None:
        if use_policy and kind == "file":
            doc = dict(real["baseline"], policy=policy)
            content = json.dumps(doc).encode()
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            path = place(root, "k.json", kind, content)
            before = snapshot(root)
            with bounded(20):
                try:
                    baseline = load_baseline(path)
                    rules = Policy.from_mapping(baseline.get("policy"), "baseline k.json policy") + Policy.from_lines(lines, "ini")
                    found = changes(baseline, real["live"], rules)
                    summary(found)
                    for change in found:
                        change.lines()
                except SGLangError as exc:
                    one_line(str(exc))
            assert snapshot(root) == before

    check()


# ---- bench_serving imports ---------------------------------------------------------------------------

TEXT = (BENCH_DATA / "sglang-c8-summary.txt").read_text()
ROWS = [m.group(1) for m in re.finditer(r"^([A-Z][^:\n]*):\s+\S", TEXT, re.M)]
JSONL = json.loads((BENCH_DATA / "sglang-c8-details.jsonl").read_text().splitlines()[0])
ROW_VALUES = st.one_of(
    st.sampled_from(["nan", "-nan", "inf", "-inf", "1" * 400, "1" * 400 + ".5", "1e999", "-0", "0", "fast", "", "not set", "trace", "1%", "%"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=12),
)


@st.composite
def bench_text(draw: Any) -> bytes:
    text = TEXT
    for _ in range(draw(st.integers(1, 4))):
        row = draw(st.sampled_from(ROWS))
        value = draw(ROW_VALUES)
        text = re.sub(rf"^({re.escape(row)}:)\s+\S.*$", lambda m: f"{m.group(1)} {value}", text, count=1, flags=re.M)
    return text.encode("utf-8", "surrogatepass")


@st.composite
def bench_jsonl(draw: Any) -> bytes:
    data = dict(JSONL)
    keys = sorted(data)
    for _ in range(draw(st.integers(1, 4))):
        key = draw(st.sampled_from(keys + ["request_rate", "max_concurrency"]))
        data[key] = draw(HOSTILE_VALUES)
    line = json.dumps(data)
    if draw(st.booleans()):
        line = line + "\n" + line[: draw(st.integers(0, len(line)))]
    return line.encode("utf-8", "surrogatepass")


def test_any_bench_serving_import_judges_or_names_file_and_line() -> None:
    from pytest_sglang.collect.bench.bench_serving import BenchServingImportError, load_bench_serving
    from pytest_sglang.render.bench import render_result

    @settings(40)
    @hypothesis.given(content=st.one_of(bench_text(), bench_jsonl()), kind=KINDS)
    def check(content: bytes, kind: str) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            path = place(root, "result.jsonl", kind, content)
            before = snapshot(root)
            with bounded(20):
                try:
                    result = load_bench_serving(path)
                    render_result(result)
                    for level in result.levels:
                        level.metrics()
                except BenchServingImportError as exc:
                    one_line(str(exc))
                    assert str(exc).startswith(f"{path}") or str(exc).startswith(f"bench_serving result {path}"), str(exc)
            assert snapshot(root) == before

    check()


# ---- writers: nothing outside the chosen folder ---------------------------------------------------------

KEYS = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["../escape", "/etc/passwd", "..", ".", "a/b", "k" * 300, "é" * 200, "-", ".hidden", "x\x00y"]),
)
PLANTED = st.lists(
    st.tuples(st.sampled_from(["target", "tmp", "lock", "bench"]), st.sampled_from(["outside-link", "fifo", "directory", "dangling-link", "file"])),
    max_size=3,
    unique_by=lambda t: t[0],
)


def test_writers_write_only_their_file_inside_the_folder() -> None:
    from pytest_sglang.judge.baseline.store import BENCH_SUFFIX, baseline_file, write_baseline
    from pytest_sglang.plugin.bench_session import locked

    @settings(40)
    @hypothesis.given(key=KEYS, planted=PLANTED)
    def check(key: str, planted: list[tuple[str, str]]) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "victim").write_text("precious\n")
            folder = root / "baselines"
            folder.mkdir()
            target = baseline_file(folder, key)
            bench = baseline_file(folder, key, BENCH_SUFFIX)
            assert target.parent == folder and bench.parent == folder
            names = {"target": target.name, "tmp": f".{target.name}.tmp", "lock": f".{bench.name}.lock", "bench": bench.name}
            for where, kind in planted:
                p = folder / names[where]
                if kind == "outside-link":
                    p.symlink_to(root / "victim")
                elif kind == "fifo":
                    os.mkfifo(p)
                elif kind == "directory":
                    p.mkdir()
                elif kind == "dangling-link":
                    p.symlink_to(root / "created-outside")
                else:
                    p.write_text("{}")
            outside = {k: v for k, v in snapshot(root).items() if not k.startswith("baselines")}
            inside = snapshot(folder)
            with bounded(10):
                try:
                    write_baseline(target, {"kind": "pytest-sglang baseline", "key": key, "effective": {}})
                except SGLangError as exc:
                    one_line(str(exc))
                try:
                    with locked(folder / names["lock"]):
                        pass
                except SGLangError as exc:
                    one_line(str(exc))
            assert {k: v for k, v in snapshot(root).items() if not k.startswith("baselines")} == outside
            after = snapshot(folder)
            changed = {k for k in set(after) | set(inside) if after.get(k) != inside.get(k)}
            assert changed <= {target.name, names["lock"]}, changed
            assert not [k for k in after if k.endswith(".tmp") and k != names["tmp"]]

    check()


# ---- benchmark baselines ---------------------------------------------------------------------------


def test_any_benchmark_baseline_compares_or_is_one_line() -> None:
    from pytest_sglang.collect.bench.bench_serving import load_bench_serving
    from pytest_sglang.judge.bench.compare import BENCH_BASELINE_KIND, baseline_entry, compare_to_baseline
    from pytest_sglang.plugin.bench_session import _read

    result = load_bench_serving(BENCH_DATA / "sglang-c8-summary.jsonl")
    stored = {"kind": BENCH_BASELINE_KIND, "key": "k", "benchmarks": {"b": json.loads(json.dumps(baseline_entry(result)))}}

    @settings(30)
    @hypothesis.given(content=st.one_of(mutated_json(stored), mutated_json(stored, ("benchmarks", "b", "levels"))), kind=KINDS)
    def check(content: bytes, kind: str) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            path = place(root, "k.bench.json", kind, content)
            before = snapshot(root)
            with bounded(20):
                try:
                    data = _read(path)
                    for entry in data["benchmarks"].values():
                        compare_to_baseline(entry, result)
                except SGLangError as exc:
                    one_line(str(exc))
            assert snapshot(root) == before

    check()
