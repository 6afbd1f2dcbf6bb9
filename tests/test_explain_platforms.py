"""Platforms as users meet them: AMD Instinct GPUs by name (SGLang's ROCm build), Ascend NPUs,
Intel XPUs and the CPU, and GPU names the catalog does not hold; through ``explain_launch``, the
command line and the pytest plugin."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.version import Version

from pytest_sglang import connect
from pytest_sglang.judge.explain import explain, explain_launch, load
from pytest_sglang.model.gpu import AMD_GPUS, amd_gpu, memory_mib_from_name, platform_from_device, platform_from_name, sm_from_name

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "tests" / "data" / "model-configs"
LLAMA = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 8"
LLAMA_CONFIG = str(MODELS / "llama" / "config.json")
DEEPSEEK_CONFIG = str(MODELS / "deepseek-v3" / "config.json")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", *args], capture_output=True, text=True, timeout=120)


def rules(explanation) -> set[str]:
    return {f.rule for f in explanation.findings}


# ---- the catalog -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, gfx, memory",
    [
        ("MI300X", "gfx942", 196592),
        ("AMD Instinct MI300X", "gfx942", 196592),
        ("AMD Instinct MI300X VF", "gfx942", 196592),
        ("AMD Instinct MI250X/MI250", "gfx90a", 65520),
        ("mi250x", "gfx90a", 65520),
        ("MI210", "gfx90a", 65520),
        ("MI355X", "gfx950", None),
        ("AMD Instinct MI350X", "gfx950", None),
        ("MI325X", "gfx942", None),
        ("MI300A", "gfx942", None),
        ("MI308X", None, None),
    ],
)
def test_amd_instinct_names_give_the_rocm_platform_gfx_target_and_the_memory_rocminfo_reports(name, gfx, memory):
    entry = amd_gpu(name)
    assert entry is not None and entry.gfx == gfx and entry.memory_mib == memory
    assert platform_from_name(name) == "hip"
    assert sm_from_name(name) is None  # an AMD GPU has no NVIDIA compute capability
    assert memory_mib_from_name(name) == memory


def test_mi300a_is_not_read_as_mi300x_nor_an_ascend_atlas_a2_as_an_nvidia_a2():
    assert amd_gpu("MI300A").name == "AMD Instinct MI300A" and amd_gpu("MI300A").memory_mib is None
    assert platform_from_name("Atlas 800I A2") == "npu" and sm_from_name("Atlas 800I A2") is None
    assert sm_from_name("NVIDIA A2") == 86


@pytest.mark.parametrize(
    "name, platform",
    [("H100", "cuda"), ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "cuda"), ("Ascend 910B", "npu"), ("Ascend910B3", "npu"),
     ("Intel(R) Data Center GPU Max 1550", "xpu"), ("Foo 9000", None)],
)  # fmt: skip
def test_other_vendors_give_their_platform_and_an_unknown_name_none(name, platform):
    assert platform_from_name(name) == platform


@pytest.mark.parametrize("device, platform", [("npu", "npu"), ("npu:0", "npu"), ("xpu", "xpu"), ("cpu", "cpu"), ("cuda", None), (None, None)])
def test_device_names_a_platform_except_cuda_which_torch_uses_for_nvidia_and_rocm(device, platform):
    assert platform_from_device(device) == platform


def test_every_catalog_figure_cites_where_it_comes_from():
    text = (ROOT / "pytest_sglang" / "model" / "gpu.py").read_text()
    for _, entry in AMD_GPUS:
        short = entry.name.removeprefix("AMD Instinct ").split("/")[0]
        assert short in text.split("AMD_GPUS:")[0], f"{short}: no source comment above the table"
        if entry.memory_mib is not None:
            kib = entry.memory_mib * 1024
            assert str(kib) in text, f"{short}: the rocminfo KiB figure behind {entry.memory_mib} MiB is not cited"
    assert "https://rocm.docs.amd.com/en/latest/reference/gpu-specs.html" in text


def test_the_docs_list_every_gpu_of_the_catalog():
    page = (ROOT / "docs" / "explain.md").read_text()
    for _, entry in AMD_GPUS:
        row = next((line for line in page.splitlines() if line.startswith(f"| {entry.name} |")), None)
        assert row is not None, f"{entry.name} is not in the GPU table of docs/explain.md"
        assert (entry.gfx or "not published") in row
        assert (f"{entry.memory_mib:,}" if entry.memory_mib else "give it") in row


# ---- AMD: explain_launch and the command line --------------------------------------------------


def test_an_amd_gpu_name_is_judged_by_rocm_rules_and_never_by_cuda_ones():
    explanation = explain_launch(LLAMA, gpu="MI300X", sglang_version="0.5.12", model=LLAMA_CONFIG)
    assert explanation.facts["gpu.platform"]["value"] == "hip"
    assert explanation.facts["gpu.gfx"]["value"] == "gfx942"
    assert explanation.facts["gpu.memory_mib"]["value"] == 196592 and "rocminfo" in explanation.facts["gpu.memory_mib"]["source"]
    assert "gpu.sm" not in explanation.facts
    attention = explanation.by_rule("rocm.attention-default-mha.v2")
    assert [f.predicted for f in attention] == ["aiter"]
    assert not [f for f in explanation.findings if f.rule.startswith("attention.default-mha")]
    # 196592 MiB: reserve 10240 + ... -> round((196592 - 27136) / 196592, 3) = 0.862, times aiter's 0.85
    memory = explanation.by_rule("mem.fraction-default.v2")
    assert memory and memory[0].predicted == pytest.approx(0.862 * 0.85)
    assert [f.predicted for f in explanation.by_rule("rocm.triton-kv-splits")] == [16]
    assert not [f for f in explanation.findings if f.severity != "info"]


def test_the_same_command_on_an_h100_is_judged_by_cuda_rules_only():
    explanation = explain_launch(LLAMA, gpu="H100", sglang_version="0.5.12", model=LLAMA_CONFIG)
    assert [f.predicted for f in explanation.findings if f.rule.startswith("attention.default-mha")] == ["fa3"]
    assert not {r for r in rules(explanation) if r.startswith("rocm.")}


def test_a_requested_mem_fraction_is_derated_by_aiter_and_that_is_a_warning():
    explanation = explain_launch(LLAMA + " --mem-fraction-static 0.9", gpu="MI355X", gpu_memory="288GiB", sglang_version="0.5.23", model=LLAMA_CONFIG)
    (finding,) = explanation.by_rule("rocm.aiter-mem-derate.v2")
    assert finding.severity == "warning" and finding.requested == 0.9 and finding.predicted == pytest.approx(0.765)
    short = explain_launch(LLAMA + " --mem-fraction-static 0.9 --context-length 8192", gpu="MI355X", sglang_version="0.5.23", model=LLAMA_CONFIG)
    assert not short.by_rule("rocm.aiter-mem-derate.v2")


def test_rocm_refusals_are_errors_for_the_releases_that_refuse():
    quant = explain_launch(LLAMA + " --quantization modelopt_fp4", gpu="MI300X", sglang_version="0.5.12")
    assert [f.severity for f in quant.by_rule("rocm.unsupported-quantization.v2")] == ["error"]
    assert not explain_launch(LLAMA + " --quantization modelopt_fp4", gpu="B200", sglang_version="0.5.12").by_rule("rocm.unsupported-quantization.v2")
    trtllm = explain_launch(LLAMA + " --attention-backend trtllm_mla", gpu="MI355X", sglang_version="0.5.23")
    assert [f.severity for f in trtllm.by_rule("backends.trtllm-mla-sm.v2")] == ["error"]
    qwen_next = "python -m sglang.launch_server --model-path Qwen/Qwen3-Next-80B-A3B-Instruct --tp 4"
    assert explain_launch(qwen_next, gpu="MI300X", sglang_version="0.5.14", model="Qwen3NextForCausalLM").by_rule("rocm.mamba-extra-buffer")
    assert not explain_launch(qwen_next, gpu="MI300X", sglang_version="0.5.16", model="Qwen3NextForCausalLM").by_rule("rocm.mamba-extra-buffer")


def test_deepseek_mla_on_rocm_gets_aiter_only_with_16_or_128_kv_heads_per_gpu():
    command = "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp {}"
    for tp, backend in ((8, "aiter"), (4, "triton"), (1, "aiter")):
        explanation = explain_launch(command.format(tp), gpu="MI300X", sglang_version="0.5.23", model=DEEPSEEK_CONFIG)
        assert [f.predicted for f in explanation.by_rule("rocm.attention-default-mla.v2")] == [backend], tp


def test_the_cli_takes_an_amd_gpu_and_prints_what_rocm_does():
    done = cli("explain", "--launch", LLAMA, "--gpu", "MI300X", "--sglang-version", "0.5.12", "--model", LLAMA_CONFIG)
    assert done.returncode == 0, done.stderr
    assert "[rocm.attention-default-mha.v2]" in done.stdout and "SGLang makes it 'aiter'" in done.stdout
    assert "[attention.default-mha" not in done.stdout and "not in the catalog" not in done.stdout


def test_the_cli_platform_option_and_a_bad_one():
    done = cli("explain", "--launch", LLAMA, "--platform", "hip", "--gpu-memory", "192GiB", "--sglang-version", "0.5.23", "--model", LLAMA_CONFIG, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["facts"]["gpu.platform"] == {"value": "hip", "source": "given platform"}
    assert "rocm.attention-default-mha.v3" in {f["rule"] for f in data["findings"]}
    bad = cli("explain", "--launch", LLAMA, "--platform", "tpu")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "write one of cuda, hip" in bad.stderr and "Traceback" not in bad.stderr


# ---- an unknown GPU name -----------------------------------------------------------------------


def test_an_unknown_gpu_name_is_one_warning_and_explain_goes_on_with_the_other_rules():
    command = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --speculative-algorithm EAGLE --speculative-draft-model-path d"
    explanation = explain_launch(command, gpu="Foo 9000", sglang_version="0.5.12", model="LlamaForCausalLM")
    warnings = [n for n in explanation.notes if "Foo 9000" in n]
    assert warnings == ["warning: GPU 'Foo 9000' is not in the catalog: rules that depend on the GPU are undecided; give --sm N or --gpu-memory"]
    assert explanation.by_rule("spec.eagle-auto-steps.v2")  # decided without the GPU
    assert any(f.id == "gap.gpu.platform" for f in explanation.findings)  # the GPU's rules: undecided, never guessed
    assert not [f for f in explanation.findings if f.rule.startswith(("attention.default", "rocm."))]


def test_an_unknown_gpu_name_with_its_compute_capability_and_memory_needs_no_warning():
    explanation = explain_launch(LLAMA, gpu="Foo 9000", sm=90, gpu_memory="80GiB", sglang_version="0.5.12", model="LlamaForCausalLM")
    assert not [n for n in explanation.notes if "Foo 9000" in n]
    assert explanation.facts["gpu.platform"]["value"] == "cuda"


def test_the_cli_prints_the_unknown_name_warning_once_and_exits_0():
    done = cli("explain", "--launch", LLAMA, "--gpu", "Foo 9000", "--sglang-version", "0.5.12", "--model", "LlamaForCausalLM")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if "Foo 9000" in line]
    assert lines == ["  warning: GPU 'Foo 9000' is not in the catalog: rules that depend on the GPU are undecided; give --sm N or --gpu-memory"]
    unknown_version = cli("explain", "--launch", LLAMA, "--gpu", "Foo 9000", "--model", "LlamaForCausalLM")
    assert unknown_version.returncode == 0 and unknown_version.stdout.count("is not in the catalog") == 1


def _profile(tmp_path: Path, name: str, **gpu: object) -> str:
    base = json.loads((ROOT / "pytest_sglang" / "simulator" / "profiles" / "llama31-8b-1xh100-0.5.9.json").read_text())
    base["gpu"] = {"name": name, "count": 1, "compute_capability": None, "memory_mib": None, **gpu}
    path = tmp_path / f"{re.sub(r'[^a-z0-9]+', '-', name.lower())}.json"
    path.write_text(json.dumps(base))
    return f"sim://{path}"


def test_a_target_reporting_an_unknown_gpu_name_is_explained_with_the_warning(tmp_path):
    with connect(_profile(tmp_path, "Foo 9000")) as target:
        explanation = explain(target)
    assert [n for n in explanation.notes if "Foo 9000" in n] == [
        "warning: GPU 'Foo 9000' is not in the catalog: rules that depend on the GPU are undecided; give `sm` N, or host access (`ssh`) so nvidia-smi can be read"
    ]


def test_a_target_on_an_amd_gpu_knows_its_platform(tmp_path):
    with connect(_profile(tmp_path, "AMD Instinct MI300X", memory_mib=196592)) as target:
        explanation = explain(target)
    assert explanation.facts["gpu.platform"]["value"] == "hip" and explanation.facts["gpu.gfx"]["value"] == "gfx942"
    assert not [n for n in explanation.notes if "Foo 9000" in n]


def test_the_plugin_shows_the_warning_in_the_explain_section_and_the_run_passes(pytester, tmp_path):
    spec = _profile(tmp_path, "Foo 9000")
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("-p", "no:benchmark", f"--sglang-host={spec}", "--sglang-explain")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert out.count("warning: GPU 'Foo 9000' is not in the catalog") == 1 and "Traceback" not in out


# ---- Ascend NPU, Intel XPU, CPU ----------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, extra, platform",
    [({"gpu": "Ascend 910B"}, "", "npu"), ({}, " --device npu", "npu"), ({"platform": "xpu"}, "", "xpu"), ({}, " --device cpu", "cpu")],
)
def test_off_cuda_platforms_say_in_one_line_which_rules_cannot_be_judged_and_judge_the_rest(kwargs, extra, platform):
    command = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 2 --prefill-attention-backend triton --decode-attention-backend triton" + extra
    explanation = explain_launch(command, sglang_version="0.5.12", model="LlamaForCausalLM", gpu_memory="64GiB", **kwargs)
    lines = [f for f in explanation.findings if f.id.startswith("gap.platform.")]
    assert len(lines) == 1 and lines[0].id == f"gap.platform.{platform}" and lines[0].severity == "info"
    count = int(lines[0].title.split()[0])
    kb = load()
    platform_rules = [r for r in kb.applicable(Version("0.5.12")) if "gpu.platform" in kb.reads_all[r.id]]
    assert 0 < count <= len(platform_rules) and "cannot be judged on" in lines[0].title
    assert explanation.by_rule("attention.prefill-equals-decode")  # no platform in it: judged
    assert not {r for r in rules(explanation) if r.startswith(("attention.default", "rocm.", "gpumem.", "mem.fraction"))}


def test_the_cli_on_an_npu_prints_the_one_line():
    done = cli("explain", "--launch", LLAMA + " --device npu", "--sglang-version", "0.5.12", "--model", "LlamaForCausalLM")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("cannot be judged on an Ascend NPU [gap.platform.npu]") == 1


# ---- the property: a CUDA-only rule never fires off CUDA ---------------------------------------


def _requires(text: str, derived: dict[str, str], name: str = "derived.cuda", seen: frozenset[str] = frozenset()) -> bool:
    """Whether an expression holds only when ``name`` does: it is one of the terms its top-level
    ``and`` needs, directly or through a derived value that requires it."""
    node = ast.parse(text.strip(), mode="eval").body
    terms = node.values if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And) else [node]
    for term in terms:
        dotted = ast.unparse(term)
        if dotted == name:
            return True
        if dotted.startswith("derived.") and dotted not in seen and dotted.removeprefix("derived.") in derived:
            if _requires(derived[dotted.removeprefix("derived.")], derived, name, seen | {dotted}):
                return True
    return False


KB = load()
DERIVED = {key: value.text for key, value in KB.derived.items()}
CUDA_ONLY = {rule.id for rule in KB.order if rule.when and _requires(rule.when, DERIVED)}
FLAGS = [
    "--tp 4", "--attention-backend trtllm_mla", "--attention-backend trtllm_mha", "--attention-backend fa3", "--kv-cache-dtype fp8_e4m3",
    "--enable-flashinfer-allreduce-fusion", "--speculative-algorithm NGRAM", "--enable-dp-attention --dp 2", "--quantization modelopt_fp4",
    "--enable-piecewise-cuda-graph", "--moe-runner-backend flashinfer_trtllm", "--fp8-gemm-backend flashinfer_trtllm",
    "--enable-torch-compile", "--pp-size 2", "--disable-radix-cache", "--moe-a2a-backend deepep",
]  # fmt: skip
OFF_CUDA = [{"gpu": "MI300X"}, {"gpu": "MI355X", "gpu_memory": "288GiB"}, {"gpu": "Ascend 910B", "gpu_memory": "64GiB"}, {"platform": "xpu"}, {"platform": "cpu"}]
FAMILIES = ["llama", "qwen3-moe", "qwen3.5-moe", "qwen3-next", "deepseek-v3", "deepseek-v3.2", "gemma3", "llama4"]


def test_the_cuda_only_set_holds_the_nvidia_gates():
    assert {"allreduce.fusion-auto-0512", "pcg.multimodal", "backends.fa3-sm"} <= CUDA_ONLY
    assert {r for r in CUDA_ONLY if r.startswith("attention.default-mha")}
    assert not {r for r in CUDA_ONLY if r.startswith("rocm.")}


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    release=st.sampled_from(KB.releases),
    family=st.sampled_from(FAMILIES),
    flags=st.lists(st.sampled_from(FLAGS), max_size=3, unique=True),
    where=st.sampled_from(OFF_CUDA),
)
def test_no_cuda_only_rule_fires_off_cuda(release, family, flags, where):
    command = f"python -m sglang.launch_server --model-path m {' '.join(flags)}"
    explanation = explain_launch(command, sglang_version=str(release), model=str(MODELS / family / "config.json"), **where)
    fired = {f.rule for f in explanation.findings if f.status != "undecided"}
    assert not fired & CUDA_ONLY, (release, family, flags, where, sorted(fired & CUDA_ONLY))


def test_the_property_can_fail_the_same_commands_on_cuda_fire_cuda_only_rules():
    fired: set[str] = set()
    for release in ("0.5.9", "0.5.12", "0.5.23"):
        for family in ("llama", "qwen3-moe", "gemma3"):
            explanation = explain_launch("python -m sglang.launch_server --model-path m --tp 4", gpu="H100", gpu_memory="80GiB", sglang_version=release, model=str(MODELS / family / "config.json"))
            fired |= {f.rule for f in explanation.findings if f.status != "undecided"}
    assert fired & CUDA_ONLY


def test_requires_sm_on_an_amd_gpu_skips_saying_it_is_an_amd_gpu(pytester, tmp_path):
    spec = _profile(tmp_path, "AMD Instinct MI300X", memory_mib=196592)
    pytester.makepyfile("import pytest\n\n@pytest.mark.requires_sm(90)\ndef test_hopper():\n    pass\n")
    result = pytester.runpytest("-p", "no:benchmark", "-rs", f"--sglang-host={spec}")
    result.assert_outcomes(skipped=1)
    assert "runs on an AMD GPU (AMD Instinct MI300X, ROCm, gfx942;" in result.stdout.str()
    assert "which has no NVIDIA compute capability" in result.stdout.str()
