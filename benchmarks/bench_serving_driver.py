"""Running the real ``sglang.bench_serving`` against a URL and importing what it measured.

A speed comparison puts this package's load generator side by side with SGLang's own client;
this helper runs the latter the same way every time and returns its result as a
:class:`BenchResult` (imported from its ``--output-file`` JSONL with ``--output-details``, so
TTFT and ITL come from the per-request figures) together with what the client itself cost:
wall time and the CPU seconds of its process (user + system, from the child's own rusage).

    python benchmarks/bench_serving_driver.py http://127.0.0.1:30000 --concurrency 8 --num-prompts 50
    python benchmarks/bench_serving_driver.py http://127.0.0.1:30000 --rate 20 --num-prompts 200

The client is the Python of the SGLang venv the real-tier tests install
(``~/.cache/pytest-sglang/sglang-0.5.23``); ``PYTEST_SGLANG_REAL_VENV`` points elsewhere. It runs
offline (``HF_HUB_OFFLINE=1``) with a local tokenizer and ``random-ids`` prompts, so it never
needs the network beyond the target. Its wall time includes importing SGLang (about 10 s of CPU
on a 2-core machine, see :func:`startup_cost`) and one warm-up request; the level's
``duration_s`` is the measured part.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pytest_sglang.base.errors import SGLangError
from pytest_sglang.collect.bench.bench_serving import load_bench_serving
from pytest_sglang.model.bench import BenchResult

DEFAULT_VENV = Path.home() / ".cache" / "pytest-sglang" / "sglang-0.5.23"
DEFAULT_TOKENIZER = Path.home() / ".cache" / "pytest-sglang" / "models" / "tiny-llama"


class DriverError(SGLangError):
    """bench_serving could not be run, or ended without a result."""


@dataclass(frozen=True)
class DriverRun:
    """One bench_serving run: its imported result and what the client cost to run it."""

    result: BenchResult
    wall_s: float  # from starting the client to its exit
    cpu_s: float  # user + system seconds of the client process and anything it waited for
    command: list[str]
    output: str  # what it printed (stdout and stderr)

    @property
    def cpu_fraction(self) -> float:
        """Cores' worth of CPU the client used over its wall time."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0


def venv_python() -> Path:
    """The Python of the SGLang venv: ``$PYTEST_SGLANG_REAL_VENV/bin/python`` or the default."""
    root = Path(os.environ.get("PYTEST_SGLANG_REAL_VENV") or DEFAULT_VENV).expanduser()
    python = root / "bin" / "python"
    if not python.is_file():
        raise DriverError(f"no SGLang venv at {root} (no bin/python); set PYTEST_SGLANG_REAL_VENV to one with sglang installed")
    return python


def command(
    url: str,
    output_file: Path,
    *,
    concurrency: int | None = None,
    rate: float | None = None,
    num_prompts: int = 50,
    input_len: int = 64,
    output_len: int = 16,
    backend: str = "sglang",
    tokenizer: Path = DEFAULT_TOKENIZER,
    seed: int = 1,
    extra_args: tuple[str, ...] = (),
) -> list[str]:
    """The bench_serving command line for one level (a concurrency, a rate, or both)."""
    if concurrency is None and rate is None:
        raise DriverError("give a concurrency or a request rate (both bound the load; neither sends every prompt at once)")
    argv = [
        str(venv_python()), "-m", "sglang.bench_serving",
        "--backend", backend,
        "--base-url", url.rstrip("/"),
        "--dataset-name", "random-ids",
        "--tokenizer", str(tokenizer),
        "--num-prompts", str(num_prompts),
        "--random-input-len", str(input_len),
        "--random-output-len", str(output_len),
        "--seed", str(seed),
        "--disable-tqdm",
        "--output-file", str(output_file),
        "--output-details",
    ]  # fmt: skip
    if concurrency is not None:
        argv += ["--max-concurrency", str(concurrency)]
    argv += ["--request-rate", "inf" if rate is None else f"{rate:g}"]
    return argv + list(extra_args)


def run_bench_serving(
    url: str,
    *,
    concurrency: int | None = None,
    rate: float | None = None,
    num_prompts: int = 50,
    input_len: int = 64,
    output_len: int = 16,
    backend: str = "sglang",
    tokenizer: Path = DEFAULT_TOKENIZER,
    seed: int = 1,
    extra_args: tuple[str, ...] = (),
    timeout_s: float = 900.0,
) -> DriverRun:
    """Runs bench_serving once against ``url`` and imports its JSONL. The CPU time is the
    child's own (``os.wait4``), so other work in this process does not count towards it."""
    with tempfile.TemporaryDirectory(prefix="bench-serving-") as tmp:
        jsonl = Path(tmp) / "result.jsonl"
        log = Path(tmp) / "output.txt"
        argv = command(
            url, jsonl, concurrency=concurrency, rate=rate, num_prompts=num_prompts, input_len=input_len,
            output_len=output_len, backend=backend, tokenizer=tokenizer, seed=seed, extra_args=extra_args,
        )  # fmt: skip
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
        with log.open("wb") as sink:
            start = time.perf_counter()
            child = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
            status, cpu_s = _wait(child, timeout_s)
            wall_s = time.perf_counter() - start
        output = log.read_text(encoding="utf-8", errors="replace")
        if status != 0:
            last = next((line for line in reversed(output.splitlines()) if line.strip()), "no output")
            raise DriverError(f"bench_serving exited with status {status}: {last.strip()[:200]}")
        if not jsonl.is_file():
            raise DriverError("bench_serving wrote no result file (every request failed?)")
        result = load_bench_serving(jsonl, origin=f"bench_serving {backend} {url}")
    return DriverRun(result=result, wall_s=wall_s, cpu_s=cpu_s, command=argv, output=output)


def startup_cost(timeout_s: float = 300.0) -> tuple[float, float]:
    """Wall and CPU seconds of only starting bench_serving's interpreter and importing it.

    Importing SGLang costs several seconds of CPU, far more than the client spends sending a
    few hundred requests; a comparison of clients subtracts this (or compares per request)
    rather than charging it to the load it generates."""
    argv = [str(venv_python()), "-c", "import sglang.bench_serving"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env)
    status, cpu_s = _wait(child, timeout_s)
    if status != 0:
        raise DriverError(f"importing sglang.bench_serving failed with status {status}")
    return time.perf_counter() - start, cpu_s


def _wait(child: subprocess.Popen[bytes], timeout_s: float) -> tuple[int, float]:
    """The child's exit status and CPU seconds; killed (and reported) past the timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid == child.pid:
            child.returncode = os.waitstatus_to_exitcode(status)
            return child.returncode, usage.ru_utime + usage.ru_stime
        if time.monotonic() > deadline:
            child.kill()
            os.wait4(child.pid, 0)
            child.returncode = -9
            raise DriverError(f"bench_serving took longer than {timeout_s:g} s and was stopped")
        time.sleep(0.02)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("url")
    parser.add_argument("--concurrency", type=int)
    parser.add_argument("--rate", type=float, help="requests per second (Poisson arrivals)")
    parser.add_argument("--num-prompts", type=int, default=50)
    parser.add_argument("--input-len", type=int, default=64)
    parser.add_argument("--output-len", type=int, default=16)
    parser.add_argument("--backend", default="sglang")
    parser.add_argument("--tokenizer", type=Path, default=DEFAULT_TOKENIZER)
    parser.add_argument("--json", action="store_true", help="print the imported BenchResult as JSON")
    parser.add_argument("--startup", action="store_true", help="also measure importing bench_serving alone")
    args = parser.parse_args(argv)
    try:
        run = run_bench_serving(
            args.url, concurrency=args.concurrency, rate=args.rate, num_prompts=args.num_prompts,
            input_len=args.input_len, output_len=args.output_len, backend=args.backend, tokenizer=args.tokenizer,
        )  # fmt: skip
    except SGLangError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(run.result.model_dump_json(indent=2))
        return 0
    for level in run.result.levels:
        print(
            f"{level.name}: {level.completed}/{level.requests} ok in {level.duration_s:.2f} s, "
            f"{level.request_throughput:.1f} req/s, {level.output_throughput:.0f} tok/s, "
            f"TTFT p50/p99 {level.ttft.median or 0:.2f}/{level.ttft.p99 or 0:.2f} ms, "
            f"ITL p99 {level.itl.p99 or 0:.2f} ms"
        )
    print(f"client: {run.wall_s:.2f} s wall, {run.cpu_s:.2f} s CPU ({run.cpu_fraction:.0%} of a core)")
    if args.startup:
        wall_s, cpu_s = startup_cost()
        print(f"of which starting it: about {wall_s:.2f} s wall, {cpu_s:.2f} s CPU (importing sglang.bench_serving alone)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
