"""Start a bundled simulated deployment in its own process, as a real server would run."""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field

from ..errors import TargetError

_URL = re.compile(r"listening on (http://\S+)")


@dataclass
class SimProcess:
    profile: str
    url: str
    process: subprocess.Popen[str] = field(repr=False)

    def stop(self, timeout: float = 5.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


def start_simulator(
    profile: str,
    *,
    api_key: str | None = None,
    admin_api_key: str | None = None,
    startup_timeout: float = 30.0,
) -> SimProcess:
    """Run ``python -m pytest_sglang.sim`` on a free loopback port; returns once it listens."""
    cmd = [sys.executable, "-m", "pytest_sglang.sim", "--profile", profile, "--host", "127.0.0.1", "--port", "0"]
    # It stops by itself when this process ends, however that happens (SIGTERM, SIGKILL, a crash).
    cmd += ["--parent-pid", str(os.getpid())]
    env = dict(os.environ)
    env.pop("SGLANG_API_KEY", None)
    # Keys travel in the environment, not argv, so they never show in a process list.
    if api_key:
        env["SGLANG_API_KEY"] = api_key
    if admin_api_key:
        env["PYTEST_SGLANG_SIM_ADMIN_API_KEY"] = admin_api_key
    process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line: list[str] = []

    def read_first_line() -> None:
        assert process.stdout is not None
        line.append(process.stdout.readline())

    reader = threading.Thread(target=read_first_line, daemon=True)
    reader.start()
    reader.join(startup_timeout)
    match = _URL.search(line[0]) if line else None
    if match is None:
        if process.poll() is None:
            process.kill()
        process.wait()
        err = (process.stderr.read() if process.stderr else "").strip().splitlines()
        detail = next((e for e in reversed(err) if e.strip()), "no output")
        detail = detail.removeprefix("error: ")
        raise TargetError(f"simulator sim://{profile} did not start: {detail}")
    return SimProcess(profile=profile, url=match.group(1), process=process)


def unknown_profile(name: str) -> str | None:
    """Why ``sim://NAME`` names no bundled profile (with the closest names), or None when it
    names one or is a profile file (``.json``). The bundled profiles are known without starting
    anything, so a misspelt name is one usage error before the run, not an error per test."""
    if name.endswith(".json"):
        return None
    from .profile import bundled_profiles

    known = bundled_profiles()
    if name in known:
        return None
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(f'sim://{c}' for c in close)}?)" if close else ""
    return (
        f"--sglang-host sim://{name}: unknown simulator profile {name!r}{hint}; bundled profiles: {', '.join(known)} "
        "(or a profile file: sim:///path/to/profile.json)"
    )
