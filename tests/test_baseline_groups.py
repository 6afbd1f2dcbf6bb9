"""Differences shown as changes: one setting's fields (server argument, effective value,
requested value, explain finding) and what follows from it are one change, with the
explanation on the change; a policy entry on a change covers its fields; a missing baseline
says so; the same grouping in ``pytest-sglang diff`` and fleet drift; docs/baselines.md shows
what the commands print."""

from __future__ import annotations

import datetime as dt
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_sglang import connect
from pytest_sglang.judge.baseline import Policy, document
from pytest_sglang.judge.baseline.compare import _ANCESTORS, SAME_SETTING, changes, compare
from pytest_sglang.judge.fleet import drift
from pytest_sglang.judge.gate import CheckRecord
from pytest_sglang.render.report.document import baseline_diffs

BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"
SHARED_KEYS = f"[pytest]\nsglang_baseline_key =\n    {BASELINE} = qwen35\n    {CANDIDATE} = qwen35\n"
RUN = ("-p", "no:benchmark", "-p", "no:cacheprovider")
DOCS = Path(__file__).resolve().parents[1] / "docs"
PROFILES = ["qwen35-122b-a10b-4xrtx6000-baseline", "qwen35-122b-a10b-4xrtx6000-candidate", "llama31-8b-1xh100-0.5.9", "qwen35-122b-a10b-4xrtx6000-0.5.23"]
PCG_FIELDS = {"effective.prefill_cuda_graph", "effective.prefill_cuda_graph_backend", "server_args.disable_piecewise_cuda_graph", "findings.pcg.multimodal"}
# The baseline enforces its piecewise CUDA graph; the candidate does not, and the multimodal rule turns it off.
PCG_CHANGE = "server_args.enforce_piecewise_cuda_graph"
ENFORCE_FIELDS = {PCG_CHANGE, "launch.requested.enforce_piecewise_cuda_graph"}
MRR_FIELDS = {"effective.max_running_requests", "effective.max_running_requests_total", "findings.capacity.mamba-cap"}


@pytest.fixture(autouse=True)
def _not_in_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)


@pytest.fixture(scope="module")
def docs() -> tuple[dict[str, Any], dict[str, Any]]:
    """The seed's baseline and candidate documents (what a baseline file and a live check hold)."""
    with connect(BASELINE) as base, connect(CANDIDATE) as cand:
        return json.loads(json.dumps(document(base))), document(cand)


def differing_fields(a: dict[str, Any], b: dict[str, Any]) -> set[str]:
    """Every compared field whose value differs, read from the documents directly (not through
    the comparison under test)."""

    def fields(doc: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"sglang_version": doc.get("sglang_version")}
        out.update({f"effective.{k}": v["value"] for k, v in doc["effective"].items()})
        out.update({f"server_args.{k}": v for k, v in doc["server_args"].items()})
        out.update({f"{s}.{k}": v for s in ("model", "gpu") for k, v in doc[s].items()})
        launch = doc.get("launch") or {}
        if launch:
            out["launch.entrypoint"] = launch["entrypoint"]
        out.update({f"launch.requested.{k}": v for k, v in (launch.get("requested") or {}).items()})
        out.update({f"launch.env.{k}": v for k, v in (launch.get("env") or {}).items()})
        out.update({f"findings.{f['id']}": (f["severity"], f["status"], f["summary"]) for f in doc["findings"]})
        return out

    fa, fb = fields(a), fields(b)
    missing = object()
    return {k for k in fa.keys() | fb.keys() if json.dumps(fa.get(k, missing), default=str) != json.dumps(fb.get(k, missing), default=str)}


def check_record(pytester: pytest.Pytester, *args: str) -> dict:
    rec = pytester.inline_run(*RUN, *args)
    (record,) = [
        value
        for report in rec.getreports("pytest_runtest_logreport")
        if report.when == "call"
        for name, value in report.user_properties
        if name == "sglang.check" and value.get("check") == "sglang-baseline"
    ]
    return record


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


# ---- the seed: 32 fields, a handful of changes, the real ones first -------------------------------
def test_the_seed_candidate_checked_against_the_baseline_file_is_a_few_changes_real_ones_first(pytester, docs):
    pytester.makeini(SHARED_KEYS)
    pytester.runpytest(*RUN, f"--sglang-host={BASELINE}", "--sglang-baseline=base", "--sglang-update-baseline").assert_outcomes(passed=1)
    baseline_file = json.loads((pytester.path / "base" / "qwen35.json").read_text())
    record = check_record(pytester, f"--sglang-host={CANDIDATE}", "--sglang-baseline=base")
    expected = differing_fields(baseline_file, docs[1])
    assert len(expected) == 36  # the seed case: one change SGLang made, six flags changed, one that follows

    groups = record["groups"]
    assert 1 < len(groups) <= 8
    members = [f for g in groups for f in g["fields"]]
    assert len(members) == len(set(members)) and set(members) == expected  # each field in one change
    assert {d["path"] for d in record["diffs"]} == expected
    assert all(g["failing"] for g in groups) and len(record["failures"]) == len(groups)

    # the change SGLang made first: max_running_requests capped; the piecewise CUDA graph follows
    # from --enforce-piecewise-cuda-graph left out (the multimodal rule then turns it off)
    mrr, pcg = groups[0], next(g for g in groups if g["name"] == PCG_CHANGE)
    assert mrr["name"] == "effective.max_running_requests"
    assert set(pcg["fields"]) == PCG_FIELDS | ENFORCE_FIELDS and set(pcg["consequences"]) == PCG_FIELDS
    assert (pcg["baseline_value"], pcg["live_value"], pcg["kind"]) == ("True", "False", "requested")
    assert set(mrr["fields"]) == MRR_FIELDS
    assert (mrr["finding"], mrr["baseline_value"], mrr["live_value"], mrr["kind"]) == ("capacity.mamba-cap", "48", "26", "sglang")
    assert any(cause.startswith("mamba_scheduler_strategy 'no_buffer' -> 'extra_buffer'") for cause in mrr["follows_from"])
    assert [g["kind"] for g in groups] == sorted((g["kind"] for g in groups), key=["sglang", "requested", "follows"].index)

    # the explanation is on the change, and on every field of its setting alike
    by_path = {d["path"]: d for d in record["diffs"]}
    for group in groups:
        assert all(by_path[f]["group"] == group["name"] for f in group["fields"])
    assert {by_path[f]["finding"] for f in PCG_FIELDS} == {"pcg.multimodal"}
    assert {by_path[f]["finding"] for f in MRR_FIELDS} == {"capacity.mamba-cap"}

    # the failure shows each change once, its fields under it
    # (a change a warning explains first: the mamba cap binds the 48 asked for)
    assert record["failures"][0].startswith("max_running_requests: 48 -> 26 [capacity.mamba-cap")
    failure = next(f for f in record["failures"] if f.startswith("enforce_piecewise_cuda_graph: True -> False"))
    assert failure.count("\n") == len(PCG_FIELDS | ENFORCE_FIELDS) + 1  # and a line saying what follows from it
    assert "effective.prefill_cuda_graph: True -> False" in failure and "[explained by pcg.multimodal" in failure
    # the report reads the field-level diffs as before: the changes are not counted twice
    assert len(baseline_diffs(CheckRecord.model_validate({**record, "nodeid": "sglang-baseline"}))) == 36  # the report adds the node id
    json.dumps(record)


def test_without_grouping_evidence_fields_stay_apart(docs):
    """The grouping comes from the documents and the rules, not from the seed's field names:
    fields of unrelated settings, with no finding and no rule between them, stay separate
    changes; a requested value that is not in effect stays its own change."""
    base = {"effective": {"a": {"value": 1}, "b": {"value": "x"}}, "server_args": {"a": 1, "b": "x", "c": 5}}
    live = {"effective": {"a": {"value": 2}, "b": {"value": "y"}}, "server_args": {"a": 2, "b": "y", "c": 6}}
    found = changes(base, live, Policy())
    assert sorted(c.fields for c in found) == [["effective.a", "server_args.a"], ["effective.b", "server_args.b"], ["server_args.c"]]

    # per data-parallel worker and in total (dp 2): one setting; a tolerance on one covers both
    two = json.loads(json.dumps(docs[0]))
    two["effective"]["max_running_requests"]["value"] = 40
    two["effective"]["max_running_requests_total"]["value"] = 80
    docs0 = json.loads(json.dumps(docs[0]))
    docs0["effective"]["max_running_requests_total"]["value"] = 96
    (change,) = changes(docs0, two, Policy())
    assert change.fields == ["effective.max_running_requests", "effective.max_running_requests_total"]
    (change,) = changes(docs0, two, Policy.from_lines(["effective.max_running_requests = relative 20%"]))
    assert [d.status for d in change.members] == ["within tolerance", "within tolerance"] and not change.failing
    (change,) = changes(docs0, two, Policy.from_lines(["effective.max_running_requests = relative 10%"]))
    assert [d.status for d in change.members] == ["differs", "differs"]


def test_a_consequence_with_one_cause_is_folded_into_it_and_a_requested_one_is_not(docs):
    base, live = docs
    found = {c.name: c for c in changes(base, live, Policy())}
    spec = found["effective.speculative_algorithm"]
    assert spec.kind == "requested"
    # the CUDA graph batch sizes follow from speculative decoding; the pools are sized from the
    # mem_fraction_static the candidate asks for
    assert set(spec.consequences) == {"server_args.cuda_graph_bs", "findings.cuda-graph.capture-bs.v2"}
    assert set(found["server_args.mem_fraction_static"].consequences) == {"effective.max_total_num_tokens", "effective.mamba_cache_size"}
    # the overlap schedule follows from two changes: its own change, naming both
    overlap = found["server_args.disable_overlap_schedule"]
    assert overlap.kind == "follows" and len(overlap.follows_from) == 2
    # max_running_requests follows from the mamba cache too, but 48 was asked for: its own change
    assert "effective.max_running_requests" not in spec.fields and found["effective.max_running_requests"].follows_from


# ---- a policy entry covers the change -------------------------------------------------------------
def test_a_waiver_on_any_field_of_a_change_covers_all_its_fields(pytester):
    pytester.makeini(SHARED_KEYS)
    pytester.runpytest(*RUN, f"--sglang-host={BASELINE}", "--sglang-baseline=base", "--sglang-update-baseline").assert_outcomes(passed=1)
    path = pytester.path / "base" / "qwen35.json"
    future = (dt.date.today() + dt.timedelta(days=30)).isoformat()

    def with_policy(policy: dict) -> dict:
        doc = json.loads(path.read_text())
        doc["policy"] = policy
        path.write_text(json.dumps(doc))
        return check_record(pytester, f"--sglang-host={CANDIDATE}", "--sglang-baseline=base")

    record = with_policy({"effective.max_running_requests": {"waive": "mamba cap, OPS-12", "until": future}})
    by_name = {g["name"]: g for g in record["groups"]}
    assert by_name["effective.max_running_requests"]["status"] == "waived" and not by_name["effective.max_running_requests"]["failing"]
    statuses = {d["path"]: d["status"] for d in record["diffs"]}
    assert {statuses[f] for f in MRR_FIELDS} == {"waived"}  # the total and the finding too
    assert by_name[PCG_CHANGE]["failing"] and not record["passed"]
    assert not any("max_running_requests" in line.splitlines()[0] for line in record["failures"])

    # the server argument's name covers the piecewise change; an expired one fails all of it
    record = with_policy({"server_args.disable_piecewise_cuda_graph": {"waive": "old", "until": "2020-01-01"}})
    statuses = {d["path"]: d["status"] for d in record["diffs"]}
    assert {statuses[f] for f in PCG_FIELDS} == {"waiver expired"}

    # ignore on a member (the finding) drops the change; a pattern applies field by field
    record = with_policy({"findings.capacity.mamba-cap": "ignore"})
    assert not MRR_FIELDS & {d["path"] for d in record["diffs"]}
    record = with_policy({"findings.*": "ignore"})
    pcg = {g["name"]: g for g in record["groups"]}[PCG_CHANGE]
    assert set(pcg["fields"]) == (PCG_FIELDS | ENFORCE_FIELDS) - {"findings.pcg.multimodal"} and pcg["failing"]

    # a waiver on a consequence covers the consequence, not the change it follows from
    record = with_policy({"server_args.cuda_graph_bs": {"waive": "captured sizes", "until": future}})
    spec = {g["name"]: g for g in record["groups"]}["effective.speculative_algorithm"]
    statuses = {d["path"]: d["status"] for d in record["diffs"]}
    assert statuses["server_args.cuda_graph_bs"] == "waived" and statuses["effective.speculative_algorithm"] == "differs" and spec["failing"]


def test_an_expired_waiver_with_nothing_left_to_cover_is_noted_but_one_covering_a_twin_is_not():
    base = {"effective": {"max_running_requests": {"value": 48}, "max_running_requests_total": {"value": 48}}}
    live = {"effective": {"max_running_requests": {"value": 48}, "max_running_requests_total": {"value": 26}}}
    policy = Policy.from_lines(["effective.max_running_requests = waive until 2020-01-01: old"])
    (diff,) = compare(base, live, policy, today=dt.date(2024, 1, 1))
    assert diff.path == "effective.max_running_requests_total" and diff.status == "waiver expired" and diff.policy == "effective.max_running_requests"
    (diff,) = compare(base, live, policy, today=dt.date(2019, 12, 31))
    assert diff.status == "waived"
    # an ignore is not stretched to a field it does not name when that field alone differs
    (diff,) = compare(base, live, Policy.from_lines(["effective.max_running_requests = ignore"]))
    assert diff.status == "differs"


# ---- a missing baseline -------------------------------------------------------------------------
def test_a_missing_baseline_says_which_file_and_how_to_create_it(pytester):
    pytester.makeini(SHARED_KEYS)
    result = pytester.runpytest(*RUN, f"--sglang-host={CANDIDATE}", "--sglang-baseline=base")
    result.assert_outcomes(failed=1)
    line = f"no baseline for {CANDIDATE}: expected base/qwen35.json; create it with --sglang-update-baseline"
    result.stdout.fnmatch_lines(["1 problem(s) with the SGLang baseline:", f"  {line}", "the deployment key is qwen35; *"])
    failure = result.stdout.str().split("FAILURES")[1]
    assert "differ" not in failure and "field" not in failure
    record = check_record(pytester, f"--sglang-host={CANDIDATE}", "--sglang-baseline=base")
    assert record["failures"] == [line] and record["message"] == line and record["baseline"] == "missing"
    assert record["diffs"] == [] and record["groups"] == [] and "differ" not in json.dumps(record)

    done = cli("baseline", CANDIDATE, "--dir", str(pytester.path / "base"), "--key", "qwen35", "--json")
    result_json = json.loads(done.stdout)
    assert done.returncode == 1 and result_json["status"] == "missing" and "create it with --update" in result_json["message"]


# ---- the same grouping in `pytest-sglang diff` and fleet drift -----------------------------------
def test_the_diff_command_prints_and_returns_the_changes(tmp_path):
    assert cli("baseline", BASELINE, "--dir", str(tmp_path), "--key", "qwen35", "--update").returncode == 0
    done = cli("diff", str(tmp_path / "qwen35.json"), CANDIDATE, "--json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert 1 < len(result["groups"]) <= 8
    assert sorted(f for g in result["groups"] for f in g["fields"]) == sorted(d["path"] for d in result["diffs"])
    assert result["groups"][0]["name"] == "effective.max_running_requests" and PCG_CHANGE in {g["name"] for g in result["groups"]}
    text = cli("diff", str(tmp_path / "qwen35.json"), CANDIDATE, "--policy", "effective.max_running_requests = waive until 2099-01-01: OPS-12").stdout
    assert f"{len(result['groups']) - 1} change(s) (33 field(s)) differ; 1 more within policy" in text.splitlines()[0]
    assert "  max_running_requests: 48 -> 26 [capacity.mamba-cap: max_running_requests: requested 48, in effect 26] (3 fields) - waived: until 2099-01-01: OPS-12" in text


def test_fleet_drift_groups_a_hosts_differences_into_changes(docs):
    base, live = docs
    result = drift({"a": base, "b": base, "c": live})
    found = result.changes["c"]
    assert 1 < len(found) <= 8 and found[0].name == "effective.max_running_requests" and PCG_CHANGE in {c.name for c in found}
    assert sorted(f for c in found for f in c.fields) == sorted(d.field for d in result.differences["c"])
    assert {d.group for d in result.differences["c"] if d.field in MRR_FIELDS} == {"effective.max_running_requests"}
    texts = result.lines("c")
    assert len(texts) == len(found)
    mrr = next(t for t in texts if t.startswith("max_running_requests"))
    assert mrr.splitlines()[0].startswith("max_running_requests = 26 (fleet: 48) [capacity.mamba-cap: ")
    assert "    effective.max_running_requests_total = 26 (fleet: 48) from effective.max_running_requests × dp_size (1)" in mrr.splitlines()


# ---- the table of one setting's fields matches the normaliser --------------------------------------
@pytest.mark.parametrize("profile", PROFILES)
def test_same_setting_names_where_the_normaliser_reads_each_effective_value(profile):
    """Every effective value read from a field of another name (its source names it) is joined
    to that field in SAME_SETTING, so its fields are one change."""
    unknown = []
    with connect(f"sim://{profile}") as target:
        for name, prov in target.effective.provenance.items():
            match = re.match(r"/server_info (?:internal_states\[0\]\.)?([a-z_]+)|effective\.([a-z_]+)", prov.source)
            if not match:
                continue
            read = match.group(1) or match.group(2)
            if read != name and read not in _ANCESTORS.get(name, ()):
                unknown.append(f"{name} <- {read}")
    assert not unknown, f"add to SAME_SETTING in pytest_sglang/model/knowledge/settings.py: {unknown}"
    assert all(parent not in SAME_SETTING.get(parent, ()) for parent in SAME_SETTING)


# ---- docs/baselines.md shows what the commands print ----------------------------------------------
CHECKED = re.compile(r"<!-- checked[^>]*-->\n```console\n\$ ([^\n]+)\n(.*?)```", re.S)


def _doc_blocks() -> list[tuple[str, str]]:
    return CHECKED.findall((DOCS / "baselines.md").read_text())


def test_the_baselines_manual_shows_checked_output():
    commands = [c for c, _ in _doc_blocks()]
    assert any(c.startswith("pytest-sglang diff") for c in commands) and any("--sglang-baseline=elsewhere" in c for c in commands)


@pytest.mark.slow
def test_every_checked_block_in_the_baselines_manual_is_what_the_command_prints(tmp_path):
    """The blocks run in order in one empty directory. A ``pytest-sglang`` block is compared line
    for line (with its exit status after ``$ echo $?``); a ``pytest`` block's lines, ``...``
    left out, appear in that order in what the run prints."""
    (tmp_path / "pytest.ini").write_text(f"[pytest]\nsglang_baseline_key =\n    {CANDIDATE} = qwen35-prod\n")
    for command, output in _doc_blocks():
        words = shlex.split(command)
        shown = output.rstrip("\n").splitlines()
        if words[0] == "pytest-sglang":
            done = subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", *words[1:]], capture_output=True, text=True, timeout=120, cwd=tmp_path)
            if "$ echo $?" in shown:
                index = shown.index("$ echo $?")
                assert shown[index + 1] == str(done.returncode), command
                shown = shown[:index]
            assert done.stdout.rstrip("\n").splitlines() == shown, f"docs/baselines.md is stale for: {command}\n{done.stdout}"
        else:
            assert words[0] == "pytest", command
            done = subprocess.run([sys.executable, "-m", "pytest", *RUN, *words[1:]], capture_output=True, text=True, timeout=300, cwd=tmp_path)
            printed = iter(done.stdout.splitlines())
            for line in (s for s in shown if s != "..."):
                assert any(out == line for out in printed), f"docs/baselines.md is stale for: {command}: {line!r} not printed in this order\n{done.stdout}"
