"""docs/reports.md shows what a run writes: its command is run as written (on a copy of the
example suite, in an empty folder), and each sample on the page is checked against the file
the run wrote; and every page of the manual closes the code blocks it opens.

The samples are the fenced blocks right after an HTML comment line ``<!-- reports-sample: NAME -->``:

- ``command``: the command, run with bash (a trailing backslash continues a line);
- ``report.md``: the Markdown summary, exactly (it holds no time and no path);
- ``report.json``: an excerpt of the JSON report. ``"…"`` as a value matches any value (times,
  durations); a ``"…"`` key stands for keys left out (without one, the sample's keys must be all
  of them); in a list, ``"… N more ..."`` stands for exactly N items, ``"… ..."`` for any number;
- ``junit.xml``: a ``<testcase>`` of the JUnit XML, its attributes, properties and failure;
  ``…`` as an attribute value matches anything, a text starting with ``…`` is the real text's end.

When the Markdown changes on purpose, ``python tests/test_report_docs.py --update`` runs the
command and writes the new ``report.md`` sample into the page.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PAGE = DOCS / "reports.md"
SAMPLE = re.compile(r"^<!-- reports-sample: (?P<name>[\w.]+) -->\n```(?P<info>\w*)\n(?P<body>.*?)^```$", re.M | re.S)
ELLIPSIS = "…"
MORE = re.compile(r"^… (\d+) more\b")


def samples(text: str | None = None) -> dict[str, str]:
    found = {m["name"]: m["body"] for m in SAMPLE.finditer(text if text is not None else PAGE.read_text(encoding="utf-8"))}
    assert {"command", "report.md", "report.json", "junit.xml"} <= set(found), f"docs/reports.md lacks samples: {sorted(found)}"
    return found


def run_documented_command(work: Path) -> subprocess.CompletedProcess[str]:
    """The page's command, as written, in ``work`` holding a copy of the example suite."""
    shutil.copytree(REPO / "example_suite", work / "example_suite", ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SGLANG_")) and k != "CI"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(["bash", "-c", samples()["command"]], cwd=work, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def documented_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    work = tmp_path_factory.mktemp("reports-sample")
    return work, run_documented_command(work)


# ---- matching an excerpt ------------------------------------------------------------------------


def _match(sample: Any, real: Any, where: str, out: list[str]) -> None:
    if sample == ELLIPSIS:
        return
    if isinstance(sample, dict):
        if not isinstance(real, dict):
            out.append(f"{where}: an object on the page, {type(real).__name__} in the report")
            return
        shown = {k: v for k, v in sample.items() if k != ELLIPSIS}
        missing = [k for k in shown if k not in real]
        if missing:
            out.append(f"{where}: {missing} not in the report")
        if ELLIPSIS not in sample and set(real) - set(shown):
            out.append(f"{where}: the report also has {sorted(set(real) - set(shown))} (add them, or a \"…\" key)")
        for key in shown:
            if key in real:
                _match(shown[key], real[key], f"{where}.{key}", out)
        return
    if isinstance(sample, list):
        if not isinstance(real, list):
            out.append(f"{where}: a list on the page, {type(real).__name__} in the report")
            return
        out += _match_list(sample, real, where)
        return
    if sample != real:
        out.append(f"{where}: {sample!r} on the page, {real!r} in the report")


def _match_list(sample: list[Any], real: list[Any], where: str, at: int = 0) -> list[str]:
    """[] when the list matches; the problems otherwise (items matched in order, an elision
    item standing for N or any number of real items)."""
    if not sample:
        return [] if not real else [f"{where}: [] on the page, {len(real)} item(s) in the report"]
    head, rest = sample[0], sample[1:]
    if isinstance(head, str) and head.startswith(ELLIPSIS + " "):
        counted = MORE.match(head)
        if counted:
            n = int(counted[1])
            if n > len(real):
                return [f"{where}: {head!r}, but the report has {len(real)} item(s) left"]
            return _match_list(rest, real[n:], where, at + n)
        for n in range(len(real) + 1):
            if _match_list(rest, real[n:], where, at + n) == []:
                return []
        return [f"{where}: {head!r} does not fit the report's {len(real)} item(s)"]
    if not real:
        return [f"{where}: the page shows more items than the report has"]
    problems: list[str] = []
    _match(head, real[0], f"{where}[{at}]", problems)
    return problems + _match_list(rest, real[1:], where, at + 1)


def excerpt_problems(sample: Any, real: Any) -> list[str]:
    out: list[str] = []
    _match(sample, real, "$", out)
    return out


def test_the_excerpt_matcher_accepts_an_excerpt_and_refuses_what_the_report_does_not_say() -> None:
    real = {"a": 1, "t": "2026-12-04T11:25:23Z", "xs": [1, 2, 3, 4], "o": {"k": 1, "j": 2}}
    assert excerpt_problems({"a": 1, "t": "…", "xs": [1, "… 3 more"], "o": {"k": 1, "…": "j"}}, real) == []
    assert excerpt_problems({"a": 1, "t": "…", "xs": ["… any", 4], "o": {"k": 1, "j": 2}}, real) == []
    assert excerpt_problems({"a": 2, "t": "…", "xs": [1, "… 3 more"], "o": {"k": 1, "…": "j"}}, real) == ["$.a: 2 on the page, 1 in the report"]
    assert excerpt_problems({"a": 1, "t": "…", "xs": [1, "… 2 more"], "o": {"k": 1, "…": ""}}, real)
    assert excerpt_problems({"a": 1, "t": "…", "xs": [1, "… 3 more"], "o": {"k": 1}}, real) == ["$.o: the report also has ['j'] (add them, or a \"…\" key)"]
    assert excerpt_problems({"a": 1, "t": "…", "xs": [2, "… 3 more"], "o": {"…": ""}, "new": 0}, real)


# ---- the samples ------------------------------------------------------------------------------


def test_the_documented_command_ends_as_the_page_says(documented_run) -> None:
    work, done = documented_run
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"=+ 4 failed, 27 passed, 2 skipped in [\d.]+s", done.stdout), done.stdout[-2000:]
    assert "pytest ends with `4 failed, 27 passed, 2 skipped` and exit status 1" in " ".join(PAGE.read_text(encoding="utf-8").split())
    assert {"report.md", "report.json", "junit.xml"} <= {p.name for p in work.iterdir()}


def test_the_markdown_sample_is_what_the_run_writes(documented_run) -> None:
    work, _ = documented_run
    written = (work / "report.md").read_text(encoding="utf-8")
    assert samples()["report.md"] == written, "docs/reports.md: the report.md sample is stale; regenerate it with python tests/test_report_docs.py --update\n" + written


def test_the_json_sample_is_an_excerpt_of_the_report_the_run_writes(documented_run) -> None:
    from pytest_sglang.render.report.schema import validate

    work, _ = documented_run
    real = json.loads((work / "report.json").read_text(encoding="utf-8"))
    assert validate(real) == []
    sample = json.loads(samples()["report.json"])
    assert excerpt_problems(sample, real) == []


def _xml_problems(sample: ET.Element, real: ET.Element, where: str) -> list[str]:
    out = []
    if sample.tag != real.tag:
        return [f"{where}: <{sample.tag}> on the page, <{real.tag}> in junit.xml"]
    for name, value in sample.attrib.items():
        if value != ELLIPSIS and real.get(name) != value:
            out.append(f"{where} {name}: {value!r} on the page, {real.get(name)!r} in junit.xml")
    text, real_text = (sample.text or "").strip(), (real.text or "").strip()
    ends = text.startswith(ELLIPSIS) and real_text.endswith(text[1:].strip())
    if text and not ends and text != real_text:
        out.append(f"{where}: text {text!r} on the page, {(real.text or '').strip()[:200]!r} in junit.xml")
    children = list(real)
    for i, child in enumerate(sample):
        if i >= len(children):
            out.append(f"{where}: <{child.tag}> on the page, not in junit.xml")
            continue
        out += _xml_problems(child, children[i], f"{where}/{child.tag}[{i}]")
    return out


def test_the_junit_sample_is_a_testcase_the_run_writes(documented_run) -> None:
    work, _ = documented_run
    sample = ET.fromstring(samples()["junit.xml"])
    assert sample.tag == "testcase"
    real = [c for c in ET.parse(work / "junit.xml").getroot().iter("testcase") if c.get("name") == sample.get("name") and c.get("classname") == sample.get("classname")]
    assert len(real) == 1, f"no testcase {sample.get('name')} in junit.xml"
    assert _xml_problems(sample, real[0], "testcase") == []
    assert [p.get("name") for p in sample.iter("property")] == ["sglang_host", "sglang_version", "sglang_gpu", "sglang_model"]


def test_the_verdict_table_shows_the_headlines_the_summary_writes() -> None:
    from pytest_sglang.render.report.markdown import HEADLINE, TITLE

    text = PAGE.read_text(encoding="utf-8")
    for verdict, headline in HEADLINE.items():
        assert re.search(rf"^\| `{verdict}` \|.*\| `{re.escape(TITLE + headline)}` \|$", text, re.M), f"docs/reports.md: the verdict table lacks {verdict}: {TITLE + headline}"


# ---- every fence of the manual is closed --------------------------------------------------------

FENCE_LINE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


def fence_problems(text: str) -> list[str]:
    """Where a page's fenced code blocks go wrong: a block never closed (the rest of the page
    turns into code), or a fence with an info string inside a block (an opening fence where a
    closing one was meant: the block above it was not closed). Fences follow CommonMark: a
    closing fence is the same character, at least as long, with nothing after it."""
    problems = []
    open_at: int | None = None
    opener = ""
    for number, line in enumerate(text.splitlines(), 1):
        found = FENCE_LINE.match(line.rstrip())
        if found is None:
            continue
        fence, info = found["fence"], found["info"].strip()
        if open_at is None:
            open_at, opener = number, fence
        elif fence[0] == opener[0] and len(fence) >= len(opener) and not info:
            open_at = None
        elif fence[0] == opener[0] and len(fence) >= len(opener):
            problems.append(f"line {number}: an opening fence ({line.strip()}) inside the block opened at line {open_at}: that block is not closed")
    if open_at is not None:
        problems.append(f"line {open_at}: a code block opened here is never closed")
    return problems


def test_the_fence_check_finds_an_unclosed_block() -> None:
    assert fence_problems("a\n```sh\nx\n```\nb\n") == []
    assert fence_problems("````markdown\n```py\nx\n```\n````\n") == []
    assert fence_problems("```markdown\nx\n```\n\n```\ny\n") == ["line 5: a code block opened here is never closed"]
    assert fence_problems("```markdown\nx\n```py\ny\n```\n") == ["line 3: an opening fence (```py) inside the block opened at line 1: that block is not closed"]
    assert fence_problems("text\n```\ncode\n") == ["line 2: a code block opened here is never closed"]


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")) + [REPO / "README.md"], ids=lambda p: p.name)
def test_every_code_block_of_the_manual_is_closed(page: Path) -> None:
    assert fence_problems(page.read_text(encoding="utf-8")) == [], page.name


# ---- regenerating the Markdown sample -----------------------------------------------------------


def _update() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        done = run_documented_command(work)
        print(done.stdout[-400:])
        written = (work / "report.md").read_text(encoding="utf-8")
    text = PAGE.read_text(encoding="utf-8")
    match = next(m for m in SAMPLE.finditer(text) if m["name"] == "report.md")
    PAGE.write_text(text[: match.start("body")] + written + text[match.end("body"):], encoding="utf-8")
    print(f"wrote the report.md sample into {PAGE}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_report_docs.py --update")
    _update()
