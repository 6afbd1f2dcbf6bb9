"""Baselines: the document, the typed comparison and its policy, the pytest check and its
update flow (also under xdist), and the show/diff/baseline commands."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _not_in_ci(monkeypatch):
    """These tests start from a developer's shell: the refusal under CI is tested by setting CI."""
    monkeypatch.delenv("CI", raising=False)


from pytest_sglang.judge.baseline import Policy, PolicyError, compare

BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"
LLAMA = "sim://llama31-8b-1xh100-0.5.9"
SHARED_KEYS = f"[pytest]\nsglang_baseline_key =\n    {BASELINE} = qwen35\n    {CANDIDATE} = qwen35\n"
RUN = ("-p", "no:benchmark", "-p", "no:cacheprovider")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*RUN, *args)


def check_records(pytester: pytest.Pytester, *args: str) -> list[dict]:
    """The baseline checks' records, as the report part reads them from user_properties."""
    rec = pytester.inline_run(*RUN, *args)
    out = []
    for report in rec.getreports("pytest_runtest_logreport"):
        if report.when != "call":
            continue
        for name, value in report.user_properties:
            if name == "sglang.check" and value.get("check") == "sglang-baseline":
                out.append(value)
    return out


def write_baseline(pytester: pytest.Pytester, host: str = BASELINE) -> Path:
    result = run(pytester, f"--sglang-host={host}", "--sglang-baseline=base", "--sglang-update-baseline")
    result.assert_outcomes(passed=1)
    return pytester.path / "base"


def edit(path: Path, change) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True))


# ---- the update flow ----------------------------------------------------------------------------
def test_update_writes_then_the_check_passes_then_the_candidate_fails_with_typed_explained_diffs(pytester):
    pytester.makeini(SHARED_KEYS)
    pytester.makepyfile("def test_tp(effective):\n    assert effective.tp_size == 4\n")
    result = run(pytester, f"--sglang-host={BASELINE}", "--sglang-baseline=base", "--sglang-update-baseline")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*SGLang baselines*", f"wrote base*qwen35.json (new, key qwen35, from {BASELINE})"])
    text = (pytester.path / "base" / "qwen35.json").read_text()
    doc = json.loads(text)
    assert text == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"  # readable, reviewable
    assert doc["effective"]["max_running_requests"]["value"] == 48
    assert doc["effective"]["max_running_requests"]["source"].startswith("/server_info")
    assert doc["gpu"]["count"] == 4 and doc["model"]["architectures"] == ["Qwen3_5MoeForConditionalGeneration"]
    assert {"id", "severity", "summary"} <= set(doc["findings"][0])
    for volatile in ("port", "host", "random_seed", "nccl_port"):
        assert volatile not in doc["server_args"]
    assert "collected_at" not in text and "volatile" not in doc and "30000" not in text

    run(pytester, f"--sglang-host={BASELINE}", "--sglang-baseline=base").assert_outcomes(passed=2)

    result = run(pytester, f"--sglang-host={CANDIDATE}", "--sglang-baseline=base")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "8 problem(s) with the SGLang baseline:",
            "  max_running_requests: 48 -> 26 ?capacity.mamba-cap: *? (3 fields)",
            "    effective.max_running_requests: 48 -> 26 (from /server_info*)",
            "  enforce_piecewise_cuda_graph: True -> False (6 fields)",
            "*and what follows from it:",
            "      effective.prefill_cuda_graph: True -> False * ?explained by pcg.multimodal: *?",
        ]
    )
    (record,) = check_records(pytester, f"--sglang-host={CANDIDATE}", "--sglang-baseline=base")
    assert record["passed"] is False and record["key"] == "qwen35" and record["file"] == "qwen35.json"
    by_path = {d["path"]: d for d in record["diffs"]}
    mrr = by_path["effective.max_running_requests"]
    assert (mrr["baseline"], mrr["live"], mrr["finding"], mrr["status"], mrr["change"]) == (48, 26, "capacity.mamba-cap", "differs", "changed")
    assert mrr["baseline_source"] and mrr["live_source"]
    assert by_path["findings.capacity.mamba-cap"]["change"] == "added"
    json.dumps(record)  # JSON-able for the reports


def test_update_rewrites_a_changed_baseline_keeps_its_policy_and_prints_what_changed(pytester):
    pytester.makeini(SHARED_KEYS)
    base = write_baseline(pytester)
    edit(base / "qwen35.json", lambda d: d.__setitem__("policy", {"server_args.cuda_graph_bs": "ignore"}))
    result = run(pytester, f"--sglang-host={CANDIDATE}", "--sglang-baseline=base", "--sglang-update-baseline")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["updated base*qwen35.json (from *candidate): * change(s) (* field(s)) changed", "  max_running_requests: 48 -> 26*", "      effective.max_running_requests: 48 -> 26*"])
    doc = json.loads((base / "qwen35.json").read_text())
    assert doc["effective"]["max_running_requests"]["value"] == 26
    assert doc["policy"] == {"server_args.cuda_graph_bs": "ignore"}
    result = run(pytester, f"--sglang-host={CANDIDATE}", "--sglang-baseline=base", "--sglang-update-baseline")
    result.stdout.fnmatch_lines(["*no baseline in base needed writing: every host matches its baseline*"])


# ---- policy: tolerances, waivers, expiry ----------------------------------------------------------
def test_tolerances_from_the_file_and_the_ini_pass_inside_and_fail_outside(pytester):
    base = write_baseline(pytester)
    (path,) = base.glob("*.json")

    def drift(doc):  # type: ignore[no-untyped-def]
        doc["effective"]["max_total_num_tokens"]["value"] = int(550484 * 1.02)
        doc["server_args"]["mem_fraction_static"] = 0.79

    edit(path, drift)
    result = run(pytester, f"--sglang-host={BASELINE}", "--sglang-baseline=base")
    result.assert_outcomes(failed=1)
    # one change: the KV pool (max_total_num_tokens) is sized from mem_fraction_static
    result.stdout.fnmatch_lines(["1 problem(s) with the SGLang baseline:", "  mem_fraction_static: 0.79 -> 0.785126* (2 fields)", "*server_args.mem_fraction_static: 0.79 -> 0.785126*", "*effective.max_total_num_tokens: 561493 -> 550484*"])

    edit(path, lambda d: d.__setitem__("policy", {"effective.max_total_num_tokens": {"relative": "5%"}}))
    pytester.makeini("[pytest]\nsglang_baseline_policy =\n    server_args.mem_fraction_*  = absolute 0.01\n")
    result = run(pytester, f"--sglang-host={BASELINE}", "--sglang-baseline=base")
    result.assert_outcomes(passed=1)
    (record,) = check_records(pytester, f"--sglang-host={BASELINE}", "--sglang-baseline=base")
    assert sorted((d["path"], d["status"]) for d in record["diffs"]) == [
        ("effective.max_total_num_tokens", "within tolerance"),
        ("server_args.mem_fraction_static", "within tolerance"),
    ]

    edit(path, lambda d: d.__setitem__("policy", {"effective.max_total_num_tokens": {"relative": 0.01}}))
    result = run(pytester, f"--sglang-host={BASELINE}", "--sglang-baseline=base")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["1 problem(s) with the SGLang baseline:", "*server_args.mem_fraction_static: 0.79 -> 0.785126* - within tolerance*", "*max_total_num_tokens: 561493 -> 550484 * outside the tolerance relative 1%*"])


def test_a_waiver_passes_until_it_expires_and_then_fails_saying_so(pytester):
    base = write_baseline(pytester)
    (path,) = base.glob("*.json")
    future = (dt.date.today() + dt.timedelta(days=30)).isoformat()

    def waive(until):  # type: ignore[no-untyped-def]
        def change(doc):  # type: ignore[no-untyped-def]
            doc["effective"]["max_running_requests"]["value"] = 40
            doc["policy"] = {"effective.max_running_requests": {"waive": "rollout of OPS-12", "until": until}}

        return change

    edit(path, waive(future))
    result = run(pytester, f"--sglang-host={BASELINE}", "--sglang-baseline=base", "-rA")
    result.assert_outcomes(passed=1)
    edit(path, waive("2020-01-31"))
    result = run(pytester, f"--sglang-host={BASELINE}", "--sglang-baseline=base")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*effective.max_running_requests: 40 -> 48 * - waiver expired: the waiver expired on 2020-01-31 (rollout of OPS-12; *"])

    pytester.makeini(f"[pytest]\nsglang_baseline_policy =\n    effective.max_running_requests = waive until {future}: ini waiver\n")
    edit(path, lambda d: d.__setitem__("policy", {}))
    (record,) = check_records(pytester, f"--sglang-host={BASELINE}", "--sglang-baseline=base")
    assert record["passed"] and record["diffs"][0]["status"] == "waived" and "ini waiver" in record["diffs"][0]["note"]


@pytest.mark.parametrize(
    "ini, named",
    [
        ("sglang_baseline_policy =\n    effective.max_running_requests = sometimes", "'effective.max_running_requests = sometimes'"),
        ("sglang_baseline_policy =\n    effective.x = waive until 31/12/2030: why", "YYYY-MM-DD"),
        ("sglang_baseline_policy =\n    effective.x = relative lots", "relative must be a number"),
        ("sglang_baseline_policy =\n    nowhere.x = ignore", "must start with one of"),
        ("sglang_baseline_key =\n    sim://x = my key", "the key is a file name"),
    ],
)
def test_bad_ini_entries_are_one_line_usage_errors_naming_the_entry(pytester, ini, named):
    pytester.makeini(f"[pytest]\n{ini}\n")
    result = run(pytester, f"--sglang-host={BASELINE}", "--sglang-baseline=base")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1 and named in errors[0] and "Traceback" not in result.stderr.str()


def test_a_bad_policy_in_a_baseline_file_is_a_usage_error_naming_the_file_and_entry(pytester):
    base = write_baseline(pytester)
    (path,) = base.glob("*.json")
    edit(path, lambda d: d.__setitem__("policy", {"effective.tp_size": {"waive": "no date"}}))
    result = run(pytester, f"--sglang-host={BASELINE}", "--sglang-baseline=base")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: baseline {path.name} policy entry 'effective.tp_size': a waiver needs exactly*"])
    path.write_text("{not json")
    result = run(pytester, f"--sglang-host={BASELINE}", "--sglang-baseline=base")
    result.stderr.fnmatch_lines([f"ERROR: baseline *{path.name}: not valid JSON (line 1, column 2*"])


# ---- missing, unused, CI ----------------------------------------------------------------------------
def test_a_missing_baseline_fails_naming_the_file_and_unused_baselines_are_listed(pytester):
    base = pytester.path / "base"
    base.mkdir()
    (base / "retired-deployment.json").write_text(json.dumps({"effective": {}}))
    result = run(pytester, f"--sglang-host={BASELINE}", "--sglang-baseline=base")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "1 problem(s) with the SGLang baseline:",
            f"  no baseline for {BASELINE}: expected base/Qwen3.5-122B-A10B__4xRTX-PRO-6000__sglang-0.5.12__tp4.json; create it with --sglang-update-baseline",
            "the deployment key is Qwen3.5-122B-A10B__4xRTX-PRO-6000__sglang-0.5.12__tp4; *",
            "baseline file(s) in base that no host used: retired-deployment.json",
        ]
    )


def test_update_is_refused_under_ci_unless_forced(pytester, monkeypatch):
    monkeypatch.setenv("CI", "1")
    result = run(pytester, f"--sglang-host={BASELINE}", "--sglang-baseline=base", "--sglang-update-baseline")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --sglang-update-baseline is refused when the CI environment variable is set*--sglang-update-baseline=force"])
    assert not (pytester.path / "base").exists()
    result = run(pytester, f"--sglang-host={BASELINE}", "--sglang-baseline=base", "--sglang-update-baseline=force")
    result.assert_outcomes(passed=1)
    assert len(list((pytester.path / "base").glob("*.json"))) == 1
    result = run(pytester, f"--sglang-host={BASELINE}", "--sglang-update-baseline")
    result.stderr.fnmatch_lines(["ERROR: --sglang-update-baseline needs a baseline directory*"])


@pytest.mark.slow
def test_xdist_two_hosts_the_controller_writes_each_baseline_once_and_checks_pass(pytester):
    pytester.makepyfile("def test_version(sglang):\n    assert sglang.version\n")
    key = "llama-prod"
    pytester.makeini(f"[pytest]\nsglang_baseline = base\nsglang_baseline_key =\n    {LLAMA} = {key}\n")
    args = ("-p", "xdist", "-n", "2", f"--sglang-host={BASELINE}", f"--sglang-host={LLAMA}")
    result = run(pytester, *args, "--sglang-update-baseline")
    result.assert_outcomes(passed=4)
    wrote = [line for line in result.outlines if line.startswith("wrote ")]
    assert len(wrote) == 2, result.outlines
    names = sorted(p.name for p in (pytester.path / "base").glob("*.json"))
    assert names == ["Qwen3.5-122B-A10B__4xRTX-PRO-6000__sglang-0.5.12__tp4.json", f"{key}.json"]
    result = run(pytester, *args)
    result.assert_outcomes(passed=4)
    assert "that no host used" not in result.stdout.str()
    result = run(pytester, "-p", "xdist", "-n", "2", f"--sglang-host={LLAMA}")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["baseline file(s) in base that no host used: Qwen3.5-122B-A10B__4xRTX-PRO-6000__sglang-0.5.12__tp4.json"])


def test_two_hosts_sharing_a_key_but_differing_are_not_written(pytester):
    pytester.makeini(SHARED_KEYS)
    result = run(pytester, f"--sglang-host={BASELINE}", f"--sglang-host={CANDIDATE}", "--sglang-baseline=base", "--sglang-update-baseline")
    result.stdout.fnmatch_lines(["NOT written base*qwen35.json: hosts * share the key qwen35 but their configurations differ*"])
    assert not (pytester.path / "base" / "qwen35.json").exists()


def test_no_api_key_in_any_written_file(pytester):
    key = "sk-baseline-secret-7731"
    host = f"sim://qwen35-122b-a10b-4xrtx6000-baseline?api_key={key}"
    result = run(pytester, f"--sglang-host={host}", "--sglang-baseline=base", "--sglang-update-baseline", "--junitxml=out.xml")
    result.assert_outcomes(passed=1)
    run(pytester, f"--sglang-host={host}", "--sglang-baseline=base").assert_outcomes(passed=1)
    done = cli("baseline", host, "--dir", str(pytester.path / "cli-base"), "--update", cwd=pytester.path)
    assert done.returncode == 0, done.stderr
    files = [p for p in pytester.path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".json" for p in files)
    for path in files:
        assert key not in path.read_text(errors="replace"), path
    assert key not in result.stdout.str() + done.stdout + done.stderr


# ---- the library -------------------------------------------------------------------------------------
def test_compare_and_policy_directly():
    base = {"effective": {"a": {"value": 100, "source": "x"}, "b": {"value": True, "source": "x"}}, "server_args": {"c": 1.0}}
    live = {"effective": {"a": {"value": 104, "source": "y"}, "b": {"value": 1, "source": "x"}}, "server_args": {"c": 1.0, "d": "new"}}
    diffs = {d.path: d for d in compare(base, live, Policy())}
    assert set(diffs) == {"effective.a", "effective.b", "server_args.d"}  # True != 1: types count
    assert (diffs["effective.a"].baseline_source, diffs["effective.a"].live_source) == ("x", "y")
    assert diffs["server_args.d"].change == "added"
    policy = Policy.from_lines(["effective.a = abs 5", "server_args.* = ignore", "effective.b = waive until 2030-01-01: known"])
    diffs = {d.path: d for d in compare(base, live, policy, today=dt.date(2029, 12, 31))}
    assert {p: d.status for p, d in diffs.items()} == {"effective.a": "within tolerance", "effective.b": "waived"}
    diffs = {d.path: d for d in compare(base, live, policy, today=dt.date(2030, 1, 2))}
    assert diffs["effective.b"].failing and diffs["effective.b"].status == "waiver expired"
    assert Policy.from_mapping(policy.to_mapping()).to_mapping() == policy.to_mapping()
    with pytest.raises(PolicyError, match="'effective.a = around 5'"):
        Policy.from_lines(["effective.a = around 5"])
    with pytest.raises(PolicyError, match="unknown rule key"):
        Policy.from_mapping({"effective.a": {"tolerance": 5}})


# ---- the command line ---------------------------------------------------------------------------------
def cli(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


@pytest.mark.slow
def test_cli_show_text_and_json(tmp_path):
    done = cli("show", CANDIDATE)
    assert done.returncode == 0, done.stderr
    assert "max_running_requests" in done.stdout and "= 26  (/server_info" in done.stdout and "[capacity.mamba-cap]" in done.stdout
    doc = json.loads(cli("show", CANDIDATE, "--json").stdout)
    assert doc["effective"]["max_running_requests"] == {
        "value": 26,
        "source": doc["effective"]["max_running_requests"]["source"],
        "requested": 48,
        "requested_source": doc["effective"]["max_running_requests"]["requested_source"],
        "note": "per data-parallel worker",
    }
    assert "volatile" not in doc
    full = json.loads(cli("show", CANDIDATE, "--json", "--volatile").stdout)
    assert full["volatile"]["server_args"]["port"] and full["volatile"]["target"] == CANDIDATE
    done = cli("show", "sim://no-such-profile")
    assert done.returncode in (2, 3) and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_cli_baseline_write_check_differ_missing_and_ci(tmp_path):
    d = str(tmp_path / "base")
    done = cli("baseline", BASELINE, "--dir", d, "--key", "qwen35", "--update")
    assert done.returncode == 0 and "wrote" in done.stdout, done.stderr
    done = cli("baseline", BASELINE, "--dir", d, "--key", "qwen35")
    assert done.returncode == 0 and "matches" in done.stdout
    done = cli("baseline", CANDIDATE, "--dir", d, "--key", "qwen35", "--json")
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["status"] == "differ"
    (mrr,) = [x for x in result["diffs"] if x["path"] == "effective.max_running_requests"]
    assert (mrr["baseline"], mrr["live"], mrr["finding"]) == (48, 26, "capacity.mamba-cap")
    done = cli("baseline", CANDIDATE, "--dir", d, "--key", "qwen35", "--policy", "effective.* = ignore", "--policy", "server_args.* = ignore", "--policy", "launch.* = ignore", "--policy", "findings.* = ignore")
    assert done.returncode == 0, done.stdout
    done = cli("baseline", CANDIDATE, "--dir", d)
    assert done.returncode == 1 and "no baseline for" in done.stdout and "Qwen3.5-122B-A10B__4xRTX-PRO-6000__sglang-0.5.12__tp4.json" in done.stdout
    import os

    env = {**os.environ, "CI": "true"}
    done = cli("baseline", CANDIDATE, "--dir", d, "--key", "qwen35", "--update", env=env)
    assert done.returncode == 2 and "refused when the CI environment variable is set" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    done = cli("baseline", CANDIDATE, "--dir", d, "--key", "qwen35", "--update", "--force", env=env)
    assert done.returncode == 0 and "updated" in done.stdout and "effective.max_running_requests: 48 -> 26" in done.stdout
    done = cli("baseline", CANDIDATE, "--dir", d, "--key", "qwen35", "--policy", "effective.x = maybe")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "'effective.x = maybe'" in done.stderr


@pytest.mark.slow
def test_cli_diff_targets_baseline_files_and_captures(tmp_path):
    d = tmp_path / "base"
    assert cli("baseline", BASELINE, "--dir", str(d), "--key", "qwen35", "--update").returncode == 0
    done = cli("diff", BASELINE, BASELINE)
    assert done.returncode == 0 and "the same configuration" in done.stdout
    done = cli("diff", str(d / "qwen35.json"), CANDIDATE, "--json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["same"] is False
    assert {"path": "effective.max_running_requests", "baseline": 48, "live": 26, "finding": "capacity.mamba-cap"}.items() <= {
        k: v for x in result["diffs"] if x["path"] == "effective.max_running_requests" for k, v in x.items()
    }.items()
    done = cli("diff", str(d / "qwen35.json"), CANDIDATE)
    assert "effective.max_running_requests: 48 -> 26" in done.stdout
    done = cli("diff", str(tmp_path / "nope.json"), CANDIDATE)
    assert done.returncode == 2 and "no such baseline file" in done.stderr
    # a capture, replayed (replay:FILE)
    capture = tmp_path / "cap.json"
    made = cli("capture", CANDIDATE, "-o", str(capture))
    if made.returncode != 0:
        pytest.skip(f"capture is not available: {made.stderr.strip()}")
    done = cli("diff", f"replay:{capture}", CANDIDATE)
    assert done.returncode == 0, done.stdout + done.stderr
    done = cli("diff", str(d / "qwen35.json"), f"replay:{capture}")
    assert done.returncode == 1 and "effective.max_running_requests: 48 -> 26" in done.stdout
