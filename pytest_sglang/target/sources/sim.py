"""A simulated deployment (``sim://PROFILE``): the simulator (:mod:`pytest_sglang.simulator`,
a program of its own) serves the profile on a loopback port, and the target reads it over HTTP
as it would a server; its host is the profile's."""

from __future__ import annotations

from typing import Any

from pytest_sglang import simulator
from pytest_sglang.collect.http import HttpClient, collect_http
from pytest_sglang.target.core import Target
from pytest_sglang.target.options import TargetOptions
from pytest_sglang.target.sources import api_key_for, unused_host_access
from pytest_sglang.target.spec import HostSpec


def open(spec: HostSpec, options: TargetOptions) -> Target:  # noqa: A001  (the source interface's name)
    """Start (or share) a simulator for the profile and read it."""
    api_key = api_key_for(spec, options)
    overrides: dict[str, Any] = {"sm": options.sm} if options.sm is not None else {}
    profile = simulator.load_profile(spec.host)  # a bad profile fails here, before a process starts
    # sim://NAME?api_key=K starts the simulator with K and reads it with K (unless another key
    # is given, e.g. to see the simulator refuse a wrong one).
    sim_key = spec.options.get("api_key") or api_key
    pending = simulator.begin_simulator(spec.host, api_key=sim_key, admin_api_key=spec.options.get("admin_api_key"))
    try:
        # made while the simulator opens the host (and, the first time, while its process starts)
        host = simulator.simulated_host(profile)
    except BaseException:
        pending.cancel()
        raise
    process = pending.wait()
    client = HttpClient(process.url, api_key=api_key or sim_key, timeout=options.timeout, name=spec.display)
    try:
        if not process.ready:  # the profile models a warm-up: /health answers 503 for a while
            client.wait_ready(max(options.wait_ready, 30.0))
        facts = collect_http(client, target=spec.display, origin="sim", overrides=overrides)
    except BaseException:
        client.close()
        process.stop()
        raise
    facts = facts.model_copy(update={"host": host, "profile": profile.name})
    notes = unused_host_access(options, "a simulated target (its host is the profile's simulated one)")
    return Target(spec, facts, client, simulator=process, notes=notes)


# `python -m pytest_sglang.target.sources.sim`, the simulator's former module name, still runs
# it; the simulator lives in pytest_sglang.simulator (`python -m pytest_sglang.sim`).
if __name__ == "__main__":
    import runpy

    runpy.run_module("pytest_sglang.simulator", run_name="__main__", alter_sys=True)
