"""The ``sglang_bench`` fixture's object: :class:`~pytest_sglang.judge.bench.api.Bench` for the
test's host, plus comparison with the benchmark baseline kept beside the gate's baselines.

Benchmark baselines share the gate's directory (``--sglang-baseline DIR``), deployment keys and
update rule (``--sglang-update-baseline``, refused when CI is set): ``DIR/KEY.bench.json`` holds
one entry per benchmark, with every repeat's figures per level.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_sglang.base import files as _files
from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.secrets import clip
from pytest_sglang.judge.bench.api import INCONCLUSIVE_RERUNS, Bench, BenchFailed, BenchInconclusive, Budget, compare
from pytest_sglang.judge.bench.compare import BENCH_BASELINE_KIND, DEFAULT_METRICS, BenchBaselineError, MetricChange, baseline_entry
from pytest_sglang.judge.bench.expect import request_failures
from pytest_sglang.model.bench import BaselineRepeats, BenchResult
from pytest_sglang.model.numbers import FIGURE


class HostBench(Bench):
    def __init__(self, target: Any, *, config: pytest.Config, budget: Budget, name: str, **kwargs: Any) -> None:
        super().__init__(target, budget=budget, **kwargs)
        self.config = config
        self.name = name
        self.notes: list[str] = []

    def baseline(
        self,
        result: BenchResult,
        *,
        name: str | None = None,
        metrics: Sequence[str] = DEFAULT_METRICS,
        tolerance: float = 0.05,
        alpha: float = 0.05,
        min_delta_ms: float = 5.0,
    ) -> list[MetricChange]:
        """Compare ``result`` with this benchmark's stored baseline (or store it, under
        ``--sglang-update-baseline``). Raises ``BenchFailed`` when a figure regressed: a change
        beyond ``tolerance`` that the repeats show is not noise (one-sided Mann-Whitney p <= alpha)."""
        from pytest_sglang.judge.baseline.document import document
        from pytest_sglang.judge.baseline.store import BENCH_SUFFIX, baseline_file
        from pytest_sglang.plugin.baseline import STATE, deployment_key

        state = self.config.stash.get(STATE, None)
        if state is None:
            raise SpecError("a benchmark baseline needs the gate's baseline directory: give --sglang-baseline DIR (or the sglang_baseline ini key)")
        key = deployment_key(state, self.target.name, document(self.target))
        path = baseline_file(Path(state.directory), key, BENCH_SUFFIX)
        bench_name = name or self.name
        try:
            if state.update:
                self._recordable(result, bench_name)
            with locked(path.with_name(f".{path.name}.lock")):
                stored = _read(path)
                entry = stored["benchmarks"].get(bench_name)
                if state.update:
                    stored["benchmarks"][bench_name] = baseline_entry(result)
                    _write(path, stored, key)
                    self.notes.append(f"wrote benchmark baseline {bench_name!r} to {path} (key {key})")
                    return []
            if entry is None:
                raise BenchBaselineError(f"no benchmark baseline {bench_name!r} in {path} (deployment key {key}): record it with --sglang-update-baseline")
            result.baseline = BaselineRepeats.from_entry(bench_name, key, entry)  # for the reports' band
            for attempt in range(INCONCLUSIVE_RERUNS + 1):
                try:
                    return compare(result, entry, name=bench_name, metrics=metrics, tolerance=tolerance, alpha=alpha, min_delta_ms=min_delta_ms)
                except BenchInconclusive as exc:
                    if attempt == INCONCLUSIVE_RERUNS or not self.rerun(result, exc.levels, str(exc)):
                        raise
            raise AssertionError("unreachable")
        finally:
            self._publish(result)

    def _recordable(self, result: BenchResult, name: str) -> None:
        """A baseline is recorded only from a run that measured: no failed request, and no
        level on which the client could not keep up (run again, at most twice)."""
        errors = [line for line in (request_failures(lv) for lv in result.levels) if line]
        if errors:
            raise BenchFailed("\n".join([f"benchmark baseline {name!r} not recorded: requests failed on {result.target}:", *(f"  {line}" for line in errors)]))
        for attempt in range(INCONCLUSIVE_RERUNS + 1):
            shaky = [lv for lv in result.levels if not lv.conclusive]
            if not shaky:
                return
            why = "; ".join(f"{lv.name}: {', '.join(lv.validity.reasons[:1])}" for lv in shaky)
            if attempt == INCONCLUSIVE_RERUNS or not self.rerun(result, [lv.name for lv in shaky], why):
                raise BenchInconclusive(f"inconclusive on {result.target}: benchmark baseline {name!r} not recorded: {why}", [lv.name for lv in shaky])


@contextlib.contextmanager
def locked(lock_file: Path, what: str = "benchmark baseline lock file") -> Iterator[None]:
    """An exclusive lock on ``lock_file`` (made if missing, never truncated), across processes;
    a symbolic link or non-regular file there is refused (:func:`pytest_sglang.base.files.locked`)."""
    try:
        with _files.locked(lock_file, what=what):
            yield
    except _files.FileError as exc:
        raise BenchBaselineError(str(exc)) from None


# A benchmark baseline holds per-level figures of each repeat of each benchmark: tens of KiB.
BENCH_BASELINE_CAP_BYTES = 16 * _files.MiB


def _read(path: Path) -> dict[str, Any]:
    """The stored benchmark baselines (an empty set when the file is missing), read through
    :func:`pytest_sglang.base.files.read_text`: a regular file of at most
    ``BENCH_BASELINE_CAP_BYTES`` (16 MiB), JSON nested at most 100 deep."""
    what = f"benchmark baseline {path}"
    try:
        text = _files.read_text(path, cap_bytes=BENCH_BASELINE_CAP_BYTES, what=what)
        _files.check_nesting(text, what=what)
    except _files.MissingFileError:
        return {"kind": BENCH_BASELINE_KIND, "benchmarks": {}}
    except _files.FileError as exc:
        raise BenchBaselineError(f"{exc}; fix it or rewrite it with --sglang-update-baseline") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BenchBaselineError(f"benchmark baseline {path}: cannot be read ({clip(str(exc), 120)}); fix it or rewrite it with --sglang-update-baseline") from None
    if not isinstance(data, dict) or data.get("kind") != BENCH_BASELINE_KIND or not isinstance(data.get("benchmarks"), dict):
        raise BenchBaselineError(f"benchmark baseline {path}: not a pytest-sglang benchmark baseline (kind {BENCH_BASELINE_KIND!r} with a \"benchmarks\" object)")
    for bench_name, entry in data["benchmarks"].items():
        problem = _entry_problem(entry)
        if problem:
            raise BenchBaselineError(f"benchmark baseline {path}: benchmark {clip(bench_name, 80, ellipsis='...')!r}: {problem}; fix it or rewrite it with --sglang-update-baseline")
    return data


def _entry_problem(entry: Any) -> str | None:
    """What is wrong with a stored entry's shape, or None: the comparison reads ``levels`` as
    level -> metric -> list of numbers, ``settings`` and ``client_error_ms`` as objects."""
    if not isinstance(entry, dict):
        return "not an object"
    for key in ("settings", "client_error_ms", "levels"):
        if entry.get(key) is not None and not isinstance(entry[key], dict):
            return f"{key} is not an object"
    for level, figures in (entry.get("levels") or {}).items():
        if not isinstance(figures, dict):
            return f"level {clip(level, 60, ellipsis='...')!r} is not an object of figures"
        for metric, values in figures.items():
            where = f"level {clip(level, 60, ellipsis='...')!r}: {clip(metric, 60, ellipsis='...')}"
            if not isinstance(values, list):
                return f"{where} is not a list of numbers"
            # Each stored figure as every figure is checked where it enters: NaN, an infinity
            # or a number past 2^53 is named, never compared with.
            fault = next((f for f in (FIGURE.refusal(f"{where}[{i}]", v) for i, v in enumerate(values)) if f), None)
            if fault is not None:
                return fault
    return None


def _write(path: Path, data: dict[str, Any], key: str) -> None:
    from pytest_sglang.judge.baseline.store import write_baseline

    try:  # atomic, never through a link, scrubbed, the gate's file form
        write_baseline(path, {**data, "kind": BENCH_BASELINE_KIND, "key": key}, what="benchmark baseline")
    except _files.FileError as exc:
        raise BenchBaselineError(str(exc)) from None
