"""The simulator: an SGLang-compatible HTTP server driven by declarative profiles, a program of
its own (``python -m pytest_sglang.sim``, docs/simulator.md). It reads and builds facts with the
layers below it and knows nothing of targets: the ``sim://`` source
(:mod:`pytest_sglang.target.sources.sim`) serves a profile through the API below and reads it
as it would a server.

The API, imported on first use (a run without ``sim://`` targets loads none of it):

- profiles: :class:`Profile`, :func:`load_profile`, :func:`bundled_profiles`, and
  :func:`unknown_profile` (why a name is no bundled profile, before anything starts);
- serving: :func:`start_simulator` (and :func:`begin_simulator`, which does not wait) give a
  :class:`SimProcess` on a loopback port of this process's shared simulator process, which
  :func:`shutdown_shared_simulator` ends;
- the simulated host: :func:`simulated_host` (its GPUs, launch command and start-up log).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_sglang.base.lazy import lazy_exports

_EXPORTS = {
    "Profile": "profile",
    "bundled_profiles": "profile",
    "load_profile": "profile",
    "unknown_profile": "profile",
    "PendingSimulator": "launcher",
    "SimProcess": "launcher",
    "begin_simulator": "launcher",
    "shutdown_shared_simulator": "launcher",
    "start_simulator": "launcher",
    "simulated_host": "host",
}
__all__ = [
    "PendingSimulator",
    "Profile",
    "SimProcess",
    "begin_simulator",
    "bundled_profiles",
    "load_profile",
    "shutdown_shared_simulator",
    "simulated_host",
    "start_simulator",
    "unknown_profile",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from pytest_sglang.simulator.host import simulated_host
    from pytest_sglang.simulator.launcher import PendingSimulator, SimProcess, begin_simulator, shutdown_shared_simulator, start_simulator
    from pytest_sglang.simulator.profile import Profile, bundled_profiles, load_profile, unknown_profile
