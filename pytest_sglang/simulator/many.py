"""Many simulated hosts in one process: the shared simulator of a test session.

A Python process per ``sim://`` host costs a fresh interpreter each (about 0.2 s of CPU), so
a fleet of 32 took seconds to open. Instead each process that opens ``sim://`` hosts starts
one simulator process (:mod:`.launcher`) and asks it for one more server per host: every
server is a :class:`~pytest_sglang.simulator.server.SimServer` of its own (its own profile, keys,
engine and metrics) on its own loopback port, and all of them share one event loop. (A
thread and loop per server read a fleet no faster and used as much CPU under load, but sent
tokens bunched: the threads take turns at the GIL. One loop sends each token when it is due.)

The control channel is a line of JSON per command on stdin and per answer on stdout:

- ``{"op": "open", "id": 1, "profile": NAME_OR_ABSOLUTE_PATH, "api_key": K, "admin_api_key": K}``
  answers ``{"id": 1, "server": 7, "url": "http://127.0.0.1:PORT", "pid": PID, "ready": true}``
  (``ready``: its ``/health`` answers 200 already), or
  ``{"id": 1, "error": "one line"}`` when the profile does not load or no port is free;
- ``{"op": "close", "id": 2, "server": 7}`` stops that server (its port is free once the
  answer ``{"id": 2, "closed": 7}`` arrives); the others keep serving;
- ``{"op": "exit"}``: open no more servers, and exit once the last one has closed.

Every line gets one answer line, whatever it holds: a line that is not a command (not JSON,
nested deeper than 8 levels, longer than :data:`MAX_COMMAND_BYTES`) is answered
``{"id": ID, "error": "one line"}``, with its ``id`` when one stands at its top level, so its
caller never waits for an answer that does not come; nothing is printed on stderr.

End of input means the parent has gone (or asked us to stop): every server closes and the
process exits. So do SIGTERM, SIGINT and, with ``--parent-pid``, the parent's end.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
from collections.abc import Coroutine
from typing import IO, Any

from pytest_sglang.base.errors import SGLangError
from pytest_sglang.base.files import nesting_too_deep
from pytest_sglang.base.secrets import clip
from pytest_sglang.simulator.aio import Waker, new_event_loop
from pytest_sglang.simulator.profile import load_profile
from pytest_sglang.simulator.server import SimServer

__all__ = ["ManyHosts"]

_READ_SIZE = 65536
# A command is a flat object of a few short fields: far below both limits.
MAX_COMMAND_BYTES = 1024 * 1024
_MAX_COMMAND_DEPTH = 8
_TOP_LEVEL_ID = re.compile(rb'\s*:\s*(-?\d{1,18})\s*[,}]')


def _bound_server(command: dict[str, Any], host: str) -> SimServer:
    """The server a command asks for, listening; raises SGLangError with a one-line reason."""
    profile = command.get("profile")
    if not isinstance(profile, str) or not profile:
        raise SGLangError("the open command names no profile")
    server = SimServer(
        load_profile(profile),
        host,
        0,
        api_key=command.get("api_key") or None,
        admin_api_key=command.get("admin_api_key") or None,
    )
    return server.bind()


def _top_level_id(line: bytes) -> int | None:
    """The ``"id"`` of a line that is not read as JSON, when it stands at its top level (so the
    caller waiting for it gets its answer); None otherwise. One linear scan."""
    depth, pos = 0, 0
    while True:
        m = _SPECIAL.search(line, pos)
        if m is None:
            return None
        ch, pos = m.group(), m.end()
        if ch == b'"':
            end = _string_end(line, pos)
            if end < 0:
                return None
            if depth == 1 and line[pos : end - 1] == b"id":
                found = _TOP_LEVEL_ID.match(line, end)
                if found:
                    return int(found.group(1))
            pos = end
        elif ch in b"[{":
            depth += 1
        else:
            depth -= 1


_SPECIAL = re.compile(rb'["\[\]{}]')


def _string_end(line: bytes, start: int) -> int:
    """The index after the quote closing the string whose text starts at ``start``, or -1."""
    pos = start
    while True:
        q = line.find(b'"', pos)
        if q < 0:
            return -1
        b = q
        while b > start and line[b - 1] == 0x5C:  # backslashes before it: escaped when odd
            b -= 1
        if (q - b) % 2 == 0:
            return q + 1
        pos = q + 1


class ManyHosts:
    """Serves the hosts its commands open, on one event loop, until told to stop."""

    def __init__(self, commands: int, answers: IO[str], host: str = "127.0.0.1") -> None:
        self._commands = commands  # a file descriptor: read when the loop says it is readable
        self._answers = answers
        self._host = host
        self._pending = b""
        self._skipping = False  # inside a line longer than MAX_COMMAND_BYTES, answered already
        self._ids = itertools.count(1)
        self._servers: dict[int, tuple[SimServer, asyncio.Task[None]]] = {}
        self._commands_running: set[asyncio.Task[None]] = set()  # held, so they are not collected
        self._exit_when_idle = False
        self._stop_requested = False
        self._done: asyncio.Future[None] | None = None
        # stop() (a signal handler) wakes the loop at once.
        self._waker = Waker()

    def stop(self) -> None:
        """Close every server and return from :meth:`serve_forever` (safe in a signal handler)."""
        self._stop_requested = True
        self._waker.wake()

    def serve_forever(self) -> None:
        loop = new_event_loop()
        try:
            loop.run_until_complete(self._main())
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
            self._waker.close()

    async def _main(self) -> None:
        loop = asyncio.get_running_loop()
        self._done = loop.create_future()
        loop.add_reader(self._waker.reader, self._finish)
        loop.add_reader(self._commands, self._read_commands)
        if self._stop_requested:  # stop() ran before the reader was in place
            self._finish()
        try:
            await self._done
        finally:
            loop.remove_reader(self._commands)
            loop.remove_reader(self._waker.reader)
            await self._close_all()

    def _finish(self) -> None:
        if self._done is not None and not self._done.done():
            self._done.set_result(None)

    async def _close_all(self) -> None:
        for running in list(self._commands_running):
            running.cancel()
        servers, self._servers = list(self._servers.values()), {}
        for server, _ in servers:
            server.stop()
        await asyncio.gather(*(task for _, task in servers), return_exceptions=True)

    # ---- commands ---------------------------------------------------------------------------

    def _read_commands(self) -> None:
        try:
            data = os.read(self._commands, _READ_SIZE)
        except OSError:
            data = b""
        if not data:  # the parent has gone, or closed our input to stop us
            self._finish()
            return
        *lines, self._pending = (self._pending + data).split(b"\n")
        for line in lines:
            if self._skipping:  # the end of a line too long to be a command
                self._skipping = False
            elif line.strip():
                self._command(line)
        if len(self._pending) > MAX_COMMAND_BYTES and not self._skipping:
            self._answer({"id": None, "error": f"a command line is longer than {MAX_COMMAND_BYTES} bytes: not a command"})
            self._skipping = True
        if self._skipping:
            self._pending = b""

    def _command(self, line: bytes) -> None:
        """Answer one line, whatever it holds: every command gets one answer line, so its
        caller never waits for one that does not come."""
        try:
            self._dispatch(line)
        except Exception as exc:  # never a traceback, never a line left unanswered
            self._answer({"id": _top_level_id(line), "error": f"the command could not be run ({clip(f'{type(exc).__name__}: {exc}', 200)})"})

    def _dispatch(self, line: bytes) -> None:
        if len(line) > MAX_COMMAND_BYTES:
            self._answer({"id": None, "error": f"a command line is longer than {MAX_COMMAND_BYTES} bytes: not a command"})
            return
        text = line.decode("utf-8", errors="replace")
        if nesting_too_deep(text, _MAX_COMMAND_DEPTH) is not None:
            # json.loads recurses once a level: refused before it runs out of stack
            self._answer({"id": _top_level_id(line), "error": f"a command nests more than {_MAX_COMMAND_DEPTH} levels deep: not a command"})
            return
        try:
            command = json.loads(text)
        except ValueError:
            command = None
        if not isinstance(command, dict):
            self._answer({"id": None, "error": "a command must be one JSON object a line"})
            return
        op = command.get("op")
        if op == "open":
            self._run(self._open(command))
        elif op == "close":
            self._run(self._close(command))
        elif op == "exit":
            self._exit_when_idle = True
            self._finish_if_idle()
        else:
            self._answer({"id": command.get("id"), "error": f"unknown command {op!r}"})

    def _run(self, command: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(command)
        self._commands_running.add(task)
        task.add_done_callback(self._commands_running.discard)

    async def _open(self, command: dict[str, Any]) -> None:
        """Load and bind in a worker thread (a capture file may take a while to read), then
        serve on this loop."""
        key = command.get("id")
        if self._exit_when_idle:
            self._answer({"id": key, "error": "the simulator is exiting"})
            return
        loop = asyncio.get_running_loop()
        try:
            server = await loop.run_in_executor(None, _bound_server, command, self._host)
        except SGLangError as exc:
            self._answer({"id": key, "error": str(exc)})
            return
        except Exception as exc:  # never leave an open unanswered: its caller would wait its whole timeout
            self._answer({"id": key, "error": f"opening the host failed ({clip(f'{type(exc).__name__}: {exc}', 200)})"})
            return
        if self._done is None or self._done.done() or self._exit_when_idle:
            server.stop()
            self._answer({"id": key, "error": "the simulator is exiting"})
            return
        number = next(self._ids)
        self._servers[number] = (server, loop.create_task(server.serve_async()))
        # ready: its /health answers 200 already (a profile may model a warm-up of 503s first)
        self._answer({"id": key, "server": number, "url": server.url, "pid": os.getpid(), "ready": server.simulator.ready})

    async def _close(self, command: dict[str, Any]) -> None:
        number = command.get("server")
        found = self._servers.pop(number, None) if isinstance(number, int) else None
        if found is not None:
            server, task = found
            server.stop()
            await asyncio.gather(task, return_exceptions=True)
        self._answer({"id": command.get("id"), "closed": number})
        self._finish_if_idle()

    def _finish_if_idle(self) -> None:
        if self._exit_when_idle and not self._servers:
            self._finish()

    def _answer(self, answer: dict[str, Any]) -> None:
        try:
            self._answers.write(json.dumps(answer) + "\n")
            self._answers.flush()
        except (OSError, ValueError):  # the parent has gone: nobody is left to serve
            self._finish()
