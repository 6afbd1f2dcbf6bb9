"""Every fenced example of the README and docs/ that a user would copy runs as written.

Each block is found by its language tag and run as a user would: an ``ini`` block as the
``pytest.ini`` of a run against the bundled simulator (so a value pytest refuses fails here), a
``python`` block holding tests through ``pytester``, any other ``python`` block as a script, and
each command of a ``bash``/``sh``/``console`` block in a copy of ``docs/examples/`` (the inputs
the pages read), its shown output compared where the page shows some. A real server the page
names (``http://gpu1:30000``) is a simulated one here.

A block that cannot run here is listed in ``NOT_HERE`` with its reason, and one another test
runs in ``ELSEWHERE``; both are keyed by page and a short text of the block. A listed block that
is gone fails (the lists stay true), and so does a new block that none of this classifies.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
EXAMPLES = DOCS / "examples"
BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"
RELEASE_0523 = "sim://qwen35-122b-a10b-4xrtx6000-0.5.23"

SHELL = {"bash", "sh", "shell", "console"}
SAMPLES = {"", "text", "json", "markdown", "mermaid", "xml"}  # what a page shows: output, formats, charts

# ---- the blocks ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    page: str  # "README.md", "docs/explain.md"
    line: int
    lang: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


@functools.lru_cache(maxsize=1)
def blocks() -> tuple[Block, ...]:
    """Every fenced block of the README and docs/*.md, its lines dedented by its fence's indent."""
    found = []
    for path in [REPO / "README.md", *sorted(DOCS.glob("*.md"))]:
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            opening = FENCE.match(lines[i])
            if not opening:
                i += 1
                continue
            indent, fence = len(opening["indent"]), opening["fence"]
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence[0] * len(fence)) and not lines[j].strip().strip(fence[0]))
            body = "\n".join(line[indent:] if not line[:indent].strip() else line for line in lines[i + 1 : end])
            found.append(Block(str(path.relative_to(REPO)), i + 1, opening["info"].split()[0] if opening["info"].strip() else "", body + "\n"))
            i = end + 1
    return tuple(found)


def find(page: str, text: str) -> list[Block]:
    return [b for b in blocks() if b.page == page and text in b.text]


# ---- blocks that do not run here, each with its reason -----------------------------------------

GPU_HOST = "reads a real SGLang server by its name (http://gpu1:30000 and the like)"
SSH = "reads a named host over SSH"
INSTALL = "installs a package with pip"
CI = "a CI configuration: it runs in GitHub Actions or GitLab CI"
REAL_TIER = "a maintainers' command of the real-SGLang tier: it needs every release's wheel"
PROJECT = "the project's own checks on its checkout (CI runs them)"
SERVER = "starts a server that runs until it is stopped"
TEMPLATE = "a template with placeholders ('...'), not a file to copy as it is"
LONG_BENCH = "a benchmark of 5 levels of 256 requests: minutes against a simulator (the page's sglang_bench tests run the same Bench)"
MANIFEST = "a Kubernetes manifest: read by parse_launch_command, never run (the test below reads it)"
SGLANG_INSTALLED = "runs an installed SGLang (explain --execute): the real tier runs it (tests/real_sglang/test_explain_execute_real.py)"
MADE_UP = "shows what a situation made on purpose prints (a report path that is a symbolic link in /ci/work)"

NOT_HERE: dict[tuple[str, str], str] = {
    ("docs/architecture.md", "lint-imports"): PROJECT,
    ("docs/baselines.md", "git add baselines && git commit"): GPU_HOST,
    ("docs/baselines.md", "pytest-sglang show http://gpu1:30000 --json"): GPU_HOST,
    ("docs/benchmarks.md", 'with connect("http://gpu1:30000") as target:\n    result = Bench'): LONG_BENCH,
    ("docs/capture.md", "--ssh root@gpu1 --unit sglang.service -o captures/gpu1.json"): SSH,
    ("docs/capture.md", 'ssh="root@gpu1", unit="sglang.service"'): SSH,
    ("docs/ci.md", "name: sglang-gate"): CI,
    ("docs/ci.md", "sglang-gate:\n  image: python:3.11"): CI,
    ("docs/development.md", "pip install '.[test]' && pytest -n 2"): INSTALL,
    ("docs/development.md", "python tests/real_sglang/differential.py "): REAL_TIER,
    ("docs/development.md", "python -m pytest_sglang.model.knowledge.release add 0.5.24\n"): REAL_TIER,
    ("docs/development.md", "python tests/real_sglang/locate_sources.py --write"): REAL_TIER,
    ("docs/explain-proof.md", "python tests/real_sglang/postinit_differential.py "): REAL_TIER,
    ("docs/explain-proof.md", "python tests/real_sglang/corpus_postinit.py "): REAL_TIER,
    ("docs/simulator.md", "python tests/real_sglang/profile_proof.py --store"): REAL_TIER,
    ("docs/explain-proof.md", "python tests/real_sglang/pool_differential.py "): REAL_TIER,
    ("docs/explain.md", 'ssh="ops@gpu1", unit="sglang"'): SSH,
    ("docs/explain.md", '[[rule]]\nid = "pcg.multimodal"'): TEMPLATE,
    ("docs/explain.md", "execute=True, sglang_python="): SGLANG_INSTALLED,
    ("docs/getting-started.md", "pip install /path/to/pytest-sglang"): INSTALL,
    ("docs/getting-started.md", "pytest --sglang-host=http://gpu1:30000\n"): GPU_HOST,
    ("docs/getting-started.md", "--sglang-wait-ready=600"): GPU_HOST,
    ("docs/host-access.md", "--sglang-ssh=root@gpu1"): SSH,
    ("docs/launch-commands.md", "image: lmsysorg/sglang:latest"): MANIFEST,
    ("docs/library.md", 'ssh="root@gpu1", unit="sglang.service", logs='): SSH,
    ("docs/reports.md", "pip install '.[report]'"): INSTALL,
    ("docs/reports.md", "/ci/work/sglang-report.json is a symbolic link"): MADE_UP,
    ("docs/reports.md", "- uses: actions/upload-artifact@v4"): CI,
    ("docs/reports.md", "  after_script:\n    - pytest-sglang report"): CI,
    ("docs/simulator.md", "python -m pytest_sglang.sim --profile"): SERVER,
}

# Blocks another test runs as written (and compares with what they print).
ELSEWHERE: dict[tuple[str, str], str] = {
    ("README.md", "pip install . && pytest example_suite"): ".ci/run",
    ("docs/baselines.md", "$ pytest-sglang baseline sim://qwen35-122b-a10b-4xrtx6000-baseline --dir baselines"): "tests/test_baseline_groups.py",
    ("docs/baselines.md", "$ pytest-sglang diff baselines/qwen35-prod.json sim://"): "tests/test_baseline_groups.py",
    ("docs/baselines.md", "--sglang-baseline=baselines\n...\n_________ sglang-baseline[sim://"): "tests/test_baseline_groups.py",
    ("docs/baselines.md", "--sglang-baseline=elsewhere"): "tests/test_baseline_groups.py",
    ("docs/ci.md", "pip install ./tools/pytest-sglang\n\n"): "tests/test_ci_recipe.py",
    ("docs/launch-commands.md", "#!/bin/bash\nMODEL=deepseek-ai/DeepSeek-V3"): "tests/test_shell_expansion.py",
    ("docs/launch-commands.md", "$ pytest-sglang explain --launch-file launch.sh"): "tests/test_shell_expansion.py",
    ("docs/reports.md", "--sglang-report-md report.md --sglang-report-json report.json --junitxml junit.xml"): "tests/test_report_docs.py",
    ("docs/simulator.md", "from pytest_sglang.sim import load_profile, start_simulator"): "tests/test_docs_behaviour.py",
}
# every ``$ pytest-sglang`` console block of docs/explain.md, and every test of docs/surprises.md
ELSEWHERE_PAGES = {("docs/explain.md", "console"): "tests/test_explain_docs.py", ("docs/surprises.md", "python"): "tests/test_surprises.py"}

# ---- what a block needs around it --------------------------------------------------------------

# A real server a page names is this simulated one when the block runs here.
HOSTS = {"http://gpu1:30000": BASELINE}
# Names a fragment uses that its page introduces in the text around it.
PRELUDE = {
    ("docs/effective.md", "effective.max_running_requests"): f"from pytest_sglang import connect\neffective = connect({CANDIDATE!r}).effective\n",
    # a field the profile's release reports (docs/fixtures.md says what an older release does)
    ("docs/fixtures.md", "server_args.enable_dp_lm_head"): f"from pytest_sglang import connect\nserver_args = connect({RELEASE_0523!r}).server_args\n",
    ("docs/launch-commands.md", 'parse_launch_command(open("launch.sh").read())'): "from pytest_sglang.launch import parse_launch_command\n",
    ("docs/library.md", 'with connect("http://gpu1:30000", timeout=10)'): "from pytest_sglang import connect\n",
    ("docs/library.md", "parse_launch_command(command_text"): "command_text = 'python -m sglang.launch_server --model-path m --tp 4'\n",
    ("docs/library.md", "parse_startup_line(text)"): "text = open('server.log').read()\n",
    ("docs/reports.md", "from pytest_sglang.report.schema import"): "import json\n",
}
# The host (and options) a block of tests runs against.
TEST_RUNS = {
    ("docs/benchmarks.md", "def test_48_concurrent_streams"): [BASELINE, "--sglang-bench=smoke"],
    ("docs/benchmarks.md", "def test_all_48_slots_are_used"): [BASELINE, "--sglang-bench=smoke"],
    ("docs/benchmarks.md", "def test_the_nightly_benchmark"): [BASELINE, "--sglang-bench=smoke"],
    ("docs/explain.md", "def test_no_requested_flag_is_a_no_op"): [CANDIDATE],
}
# Files a command block runs beside: (name, the block of the same page that is the file).
BESIDE = {("docs/getting-started.md", "pytest --sglang-host=sim://"): [("test_deployment.py", "# test_deployment.py")]}
# The exit status of a command the page shows failing (else 0 or 1: a check that fails is 1).
EXIT = {("docs/launch-commands.md", "$ pytest-sglang explain --launch '...'"): 2}
# Blocks of the same page whose commands run first, in the same folder.
BEFORE = {("docs/baselines.md", 'load_baseline("baselines/qwen35-prod.json")'): "$ pytest-sglang baseline sim://qwen35-122b-a10b-4xrtx6000-baseline --dir baselines"}
# A command block whose output the page shows in a block of its own, after some prose.
SHOWN_APART = {("docs/explain.md", "pytest-sglang explain --startup-line server.log"): "values that differ from SGLang 0.5.12's defaults"}
# Blocks that read the report a gate run writes (the run of docs/reports.md's sample command).
NEEDS_GATE_REPORT = [
    ("docs/reports.md", "pytest-sglang report sglang-report.json --html"),
    ("docs/reports.md", 'problems = validate(json.load(open("report.json")))'),
    ("docs/reports.md", 'report = RunReport.model_validate(json.load(open("report.json")))'),
]


def _key(block: Block, table: dict | list) -> tuple[str, str] | None:
    keys = [k for k in table if k[0] == block.page and k[1] in block.text]
    assert len(keys) <= 1, f"{block.id}: more than one entry matches: {keys}"
    return keys[0] if keys else None


# ---- classification ----------------------------------------------------------------------------


def kind(block: Block) -> str:
    """What is done with a block: ``listed``, ``elsewhere``, ``sample`` (shown, not copied to run),
    or the runner: ``ini``, ``tests``, ``script``, ``shell``. Anything else is an error naming
    what to do."""
    if _key(block, NOT_HERE):
        return "listed"
    if _key(block, ELSEWHERE) or ((block.page, block.lang) in ELSEWHERE_PAGES and (block.lang != "console" or block.text.startswith("$ pytest-sglang"))):
        return "elsewhere"
    if block.lang in SAMPLES:
        assert not block.text.startswith("$ "), f"{block.id}: a block of commands needs a tag (```console), so it is run"
        return "sample"
    if block.lang == "ini" or (block.lang == "toml" and "[tool.pytest.ini_options]" in block.text):
        return "ini"
    if block.lang == "python":
        return "tests" if re.search(r"^def test_", block.text, re.M) else "script"
    if block.lang in SHELL:
        words = [command[0] for command, _ in commands(block)]
        assert words, f"{block.id}: a shell block without a command: give it one, or list it in NOT_HERE"
        unknown = [w for w in words if w not in ("pytest", "pytest-sglang", "python")]
        assert not unknown, f"{block.id}: runs {unknown}, which cannot run here: list the block in NOT_HERE with the reason"
        return "shell"
    raise AssertionError(f"{block.id}: a ```{block.lang} block is neither run nor listed: run it here, or list it in NOT_HERE with the reason")


def commands(block: Block) -> list[tuple[list[str], list[str]]]:
    """Each command of a shell block as words, with the lines the page shows it printing: in a
    ``console`` block the lines up to the next ``$``, in a script a ``# N passed`` comment."""
    lines = block.text.splitlines()
    found: list[tuple[list[str], list[str]]] = []
    console = block.lang == "console"
    i = 0
    while i < len(lines):
        line = lines[i]
        if console and not line.startswith("$ "):
            if found:
                found[-1][1].append(line)
            i += 1
            continue
        text = line[2:] if console else line
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i].strip()
        i += 1
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        comment = re.search(r"\s#\s+(\d+ (?:passed|failed).*)$", text)
        found.append((shlex.split(text, comments=True), [f"...{comment.group(1)}..."] if comment else []))
    return found


def _kind_or_none(block: Block) -> str | None:
    try:
        return kind(block)
    except AssertionError:  # said by the test below, not at collection
        return None


def _ids(kinds: set[str]) -> list[Block]:
    return [b for b in blocks() if _kind_or_none(b) in kinds]


def _slow(block: Block) -> bool:
    """A block that starts a simulated server (a second or more each, a benchmark 25 s) or reads
    a gate run's reports runs in the slow tier; the rest, about 10 s in all, in the fast one."""
    prelude = PRELUDE.get(_key(block, PRELUDE) or ("", ""), "")
    return kind(block) in ("ini", "tests") or bool(_key(block, NEEDS_GATE_REPORT)) or any(s in block.text + prelude for s in ("sim://", *HOSTS))


def _params(kinds: set[str]) -> list:
    return [pytest.param(b, id=b.id, marks=[pytest.mark.slow] if _slow(b) else []) for b in _ids(kinds)]


def test_every_block_is_run_here_or_elsewhere_or_listed_with_its_reason() -> None:
    counts: dict[str, int] = {}
    for block in blocks():
        counts[kind(block)] = counts.get(kind(block), 0) + 1
    assert counts.get("ini") and counts.get("tests") and counts.get("script") and counts.get("shell"), counts


@pytest.mark.parametrize("table", [NOT_HERE, ELSEWHERE, PRELUDE, TEST_RUNS, BESIDE, BEFORE, EXIT, SHOWN_APART, dict.fromkeys(NEEDS_GATE_REPORT)], ids=["NOT_HERE", "ELSEWHERE", "PRELUDE", "TEST_RUNS", "BESIDE", "BEFORE", "EXIT", "SHOWN_APART", "NEEDS_GATE_REPORT"])
def test_every_listed_block_is_still_on_its_page(table: dict) -> None:
    gone = [key for key in table if len(find(*key)) != 1]
    assert gone == [], f"these entries match no block (or several): update the table: {gone}"


def test_the_tests_that_run_blocks_elsewhere_read_those_pages() -> None:
    for (page, _), runner in [*ELSEWHERE.items(), *ELSEWHERE_PAGES.items()]:
        text = (REPO / runner).read_text(encoding="utf-8")
        assert Path(page).name in text or Path(page).stem.upper() in text, f"{runner} does not read {page}"


def test_every_sample_input_is_shipped_and_its_page_points_to_it() -> None:
    shipped = sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("*") if p.is_file() and p.name != "README.md")
    index = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    manual = "".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md"))
    for name in shipped:
        assert f"`{name}`" in index, f"docs/examples/README.md does not say what {name} is"
        assert f"examples/{name}" in manual, f"no page points to docs/examples/{name}"
    script = find("docs/launch-commands.md", "#!/bin/bash\nMODEL=")[0].text
    assert (EXAMPLES / "launch.sh").read_text(encoding="utf-8") == script, "docs/examples/launch.sh is not the page's script"


def test_the_kubernetes_manifest_reads_as_the_page_says() -> None:
    from pytest_sglang.parse.launch import parse_launch_command

    launch = parse_launch_command(find("docs/launch-commands.md", "image: lmsysorg/sglang:latest")[0].text)
    assert launch.requested == {"model_path": "Qwen/Qwen3-8B", "tp_size": 4}
    assert launch.env["HF_TOKEN"] == "<redacted>"


# ---- running them ------------------------------------------------------------------------------


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SGLANG_")) and k != "CI"}
    env["PYTHONPATH"] = str(REPO)
    return env


def _workspace(tmp_path: Path, block: Block) -> Path:
    """A copy of docs/examples/ (and of the example suite when the block names it)."""
    work = tmp_path / "work"
    shutil.copytree(EXAMPLES, work)
    if "example_suite" in block.text:
        shutil.copytree(REPO / "example_suite", work / "example_suite", ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return work


def _named_hosts_simulated(text: str) -> str:
    for name, simulated in HOSTS.items():
        text = text.replace(name, simulated)
    return text


def _run(words: list[str], work: Path) -> subprocess.CompletedProcess[str]:
    program = {"pytest-sglang": ["-m", "pytest_sglang.cli.main"], "pytest": ["-m", "pytest", "-p", "no:cacheprovider"], "python": []}[words[0]]
    return subprocess.run([sys.executable, *program, *words[1:]], cwd=work, env=_environment(), capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def gate_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reports docs/reports.md's sample command writes, also as sglang-report.json."""
    from test_report_docs import run_documented_command

    work = tmp_path_factory.mktemp("gate")
    done = run_documented_command(work)
    assert (work / "report.json").is_file(), done.stdout[-2000:] + done.stderr[-2000:]
    shutil.copy(work / "report.json", work / "sglang-report.json")
    return work


def _prepare(block: Block, request: pytest.FixtureRequest, work: Path) -> None:
    """What the block reads that the page makes before it: a gate run's reports, a block's commands."""
    before = _key(block, BEFORE)
    for words, _ in commands(find(block.page, BEFORE[before])[0]) if before else []:
        done = _run(words, work)
        assert done.returncode == 0, f"{block.id}: {shlex.join(words)} exited {done.returncode}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    if _key(block, NEEDS_GATE_REPORT):
        source = request.getfixturevalue("gate_report")
        for name in ("report.json", "sglang-report.json"):
            shutil.copy(source / name, work / name)


@pytest.mark.parametrize("block", _params({"ini"}))
def test_an_ini_block_is_a_configuration_pytest_runs_with(block: Block, pytester: pytest.Pytester) -> None:
    _ini_runs(block.text, pytester)


def _ini_runs(text: str, pytester: pytest.Pytester) -> None:
    text = _named_hosts_simulated(text)
    (pytester.path / "pytest.ini").write_text(text if text.lstrip().startswith("[pytest]") else "[pytest]\n" + text)
    pytester.makepyfile(test_reads="def test_reads(server_args):\n    assert server_args.tp_size\n")
    hosts = [] if "sglang_hosts" in text else ["--sglang-host", BASELINE]
    result = pytester.runpytest(*hosts, "-rA", "-p", "no:cacheprovider")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret in (0, 1) and "ERROR: " not in out and "Traceback" not in out, out[-3000:]
    result.stdout.fnmatch_lines(["PASSED test_reads.py::test_reads*"])


def test_an_ini_value_pytest_refuses_fails_here(pytester: pytest.Pytester) -> None:
    """The check above can fail: an inline comment on an ini value is part of the value."""
    with pytest.raises(AssertionError):
        _ini_runs("[pytest]\nsglang_explain = true          # or --sglang-explain\n", pytester)


def test_the_baseline_policy_error_the_page_quotes_is_the_one_pytest_prints(pytester: pytest.Pytester) -> None:
    quoted = re.search(r"`(ini sglang_baseline_policy entry [^`]+)`", (DOCS / "baselines.md").read_text(encoding="utf-8"))
    assert quoted, "docs/baselines.md no longer quotes a bad policy entry's error"
    entry = re.search(r"entry '([^']+)'", quoted.group(1)).group(1)  # type: ignore[union-attr]
    (pytester.path / "pytest.ini").write_text(f"[pytest]\nsglang_baseline = baselines\nsglang_baseline_policy =\n    {entry}\n")
    result = pytester.runpytest("--sglang-host", BASELINE, "-p", "no:cacheprovider")
    assert f"ERROR: {quoted.group(1)}" in result.stderr.lines, result.stderr.str()


@pytest.mark.parametrize("block", _params({"tests"}))
def test_a_block_of_tests_runs_against_a_simulated_server(block: Block, pytester: pytest.Pytester) -> None:
    """Pasted into a test file, the tests run: each passes or fails on its own assertion, never
    on a name, a fixture or a file the page does not ship."""
    shutil.copytree(EXAMPLES, pytester.path, dirs_exist_ok=True)
    pytester.makepyfile(test_from_the_page=block.text)
    key = _key(block, TEST_RUNS)
    host, *options = TEST_RUNS[key] if key else [BASELINE]
    result = pytester.runpytest_subprocess(f"--sglang-host={host}", *options, "-rA", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    defined = len(re.findall(r"^def test_", block.text, re.M))
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == defined, result.stdout.str()[-3000:]
    raised = [line for line in result.stdout.lines if re.match(r"E +\w+(Error|Exception)\b", line) and not re.match(r"E +AssertionError\b", line)]
    assert raised == [], raised


def _checked(source: str) -> str:
    """The script with each ``expression  # value`` statement turned into a check that the
    expression gives that value (where the comment is a Python literal with nothing left out)."""
    lines = source.splitlines()
    for node in reversed(ast.parse(source).body):
        if not isinstance(node, ast.Expr) or node.end_lineno is None:
            continue
        comment = re.search(r"\s#\s*(.+)$", lines[node.end_lineno - 1])
        if not comment or "..." in comment.group(1) or "…" in comment.group(1):
            continue
        try:
            shown = ast.literal_eval(comment.group(1).strip())
        except (ValueError, SyntaxError):
            continue
        expression = ast.get_source_segment(source, node)
        lines[node.lineno - 1 : node.end_lineno] = [f"assert ({expression}) == {shown!r}, ({expression!r}, {expression})"]
    return "\n".join(lines) + "\n"


def test_a_shown_value_or_line_that_is_not_what_runs_fails() -> None:
    """The comparisons above can fail: a wrong ``# value``, a line missing or out of order."""
    with pytest.raises(AssertionError):
        exec(_checked("x = 2\nx + 1  # 4\n"), {})
    exec(_checked("x = 2\nx + 1  # 3\nx  # anything else\n"), {})
    assert _shows(["b", "a"], ["a", "b"]) == ["a"]
    assert _shows(["1 failed, ... in 4.41s", "..."], ["= 1 failed, 2 passed in 9.30s ="]) == []


@pytest.mark.parametrize("block", _params({"script"}))
def test_a_script_runs_as_written(block: Block, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    work = _workspace(tmp_path, block)
    _prepare(block, request, work)
    key = _key(block, PRELUDE)
    script = (PRELUDE[key] if key else "") + _checked(_named_hosts_simulated(block.text))
    done = subprocess.run([sys.executable, "-c", script], cwd=work, env=_environment(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{block.id}:\n{script}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"


def _normal(line: str) -> str:
    """A printed line without what changes from run to run (durations, measured figures) and
    pytest's ``=`` rules around its summary."""
    line = re.sub(r"\s+\[\s*\d+%\]$", "", line.strip())
    return re.sub(r"\d+\.\d+", "#", line.strip("=").strip())


def _shows(shown: list[str], printed: list[str]) -> list[str]:
    """The shown lines not printed in that order (``...`` leaves lines or words out)."""
    rest = iter([_normal(line) for line in printed])
    missing = []
    for line in (s for s in shown if s.strip() not in ("...", "…", "")):
        pattern = re.compile(".*".join(re.escape(part) for part in _normal(line).split("...")))
        if not any(pattern.fullmatch(out) for out in rest):
            missing.append(line)
    return missing


@pytest.mark.parametrize("block", _params({"shell"}))
def test_every_command_of_a_shell_block_runs_and_prints_what_the_page_shows(block: Block, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    work = _workspace(tmp_path, block)
    _prepare(block, request, work)
    beside = _key(block, BESIDE)
    for name, text in BESIDE[beside] if beside else []:
        (work / name).write_text(find(block.page, text)[0].text)
    apart, failing = _key(block, SHOWN_APART), _key(block, EXIT)
    for words, shown in commands(block):
        done = _run(words, work)
        out = done.stdout + done.stderr
        assert done.returncode in ((EXIT[failing],) if failing else (0, 1)) and "Traceback" not in out, f"{block.id}: {shlex.join(words)} exited {done.returncode}\n{out[-3000:]}"
        if apart:
            shown = find(block.page, SHOWN_APART[apart])[0].text.splitlines()
        missing = _shows(shown, out.splitlines())
        assert missing == [], f"{block.id}: {shlex.join(words)} no longer prints, in this order: {missing}\n{out[-4000:]}"
