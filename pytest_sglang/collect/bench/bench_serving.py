"""Importing ``sglang.bench_serving`` results as :class:`BenchResult`.

People already run ``python -m sglang.bench_serving`` and keep what it printed or its
``--output-file`` JSONL. Importing either lets the same thresholds, baselines and reports judge
those runs: every printed "Serving Benchmark Result" block, and every JSONL line, becomes one
``LevelResult(mode="imported")`` of a ``BenchResult(source="bench_serving")``.

What maps where:

- the latencies with a place in :class:`Stat` (mean, median, p90, p99, max of TTFT, ITL, TPOT,
  E2E) go there; other statistics (p95, std, ...) go to ``extra`` as ``ttft_p95_ms`` etc., the
  names :meth:`LevelResult.metrics` uses for its own latencies;
- ``Max request concurrency`` is the level's concurrency, ``Traffic request rate`` its rate
  (``inf``, every request sent at once, is no rate: ``rate=None``), ``Peak concurrent
  requests`` its peak concurrency;
- every other row keeps its printed label in snake case in ``extra`` (``Accept length`` ->
  ``accept_length``, ``Total generated tokens (retokenized)`` ->
  ``total_generated_tokens_retokenized``); the JSONL keys for the same figures use the same
  names, so a text and a JSONL import of one run give the same metrics. A row whose value is
  not a number is kept as a note. Nothing is dropped silently.

With ``--output-details`` a JSONL line also carries each request's TTFT and inter-token gaps;
the TTFT and ITL statistics are then recomputed from them (the same linear-interpolation
percentiles bench_serving uses), which gives p90 and max even from versions whose summary
lacks them, and the request and failure counts. TPOT and E2E stay as bench_serving summarised
them: the per-request latencies they come from are not written out.

Text that cannot be read raises :class:`BenchServingImportError`: one line naming the origin
and line, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pytest_sglang.base import files as _files
from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.secrets import clip
from pytest_sglang.collect.bench.stats import MAX_ERRORS_KEPT, summarise
from pytest_sglang.model.bench import BenchResult, LevelResult, Stat
from pytest_sglang.model.numbers import FIGURE, NON_NEGATIVE, FigureRange, field_range, refusals, shown

__all__ = ["BenchServingImportError", "load_bench_serving", "parse_jsonl", "parse_result_text"]


class BenchServingImportError(SpecError):
    """bench_serving output that cannot be imported; the message names the file and line."""


# --- shared mapping ---------------------------------------------------------------------------

_FAMILIES = {"E2E Latency": "e2e", "TTFT": "ttft", "TPOT": "tpot", "ITL": "itl"}
_JSON_FAMILIES = {"e2e_latency": "e2e", "ttft": "ttft", "tpot": "tpot", "itl": "itl"}
_STAT_FIELDS = {"mean", "median", "p90", "p99", "max"}

# Printed rows with a LevelResult field: label -> (field, type).
_ROW_FIELDS: dict[str, tuple[str, type]] = {
    "Successful requests": ("completed", int),
    "Benchmark duration (s)": ("duration_s", float),
    "Total input tokens": ("input_tokens", int),
    "Total generated tokens": ("output_tokens", int),
    "Request throughput (req/s)": ("request_throughput", float),
    "Input token throughput (tok/s)": ("input_throughput", float),
    "Output token throughput (tok/s)": ("output_throughput", float),
    "Total token throughput (tok/s)": ("total_throughput", float),
    "Peak concurrent requests": ("peak_concurrency", int),
    "Request goodput (req/s)": ("goodput", float),
}

# JSONL summary keys with a LevelResult field.
_KEY_FIELDS: dict[str, tuple[str, type]] = {
    "completed": ("completed", int),
    "duration": ("duration_s", float),
    "total_input_tokens": ("input_tokens", int),
    "total_output_tokens": ("output_tokens", int),
    "request_throughput": ("request_throughput", float),
    "input_throughput": ("input_throughput", float),
    "output_throughput": ("output_throughput", float),
    "total_throughput": ("total_throughput", float),
    "max_concurrent_requests": ("peak_concurrency", int),
    "request_goodput": ("goodput", float),
}

# JSONL keys whose figure is printed too: stored under the printed row's snake-case name.
_KEY_EXTRAS = {
    "total_input_text_tokens": "total_input_text_tokens",
    "total_input_vision_tokens": "total_input_vision_tokens",
    "total_output_tokens_retokenized": "total_generated_tokens_retokenized",
    "max_output_tokens_per_s": "peak_output_token_throughput",
    "concurrency": "concurrency",
    "accept_length": "accept_length",
}

# JSONL keys that describe how the run was asked for: kept in BenchResult.settings.
_SETTING_KEYS = (
    "tag",
    "backend",
    "dataset_name",
    "sharegpt_output_len",
    "random_input_len",
    "random_output_len",
    "random_range_ratio",
)
_DETAIL_KEYS = ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors", "cached_tokens", "cached_tokens_details")

_UNIT_WORDS = {"ms": "ms", "s": "s", "%": "pct"}


def snake(label: str) -> str:
    """A printed label as an ``extra`` name: ``"P95 ITL (ms)"`` -> ``"p95_itl_ms"``; throughput
    units are dropped (the figure is per second by its name), ``(%)`` becomes ``_pct``."""
    def unit(match: re.Match[str]) -> str:
        inner = match.group(1).strip()
        return " " + _UNIT_WORDS.get(inner, "" if "/" in inner else inner) + " "

    text = re.sub(r"\(([^)]*)\)", unit, label.strip())
    return re.sub(r"[^0-9a-z]+", "_", text.lower()).strip("_")


@contextlib.contextmanager
def _at(where: str) -> Iterator[None]:
    """Whatever a value the checks above did not foresee raises while a line is imported
    becomes one line naming the file and line, never a traceback."""
    try:
        yield
    except BenchServingImportError:
        raise
    except ValidationError as exc:
        found = refusals(exc)
        raise BenchServingImportError(f"{where}: {clip(found[0], 200) if found else 'a figure is not valid'}") from None
    except (ValueError, TypeError, ArithmeticError, RecursionError, KeyError, IndexError) as exc:
        detail = clip(str(exc), 120)
        raise BenchServingImportError(f"{where}: cannot be imported ({detail})") from None


def _checked(where: str, label: str, value: float, checks: FigureRange | None) -> Any:
    """``value`` as the field its range describes; a figure out of that range (NaN, an
    infinity, 1e308, a negative latency) is one line naming the file, the line and the figure."""
    if checks is None:
        return value
    fault = checks.refusal(label, value)
    if fault is not None:
        raise BenchServingImportError(f"{where}: {fault}")
    return checks(value)


def _brief(value: object) -> str:
    """A value for a message: its repr, at most 60 characters (a 400-digit number is cut)."""
    try:
        text = repr(value)
    except ValueError:  # an int beyond Python's str conversion limit
        text = "<an integer of thousands of digits>"
    return clip(text, 60, ellipsis="...", one_line=False)


def _level_name(concurrency: int | None, rate: float | None, trace: bool) -> str:
    """Names like the native levels': ``concurrency=8``, ``rate=20/s``, both when both bound."""
    parts = []
    if concurrency is not None:
        parts.append(f"concurrency={concurrency}")
    if trace:
        parts.append("rate=trace")
    elif rate is not None:
        parts.append(f"rate={rate:g}/s poisson")
    return " ".join(parts) or "unlimited"


def _unique_names(levels: Sequence[LevelResult]) -> None:
    """A sweep that repeats one setting still gets distinct level names (``... #2``)."""
    seen: dict[str, int] = {}
    for level in levels:
        seen[level.name] = seen.get(level.name, 0) + 1
        if seen[level.name] > 1:
            level.name = f"{level.name} #{seen[level.name]}"


_IMPORT_NOTE = "imported from sglang.bench_serving: the client's own load was not measured, so validity is not judged"


@dataclass
class _Level:
    """A level being assembled, before its fields are checked by the model."""

    fields: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, dict[str, float | None]] = field(default_factory=lambda: {f: {} for f in _FAMILIES.values()})
    extra: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # values behind a recomputed statistic
    # Statistics given as NaN, with where and as what: bench_serving's mean of no requests (a
    # level where none completed), else refused when the level is built.
    unmeasured: list[tuple[str, str]] = field(default_factory=list)
    concurrency: int | None = None
    rate: float | None = None
    trace: bool = False

    def put(self, name: str, value: float, label: str, where: str) -> None:
        """A figure with a field of its own, checked against that field's range."""
        self.fields[name] = _checked(where, label, value, field_range(LevelResult, name))

    def put_stat(self, family: str, part: str, value: float, label: str, where: str) -> None:
        if isinstance(value, float) and math.isnan(value):
            self.unmeasured.append((where, label))
            return
        self.stats[family][part] = _checked(where, label, value, field_range(Stat, part))

    def put_extra(self, name: str, value: float, label: str, where: str) -> None:
        if isinstance(value, float) and math.isnan(value):
            self.unmeasured.append((where, label))
            return
        value = _checked(where, label, value, FIGURE)
        key, n = name, 2
        while key in self.extra:
            key, n = f"{name}_{n}", n + 1
        self.extra[key] = value

    def put_rate(self, value: object, origin: str, label: str = "request_rate") -> None:
        if isinstance(value, str) and value.strip().lower() == "trace":
            self.trace = True
            self.notes.append("request times replayed from a trace (--use-trace-timestamps)")
            return
        try:
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise TypeError
            rate = float(value)
        except OverflowError:  # a whole number of hundreds of digits: past the range
            raise BenchServingImportError(f"{origin}: {label} = {shown(value)} is above 2^53") from None
        except (TypeError, ValueError):
            raise BenchServingImportError(f"{origin}: {label} = {shown(value)} is not a positive number, inf or 'trace'") from None
        if math.isinf(rate) and rate > 0:
            self.notes.append("request rate inf: every request sent at once, bounded only by the max concurrency")
            return
        if not math.isfinite(rate) or rate <= 0:
            raise BenchServingImportError(f"{origin}: {label} = {shown(value)} is not a positive number or inf")
        self.rate = _checked(origin, label, rate, field_range(LevelResult, "rate"))

    def build(self) -> LevelResult:
        completed = int(self.fields.get("completed", 0))
        for where, label in self.unmeasured:
            if completed:
                raise BenchServingImportError(f"{where}: {label} = NaN is not a finite number")
            self.notes.append(f"{label}: NaN (no request completed)")
        self.fields.setdefault("requests", completed)
        stats: dict[str, Stat] = {}
        for family, parts in self.stats.items():
            # A summary's statistics cover the successful requests; its ITL count is not known.
            count = self.counts.get(family, 0 if family == "itl" else completed)
            stats[family] = Stat(count=count if parts else 0, **parts)
        peak = self.fields.get("peak_concurrency")
        if self.concurrency is not None and isinstance(peak, int) and peak > self.concurrency:
            self.notes.append(
                f"peak concurrent requests {peak} is above the max concurrency {self.concurrency}: "
                "bench_serving counts every request active at any time within each whole second"
            )
        return LevelResult.model_validate(
            {
                **self.fields,
                **stats,
                "name": _level_name(self.concurrency, self.rate, self.trace),
                "mode": "imported",
                "concurrency": self.concurrency,
                "rate": self.rate,
                "arrival": "poisson" if self.rate is not None else None,
                "extra": self.extra,
                "notes": [*self.notes, _IMPORT_NOTE],
            }
        )


# --- the printed block ------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_HEADER = re.compile(r"^(?P<prefix>.*?)=+ ?Serving Benchmark Result ?=+(?P<suffix>[^=\s]*)\s*$")
# The closing line; quotes and brackets after it end a JSON string or array the block was kept in.
_CLOSE = re.compile(r"^={20,}[\"'},\]]*\s*$")
_SECTION = re.compile(r"^-{2,}(?P<title>[^-].*?)-{2,}\s*$")
_ROW = re.compile(r"^(?P<indent>\s*)(?P<label>[A-Za-z][^:]*?):(?:\s+(?P<value>\S.*?))?\s*$")
_LATENCY = re.compile(r"^(?P<stat>Mean|Median|Std|Min|Max|P\d+(?:\.\d+)?) (?P<family>E2E Latency|TTFT|TPOT|ITL) \(ms\)$")
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$|^[-+]?(?:inf|nan)$", re.IGNORECASE)


def _clean(line: str) -> str:
    """What a terminal would show: ANSI codes gone, a carriage return's overwrite applied."""
    line = _ANSI.sub("", line)
    if "\r" in line:
        parts = [p for p in line.split("\r") if p.strip()]
        line = parts[-1] if parts else ""
    return line


def _prefix_pattern(prefix: str) -> re.Pattern[str] | None:
    """Lines inside a block carry the header line's prefix (a container name, a timestamp):
    the same text, with digits free to change from line to line."""
    if not prefix.strip():
        return None
    parts = re.split(r"(\d+)", prefix)
    body = "".join(r"\d+" if p.isdigit() else re.escape(p) for p in parts if p)
    return re.compile("^" + body)


def _lines(text: str) -> list[str]:
    if "Serving Benchmark Result" in text and "\n" not in text.strip() and "\\n" in text:
        text = text.replace("\\n", "\n")  # a block kept inside a JSON string
    return [_clean(line) for line in text.split("\n")]


def _shown(line: str) -> str:
    return repr(clip(line.strip(), 60, ellipsis="...", one_line=False))


class _BlockReader:
    """Reads one printed block, row by row, into a level being assembled."""

    def __init__(self, origin: str, start: int) -> None:
        self.origin = origin
        self.start = start  # 1-based line number of the header
        self.level = _Level()
        self.section = ""
        self.parent = ""  # the last unindented row's extra name, for indented sub-rows
        self.backend: str | None = None
        self.seen: set[str] = set()

    def where(self, lineno: int) -> str:
        return f"{self.origin}:{lineno}"

    def row(self, lineno: int, indent: str, label: str, value: str | None) -> None:
        if value is None:
            raise BenchServingImportError(
                f"{self.where(lineno)}: bench_serving row {label!r} has no value (block from line {self.start} is malformed)"
            )
        self.seen.add(label)
        if label == "Backend":
            self.backend = value
            return
        if label == "Traffic request rate":
            self.level.put_rate(self._rate(lineno, value), self.where(lineno), repr(label))
            return
        if label == "Max request concurrency":
            self.level.concurrency = None if value.lower() == "not set" else _checked(self.where(lineno), repr(label), self._number(lineno, label, value), field_range(LevelResult, "concurrency"))
            return
        latency = _LATENCY.match(label)
        if latency:
            self._latency(lineno, latency["stat"], _FAMILIES[latency["family"]], label, value)
            return
        if label in _ROW_FIELDS:
            name, _ = _ROW_FIELDS[label]
            self.level.put(name, self._number(lineno, label, value), repr(label), self.where(lineno))
            return
        if label == "SLO attainment (%)":
            self.level.put("goodput_fraction", self._number(lineno, label, value.rstrip("%")) / 100.0, repr(label), self.where(lineno))
            return
        self._extra(lineno, indent, label, value)

    def _rate(self, lineno: int, value: str) -> str | float:
        if value.lower() == "trace":
            return value
        return self._number(lineno, "Traffic request rate", value)

    def _latency(self, lineno: int, stat: str, family: str, label: str, value: str) -> None:
        number = self._number(lineno, label, value)
        part = stat.lower()
        if part in _STAT_FIELDS:
            self.level.put_stat(family, part, number, repr(label), self.where(lineno))
        else:
            self.level.put_extra(f"{family}_{part}_ms", number, repr(label), self.where(lineno))

    def _extra(self, lineno: int, indent: str, label: str, value: str) -> None:
        name = snake(label)
        if indent and self.parent:
            name = f"{self.parent.removesuffix('_pct')}_{name}"
        percent = value.endswith("%")
        if percent and not name.endswith("_pct"):
            name += "_pct"
        if not indent:
            self.parent = name
        if _NUMBER.match(value.rstrip("%")):
            self.level.put_extra(name, self._number(lineno, label, value.rstrip("%")), repr(label), self.where(lineno))
        else:
            self.level.notes.append(f"{label}: {value}")

    def _number(self, lineno: int, label: str, value: str) -> float:
        if not _NUMBER.match(value):
            raise BenchServingImportError(
                f"{self.where(lineno)}: bench_serving row {label!r} has {_brief(value)}, not a number (block from line {self.start} is malformed)"
            )
        number = float(value)
        if math.isinf(number) and "inf" not in value.lower():
            raise BenchServingImportError(f"{self.where(lineno)}: bench_serving row {label!r} has {_brief(value)}, a number too large to be a figure")
        return number

    def finish(self, lineno: int) -> LevelResult:
        if "Successful requests" not in self.seen:
            raise BenchServingImportError(
                f"{self.where(self.start)}: bench_serving result block (lines {self.start}-{lineno}) has no 'Successful requests' row"
            )
        return self.level.build()


def _blocks(lines: Sequence[str], origin: str) -> Iterator[tuple[_BlockReader, int]]:
    """Each block's reader, filled, with its closing line number; log noise around blocks is skipped."""
    i = 0
    while i < len(lines):
        header = _HEADER.match(lines[i])
        if not header:
            i += 1
            continue
        reader = _BlockReader(origin, i + 1)
        prefix = _prefix_pattern(header["prefix"])
        suffix = header["suffix"]  # a block kept as JSON strings, one per line: '",'
        i += 1
        while True:
            if i >= len(lines):
                raise BenchServingImportError(
                    f"{origin}:{reader.start}: bench_serving result block is truncated: the text ends at line {len(lines)} before its closing '=====' line"
                )
            raw = lines[i]
            line = prefix.sub("", raw, count=1) if prefix else raw
            if suffix:
                line = line.rstrip().removesuffix(suffix)
            if _CLOSE.match(line):
                yield reader, i + 1
                i += 1
                break
            if _HEADER.match(line):
                raise BenchServingImportError(
                    f"{origin}:{reader.start}: bench_serving result block is truncated: another block starts at line {i + 1} before its closing '=====' line"
                )
            if not line.strip():
                i += 1
                continue
            section = _SECTION.match(line)
            row = None if section else _ROW.match(line)
            if section:
                reader.section = section["title"].strip()
                reader.parent = ""
            elif row:
                with _at(f"{origin}:{i + 1}"):
                    reader.row(i + 1, row["indent"], row["label"].strip(), row["value"])
            else:
                raise BenchServingImportError(
                    f"{origin}:{i + 1}: bench_serving result block from line {reader.start} is cut off or malformed: "
                    f"{_shown(line)} is neither a 'Label: value' row nor its closing '=====' line"
                )
            i += 1


def parse_result_text(text: str, origin: str = "<text>") -> BenchResult:
    """Every printed "Serving Benchmark Result" block in ``text`` (a log, a sweep, a Markdown
    page), in order, as one level each."""
    lines = _lines(text)
    levels: list[LevelResult] = []
    backends: list[str] = []
    for reader, end in _blocks(lines, origin):
        with _at(f"{origin}:{reader.start}"):
            levels.append(reader.finish(end))
        if reader.backend:
            backends.append(reader.backend)
    if not levels:
        raise BenchServingImportError(f"{origin}: no 'Serving Benchmark Result' block of sglang.bench_serving in it")
    _unique_names(levels)
    settings: dict[str, object] = {"imported_from": origin}
    if backends:
        settings["backend"] = backends[0]
        if len(set(backends)) > 1:
            settings["backends"] = backends
    return BenchResult(source="bench_serving", target=origin, settings=settings, levels=levels)


# --- the JSONL output file --------------------------------------------------------------------


def _loads(line: str, where: str) -> dict[str, Any]:
    """One JSONL line. bench_serving writes Python's json, so ``Infinity`` and ``NaN`` occur."""
    if _files.nesting_too_deep(line, _MAX_DEPTH) is not None:
        raise BenchServingImportError(f"{where}: nests more than {_MAX_DEPTH} arrays/objects deep: not a line bench_serving writes")
    try:
        value = json.loads(line)
    except RecursionError:
        raise BenchServingImportError(f"{where}: nested too deeply to be a bench_serving line") from None
    except ValueError as exc:
        reason = str(exc).split(":")[0]
        raise BenchServingImportError(f"{where}: not a JSON object ({reason}); is the line cut off?") from None
    if not isinstance(value, dict):
        raise BenchServingImportError(f"{where}: a JSON {type(value).__name__}, not the object bench_serving writes per run")
    return value


def _as_number(value: object, key: str, where: str) -> float | None:
    """A JSON number as given (its range is checked where it is put), or None for null."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BenchServingImportError(f"{where}: {key} is {_brief(value)}, not a number")
    return value


def _summary(data: Mapping[str, Any], level: _Level, where: str) -> None:
    """The summary keys: fields, statistics and extras; unknown keys are kept, never dropped."""
    for key, value in data.items():
        if key in _DETAIL_KEYS or key in _SETTING_KEYS or key in ("server_info", "request_rate", "max_concurrency"):
            continue
        if key in _KEY_FIELDS:
            name, _ = _KEY_FIELDS[key]
            number = _as_number(value, key, where)
            if number is not None:
                level.put(name, number, key, where)
            continue
        stat = re.fullmatch(r"(?P<part>mean|median|std|min|max|p\d+(?:\.\d+)?)_(?P<family>e2e_latency|ttft|tpot|itl)_ms", key)
        if stat:
            number = _as_number(value, key, where)
            family, part = _JSON_FAMILIES[stat["family"]], stat["part"]
            if number is None:
                continue
            if part in _STAT_FIELDS:
                level.put_stat(family, part, number, key, where)
            else:
                level.put_extra(f"{family}_{part}_ms", number, key, where)
            continue
        if key == "slo_attainment":
            number = _as_number(value, key, where)
            if number is not None:
                level.put("goodput_fraction", number, key, where)
            continue
        _other(key, value, level, where)


def _other(key: str, value: object, level: _Level, where: str) -> None:
    """Keys without a field: numbers to ``extra`` (the printed row's name where there is one),
    goodput and cache dicts flattened, anything else a note."""
    if key == "slo_attainment_by_metric" and isinstance(value, dict):
        for metric, fraction in value.items():
            number = _as_number(fraction, f"{key}.{metric}", where)
            if number is not None:
                level.put_extra(f"{snake(metric)}_slo_attainment_pct", _checked(where, f"{key}.{metric}", number, FIGURE) * 100.0, f"{key}.{metric}", where)
        return
    if key == "goodput_slos_ms" and isinstance(value, dict):
        level.notes.append("SLOs (ms): " + " ".join(f"{k}:{shown(v)}" for k, v in value.items() if isinstance(v, (int, float))))
        return
    if key == "cache_report" and isinstance(value, dict):
        for part, number in value.items():
            if isinstance(number, (int, float)) and not isinstance(number, bool):
                level.put_extra(f"cache_{part}", _as_number(number, f"{key}.{part}", where) or 0.0, f"{key}.{part}", where)
            elif number is not None:
                level.notes.append(f"cache_report {part}: {number}")
        return
    if value is None:
        return
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        level.put_extra(_KEY_EXTRAS.get(key, key), _as_number(value, key, where) or 0.0, key, where)
        return
    shown = json.dumps(value)
    level.notes.append(f"{key}: {clip(shown, 80, ellipsis='...', one_line=False)}")


def _details(data: Mapping[str, Any], level: _Level, where: str) -> None:
    """Per-request arrays (``--output-details``): counts, errors, and TTFT/ITL recomputed."""
    errors = data.get("errors")
    ttfts = data.get("ttfts")
    itls = data.get("itls")
    if not isinstance(errors, list) or not isinstance(ttfts, list) or not isinstance(itls, list):
        return
    if not (len(errors) == len(ttfts) == len(itls)):
        raise BenchServingImportError(
            f"{where}: per-request arrays differ in length (errors {len(errors)}, ttfts {len(ttfts)}, itls {len(itls)})"
        )
    ok = [i for i, error in enumerate(errors) if not error]
    level.fields["requests"] = len(errors)
    level.fields["failed"] = len(errors) - len(ok)
    level.fields["errors"] = _distinct_errors(errors)
    backend = str(data.get("backend") or "")
    accept = data.get("accept_length")
    ok_ttfts = [_checked(where, f"ttfts[{i}]", _as_number(ttfts[i], f"ttfts[{i}]", where) or 0.0, NON_NEGATIVE) for i in ok]
    if ok_ttfts and any(t > 0 for t in ok_ttfts):
        _replace(level, "ttft", summarise(ok_ttfts))
    retokenized = bool(accept) and backend in ("sglang-oai", "sglang-oai-chat")
    for i in ok:
        if not isinstance(itls[i], list):
            raise BenchServingImportError(f"{where}: itls[{i}] is {_brief(itls[i])}, not a list of inter-token gaps")
    gaps = [_checked(where, f"itls[{i}]", _as_number(gap, f"itls[{i}]", where) or 0.0, NON_NEGATIVE) for i in ok for gap in itls[i]]
    if retokenized:
        level.notes.append("ITL as bench_serving summarised it: it re-tokenises each chunk for this backend with speculative decoding, which its details do not carry")
    elif gaps:
        _replace(level, "itl", summarise(gaps))
    level.notes.append("TTFT and ITL statistics recomputed from the per-request details; TPOT and E2E as bench_serving summarised them")


def _replace(level: _Level, family: str, stat: Stat) -> None:
    level.stats[family].update({part: getattr(stat, part) for part in _STAT_FIELDS})
    level.counts[family] = stat.count


def _distinct_errors(errors: Sequence[object]) -> list[str]:
    """The distinct error texts, each as its last line (a traceback's message), first few."""
    out: list[str] = []
    for error in errors:
        if not error:
            continue
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        text = clip(lines[-1] if lines else str(error), 200)
        if text not in out:
            out.append(text)
        if len(out) >= MAX_ERRORS_KEPT:
            break
    return out


def _jsonl_level(data: Mapping[str, Any], where: str) -> LevelResult:
    for key in ("completed", "duration"):
        if key not in data:
            raise BenchServingImportError(f"{where}: no {key!r} key; not a bench_serving --output-file line")
    level = _Level()
    if "request_rate" in data:
        level.put_rate(data["request_rate"], where)
    concurrency = data.get("max_concurrency")
    if concurrency is not None:
        number = _as_number(concurrency, "max_concurrency", where)
        level.concurrency = _checked(where, "max_concurrency", number, field_range(LevelResult, "concurrency")) if number is not None else None
    _summary(data, level, where)
    _details(data, level, where)
    return level.build()


def _server_facts(data: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The model and SGLang version from the ``server_info`` bench_serving stored (never keys)."""
    info = data.get("server_info")
    if not isinstance(info, dict):
        return None, None
    model = info.get("served_model_name") or info.get("model_path")
    version = info.get("version")
    return (str(model) if model else None), (str(version) if version else None)


def parse_jsonl(text: str, origin: str = "<jsonl>") -> BenchResult:
    """Every line of a bench_serving ``--output-file`` (it appends one per run) as one level."""
    levels: list[LevelResult] = []
    first: Mapping[str, Any] | None = None
    backends: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{origin}:{number}"
        data = _loads(line, where)
        with _at(where):
            levels.append(_jsonl_level(data, where))
        first = first or data
        if data.get("backend"):
            backends.append(str(data["backend"]))
    if first is None:
        raise BenchServingImportError(f"{origin}: empty; a bench_serving --output-file has one JSON object per line")
    _unique_names(levels)
    settings: dict[str, object] = {"imported_from": origin}
    for key in _SETTING_KEYS:
        value = first.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            _checked(f"{origin}:1", key, value, FIGURE)  # a setting is a figure too: never NaN in a report
        if value is not None:
            settings[key] = value
    if len(set(backends)) > 1:
        settings["backends"] = backends
    model, version = _server_facts(first)
    return BenchResult(source="bench_serving", target=origin, model=model, sglang_version=version, settings=settings, levels=levels)


def load_bench_serving(source: str | Path, origin: str | None = None) -> BenchResult:
    """A bench_serving result from a file path or its text: JSONL (``--output-file``) when the
    first non-blank line is a JSON object, otherwise printed output holding result blocks."""
    text, name = _read(source)
    name = origin or name
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if first.startswith("{"):
        return parse_jsonl(text, origin=name)
    return parse_result_text(text, origin=name)


# A bench_serving --output-file with --output-details carries every request's inter-token gaps
# and generated text: tens of MiB for a long sweep. 256 MiB is well above that and still fits
# in memory with its parsed figures; a printed log holding result blocks is far smaller.
IMPORT_CAP_BYTES = 256 * _files.MiB
# A JSONL line is a flat summary with per-request arrays: a few levels deep.
_MAX_DEPTH = _files.DEFAULT_MAX_DEPTH


def _read(source: str | Path) -> tuple[str, str]:
    """The text to import and its origin. A path is read through
    :func:`pytest_sglang.base.files.read_text`: a regular file only (a FIFO or a device is refused
    at once), at most ``IMPORT_CAP_BYTES`` (256 MiB); bytes that are not UTF-8 become U+FFFD."""
    if isinstance(source, str) and ("\n" in source or len(source) > 4096):
        return source, "<text>"
    if isinstance(source, str) and (source.lstrip().startswith("{") or "Serving Benchmark Result" in source):
        return source, "<text>"  # a single line of JSONL, or a block kept on one line
    path = Path(source)
    try:
        return _files.read_text(path, cap_bytes=IMPORT_CAP_BYTES, what=f"bench_serving result {path}", errors="replace"), str(path)
    except _files.MissingFileError:
        raise BenchServingImportError(f"{path}: cannot be read (No such file or directory)") from None
    except _files.FileError as exc:
        raise BenchServingImportError(str(exc)) from None
