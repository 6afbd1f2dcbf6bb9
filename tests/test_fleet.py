"""Fleet drift as users run it: ``--sglang-fleet`` with several hosts, replicas that agree,
a replica that drifted, the fleet's per-field policy, an unreadable host, xdist, and hosts
opened in parallel."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import pytest_sglang.simulator
from pytest_sglang.base.errors import SGLangError
from pytest_sglang.judge.fleet import documents, drift, open_targets
from pytest_sglang.target import target as target_module
from pytest_sglang.target.spec import parse_spec
from pytest_sglang.target.target import Target

BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"
PROFILES = Path(pytest_sglang.simulator.__file__).parent / "profiles"


def replica(folder: Path, name: str, **server_args: object) -> str:
    """A copy of the baseline deployment as a profile file (its own host spec), with changes."""
    profile = json.loads((PROFILES / "qwen35-122b-a10b-4xrtx6000-baseline.json").read_text())
    profile["name"] = name
    profile["server_args"].update(server_args)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(profile))
    return f"sim://{path}"


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile("def test_tp(effective):\n    assert effective.tp_size == 4\n")
    return pytester.runpytest("-p", "no:benchmark", "-rA", "--sglang-fleet", "--sglang-report-json=report.json", *args)


def fleet_record(pytester: pytest.Pytester) -> dict:
    report = json.loads((pytester.path / "report.json").read_text())
    (record,) = [c for c in report["run_checks"] if c["check"] == "sglang-fleet"]
    return record


def test_replicas_on_different_hosts_and_ports_agree(pytester):
    a = replica(pytester.path, "replica-a")
    b = replica(pytester.path, "replica-b", host="10.0.0.7", port=31000, random_seed=7, nccl_port=29555)
    result = run(pytester, f"--sglang-host={a}", f"--sglang-host={b}")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["PASSED ::sglang-fleet"])
    record = fleet_record(pytester)
    assert record["agree"] is True and record["differences"] == {} and record["fields_compared"] > 300
    assert any("2 hosts agree on" in note for note in record["notes"])


def test_a_replica_that_drifted_is_listed_with_its_differing_fields_and_sources(pytester):
    a, b = replica(pytester.path, "replica-a"), replica(pytester.path, "replica-b")
    result = run(pytester, f"--sglang-host={a}", f"--sglang-host={b}", f"--sglang-host={CANDIDATE}")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "the hosts of this run do not agree: * change(s) (* field(s)) differ:",
            # the change a warning explains first (the cap binds the 48 asked for)
            f"  {CANDIDATE}: max_running_requests = 26 (fleet: 48) [[]capacity.mamba-cap: *[]] (3 fields)",
            "    effective.max_running_requests = 26 (fleet: 48) from /server_info internal_states[[]0[]].effective_max_running_requests_per_dp",
            "    effective.max_running_requests_total = 26 (fleet: 48) from *",
            f"  {CANDIDATE}: enforce_piecewise_cuda_graph = False (fleet: True) (6 fields)",
            "*effective.prefill_cuda_graph = False (fleet: True) * [[]explained by pcg.multimodal[]]",
        ]
    )
    record = fleet_record(pytester)
    assert record["agree"] is False
    # the two replicas are the fleet; only the odd one out is listed
    assert list(record["differences"]) == [CANDIDATE]
    assert record["reference"] == a
    by_field = {d["field"]: d for d in record["differences"][CANDIDATE]}
    mrr = by_field["effective.max_running_requests"]
    assert (mrr["value"], mrr["fleet_value"], mrr["finding"]) == (26, 48, "capacity.mamba-cap")
    assert by_field["server_args.speculative_algorithm"]["value"] == "EAGLE"
    assert "effective.max_running_requests" in record["differing_fields"]
    # the same fields, as changes: each field in one change, the real changes first
    groups = record["groups"][CANDIDATE]
    assert len(groups) <= 8 and sorted(f for g in groups for f in g["fields"]) == sorted(by_field)
    # SGLang's change first; the piecewise CUDA graph follows from --enforce-piecewise-cuda-graph left out
    assert groups[0]["name"] == "effective.max_running_requests" and "server_args.enforce_piecewise_cuda_graph" in {g["name"] for g in groups}
    assert len(record["failures"]) == len(groups)


def test_a_field_may_differ_by_policy_and_is_then_only_noted(pytester):
    a = replica(pytester.path, "replica-a")
    b = replica(pytester.path, "replica-b", mem_fraction_static=0.78, schedule_policy="lpm-b")
    failing = run(pytester, f"--sglang-host={a}", f"--sglang-host={b}")
    failing.assert_outcomes(passed=2, failed=1)
    failing.stdout.fnmatch_lines(["*server_args.mem_fraction_static = 0.78 (fleet: 0.785126*)*", "*sglang_fleet_policy = server_args.*"])
    pytester.makeini("[pytest]\nsglang_fleet_policy =\n    server_args.mem_fraction_static = absolute 0.01\n    server_args.schedule_policy = ignore\n")
    passing = run(pytester, f"--sglang-host={a}", f"--sglang-host={b}")
    passing.assert_outcomes(passed=3)
    record = fleet_record(pytester)
    assert record["agree"] is True
    assert [d["status"] for d in record["tolerated"][b]] == ["within tolerance"]


def test_a_bad_policy_entry_is_one_usage_error(pytester):
    pytester.makeini("[pytest]\nsglang_fleet_policy =\n    server_args.mem_fraction_static = roughly\n")
    result = run(pytester, f"--sglang-host={BASELINE}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*sglang_fleet_policy*mem_fraction_static*"])
    assert "Traceback" not in result.stderr.str()


def test_an_unreadable_host_fails_the_fleet_check_by_name_and_the_others_still_run(pytester, free_port):
    down = f"http://127.0.0.1:{free_port}"
    result = run(pytester, f"--sglang-host={BASELINE}", f"--sglang-host={down}", "--sglang-timeout=2")
    result.assert_outcomes(passed=1, errors=1, failed=1)  # the down host's test errors; the fleet check fails
    result.stdout.fnmatch_lines([f"  {down}: not read, so the fleet cannot be compared: *"])
    assert list(fleet_record(pytester)["unread"]) == [down]


def test_one_host_has_nothing_to_compare_and_passes_saying_so(pytester):
    result = run(pytester, f"--sglang-host={BASELINE}")
    result.assert_outcomes(passed=2)
    assert any("1 host(s) in this run: nothing to compare" in note for note in fleet_record(pytester)["notes"])


def test_without_the_option_no_fleet_check_is_added(pytester):
    pytester.makepyfile("def test_tp(effective):\n    assert effective.tp_size == 4\n")
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={BASELINE}", f"--sglang-host={CANDIDATE}")
    result.assert_outcomes(passed=2)


@pytest.mark.slow
def test_fleet_drift_under_xdist_with_several_hosts(pytester):
    a = replica(pytester.path, "replica-a")
    result = run(pytester, "-p", "xdist", "-n", "2", f"--sglang-host={a}", f"--sglang-host={CANDIDATE}")
    result.assert_outcomes(passed=2, failed=1)
    record = fleet_record(pytester)
    assert list(record["differences"]) == [CANDIDATE] and record["reference"] == a


def test_hosts_are_opened_at_once_one_thread_each_and_keep_their_own_errors(monkeypatch, free_port):
    # Each open waits until every other host is being opened too: one after the other, the
    # barrier would break (BrokenBarrierError) instead of every host being read.
    specs = [parse_spec(BASELINE), parse_spec(CANDIDATE), parse_spec(f"http://127.0.0.1:{free_port}")]
    barrier = threading.Barrier(len(specs), timeout=20)
    threads: set[str] = set()
    original = target_module.open_target

    def open_together(spec, options=None):
        threads.add(threading.current_thread().name)
        barrier.wait()
        return original(spec, options)

    monkeypatch.setattr(target_module, "open_target", open_together)
    opened = open_targets(specs)
    try:
        assert len(threads) == 3
        assert isinstance(opened[BASELINE], Target) and isinstance(opened[CANDIDATE], Target)
        down = opened[f"http://127.0.0.1:{free_port}"]
        assert isinstance(down, SGLangError) and f"127.0.0.1:{free_port}" in str(down)
        result = drift(documents({BASELINE: opened[BASELINE], CANDIDATE: opened[CANDIDATE]}))
        assert not result.agree and result.reference == BASELINE and list(result.differences) == [CANDIDATE]
    finally:
        for found in opened.values():
            if isinstance(found, Target):
                found.close()


def test_the_run_header_opens_every_host_in_parallel(pytester, monkeypatch):
    seen: list[int] = []
    import pytest_sglang.judge.fleet.core as core

    original = core.open_targets

    def counting(specs, options=None):
        seen.append(len(specs))
        return original(specs, options)

    monkeypatch.setattr(core, "open_targets", counting)
    pytester.makepyfile("def test_tp(effective):\n    assert effective.tp_size == 4\n")
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={BASELINE}", f"--sglang-host={CANDIDATE}")
    result.assert_outcomes(passed=2)
    assert seen == [2]


def test_a_flag_only_one_side_gave_is_absent_there_as_a_baseline_diff_says_it():
    """The baseline gives --enforce-piecewise-cuda-graph and the candidate does not: the
    candidate's line says the flag is absent, not None (a value it would have reported)."""
    from pytest_sglang import connect

    with connect(BASELINE) as base, connect(CANDIDATE) as cand, connect(BASELINE) as again:
        result = drift(documents({"a": base, "b": again, "c": cand}))
    lines = [d.line() for d in result.differences["c"]]
    assert "launch.requested.enforce_piecewise_cuda_graph = (absent) (fleet: True)" in " ".join(lines), lines
    assert any(line.startswith("launch.requested.speculative_algorithm = 'NEXTN' (fleet: (absent))") for line in lines), lines
    assert not [line for line in lines if "= None (fleet:" in line and "launch.requested." in line]
