"""Whatever a user writes in a host spec, it reaches the host as data, never as shell text.

Every value of the collection script goes through one quoting path (``host.assignments``): the
property tests below feed shell metacharacters through every spec field that reaches the script
(the log source of each kind, the unit, the port) into a real ``sh`` running the real script,
with fake ``tac``, ``docker``, ``kubectl``, ``journalctl``, ``systemctl`` and ``pgrep`` first on
PATH. Each fake records its argv; the test asserts that nothing else ran (no file appears in the
working directory) and that each tool received the value verbatim as ONE argument.
A deeper, random search: ODD_VALUES_EXAMPLES=10000 pytest tests/test_host_quoting.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from support import property_settings

from pytest_sglang.base.errors import SpecError, TargetError
from pytest_sglang.collect.host import HostOptions, assignments, collection_script, parse_output, script_values
from pytest_sglang.parse.logs import LogSource

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

SETTINGS = property_settings()
TOOLS = ("tac", "docker", "kubectl", "journalctl", "systemctl", "pgrep")
INVOCATION = "0123456789abcdef0123456789abcdef"

# Each fake writes its argv (NUL-separated, its name first) to a file of its own in $CALLS
# (named by its process id).
FAKE = r"""#!/bin/sh
printf '%s\0' "${0##*/}" "$@" > "$CALLS/$$"
case "${0##*/}" in
  docker) [ "$1" = inspect ] && echo 2026-12-02T10:00:00.123456789Z ;;
  systemctl) case " $* " in *" InvocationID "*) echo "$INVOCATION" ;; esac ;;
esac
exit 0
"""

# Fragments a shell would act on if a value ever became shell text: each one that ran would
# leave a file named PWNED (or another file) in the working directory.
PAYLOADS = [
    "$(touch PWNED)", "`touch PWNED`", "; touch PWNED", "' ; touch PWNED ; '", '" ; touch PWNED ; "',
    "\ntouch PWNED\n", "| touch PWNED", "& touch PWNED", "&& touch PWNED #", ">PWNED", "<x", "*", "?",
    "-n", "--help", "-", " ", "\t", "ü", "日本語", "\\", "\\'", "$HOME", "${IFS}", "$1", "!", "#", "~",
    "(", ")", "{", "}", "=", "%s", "%n", "\r", "\x1b[31m", "sglang.service",
]  # fmt: skip
TEXT = st.text(alphabet=st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=8)
VALUES = st.lists(st.one_of(st.sampled_from(PAYLOADS), TEXT), min_size=1, max_size=5).map("".join)
# A file name: no '/', not '.' or '..', and short enough for any file system.
NAMES = VALUES.map(lambda v: v.replace("/", "_")).filter(lambda v: v.strip() and v not in (".", "..") and len(v.encode()) < 200)
PARTS = VALUES.map(lambda v: v.replace("/", "_"))  # kubectl's namespace, pod and container hold no '/'


@pytest.fixture(scope="module")
def fake_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bin_dir = tmp_path_factory.mktemp("fake-bin")
    for tool in TOOLS:
        (bin_dir / tool).write_text(FAKE)
        (bin_dir / tool).chmod(0o755)
    return bin_dir


def run_script(options: HostOptions, fake_bin: Path, work: Path) -> tuple[str, list[list[str]]]:
    """Run the collection script with sh in ``work``; (stdout, the fake tools' argvs)."""
    calls = work.parent / "calls"
    calls.mkdir()
    env = {
        "PATH": f"{fake_bin}:/usr/bin:/bin",  # no nvidia-smi there
        "CALLS": str(calls),
        "INVOCATION": INVOCATION,
        "HOME": str(work.parent),
        "LC_ALL": "C.UTF-8",
    }
    done = subprocess.run(["sh", "-c", collection_script(options)], cwd=work, env=env, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    argvs = [f.read_bytes().decode(errors="surrogateescape").split("\0")[:-1] for f in sorted(calls.iterdir())]
    return done.stdout.decode(errors="replace"), argvs


def called(argvs: list[list[str]], tool: str) -> list[list[str]]:
    return [argv[1:] for argv in argvs if argv[0] == tool]


@SETTINGS
@hypothesis.given(
    kind=st.sampled_from(["file", "journald", "docker", "kubectl", None]),
    unit=st.one_of(st.none(), VALUES),
    port=st.one_of(st.none(), VALUES),
    data=st.data(),
)
def test_every_value_reaches_its_tool_as_one_verbatim_argument_and_nothing_else_runs(fake_bin, kind, unit, port, data):
    root = Path(tempfile.mkdtemp(prefix="quoting-"))
    try:
        work = root / "work"
        work.mkdir()
        expected_files = set()
        parts = None
        if kind == "file":
            target = name = data.draw(NAMES, label="file name")
            (work / name).write_text("")  # a relative name: a leading '-' stays one, too
            expected_files = {name}
        elif kind == "kubectl":
            parts = data.draw(st.tuples(PARTS, PARTS, st.one_of(st.none(), PARTS)), label="namespace, pod, container")
            target = "/".join(p for p in parts if p is not None)
        else:
            target = data.draw(VALUES, label="target") if kind else ""
        hypothesis.assume(kind is None or target.strip())  # LogSource refuses an empty target
        logs = LogSource.parse(f"{kind}:{target}") if kind else None
        options = HostOptions(unit=unit, logs=logs, port=port)  # type: ignore[arg-type]  # any text, not only a number
        out, argvs = run_script(options, fake_bin, work)

        # (1) Nothing but the tools ran: no PWNED, no file at all besides the log.
        assert set(os.listdir(work)) == expected_files

        # (2) Each tool got its value verbatim, as one argument.
        systemctl = called(argvs, "systemctl")
        for_unit = [argv for argv in systemctl if "MainPID" in argv]
        effective_unit = unit or (target if kind == "journald" else "")
        if effective_unit:
            assert len(for_unit) == 2 and all(argv[-2:] == ["--", effective_unit] for argv in for_unit)
        else:
            assert for_unit == []
        if kind == "file":
            assert called(argvs, "tac") == [["--", target]]
        elif kind == "journald":
            assert ["show", "-p", "InvocationID", "--value", "--", target] in systemctl
            (journal,) = called(argvs, "journalctl")
            assert journal[:3] == ["-u", target, f"_SYSTEMD_INVOCATION_ID={INVOCATION}"]
        elif kind == "docker":
            docker = sorted(called(argvs, "docker"))  # calls in any order: inspect, then logs
            assert docker == [
                ["inspect", "--type", "container", "--format", "{{.State.StartedAt}}", "--", target],
                ["logs", "--since", "2026-12-02T10:00:00.123456789Z", "--", target],
            ]
        elif kind == "kubectl" and parts is not None:
            namespace, pod, container = parts
            expected = ["logs", "-n", namespace] + (["-c", container] if container else []) + ["--", pod]
            assert called(argvs, "kubectl") == [expected]
        assert {argv[0] for argv in argvs} <= set(TOOLS)

        # And the answer parses: facts, or the one-line error of a log source that cannot be read.
        try:
            parse_output(out, where="local", options=options)
        except TargetError as exc:
            assert "\n" not in str(exc)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@SETTINGS
@hypothesis.given(
    kind=st.sampled_from(["file", "journald", "docker", "kubectl", "cmd"]),
    first=VALUES,
    second=VALUES,
    unit=st.one_of(st.none(), VALUES),
    port=st.one_of(st.none(), VALUES),
)
def test_values_change_only_the_quoted_assignments_never_the_script_text(kind, first, second, unit, port):
    """The mechanism itself: the script is its assignments followed by fixed text, the same for
    every value (so no f-string ever puts a value into shell text)."""
    bodies = set()
    for text in (first, second, "x/y/z"):
        text = text.replace("/", "_") + "/pod" if kind == "kubectl" else text
        hypothesis.assume(text.strip())
        options = HostOptions(unit=unit, logs=LogSource.parse(f"{kind}:{text}"), port=port)  # type: ignore[arg-type]
        script = collection_script(options)
        head = assignments(script_values(options))
        assert script.startswith(head)
        bodies.add(script[len(head) :])
    assert len(bodies) == 1


def test_the_assignments_give_back_each_value_exactly():
    values = {name: payload for name, payload in zip((f"v{i}" for i in range(len(PAYLOADS))), PAYLOADS)}
    script = assignments(values) + "".join(f'printf "%s\\0" "$sg_{name}"\n' for name in values)
    out = subprocess.run(["sh", "-c", script], capture_output=True, check=True).stdout.decode()
    assert out.split("\0")[:-1] == list(values.values())


def test_a_nul_character_is_one_usage_error_naming_the_option():
    with pytest.raises(SpecError, match=r"^`logs` holds a NUL character, which no command on the host can receive: remove it$"):
        collection_script(HostOptions(logs=LogSource.parse("file:/var/log/a\0b")))
    with pytest.raises(SpecError, match=r"^`unit` holds a NUL character"):
        collection_script(HostOptions(unit="a\0b"))


def test_a_cmd_source_is_the_one_free_text_and_it_runs_as_written(tmp_path):
    """cmd: is the user's own command (documented): it runs, pipes and all."""
    log = tmp_path / "x.log"
    log.write_text("server_args=ServerArgs(port=30000)\nDecode batch\n")
    options = HostOptions(logs=LogSource.parse(f"cmd:cat '{log}' | cat"))
    done = subprocess.run(["sh", "-c", collection_script(options)], capture_output=True, text=True, cwd=tmp_path, check=False)
    facts = parse_output(done.stdout, where="local", options=options)
    assert facts.log_lines == ["server_args=ServerArgs(port=30000)"]
