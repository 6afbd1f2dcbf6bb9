"""Importing ``sglang.bench_serving`` results, as users will rely on them.

Two kinds of data: blocks other people printed and published (``data/corpus/bench_serving/``,
copied as found), and the printed output and ``--output-file`` JSONL of the real SGLang 0.5.23
``bench_serving`` run against the bundled simulator (``data/bench_serving/``; the commands are in
``data/README.md``). What is proved: the figures people quote come out under the right names,
no printed row is lost, text and JSONL of one run agree, percentiles recomputed from the
per-request details equal bench_serving's own, ``Infinity`` is read, and broken input gives one
line naming the file and line.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_sglang.base.errors import SpecError
from pytest_sglang.collect.bench.bench_serving import (
    BenchServingImportError,
    load_bench_serving,
    parse_jsonl,
    parse_result_text,
    snake,
)
from pytest_sglang.judge.bench.expect import judge
from pytest_sglang.model.bench import BenchResult, LevelResult

DATA = Path(__file__).parent / "data"
CORPUS = sorted((DATA / "corpus" / "bench_serving").glob("*.txt"))
REAL = DATA / "bench_serving"
REAL_TEXTS = sorted(REAL.glob("*.txt"))
REAL_JSONL = sorted(REAL.glob("*.jsonl"))
ROW = re.compile(r"^\s*(?P<label>[A-Za-z][^:]*?):\s+(?P<value>\S.*?)\s*$")


def test_the_data_is_all_there() -> None:
    assert [p.name for p in CORPUS] == [f"0{i}.txt" for i in range(1, 7)]
    assert len(REAL_TEXTS) == len(REAL_JSONL) == 6
    assert {p.stem for p in REAL_TEXTS} == {p.stem for p in REAL_JSONL}


def _numbers(value: Any) -> list[float]:
    """Every number anywhere in a dumped model."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return []


def _block_rows(text: str) -> list[tuple[str, str]]:
    """The 'Label: value' rows between each block's header and closing line, read naively."""
    rows, inside = [], False
    for line in text.splitlines():
        if "Serving Benchmark Result" in line:
            inside = True
        elif inside and re.fullmatch(r"=+\s*", line):
            inside = False
        elif inside and (match := ROW.match(line)):
            rows.append((match["label"], match["value"]))
    return rows


def _accounted(result: BenchResult, label: str, value: str) -> bool:
    """A printed row's value is somewhere in the import: a field, a statistic, extra, a note, settings."""
    dumped = result.model_dump()
    notes = " ".join(note for level in result.levels for note in level.notes)
    if value in {"inf", "not set", "trace"}:
        return value in notes or "inf" in notes or all(level.concurrency is None for level in result.levels)
    if label == "Backend":
        backends = result.settings.get("backends")
        return value == result.settings.get("backend") or (isinstance(backends, list) and value in backends)
    try:
        number = float(value.rstrip("%"))
    except ValueError:
        return f"{label}: {value}" in notes
    return any(math.isclose(number, n, rel_tol=1e-9, abs_tol=1e-9) or math.isclose(number / 100, n) for n in _numbers(dumped))


# --- the corpus -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_every_printed_row_of_the_corpus_is_imported(path: Path) -> None:
    result = load_bench_serving(path)
    assert result.source == "bench_serving"
    assert len(result.levels) == 1
    level = result.levels[0]
    assert level.mode == "imported"
    assert level.completed > 0 and level.duration_s > 0
    rows = _block_rows(path.read_text())
    assert len(rows) >= 30
    missing = [row for row in rows if not _accounted(result, *row)]
    assert not missing
    # Round trip: what a report or baseline writes reads back the same (no inf or NaN inside).
    assert BenchResult.model_validate_json(result.model_dump_json()) == result


def test_figures_users_quote_from_the_qwen35_cookbook_block() -> None:
    level = load_bench_serving(DATA / "corpus" / "bench_serving" / "01.txt").levels[0]
    assert level.ttft.median == 208.46
    assert level.ttft.mean == 190.40 and level.ttft.p99 == 261.27
    assert level.ttft.p90 is None  # not printed by that version, not invented
    assert level.e2e.p99 == 4216.52 and level.e2e.p90 == 3749.34
    assert level.itl.max == 58.03 and level.tpot.median == 3.79
    assert level.extra["accept_length"] == 3.12
    assert level.extra["itl_p95_ms"] == 6.65
    assert level.extra["total_generated_tokens_retokenized"] == 4211
    assert level.extra["peak_output_token_throughput"] == 289.00
    assert level.extra["concurrency"] == 1.00
    assert (level.concurrency, level.rate, level.name) == (1, None, "concurrency=1")
    assert (level.completed, level.requests, level.input_tokens, level.output_tokens) == (10, 10, 6101, 4220)
    assert (level.request_throughput, level.output_throughput, level.total_throughput) == (0.53, 222.84, 545.00)
    assert level.duration_s == 18.94 and level.peak_concurrency == 3
    metrics = level.metrics()
    assert metrics["ttft_median_ms"] == 208.46 and metrics["accept_length"] == 3.12
    assert any("inf" in note for note in level.notes)


def test_corpus_oddities_padding_overflow_fences_and_newer_rows() -> None:
    glm = load_bench_serving(DATA / "corpus" / "bench_serving" / "05.txt")
    level = glm.levels[0]
    assert glm.settings["backend"] == "sglang-oai"
    assert level.e2e.mean == 1191094.40 and level.itl.max == 1176618.49  # values wider than the column
    assert level.concurrency == 512 and level.extra["accept_length"] == 3.25
    newer = load_bench_serving(DATA / "corpus" / "bench_serving" / "06.txt").levels[0]
    assert newer.ttft.p90 == 30004.90 and newer.tpot.p90 == 248.12 and newer.itl.p90 == 283.80
    assert newer.extra["ttft_p95_ms"] == 34290.75 and newer.extra["e2e_p95_ms"] == 1830142.27
    vision = load_bench_serving(DATA / "corpus" / "bench_serving" / "02.txt").levels[0]
    assert vision.extra["total_input_vision_tokens"] == 0 and vision.e2e.p99 is None


def test_thresholds_judge_an_imported_level() -> None:
    result = load_bench_serving(DATA / "corpus" / "bench_serving" / "01.txt")
    assert judge(result, ["p99 ttft <= 300 ms", "accept_length >= 3"]).ok
    assert not judge(result, ["median ttft <= 200 ms"]).ok


# --- the real 0.5.23 outputs ------------------------------------------------------------------


def _raw_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("path", REAL_TEXTS, ids=lambda p: p.name)
def test_real_printed_output_with_its_log_noise(path: Path) -> None:
    text = path.read_text()
    assert "benchmark_args=Namespace(" in text  # the noise around the block is there
    result = load_bench_serving(path)
    assert len(result.levels) == text.count("Serving Benchmark Result")
    missing = [row for row in _block_rows(text) if not _accounted(result, *row)]
    assert not missing
    for level in result.levels:
        assert level.completed == 50 and level.ttft.p90 is not None and level.itl.max is not None
        assert "itl_p95_ms" in level.extra and "e2e_p95_ms" in level.extra


@pytest.mark.parametrize("path", REAL_JSONL, ids=lambda p: p.name)
def test_real_jsonl_matches_its_printed_block(path: Path) -> None:
    """The same run read both ways gives the same figures, to the two decimals printed."""
    from_json = load_bench_serving(path)
    from_text = load_bench_serving(path.with_suffix(".txt"))
    assert [lv.name for lv in from_json.levels] == [lv.name for lv in from_text.levels]
    for j, t in zip(from_json.levels, from_text.levels):
        for name, printed in t.metrics().items():
            if name == "itl_max_ms" and "details" not in path.name:
                continue  # bench_serving prints the max ITL but does not write it out
            assert name in j.metrics(), name
            assert abs(j.metrics()[name] - printed) <= 0.0051 + 1e-9 * abs(printed), name
        assert (j.concurrency, j.rate, j.completed, j.input_tokens, j.output_tokens) == (
            t.concurrency, t.rate, t.completed, t.input_tokens, t.output_tokens,
        )  # fmt: skip
    assert from_json.sglang_version == "0.5.12"  # what the simulated server says it is
    assert from_json.model == "qwen3.5-122b-a10b"


@pytest.mark.parametrize("path", [p for p in REAL_JSONL if "details" in p.name], ids=lambda p: p.name)
def test_recomputed_percentiles_equal_bench_servings_own(path: Path) -> None:
    result = load_bench_serving(path)
    for raw, level in zip(_raw_lines(path), result.levels):
        assert level.requests == len(raw["errors"]) == 50 and level.failed == 0
        for family in ("ttft", "itl"):
            stat = getattr(level, family)
            for part in ("mean", "median", "p90", "p99"):
                assert math.isclose(getattr(stat, part), raw[f"{part}_{family}_ms"], rel_tol=1e-9), (family, part)
        assert level.itl.max == pytest.approx(max(g for gaps in raw["itls"] for g in gaps) * 1000)
        assert level.itl.count == sum(len(gaps) for gaps in raw["itls"])
        assert any("recomputed" in note for note in level.notes)


def test_summary_only_jsonl_uses_the_summary_keys() -> None:
    path = REAL / "sglang-c8-summary.jsonl"
    raw = _raw_lines(path)[0]
    assert "ttfts" not in raw
    level = load_bench_serving(path).levels[0]
    assert level.ttft.p99 == raw["p99_ttft_ms"] and level.e2e.p90 == raw["p90_e2e_latency_ms"]
    assert level.itl.max is None  # bench_serving's JSON has no max ITL and there is nothing to recompute it from
    assert level.extra["ttft_std_ms"] == raw["std_ttft_ms"]
    assert not any("recomputed" in note for note in level.notes)


def test_infinity_rate_and_a_finite_rate() -> None:
    text = (REAL / "sglang-c8-details.jsonl").read_text()
    assert '"request_rate": Infinity' in text
    level = parse_jsonl(text, origin="x.jsonl").levels[0]
    assert (level.rate, level.concurrency, level.arrival, level.name) == (None, 8, None, "concurrency=8")
    assert any("request rate inf" in note for note in level.notes)
    rated = load_bench_serving(REAL / "sglang-rate100-details.jsonl").levels[0]
    assert (rated.rate, rated.concurrency, rated.arrival, rated.name) == (100.0, None, "poisson", "rate=100/s poisson")
    assert load_bench_serving(REAL / "sglang-rate100-details.txt").levels[0].rate == 100.0
    # NaN and Infinity in figures never reach the model, where JSON would turn them into null:
    # one line names the line, the key and the value.
    for planted, said in (("NaN", "NaN is not a finite number"), ("Infinity", "+Inf is not a finite number"), ("1e308", "1e+308 is above 2^53"), ("-1", "-1 is below 0")):
        broken = text.replace('"p99_itl_ms": ', f'"p99_itl_ms": {planted}, "x_": ', 1)
        assert _error(broken, origin="x.jsonl", jsonl=True) == f"x.jsonl:1: p99_itl_ms = {said}"
    # bench_serving's own NaN (the mean of no requests, where none completed) is no figure, and said so.
    none_done = re.sub(r'"completed": \d+', '"completed": 0', text.replace('"p95_itl_ms": ', '"p95_itl_ms": NaN, "x_": ', 1), count=1)
    odd = parse_jsonl(none_done).levels[0]
    assert "itl_p95_ms" not in odd.extra and "p95_itl_ms: NaN (no request completed)" in odd.notes
    assert BenchResult.model_validate_json(BenchResult(levels=[odd]).model_dump_json()).levels[0] == odd


def test_a_sweep_is_one_level_per_block_and_per_line() -> None:
    for path in (REAL / "sglang-sweep-c1-c4-c16-details.txt", REAL / "sglang-sweep-c1-c4-c16-details.jsonl"):
        result = load_bench_serving(path)
        assert [lv.concurrency for lv in result.levels] == [1, 4, 16]
        assert [lv.name for lv in result.levels] == ["concurrency=1", "concurrency=4", "concurrency=16"]
        assert result.level("concurrency=16").completed == 50


def test_a_repeated_setting_gets_distinct_names() -> None:
    block = (DATA / "corpus" / "bench_serving" / "03.txt").read_text()
    result = parse_result_text(block + "\nsome log line\n" + block)
    assert [lv.name for lv in result.levels] == ["concurrency=1", "concurrency=1 #2"]


def test_backends_oai_and_chat() -> None:
    for stem, backend in (("sglang-oai-c8-details", "sglang-oai"), ("sglang-oai-chat-c8-details", "sglang-oai-chat")):
        assert load_bench_serving(REAL / f"{stem}.jsonl").settings["backend"] == backend
        assert load_bench_serving(REAL / f"{stem}.txt").settings["backend"] == backend


# --- text as people keep it -------------------------------------------------------------------


def test_prefixes_ansi_and_carriage_returns_do_not_change_the_figures() -> None:
    plain = (DATA / "corpus" / "bench_serving" / "01.txt").read_text()
    messy_lines = []
    for n, line in enumerate(plain.splitlines()):
        if line.startswith("#"):
            messy_lines.append(line)
            continue
        messy_lines.append(f"bench-{n % 3}  | \x1b[32m{line}\x1b[0m")
    messy_lines.insert(3, "  3%|▎         | 1/30 [00:01<00:30]\r100%|██████████| 30/30 [00:19<00:00]")
    messy = parse_result_text("\n".join(messy_lines), origin="compose.log").levels[0]
    clean = parse_result_text(plain).levels[0]
    assert messy == clean


def test_a_block_inside_json() -> None:
    lines = (DATA / "corpus" / "bench_serving" / "01.txt").read_text().splitlines()[3:]
    as_string = json.dumps({"stdout": "\n".join(lines)})
    assert parse_result_text(as_string).levels[0].ttft.median == 208.46
    as_array = json.dumps({"log": lines}, indent=2)  # one JSON string per printed line
    assert parse_result_text(as_array).levels[0] == parse_result_text("\n".join(lines)).levels[0]


def _printed(label: str, value: object) -> str:
    return "{:<40} {:<10}".format(label, value)


def test_goodput_cache_and_unknown_rows_are_kept() -> None:
    """Rows in the formats 0.5.23 prints for --goodput and --cache-report, and rows no version prints yet."""
    lines = [
        "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
        _printed("Backend:", "sglang"),
        _printed("Traffic request rate:", 4.0),
        _printed("Max request concurrency:", "not set"),
        _printed("Successful requests:", 20),
        _printed("Benchmark duration (s):", "5.00"),
        _printed("Future thing (ms):", "1.50"),
        _printed("Future label:", "on"),
        "{s:{c}^{n}}".format(s="Goodput", n=50, c="-"),
        _printed("SLOs (ms):", "ttft:200 tpot:50"),
        _printed("Request goodput (req/s):", "3.20"),
        _printed("SLO attainment (%):", "80.00"),
        _printed("TTFT SLO attainment (%):", "90.00"),
        "{s:{c}^{n}}".format(s="Cache Hit Details", n=50, c="-"),
        _printed("Total prompt tokens:", 1000),
        _printed("Total cached tokens:", 400),
        _printed("  Device:", 300),
        _printed("  Host:", 100),
        "{:<40} {:.1f}%".format("Cache hit rate:", 40.0),
        "{:<40} {:.1f}%".format("  Device:", 75.0),
        "{:<40} {:.1f}%".format("  Host:", 25.0),
        "=" * 50,
    ]
    level = parse_result_text("\n".join(lines)).levels[0]
    assert (level.rate, level.concurrency, level.arrival, level.name) == (4.0, None, "poisson", "rate=4/s poisson")
    assert level.goodput == 3.2 and level.goodput_fraction == pytest.approx(0.8)
    assert level.extra == {
        "future_thing_ms": 1.5,
        "ttft_slo_attainment_pct": 90.0,
        "total_prompt_tokens": 1000,
        "total_cached_tokens": 400,
        "total_cached_tokens_device": 300,
        "total_cached_tokens_host": 100,
        "cache_hit_rate_pct": 40.0,
        "cache_hit_rate_device_pct": 75.0,
        "cache_hit_rate_host_pct": 25.0,
    }
    assert "Future label: on" in level.notes and "SLOs (ms): ttft:200 tpot:50" in level.notes


def test_snake_case_names() -> None:
    assert snake("Accept length") == "accept_length"
    assert snake("Total generated tokens (retokenized)") == "total_generated_tokens_retokenized"
    assert snake("Peak output token throughput (tok/s)") == "peak_output_token_throughput"
    assert snake("Benchmark duration (s)") == "benchmark_duration_s"
    assert snake("SLO attainment (%)") == "slo_attainment_pct"


def test_sniffing_paths_and_text() -> None:
    path = REAL / "sglang-c8-details.jsonl"
    assert load_bench_serving(path) == load_bench_serving(str(path))
    from_text = load_bench_serving(path.read_text())
    assert from_text.levels == load_bench_serving(path).levels and from_text.target == "<text>"
    assert load_bench_serving((REAL / "sglang-c8-details.txt").read_text()).levels[0].concurrency == 8


def test_failed_requests_from_the_details() -> None:
    raw = _raw_lines(REAL / "sglang-c8-details.jsonl")[0]
    raw["errors"][3] = 'Traceback (most recent call last):\n  File "x", line 1\naiohttp.ClientConnectorError: Cannot connect'
    raw["errors"][7] = "Internal Server Error: overloaded"
    raw["ttfts"][3] = raw["ttfts"][7] = 0.0
    raw["itls"][3] = raw["itls"][7] = []
    level = parse_jsonl(json.dumps(raw)).levels[0]
    assert (level.requests, level.failed) == (50, 2)
    assert level.errors == ["aiohttp.ClientConnectorError: Cannot connect", "Internal Server Error: overloaded"]
    assert level.ttft.count == 48  # the failures' zero TTFT is left out
    assert level.metrics()["error_rate"] == pytest.approx(0.04)


# --- input that cannot be imported ------------------------------------------------------------


def _error(text: str, origin: str = "run.log", jsonl: bool = False) -> str:
    with pytest.raises(BenchServingImportError) as info:
        (parse_jsonl if jsonl else parse_result_text)(text, origin=origin)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    assert isinstance(info.value, SpecError)
    return message


def test_a_truncated_block_names_the_file_and_its_line(tmp_path: Path) -> None:
    lines = (DATA / "corpus" / "bench_serving" / "01.txt").read_text().splitlines()
    cut = tmp_path / "cut.txt"
    cut.write_text("\n".join(lines[:20]) + "\n")
    with pytest.raises(BenchServingImportError) as info:
        load_bench_serving(cut)
    assert str(info.value) == (
        f"{cut}:4: bench_serving result block is truncated: the text ends at line 21 before its closing '=====' line"
    )
    # Cut off and followed by something else: the line that is not a row is named.
    message = _error("\n".join(lines[3:20] + ["[INFO] server shutting down", *lines[20:]]))
    assert message.startswith("run.log:18: bench_serving result block from line 1 is cut off or malformed")
    assert "'[INFO] server shutting down'" in message
    # Cut off and followed by the next block of a sweep.
    message = _error("\n".join(lines[3:15] + lines[3:]))
    assert message.startswith("run.log:1: bench_serving result block is truncated: another block starts at line 13")


def test_malformed_rows_name_their_line() -> None:
    lines = (DATA / "corpus" / "bench_serving" / "01.txt").read_text().splitlines()[3:]
    bad = [line.replace("208.46", "20,846") for line in lines]
    assert _error("\n".join(bad)) == (
        "run.log:26: bench_serving row 'Median TTFT (ms)' has '20,846', not a number (block from line 1 is malformed)"
    )
    empty = [line if "Successful" not in line else "Successful requests:" for line in lines]
    assert _error("\n".join(empty)).startswith("run.log:5: bench_serving row 'Successful requests' has no value")
    no_count = [line for line in lines if "Successful" not in line]
    assert "has no 'Successful requests' row" in _error("\n".join(no_count))
    assert _error("nothing here\n") == "run.log: no 'Serving Benchmark Result' block of sglang.bench_serving in it"


def test_broken_jsonl_names_its_line() -> None:
    good = (REAL / "sglang-c8-summary.jsonl").read_text().strip()
    message = _error(good + "\n" + good[:500] + "\n", origin="out.jsonl", jsonl=True)
    assert message.startswith("out.jsonl:2: not a JSON object (")
    assert _error("[1, 2]\n", origin="out.jsonl", jsonl=True) == (
        "out.jsonl:1: a JSON list, not the object bench_serving writes per run"
    )
    assert _error('{"completed": 3}\n', origin="o.jsonl", jsonl=True) == (
        "o.jsonl:1: no 'duration' key; not a bench_serving --output-file line"
    )
    assert _error('{"completed": "x", "duration": 1}\n', origin="o.jsonl", jsonl=True) == "o.jsonl:1: completed is 'x', not a number"
    assert _error("\n\n", origin="o.jsonl", jsonl=True).startswith("o.jsonl: empty")


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    for missing in (tmp_path / "missing.jsonl", str(tmp_path / "missing.jsonl")):
        with pytest.raises(BenchServingImportError) as info:
            load_bench_serving(missing)
        assert str(info.value) == f"{tmp_path / 'missing.jsonl'}: cannot be read (No such file or directory)"


def test_every_level_is_a_model_level() -> None:
    for path in CORPUS + REAL_TEXTS + REAL_JSONL:
        for level in load_bench_serving(path).levels:
            assert isinstance(level, LevelResult) and level.validity.verdict == "valid"
            assert all(math.isfinite(v) for v in level.metrics().values())


# --- the driver that runs the real bench_serving ----------------------------------------------


def _driver() -> Any:
    import importlib.util

    path = Path(__file__).parent.parent / "benchmarks" / "bench_serving_driver.py"
    spec = importlib.util.spec_from_file_location("bench_serving_driver", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_driver_asks_for_details_and_names_a_missing_venv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    driver = _driver()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").write_text("")
    monkeypatch.setenv("PYTEST_SGLANG_REAL_VENV", str(tmp_path))
    argv = driver.command("http://h:1/", tmp_path / "r.jsonl", concurrency=8)
    assert argv[0] == str(tmp_path / "bin" / "python") and "--output-details" in argv
    assert argv[argv.index("--max-concurrency") + 1] == "8" and argv[argv.index("--request-rate") + 1] == "inf"
    assert argv[argv.index("--base-url") + 1] == "http://h:1"
    rated = driver.command("http://h:1", tmp_path / "r.jsonl", rate=2.5)
    assert "--max-concurrency" not in rated and rated[rated.index("--request-rate") + 1] == "2.5"
    monkeypatch.setenv("PYTEST_SGLANG_REAL_VENV", str(tmp_path / "nowhere"))
    with pytest.raises(driver.DriverError, match="no SGLang venv at .*nowhere .*PYTEST_SGLANG_REAL_VENV"):
        driver.run_bench_serving("http://h:1", concurrency=1)
