"""Benchmarking a target from scripts and tests: the budget, repeats, thresholds and baselines.

``Bench(target).run(concurrency=[1, 48], requests=200)`` returns a :class:`BenchResult`;
``expect(result, "p99 ttft <= 250 ms")`` raises :class:`BenchFailed` (or
:class:`BenchInconclusive` when the client was the bottleneck). The pytest fixture
``sglang_bench`` is this, bound to the test's host and the run's budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from pytest_sglang.base import reads as _reads
from pytest_sglang.base.errors import SGLangError, SpecError
from pytest_sglang.collect.bench.load import LoadGenerator, LoadSpec, Progress, load_spec
from pytest_sglang.judge.bench.compare import DEFAULT_METRICS, MetricChange, compare_to_baseline, levels_missing, too_few_runs
from pytest_sglang.judge.bench.expect import corroboration, judge, request_failures
from pytest_sglang.model.bench import BenchResult

Mode = Literal["off", "smoke", "full"]
SMOKE_MAX_REQUESTS = 32
SMOKE_MAX_DURATION_S = 15.0
FULL_REPEATS = 3


class BenchFailed(AssertionError):
    """A threshold or a baseline comparison failed; the message lists each failing figure."""


class BenchInconclusive(SGLangError):
    """The client's own error could change the verdict of a judged level: neither pass nor
    fail. ``levels`` names the levels that could not be told."""

    def __init__(self, message: str, levels: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.levels = list(levels)


# An inconclusive level is run again at most this many times before the verdict stands.
INCONCLUSIVE_RERUNS = 2


class Budget(BaseModel):
    """What the run allows against live hosts: ``off`` (no benchmark), ``smoke`` (a few
    requests per level, one run) or ``full`` (the pattern as written, repeated), each capped
    by ``max_requests`` and ``max_duration_s`` per level when given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Mode = "off"
    max_requests: int | None = None
    max_duration_s: float | None = None
    processes: int | None = None
    max_lag_ms: float | None = None  # overrides ClientLimits.max_lag_ms

    def apply(self, spec: LoadSpec, repeats: int | None) -> tuple[LoadSpec, int, list[str]]:
        """The spec and repeat count this budget allows, and notes on what it cut."""
        notes: list[str] = []
        max_requests = self.max_requests
        max_duration = self.max_duration_s
        runs = repeats if repeats is not None else FULL_REPEATS
        if self.mode == "smoke":
            max_requests = min(max_requests or SMOKE_MAX_REQUESTS, SMOKE_MAX_REQUESTS)
            max_duration = min(max_duration or SMOKE_MAX_DURATION_S, SMOKE_MAX_DURATION_S)
            if runs > 1:
                notes.append(f"smoke budget: 1 run instead of {runs}")
            runs = 1
        update: dict[str, Any] = {}
        if self.processes is not None:
            update["processes"] = self.processes
        if self.max_lag_ms is not None:
            update["limits"] = spec.limits.model_copy(update={"max_lag_ms": self.max_lag_ms})
        if max_requests is not None:
            cap = max([max_requests, *spec.concurrency])  # a level of concurrency N needs N requests to reach N
            planned = [spec.level_requests(concurrency=c) for c in spec.concurrency] + [spec.level_requests(rate=r) for r in spec.rates]
            if any(n is None or n > cap for n in planned):
                update["requests"] = cap if spec.requests is None else min(cap, spec.requests)
                notes.append(f"{self.mode} budget: at most {update['requests']} requests per level")
        if max_duration is not None and (spec.duration_s is None or spec.duration_s > max_duration):
            update["duration_s"] = max_duration
            notes.append(f"{self.mode} budget: at most {max_duration:g} s per level")
        return (spec.model_copy(update=update) if update else spec), runs, notes


class Bench:
    """Benchmarks of one target. ``target`` is a :class:`~pytest_sglang.target.target.Target` (a live
    server or a simulated one); a replayed capture has no server to load."""

    def __init__(
        self,
        target: Any,
        *,
        budget: Budget | None = None,
        progress: Callable[[Progress], None] | None = None,
        on_result: Callable[[BenchResult], None] | None = None,
    ) -> None:
        self.target = target
        self.budget = budget or Budget(mode="full")
        self.progress = progress
        self.on_result = on_result
        self.results: list[BenchResult] = []
        # What each result was run with, to run an inconclusive level again.
        self._plans: dict[int, tuple[LoadSpec, int]] = {}

    # -- running ----------------------------------------------------------------------

    def run(self, *, repeats: int | None = None, **pattern: Any) -> BenchResult:
        """Run a load pattern (:class:`LoadSpec` fields: concurrency, rates, requests,
        duration_s, input_len, output_len, route, slo, ...) ``repeats`` times (default 3 under a
        full budget, 1 under smoke) and return the result; each repeat is in ``result.repeats``."""
        if self.budget.mode == "off":
            raise SpecError("benchmarks are off: run with --sglang-bench=smoke or --sglang-bench=full")
        client = getattr(self.target, "client", None)
        url = getattr(self.target, "url", None)
        if client is None or not url:
            raise SpecError(f"{self.target.name}: a replayed capture has no server to benchmark; give a live host or a sim:// target")
        if isinstance(pattern.get("slo"), dict):
            from pytest_sglang.collect.bench.stats import SLO

            pattern["slo"] = SLO(**pattern["slo"])
        model = self._model_name()
        if model and pattern.get("route", "generate") != "generate":
            pattern.setdefault("model", model)
        spec, runs, notes = self.budget.apply(load_spec(**pattern), repeats)
        outcomes = self._outcomes(spec, runs)
        result = outcomes[0].model_copy(update={"repeats": [o.levels for o in outcomes] if len(outcomes) > 1 else []})
        result.sglang_version = self.target.version
        result.model = model
        for level in result.levels:
            level.notes += notes
            # A figure refused in any repeat is the level's: the record of the result holds it.
            level.refused = list(dict.fromkeys([*level.refused, *(r for run in result.repeats for lv in run if lv.name == level.name for r in lv.refused)]))
        self._plans[id(result)] = (spec, runs)
        self.results.append(result)
        self._publish(result)
        return result

    def _outcomes(self, spec: LoadSpec, runs: int) -> list[BenchResult]:
        generator = LoadGenerator(
            self.target.url,
            spec,
            headers=self.target.client.auth_headers(),
            name=self.target.name,
            max_running=self._max_running(),
            progress=self.progress,
        )
        return [generator.run() for _ in range(max(1, runs))]

    def _publish(self, result: BenchResult) -> None:
        if self.on_result is not None:
            self.on_result(result)

    def rerun(self, result: BenchResult, names: Sequence[str], why: str) -> bool:
        """Run the named levels of ``result`` again (each repeat too) and put the new runs in
        its place; False when the result was not run here or names no level of it."""
        plan = self._plans.get(id(result))
        if plan is None:
            return False
        spec, runs = plan
        done = False
        for name in names:
            try:
                old = result.level(name)
            except KeyError:
                continue
            only = {"concurrency": [old.concurrency], "rates": []} if old.mode == "concurrency" else {"concurrency": [], "rates": [old.rate]}
            outcomes = self._outcomes(spec.model_copy(update=only), runs)
            fresh = [o.levels[0] for o in outcomes]
            for level in fresh:
                level.attempts = old.attempts + 1
                level.notes = [*old.notes, f"attempt {old.attempts} was inconclusive: {why}"]
            fresh[0].refused = list(dict.fromkeys([*old.refused, *(r for level in fresh for r in level.refused)]))
            result.levels[result.levels.index(old)] = fresh[0]
            if result.repeats:
                result.repeats = [[fresh[i] if lv.name == name else lv for lv in run] for i, run in enumerate(result.repeats)]
            done = True
        return done

    def _max_running(self) -> int | None:
        # Read for the benchmark's own use: not a value the test asserted on.
        with _reads.paused():
            try:
                effective = self.target.effective
            except SGLangError:
                return None
            return effective.max_running_requests_total or effective.max_running_requests

    def _model_name(self) -> str | None:
        with _reads.paused():
            try:
                info = self.target.model_info
                args = self.target.server_args
            except SGLangError:
                return None
            return info.served_model_name or args.served_model_name or info.model_path or args.model_path

    # -- judging ------------------------------------------------------------------------

    def expect(self, result: BenchResult, *thresholds: str, level: int | float | str | Sequence[int | float | str] | None = None) -> None:
        """:func:`expect`, with an inconclusive level run again (at most
        ``INCONCLUSIVE_RERUNS`` times) before the verdict stands."""
        try:
            for attempt in range(INCONCLUSIVE_RERUNS + 1):
                try:
                    expect(result, *thresholds, level=level)
                    return
                except BenchInconclusive as exc:
                    if attempt == INCONCLUSIVE_RERUNS or not self.rerun(result, exc.levels, str(exc)):
                        raise
        finally:
            self._publish(result)

    def load(self, path: str) -> BenchResult:
        """A ``sglang.bench_serving`` result (printed block or ``--output-file`` JSONL)."""
        from pytest_sglang.collect.bench.bench_serving import load_bench_serving

        result = load_bench_serving(path)
        self.results.append(result)
        if self.on_result is not None:
            self.on_result(result)
        return result


def _chosen(result: BenchResult, level: int | float | str | Sequence[int | float | str] | None) -> list[Any]:
    if level is None:
        return list(result.levels)
    keys = [level] if isinstance(level, (int, float, str)) else list(level)
    try:
        return [result.level(k) for k in keys]
    except KeyError as exc:
        raise SpecError(str(exc.args[0])) from None


def expect(result: BenchResult, *thresholds: str, level: int | float | str | Sequence[int | float | str] | None = None) -> None:
    """Every threshold holds at every chosen level (all levels by default), and no request failed
    (unless a threshold limits ``error_rate`` or ``failed``).

    Raises :class:`BenchFailed` listing each failure with what the server said about the level,
    or :class:`BenchInconclusive` when the client's own error could change a verdict."""
    levels = _chosen(result, level)
    verdict = judge(result, thresholds, levels=levels)
    host = result.target or "the target"
    if verdict.failures:
        lines = [f"benchmark failed on {host}: {len(verdict.failures)} failure(s):"]
        lines += [f"  {line}" for line in verdict.failures]
        failed_levels = {line.split(":", 1)[0] for line in verdict.failures}
        for lv in levels:
            if lv.name in failed_levels:
                note = corroboration(lv)
                if note:
                    lines.append(f"  {lv.name}: {note}")
                if lv.attempts > 1:
                    lines.append(f"  {lv.name}: measured on attempt {lv.attempts} (earlier attempts were inconclusive)")
        lines += [f"  inconclusive: {line}" for line in verdict.inconclusive]
        raise BenchFailed("\n".join(lines))
    if verdict.inconclusive:
        names = list(dict.fromkeys(line.split(":", 1)[0] for line in verdict.inconclusive))
        attempts = max((lv.attempts for lv in levels if lv.name in names), default=1)
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        raise BenchInconclusive(f"inconclusive on {host}{tries}: " + "; ".join(verdict.inconclusive), names)


def compare(
    result: BenchResult,
    entry: dict[str, Any],
    *,
    name: str = "benchmark",
    metrics: Sequence[str] = DEFAULT_METRICS,
    tolerance: float = 0.05,
    alpha: float = 0.05,
    min_delta_ms: float = 5.0,
) -> list[MetricChange]:
    """Compare with a stored baseline entry; raises :class:`BenchFailed` on a regression.
    Returns every compared metric (improvements and undecided changes included)."""
    errors = [line for line in (request_failures(lv) for lv in result.levels) if line]
    if errors:
        raise BenchFailed("\n".join([f"{name}: requests failed on {result.target}:", *(f"  {line}" for line in errors)]))
    changes = compare_to_baseline(entry, result, metrics=metrics, tolerance=tolerance, alpha=alpha, name=name, min_delta_ms=min_delta_ms)
    failing = [c for c in changes if c.failing]
    unsure = [c for c in changes if c.status == "inconclusive"]
    # A level whose runs could never show a change at alpha is not compared: never a pass.
    thin = too_few_runs(changes, alpha)
    for lv in result.levels:
        mine = [c for c in changes if c.level == lv.name]
        if mine and not any(c.failing for c in mine) and lv.name in thin:
            lv.judge("inconclusive", [thin[lv.name]])
        elif mine:
            lv.judge("fail" if any(c.failing for c in mine) else "inconclusive" if any(c.status == "inconclusive" for c in mine) else "pass", [c.line() for c in mine if c.failing or c.status == "inconclusive"])
    if failing:
        lines = [f"{name}: {len(failing)} figure(s) regressed against the baseline on {result.target}:"]
        lines += [f"  {c.line()}" for c in failing]
        for lv in result.levels:
            if any(c.level == lv.name for c in failing):
                note = corroboration(lv)
                if note:
                    lines.append(f"  {lv.name}: {note}")
        raise BenchFailed("\n".join(lines))
    if thin:  # no level named: running it again gives as few runs
        raise BenchInconclusive(f"inconclusive on {result.target}: {name}: " + "; ".join(thin.values()))
    if unsure:
        raise BenchInconclusive(f"inconclusive on {result.target}: {name}: " + "; ".join(c.line() for c in unsure), list(dict.fromkeys(c.level for c in unsure)))
    missing = levels_missing(entry, result)
    if missing and not changes:
        raise BenchInconclusive(f"inconclusive on {result.target}: {name}: no level was measured to compare with the baseline (baseline levels: {', '.join(missing)})", missing)
    return changes
