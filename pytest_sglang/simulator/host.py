"""The simulated host of a profile: its GPUs, the launch command, and the start-up log
SGLang of the profile's version would have printed for it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from pytest_sglang.model.facts import GpuFact, HostFacts
from pytest_sglang.simulator.profile import Profile

# A fixed start time keeps simulated logs identical from run to run.
_STARTED = datetime(2026, 11, 30, 9, 14, 2, tzinfo=timezone.utc)


def _stamp(seconds: float, rank: str = "") -> str:
    when = (_STARTED + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")
    return f"[{when}{' ' + rank if rank else ''}]"


def startup_log(profile: Profile) -> list[str]:
    """The lines that matter of the profile's start-up, in its SGLang version's formats."""
    args = profile.args()
    state = {**args, **profile.scheduler_args}
    rt = profile.runtime
    tp0 = "TP0" if (args.get("tp_size") or 1) > 1 else ""
    if profile.has("resolved_dict"):
        args_line = f"server_args={args!r}"
    else:
        args_line = "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"
    lines = [f"{_stamp(0)} {line}" for line in profile.log_lines]
    lines.append(f"{_stamp(1)} {args_line}")
    lines.append(f"{_stamp(95, tp0)} Load weight end. elapsed=88.41 s, type={profile.model.architectures[0]}, dtype=torch.bfloat16, avail mem=27.10 GB, mem usage={rt.weight_gb:.2f} GB.")
    lines.append(f"{_stamp(96, tp0)} KV Cache is allocated. #tokens: {rt.max_total_num_tokens}, K size: {rt.kvcache_gb / 2:.2f} GB, V size: {rt.kvcache_gb / 2:.2f} GB")
    mamba = state.get("max_mamba_cache_size")
    if mamba:
        lines.append(f"{_stamp(96, tp0)} Mamba Cache is allocated. max_mamba_cache_size: {mamba}, conv_state size: 0.35GB, ssm_state size: 11.83GB")
    if args.get("disable_piecewise_cuda_graph") is True:
        lines.append(f"{_stamp(97, tp0)} Disable piecewise CUDA graph because --disable-piecewise-cuda-graph is set")
    chunked = args.get("chunked_prefill_size")
    lines.append(
        f"{_stamp(98, tp0)} max_total_num_tokens={rt.max_total_num_tokens}, chunked_prefill_size={chunked}, "
        f"max_prefill_tokens={args.get('max_prefill_tokens')}, max_running_requests={rt.effective_max_running_requests_per_dp}, "
        f"context_len={profile.model.context_len}, available_gpu_mem=11.20 GB"
    )
    lines.append(f"{_stamp(131)} The server is fired up and ready to roll!")
    return lines


def simulated_host(profile: Profile) -> HostFacts:
    where = f"simulator profile {profile.name}"
    gpus = []
    if profile.gpu is not None:
        gpus = [
            GpuFact(
                index=i,
                name=profile.gpu.name,
                compute_capability=profile.gpu.compute_capability,
                memory_mib=profile.gpu.memory_mib,
                driver=profile.gpu.driver,
                uuid=f"GPU-sim-{i:04d}",
            )
            for i in range(profile.gpu.count)
        ]
    return HostFacts(
        where=where,
        gpus=gpus,
        gpu_source=where if gpus else None,
        gpus_in_use=[g.index for g in gpus],
        launch_command=profile.launch_command,
        launch_command_source=where if profile.launch_command else None,
        log_lines=startup_log(profile),
        log_source=f"{where} (start-up log)",
    )
