"""Explain as users meet it: the seed case end to end on the bundled deployments, the pytest
fixture and options, the command line, honest gaps, and no false findings on real servers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import artefact, corpus_files, corpus_text

from pytest_sglang import connect
from pytest_sglang.base.errors import SpecError
from pytest_sglang.judge.explain import Explanation, explain, explain_launch
from pytest_sglang.simulator.profile import load_profile

CANDIDATE = "sim://qwen35-122b-a10b-4xrtx6000-candidate"
BASELINE = "sim://qwen35-122b-a10b-4xrtx6000-baseline"
QWEN35 = "Qwen3_5MoeForConditionalGeneration"
SEED_RULES = {"allreduce.fusion-noop-sm", "pcg.multimodal", "capacity.mamba-cap"}


def candidate_launch() -> str:
    return load_profile("qwen35-122b-a10b-4xrtx6000-candidate").launch_command


@pytest.fixture(scope="module")
def candidate() -> Explanation:
    with connect(CANDIDATE) as target:
        return explain(target)


@pytest.fixture(scope="module")
def baseline() -> Explanation:
    with connect(BASELINE) as target:
        return explain(target)


def one(explanation: Explanation, rule: str):
    found = explanation.by_rule(rule)
    assert len(found) == 1, [f.id for f in explanation.findings]
    return found[0]


# ---- the seed case -----------------------------------------------------------------------------


def test_candidate_allreduce_fusion_is_requested_but_not_in_effect_on_sm120_and_unrelated(candidate):
    finding = one(candidate, "allreduce.fusion-noop-sm")
    assert finding.severity == "warning" and finding.lint
    assert finding.requested is True and "--enable-flashinfer-allreduce-fusion" in finding.requested_source
    assert set(finding.not_cause_of) == {"disable_piecewise_cuda_graph", "max_running_requests"}
    assert "SM90" in finding.cause and "SM120" in finding.cause


def test_candidate_piecewise_graph_is_disabled_by_the_multimodal_rule_and_the_scheduler_line_is_called_misleading(candidate):
    finding = one(candidate, "pcg.multimodal")
    assert finding.status == "confirmed" and finding.effective is True
    assert finding.requested is None  # the flag was never given
    assert "Disable piecewise CUDA graph because --disable-piecewise-cuda-graph is set" in finding.log_line
    assert finding.log_note and "not given" in finding.log_note
    assert "0.5.10-0.5.13" in finding.versions or "0.5.1" in finding.versions


def test_candidate_running_requests_are_capped_by_the_mamba_cache_below_the_48_requested(candidate):
    finding = one(candidate, "capacity.mamba-cap")
    assert finding.status == "confirmed"
    assert (finding.requested, finding.effective, finding.predicted) == (48, 26, 26)
    assert finding.severity == "warning" and finding.lint
    assert any("--max-mamba-cache-size" in knob for knob in finding.knobs)
    assert any("--mem-fraction-static" in knob for knob in finding.knobs)
    assert "Mamba Cache is allocated. max_mamba_cache_size: 132" in finding.log_line


def test_candidate_has_no_error(candidate):
    assert candidate.errors == []


def test_baseline_keeps_its_piecewise_graph_as_0_5_12_does_and_nothing_is_alarming(baseline):
    # --enforce-piecewise-cuda-graph: the multimodal rule does not fire, and nothing contradicts the release.
    assert baseline.by_rule("pcg.multimodal") == []
    assert [f.id for f in baseline.findings if f.status == "contradicted"] == []
    assert [f.id for f in baseline.findings if f.severity != "info"] == []


def test_the_launch_command_alone_predicts_the_same_three_findings_without_a_server():
    explanation = explain_launch(candidate_launch(), gpu="RTX PRO 6000", gpus=4, gpu_memory="97887MiB", sglang_version="0.5.12", model=QWEN35)
    assert SEED_RULES <= {f.rule for f in explanation.findings}
    assert one(explanation, "pcg.multimodal").predicted is True
    cap = one(explanation, "capacity.mamba-cap")
    # The model path names a known checkpoint: its config sizes the pools, and the cap's range is
    # below the 48 asked for, so it is a warning before anything runs.
    assert cap.status == "predicted" and "max_mamba_cache_size //" in cap.summary and "pool estimate" in cap.summary
    assert cap.severity == "warning" and cap.predicted_range is not None and cap.predicted_range[1] < 48
    assert explanation.mode == "launch" and explanation.errors == []


# ---- honest gaps -------------------------------------------------------------------------------


def test_a_missing_fact_is_named_with_how_to_give_it_never_guessed():
    explanation = explain_launch("python -m sglang.launch_server --model-path m --tp 4 --enable-flashinfer-allreduce-fusion", sglang_version="0.5.12", model=QWEN35)
    assert not explanation.by_rule("allreduce.fusion-noop-sm")
    gap = one(explanation, "gap.gpu.sm")
    assert gap.status == "undecided" and "allreduce.fusion-noop-sm" in gap.related
    assert any("--sm 120" in how for how in gap.how_to_provide)


def test_a_rule_outside_its_version_range_is_silent():
    explanation = explain_launch(candidate_launch(), gpu="RTX PRO 6000", sglang_version="0.5.23", model=QWEN35)
    assert not explanation.by_rule("pcg.multimodal")


def test_a_newer_sglang_uses_the_newest_rules_and_says_so():
    explanation = explain_launch(candidate_launch(), gpu="RTX PRO 6000", sglang_version="0.6.40", model=QWEN35)
    assert explanation.rules_version == "0.5.23"
    assert any("newer than the knowledge base" in note for note in explanation.notes)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"sglang_version": "latest"}, "not a version"),
        ({"platform": "tpu"}, "write one of cuda, hip"),
        ({"gpu_memory": "lots"}, "96GiB"),
        ({"gpus": "four"}, "whole number"),
        ({"model": "no/such/config.json"}, "cannot be read"),
        ({"model": "not an arch!"}, "architecture name"),
    ],
)
def test_odd_facts_are_one_line_errors_that_name_the_fix(kwargs, message):
    with pytest.raises(SpecError) as info:
        explain_launch("python -m sglang.launch_server --model-path m", **kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_model_config_json_gives_the_architecture_and_families(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"architectures": ["SomeNewVLForConditionalGeneration"], "vision_config": {}, "text_config": {"num_experts": 8}}))
    explanation = explain_launch("python -m sglang.launch_server --model-path m --tp 4", sglang_version="0.5.12", sm=120, model=str(config))
    assert explanation.facts["model.multimodal"]["value"] is True
    assert explanation.facts["model.moe"]["value"] is True
    assert one(explanation, "pcg.multimodal").predicted is True


@pytest.mark.parametrize(
    "command",
    [
        "[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=0,1,2,3\nExecStart=/opt/venv/bin/python -m sglang.launch_server --model-path m --tp 4 --enable-flashinfer-allreduce-fusion\n",
        "docker run --gpus all --shm-size 32g lmsysorg/sglang:v0.5.12 python3 -m sglang.launch_server --model-path m --tp 4 --enable-flashinfer-allreduce-fusion",
        "kubectl exec -n serving sglang-0 -- python3 -m sglang.launch_server --model-path m --tp 4 --enable-flashinfer-allreduce-fusion",
    ],
    ids=["systemd-unit", "docker", "kubectl"],
)
def test_launch_commands_in_the_forms_users_keep_them(command):
    explanation = explain_launch(command, sm=120, sglang_version="0.5.12", model=QWEN35)
    assert one(explanation, "allreduce.fusion-noop-sm").requested is True


# ---- real servers give no false findings --------------------------------------------------------


@pytest.mark.parametrize("server_info", ["server_info.json", "server_info_qwen3moe_tp4.json"])
def test_real_sglang_0_5_23_answers_explain_without_false_findings(canned, server_info):
    server = canned().serve_sglang(json.loads(artefact(server_info)), json.loads(artefact("model_info.json")))
    with connect(server.url) as target:
        explanation = explain(target)
    assert explanation.sglang_version == "0.5.23" and explanation.rules_version == "0.5.23"
    assert [f for f in explanation.findings if f.severity != "info" or f.status == "contradicted"] == []


# ---- JSON ------------------------------------------------------------------------------------


def test_findings_serialise_to_json_and_back(candidate):
    data = json.loads(candidate.to_json())
    assert {f["rule"] for f in data["findings"]} >= SEED_RULES
    assert Explanation.model_validate(data) == candidate


def test_a_secret_in_the_launch_command_never_reaches_the_findings():
    explanation = explain_launch("python -m sglang.launch_server --model-path m --api-key sk-explain-123 --tp 4", sm=120, sglang_version="0.5.12")
    assert "sk-explain-123" not in explanation.to_json()


# ---- pytest ------------------------------------------------------------------------------------


def test_the_fixture_gives_the_findings(pytester):
    pytester.makepyfile(
        """
        def test_seed(sglang_explain):
            assert {f.rule for f in sglang_explain.warnings} >= {"allreduce.fusion-noop-sm", "capacity.mamba-cap"}
            assert sglang_explain.about("max_running_requests")[0].effective == 26
        """
    )
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={CANDIDATE}")
    result.assert_outcomes(passed=1)


def test_sglang_explain_adds_a_section_per_host_with_what_matters_first(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={CANDIDATE}", f"--sglang-host={BASELINE}", "--sglang-explain")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert f"SGLang explain: {CANDIDATE}" in out and f"SGLang explain: {BASELINE}" in out
    section = out.split(f"SGLang explain: {CANDIDATE}")[1]
    assert section.index("WARNING") < section.index("INFO")
    assert "[capacity.mamba-cap]" in section and "misleading log" in section


def test_sglang_lint_fails_on_no_ops_and_caps_of_requested_flags(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={CANDIDATE}", "--sglang-lint")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "[allreduce.fusion-noop-sm]" in out and "[capacity.mamba-cap]" in out
    assert "sglang_lint_accept" in out and "Traceback" not in out


def test_sglang_lint_accepts_known_findings_by_id_from_the_ini_file(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    pytester.makeini("[pytest]\nsglang_lint_accept =\n    allreduce.fusion-noop-sm\n    capacity.mamba-cap\n")
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={CANDIDATE}", "--sglang-lint")
    result.assert_outcomes(passed=2)


def test_sglang_lint_passes_a_baseline_whose_only_warning_is_the_consistency_check(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={BASELINE}", "--sglang-lint")
    result.assert_outcomes(passed=2)


# ---- the command line --------------------------------------------------------------------------


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", *args], capture_output=True, text=True, input=stdin, timeout=120)


def test_cli_explains_a_launch_command_without_a_server():
    done = cli("explain", "--launch", candidate_launch(), "--gpu", "RTX PRO 6000", "--gpus", "4", "--gpu-memory", "96GiB", "--sglang-version", "0.5.12", "--model", QWEN35)
    assert done.returncode == 0, done.stderr
    for rule in SEED_RULES:
        assert f"[{rule}]" in done.stdout


def test_cli_json_and_fail_on(tmp_path):
    unit = tmp_path / "sglang.service"
    unit.write_text(f"[Service]\nExecStart={candidate_launch()}\n")
    done = cli("explain", "--launch-file", str(unit), "--sm", "120", "--sglang-version", "0.5.12", "--model", QWEN35, "--json", "--fail-on", "warning")
    assert done.returncode == 1
    assert {f["rule"] for f in json.loads(done.stdout)["findings"]} >= SEED_RULES


def test_cli_explains_a_target():
    done = cli("explain", CANDIDATE)
    assert done.returncode == 0, done.stderr
    assert "in effect 26" in done.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        ((), "either a TARGET or --launch"),
        (("--launch", "python -m sglang.launch_server --model-path m", "--gpu-memory", "a lot"), "96GiB"),
        (("--launch-file", "/no/such/file"), "cannot be read"),
        ((CANDIDATE, "--gpus", "4"), "is for --launch"),
        (("--bogus",), "unrecognized arguments"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(args, message):
    done = cli("explain", *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_cli_an_unreachable_target_is_exit_3(free_port):
    done = cli("explain", f"http://127.0.0.1:{free_port}", "--timeout", "2")
    assert done.returncode == 3 and "Traceback" not in done.stderr
    assert str(free_port) in done.stderr


def test_the_console_script_is_installed():
    script = Path(sys.executable).with_name("pytest-sglang")
    if not script.exists():
        pytest.fail(f"{script} is missing: reinstall the package (pip install -e .)")
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "explain" in done.stdout


@pytest.mark.slow
def test_lint_and_the_report_section_under_xdist_with_several_hosts(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("-p", "no:benchmark", "-p", "xdist", "-n", "2", f"--sglang-host={CANDIDATE}", f"--sglang-host={BASELINE}", "--sglang-lint", "--sglang-explain")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert out.count("SGLang explain: sim://") == 2
    assert f"FAILED ::sglang-lint[{CANDIDATE}]" in out


# Refusals a release makes of a corpus command written for another: the Qwen3.5 cookbook command
# (02.txt, for SGLang's main branch) names a public checkpoint, so its model is known, and it runs
# NEXTN with radix cache under the no_buffer strategy that auto becomes in 0.5.10-0.5.13, which
# those releases refuse (0.5.12 server_args.py:2568 raises ValueError).
REFUSED_BY = {("02.txt", "capacity.mamba-spec-radix-error"): {"0.5.10", "0.5.10.post1", "0.5.11", "0.5.12", "0.5.12.post1", "0.5.13", "0.5.13.post1"}}


@pytest.mark.parametrize("path", corpus_files("launch_commands"), ids=lambda p: p.name)
def test_every_corpus_launch_command_explains_under_every_release(path):
    from pytest_sglang.parse.launch import table_versions

    text = corpus_text(path)
    for version in table_versions():
        explanation = explain_launch(text, gpu="H200", gpus=8, gpu_memory="141GiB", sglang_version=version)
        assert explanation.rules_version == version
        # SGLang started these servers: only a flag, a choice or an architecture the release does
        # not have may be an error (another release could not have started it; a flag a release
        # split in two, as 0.5.20 split --cuda-graph-max-bs, is ambiguous there). A value of the
        # wrong type, a stray word or a missing value is what a misread command would give.
        refused = [
            f.id for f in explanation.errors
            if f.rule not in ("flags.unknown", "model.unsupported-architecture")
            and not (f.rule == "flags.refused" and (f.title.endswith(("not one of its choices", "has no sglang serve command")) or " is ambiguous in SGLang " in f.title))
            and version not in REFUSED_BY.get((path.name, f.rule), ())
        ]
        assert refused == [], version
        assert all(rule in {f.rule for f in explanation.errors} for (name, rule), releases in REFUSED_BY.items() if name == path.name and version in releases), version
