"""Opening a target: the source its spec names collects the facts, and they are normalised,
inside one error boundary. Works without pytest::

    from pytest_sglang import connect
    with connect("http://gpu1:30000", api_key=...) as target:
        print(target.effective.max_running_requests, target.effective.source_of("max_running_requests"))
"""

from __future__ import annotations

from pytest_sglang.base.errors import SGLangError, SpecError, TargetError
from pytest_sglang.base.secrets import collecting
from pytest_sglang.base.text import one_line
from pytest_sglang.target.core import GpuInfo, Target
from pytest_sglang.target.options import TargetOptions
from pytest_sglang.target.sources import Source, live, replay, sim
from pytest_sglang.target.spec import HostSpec, parse_spec, register_secrets

__all__ = ["GpuInfo", "SOURCES", "Target", "TargetOptions", "connect", "open_target"]

# A spec's scheme -> the source that opens it (a new source adds its line).
SOURCES: dict[str, Source] = {"http": live, "https": live, "sim": sim, "replay": replay}


def source_for(spec: HostSpec) -> Source:
    """The source that opens ``spec``."""
    source = SOURCES.get(spec.scheme)
    if source is None:  # parse_spec admits only these schemes
        raise SpecError(f"{spec.display}: no source opens {spec.scheme}:// targets; use one of {', '.join(sorted(SOURCES))}")
    return source


def open_target(spec: HostSpec | str, options: TargetOptions | None = None) -> Target:
    """Collect the target's facts and normalise them. Whatever goes wrong on the way is one
    :class:`~pytest_sglang.base.errors.SGLangError` naming the target: this is the one boundary
    between what a host sends and the caller (a pytest run keeps going with other hosts).
    Normalising happens here, inside the boundary, so facts no configuration can be made of
    (a capture whose ``server_info`` is a list) fail this target on open, not a later read."""
    spec = parse_spec(spec) if isinstance(spec, str) else spec
    register_secrets([spec])
    try:
        with collecting():
            target = source_for(spec).open(spec, options or TargetOptions())
    except SGLangError as exc:
        raise exc.with_traceback(None) from None
    except Exception as exc:  # anything a host's answers or a transport library raised
        detail = one_line(f"{type(exc).__name__}: {exc}", 200)
        raise TargetError(f"{spec.display}: reading the target failed ({detail}); the other hosts are not affected") from None
    try:
        target.snapshot  # noqa: B018  (normalised now: a failure is this target's one line)
    except BaseException:
        target.close()
        raise
    return target


def connect(
    spec: HostSpec | str,
    *,
    api_key: str | None = None,
    timeout: float = 10.0,
    wait_ready: float = 0.0,
    sm: int | None = None,
    ssh: str | None = None,
    ssh_key: str | None = None,
    ssh_insecure: bool = False,
    ssh_known_hosts: str | None = None,
    ssh_config: str | None = None,
    unit: str | None = None,
    logs: str | None = None,
    command_timeout: float = 30.0,
) -> Target:
    """Open a target by spec and collect its facts. ``ssh`` ("user@host[:port]" or "local")
    adds host access: GPU facts, the launch command (``unit``) and the current run's ``logs``,
    as the host-access options of pytest and of the command line do."""
    options = TargetOptions(
        api_key=api_key,
        timeout=timeout,
        wait_ready=wait_ready,
        sm=sm,
        ssh=ssh,
        ssh_key=ssh_key,
        ssh_insecure=ssh_insecure,
        ssh_known_hosts=ssh_known_hosts,
        ssh_config=ssh_config,
        unit=unit,
        logs=logs,
        command_timeout=command_timeout,
    )
    options.validate()
    return open_target(spec, options)
