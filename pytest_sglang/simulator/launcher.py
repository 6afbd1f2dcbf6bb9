"""Start a bundled simulated deployment outside this process, as a real server would run.

Every ``sim://`` host opened by one Python process is served by one simulator process
(``python -m pytest_sglang.simulator --serve-many``, see :mod:`.many`), started with the first host
and asked over its stdin for one more server per host: a fleet of 32 simulated hosts costs one
interpreter start, not 32. Each host still has its own port, profile, keys, queueing model and
metrics, and :meth:`SimProcess.stop` closes only its own server. The shared process ends with
this one (its stdin reaches end of file, and it watches this process id besides), or when
:func:`shutdown_shared_simulator` asks.
"""

from __future__ import annotations

import atexit
import collections
import itertools
import json
import os
import subprocess
import sys
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from pytest_sglang.base.errors import SGLangError, TargetError

__all__ = ["PendingSimulator", "SimProcess", "begin_simulator", "shutdown_shared_simulator", "start_simulator"]

_STDERR_LINES_KEPT = 20
_EXIT_WAIT_SECONDS = 5.0


class _Gone(Exception):
    """The shared simulator process has ended; the message says why, in one line."""


@dataclass(frozen=True)
class _Asked:
    """A command sent to the shared simulator, and the answer still to come."""

    key: int
    op: Any
    answer: Future[dict[str, Any]]


class _SharedSimulator:
    """One ``--serve-many`` simulator process and the control channel to it.

    Any thread may :meth:`ask`: commands carry an id and a reader thread hands each answer to
    the thread that waits for it, so a fleet opened one thread per host opens in parallel."""

    def __init__(self) -> None:
        cmd = [sys.executable, "-m", "pytest_sglang.simulator", "--serve-many", "--host", "127.0.0.1"]
        # It stops by itself when this process ends, however that happens (SIGTERM, SIGKILL, a crash).
        cmd += ["--parent-pid", str(os.getpid())]
        env = dict(os.environ)
        # Keys travel in the commands, per host; none is inherited from this environment.
        env.pop("SGLANG_API_KEY", None)
        env.pop("PYTEST_SGLANG_SIM_ADMIN_API_KEY", None)
        pipe = subprocess.PIPE
        # errors="replace": a reader thread that died on a stray byte would leave the pipe full.
        self.process = subprocess.Popen(cmd, stdin=pipe, stdout=pipe, stderr=pipe, text=True, errors="replace", env=env)
        self._owner = os.getpid()  # a forked child inherits this object, not the right to use it
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # the waiting answers and whether the process is gone
        self._write_lock = threading.Lock()
        self._waiting: dict[int, Future[dict[str, Any]]] = {}
        self._abandoned: set[int] = set()  # opens whose caller stopped waiting: close them on arrival
        self._gone: str | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES_KEPT)
        self._stderr_reader = threading.Thread(target=self._read_stderr, name="sim-shared-stderr", daemon=True)
        self._stderr_reader.start()
        threading.Thread(target=self._read_answers, name="sim-shared-answers", daemon=True).start()

    @property
    def alive(self) -> bool:
        return self._gone is None and self.process.poll() is None and os.getpid() == self._owner

    def ask(self, command: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one command and wait for its answer; raises _Gone or TimeoutError."""
        return self.answer(self.send(command), timeout)

    def send(self, command: dict[str, Any]) -> _Asked:
        """Send one command; :meth:`answer` waits for what it answers. Raises _Gone."""
        answer: Future[dict[str, Any]] = Future()
        with self._lock:
            if self._gone is not None:
                raise _Gone(self._gone)
            key = next(self._ids)
            self._waiting[key] = answer
        try:
            self._send({**command, "id": key})
        except _Gone:
            with self._lock:
                self._waiting.pop(key, None)
            raise
        return _Asked(key, command.get("op"), answer)

    def answer(self, asked: _Asked, timeout: float) -> dict[str, Any]:
        """The answer to a command :meth:`send` sent; raises _Gone or TimeoutError (an open
        whose answer comes later is closed on arrival)."""
        try:
            return asked.answer.result(timeout)
        except _Gone:
            with self._lock:
                self._waiting.pop(asked.key, None)
            raise
        except FutureTimeout:
            with self._lock:
                if self._waiting.pop(asked.key, None) is not None and asked.op == "open":
                    self._abandoned.add(asked.key)
            raise TimeoutError(f"no answer within {timeout:g} s") from None

    def _send(self, command: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        if os.getpid() != self._owner:  # its answers would reach the parent's reader, not ours
            raise _Gone(f"the shared simulator belongs to process {self._owner}")
        try:
            with self._write_lock:
                self.process.stdin.write(json.dumps(command) + "\n")
                self.process.stdin.flush()
        except (OSError, ValueError):  # the pipe is broken or closed: the reader reports why
            self._stderr_reader.join(1.0)
            raise _Gone(self._gone or self._why_gone()) from None

    def _read_answers(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                answer = json.loads(line)
            except ValueError:
                continue  # not ours (a stray print); answers are one JSON object a line
            if isinstance(answer, dict):
                self._deliver(answer)
        self._stderr_reader.join(_EXIT_WAIT_SECONDS)  # its last line says why, if anything does
        self.process.wait()
        with self._lock:
            self._gone = self._why_gone()
            waiting, self._waiting = list(self._waiting.values()), {}
        for answer in waiting:
            answer.set_exception(_Gone(self._gone))

    def _deliver(self, answer: dict[str, Any]) -> None:
        key = answer.get("id")
        with self._lock:
            waiting = self._waiting.pop(key, None) if isinstance(key, int) else None
            abandoned = key in self._abandoned
            self._abandoned.discard(key)
        if waiting is not None:
            waiting.set_result(answer)
        elif abandoned and isinstance(answer.get("server"), int):
            try:
                self._send({"op": "close", "id": 0, "server": answer["server"]})
            except _Gone:
                pass

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            if line.strip():
                self._stderr.append(line.strip())

    def _why_gone(self) -> str:
        detail = self._stderr[-1] if self._stderr else f"the simulator process exited (code {self.process.poll()})"
        return detail.removeprefix("error: ")

    def close_server(self, server: int, timeout: float) -> None:
        """Stop one server; its port is free on return (unless the process did not answer)."""
        try:
            self.ask({"op": "close", "server": server}, timeout)
        except (_Gone, TimeoutError):
            pass  # a process that is gone serves nothing any more

    def shutdown(self, timeout: float) -> None:
        """Stop every server and the process: no more opens, then end of input."""
        if os.getpid() != self._owner:
            return
        try:
            self._send({"op": "exit"})
        except _Gone:
            pass
        if self.process.stdin is not None:
            try:
                with self._write_lock:
                    self.process.stdin.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout)


_shared: _SharedSimulator | None = None
_shared_lock = threading.Lock()


def _shared_simulator() -> _SharedSimulator:
    """This process's shared simulator, started (or started again, if it ended) on demand."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.alive:
            _shared = _SharedSimulator()
        return _shared


def shutdown_shared_simulator(timeout: float = _EXIT_WAIT_SECONDS) -> None:
    """End this process's shared simulator and every host it serves; the next
    :func:`start_simulator` starts a fresh one. Runs by itself when this process exits."""
    global _shared
    with _shared_lock:
        shared, _shared = _shared, None
    if shared is not None:
        shared.shutdown(timeout)


def _forget_after_fork() -> None:
    """A forked child shares the parent's pipes: it must start a simulator of its own."""
    global _shared, _shared_lock
    _shared, _shared_lock = None, threading.Lock()


atexit.register(shutdown_shared_simulator)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


@dataclass
class SimProcess:
    """One simulated host: a server of this process's shared simulator process.

    ``process`` is that shared process (so its ``pid`` is the same for every host it serves);
    ``stop()`` closes this host's server only."""

    profile: str
    url: str
    process: subprocess.Popen[str] = field(repr=False)
    server: int = 0
    ready: bool = False  # its /health answered 200 already when it opened
    _shared: _SharedSimulator | None = field(default=None, repr=False)

    def stop(self, timeout: float = 5.0) -> None:
        """Close this host's server (idempotent); the port is free once it returns."""
        shared, self._shared = self._shared, None
        if shared is not None:
            shared.close_server(self.server, timeout)


def start_simulator(
    profile: str,
    *,
    api_key: str | None = None,
    admin_api_key: str | None = None,
    startup_timeout: float = 30.0,
) -> SimProcess:
    """Serve ``profile`` on a free loopback port of the shared simulator process; returns once
    it listens. A profile that does not load fails here, before anything starts."""
    from pytest_sglang.simulator.profile import load_profile

    try:
        load_profile(profile)
    except SGLangError as exc:
        raise TargetError(f"simulator sim://{profile} did not start: {exc}") from None
    return begin_simulator(profile, api_key=api_key, admin_api_key=admin_api_key).wait(startup_timeout)


@dataclass
class PendingSimulator:
    """A host asked of the shared simulator, whose answer is still to come: what the caller
    has to do meanwhile (the simulator process may be starting) runs before :meth:`wait`."""

    profile: str
    _shared: _SharedSimulator = field(repr=False)
    _asked: _Asked | None = field(default=None, repr=False)
    _error: str | None = None

    def wait(self, timeout: float = 30.0) -> SimProcess:
        """The host, listening; TargetError with the simulator's one-line reason if not."""
        profile, shared = self.profile, self._shared
        if self._asked is None:
            raise TargetError(f"simulator sim://{profile} did not start: {self._error}")
        try:
            answer = shared.answer(self._asked, timeout)
        except (_Gone, TimeoutError) as exc:
            raise TargetError(f"simulator sim://{profile} did not start: {exc}") from None
        if "error" in answer or not isinstance(answer.get("url"), str):
            raise TargetError(f"simulator sim://{profile} did not start: {answer.get('error', 'no URL in its answer')}")
        return SimProcess(
            profile=profile, url=answer["url"], process=shared.process, server=answer["server"], ready=answer.get("ready") is True, _shared=shared
        )

    def cancel(self, timeout: float = 5.0) -> None:
        """Stop waiting: a host already opened is closed, one still to open is closed on arrival."""
        if self._asked is None:
            return
        try:
            answer = self._shared.answer(self._asked, 0)
        except (_Gone, TimeoutError):
            return  # not answered yet: answer() marked it abandoned, closed when it arrives
        if isinstance(answer.get("server"), int):
            self._shared.close_server(answer["server"], timeout)


def begin_simulator(profile: str, *, api_key: str | None = None, admin_api_key: str | None = None) -> PendingSimulator:
    """Ask the shared simulator process (started now if it is not running) to serve
    ``profile`` on a free loopback port, without waiting: :meth:`PendingSimulator.wait` does.
    The profile is the caller's to have loaded (:func:`start_simulator` does)."""
    # The shared process may have been started from another working directory.
    where = os.path.abspath(profile) if profile.endswith(".json") else profile
    command = {
        "op": "open",
        "profile": where,
        "api_key": api_key or None,
        # As when each host had a process of its own, which inherited this environment.
        "admin_api_key": admin_api_key or os.environ.get("PYTEST_SGLANG_SIM_ADMIN_API_KEY") or None,
    }
    shared = _shared_simulator()
    try:
        return PendingSimulator(profile, shared, shared.send(command))
    except _Gone as exc:
        return PendingSimulator(profile, shared, None, str(exc))
