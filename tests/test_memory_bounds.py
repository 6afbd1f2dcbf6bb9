"""Memory bounded by the input: a start-up line, a log and a JSON report are read in a few bytes
of memory per byte of text, whatever the text holds, and read as before wherever the text is
real.

The figures for large inputs (a 60 MB start-up line, a 200 MB report) are held by
``benchmarks/memory.py`` (docs/trust.md); these tests check the mechanisms, and that a few MB
stay under a generous factor (measured with tracemalloc, which counts Python's allocations
only, so the figure does not depend on the machine).
"""

from __future__ import annotations

import gc
import importlib.util
import json
import re
import tracemalloc
from typing import Any, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import DATA, ROOT, corpus_files, corpus_text, property_settings

from pytest_sglang import parse_startup_line
from pytest_sglang.cli.main import main
from pytest_sglang.parse import lines as lines_module
from pytest_sglang.parse.lines import MAX_VALUE_CHARS, RawValue
from pytest_sglang.parse.quoted import quoted_end, token_end
from pytest_sglang.parse.redact import REDACTED, is_secret_key, redact_log_line
from pytest_sglang.render.report.reading import ReportTooLarge, read_report
from pytest_sglang.render.report.schema import MAX_PROBLEMS, validate

ARTEFACT_LOG = DATA / "artefacts" / "sglang-0.5.23-cpu" / "server.log"


def _synthetic() -> Any:
    spec = importlib.util.spec_from_file_location("report_html_benchmark", ROOT / "benchmarks" / "report_html.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.synthetic_report


synthetic_report = _synthetic()


def peak_per_byte(work: Callable[[], Any], size: int) -> tuple[Any, float]:
    """What ``work`` returns, and the peak of Python's allocations while it ran, per byte."""
    gc.collect()
    tracemalloc.start()
    try:
        result = work()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, peak / size


def real_startup_lines() -> list[str]:
    found = []
    for path in [*corpus_files("server_args"), *corpus_files("logs")]:
        found += [line for line in corpus_text(path).splitlines() if "server_args=" in line]
    found += [line for line in ARTEFACT_LOG.read_text().splitlines() if "server_args=" in line]
    return found


def dict_line() -> str:
    return next(line for line in ARTEFACT_LOG.read_text().splitlines() if "server_args=" in line)


# ---- the quoted-text scanners are the patterns they replace ----------------------------------------

# The expressions the start-up line reader and the log-line redactor used: the scanners must
# find the same ends (they keep a record per character in Python's re: 140 bytes per byte).
TOKEN = {q: re.compile(rf"{q}(?:[^{q}\\\n]|\\.)*(?:{q}|$)", re.S) for q in "'\""}
QUOTED = {q: re.compile(rf"{q}(?:[^{q}\\]|\\.)*{q}") for q in "'\""}
TRICKY = st.text(alphabet="'\"\\\na ,(=", max_size=16)


@property_settings()
@given(TRICKY, st.sampled_from("'\""))
def test_the_quoted_text_scanners_end_where_the_patterns_did(body, quote):
    text = "x" + quote + body
    token = TOKEN[quote].match(text, 1)
    assert token_end(text, 1) == (token.end() if token else None)
    quoted = QUOTED[quote].match(text, 1)
    assert quoted_end(text, 1) == (quoted.end() if quoted else None)


OLD_TOKEN = re.compile(r"""'(?:[^'\\\n]|\\.)*(?:'|$)|"(?:[^"\\\n]|\\.)*(?:"|$)|[()\[\]{},]""", re.S)


@property_settings()
@given(st.text(alphabet="'\"\\\n(){}[],a =", max_size=24))
def test_a_start_up_lines_steps_are_the_patterns_steps(text):
    assert list(lines_module._tokens(text)) == [m.span() for m in OLD_TOKEN.finditer(text)]


_OLD_QUOTED = r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\""""
_OLD_REPR = re.compile(rf"\b(\w+)=({_OLD_QUOTED})")
_OLD_DICT = re.compile(rf"""(['"])(\w+)\1(\s*:\s*)({_OLD_QUOTED})""")


def _old_redaction(line: str) -> str:
    line = _OLD_REPR.sub(lambda m: f"{m.group(1)}='{REDACTED}'" if is_secret_key(m.group(1)) else m.group(0), line)
    return _OLD_DICT.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(1)}{m.group(3)}'{REDACTED}'" if is_secret_key(m.group(2)) else m.group(0), line)


@property_settings()
@given(st.lists(st.sampled_from(["api_key", "x", "=", "'", '"', "\\", ":", " ", "\n", "a", ",", "'api_key'", '"password"']), max_size=14))
def test_redacting_a_log_line_finds_the_fields_the_patterns_found(parts):
    line = "".join(parts)
    if "--" not in line:  # flags are redacted by a pattern that did not change
        assert redact_log_line(line) == _old_redaction(line)


def _segments_cleaned(text: str) -> str:
    """clean_line as it was: every carriage-return segment in a list (20 bytes per byte of "ab\r")."""
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    if "\r" in text:
        parts = text.replace("\r\n", "\n").split("\r")
        keep = [p for p in parts if "server_args=" in p or "max_total_num_tokens=" in p]
        text = keep[-1] if keep else parts[-1]
    return text


@property_settings()
@given(st.lists(st.sampled_from(["\r", "\n", "\r\n", "server_args=", "max_total_num_tokens=", "a", "\x1b[1m"]), max_size=12))
def test_the_carriage_return_segment_kept_is_the_one_kept_before(parts):
    text = "".join(parts)
    assert lines_module.clean_line(text) == _segments_cleaned(text)


def test_a_line_of_carriage_returns_is_cleaned_in_little_memory():
    text = "ab\r" * 1_000_000 + "[2026-01-01 00:00:00] server_args=ServerArgs(tp_size=2)" + "\rab" * 1_000
    cleaned, per_byte = peak_per_byte(lambda: lines_module.clean_line(text), len(text))
    assert cleaned == "[2026-01-01 00:00:00] server_args=ServerArgs(tp_size=2)"
    assert per_byte < 1.5  # it was 20 bytes per byte


# ---- start-up lines: real ones read as before, long ones in little memory ---------------------------


def test_every_real_start_up_line_reads_the_same_field_by_field(monkeypatch):
    """A line longer than WHOLE_LINE_CHARS is read field by field where it lies: on every real
    line that gives what parsing the whole line gives, values, their types and raw text."""
    lines = real_startup_lines()
    whole = [parse_startup_line(line) for line in lines]
    monkeypatch.setattr(lines_module, "WHOLE_LINE_CHARS", 0)
    for line, expected in zip(lines, whole):
        by_field = parse_startup_line(line)
        assert (by_field.fields, by_field.complete, by_field.problem, by_field.raw_fields) == (expected.fields, expected.complete, expected.problem, expected.raw_fields)
        assert {k: type(v) for k, v in by_field.fields.items()} == {k: type(v) for k, v in expected.fields.items()}
    assert len(lines) >= 15 and all(line.complete for line in whole)


@pytest.mark.parametrize("shape", ["a list of zeros", "a string", "many small lists"])
def test_a_start_up_line_of_megabytes_is_read_in_little_more_than_its_length(shape):
    line = dict_line()
    value = {"a list of zeros": "[" + "0, " * 1_500_000 + "0]", "a string": "'" + "a" * 4_500_000 + "'", "many small lists": "[" + "[], " * 300_000 + "[]]"}[shape]
    text = line.replace("'encoder_urls': []", f"'encoder_urls': {value}", 1)
    parsed, per_byte = peak_per_byte(lambda: parse_startup_line(text), len(text))
    assert per_byte < 1.0  # it was 325 bytes per byte for a list, 140 for a string
    assert parsed.complete and parsed.fields["tp_size"] == 1
    kept = parsed.fields["encoder_urls"]
    assert isinstance(kept, RawValue) and kept.startswith(value[:100]) and kept.endswith(f"… ({len(value)} characters)")
    assert len(kept) < MAX_VALUE_CHARS + 40


def test_a_start_up_line_past_the_field_limit_stops_there_and_says_so():
    text = "server_args=ServerArgs(" + ", ".join(f"f{i}={i}" for i in range(lines_module.MAX_FIELDS + 5)) + ")"
    parsed = parse_startup_line(text)
    assert not parsed.complete and len(parsed.fields) == lines_module.MAX_FIELDS
    assert parsed.problem is not None and parsed.problem.startswith(f"more than {lines_module.MAX_FIELDS} fields (SGLang prints some 600) at character")


def test_a_start_up_line_past_the_item_budget_keeps_the_rest_as_text():
    many = "[" + ", ".join(["[1, 2]"] * 7_000) + "]"  # some 21,000 items, under MAX_VALUE_CHARS
    text = "server_args=ServerArgs(" + ", ".join(f"{name}={many}" for name in "abcde") + ", f=[1, 2])"
    parsed = parse_startup_line(text)
    assert parsed.complete
    assert all(parsed.fields[name] == [[1, 2]] * 7_000 for name in "abcd")
    assert parsed.fields["e"] == RawValue(many) and parsed.raw_fields["e"] == many  # past MAX_ITEMS
    assert parsed.fields["f"] == [1, 2]


def test_redacting_a_long_log_line_takes_linear_memory():
    secret = "sk-" + "k" * 40
    text = dict_line().replace("'encoder_urls': []", "'encoder_urls': '" + "a\\'" * 400_000 + "', 'api_key': '" + secret + "'", 1)
    redacted, per_byte = peak_per_byte(lambda: redact_log_line(text), len(text))
    assert per_byte < 2.5  # the copy it returns; it was 273 bytes per byte
    assert secret not in redacted and f"'api_key': '{REDACTED}'" in redacted


def test_explaining_a_start_up_log_of_megabytes_stays_a_few_bytes_per_byte(tmp_path, capsys):
    line = dict_line().replace("'encoder_urls': []", "'encoder_urls': [" + "0, " * 1_500_000 + "0]", 1)
    text = ARTEFACT_LOG.read_text().replace(dict_line(), line)
    from pytest_sglang.judge.explain.startup import explain_startup_line

    explanation, per_byte = peak_per_byte(lambda: explain_startup_line(text, sglang_version="0.5.23", gpu="H100"), len(text))
    assert per_byte < 5  # the lines and their redacted copies; it was some 240 bytes per byte
    assert explanation.findings is not None


# ---- reports: problems counted, not held; nothing of a bad report kept ----------------------------


def test_validate_keeps_the_first_problems_and_counts_them_all():
    document = synthetic_report(1, 1)
    document["reasons"] = [0] * 10_000
    problems = validate(document)
    assert len(problems) == MAX_PROBLEMS and problems.total == 10_000
    assert problems[0] == "$.reasons[0]: int where string is expected"
    assert problems[-1] == f"$.reasons[{MAX_PROBLEMS - 1}]: int where string is expected"
    assert validate(synthetic_report(1, 1)) == [] and validate(synthetic_report(1, 1)).total == 0


def test_a_report_of_millions_of_wrong_values_is_one_line_counting_them(tmp_path, capsys):
    document = synthetic_report(1, 1)
    document["reasons"] = ["@@"]
    head, tail = json.dumps(document).split('"@@"')
    path = tmp_path / "run.json"
    path.write_text(head + "0," * 1_999_999 + "0" + tail)
    assert main(["report", str(path), "--md", str(tmp_path / "out.md")]) == 2
    assert capsys.readouterr().err == f"pytest-sglang: JSON report {path} is not a pytest-sglang report: $.reasons[0]: int where string is expected (and 1,999,999 more)\n"
    text = path.read_text()
    (_, problems), per_byte = peak_per_byte(lambda: read_report(text), len(text))
    assert problems.total == 2_000_000 and len(problems) == MAX_PROBLEMS
    assert per_byte < 1  # a chunk at a time, nothing kept; it was 70 bytes per byte
    assert not (tmp_path / "out.md").exists()


DENSE = {"empty objects": "{}, ", "nested lists": "[[]], ", "short strings": '"ab", '}


@pytest.mark.parametrize("item", DENSE.values(), ids=DENSE.keys())
@pytest.mark.parametrize("where", ["hosts", "a value"])
def test_a_report_of_dense_values_is_counted_or_refused_in_bounded_memory(item, where, monkeypatch):
    """Where the schema refuses them (hosts), they are counted and not kept; where it takes any
    value (an effective value), they are kept up to the budget (here 1 byte per byte), then
    refused. json.loads alone takes up to 24 bytes per byte of such text."""
    monkeypatch.setattr("pytest_sglang.render.report.reading.MIN_BUDGET", 0)
    document = synthetic_report(1, 1)
    if where == "hosts":
        document["hosts"] = "@@"
    else:
        document["hosts"][0]["effective"][next(iter(document["hosts"][0]["effective"]))]["value"] = "@@"
    head, tail = json.dumps(document).split('"@@"')
    text = head + "[" + item * 60_000 + item.rstrip(", ") + "]" + tail

    def read() -> Any:
        try:
            return read_report(text, bytes_per_byte=1)
        except ReportTooLarge as exc:
            return exc

    result, per_byte = peak_per_byte(read, len(text))
    assert per_byte < 2
    if where == "hosts":
        assert result[0] is None and result[1].total >= 60_000
    else:
        assert isinstance(result, ReportTooLarge)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*path, index))
    return out


BASE = synthetic_report(2, 2)
PATHS = _paths(BASE)
ODD = st.sampled_from([0, 1, -1, 300, 2**60, 10**400, 1.5, float("nan"), float("inf"), "x", "", True, False, None])
ODD_VALUES = st.one_of(
    st.lists(ODD, max_size=60),
    st.recursive(ODD, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["host", "verdict", "name", "x"]), inner, max_size=3), max_leaves=8),
)


@property_settings()
@given(st.lists(st.tuples(st.integers(0, len(PATHS) - 1), ODD_VALUES, st.booleans()), max_size=4), st.integers(1, 25), st.booleans())
def test_reading_a_report_finds_what_the_validator_finds(changes, limit, indent):
    """read_report decodes and checks in one pass; on any document the problems (their order,
    the first ``limit``, the count) are the validator's on json.loads of the same text."""
    document = json.loads(json.dumps(BASE))
    for index, value, delete in changes:
        path = PATHS[index]
        if not path:
            document = value
            continue
        parent = document
        try:
            for key in path[:-1]:
                parent = parent[key]
            if delete and isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            pass
    text = json.dumps(document, indent=2 if indent else None)
    expected = validate(json.loads(text), limit=limit)
    read, problems = read_report(text, limit=limit)
    assert (list(problems), problems.total) == (list(expected), expected.total)
    assert read == (None if expected else json.loads(text))


@property_settings()
@given(st.text(alphabet='{}[]",:0123456789-.eEtrufalsnNIy \n\\x', max_size=30), st.integers(0, 2000))
def test_text_that_is_not_json_fails_as_json_loads_fails(piece, at):
    base = json.dumps(BASE)[:2000]
    for text in (piece, "[" + piece, '{"hosts": [' + piece, "[1, 2, 3, " + piece, base[:at] + piece + base[at + 5 :]):
        try:
            json.loads(text)
        except ValueError as exc:
            with pytest.raises(ValueError) as raised:
                read_report(text)
            assert str(raised.value) == str(exc)
