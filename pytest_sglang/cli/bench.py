"""``pytest-sglang bench TARGET``: run a serving benchmark (or import one) and judge it.

    pytest-sglang bench sim://qwen35-122b-a10b-4xrtx6000-baseline --concurrency 1,48 --requests 96 \\
        --expect "p99 ttft <= 50 ms" --level 48
    pytest-sglang bench --import bench_serving_results.jsonl --expect "output_throughput >= 200"

Exit codes: 0 every threshold holds; 1 a threshold failed, a request failed on a judged level,
or a level had no successful request; 2 bad usage or input; 3 the target could not be read;
4 inconclusive (the client's own timing error could change a verdict, or a figure the server
answered was refused: NaN, an infinity, out of its range).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pytest_sglang.base.errors import SpecError
from pytest_sglang.base.secrets import scrub

EXIT_INCONCLUSIVE = 4


def _numbers(text: str, kind: type, what: str) -> list[Any]:
    try:
        values = [kind(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SpecError(f"--{what} {text!r}: give comma-separated numbers, e.g. 1,8,32") from None
    if not values:
        raise SpecError(f"--{what}: give at least one number")
    return values


def _length(text: str, what: str) -> int | tuple[int, int]:
    try:
        if ":" in text:
            low, high = text.split(":", 1)
            return (int(low), int(high))
        return int(text)
    except ValueError:
        raise SpecError(f"--{what} {text!r}: give a number of tokens or a range LOW:HIGH, e.g. 128 or 64:256") from None


def _slo(text: str | None) -> dict[str, float]:
    if not text:
        return {}
    out: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        key = f"{name.strip().lower()}_ms"
        if not sep or key not in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
            raise SpecError(f"--slo {text!r}: write NAME=MS pairs with NAME one of ttft, tpot, itl, e2e, e.g. ttft=200,tpot=50")
        try:
            out[key] = float(value)
        except ValueError:
            raise SpecError(f"--slo {text!r}: {value!r} is not a number of milliseconds") from None
    return out


def add_parser(subparsers: Any) -> None:
    from pytest_sglang.cli.main import add_target_options, seconds

    p = subparsers.add_parser(
        "bench",
        help="benchmark serving (or import a sglang.bench_serving result) and check thresholds",
        description="Run a serving benchmark against a target with a client that measures itself, or import a "
        "sglang.bench_serving result, print the figures per level and check thresholds. Exit 4 when the client was "
        "the bottleneck on a judged level (inconclusive).",
    )
    p.add_argument("target", metavar="TARGET", nargs="?", help="http(s)://HOST:PORT or sim://PROFILE")
    p.add_argument("--import", dest="import_file", metavar="FILE", help="a sglang.bench_serving printed result or --output-file JSONL, instead of running ('-': standard input)")
    load = p.add_argument_group("load pattern")
    load.add_argument("--concurrency", metavar="N,N", help="closed-loop concurrency levels, e.g. 1,8,32,48,64")
    load.add_argument("--rate", metavar="R,R", help="open-loop request rates (requests/s), e.g. 5,10,20")
    load.add_argument("--arrival", choices=("poisson", "constant"), default="poisson", help="open-loop arrivals (default poisson)")
    load.add_argument("--seed", type=int, default=0, help="seed of prompts and arrivals (default 0)")
    load.add_argument("--requests", type=int, metavar="N", help="requests per level")
    load.add_argument("--duration", type=seconds, metavar="SECONDS", help="seconds per level (no request is sent after it)")
    load.add_argument("--warmup", type=int, default=4, metavar="N", help="unmeasured requests first (default 4)")
    load.add_argument("--input-len", default="128", metavar="N|LOW:HIGH", help="prompt tokens (default 128)")
    load.add_argument("--output-len", default="32", metavar="N|LOW:HIGH", help="output tokens (default 32)")
    load.add_argument("--shared-prefix", type=int, default=0, metavar="N", help="tokens every prompt shares (exercises the prefix cache)")
    load.add_argument("--route", choices=("generate", "completions", "chat"), default="generate", help="/generate (default), /v1/completions or /v1/chat/completions")
    load.add_argument("--slo", metavar="ttft=MS,tpot=MS,...", help="SLOs for goodput")
    load.add_argument("--processes", type=int, default=1, metavar="N", help="client processes sharing each level (default 1)")
    load.add_argument("--repeats", type=int, default=1, metavar="N", help="run the pattern N times (default 1)")
    judge = p.add_argument_group("judging")
    judge.add_argument("--expect", action="append", default=[], metavar="THRESHOLD", help="e.g. 'p99 ttft <= 250 ms' or 'output_throughput >= 900' (repeatable)")
    judge.add_argument("--level", action="append", default=[], metavar="LEVEL", help="judge only this level (concurrency, rate or level name; repeatable)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("-o", "--output", metavar="FILE", help="also write the result as JSON to FILE")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on standard error while levels run")
    add_target_options(p, host_access=False, sm=False)
    p.set_defaults(func=run)


def _level_key(text: str) -> int | float | str:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def run(args: argparse.Namespace) -> int:
    from pytest_sglang.judge.bench.api import Bench, BenchFailed, BenchInconclusive, Budget, expect
    from pytest_sglang.judge.bench.expect import request_failures
    from pytest_sglang.render.bench import render_result

    if bool(args.target) == bool(args.import_file):
        raise SpecError("give a TARGET to benchmark or --import FILE, one of them")
    if args.output:
        _check_output(args.output, args.import_file)
    if args.import_file:
        from pytest_sglang.collect.bench.bench_serving import load_bench_serving

        result = load_bench_serving(_import_text(), origin="standard input") if args.import_file == "-" else load_bench_serving(args.import_file)
    else:
        if not args.concurrency and not args.rate:
            raise SpecError("give --concurrency N,N or --rate R,R (or both)")
        pattern: dict[str, Any] = {
            "concurrency": _numbers(args.concurrency, int, "concurrency") if args.concurrency else [],
            "rates": _numbers(args.rate, float, "rate") if args.rate else [],
            "arrival": args.arrival,
            "seed": args.seed,
            "requests": args.requests,
            "duration_s": args.duration,
            "warmup": args.warmup,
            "input_len": _length(args.input_len, "input-len"),
            "output_len": _length(args.output_len, "output-len"),
            "shared_prefix": args.shared_prefix,
            "route": args.route,
            "processes": args.processes,
        }
        slo = _slo(args.slo)
        if slo:
            pattern["slo"] = slo
        from pytest_sglang.cli.main import connect_target

        with connect_target(args.target, args) as target:
            progress = None if args.quiet else _stderr_progress
            result = Bench(target, budget=Budget(mode="full"), progress=progress).run(repeats=args.repeats, **pattern)
    data = scrub(json.dumps(result.model_dump(mode="json"), indent=2))
    if args.output:
        from pytest_sglang.base.files import write_text

        write_text(args.output, data + "\n", what="benchmark result")
    print(data if args.json else scrub(render_result(result)))
    empty = [line for line in (request_failures(lv) for lv in result.levels if not lv.completed) if line]
    if empty:
        for line in empty:
            print(scrub(f"nothing measured: {line}"), file=sys.stderr)
        return 1
    if not args.expect:
        return 0
    levels = [_level_key(text) for text in args.level] or None
    try:
        expect(result, *args.expect, level=levels)
    except BenchFailed as exc:
        print(scrub(str(exc)), file=sys.stderr)
        return 1
    except BenchInconclusive as exc:
        print(scrub(f"inconclusive: {exc}"), file=sys.stderr)
        return EXIT_INCONCLUSIVE
    refused = [f"{lv.name}: {fault}" for lv in result.levels for fault in lv.refused]
    if refused:  # a figure that is none was left out: the thresholds held over what was kept
        for line in refused:
            print(scrub(f"inconclusive: figure refused: {line}"), file=sys.stderr)
        return EXIT_INCONCLUSIVE
    print(f"every threshold holds ({len(args.expect)} checked)", file=sys.stderr)
    return 0


def _check_output(output: str, import_file: str | None) -> None:
    """``-o FILE`` before anything runs: a file name, not the file imported, writable."""
    from pytest_sglang.base import files

    if output.strip() == "-":
        raise SpecError("-o -: give a file path (--json prints the result on standard output)")
    if import_file and import_file != "-":
        files.check_distinct([(f"--import {import_file}", import_file), (f"-o {output}", output)])
    files.check_writable(output, what="benchmark result")


def _import_text() -> str:
    """``--import -``: bench_serving's printed result or JSONL on standard input, at most the
    size a file may be."""
    from pytest_sglang.base import files
    from pytest_sglang.collect.bench.bench_serving import IMPORT_CAP_BYTES

    text = files.read_stream(sys.stdin, cap_chars=IMPORT_CAP_BYTES, what="--import - (standard input)")
    return text if "\n" in text else text + "\n"  # text, never taken for a file name


def _stderr_progress(progress: Any) -> None:
    from pytest_sglang.render.bench import progress_line

    print(scrub(progress_line(progress)), file=sys.stderr, flush=True)
