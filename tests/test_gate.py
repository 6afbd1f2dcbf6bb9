"""The promotion gate (pytest_sglang/judge/gate/): its models are the report schema, its one
verdict function gives the answers the report always gave, and ``pytest-sglang report``
judges a stored report again with it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_sglang.judge.gate import HOLD, PROMOTE, RunReport, disagreement, judge_run, rejudge
from pytest_sglang.judge.gate.causes import CAUSES_SHOWN
from pytest_sglang.judge.gate.document import build_document
from pytest_sglang.judge.gate.models import SCHEMA_MODELS, Benchmark, CheckRecord, Finding, TestResult, ValueRead
from pytest_sglang.judge.gate.summary import HostPart
from pytest_sglang.judge.gate.verdict import HostReading
from pytest_sglang.render.report.schema import load_schema, validate

DATA = Path(__file__).parent / "data" / "gate_verdicts.json"

# ---- the models are the schema -----------------------------------------------------------------


def _kinds(node: dict[str, Any], defs: dict[str, Any]) -> set[str]:
    """The JSON types a schema node admits, from the report schema or pydantic's."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return {f"ref:{name}"} if name in SCHEMA_MODELS or name in _PYDANTIC_NAMES else _kinds(defs[name], defs)
    for key in ("anyOf", "oneOf"):
        if key in node:
            return set().union(*(_kinds(option, defs) for option in node[key]))
    if "const" in node:
        return {type(node["const"]).__name__}
    if "enum" in node:
        return {"NoneType" if value is None else type(value).__name__ for value in node["enum"]}
    kinds = node.get("type")
    if kinds is None:
        return {"any"}
    names = {"object": "dict", "array": "list", "string": "str", "boolean": "bool", "null": "NoneType", "integer": "int", "number": "float"}
    return {names[k] for k in ([kinds] if isinstance(kinds, str) else kinds)}


_PYDANTIC_NAMES = {model.__name__: name for name, model in SCHEMA_MODELS.items()}


@pytest.mark.parametrize("name", sorted(SCHEMA_MODELS))
def test_each_model_holds_the_fields_the_schema_gives_with_their_types(name: str) -> None:
    schema = load_schema()
    part = schema["$defs"][name]
    generated = SCHEMA_MODELS[name].model_json_schema(ref_template="#/$defs/{model}")
    assert set(generated["properties"]) == set(part["properties"])
    assert set(generated.get("required", [])) == set(part.get("required", []))
    assert generated.get("additionalProperties", True) == part.get("additionalProperties", True)
    for field, node in part["properties"].items():
        theirs = {_PYDANTIC_NAMES.get(k.removeprefix("ref:"), k.removeprefix("ref:")) for k in _kinds(generated["properties"][field], generated.get("$defs", {}))}
        ours = {k.removeprefix("ref:") for k in _kinds(node, schema["$defs"])}
        if field not in part.get("required", []):
            theirs.discard("NoneType")  # an optional field is None when the report leaves it out
            ours.discard("NoneType")
        assert theirs == ours or ours == {"any"}, f"{name}.{field}: models say {theirs}, the schema {ours}"


def test_the_run_model_holds_the_top_of_the_schema() -> None:
    schema = load_schema()
    generated = RunReport.model_json_schema()
    assert set(generated["properties"]) == set(schema["properties"])
    assert set(generated["required"]) == set(schema["required"])
    assert generated["additionalProperties"] is False


# ---- generated runs ----------------------------------------------------------------------------

HOSTS = ("sim://a", "sim://b")
MESSAGES = (None, "assert 1 == 2", "inconclusive: the server did not answer", "inconclusive on sim://a after 2 attempts: too slow", "Skipped: not here")
LEVEL = {"name": "c1", "mode": "concurrency", "requests": 4, "completed": 4, "failed": 0, "output_throughput": 10.0, "ttft": {"count": 4}, "validity": {"verdict": "valid", "reasons": []}}


@st.composite
def _test_entries(draw: Any, index: int) -> list[dict[str, Any]]:
    # A built-in check is an item of its own, on one host or the whole run, that records in its call.
    check = draw(st.sampled_from(("sglang-lint", "sglang-fleet", "sglang-baseline"))) if draw(st.integers(0, 4)) == 0 else None
    host = draw(st.sampled_from((*HOSTS, None) if check else (*HOSTS, "sim://unknown", None)))
    nodeid = (check or f"test_run.py::test_{index}") + (f"[{host}]" if host else "")
    xfail = draw(st.integers(0, 3)) == 0 and not check

    def phase(when: str, outcome: str) -> dict[str, Any]:
        category = {"passed": "passed" if when == "call" else "", "failed": "failed" if when == "call" else "error", "skipped": "xfailed" if xfail else "skipped"}[outcome]
        checks: list[dict[str, Any]] = []
        if when == "call" and check:
            record: dict[str, Any] = {"check": check, "host": host, "passed": outcome == "passed", "failures": [] if outcome == "passed" else ["differs"], "notes": []}
            if record["host"] is None and draw(st.booleans()):
                record["differences"] = {h: [{"field": "tp_size"}] * draw(st.integers(0, 2)) for h in draw(st.lists(st.sampled_from(HOSTS), max_size=2))}
                record["unread"] = {h: "refused" for h in draw(st.lists(st.sampled_from(HOSTS), max_size=1))}
            checks.append(record)
        bench: list[dict[str, Any]] = []
        if when == "call" and not check and draw(st.integers(0, 3)) == 0:
            refused = draw(st.lists(st.sampled_from(("ttft = NaN", "itl = inf", "e2e = -1", "tpot = 1e400")), max_size=3))
            bench.append({"source": "pytest-sglang", "levels": [{**LEVEL, "refused": refused}]})
        reads = [{"host": host, "name": "effective.tp_size", "value": "2", "source": None, "requested": None, "requested_source": None, "notes": [], "causes": []}] if outcome == "failed" and draw(st.booleans()) else []
        return {"nodeid": nodeid, "when": when, "outcome": outcome, "category": category, "counted": True, "duration": 0.01, "host": host, "message": None if outcome == "passed" else draw(st.sampled_from(MESSAGES)), "xfail": xfail and outcome != "failed", "checks": checks, "benchmarks": bench, "values_read": reads}

    if check:
        return [phase("setup", "passed"), phase("call", draw(st.sampled_from(("passed", "failed")))), phase("teardown", "passed")]
    setup = phase("setup", draw(st.sampled_from(("passed", "passed", "passed", "failed", "skipped"))))
    out = [setup]
    if setup["outcome"] == "passed":
        out.append(phase("call", draw(st.sampled_from(("passed", "passed", "failed", "skipped")))))
    out.append(phase("teardown", draw(st.sampled_from(("passed", "passed", "passed", "failed")))))
    return out


FINDING = {"id": "capacity.x", "rule": "capacity.x", "severity": "error", "status": "predicted", "setting": "tp_size", "title": "t", "summary": "s", "requested": None, "effective": None, "predicted": None, "lint": True}


@st.composite
def runs(draw: Any) -> dict[str, Any]:
    """A run as a front end hands it to the gate: test entries, the hosts as read, collection
    errors and pytest's exit status."""
    hosts = []
    for host in draw(st.lists(st.sampled_from(HOSTS), unique=True, max_size=2)):
        error = draw(st.sampled_from((None, None, None, "connection refused")))
        severities = draw(st.one_of(st.just([]), st.lists(st.sampled_from(("error", "warning", "info")), max_size=3)))
        hosts.append({"host": host, "error": error, "findings": [] if error else [{**FINDING, "id": f"rule.{i}", "severity": s} for i, s in enumerate(severities)], "refused": [] if error else draw(st.one_of(st.just([]), st.lists(st.sampled_from(("$.a = NaN", "$.b = inf", "$.c = 1e400", "$.d = -1")), max_size=5)))})
    entries = [e for i in range(draw(st.integers(0, 6))) for e in draw(_test_entries(i))]
    if draw(st.integers(0, 3)) == 0:  # a run where nothing failed: promote, unless something is open
        hosts = [{**h, "error": None, "refused": [], "findings": [f for f in h["findings"] if f["severity"] != "error"]} for h in hosts]
        entries = [{**e, "outcome": "passed", "category": "passed" if e["when"] == "call" else "", "message": None, "xfail": False, "values_read": [], "checks": [{**c, "passed": True, "failures": []} for c in e["checks"] if "differences" not in c]} for e in entries]
        return {"hosts": hosts, "entries": entries, "collect_errors": [], "exit_status": 0, "collect_skipped": draw(st.integers(0, 1))}
    return {"hosts": hosts, "entries": entries, "collect_errors": ["test_broken.py"] if draw(st.integers(0, 5)) == 0 else [], "exit_status": draw(st.sampled_from((0, 0, 0, 1, 1, 2, 3, 4, 5))), "collect_skipped": draw(st.integers(0, 1))}


def host_part(host: dict[str, Any]) -> HostPart:
    section = {"host": host["host"], "error": host["error"], "warnings": [], "facts": None, "effective": {}, "findings": host["findings"], "explain_error": None}
    return HostPart(host["host"], section, [Finding.model_validate(f) for f in host["findings"]], host["refused"])


def document_of(run: dict[str, Any]) -> dict[str, Any]:
    return build_document(run["entries"], [host_part(h) for h in run["hosts"]], run["collect_errors"], run["exit_status"], run["collect_skipped"])


def answers(document: dict[str, Any]) -> dict[str, Any]:
    """What a verdict decides: the run's verdict and reasons, and each host's."""
    return {"verdict": document["verdict"], "reasons": document["reasons"], "hosts": {h["host"]: [h["verdict"], h["reasons"]] for h in document["hosts"]}}


# ---- the verdict gives the answers it always gave ----------------------------------------------


def test_the_verdict_gives_the_recorded_answer_on_every_case_of_the_table() -> None:
    """The table holds generated runs and the answers plugin/report_build.py gave them before
    the verdict moved to the gate (tests/data/README.md)."""
    cases = json.loads(DATA.read_text(encoding="utf-8"))
    assert len(cases) >= 200
    assert {c["answers"]["verdict"] for c in cases} == {"promote", "hold", "inconclusive"}
    for case in cases:
        got, then = answers(document_of(case["run"])), case["answers"]
        # The verdicts are the same; the reasons now lead with each failure's cause, and each
        # reason recorded then is still said: as it was, or as a cause naming its host.
        assert got["verdict"] == then["verdict"], case["run"]
        assert {h: v for h, (v, _) in got["hosts"].items()} == {h: v for h, (v, _) in then["hosts"].items()}, case["run"]
        for host, (_, reasons) in then["hosts"].items():
            assert set(reasons) <= set(got["hosts"][host][1]), (case["run"], reasons, got["hosts"][host][1])
        for reason in then["reasons"]:
            assert _still_said(reason, got["reasons"], then["hosts"]), (reason, got["reasons"])


def _still_said(reason: str, reasons: list[str], hosts: dict[str, Any]) -> bool:
    """A run reason recorded as ``HOST: a; b`` is said now as ``HOST: ...`` with the rest, each
    part that became a cause as ``part (on ..., HOST, ...)``."""
    if reason in reasons:
        return True
    host, _, said = reason.partition(": ")
    if host not in hosts:
        return False
    for part in said.split("; "):
        as_cause = any(r.startswith(part + " (on ") and host in r for r in reasons)
        in_rest = any(r.startswith(host + ": ") and part in r.split(": ", 1)[1].split("; ") for r in reasons)
        if not (as_cause or in_rest):
            return False
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_a_report_judged_again_gives_its_own_verdict_and_conforms(run: dict[str, Any]) -> None:
    document = document_of(run)
    assert not validate(document)
    report = RunReport.model_validate(document)
    judged = rejudge(report)
    assert judged.verdict == report.verdict
    assert {h: j.verdict for h, j in judged.hosts.items()} == {h.host: h.verdict for h in report.hosts}
    assert disagreement(report, judged) is None
    assert (report.verdict == HOLD) == (run["exit_status"] != 0)


def test_judge_run_on_typed_inputs() -> None:
    """The function a library user calls: a failed check holds a failed run, and only that."""
    test = TestResult(nodeid="t.py::test_x[sim://a]", host="sim://a", outcome="passed", duration=0.1, message=None, check=False, inconclusive=None, values_read=[])
    check = CheckRecord(check="sglang-lint", host="sim://a", passed=False, failures=["x"], notes=[], nodeid="sglang-lint[sim://a]")
    bench = Benchmark(test=test.nodeid, host="sim://a", outcome="passed", source="pytest-sglang", levels=[{**LEVEL, "refused": ["ttft = NaN"]}])  # type: ignore[list-item]
    held = judge_run([HostReading("sim://a")], [test], [check], [bench], [], 1)
    assert held.verdict == HOLD
    assert held.hosts["sim://a"].reasons == ["sglang-lint: x", "check sglang-lint failed", "figure refused: ttft = NaN (benchmark test_x, c1)"]
    assert held.hosts["sim://a"].causes == ["sglang-lint: x"]
    passed = judge_run([HostReading("sim://a")], [test], [], [], [], 0)
    assert (passed.verdict, passed.reasons) == (PROMOTE, [])


# ---- the command line judges a stored report again ---------------------------------------------


def _report(tmp_path: Path, document: dict[str, Any]) -> Path:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_sglang.cli", *args], check=False, capture_output=True, text=True, timeout=120)


def _a_run_that_promotes() -> dict[str, Any]:
    entries = [
        {"nodeid": "t.py::test_x[sim://a]", "when": w, "outcome": "passed", "category": "passed" if w == "call" else "", "counted": True, "duration": 0.1, "host": "sim://a", "message": None, "xfail": False, "checks": [], "benchmarks": [], "values_read": []}
        for w in ("setup", "call", "teardown")
    ]
    return document_of({"hosts": [{"host": "sim://a", "error": None, "findings": [], "refused": []}], "entries": entries, "collect_errors": [], "exit_status": 0, "collect_skipped": 0})


def test_report_renders_a_report_whose_verdict_holds_and_says_nothing_more(tmp_path: Path) -> None:
    document = _a_run_that_promotes()
    assert document["verdict"] == PROMOTE
    done = _cli("report", str(_report(tmp_path, document)), "--md", str(tmp_path / "run.md"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.strip() == f"pytest-sglang: wrote {tmp_path / 'run.md'} (verdict promote)"


def test_report_says_in_one_line_when_the_stored_verdict_is_not_what_the_report_holds(tmp_path: Path) -> None:
    document = _a_run_that_promotes()
    document["tests_without_host"] = [{"nodeid": "t.py::test_offline", "host": None, "outcome": "failed", "duration": 0.01, "message": "assert False", "check": False, "inconclusive": None, "values_read": []}]
    done = _cli("report", str(_report(tmp_path, document)), "--md", str(tmp_path / "run.md"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verdict"] == PROMOTE  # what the report says is still what is rendered
    (line,) = done.stderr.splitlines()
    assert line == "pytest-sglang: the report says promote, but its contents judge inconclusive: 1 test(s) without an SGLang host failed"


# ---- the verdict names its causes ----------------------------------------------------------------


def _failed(host: str, name: str, message: str, reads: list[ValueRead]) -> TestResult:
    return TestResult(nodeid=f"t.py::{name}[{host}]", host=host, outcome="failed", duration=0.1, message=message, check=False, inconclusive=None, values_read=reads)


def _read(host: str, name: str, value: str, requested: str | None, causes: list[str]) -> ValueRead:
    return ValueRead(host=host, name=name, value=value, source="/server_info", requested=requested, requested_source=None, notes=[], causes=causes)


MAMBA = "capped by the mamba state cache (max_mamba_cache_size 132 // 5) [capacity.mamba-cap]"


def test_each_failure_is_one_line_with_the_field_the_comparison_and_the_explaining_finding() -> None:
    tests = [
        _failed("sim://c", "test_running", "assert 26 >= 48\n +  where 26 = ...", [_read("sim://c", "effective.max_running_requests", "26", "48", [MAMBA])]),
        _failed("sim://c", "test_graph", "assert False is True", [_read("sim://c", "effective.prefill_cuda_graph", "False", "nothing", ["disabled for multimodal models [pcg.multimodal]"])]),
        _failed("sim://c", "test_tp", "assert 2 == 4", [_read("sim://c", "effective.tp_size", "2", "4", [])]),
        _failed("sim://c", "test_other", "AssertionError: the server answered 500\nmore", []),
    ]
    judged = judge_run([HostReading("sim://c")], tests, [], [], [], 1)
    assert judged.hosts["sim://c"].causes == [
        f"max_running_requests 26 < 48: {MAMBA}",
        "prefill_cuda_graph False, not True: disabled for multimodal models [pcg.multimodal]",
        "tp_size 2, not 4: no explain rule accounts for it",
        "test_other: AssertionError: the server answered 500",
    ]
    assert judged.hosts["sim://c"].reasons[4:] == ["4 test(s) failed"]  # the count after the causes
    assert judged.reasons[0] == f"max_running_requests 26 < 48: {MAMBA} (on sim://c)"


def test_a_cause_shared_by_several_hosts_is_said_once_naming_them() -> None:
    tests = [_failed(h, "test_running", "assert 26 >= 48", [_read(h, "effective.max_running_requests", "26", "48", [MAMBA])]) for h in ("sim://a", "sim://b")]
    judged = judge_run([HostReading("sim://a"), HostReading("sim://b")], tests, [], [], [], 1)
    assert judged.reasons == [f"max_running_requests 26 < 48: {MAMBA} (on sim://a, sim://b)", "sim://a: 1 test(s) failed", "sim://b: 1 test(s) failed"]


def test_a_failed_benchmark_level_names_its_figure_and_the_queue_behind_the_running_cap() -> None:
    test = _failed("sim://c", "test_streams", "benchmark failed on sim://c: 1 failure(s):", [])
    level = {**LEVEL, "name": "concurrency=48", "verdict": "fail", "verdict_reasons": ["concurrency=48: ttft_p99_ms 640.0 ms (limit <= 250.0 ms)"], "server": {"peak_queue": 22.0, "peak_running": 26.0, "max_running_requests": 26}}
    bench = Benchmark(test=test.nodeid, host="sim://c", outcome="failed", source="pytest-sglang", levels=[level])  # type: ignore[list-item]
    judged = judge_run([HostReading("sim://c")], [test], [], [bench], [], 1)
    assert judged.hosts["sim://c"].causes == ["benchmark test_streams concurrency=48: ttft_p99_ms 640.0 ms (limit <= 250.0 ms); 22 request(s) queued behind 26 running (max_running_requests 26)"]


def test_a_host_with_many_causes_lists_the_first_and_counts_the_rest() -> None:
    tests = [_failed("sim://c", f"test_{i}", f"assert {i} == 0", [_read("sim://c", f"effective.f{i}", str(i), None, [])]) for i in range(1, 13)]
    causes = judge_run([HostReading("sim://c")], tests, [], [], [], 1).hosts["sim://c"].causes
    assert len(causes) == CAUSES_SHOWN + 1 and causes[-1] == f"{12 - CAUSES_SHOWN} more cause(s)"
