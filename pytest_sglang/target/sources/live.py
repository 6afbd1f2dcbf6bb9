"""A live SGLang server: its HTTP endpoints, and with host access (the ``ssh`` setting, or
``local``) its GPUs, launch command and the current run's logs."""

from __future__ import annotations

from typing import Any

from pytest_sglang.base.errors import SpecError, TargetError
from pytest_sglang.base.settings import setting
from pytest_sglang.collect.host import HostOptions, collect_host
from pytest_sglang.collect.http import HttpClient, collect_http
from pytest_sglang.model.facts import Facts
from pytest_sglang.parse.logs import LogSource
from pytest_sglang.target.core import Target
from pytest_sglang.target.options import TargetOptions, api_key_for
from pytest_sglang.target.spec import HostSpec, check_host_name, verify_setting


def open(spec: HostSpec, options: TargetOptions) -> Target:  # noqa: A001  (the source interface's name)
    """Read the server over HTTP (and its host, with host access)."""
    api_key = api_key_for(spec, options)
    overrides: dict[str, Any] = {"sm": options.sm} if options.sm is not None else {}
    check_host_name(spec)
    client = HttpClient(
        spec.base_url,
        api_key=api_key,
        timeout=options.timeout,
        verify=verify_setting(spec),
        name=spec.display,
    )
    shell, host_options = _host_access(spec, options)
    try:
        try:
            if options.wait_ready > 0:
                client.wait_ready(options.wait_ready)
            facts = collect_http(client, target=spec.display, overrides=overrides)
        except TargetError as exc:
            if shell is None:
                raise
            # The host's logs can still say how the server was configured.
            facts = Facts(target=spec.display, base_url=client.base_url, overrides=overrides, problems=[f"HTTP: {exc}"])
        if shell is not None:
            host = collect_host(shell, host_options, where=shell.name)
            facts = facts.model_copy(update={"host": host.model_copy(update={"host_key_checked": not options.ssh_insecure})})
            if facts.problems and not any("server_args=" in line for line in host.log_lines):
                raise TargetError(facts.problems[0].removeprefix("HTTP: "))
    except BaseException:
        client.close()
        if shell is not None:
            shell.close()
        raise
    return Target(spec, facts, client, shell=shell)


def _host_access(spec: HostSpec, options: TargetOptions) -> tuple[Any, HostOptions]:
    """The shell to the target's host (None without host access) and what to read there."""
    ssh = spec.options.get("ssh") or options.ssh
    logs_text = spec.options.get("logs") or options.logs
    host_options = HostOptions(
        unit=spec.options.get("unit") or options.unit,
        logs=LogSource.parse(logs_text) if logs_text else None,
        timeout=options.command_timeout,
        # Only a port the spec names: behind a proxy on 80/443, SGLang's own port differs and
        # neither the process lookup nor the log's port check can use the URL's.
        port=spec.port,
    )
    if not ssh:
        if logs_text or host_options.unit:
            raise SpecError(f"{spec.display}: {setting('logs')} and {setting('unit')} need host access: give {setting('ssh')} user@host (or local)")
        return None, host_options
    if ssh == "local":
        from pytest_sglang.collect.shell.local import LocalShell

        return LocalShell(), host_options
    from pytest_sglang.collect.shell.ssh import SSHShell

    shell = SSHShell(
        ssh,
        key_filename=options.ssh_key,
        insecure=options.ssh_insecure,
        connect_timeout=options.timeout,
        config_path=options.ssh_config,
        known_hosts=options.ssh_known_hosts,
    )
    return shell, host_options
