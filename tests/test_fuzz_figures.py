"""Every figure is checked where it enters the model: the fuzz tier of hostile numbers.

NaN, +Inf, -Inf, 1e308, 10**400, -1 and strings are planted in every numeric field of every
input this package reads figures from:

- ``/metrics``: the simulator's own answer, served from a loopback server, in every sample the
  benchmark's watch reads (running and queued requests, token usage, the TTFT histogram's
  counts and bounds);
- ``/server_info`` (SGLang 0.5.23's own answer, tests/data), ``/model_info`` and ``/v1/loads``
  (the simulator's), served from a loopback server and read as a target is read, at every
  number in them;
- a benchmark level as the plugin records it (every figure, nested ones too), and the client's
  own request records (times and the server's token counts) its statistics are made from;
- ``sglang.bench_serving`` result files (tests/data/bench_serving: a JSONL line and a printed
  block), at every figure;
- a JSON report written by a real run (once per module), at every number and, for
  ``pytest-sglang report``, at every field with a value of another kind.

Each is either a figure in its field's range, kept as given, or a one-line fault naming the
field and the value; never a traceback or an exception's class name. What is kept holds no
NaN or infinity and dumps as strict JSON (``allow_nan=False``). End to end (``pytester``), a run
whose ``/metrics`` or ``/server_info`` answers such a figure writes every report, is never
``promote``, and says which figure was refused.

CI runs a fixed, modest set of examples per surface (``EXAMPLES``); a deeper, random search:
``ODD_VALUES_EXAMPLES=2000 pytest tests/test_fuzz_figures.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import DATA, Canned, artefact, property_settings

from pytest_sglang.cli.main import main as cli
from pytest_sglang.collect.bench.bench_serving import BenchServingImportError, load_bench_serving
from pytest_sglang.collect.bench.stats import level_result
from pytest_sglang.collect.bench.watch import _MetricsWatch
from pytest_sglang.collect.http import HttpClient, collect_http
from pytest_sglang.model.bench import LevelResult, RequestRecord
from pytest_sglang.model.numbers import MAX_FIGURE, shown, validate_refusing
from pytest_sglang.normaliser.snapshot import normalise
from pytest_sglang.simulator import load_profile
from pytest_sglang.simulator.server import SimServer

# Examples per surface in the fast tier; ODD_VALUES_EXAMPLES asks for a deeper, random search.
EXAMPLES = 40
SETTINGS = property_settings(suppress_health_check=list(hypothesis.HealthCheck), database=None)
SETTINGS = SETTINGS if "ODD_VALUES_EXAMPLES" in os.environ else hypothesis.settings(SETTINGS, max_examples=EXAMPLES)

PROFILE = "qwen35-122b-a10b-4xrtx6000-baseline"
BASELINE = f"sim://{PROFILE}"
CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"

# What is planted, as a Python value (JSON writes NaN and Infinity as Python's json module does).
PLANTED: dict[str, object] = {
    "NaN": math.nan,
    "+Inf": math.inf,
    "-Inf": -math.inf,
    "1e308": 1e308,
    "10**400": 10**400,
    "-1": -1,
    "a string": "many",
    "a number in a string": "12",
}
# No field of any input can hold these: each is always refused.
NEVER_A_FIGURE = {"NaN", "+Inf", "-Inf", "1e308", "10**400", "a string", "a number in a string"}
planted = st.sampled_from(sorted(PLANTED))


def bare_constant(name: str) -> None:
    raise AssertionError(f"a bare {name} in JSON")


def strict_json(value: Any) -> Any:
    """``value`` as JSON any reader parses (no NaN, no Infinity), read back."""
    return json.loads(json.dumps(value, allow_nan=False), parse_constant=bare_constant)


def numbers_in(value: Any) -> Iterator[float]:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from numbers_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from numbers_in(item)


def numeric_paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Where a JSON-like value holds a number (not a bool), as key paths."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from numeric_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from numeric_paths(item, (*path, index))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path


def every_path(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every node of a JSON-like value (the first two items of each list)."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from every_path(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:2]):
            yield from every_path(item, (*path, index))


def planted_at(value: Any, path: tuple[Any, ...], new: object) -> Any:
    copy = json.loads(json.dumps(value))
    node = copy
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return copy


def dotted(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def one_line_naming(message: str, field: str, value: object = None) -> None:
    """One line, naming the field (and the value, for a number), with no exception class name."""
    assert "\n" not in message and "Traceback" not in message, message
    assert not re.search(r"\b[A-Z]\w*(Error|Exception|Operation)\b", message), message
    assert field in message, (field, message)
    if value is not None:
        assert shown(value) in message, (shown(value), message)


# ---- /metrics ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def metrics_answer() -> str:
    """The simulator's own /metrics answer."""
    with SimServer(load_profile(PROFILE)) as server:
        client = HttpClient(server.url, timeout=10)
        try:
            return client.get("/metrics").text
        finally:
            client.close()


@pytest.fixture(scope="module")
def loopback() -> Iterator[Canned]:
    server = Canned()
    yield server
    server.close()


WATCHED = re.compile(r"^(sglang:(?:num_running_reqs|num_queue_reqs|token_usage|time_to_first_token_seconds_bucket))(\{[^}]*\}) (\S+)$", re.M)


def metrics_text(value: object) -> str:
    """A planted value as Prometheus text writes a sample value."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(value)


def watched(url: str) -> _MetricsWatch:
    """The benchmark's /metrics watch, as a level runs it: two samples, then the last reading."""
    watch = _MetricsWatch(url, {}, interval=0.0)
    readings = iter([False, False])
    asyncio.run(watch.run(lambda: next(readings, True)))
    return watch


@SETTINGS
@given(data=st.data(), value=planted.filter(lambda name: name not in ("a number in a string",)))
def test_a_metrics_sample_that_is_no_figure_is_refused_by_name(metrics_answer: str, loopback: Canned, data: Any, value: str) -> None:
    """Prometheus text has no strings ("many" is not a number to it either); a number in a
    string is just a number there."""
    samples = list(WATCHED.finditer(metrics_answer))
    assert len(samples) >= 4  # the three gauges and the TTFT buckets
    sample = data.draw(st.sampled_from(samples))
    planted_value = PLANTED[value]
    text = metrics_text(planted_value)
    bucket = sample[1].endswith("_bucket")
    in_bound = bucket and data.draw(st.booleans()) and value != "+Inf"  # le="+Inf" is the histogram's own last bound
    if in_bound:
        labels = re.sub(r'le="[^"]*"', lambda _: f'le="{text}"', sample[2])
        line = f"{sample[1]}{labels} {sample[3]}"
    else:
        line = f"{sample[1]}{sample[2]} {text}"
    loopback.routes["/metrics"] = (200, metrics_answer.replace(sample[0], line, 1).encode(), 0.0)
    watch = watched(loopback.url)
    # Every planted value is out of a sample's range (a count or a fraction, 0 to 2^53).
    assert len(watch.refused) == 1, watch.refused
    fault = watch.refused[0]
    one_line_naming(fault, f"/metrics {sample[1]}", planted_value)
    load = watch.summary(max_running=48)
    assert load.peak_running is None and load.ttft_histogram == [] and load.samples == 0
    assert load.note is not None and fault in load.note
    level = LevelResult(name="concurrency=4", mode="concurrency", server=load, refused=watch.refused)
    assert strict_json(level.model_dump(mode="json"))["refused"] == [fault]


def test_the_real_metrics_answer_is_read_whole(metrics_answer: str, loopback: Canned) -> None:
    """The control: the same answer as served has no refused figure and gives the level's figures."""
    loopback.routes["/metrics"] = (200, metrics_answer.encode(), 0.0)
    watch = watched(loopback.url)
    assert watch.refused == [] and watch.problem is None
    load = watch.summary(max_running=48)
    assert load.samples == 2 and load.peak_running == 0.0 and load.ttft_histogram


# ---- /server_info, /model_info, /v1/loads -----------------------------------------------------

SIM = load_profile(PROFILE)
LOADS = SIM.loads(running=3, waiting=1, used_tokens=1000, throughput=12.5)
ANSWERS = {
    "/server_info": json.loads(artefact("server_info.json")),
    "/model_info": SIM.model_info(),
    "/v1/loads": LOADS,
}
ANSWER_PATHS = [(endpoint, path) for endpoint, body in ANSWERS.items() for path in numeric_paths(body)]


def read_target(server: Canned, answers: dict[str, Any]) -> Any:
    for endpoint, body in answers.items():
        server.routes[endpoint] = (200, body, 0.0)
    server.routes["/health"] = (200, b"", 0.0)
    client = HttpClient(server.url, timeout=10)
    try:
        return normalise(collect_http(client, target=server.url))
    finally:
        client.close()


@pytest.fixture(scope="module")
def clean_snapshot(loopback: Canned) -> Any:
    return read_target(loopback, ANSWERS)


def test_the_answers_as_served_refuse_nothing(clean_snapshot: Any) -> None:
    assert clean_snapshot.refused == [] and len(ANSWER_PATHS) > 300


@SETTINGS
@given(where=st.sampled_from(ANSWER_PATHS), value=planted)
def test_a_number_in_a_server_answer_that_is_no_figure_is_refused_by_name(loopback: Canned, clean_snapshot: Any, where: tuple[str, tuple[Any, ...]], value: str) -> None:
    endpoint, path = where
    planted_value = PLANTED[value]
    answers = dict(ANSWERS)
    answers[endpoint] = planted_at(ANSWERS[endpoint], path, planted_value)
    snap = read_target(loopback, answers)
    field = f"{endpoint} {dotted(path)}"
    faults = [fault for fault in snap.refused if fault.startswith(f"{field} = ")]
    # A value the normaliser reads into the effective configuration (its source names the field)
    # has that field's range there: -1 max_running_requests, "12" tp_size, are refused too.
    read_as_effective = any(p.source.startswith(field) for p in clean_snapshot.effective.provenance.values())
    if value in NEVER_A_FIGURE - {"a string", "a number in a string"} or (read_as_effective and value != "-1"):
        assert len(faults) == 1, (field, snap.refused)
    if faults:
        one_line_naming(faults[0], field, planted_value)
        assert f"{faults[0]}: refused, not used" in snap.warnings
    else:
        assert snap.refused == [], snap.refused
    # Whatever was refused, nothing that is no figure is in effect, and what reaches a report is strict JSON.
    effective = strict_json(snap.effective.model_dump(mode="json", exclude={"provenance"}))
    assert all(-1 <= n <= MAX_FIGURE for n in numbers_in(effective))
    strict_json(snap.server_args.as_dict())


# ---- a benchmark level's record, and the client's own request records ------------------------


def _records() -> list[RequestRecord]:
    out = []
    for i in range(6):
        start = i * 0.01
        record = RequestRecord(index=i, scheduled=start, sent=start + 0.001, first_token=start + 0.05, end=start + 0.2, chunk_times=[start + 0.05 + k * 0.02 for k in range(8)], input_tokens=64, output_tokens=8)
        out.append(record)
    return out


LEVEL = level_result("concurrency=4", _records(), mode="concurrency", concurrency=4)
LEVEL_RECORD = {
    **LEVEL.model_dump(mode="json"),
    "validity": {"verdict": "valid", "reasons": [], "loop_lag_p99_ms": 0.4, "loop_lag_max_ms": 1.2, "send_delay_p99_ms": 0.3, "send_delay_max_ms": 0.9, "client_cpu": 0.4, "processes": 1, "target_rate": 8.0, "achieved_rate": 7.9},
    "server": {"samples": 3, "peak_running": 4.0, "peak_queue": 0.0, "peak_token_usage": 0.01, "mean_running": 3.5, "max_running_requests": 48, "reached_max_running": False, "ttft_histogram": [[100.0, 2.0], [1e308, 6.0]], "note": None},
    "extra": {"accept_length": 2.5},
    "goodput": 12.0,
    "goodput_fraction": 0.5,
    "rate": 8.0,
}
LEVEL_PATHS = list(numeric_paths(LEVEL_RECORD))


@SETTINGS
@given(path=st.sampled_from(LEVEL_PATHS), value=planted)
def test_a_figure_of_a_benchmark_level_is_in_its_range_or_refused_by_name(path: tuple[Any, ...], value: str) -> None:
    planted_value = PLANTED[value]
    level, refused = validate_refusing(LevelResult, planted_at(LEVEL_RECORD, path, planted_value))
    field = dotted(path)
    bound = path[:2] == ("server", "ttft_histogram") and path[-1] == 0  # a histogram bound: up to 1e308 (the +Inf bucket's)
    if value in NEVER_A_FIGURE - ({"1e308"} if bound else set()):
        assert len(refused) == 1, refused
    if refused:
        one_line_naming(refused[0], field, planted_value)
    else:  # -1 where a figure may be negative (a send delay, an imported extra); 1e308 as a bound
        assert value == "-1" or (bound and value == "1e308")
    dumped = strict_json(level.model_dump(mode="json"))
    assert all(-MAX_FIGURE <= n <= 1e308 for n in numbers_in(dumped))


@SETTINGS
@given(data=st.data(), value=planted.filter(lambda name: name not in ("a string", "a number in a string")))
def test_the_clients_own_records_give_figures_in_range_whatever_their_times(data: Any, value: str) -> None:
    """A request record's times are the client's own clock; its token counts the server's (a
    count past 2^53 is refused where the frame is read). Whatever times a record holds, the
    statistics over them are figures in range, and any refused one is named."""
    records = _records()
    record = data.draw(st.sampled_from(records))
    field = data.draw(st.sampled_from(["scheduled", "sent", "first_token", "end", "chunk_times"]))
    number = float(PLANTED[value]) if not isinstance(PLANTED[value], int) or abs(PLANTED[value]) < 2**1000 else math.inf  # type: ignore[arg-type]
    if field == "chunk_times":
        record.chunk_times[data.draw(st.integers(0, len(record.chunk_times) - 1))] = number
    else:
        setattr(record, field, number)
    level = level_result("concurrency=4", records, mode="concurrency", concurrency=4)
    dumped = strict_json(level.model_dump(mode="json"))
    assert all(0 <= n <= MAX_FIGURE for n in numbers_in({k: v for k, v in dumped.items() if k not in ("validity", "server")}))
    for fault in level.refused:
        assert "\n" not in fault and " = " in fault


# ---- sglang.bench_serving result files -------------------------------------------------------

JSONL = (DATA / "bench_serving" / "sglang-c8-details.jsonl").read_text().splitlines()[0]
JSONL_DATA = json.loads(JSONL)
JSONL_PATHS = [path for path in numeric_paths(JSONL_DATA) if path[0] not in ("server_info", "input_lens", "output_lens", "cached_tokens", "cached_tokens_details")]
TEXT = (DATA / "bench_serving" / "sglang-c8-details.txt").read_text()
BLOCK = TEXT[TEXT.index("=" * 10) :]
ROWS = [m for m in re.finditer(r"^(?P<label>[A-Za-z][^:\n]*):[ \t]+(?P<value>[-+.\w]+)[ \t]*$", BLOCK, re.M) if re.fullmatch(r"[-+]?[\d.]+(?:e[-+]?\d+)?|inf", m["value"])]


def test_the_files_as_given_import(tmp_path: Path) -> None:
    assert len(JSONL_PATHS) > 30 and len(ROWS) > 20
    for text, suffix in ((JSONL, "jsonl"), (BLOCK, "txt")):
        path = tmp_path / f"run.{suffix}"
        path.write_text(text + "\n")
        strict_json(load_bench_serving(path).model_dump(mode="json"))


def imported(tmp_path: Path, text: str, suffix: str) -> tuple[Any, str | None]:
    path = tmp_path / f"run.{suffix}"
    path.write_text(text + "\n")
    try:
        return load_bench_serving(path), None
    except BenchServingImportError as exc:
        return None, str(exc)


@SETTINGS
@given(path=st.sampled_from(JSONL_PATHS), value=planted)
def test_a_figure_of_a_bench_serving_line_is_in_its_range_or_one_line_naming_it(tmp_path_factory: pytest.TempPathFactory, path: tuple[Any, ...], value: str) -> None:
    planted_value = PLANTED[value]
    line = json.dumps(planted_at(JSONL_DATA, path, planted_value))
    tmp = tmp_path_factory.mktemp("jsonl")
    result, message = imported(tmp, line, "jsonl")
    key = path[0] if len(path) == 1 else dotted(path) if path[0] not in ("ttfts", "itls") else f"{path[0]}[{path[1]}]"
    if message is not None:
        assert message.startswith(f"{tmp / 'run.jsonl'}:1: "), message
        assert "\n" not in message and "Traceback" not in message and "Error" not in message, message
        assert key in message, (key, message)
    else:
        # In range for its field: +Inf as the request rate (every request at once), -1 or a
        # number in a string where bench_serving's own keys allow one, or a figure not read.
        assert value in ("+Inf", "-1", "a number in a string", "a string") or path[0] in ("errors",), (path, value)
        strict_json(result.model_dump(mode="json"))


@SETTINGS
@given(row=st.sampled_from(ROWS), value=planted)
def test_a_figure_of_a_printed_result_block_is_in_its_range_or_one_line_naming_it(tmp_path_factory: pytest.TempPathFactory, row: re.Match[str], value: str) -> None:
    text = metrics_text(PLANTED[value]) if not isinstance(PLANTED[value], str) else str(PLANTED[value])
    block = BLOCK[: row.start("value")] + text + BLOCK[row.end("value") :]
    tmp = tmp_path_factory.mktemp("txt")
    result, message = imported(tmp, block, "txt")
    if message is not None:
        assert message.startswith(f"{tmp / 'run.txt'}:"), message
        assert "\n" not in message and "Traceback" not in message and "Error" not in message, message
        assert row["label"] in message, (row["label"], message)
    else:
        # A row that is no figure of its own (kept as a note when it is not a number), +Inf as
        # the request rate, -1 or 12 where the row's range holds it.
        dumped = strict_json(result.model_dump(mode="json"))
        assert value in ("+Inf", "-1", "a number in a string", "a string"), (row["label"], value)
        if value == "a string":
            assert any(note == f"{row['label']}: many" for level in dumped["levels"] for note in level["notes"])


# ---- a JSON report, rendered by pytest-sglang report -----------------------------------------

GATE = """
def test_tp(effective):
    assert effective.tp_size == 4


def test_streams(sglang_bench):
    result = sglang_bench.run(concurrency=[2, 4], requests=4, input_len=16, output_len=4, repeats=1, warmup=0)
    sglang_bench.expect(result, "p99 ttft <= 60000 ms")
"""


def _run(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SGLANG_")) and k != "CI"}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "test_gate.py", *args]
    return subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def real_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real run's JSON report with every part filled: two hosts, a configuration baseline the
    candidate differs from (its groups), the fleet check (its differences and groups), explain
    findings, and a benchmark of two levels with the server's /metrics."""
    work = tmp_path_factory.mktemp("gate")
    (work / "test_gate.py").write_text(GATE)
    (work / "pytest.ini").write_text(f"[pytest]\nsglang_baseline_key =\n    {BASELINE} = seed\n    {CANDIDATE} = seed\n")
    record = _run(work, f"--sglang-host={BASELINE}", "--sglang-baseline=baselines", "--sglang-update-baseline", "-k", "tp")
    assert record.returncode == 0, record.stdout[-2000:]
    gate = _run(work, f"--sglang-host={BASELINE}", f"--sglang-host={CANDIDATE}", "--sglang-baseline=baselines", "--sglang-fleet", "--sglang-bench=smoke", "--sglang-bench-max-lag=1000", "--sglang-report-json=report.json")
    report = json.loads((work / "report.json").read_text(), parse_constant=bare_constant)
    assert gate.returncode == 1 and report["run_checks"][0]["groups"] and any(c.get("groups") for h in report["hosts"] for c in h["checks"]), gate.stdout[-2000:]
    assert any(h["benchmarks"] for h in report["hosts"])
    return report


def report_cli(tmp: Path, document_text: str) -> tuple[int, str]:
    path = tmp / "run.json"
    path.write_text(document_text)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli(["report", str(path), "--html", str(tmp / "page.html"), "--md", str(tmp / "summary.md")])
    return code, err.getvalue()


def test_the_real_report_renders(real_report: dict[str, Any], tmp_path: Path) -> None:
    code, err = report_cli(tmp_path, json.dumps(real_report))
    assert (code, err) == (0, "")


@SETTINGS
@given(data=st.data(), value=planted)
def test_a_number_in_a_report_is_in_its_range_or_one_line_naming_the_file_and_field(real_report: dict[str, Any], tmp_path_factory: pytest.TempPathFactory, data: Any, value: str) -> None:
    path = data.draw(st.sampled_from(list(numeric_paths(real_report))))
    planted_value = PLANTED[value]
    tmp = tmp_path_factory.mktemp("report")
    code, err = report_cli(tmp, json.dumps(planted_at(real_report, path, planted_value)))
    field = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    if value in ("NaN", "+Inf", "-Inf", "10**400"):  # no JSON reader holds these anywhere
        assert code == 2, (field, value)
    if code != 0:
        assert code == 2 and err.startswith(f"pytest-sglang: JSON report {tmp / 'run.json'}"), err
        one_line_naming(err.strip(), field, None if isinstance(planted_value, str) else planted_value)
    else:
        # In range where the schema types the field as a figure (-1 as an exit status or a send
        # delay), or a field of any kind (an effective value, a diff's baseline): rendered as text.
        assert err == "", err
        page = (tmp / "page.html").read_text() + (tmp / "summary.md").read_text()
        assert "NaN" not in page and "Infinity" not in page


OTHER_KINDS = st.sampled_from(["x", 1, 1.5, [], {}, None, True, ["x"], {"x": "y"}, [{}], [1]])


@SETTINGS
@given(data=st.data(), odd=OTHER_KINDS)
def test_a_value_of_another_kind_anywhere_in_a_report_renders_or_is_one_line_naming_the_field(real_report: dict[str, Any], tmp_path_factory: pytest.TempPathFactory, data: Any, odd: object) -> None:
    """The wrong-type variants a schema check can let through (a string where an object is
    expected, ``checks[].groups`` as a number, ...): rendered, or refused in one line that names
    the file and the field, never ``AttributeError: 'str' object has no attribute 'get'``."""
    path = data.draw(st.sampled_from(list(every_path(real_report))[1:]))
    tmp = tmp_path_factory.mktemp("kinds")
    code, err = report_cli(tmp, json.dumps(planted_at(real_report, path, odd)))
    if code != 0:
        field = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
        assert code == 2 and err.startswith(f"pytest-sglang: JSON report {tmp / 'run.json'}"), err
        assert "\n" not in err.strip() and "Traceback" not in err
        assert not re.search(r"\b[A-Z]\w*(Error|Exception|Operation)\b", err), err
        # The problem is at the field, inside it, or where a list or object holding it is typed.
        assert any(field.startswith(place) or place.startswith(field) for place in re.findall(r"\$[^\s:=]*", err)), (field, err)


# ---- end to end: a run whose server answers a figure that is none ------------------------------


BENCH = """
def test_streams(sglang_bench):
    result = sglang_bench.run(concurrency=[2], requests=4, input_len=16, output_len=4, repeats=1, warmup=0)
    sglang_bench.expect(result, "p99 ttft <= 60000 ms")
"""


@pytest.fixture
def odd_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A simulator in this process whose answers can be made odd: ``plant(metrics=TEXT)`` puts
    TEXT as the value of sglang:num_running_reqs, ``plant(field=NAME, value=JSON)`` puts JSON
    text as internal_states[0].NAME of /server_info."""
    from pytest_sglang.simulator import server as sim_server

    planted: dict[str, str] = {}
    real_metrics = sim_server.metrics_text
    real_info = sim_server.Simulator._server_info

    def metrics(*args: Any, **kwargs: Any) -> str:
        text = real_metrics(*args, **kwargs)
        if "metrics" in planted:
            text = re.sub(r"^(sglang:num_running_reqs\{[^}]*\}) \S+$", lambda m: f"{m[1]} {planted['metrics']}", text, flags=re.M)
        return text

    def info(self: Any, request: Any) -> Any:
        reply = real_info(self, request)
        if "field" not in planted:
            return reply
        text = json.dumps(json.loads(reply.body)).replace(f'"{planted["field"]}": ', f'"{planted["field"]}": {planted["value"]}, "was_{planted["field"]}": ', 1)
        return sim_server.Reply(200, text.encode(), "application/json")

    monkeypatch.setattr(sim_server, "metrics_text", metrics)
    monkeypatch.setattr(sim_server.Simulator, "_server_info", info)
    with SimServer(load_profile(PROFILE)) as server:
        server.plant = lambda **kw: planted.update(kw)  # type: ignore[attr-defined]
        yield server


def gate_run(pytester: pytest.Pytester, url: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    pytester.makepyfile(test_gate=BENCH)
    result = pytester.runpytest_subprocess(
        f"--sglang-host={url}", "--sglang-bench=smoke", "--sglang-bench-max-lag=1000", "-p", "no:cacheprovider",
        "--sglang-report-json=out/r.json", "--sglang-report-html=out/r.html", "--sglang-report-md=out/r.md",
    )
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and "Error:" not in out, out[-3000:]
    assert {p.name for p in (pytester.path / "out").iterdir()} >= {"r.json", "r.html", "r.md"}
    return result, json.loads((pytester.path / "out" / "r.json").read_text(), parse_constant=bare_constant)


@pytest.mark.parametrize(("text", "said"), [("NaN", "NaN is not a finite number"), ("+Inf", "+Inf is not a finite number"), ("1e308", "1e+308 is above 2^53")])
def test_a_metrics_answer_that_is_no_figure_during_a_benchmark_is_one_line_and_never_promote(pytester: pytest.Pytester, odd_server: Any, text: str, said: str) -> None:
    odd_server.plant(metrics=text)
    result, report = gate_run(pytester, odd_server.url)
    fault = f"/metrics sglang:num_running_reqs = {said}"
    result.stdout.fnmatch_lines(["*SGLang figures refused*", f"{odd_server.url}: concurrency=2: {fault}"])
    assert result.ret == 0 and report["exit_status"] == 0  # the test itself passed: its threshold is the client's TTFT
    assert report["verdict"] == "inconclusive" and report["hosts"][0]["verdict"] == "inconclusive"
    assert f"figure refused: {fault} (benchmark test_streams, concurrency=2)" in report["hosts"][0]["reasons"]
    level = report["hosts"][0]["benchmarks"][0]["levels"][0]
    assert level["refused"] == [fault] and level["server"]["peak_running"] is None
    assert fault in (pytester.path / "out" / "r.md").read_text() and "Not promotable" in (pytester.path / "out" / "r.html").read_text()


def test_a_server_info_figure_that_is_no_figure_is_one_line_and_never_promote(pytester: pytest.Pytester, odd_server: Any) -> None:
    odd_server.plant(field="effective_max_running_requests_per_dp", value="NaN")
    pytester.makepyfile(test_gate="def test_tp(effective):\n    assert effective.tp_size == 4\n")
    result = pytester.runpytest_subprocess(f"--sglang-host={odd_server.url}", "-p", "no:cacheprovider", "--sglang-report-json=out/r.json", "--sglang-report-html=out/r.html")
    fault = "/server_info internal_states[0].effective_max_running_requests_per_dp = NaN is not a finite number"
    result.stdout.fnmatch_lines([f"sglang: {odd_server.url}: WARNING {fault}: refused, not used"])
    report = json.loads((pytester.path / "out" / "r.json").read_text(), parse_constant=bare_constant)
    assert result.ret == 0 and report["verdict"] == "inconclusive"
    assert f"figure refused: {fault}" in report["hosts"][0]["reasons"]
    # The value is not in effect: the next source (/v1/loads) gives it, and says what was passed over.
    effective = report["hosts"][0]["effective"]["max_running_requests"]
    assert effective["value"] == 48 and effective["source"] == "/v1/loads loads[0].max_running_requests" and fault in effective["note"]
