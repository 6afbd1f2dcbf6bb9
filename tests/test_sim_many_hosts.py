"""Many sim:// hosts in one simulator process: one process per test process, a port, profile,
key and queueing model per host, each stopped on its own, and gone with the process that
started it."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from support import gone_within, process_running

import pytest_sglang.simulator
from pytest_sglang.base.errors import TargetError
from pytest_sglang.simulator.launcher import SimProcess, begin_simulator, start_simulator

BASELINE = "qwen35-122b-a10b-4xrtx6000-baseline"  # 0.5.12, metrics on
CANDIDATE = "qwen35-122b-a10b-4xrtx6000-candidate"
NEW = "qwen35-122b-a10b-4xrtx6000-0.5.23"
LLAMA = "llama31-8b-1xh100-0.5.9"
REPO = Path(__file__).resolve().parents[1]
PROC = Path("/proc/self/stat").exists()


@pytest.fixture
def started() -> Iterator[list[SimProcess]]:
    """Hosts a test starts; every one is stopped afterwards."""
    hosts: list[SimProcess] = []
    yield hosts
    for host in hosts:
        host.stop()


def _start(hosts: list[SimProcess], profile: str, **keys: str) -> SimProcess:
    host = start_simulator(profile, **keys)
    hosts.append(host)
    return host


def _shared_children() -> list[int]:
    """The ``--serve-many`` simulator processes this process started (Linux)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] not in ("Z", "X") and b"--serve-many" in cmdline:
            found.append(int(stat.parent.name))
    return found


def _metric(url: str, name: str) -> float:
    text = requests.get(url + "/metrics", timeout=10).text
    match = re.search(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", text, re.M)
    assert match is not None, f"{name} not in /metrics of {url}"
    return float(match.group(1))


def test_one_process_serves_several_profiles_and_two_instances_of_one(started: list[SimProcess]) -> None:
    hosts = [_start(started, name) for name in (BASELINE, BASELINE, CANDIDATE, NEW, LLAMA)]
    assert len({host.url for host in hosts}) == len(hosts)  # a port each
    assert len({host.process.pid for host in hosts}) == 1
    if PROC:
        assert _shared_children() == [hosts[0].process.pid]
    versions = [requests.get(host.url + "/get_server_info", timeout=10).json()["version"] for host in hosts]
    assert versions == ["0.5.12", "0.5.12", "0.5.12", "0.5.23", "0.5.9"]
    states = [requests.get(h.url + "/get_server_info", timeout=10).json()["internal_states"][0] for h in hosts[1:3]]
    caps = [state["effective_max_running_requests_per_dp"] for state in states]
    assert caps == [48, 26]  # the baseline and the candidate, each from its own profile


def test_hosts_opened_from_many_threads_at_once_share_the_process(started: list[SimProcess]) -> None:
    results: list[SimProcess] = []
    threads = [threading.Thread(target=lambda: results.append(start_simulator(BASELINE))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    started.extend(results)
    assert len(results) == 8
    assert len({host.url for host in results}) == 8
    assert len({host.process.pid for host in results}) == 1
    assert all(requests.get(host.url + "/health", timeout=10).status_code == 200 for host in results)


def _listening_ports(pid: int) -> set[int]:
    """The TCP ports process ``pid`` listens on (Linux: its socket inodes in /proc/net/tcp)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
            ports.add(int(fields[1].rpartition(":")[2], 16))
    return ports


def test_a_host_listens_and_is_healthy_once_its_open_is_answered(started: list[SimProcess]) -> None:
    """Why a sim:// target reads a host at once, without polling /health first."""
    host = _start(started, BASELINE)
    assert host.ready is True
    assert requests.get(host.url + "/health", timeout=10).status_code == 200


@pytest.mark.skipif(not PROC, reason="reads /proc")
@pytest.mark.parametrize("when", ["before its answer", "after its answer"])
def test_a_host_given_up_is_closed_whenever_its_answer_comes(started: list[SimProcess], when: str) -> None:
    """A sim:// target that fails while its host opens (making the host's facts) gives the
    host up: it is closed whether the simulator had answered yet or not, and nothing else is."""
    kept = _start(started, NEW)  # the shared process is running, and keeps serving this one
    pid = kept.process.pid
    before = _listening_ports(pid)
    pending = begin_simulator(BASELINE)
    if when == "after its answer":
        pending._asked.answer.result(30)  # type: ignore[union-attr]
        assert len(_listening_ports(pid)) == len(before) + 1
    pending.cancel()
    deadline = time.monotonic() + 10
    while _listening_ports(pid) != before:
        assert time.monotonic() < deadline, f"the host given up {when} still listens"
        time.sleep(0.05)
    assert requests.get(kept.url + "/health", timeout=10).status_code == 200


def test_two_instances_of_one_profile_keep_their_own_state_and_keys(started: list[SimProcess]) -> None:
    first = _start(started, BASELINE)
    second = _start(started, BASELINE, api_key="second-key", admin_api_key="second-admin")
    before = _metric(second.url, "sglang:prompt_tokens_total")
    answer = requests.post(first.url + "/generate", json={"text": "one two three", "sampling_params": {"max_new_tokens": 4}}, timeout=10)
    assert answer.status_code == 200
    assert _metric(first.url, "sglang:prompt_tokens_total") > 0
    assert _metric(second.url, "sglang:prompt_tokens_total") == before
    # Keys are per host: the first has none, the second its own.
    assert requests.get(first.url + "/get_server_info", timeout=10).status_code == 200
    assert requests.get(second.url + "/get_server_info", timeout=10).status_code == 401
    keyed = requests.get(second.url + "/get_server_info", headers={"Authorization": "Bearer second-key"}, timeout=10)
    assert keyed.json()["api_key"] == "second-key"
    assert requests.post(second.url + "/flush_cache", headers={"Authorization": "Bearer second-key"}, timeout=10).status_code == 401
    assert requests.post(second.url + "/flush_cache", headers={"Authorization": "Bearer second-admin"}, timeout=10).status_code == 200


def test_stopping_one_host_leaves_the_others_serving(started: list[SimProcess]) -> None:
    stopped, kept = _start(started, BASELINE), _start(started, NEW)
    stopped.stop()
    stopped.stop()  # idempotent
    with pytest.raises(requests.ConnectionError):
        requests.get(stopped.url + "/health", timeout=5)
    assert requests.get(kept.url + "/health", timeout=10).status_code == 200
    assert process_running(kept.process.pid)
    another = _start(started, BASELINE)  # the same process opens more after a stop
    assert another.process.pid == kept.process.pid
    assert requests.get(another.url + "/health", timeout=10).status_code == 200


def test_a_relative_profile_file_is_found_from_the_callers_directory(
    started: list[SimProcess], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shared process may have been started from another directory than the caller's now."""
    _start(started, LLAMA)  # the shared process runs, started from the directory before
    source = Path(pytest_sglang.simulator.__file__).parent / "profiles" / f"{NEW}.json"
    shutil.copyfile(source, tmp_path / "mine.json")
    monkeypatch.chdir(tmp_path)
    host = _start(started, "mine.json")
    assert requests.get(host.url + "/get_server_info", timeout=10).json()["version"] == "0.5.23"


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        ("no-such-profile", "simulator sim://no-such-profile did not start: unknown simulator profile 'no-such-profile'; bundled profiles: "),
        ("missing.json", "simulator sim://missing.json did not start: simulator profile file missing.json does not exist"),
    ],
)
def test_a_bad_profile_fails_in_one_line_before_anything_starts(profile: str, message: str) -> None:
    script = f"""
import sys
from pytest_sglang.simulator import launcher
try:
    launcher.start_simulator({profile!r})
except launcher.TargetError as exc:
    print(str(exc))
print(launcher._shared is None)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=REPO)
    error, nothing_started = done.stdout.splitlines()
    assert error.startswith(message)
    assert nothing_started == "True"


def test_a_bad_profile_leaves_the_running_hosts_alone(started: list[SimProcess]) -> None:
    host = _start(started, BASELINE)
    with pytest.raises(TargetError, match=r"^simulator sim://nope did not start: unknown simulator profile 'nope'") as raised:
        start_simulator("nope")
    assert "\n" not in str(raised.value)
    assert requests.get(host.url + "/health", timeout=10).status_code == 200


PARENT = """
import os, signal, sys
from pytest_sglang.simulator.launcher import start_simulator
hosts = [start_simulator({baseline!r}), start_simulator({new!r})]
print(hosts[0].process.pid, hosts[0].url, hosts[1].url, flush=True)
if {kill!r}:
    os.kill(os.getpid(), signal.SIGKILL)  # no atexit, no finaliser: only the pipe and the pid tell
# ends without stopping them
"""


@pytest.mark.parametrize("kill", [False, True], ids=["exits", "killed"])
def test_the_shared_process_ends_with_the_process_that_started_it(kill: bool) -> None:
    parent = subprocess.run(
        [sys.executable, "-c", PARENT.format(baseline=BASELINE, new=NEW, kill=kill)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    pid_text, *urls = parent.stdout.split()
    pid = int(pid_text)
    try:
        assert gone_within(pid, 5), f"shared simulator {pid} outlived its parent"
        for url in urls:
            with pytest.raises(requests.ConnectionError):
                requests.get(url + "/health", timeout=5)
    finally:
        if process_running(pid):
            os.kill(pid, signal.SIGKILL)


def _command(process: subprocess.Popen[str], command: dict[str, object]) -> dict[str, object]:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(command) + "\n")
    process.stdin.flush()
    answer: dict[str, object] = json.loads(process.stdout.readline())
    return answer


def test_serve_many_exits_once_the_last_server_closes_after_exit_is_asked() -> None:
    """The control channel itself: open, close, a one-line error, and exit when idle."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest_sglang.sim", "--serve-many"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        one = _command(process, {"op": "open", "id": 1, "profile": BASELINE})
        two = _command(process, {"op": "open", "id": 2, "profile": LLAMA, "api_key": "k"})
        assert one["pid"] == two["pid"] == process.pid and one["url"] != two["url"]
        bad = _command(process, {"op": "open", "id": 3, "profile": "nope"})
        assert bad["id"] == 3 and str(bad["error"]).startswith("unknown simulator profile 'nope'")
        assert _command(process, {"op": "close", "id": 4, "server": one["server"]}) == {"id": 4, "closed": one["server"]}
        assert process.stdin is not None
        process.stdin.write(json.dumps({"op": "exit"}) + "\n")
        process.stdin.flush()
        time.sleep(0.3)
        assert process.poll() is None  # the second host still serves
        assert requests.get(f"{two['url']}/health", timeout=10).status_code == 200
        assert _command(process, {"op": "close", "id": 5, "server": two["server"]})["closed"] == two["server"]
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def test_an_open_that_fails_unexpectedly_is_answered_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever goes wrong opening a host, its caller gets an answer at once, not a wait for its
    whole start-up timeout (30 s) ending in "no answer"."""
    import io

    from pytest_sglang.simulator import many

    def broken(command: dict, host: str) -> None:
        raise RuntimeError("a bug while binding")

    monkeypatch.setattr(many, "_bound_server", broken)
    commands_r, commands_w = os.pipe()
    answers = io.StringIO()
    hosts = many.ManyHosts(commands_r, answers)
    thread = threading.Thread(target=hosts.serve_forever, daemon=True)
    thread.start()
    try:
        os.write(commands_w, json.dumps({"op": "open", "id": 7, "profile": BASELINE}).encode() + b"\n")
        deadline = time.monotonic() + 10
        while not answers.getvalue():
            assert time.monotonic() < deadline, "the open was never answered"
            time.sleep(0.02)
    finally:
        hosts.stop()
        thread.join(10)
        os.close(commands_w)
        os.close(commands_r)
    assert json.loads(answers.getvalue()) == {"id": 7, "error": "opening the host failed (RuntimeError: a bug while binding)"}


def test_every_control_line_is_answered_deep_long_or_broken() -> None:
    """A 100,000-deep JSON line, a line of 3 MiB, and a line cut short each get one error line
    (with the command's id when it stands at the top level), never a traceback; the command
    after them in the same read is answered as ever."""
    from pytest_sglang.simulator.many import MAX_COMMAND_BYTES

    process = subprocess.Popen(
        [sys.executable, "-m", "pytest_sglang.sim", "--serve-many"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert process.stdin is not None and process.stdout is not None
    deep = b'{"op": "open", "id": 1, "profile": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    lines = [deep, b"[" * 100_000, b"x" * (3 * MAX_COMMAND_BYTES), b'{"op": "open", "id": 4, "profile": "qwen', json.dumps({"op": "open", "id": 5, "profile": BASELINE}).encode()]
    try:
        process.stdin.write(b"\n".join(lines) + b"\n")
        process.stdin.flush()
        answers = []
        for _ in lines:
            # a bound on a hang, not a speed goal: the last line loads a profile, slow on a loaded machine
            ready = select.select([process.stdout], [], [], 180)[0]
            assert ready, f"no answer after {answers}"
            answers.append(json.loads(process.stdout.readline()))
        assert answers[:4] == [
            {"id": 1, "error": "a command nests more than 8 levels deep: not a command"},
            {"id": None, "error": "a command nests more than 8 levels deep: not a command"},
            {"id": None, "error": f"a command line is longer than {MAX_COMMAND_BYTES} bytes: not a command"},
            {"id": None, "error": "a command must be one JSON object a line"},
        ]
        assert answers[4]["id"] == 5 and requests.get(f"{answers[4]['url']}/health", timeout=10).status_code == 200
        process.stdin.close()
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.stderr is not None and process.stderr.read() == b""
