"""This package's load generator next to SGLang's own ``bench_serving``, against one simulator.

    python benchmarks/serving.py [--rates 25,50,100,200,400,800] [--streams 256]

One simulator process (``python -m pytest_sglang.sim``, a 0.5.23 profile with metrics on, a
running cap of 4096, so no request ever queues and the simulator's model says exactly what
each request should take, and a 20 ms decode step, as a GPU takes at a large batch) serves
every run, one after another. The table answers:

- does our client sustain N concurrent streams (closed loop: every request completed, and the
  client's own validity check passed)?
- what is the highest open-loop request rate (Poisson arrivals, as bench_serving sends them)
  each client sustains? Ours: every request completed, validity ``valid`` and the send rate
  reached >= 95% of the asked. bench_serving: every request completed, its measured request
  throughput >= 95% of the asked rate and its own duration within 5% of (prompts / rate). The
  highest sustained rate is the highest with every lower rate sustained too (every rate is
  run and shown; a client stops once it completes under half the asked rate). At least 400
  prompts per rate: the span of N Poisson arrivals varies by sqrt(N)/rate, 5% at 400, so a
  shorter level would fail or pass bench_serving by chance (ours judges its send rate
  against its own drawn schedule, so the draw does not matter to it). bench_serving 0.5.23
  sleeps each drawn gap *after* sending, so every late wake-up of its event loop adds up and
  lowers the rate it sends on a busy machine, and it times TTFT from the actual send: a
  client that falls behind measures a quieter load. Ours sends on an absolute schedule,
  times from the scheduled instant (falling behind shows as latency) and calls the level
  inconclusive;
- how far is the TTFT each client measures from what the simulator's model says (prefill =
  prefill_base_ms + prompt_tokens/1000 * prefill_ms_per_1k_tokens) and from what the simulator
  recorded itself (its sglang:time_to_first_token_seconds histogram: sum/count over the run)?
  At concurrency 1 and at N streams;
- how busy the simulator was (its CPU from /proc/PID/stat over the run's wall time): a
  simulator near a whole core would be the bottleneck, not the client. The machine's busy
  cores (/proc/stat) are shown too: on a machine where other work takes the cores, the
  simulator's own record of TTFT drifts above its model (it is starved, not busy) and both
  clients' event loops wake late.

bench_serving is run with the Python of the real-tier venv (``~/.cache/pytest-sglang/sglang-0.5.23``,
with ``datasets`` installed) through ``benchmarks/bench_serving_driver.py``; its wall time
includes importing SGLang, so the simulator's CPU for its runs is divided by the measured
duration it reports (the simulator is idle while it imports).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TypeVar

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_serving_driver import run_bench_serving  # noqa: E402

from pytest_sglang.collect.bench.load import load_spec, run_load  # noqa: E402
from pytest_sglang.model.bench import LevelResult  # noqa: E402
from pytest_sglang.simulator import load_profile  # noqa: E402
from pytest_sglang.simulator.launcher import SimProcess, start_simulator  # noqa: E402

BASE_PROFILE = "qwen35-122b-a10b-4xrtx6000-0.5.23"  # SGLang 0.5.23, --enable-metrics
CAP = 4096  # running requests: above every level, so nothing queues
# A decode step as a GPU takes it at a large batch (tens of ms), not the bundled profiles'
# 2 ms: at 256 streams the simulator then sends about 256/0.033 = 7.8k chunks a second, which
# one simulator process serves without being the bottleneck (it tops out near 14k on 2 cores).
DECODE_STEP_BASE_MS = 20.0
INPUT_LEN = 64
OUTPUT_LEN = 16
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
T = TypeVar("T")


# ---- the simulator's side ---------------------------------------------------------------


def profile_file(folder: Path) -> Path:
    """The base profile with the running cap raised, as a profile JSON the simulator reads."""
    data = json.loads(resources.files("pytest_sglang.simulator").joinpath("profiles").joinpath(f"{BASE_PROFILE}.json").read_text())
    data["name"] = f"{BASE_PROFILE}-cap{CAP}"
    data["runtime"]["effective_max_running_requests_per_dp"] = CAP
    data.setdefault("performance", {})["decode_step_base_ms"] = DECODE_STEP_BASE_MS
    path = folder / "profile.json"
    path.write_text(json.dumps(data))
    return path


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of a process (Linux /proc; psutil is not required)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


_SAMPLE = re.compile(r"^(sglang:[a-z_]+?)(?:\{[^}]*\})?\s+(\S+)$", re.M)


def server_counters(url: str) -> dict[str, float]:
    """The simulator's TTFT histogram sum/count and prompt-token/request counters (summed over labels)."""
    text = requests.get(f"{url}/metrics", timeout=10).text
    out: dict[str, float] = {}
    wanted = ("sglang:time_to_first_token_seconds_sum", "sglang:time_to_first_token_seconds_count", "sglang:prompt_tokens_total", "sglang:num_requests_total")
    for name, value in _SAMPLE.findall(text):
        if name in wanted:
            out[name] = out.get(name, 0.0) + float(value)
    return out


def machine_busy_s() -> float:
    """CPU seconds the whole machine has spent busy (every core, /proc/stat), for telling how
    much other work competed with the run."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / CLOCK_TICKS


@dataclass
class ServerSide:
    """What the simulator did during one run: CPU, and its own view of TTFT; and how busy the
    machine was meanwhile (cores, over the call's wall time)."""

    cpu_s: float
    ttft_mean_ms: float | None  # the simulator's histogram: sum / count over the run
    model_ttft_ms: float | None  # prefill by the profile's model for the run's mean prompt
    machine_cores: float = 0.0

    def cpu_of(self, seconds: float) -> float:
        return self.cpu_s / seconds if seconds > 0 else math.nan


def measured(sim: SimProcess, run: Callable[[], T]) -> tuple[T, ServerSide]:
    """``run()`` with the simulator's CPU and TTFT counters read around it."""
    perf = load_profile(BASE_PROFILE).performance
    before, cpu0, busy0, t0 = server_counters(sim.url), cpu_seconds(sim.process.pid), machine_busy_s(), time.perf_counter()
    value = run()
    cpu1, busy1, t1, after = cpu_seconds(sim.process.pid), machine_busy_s(), time.perf_counter(), server_counters(sim.url)

    def delta(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    count = delta("sglang:time_to_first_token_seconds_count")
    served = delta("sglang:num_requests_total")
    prompt = delta("sglang:prompt_tokens_total") / served if served else None
    return value, ServerSide(
        cpu_s=cpu1 - cpu0,
        ttft_mean_ms=1000 * delta("sglang:time_to_first_token_seconds_sum") / count if count else None,
        model_ttft_ms=perf.prefill_base_ms + prompt / 1000 * perf.prefill_ms_per_1k_tokens if prompt is not None else None,
        machine_cores=(busy1 - busy0) / (t1 - t0) if t1 > t0 else 0.0,
    )


# ---- the two clients ------------------------------------------------------------------


@dataclass
class Outcome:
    """One client's run of one level, with the verdict this comparison gives it."""

    client: str
    level: str
    level_result: LevelResult
    sustained: bool
    why: str
    server: ServerSide
    seconds: float  # the measured part, for the simulator's CPU share
    rate: float | None = None  # open loop: the rate asked

    @property
    def sim_cpu(self) -> float:
        return self.server.cpu_of(self.seconds)


def ours(sim: SimProcess, *, concurrency: int | None = None, rate: float | None = None, requests_n: int) -> Outcome:
    spec = load_spec(
        concurrency=[concurrency] if concurrency else [],
        rates=[rate] if rate else [],
        arrival="poisson",
        requests=requests_n,
        input_len=INPUT_LEN,
        output_len=OUTPUT_LEN,
        metrics_interval_s=0.25,
    )
    result, server = measured(sim, lambda: run_load(sim.url, spec, max_running=CAP))
    level = result.levels[0]
    v = level.validity
    problems = []
    if level.completed != requests_n:
        problems.append(f"{level.completed}/{requests_n} completed ({level.errors[:1]})")
    if v.verdict != "valid":
        problems.append("inconclusive: " + "; ".join(v.reasons[:-1] or v.reasons))
    # The send rate reached against the drawn schedule's own rate is part of the validity
    # check (>= 95%); against the nominal rate it would carry the Poisson draw's chance.
    if rate is not None and v.achieved_rate is None:
        problems.append("no send rate measured")
    sent = f" (sent {v.achieved_rate:.1f} req/s)" if v.achieved_rate is not None else ""
    return Outcome("ours", level.name, level, not problems, ("; ".join(problems) or "ok") + sent, server, level.duration_s)


def bench_serving(sim: SimProcess, *, concurrency: int | None = None, rate: float | None = None, requests_n: int) -> Outcome:
    run, server = measured(
        sim,
        lambda: run_bench_serving(
            sim.url, concurrency=concurrency, rate=rate, num_prompts=requests_n, input_len=INPUT_LEN, output_len=OUTPUT_LEN,
            extra_args=("--random-range-ratio", "1"),  # every prompt INPUT_LEN, every answer OUTPUT_LEN tokens
        ),
    )  # fmt: skip
    level = run.result.levels[0]
    problems = []
    if level.completed != requests_n:
        problems.append(f"{level.completed}/{requests_n} completed")
    if rate is not None:
        expected = requests_n / rate
        if level.request_throughput < 0.95 * rate:
            problems.append(f"throughput {level.request_throughput:.1f} req/s of {rate:g}")
        if level.duration_s > 1.05 * expected:
            # Poisson arrivals: the span of N sends itself varies by sqrt(N)/rate (one sigma).
            problems.append(f"took {level.duration_s:.2f} s, expected {expected:.2f} s (Poisson sigma {math.sqrt(requests_n) / rate:.2f} s)")
    name = f"concurrency={concurrency}" if rate is None else f"rate={rate:g}/s poisson"
    return Outcome("bench_serving", name, level, not problems, "; ".join(problems) or "ok", server, level.duration_s)


# ---- the table ------------------------------------------------------------------------


def fmt(value: float | None, unit: str, digits: int = 2) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f} {unit}"


def row(o: Outcome) -> str:
    lv = o.level_result
    v = lv.validity
    client_cpu = f"{v.client_cpu:.0%} core" if o.client == "ours" and v.client_cpu is not None else "n/a"
    lag = fmt(v.loop_lag_p99_ms, "ms") if o.client == "ours" else "n/a"
    return (
        f"  {o.client:<13} {o.level:<24} {lv.completed:>5}/{lv.requests:<5} {lv.request_throughput:>8.1f} req/s "
        f"{fmt(lv.ttft.median, 'ms'):>10} {fmt(lv.ttft.p99, 'ms'):>10}  sim CPU {o.sim_cpu:>4.0%} core  "
        f"client CPU {client_cpu:>9}  lag p99 {lag:>8}  machine busy {o.server.machine_cores:.2f} of {os.cpu_count()} cores  {'SUSTAINED' if o.sustained else 'NOT sustained'}: {o.why}"
    )


def ttft_errors(o: Outcome) -> str:
    lv, s = o.level_result, o.server
    model, server = s.model_ttft_ms, s.ttft_mean_ms
    err_p50 = lv.ttft.median - model if lv.ttft.median is not None and model is not None else None
    err_p99 = lv.ttft.p99 - model if lv.ttft.p99 is not None and model is not None else None
    err_mean = lv.ttft.mean - server if lv.ttft.mean is not None and server is not None else None
    return (
        f"  {o.client:<13} {o.level:<18} model {fmt(model, 'ms', 3):>9}  simulator recorded mean {fmt(server, 'ms', 3):>9}  "
        f"measured p50 {fmt(lv.ttft.median, 'ms', 3):>10} p99 {fmt(lv.ttft.p99, 'ms', 3):>10}  "
        f"error vs model p50 {fmt(err_p50, 'ms', 3):>10} p99 {fmt(err_p99, 'ms', 3):>10}  "
        f"error of the mean vs the simulator's record {fmt(err_mean, 'ms', 3):>9}"
    )


def ramp(rates: list[float], run: Callable[[float], Outcome]) -> tuple[list[Outcome], float | None]:
    """Every rate in order, so a level that failed by chance (a busy machine) does not hide
    the rest; a client stops once it completes less than half the asked rate (it is
    overloaded, higher rates only take time). Returns the outcomes and the highest rate
    sustained with every lower rate sustained too."""
    outcomes: list[Outcome] = []
    best: float | None = None
    unbroken = True
    for rate in rates:
        o = run(rate)
        o.rate = rate
        outcomes.append(o)
        print(row(o), flush=True)
        unbroken = unbroken and o.sustained
        if unbroken:
            best = rate
        if o.level_result.request_throughput < 0.5 * rate:
            break
    return outcomes, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="25,50,100,200,400,800,1600", help="open-loop request rates to ramp, requests/s")
    parser.add_argument("--streams", type=int, default=256, help="closed-loop concurrent streams")
    parser.add_argument("--seconds", type=float, default=4.0, help="open-loop level length: prompts = rate x this (at least 400)")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    started = time.perf_counter()
    busy0 = machine_busy_s()
    time.sleep(1.0)
    others = machine_busy_s() - busy0
    with tempfile.TemporaryDirectory(prefix="serving-bench-") as tmp:
        sim = start_simulator(str(profile_file(Path(tmp))))
        try:
            perf = load_profile(BASE_PROFILE).performance.model_copy(update={"decode_step_base_ms": DECODE_STEP_BASE_MS})
            print(
                f"simulator {sim.url} pid {sim.process.pid}: {BASE_PROFILE} with running cap {CAP}; prefill {perf.prefill_base_ms:g} ms "
                f"+ {perf.prefill_ms_per_1k_tokens:g} ms/1k tokens, decode step {perf.decode_step_base_ms:g} ms + "
                f"{perf.decode_step_ms_per_request:g} ms/running request; {INPUT_LEN} prompt tokens, {OUTPUT_LEN} output tokens "
                f"(ignore_eos), /generate streaming; {os.cpu_count()} CPUs on this machine, load average {os.getloadavg()[0]:.2f} at the start, "
                f"{others:.2f} cores busy with other work in the second before"
            )
            print(f"{'':2}{'client':<13} {'level':<24} {'completed':>11} {'throughput':>14} {'TTFT p50':>10} {'TTFT p99':>10}")
            print("low load (concurrency 1):")
            low = [ours(sim, concurrency=1, requests_n=64), bench_serving(sim, concurrency=1, requests_n=64)]
            for o in low:
                print(row(o), flush=True)
            print(f"{args.streams} concurrent streams (closed loop):")
            n = 4 * args.streams
            high = [ours(sim, concurrency=args.streams, requests_n=n), bench_serving(sim, concurrency=args.streams, requests_n=n)]
            for o in high:
                print(row(o), flush=True)
            print("open-loop rate ramp (Poisson arrivals):")

            def prompts(rate: float) -> int:
                return max(400, int(rate * args.seconds))

            ramp_ours, best_ours = ramp(rates, lambda r: ours(sim, rate=r, requests_n=prompts(r)))
            ramp_bs, best_bs = ramp(rates, lambda r: bench_serving(sim, rate=r, requests_n=prompts(r)))
        finally:
            sim.stop()
    print("TTFT against the simulator's model and its own record:")
    for o in low + high:
        print(ttft_errors(o))
    print("summary:")
    ours_high = high[0]
    print(
        f"  ours at {args.streams} concurrent streams: {ours_high.level_result.completed}/{ours_high.level_result.requests} completed, "
        f"validity {ours_high.level_result.validity.verdict} -> {'sustained' if ours_high.sustained else 'NOT sustained'} ({ours_high.why})"
    )
    print(f"  highest sustained open-loop rate (every lower rate sustained too): ours {fmt(best_ours, 'req/s', 0)}, bench_serving {fmt(best_bs, 'req/s', 0)} (of {args.rates} req/s)")
    for name, outcomes in (("ours", ramp_ours), ("bench_serving", ramp_bs)):
        passed = [o.rate for o in outcomes if o.sustained]
        print(f"  {name}: rates sustained {', '.join(f'{r:g}' for r in passed if r is not None) or 'none'} req/s of {len(outcomes)} run")
    for o in (low[0], high[0], high[1]):
        lv, model = o.level_result, o.server.model_ttft_ms
        if lv.ttft.p99 is not None and model is not None:
            which = "p50" if o in low else "p99"
            value = lv.ttft.median if o in low else lv.ttft.p99
            assert value is not None
            print(f"  {o.client} {o.level}: TTFT {which} error vs the simulator's model {value - model:+.3f} ms ({value:.3f} ms measured, {model:.3f} ms modelled)")
    print(f"  total {time.perf_counter() - started:.0f} s; load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
