"""Paths and helpers the tests share: the corpus and the SGLang artefacts in tests/data."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
CORPUS = DATA / "corpus"
ARTEFACTS = DATA / "artefacts" / "sglang-0.5.23-cpu"


def corpus_text(path: Path) -> str:
    """A corpus file without its three header lines."""
    return path.read_text(encoding="utf-8", errors="replace").split("\n", 3)[3]


def corpus_files(folder: str) -> list[Path]:
    """Every file of a corpus folder. The corpus is part of the repository: an empty or missing
    folder is an error, not a reason to skip."""
    files = sorted((CORPUS / folder).glob("*.txt"))
    if not files:
        raise FileNotFoundError(f"no corpus files in {CORPUS / folder} (the corpus is part of the repository)")
    return files


def artefact(name: str) -> str:
    """A file of the SGLang 0.5.23 artefacts; a missing one raises (it is part of the repository)."""
    return (ARTEFACTS / name).read_text()


def report_counts(**given: int) -> dict[str, int]:
    """pytest's counts as a JSON report keeps them: every category, zero unless given."""
    return {**dict.fromkeys(("failed", "passed", "skipped", "xfailed", "xpassed", "error"), 0), **given}


def host_section(host: str, **given: Any) -> dict[str, Any]:
    """One host's section of a JSON report, complete as the schema requires: the fields given,
    the others empty (not read, nothing found, no test)."""
    empty: dict[str, Any] = {"verdict": "promote", "reasons": [], "error": None, "warnings": [], "facts": None, "effective": {}, "findings": [], "explain_error": None}
    return {"host": host, **empty, "tests": [], "counts": report_counts(), "checks": [], "benchmarks": [], **given}


def report_document(hosts: list[dict[str, Any]], **given: Any) -> dict[str, Any]:
    """A whole JSON report around these host sections, complete as the schema requires."""
    run: dict[str, Any] = {"format": 1, "tool": {"name": "pytest-sglang", "version": "0"}, "created_at": "2026-01-01T00:00:00+00:00", "exit_status": 0}
    return {**run, "verdict": "promote", "reasons": [], "counts": report_counts(), "hosts": hosts, "run_checks": [], "tests_without_host": [], "collection_errors": [], **given}


def shape(value: object) -> object:
    """The structure of a JSON value without its data: keys, element shapes, scalar kinds.
    Numbers are one kind (SGLang prints 0.0 and 0 for the same field); null matches anything."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "str"


def shape_differences(got: object, want: object, path: str = "") -> list[str]:
    """Where ``got`` does not have the shape ``want`` has (null on either side matches)."""
    if got is None or want is None:
        return []
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{path or '.'}: {type(got).__name__} where an object is expected"]
        out = [f"{path}.{k}: missing" for k in want if k not in got]
        out += [f"{path}.{k}: not in the real answer" for k in got if k not in want]
        for k in want.keys() & got.keys():
            out += shape_differences(got[k], want[k], f"{path}.{k}")
        return out
    if isinstance(want, list):
        if not isinstance(got, list):
            return [f"{path}: {got!r} where a list is expected"]
        if want and got:
            return shape_differences(got[0], want[0], f"{path}[0]")
        return []
    return [] if got == want else [f"{path}: {got} where {want} is expected"]


def property_settings(**extra: Any) -> Any:
    """Hypothesis settings for the odd-input property tests. CI runs a fixed set of examples
    (derandomized), so it cannot fail by chance; ``ODD_VALUES_EXAMPLES=10000 pytest ...`` runs
    a deeper, random search."""
    import os

    import hypothesis

    deep = "ODD_VALUES_EXAMPLES" in os.environ
    examples = int(os.environ.get("ODD_VALUES_EXAMPLES", "300"))
    return hypothesis.settings(max_examples=examples, deadline=None, derandomize=not deep, **extra)


# ---- skips for a missing system package ----------------------------------------------------------
# A test that skips because a system package is missing says so in its reason, either with the
# note ``[missing system packages: openssh-server systemd-journal-remote]`` (the test host's
# reason) or with ``(apt-get install PACKAGE)``. The run ends with one line summing them up.

_NOTE = re.compile(r"\[missing system packages: ([^\]]*)\]")
_APT = re.compile(r"\(apt-get install ([^)]*)\)")


def missing_packages_note(text: str) -> str:
    """The machine-readable note for a skip reason that names packages as ``(apt-get install X)``
    ("" when it names none)."""
    packages = packages_in_skip_reason(text)
    return f"[missing system packages: {' '.join(packages)}]" if packages else ""


def packages_in_skip_reason(reason: str) -> list[str]:
    """The Debian packages a skip reason says are missing (none for any other skip)."""
    note = _NOTE.search(reason)
    words = note.group(1).split() if note else [w for found in _APT.findall(reason) for w in found.split()]
    return list(dict.fromkeys(words))


def missing_packages_summary(reasons: Iterable[str]) -> str | None:
    """One line for the end of the run: how many tests skipped for missing system packages and
    what to install; None when no test did. ``reasons`` holds one skip reason per skipped test."""
    count = 0
    packages: dict[str, None] = {}
    for reason in reasons:
        found = packages_in_skip_reason(reason)
        if found:
            count += 1
            packages.update(dict.fromkeys(found))
    if not count:
        return None
    tests = "1 test" if count == 1 else f"{count} tests"
    return f"pytest-sglang tests: {tests} skipped because system packages are missing: apt-get install {' '.join(sorted(packages))}"


def skip_reasons(reports: Iterable[Any]) -> list[str]:
    """One reason per skipped test, from the terminal reporter's ``skipped`` reports (a test
    skipped in setup, call or teardown counts once; ``--dist`` workers' reports included)."""
    out: dict[str, str] = {}
    for report in reports:
        longrepr = getattr(report, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3 else str(longrepr)
        out.setdefault(getattr(report, "nodeid", str(id(report))), str(reason))
    return list(out.values())


def write_missing_packages_line(terminalreporter: Any) -> None:
    """Write the summary line, if any tests skipped for missing system packages."""
    line = missing_packages_summary(skip_reasons(terminalreporter.stats.get("skipped", [])))
    if line:
        terminalreporter.write_line(line, yellow=True, bold=True)


# ---- processes and reads that must not hang ------------------------------------------------------


def process_running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting for a reaper that never reaps counts as gone)."""
    if Path("/proc/self/stat").exists():
        try:
            return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] not in ("Z", "X")
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def gone_within(pid: int, seconds: float) -> bool:
    """Whether ``pid`` stops running within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not process_running(pid):
            return True
        time.sleep(0.1)
    return not process_running(pid)


@contextmanager
def fails_if_blocked(seconds: int) -> Iterator[None]:
    """A read that blocks (a FIFO opened for reading waits for a writer) fails the test by an
    alarm after ``seconds`` instead of hanging the run."""

    def expired(signum, frame):  # type: ignore[no-untyped-def]
        raise AssertionError(f"blocked for {seconds} s: a read must fail at once, not wait")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Canned:
    """``routes[path] = (status, body: bytes | dict, delay_seconds)``; records requests."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, object, float]] = {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.headers: dict[str, str] = {}  # extra answer headers (e.g. a redirect's Location)
        handler = self._handler()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def _handler(self):
        canned = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                canned.requests.append(("GET", self.path, dict(self.headers)))
                status, body, delay = canned.routes.get(self.path.split("?")[0], (404, b'{"detail":"Not Found"}', 0.0))
                if delay:
                    time.sleep(delay)
                data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in canned.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (the timeout tests): nothing to answer

            do_POST = do_GET

        return Handler

    def serve_sglang(self, server_info: dict, model_info: dict) -> "Canned":
        self.routes["/server_info"] = (200, server_info, 0.0)
        self.routes["/get_server_info"] = (200, server_info, 0.0)
        self.routes["/model_info"] = (200, model_info, 0.0)
        self.routes["/health"] = (200, b"", 0.0)
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
