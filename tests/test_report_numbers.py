"""One number formatter for every output (``pytest_sglang.base.text.number``): float noise such
as ``0.7392700000000001`` or ``0.30000000000000004`` never reaches a reader, whichever output
shows the number (terminal, HTML, Markdown, the JSON report's text fields, a baseline or fleet
diff), while the JSON report's numbers themselves stay exact.

The property test plants noisy values in every place a number is shown (a finding's requested,
effective and predicted values and its chain, a baseline diff, a fleet drift, the values a
failing test read, the effective configuration, a benchmark's figures and its baseline's
repeats) and renders each output through the functions the plugin uses."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_report_html import synthetic_report

from pytest_sglang.base.text import number, short_repr, tidy, tidy_numbers, value_text
from pytest_sglang.judge.baseline.compare import changes
from pytest_sglang.judge.explain.findings import Explanation, Finding
from pytest_sglang.judge.fleet.core import drift
from pytest_sglang.judge.gate import RunReport
from pytest_sglang.judge.gate.summary import FINDING_FIELDS
from pytest_sglang.judge.gate.verdict import rejudge
from pytest_sglang.model.config import Effective, Provenance
from pytest_sglang.plugin.report_build import values_read as read_values_section
from pytest_sglang.render import explain as explain_text
from pytest_sglang.render.report import html as html_report
from pytest_sglang.render.report import markdown
from pytest_sglang.render.values import values_read

# Values whose repr carries arithmetic noise, or that a formatter gets wrong easily.
NOISY = [0.1 + 0.2, 0.7392700000000001, 1e-7, 2**53, float(2**53), -0.0, 118.30000000000001, 1 / 3, 1.1 * 1.1, 4476.400000000001, 0.1 * 3]
DECIMAL = re.compile(r"(?<![\w.])-?(\d+)\.(\d+)(?:[eE][+-]?\d+)?(?![\w.])")


def noise(text: str) -> list[str]:
    """Decimal numbers in ``text`` with more than 12 significant digits (a whole number written
    with ``.0`` aside): what float noise looks like."""
    found = []
    for m in DECIMAL.finditer(text):
        whole, fraction = m.group(1), m.group(2)
        if set(fraction) == {"0"}:
            continue
        if len((whole + fraction).lstrip("0")) > 12:
            found.append(m.group())
    return found


# ---- the formatter ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, unit, shown",
    [
        (0.1 + 0.2, None, "0.3"),
        (0.7392700000000001, None, "0.73927"),
        (1e-7, None, "1e-07"),
        (2**53, None, "9007199254740992"),
        (float(2**53), None, "9007199254740992.0"),  # a whole float keeps every digit
        (-0.0, None, "0.0"),
        (26, None, "26"),
        (26.0, None, "26.0"),
        (579.4999999999999, "ms", "579.5"),
        (7.8328658433409, "ms", "7.83"),
        (4476.400000000001, "tokens/s", "4476.4"),
        (-0.0, "ms", "0"),
        (26.0, "requests", "26"),
        (float("inf"), "ms", "inf"),
        (True, None, "True"),
    ],
)
def test_the_number_formatter_writes_each_number_once_without_noise(value, unit, shown):
    assert number(value, unit) == shown


def test_value_text_writes_json_with_tidy_numbers_and_strings_as_they_are():
    assert value_text("0.30000000000000004") == "0.30000000000000004"  # a string is the server's text, as written
    assert value_text([0.1 + 0.2, {"a": -0.0, "b": None}]) == '[0.3, {"a": 0.0, "b": null}]'
    assert short_repr({"x": 0.7392700000000001}) == "{'x': 0.73927}"
    assert tidy((0.1 + 0.2, [float(2**53)])) == (0.3, [float(2**53)])


def test_tidy_numbers_shortens_only_numbers_with_noise_in_another_programs_text():
    assert tidy_numbers("assert 0.7392700000000001 >= 0.8") == "assert 0.73927 >= 0.8"
    assert tidy_numbers("SGLang 0.5.12 at 1.5 s, 9007199254740992.0") == "SGLang 0.5.12 at 1.5 s, 9007199254740992.0"


@given(st.floats(allow_nan=False, allow_infinity=False))
@settings(max_examples=300, deadline=None, derandomize=True)
def test_a_number_reads_back_as_its_tidy_value_and_is_never_longer_than_its_repr(value):
    shown = number(value)
    assert float(shown) == tidy(value) and noise(shown) == []
    assert len(shown) <= len(repr(value))


# ---- every output ---------------------------------------------------------------------------------

VALUES = st.one_of(st.sampled_from(NOISY), st.builds(lambda a, b: a / 10 + b / 100, st.integers(-(10**6), 10**6), st.integers(-100, 100)))


def _finding(requested: Any, effective: Any, predicted: Any) -> Finding:
    return Finding(
        id="mem.vlm-factor",
        rule="mem.vlm-factor",
        severity="warning",
        status="contradicted",
        setting="mem_fraction_static",
        title="mem_fraction_static is lowered for a multimodal model",
        summary=f"mem_fraction_static: requested {short_repr(requested)}, in effect {short_repr(effective)}",
        requested=requested,
        requested_source="launch command --mem-fraction-static",
        effective=effective,
        effective_source="/server_info mem_fraction_static",
        predicted=predicted,
        chain=[{"value": predicted, "rule": "mem.vlm-factor"}],
    )


def _values_read_records(requested: Any, effective: Any) -> list[dict[str, Any]]:
    """What the plugin keeps of a failing test's values: the terminal section, read back."""
    shown = Effective(mem_fraction_static=effective, provenance={"mem_fraction_static": Provenance(source="/server_info", requested=requested, requested_source="launch command")})
    recorded = shown.bind("effective", "/server_info", "host-a")
    text = values_read({(id(recorded), "mem_fraction_static"): (recorded, "mem_fraction_static", effective)})
    assert noise(text) == [], text
    return read_values_section(text)


def _planted(levels: int, v: list[Any]) -> tuple[dict[str, Any], list[str]]:
    """A report of two hosts with noisy values everywhere a number is shown, and the terminal
    texts made of the same values."""
    doc = copy.deepcopy(synthetic_report(2, levels))
    finding = _finding(v[0], v[1], v[2])
    explanation = Explanation(target="host-a", mode="target", sglang_version="0.5.12", findings=[finding])
    live = {"effective": {"mem_fraction_static": {"value": v[1]}, "max_running_requests": {"value": v[3]}}}
    base = {"effective": {"mem_fraction_static": {"value": v[0]}, "max_running_requests": {"value": 48}}}
    found = changes(base, live)
    fleet = drift({"a": base, "b": live})
    terminal = [explain_text.text(explanation, verbose=True), "\n".join(c.text() for c in found), "\n".join(line for host in fleet.hosts for line in fleet.lines(host))]
    for host in doc["hosts"]:
        host["findings"][-1] = json.loads(json.dumps({k: getattr(finding, k) for k in FINDING_FIELDS}))
        for name in ("mem_fraction_static", "max_running_requests"):
            host["effective"][name].update(value=v[1], requested=v[0], requested_source="launch command")
        for check in host["checks"]:
            if check["check"] == "sglang-baseline":
                check.update(passed=False, failures=[c.text() for c in found])
                check["diffs"] = [_diff(d) for c in found for d in c.members]
        test = host["tests"][0]
        # pytest's own message, as the plugin keeps it (the run in test_report_html.py checks that)
        test.update(outcome="failed", message=tidy_numbers(f"assert {v[1]!r} >= {v[0]!r}"), values_read=_values_read_records(v[0], v[1]))
        for bench in host["benchmarks"]:
            for lv in bench["levels"]:
                lv["output_throughput"] = abs(v[2]) + 0.1 + 0.2
                lv["ttft"]["p99"] = abs(v[3]) + 0.30000000000000004
                lv["server"]["peak_running"] = abs(v[1])
            for figures in bench["baseline"]["levels"].values():
                figures["output_throughput"] = [abs(x) + 0.1 + 0.2 for x in v[:3]]
    doc["run_checks"] = [{"check": "sglang-fleet", "host": None, "passed": False, "failures": [line for host in fleet.hosts for line in fleet.lines(host)], "notes": [], "nodeid": "::sglang-fleet", "differences": {h: [d.to_dict() for d in ds] for h, ds in fleet.differences.items()}}]
    return doc, terminal


def _diff(d: Any) -> dict[str, Any]:
    return {"path": d.path, "baseline": d.baseline, "live": d.live, "status": d.status, "failing": True, "finding": None, "group": None, "baseline_source": None, "live_source": None, "note": None}


@given(st.lists(VALUES, min_size=4, max_size=4), st.sampled_from([1, 3]))
@settings(max_examples=25, deadline=None, derandomize=True)
def test_no_output_shows_float_noise(values, levels):
    doc, terminal = _planted(levels, values)
    report = RunReport.model_validate(doc)
    judged = rejudge(report)
    outputs = {
        "terminal": "\n".join(terminal),
        "html": html_report.render(report, charts=True),
        "html without charts": html_report.render(report, charts=False),
        "markdown": markdown.render(report),
        "json reasons": "\n".join(judged.reasons + [r for h in judged.hosts.values() for r in h.reasons]),
    }
    for name, text in outputs.items():
        assert noise(text) == [], (name, noise(text))
    # the JSON report's numbers stay exact
    assert report.model_dump(mode="json")["hosts"][0]["effective"]["mem_fraction_static"]["value"] == values[1]
