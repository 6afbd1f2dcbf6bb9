"""How fast and how large the HTML report of a big run is: a JSON report of 32 hosts with 10
benchmark levels each (goal: rendered in under 1 s, under 2 MB), and of the seed case's size.

    python benchmarks/report_html.py [--hosts 32] [--levels 10] [--repeat 5]

The report is made up here (:func:`synthetic_report`, valid against the report schema): every
host has the effective configuration of a real server (28 values with sources), six explain
findings, a lint and a baseline check, 15 tests, and one benchmark of ``--levels`` concurrency
levels with the server's /metrics view and a benchmark baseline of three repeats; one host in
four holds (failed levels), one in eight differs from the fleet. Prints, per size, the median
time to render the page with charts (the ``report`` extra) and without, and the page's size;
the Markdown summary too.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

EFFECTIVE = {
    "sglang_version": ("0.5.12", "/server_info version"),
    "max_running_requests": (48, "/server_info internal_states[0].effective_max_running_requests_per_dp"),
    "max_running_requests_total": (48, "effective.max_running_requests × dp_size (1)"),
    "max_total_num_tokens": (412160, "/server_info max_total_num_tokens"),
    "max_req_input_len": (262138, "/server_info max_req_input_len"),
    "chunked_prefill_size": (8192, "/server_info internal_states[0].chunked_prefill_size"),
    "context_len": (262144, "/v1/models data[0].max_model_len"),
    "tp_size": (4, "/server_info internal_states[0].tp_size"),
    "pp_size": (1, "/server_info internal_states[0].pp_size"),
    "dp_size": (1, "/server_info internal_states[0].dp_size"),
    "ep_size": (1, "/server_info internal_states[0].ep_size"),
    "gpu_count": (4, "nvidia-smi"),
    "gpu_name": ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "nvidia-smi"),
    "sm": (120, "nvidia-smi compute_cap"),
    "attention_backend": ("flashinfer", "/server_info internal_states[0].attention_backend"),
    "decode_cuda_graph": (True, "/server_info internal_states[0].disable_cuda_graph"),
    "decode_cuda_graph_max_bs": (512, "/server_info internal_states[0].cuda_graph_max_bs"),
    "prefill_cuda_graph": (True, "/server_info internal_states[0].disable_piecewise_cuda_graph"),
    "prefill_cuda_graph_backend": ("piecewise", "/server_info internal_states[0].disable_piecewise_cuda_graph"),
    "mem_fraction_static": (0.77714, "/server_info internal_states[0].mem_fraction_static"),
    "mamba_cache_size": (160, "/server_info internal_states[0].max_mamba_cache_size"),
    "schedule_policy": ("fcfs", "/server_info schedule_policy"),
    "speculative_algorithm": (None, "/server_info internal_states[0].speculative_algorithm"),
    "speculative_num_draft_tokens": (None, "/server_info internal_states[0].speculative_num_draft_tokens"),
    "flashinfer_allreduce_fusion": (False, "/server_info enable_flashinfer_allreduce_fusion"),
    "flashinfer_allreduce_fusion_requested": (False, "/server_info internal_states[0].enable_flashinfer_allreduce_fusion"),
    "radix_cache": (True, "/server_info disable_radix_cache"),
    "kv_cache_dtype": ("auto", "/server_info kv_cache_dtype"),
}
FINDINGS = [
    ("capacity.mamba-cap", "warning", "runtime.max_running_requests", "max_running_requests is capped by the mamba state cache", 48, 26),
    ("allreduce.fusion-noop-sm", "warning", "enable_flashinfer_allreduce_fusion", "FlashInfer allreduce fusion is requested but never runs on SM120", True, False),
    ("capacity.mamba-auto-no-buffer", "info", "mamba_scheduler_strategy", "mamba_scheduler_strategy auto becomes no_buffer", None, "no_buffer"),
    ("gpumem.chunked-prefill", "info", "chunked_prefill_size", "chunked_prefill_size is chosen from the GPU memory", None, 8192),
    ("gpumem.cuda-graph-max-bs", "info", "cuda_graph_max_bs", "cuda_graph_max_bs is chosen from the GPU memory and TP size", None, 512),
    ("mem.vlm-factor", "info", "mem_fraction_static", "mem_fraction_static is lowered for a multimodal model", None, 0.77714),
]
COUNTS = ("failed", "passed", "skipped", "xfailed", "xpassed", "error")


def _counts(**given: int) -> dict[str, int]:
    return {key: given.get(key, 0) for key in COUNTS}


def _stat(median: float, p99: float) -> dict[str, Any]:
    return {"count": 64, "mean": median, "median": median, "p90": (median + p99) / 2, "p99": p99, "max": p99 * 1.1}


def _level(concurrency: int, cap: int, held: bool, rng: random.Random) -> dict[str, Any]:
    queued = max(0, concurrency - cap)
    ttft = 10 + 2 * concurrency / 8 + 120 * queued / max(cap, 1)
    fails = held and queued > 0
    return {
        "name": f"concurrency={concurrency}",
        "mode": "concurrency",
        "concurrency": concurrency,
        "rate": None,
        "requests": max(64, concurrency),
        "completed": max(64, concurrency),
        "failed": 0,
        "output_throughput": 110.0 * min(concurrency, cap) * rng.uniform(0.9, 1.1),
        "request_throughput": 14.0 * min(concurrency, cap),
        "ttft": _stat(ttft * 0.6, ttft * rng.uniform(0.95, 1.05)),
        "itl": _stat(8.0 + concurrency / 32, 13.0 + concurrency / 16),
        "tpot": _stat(8.0, 9.5),
        "e2e": _stat(60.0, 90.0),
        "validity": {"verdict": "valid", "reasons": [], "loop_lag_p99_ms": 2.0, "loop_lag_max_ms": 6.0},
        "server": {"samples": 20, "peak_running": float(min(concurrency, cap)), "peak_queue": float(queued), "max_running_requests": cap, "reached_max_running": concurrency >= cap, "note": None},
        "verdict": "fail" if fails else "pass",
        "verdict_reasons": [f"concurrency={concurrency}: ttft_p99_ms {ttft:.1f} ms (limit <= 250.0 ms)"] if fails else [],
        "attempts": 1,
        "errors": [],
    }


def _benchmark(host: str, levels: int, held: bool, rng: random.Random) -> dict[str, Any]:
    cap = 26 if held else 48
    concurrencies = [2**i if i < 6 else 32 * (i - 4) for i in range(levels)]
    records = [_level(c, cap, held, rng) for c in concurrencies]
    baseline_levels = {
        lv["name"]: {
            "output_throughput": [lv["output_throughput"] * rng.uniform(0.9, 1.1) for _ in range(3)],
            "ttft_median_ms": [lv["ttft"]["median"] * rng.uniform(0.9, 1.1) for _ in range(3)],
            "ttft_p99_ms": [lv["ttft"]["p99"] * rng.uniform(0.9, 1.1) for _ in range(3)],
            "itl_median_ms": [lv["itl"]["median"] * rng.uniform(0.9, 1.1) for _ in range(3)],
            "itl_p99_ms": [lv["itl"]["p99"] * rng.uniform(0.9, 1.1) for _ in range(3)],
        }
        for lv in records
    }
    return {
        "test": f"test_gate.py::test_streams[{host}]",
        "host": host,
        "outcome": "failed" if held else "passed",
        "source": "pytest-sglang",
        "route": "generate",
        "repeats": 1,
        "settings": {"concurrency": concurrencies},
        "levels": records,
        "baseline": {"name": "streams", "key": "qwen35-122b-a10b-4x-rtx-pro-6000-0.5.12-tp4", "recorded": "2026-01-01T00:00:00Z", "levels": baseline_levels},
        "inconclusive": None,
        "message": "benchmark failed" if held else None,
    }


def _host(index: int, levels: int, rng: random.Random) -> dict[str, Any]:
    host = f"http://gpu{index:02d}.example:30000"
    held = index % 4 == 3
    drifts = index % 8 == 5
    effective = {}
    for name, (value, source) in EFFECTIVE.items():
        if held and name == "max_running_requests":
            value = 26
        if drifts and name == "schedule_policy":
            value = "lpm"
        requested = 48 if name == "max_running_requests" else None
        effective[name] = {"value": value, "source": source, "requested": requested, "requested_source": "launch command --max-running-requests" if requested else None, "note": "per data-parallel worker" if requested else None}
    findings = [
        {"id": rule, "rule": rule, "severity": severity, "status": "confirmed", "setting": setting, "title": title, "summary": f"{setting}: requested {asked!r}, in effect {got!r}", "requested": asked, "effective": got, "predicted": got, "lint": severity != "info"}
        for rule, severity, setting, title, asked, got in FINDINGS
    ]
    tests = [
        {"nodeid": f"test_gate.py::test_{n}[{host}]", "host": host, "outcome": "failed" if held and n == 0 else "passed", "duration": 0.01, "message": "assert 26 >= 48" if held and n == 0 else None, "check": False, "inconclusive": None, "values_read": []}
        for n in range(15)
    ]
    diff = {"path": "effective.max_running_requests", "baseline": 48, "live": 26, "status": "differs", "failing": True, "finding": "capacity.mamba-cap", "group": "max_running_requests", "baseline_source": EFFECTIVE["max_running_requests"][1], "live_source": EFFECTIVE["max_running_requests"][1], "note": None}
    baseline_check = {
        "check": "sglang-baseline",
        "host": host,
        "passed": not held,
        "failures": ["max_running_requests: 48 -> 26"] if held else [],
        "notes": [],
        "nodeid": f"::sglang-baseline[{host}]",
        "key": "qwen35-122b-a10b-4x-rtx-pro-6000-0.5.12-tp4",
        "file": "qwen35.json",
        "path": "baselines/qwen35.json",
        "baseline": "found",
        "diffs": [diff] if held else [],
        "groups": [{"name": "max_running_requests", "title": "max_running_requests = 26 (baseline: 48)", "line": "", "kind": "setting", "status": "differs", "failing": True, "note": None, "finding": "capacity.mamba-cap", "finding_summary": "requested 48, in effect 26", "findings": ["capacity.mamba-cap"], "follows_from": "mamba_cache_size 160 -> 132", "baseline_value": 48, "live_value": 26, "fields": ["effective.max_running_requests"], "consequences": []}] if held else [],
        "summary": "1 change(s) (1 field(s))" if held else "0 change(s) (0 field(s))",
    }
    lint = {"check": "sglang-lint", "host": host, "passed": not held, "failures": ["WARNING [capacity.mamba-cap] max_running_requests is capped"] if held else [], "notes": [], "nodeid": f"::sglang-lint[{host}]", "findings": ["capacity.mamba-cap"] if held else [], "accepted": []}
    reasons = ["1 test(s) failed", "check sglang-lint failed", "check sglang-baseline failed"] if held else []
    return {
        "host": host,
        "verdict": "hold" if held else "promote",
        "reasons": reasons,
        "error": None,
        "warnings": [],
        "facts": {
            "describe": "SGLang 0.5.12, Qwen/Qwen3.5-122B-A10B (Qwen3_5MoeForConditionalGeneration), 4x NVIDIA RTX PRO 6000 Blackwell Server Edition (SM120), tp 4",
            "origin": "http",
            "collected_at": "2026-01-01T00:00:00+00:00",
            "profile": None,
            "where": None,
            "sglang_version": "0.5.12",
            "model": "Qwen/Qwen3.5-122B-A10B",
            "architecture": "Qwen3_5MoeForConditionalGeneration",
            "gpu": "4x NVIDIA RTX PRO 6000 Blackwell Server Edition",
            "gpu_name": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
            "gpu_count": 4,
            "sm": 120,
            "tp_size": 4,
            "launch_command_known": True,
        },
        "effective": effective,
        "findings": findings,
        "explain_error": None,
        "tests": tests,
        "counts": _counts(failed=1, passed=14) if held else _counts(passed=15),
        "checks": [lint, baseline_check],
        "benchmarks": [_benchmark(host, levels, held, rng)],
    }


def synthetic_report(hosts: int = 32, levels: int = 10, seed: int = 0) -> dict[str, Any]:
    """A JSON report document of ``hosts`` hosts, each with a benchmark of ``levels`` levels."""
    rng = random.Random(seed)
    sections = [_host(i, levels, rng) for i in range(hosts)]
    held = [h for h in sections if h["verdict"] == "hold"]
    reasons = [f"{h['host']}: {'; '.join(h['reasons'])}" for h in held]
    return {
        "format": 1,
        "tool": {"name": "pytest-sglang", "version": "0.1.0"},
        "created_at": "2026-01-01T00:00:00+00:00",
        "exit_status": 1 if held else 0,
        "verdict": "hold" if held else "promote",
        "reasons": reasons,
        "counts": _counts(failed=3 * len(held), passed=sum(15 + 2 for _ in sections) - 3 * len(held)),
        "hosts": sections,
        "run_checks": [],
        "tests_without_host": [],
        "collection_errors": [],
    }


def _timed(fn: Any, repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=32)
    parser.add_argument("--levels", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    start = time.perf_counter()
    try:
        import leather  # noqa: F401  (imported once, as a run's first page does)
    except ImportError:
        drawn = False
    else:
        drawn = True
    imported = time.perf_counter() - start
    from pytest_sglang.render.report import html, markdown

    print(f"report extra (leather) installed: {drawn}" + (f"; its import: {imported:.3f} s" if drawn else " (pip install '.[report]' for the charts)"))
    for hosts, levels in ((2, 5), (args.hosts, args.levels)):
        doc = synthetic_report(hosts, levels)
        modes = [("charts", True), ("tables", False)] if drawn else [("tables", False)]
        for label, with_charts in modes:
            seconds, page = _timed(lambda: html.render(doc, charts=with_charts), args.repeat)
            size = len(page.encode("utf-8"))
            print(f"{hosts} hosts x {levels} levels, HTML with {label}: {seconds:.3f} s, {size / 1e6:.2f} MB ({size:,} bytes)")
        seconds, text = _timed(lambda: markdown.render(doc, html_link="report.html"), args.repeat)
        print(f"{hosts} hosts x {levels} levels, Markdown: {seconds:.3f} s, {len(text.encode('utf-8')):,} bytes")


if __name__ == "__main__":
    main()
