"""Explaining from a start-up line (no launch command) and the cause of a failing value.

A start-up line holds SGLang's values after start-up: each value that differs from the
release's default is explained by the rule that sets it there, or listed as probably
requested. A failing test's "SGLang values read by this test" section names the rule that set
the value it failed on."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version
from support import artefact, corpus_files, corpus_text

from pytest_sglang import connect
from pytest_sglang.base.errors import ParseError, SpecError
from pytest_sglang.judge.explain import StartupExplanation, explain, explain_startup_line
from pytest_sglang.judge.explain.startup import release_defaults
from pytest_sglang.model.config import Effective, ServerArgs
from pytest_sglang.parse.launch import flag_table, table_versions
from pytest_sglang.parse.logs import SGLangLogs
from pytest_sglang.render.explain import text
from pytest_sglang.render.values import values_read
from pytest_sglang.simulator.host import simulated_host
from pytest_sglang.simulator.profile import load_profile

DATA = Path(__file__).parent / "data"
CANDIDATE_PROFILE = "qwen35-122b-a10b-4xrtx6000-candidate"
BASELINE_PROFILE = "qwen35-122b-a10b-4xrtx6000-baseline"
QWEN35 = "Qwen3_5MoeForConditionalGeneration"
SEED_FACTS = {"gpu": "RTX PRO 6000", "gpus": 4, "model": QWEN35}


def startup_log(profile: str) -> str:
    """The start-up log the simulated deployment writes (no server started)."""
    return "\n".join(simulated_host(load_profile(profile)).log_lines) + "\n"


def fields(result: StartupExplanation, which: str) -> dict[str, list[str]]:
    return {v.field: v.rules for v in getattr(result, which)}


@pytest.fixture(scope="module")
def candidate() -> StartupExplanation:
    return explain_startup_line(startup_log(CANDIDATE_PROFILE), sglang_version="0.5.12", **SEED_FACTS)


# ---- the release's defaults --------------------------------------------------------------------


def test_the_packaged_defaults_are_what_each_release_s_argparse_says():
    stored = json.loads((DATA / "sglang-argparse-releases.json").read_text())["releases"]
    for version, entry in stored.items():
        chosen, defaults = release_defaults(version)
        assert chosen == version
        expected = {k: v for k, v in entry["defaults"].items() if k != "model_path"}
        assert {k: defaults[k] for k in expected} == expected, version


def test_a_release_without_its_own_defaults_uses_the_nearest_older_one():
    chosen, _ = release_defaults("0.5.12.post3")
    assert chosen == "0.5.12.post1"  # the newest known release at or before it
    newest, _ = release_defaults("9.9.9")
    assert newest == max((v for v in json.loads((DATA / "sglang-argparse-releases.json").read_text())["releases"]), key=Version)


def startup_fields(path: Path) -> dict:
    line = SGLangLogs(source=path.name, lines=corpus_text(path).splitlines()).startup_line
    assert line is not None, path.name
    return dict(line.fields)


def test_the_release_is_read_from_the_fields_a_corpus_line_has():
    checked = 0
    for path in corpus_files("server_args"):
        stated = path.read_text().splitlines()[1].removeprefix("# sglang-version:").split()[0]
        if not re.fullmatch(r"0\.5\.\d+", stated) or stated not in table_versions():
            continue  # unknown, a post release (their lines often carry a later main's fields), or no flag table
        result = explain_startup_line(corpus_text(path), source=path.name)
        keys = set(startup_fields(path))
        closest = min(len(keys ^ set(flag_table(v).fields)) for v in table_versions())
        tied = [v for v in table_versions() if len(keys ^ set(flag_table(v).fields)) == closest]
        assert stated in tied and result.sglang_version in tied, (path.name, tied)
        checked += 1
    assert checked >= 3


# ---- the seed candidate's start-up line ------------------------------------------------------------


def test_the_candidate_line_explains_its_piecewise_graph_and_its_speculative_settings(candidate):
    explained = fields(candidate, "explained")
    assert explained["disable_piecewise_cuda_graph"] == ["pcg.multimodal"]
    assert explained["speculative_num_draft_tokens"] == ["capacity.spec-draft-tokens"]
    assert explained["max_running_requests"] == ["capacity.speculative-48"]
    sentence = next(v for v in candidate.explained if v.field == "disable_piecewise_cuda_graph").sentence("0.5.12")
    assert sentence.startswith("disable_piecewise_cuda_graph = True: what SGLang 0.5.12 sets here")


def test_the_candidate_line_lists_what_no_rule_explains_as_probably_requested(candidate):
    requested = {v.field: v for v in candidate.probably_requested}
    assert requested["tp_size"].value == 4 and requested["tp_size"].default == 1
    for name in ("speculative_num_steps", "speculative_eagle_topk", "enable_flashinfer_allreduce_fusion", "mamba_scheduler_strategy"):
        assert name in requested
    assert not set(requested) & set(fields(candidate, "explained"))
    assert "model_path" not in requested  # always given: never judged


def test_the_candidate_line_keeps_the_findings_of_the_target(candidate):
    rules = {f.rule for f in candidate.findings}
    assert {"allreduce.fusion-noop-sm", "pcg.multimodal", "capacity.mamba-cap"} <= rules
    cap = candidate.by_rule("capacity.mamba-cap")[0]
    assert cap.status == "confirmed" and cap.effective == 26  # from the log's capacity line
    noop = candidate.by_rule("allreduce.fusion-noop-sm")[0]
    assert noop.requested is True and "probably requested" in (noop.requested_source or "")


def test_the_same_value_is_explained_or_requested_depending_on_the_facts():
    # 48 running requests: set by SGLang for speculative decoding (candidate), requested without it (baseline).
    baseline = explain_startup_line(startup_log(BASELINE_PROFILE), sglang_version="0.5.12", **SEED_FACTS)
    assert "max_running_requests" in fields(baseline, "probably_requested")
    assert "speculative_num_draft_tokens" not in fields(baseline, "explained") | fields(baseline, "probably_requested")
    # The baseline keeps its piecewise CUDA graph on by --enforce-piecewise-cuda-graph: the multimodal rule does not fire.
    assert baseline.by_rule("pcg.multimodal") == []


def test_a_value_a_rule_would_not_give_is_requested_even_where_the_rule_holds():
    line = startup_log(CANDIDATE_PROFILE).replace("max_running_requests=48", "max_running_requests=32")
    result = explain_startup_line(line, sglang_version="0.5.12", **SEED_FACTS)
    assert "max_running_requests" in fields(result, "probably_requested")
    assert "max_running_requests" not in fields(result, "explained")


def test_without_the_model_the_multimodal_rule_is_undecided_never_guessed():
    result = explain_startup_line(startup_log(CANDIDATE_PROFILE), sglang_version="0.5.12", gpu="RTX PRO 6000", gpus=4)
    assert "disable_piecewise_cuda_graph" not in fields(result, "explained")
    assert "disable_piecewise_cuda_graph" in fields(result, "probably_requested")
    assert any(f.status == "undecided" and "model.arch" in f.needs for f in result.findings)


def test_without_the_version_the_line_s_fields_name_the_release_and_a_note_says_so():
    result = explain_startup_line(startup_log(CANDIDATE_PROFILE), **SEED_FACTS)
    assert result.sglang_version == "0.5.12"
    assert any("--sglang-version" in note for note in result.notes)
    given = explain_startup_line(startup_log(CANDIDATE_PROFILE), sglang_version="0.5.12", **SEED_FACTS)
    assert not any("--sglang-version" in note for note in given.notes)


def test_the_result_renders_and_serialises(candidate):
    shown = text(candidate)
    assert "set by SGLang" in shown and "[pcg.multimodal]" in shown
    assert "tp_size = 4 (default 1)" in shown
    data = json.loads(candidate.to_json())
    assert {"explained", "probably_requested", "findings", "defaults_release"} <= set(data)
    assert StartupExplanation.model_validate(data).explained == candidate.explained


def test_a_real_0_5_23_line_from_the_artefacts_is_explained():
    result = explain_startup_line(artefact("server.log"), source="server.log")
    assert result.sglang_version == "0.5.23"
    assert result.probably_requested or result.explained
    assert all(v.field != "model_path" for v in result.probably_requested)


def test_a_secret_on_the_line_never_reaches_the_result():
    secret = "sk-startup-line-secret-4711"
    line = startup_log(CANDIDATE_PROFILE).replace("api_key=None", f"api_key='{secret}'")
    assert secret in line
    result = explain_startup_line(line, sglang_version="0.5.12", **SEED_FACTS)
    assert secret not in result.to_json() and secret not in text(result)
    assert "api_key" in fields(result, "probably_requested")


@pytest.mark.parametrize(
    "given, error",
    [
        ("no start-up line here\njust text\n", ParseError),
        ("", ParseError),
    ],
)
def test_text_without_a_start_up_line_is_a_one_line_error(given, error):
    with pytest.raises(error, match="no SGLang start-up line"):
        explain_startup_line(given)


def test_a_version_that_is_not_one_is_refused():
    with pytest.raises(SpecError, match="not a version"):
        explain_startup_line(startup_log(CANDIDATE_PROFILE), sglang_version="latest")


# ---- a target without a launch command ----------------------------------------------------------


def _no_launch_profile(tmp_path: Path) -> str:
    data = json.loads(Path(load_profile.__code__.co_filename).with_name("profiles").joinpath(f"{CANDIDATE_PROFILE}.json").read_text())
    data.pop("launch_command")
    data["name"] = "candidate-without-launch-command"
    path = tmp_path / "no-launch.json"
    path.write_text(json.dumps(data))
    return f"sim://{path}"


def test_a_target_without_a_launch_command_is_explained_from_the_values_it_reports(tmp_path):
    with connect(_no_launch_profile(tmp_path)) as target:
        assert target.snapshot.requested is None
        result = explain(target)
    assert isinstance(result, StartupExplanation)
    explained = fields(result, "explained")
    assert explained["disable_piecewise_cuda_graph"] == ["pcg.multimodal"]
    assert explained["speculative_num_draft_tokens"] == ["capacity.spec-draft-tokens"]
    assert "tp_size" in fields(result, "probably_requested")


def test_a_target_with_a_launch_command_is_explained_as_before():
    with connect(f"sim://{CANDIDATE_PROFILE}") as target:
        result = explain(target)
    assert not isinstance(result, StartupExplanation)


# ---- the cause in the failure section -----------------------------------------------------------


def test_the_cause_of_the_seed_s_failing_value_names_the_mamba_cap():
    from pytest_sglang.judge.explain.cause import causes

    with connect(f"sim://{CANDIDATE_PROFILE}") as target:
        running = causes(target, "effective", "max_running_requests", 26)
        graph = causes(target, "effective", "prefill_cuda_graph", False)
        tp = causes(target, "server_args", "tp_size", 4)
        model = causes(target, "model_info", "architectures", [QWEN35])
    assert running == ["capped by the mamba state cache (max_mamba_cache_size 132 // 5) [capacity.mamba-cap]"]
    assert graph == ["Piecewise CUDA graph is disabled because the model is multimodal (disable_piecewise_cuda_graph = True) [pcg.multimodal]"]
    assert tp == [] and model == []


def test_a_value_of_the_baseline_that_no_rule_set_has_no_cause():
    from pytest_sglang.judge.explain.cause import causes

    with connect(f"sim://{BASELINE_PROFILE}") as target:
        assert causes(target, "effective", "max_running_requests", 48) == []


def _read(obj, name):
    return {(id(obj), name): (obj, name, getattr(obj, name))}


def test_values_read_adds_the_cause_and_never_breaks_on_one():
    effective = Effective(max_running_requests=26).bind("effective", "test", "host-a")
    args = ServerArgs.from_mapping({"tp_size": 4}).bind("server_args", "/server_info", "host-a")
    reads = _read(effective, "max_running_requests") | _read(args, "tp_size")
    shown = values_read(reads, lambda obj, name, value: [f"cause of {name}={value}"])
    assert "      cause of max_running_requests=26" in shown and "      cause of tp_size=4" in shown

    def broken(obj, name, value):
        raise RuntimeError("explaining failed")

    plain = values_read(reads)
    assert values_read(reads, broken) == plain
    assert "effective.max_running_requests = 26" in plain


EXAMPLE_SUITE = Path(__file__).parent.parent / "example_suite" / "test_qwen35_deployment.py"


def test_the_seed_s_failing_assertion_reads_as_the_answer(pytester):
    pytester.makepyfile(test_seed=EXAMPLE_SUITE.read_text())
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host=sim://{CANDIDATE_PROFILE}", "-k", "running_requests_meet or prefill_cuda_graph")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    section = out[out.index("effective.max_running_requests = 26") :]
    assert "capped by the mamba state cache (max_mamba_cache_size 132 // 5) [capacity.mamba-cap]" in section.split("\n_")[0]
    assert "disabled because the model is multimodal (disable_piecewise_cuda_graph = True) [pcg.multimodal]" in out


def test_a_passing_suite_explains_nothing(pytester):
    pytester.makepyfile(test_seed=EXAMPLE_SUITE.read_text())
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host=sim://{BASELINE_PROFILE}", "-k", "running_requests_meet")
    result.assert_outcomes(passed=1)
    assert "[capacity." not in result.stdout.str()


def test_the_cause_section_survives_a_broken_knowledge_base(pytester, monkeypatch):
    import pytest_sglang.judge.explain.cause as cause

    def broken(*args, **kwargs):
        raise RuntimeError("the knowledge base is broken")

    monkeypatch.setattr(cause, "causes", broken)
    pytester.makepyfile(test_seed=EXAMPLE_SUITE.read_text())
    result = pytester.runpytest_inprocess("-p", "no:benchmark", f"--sglang-host=sim://{CANDIDATE_PROFILE}", "-k", "running_requests_meet")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "effective.max_running_requests = 26" in out and "[capacity.mamba-cap]" not in out
    assert "knowledge base is broken" not in out


def test_a_target_without_a_launch_command_shows_the_values_sglang_set_in_the_explain_section(pytester, tmp_path):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={_no_launch_profile(tmp_path)}", "--sglang-explain")
    out = result.stdout.str()
    assert "set by SGLang" in out and "disable_piecewise_cuda_graph = True: what SGLang 0.5.12 sets here" in out


# ---- the command line ---------------------------------------------------------------------------


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", "explain", *args], capture_output=True, text=True, input=stdin, timeout=120)


def test_cli_explains_a_start_up_log(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(startup_log(CANDIDATE_PROFILE))
    done = cli("--startup-line", str(log), "--gpu", "RTX PRO 6000", "--gpus", "4", "--model", QWEN35)
    assert done.returncode == 0, done.stderr
    assert "disable_piecewise_cuda_graph = True: what SGLang 0.5.12 sets here" in done.stdout
    assert "speculative_num_draft_tokens = 4: what SGLang 0.5.12 sets here" in done.stdout
    assert "tp_size = 4 (default 1)" in done.stdout


def test_cli_reads_a_corpus_line_and_stdin_as_json():
    path = corpus_files("server_args")[3]
    done = cli("--startup-line", "-", "--json", stdin=corpus_text(path))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["sglang_version"] and isinstance(data["probably_requested"], list)
    assert data["facts"]["startup_line"]["source"] == "start-up line (standard input)"


def test_cli_takes_the_line_itself():
    line = startup_log(CANDIDATE_PROFILE).splitlines()[0]
    done = cli("--startup-line", line, "--sglang-version", "0.5.12", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["defaults_release"] == "0.5.12"


@pytest.mark.parametrize(
    "args, message",
    [
        (("--startup-line", "/no/such/server.log"), "cannot be read"),
        (("--startup-line", "README"), "no SGLang start-up line"),
        (("--startup-line", ""), "is empty"),
        (("sim://x", "--startup-line", "README"), "exactly one"),
        (("--startup-line", "README", "--sglang-version", "newest"), "not a version"),
    ],
)
def test_cli_bad_start_up_line_input_is_one_line_and_exit_2(args, message, tmp_path):
    readme = tmp_path / "README"
    readme.write_text("INFO: a log without the server_args line\n")
    args = tuple(str(readme) if a == "README" else a for a in args)
    done = cli(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_lint_on_a_target_without_a_launch_command_fails_only_on_what_is_certain(pytester, tmp_path):
    # The candidate's no-op fusion flag fails the lint when the launch command shows it was
    # requested (tests/test_explain.py); inferred from the reported values (SGLang's start-up
    # may set that field itself), it is reported but does not fail the lint.
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={_no_launch_profile(tmp_path)}", "--sglang-lint", "--sglang-explain")
    result.assert_outcomes(passed=2)
    assert "[allreduce.fusion-noop-sm]" in result.stdout.str()


# ---- the docs show what the package prints ------------------------------------------------------

EXPLAIN_DOCS = Path(__file__).parent.parent / "docs" / "explain.md"


def _text_block_after(heading: str) -> list[str]:
    page = EXPLAIN_DOCS.read_text()
    block = page[page.index(heading) :].split("```text\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and line.strip() != "..."]


def test_the_docs_failure_section_is_what_a_failing_test_prints(pytester):
    pytester.makepyfile(test_seed=EXAMPLE_SUITE.read_text())
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host=sim://{CANDIDATE_PROFILE}", "-k", "running_requests_meet")
    printed = result.stdout.str().splitlines()
    for line in _text_block_after("### The cause in a failing test"):
        assert line in printed, line


def test_the_docs_start_up_line_excerpt_is_what_the_command_prints(tmp_path):
    (tmp_path / "server.log").write_text(startup_log(CANDIDATE_PROFILE))
    done = subprocess.run(
        [sys.executable, "-m", "pytest_sglang.cli.main", "explain", "--startup-line", "server.log", "--gpu", "RTX PRO 6000", "--gpus", "4", "--model", QWEN35],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    printed = done.stdout.splitlines()
    for line in _text_block_after("## From a start-up line"):
        assert line in printed, line
