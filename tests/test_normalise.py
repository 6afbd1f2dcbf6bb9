"""Facts -> Effective: every era of SGLang's reporting gives the same answers, each with its source."""

from __future__ import annotations

import copy
import json

import pytest
from support import artefact

from pytest_sglang import Facts, ServerArgs, normalise
from pytest_sglang.model.facts import Endpoint, GpuFact, HostFacts
from pytest_sglang.parse.redact import redact_mapping
from pytest_sglang.simulator import load_profile


def facts_of(server_info=None, model_info=None, loads=None, *, path="/server_info", host=None, overrides=None):
    endpoints = {}
    if server_info is not None:
        endpoints["server_info"] = Endpoint(path=path, status=200, body=redact_mapping(server_info))
    if model_info is not None:
        endpoints["model_info"] = Endpoint(path="/model_info", status=200, body=model_info)
    if loads is not None:
        endpoints["loads"] = Endpoint(path="/v1/loads", status=200, body=loads)
    return Facts(target="t", endpoints=endpoints, host=host, overrides=overrides or {})


def as_0512_era(info: dict) -> dict:
    """The same deployment as SGLang 0.5.10-0.5.13 reports it: the flat CUDA graph fields and
    the boolean allreduce flag instead of cuda_graph_config and the fusion backend."""
    old = copy.deepcopy(info)
    for body in [old, *old["internal_states"]]:
        config = body.pop("cuda_graph_config")
        body["disable_piecewise_cuda_graph"] = config["prefill"]["backend"] == "disabled"
        body["disable_cuda_graph"] = config["decode"]["backend"] == "disabled"
        body["cuda_graph_max_bs"] = config["decode"]["max_bs"]
        body["cuda_graph_bs"] = config["decode"]["bs"]
        body["enable_flashinfer_allreduce_fusion"] = body.pop("flashinfer_allreduce_fusion_backend") is not None
    for key in ("launch_command", "frontend", "startup_time"):
        old.pop(key)
    for state in old["internal_states"]:  # 0.5.23 also reports the role and what the worker captured
        for key in ("disaggregation_mode", "decode_cuda_graph_bs", "decode_cuda_graph_memory_gb"):
            state.pop(key, None)
    old["version"] = "0.5.12"
    return old


def test_real_0523_server_effective_values_and_sources(real_server_info, real_model_info):
    snap = normalise(facts_of(real_server_info, real_model_info))
    e = snap.effective
    assert snap.version == "0.5.23"
    # The argument is null; the scheduler decided 2048.
    assert snap.server_args.max_running_requests is None
    assert e.max_running_requests == 2048
    assert e.source_of("max_running_requests") == "/server_info internal_states[0].effective_max_running_requests_per_dp"
    assert e.requested("max_running_requests") is None
    assert e.max_total_num_tokens == 8192
    # Its arguments ask for a decode graph up to 32, but a CPU worker captures none, and 0.5.23
    # reports what it captured: every decode batch runs without a graph.
    assert snap.server_args.cuda_graph_config.decode.max_bs == 32
    assert (e.decode_cuda_graph, e.decode_cuda_graph_max_bs, e.decode_eager_batches) == (False, None, True)
    assert e.source_of("decode_cuda_graph") == "/server_info internal_states[0].decode_cuda_graph_bs (the batch sizes captured) = []"
    assert e.disaggregation_mode == "null" and e.page_size == 1 and e.mixed_chunk is False
    assert e.shared_experts_fusion is True  # not turned off (a Llama has no shared experts to fuse)
    assert e.max_req_input_len == 2042 and e.source_of("max_req_input_len") == "/server_info max_req_input_len"
    assert (e.prefill_cuda_graph, e.prefill_cuda_graph_backend) == (False, "disabled")
    assert "cuda_graph_config.prefill.backend" in e.source_of("prefill_cuda_graph")
    assert e.architectures == ["LlamaForCausalLM"] and e.is_multimodal is False and e.is_hybrid is False
    assert e.flashinfer_allreduce_fusion_requested is False


def test_server_args_hold_every_reported_field(real_server_info):
    snap = normalise(facts_of(real_server_info))
    args = snap.server_args
    reported = {k for k in real_server_info if k not in ("internal_states", "version", "status", "max_total_num_tokens", "max_req_input_len", "startup_time", "kv_events", "launch_command", "frontend", "hicache_object_layout")}
    assert set(args.keys()) == reported
    assert args["mamba_radix_cache_strategy"] == "auto"  # an untyped field
    assert args.cuda_graph_config.prefill.backend == "disabled"  # a typed, nested one


def test_the_resolved_dict_of_0523_is_a_complete_server_args():
    data = json.loads(artefact("example_resolved_dict.json"))
    args = ServerArgs.from_mapping(data)
    assert len(args) == len(data) == 546
    assert all(args[k] == v or k.startswith("_") or isinstance(v, dict) for k, v in data.items())


@pytest.mark.parametrize("path", ["/server_info", "/get_server_info"])
def test_both_server_info_eras_give_the_same_effective_answers(real_server_info, real_model_info, path):
    new = normalise(facts_of(real_server_info, real_model_info)).effective
    old = normalise(facts_of(as_0512_era(real_server_info), real_model_info, path=path)).effective
    # Before 0.5.23 only the arguments tell the decode graph (on, up to 32); 0.5.23 tells what the
    # CPU worker captured (nothing), so those answers differ by era, rightly.
    graphs = {"decode_cuda_graph", "decode_cuda_graph_max_bs", "decode_eager_batches"}
    skip = {"sglang_version", "prefill_cuda_graph_backend", *graphs}
    assert {k: v for k, v in old.values().items() if k not in skip} == {k: v for k, v in new.values().items() if k not in skip}
    assert (old.decode_cuda_graph, old.decode_cuda_graph_max_bs, old.decode_eager_batches) == (True, 32, True)
    assert old.source_of("decode_eager_batches") == "effective.max_running_requests 2048 against decode_cuda_graph_max_bs 32: batches of 33-2048 requests run without a graph"
    assert old.prefill_cuda_graph_backend == "disabled"
    assert old.source_of("prefill_cuda_graph") == f"{path} internal_states[0].disable_piecewise_cuda_graph = True"


def test_without_internal_states_the_value_comes_from_v1_loads(real_server_info):
    info = {k: v for k, v in real_server_info.items() if k != "internal_states"}
    loads = {"version": "0.5.23", "loads": [{"dp_rank": 0, "max_running_requests": 2048, "max_total_num_tokens": 8192}]}
    e = normalise(facts_of(info, loads=loads)).effective
    assert e.max_running_requests == 2048
    assert e.source_of("max_running_requests") == "/v1/loads loads[0].max_running_requests"


def test_a_0505_server_falls_back_to_the_scheduler_log_line(real_server_info, real_log):
    info = {k: v for k, v in real_server_info.items() if k != "internal_states"}
    info["version"] = "0.5.5"
    e = normalise(facts_of(info, path="/get_server_info")).effective
    assert e.max_running_requests is None
    assert e.provenance["max_running_requests"].source == "not reported by this target"
    host = HostFacts(log_lines=real_log.splitlines(), log_source="file:/var/log/sglang.log")
    e = normalise(facts_of(info, path="/get_server_info", host=host)).effective
    assert e.max_running_requests == 2048
    assert e.source_of("max_running_requests") == "scheduler capacity line (file:/var/log/sglang.log)"


def test_without_http_server_info_the_startup_line_is_the_source(real_log):
    host = HostFacts(log_lines=real_log.splitlines(), log_source="file:/var/log/sglang.log")
    snap = normalise(Facts(target="t", host=host))
    assert snap.server_args.model_path == "/models/tiny-llama"
    assert snap.server_args_source == "start-up log (file:/var/log/sglang.log)"
    assert snap.effective.max_running_requests == 2048


def _profile_facts(name, **host_kw):
    p = load_profile(name)
    host = None
    if host_kw.get("with_gpus"):
        host = HostFacts(gpus=[GpuFact(index=i, name=p.gpu.name, compute_capability=p.gpu.compute_capability) for i in range(p.gpu.count)], gpu_source="nvidia-smi")
    return facts_of(p.server_info(), p.model_info(), p.loads(running=0, waiting=0, used_tokens=0, throughput=0.0), host=host, overrides=host_kw.get("overrides"))


def test_the_seed_case_candidate_shows_requested_and_effective():
    e = normalise(_profile_facts("qwen35-122b-a10b-4xrtx6000-candidate", with_gpus=True)).effective
    assert e.max_running_requests == 26
    assert e.requested("max_running_requests") == 48
    assert e.mamba_cache_size == 132
    assert e.prefill_cuda_graph is False
    assert e.is_multimodal is True and e.is_hybrid is True
    assert e.sm == 120 and e.gpu_count == 4
    assert e.flashinfer_allreduce_fusion_requested is True
    assert e.flashinfer_allreduce_fusion is False
    assert "SM90 and SM10x" in e.source_of("flashinfer_allreduce_fusion")


def test_fusion_is_undecided_without_gpu_facts_and_decided_with_sglang_sm():
    e = normalise(_profile_facts("qwen35-122b-a10b-4xrtx6000-candidate")).effective
    assert e.sm is None and e.flashinfer_allreduce_fusion is None
    assert "give `sm` to decide" in e.provenance["flashinfer_allreduce_fusion"].note
    e = normalise(_profile_facts("qwen35-122b-a10b-4xrtx6000-candidate", overrides={"sm": 90})).effective
    assert (e.sm, e.source_of("sm")) == (90, "the sm setting")
    assert e.flashinfer_allreduce_fusion is True


def test_gpu_name_from_v1_loads_maps_to_compute_capability():
    e = normalise(_profile_facts("qwen35-122b-a10b-4xrtx6000-0.5.23")).effective
    assert e.gpu_name == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert e.sm == 120
    assert e.source_of("sm").startswith("/v1/loads accelerator")


def test_a_field_whose_type_changed_is_kept_not_fatal(real_server_info):
    info = copy.deepcopy(real_server_info)
    info["tp_size"] = "tp-four"
    info["brand_new_field_0_6"] = {"x": 1}
    args = normalise(facts_of(info)).server_args
    assert args["tp_size"] == "tp-four"
    assert args.brand_new_field_0_6 == {"x": 1}


def test_secrets_are_redacted_before_anything_reads_them(real_server_info):
    info = copy.deepcopy(real_server_info)
    info.update(api_key="sk-live-123", admin_api_key="adm-456", ssl_keyfile_password="pw-789")
    info["launch_command"] = "--model-path m --api-key sk-live-123 --admin-api-key=adm-456"
    info["internal_states"][0]["api_key"] = "sk-live-123"
    snap = normalise(facts_of(info))
    dumped = json.dumps(facts_of(info).model_dump(mode="json")) + repr(snap.server_args.as_dict()) + str(snap.launch_command)
    for secret in ("sk-live-123", "adm-456", "pw-789"):
        assert secret not in dumped
    assert snap.server_args.api_key == "<redacted>"
    assert snap.launch_command == "--model-path m --api-key <redacted> --admin-api-key=<redacted>"


def test_the_real_tp4_qwen3_moe_server_normalises(real_model_info):
    from support import artefact

    info = json.loads(artefact("server_info_qwen3moe_tp4.json"))
    e = normalise(facts_of(info)).effective
    assert e.tp_size == 4
    assert e.gpu_count is None  # a CPU server: no GPUs to count
    assert e.max_running_requests == info["internal_states"][0]["effective_max_running_requests_per_dp"]
    # A CPU worker captures no decode graph, whatever its arguments ask for.
    assert info["cuda_graph_config"]["decode"]["backend"] != "disabled"
    assert (e.decode_cuda_graph, e.decode_cuda_graph_max_bs) == (False, None)


@pytest.mark.parametrize(
    "in_use, visible, count, source",
    [
        ([4, 5, 6, 7], None, 4, "nvidia-smi: the SGLang process uses GPU 4, 5, 6, 7"),
        ([], "2,3", 2, "CUDA_VISIBLE_DEVICES=2,3 of the SGLang process"),
        ([], None, 4, "tp_size × pp_size × dp_size from /server_info"),
    ],
    ids=["compute-apps", "cuda-visible-devices", "parallel-sizes"],
)
def test_the_gpu_count_is_what_the_server_uses_not_what_the_host_has(in_use, visible, count, source):
    # Eight GPUs on the host; the tp 4 server runs on some of them.
    p = load_profile("qwen35-122b-a10b-4xrtx6000-candidate")
    gpus = [GpuFact(index=i, name=p.gpu.name, compute_capability=p.gpu.compute_capability) for i in range(8)]
    host = HostFacts(gpus=gpus, gpu_source="nvidia-smi", gpus_in_use=in_use, cuda_visible_devices=visible)
    e = normalise(facts_of(p.server_info(), p.model_info(), host=host)).effective
    assert (e.gpu_count, e.source_of("gpu_count")) == (count, source)
    assert e.sm == 120


def test_a_deprecated_spelling_in_the_launch_command_is_named_with_what_it_requested(real_server_info):
    # SGLang 0.5.18 reads the seed's --disable-piecewise-cuda-graph as cuda_graph_backend_prefill=disabled.
    info = copy.deepcopy(real_server_info)
    info["version"] = "0.5.18"
    info.pop("launch_command", None)
    for body in [info, *info["internal_states"]]:
        if isinstance(body.get("cuda_graph_config"), dict):
            body["cuda_graph_config"]["prefill"]["backend"] = "disabled"
    command = "python -m sglang.launch_server --model-path /models/tiny-llama --disable-piecewise-cuda-graph"
    host = HostFacts(launch_command=command, launch_command_source="/proc/4242/cmdline on local")
    e = normalise(facts_of(info, host=host)).effective
    assert e.prefill_cuda_graph is False
    assert e.requested("prefill_cuda_graph") == "disabled"
    assert e.provenance["prefill_cuda_graph"].requested_source == (
        "launch command --disable-piecewise-cuda-graph (deprecated in SGLang 0.5.18: use --cuda-graph-backend-prefill=disabled), "
        "/proc/4242/cmdline on local"
    )
