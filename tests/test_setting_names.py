"""Below the front ends, a message names a setting (``ssh_key``, ``logs``); each front end gives
it as its own option: the plugin's ``--sglang-ssh-key``, the command line's ``--ssh-key``.

Every message the library makes about a setting a user gives (an option's check, a target that
cannot be opened with what was given, a skip reason, a warning) is made here as a user meets it
and run through both front ends' mappings: each names only flags that front end has, and no
setting stays unspoken. The command line and pytest are also run as users run them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pytest_sglang.base.errors import SGLangError
from pytest_sglang.base.settings import SETTINGS, spoken
from pytest_sglang.cli import main as cli
from pytest_sglang.model.facts import Endpoint, Facts, GpuFact, HostFacts
from pytest_sglang.plugin import settings as plugin_settings
from pytest_sglang.target.core import Target
from pytest_sglang.target.options import TargetOptions
from pytest_sglang.target.spec import parse_spec

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


class _Recorder:
    """A stand-in for pytest's parser: records the options the plugin's modules add."""

    def __init__(self) -> None:
        self.options: set[str] = set()
        self.ini: set[str] = set()

    def getgroup(self, *args: Any, **kwargs: Any) -> _Recorder:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.options.update(names)

    def addini(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.ini.add(name)


def plugin_flags() -> set[str]:
    import importlib

    recorder = _Recorder()
    for name in ("core", "explain", "capture", "baseline", "fleet", "report", "bench"):
        importlib.import_module(f"pytest_sglang.plugin.{name}").pytest_addoption(recorder)
    return recorder.options


def cli_flags() -> set[str]:
    import argparse

    found: set[str] = set()
    parsers = [cli.build_parser()]
    while parsers:
        parser = parsers.pop()
        for action in parser._actions:
            found.update(s for s in action.option_strings if s.startswith("--"))
            if isinstance(action, argparse._SubParsersAction):
                parsers += list(action.choices.values())
    return found


PLUGIN, CLI = plugin_flags(), cli_flags()
EITHER = PLUGIN | CLI


def _error(call: Any) -> str:
    with pytest.raises(SGLangError) as info:
        call()
    return str(info.value)


def _target(host: HostFacts | None, **overrides: Any) -> Target:
    spec = parse_spec("http://gpu1:30000")
    server_info = Endpoint(path="/server_info", status=200, body={"version": "0.5.23", "model_path": "Qwen/Qwen3-8B", "tp_size": 1})
    return Target(spec, Facts(target=spec.display, base_url="http://gpu1:30000", endpoints={"server_info": server_info}, host=host, overrides=overrides))


def library_messages(tmp_path: Path) -> list[str]:
    """What the library says about the settings a user gives, made as a user meets it."""
    from pytest_sglang.collect.shell.ssh import Destination, check_private_key
    from pytest_sglang.parse.logs import LogSource
    from pytest_sglang.target.target import connect, open_target

    missing = str(tmp_path / "missing")
    public = tmp_path / "id.pub"
    public.write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDd9 user@host\n")
    messages = [
        _error(TargetOptions(timeout=-1).validate),
        _error(TargetOptions(wait_ready=float("nan")).validate),
        _error(TargetOptions(command_timeout=0).validate),
        _error(TargetOptions(api_key="key\x01with a control character").validate),
        _error(TargetOptions(ssh_key=missing).validate),
        _error(lambda: check_private_key(public, f"`ssh_key` {public}")),
        _error(TargetOptions(ssh_known_hosts=missing).validate),
        _error(TargetOptions(ssh_config=str(tmp_path)).validate),
        _error(lambda: connect("http://127.0.0.1:9", logs="file:/var/log/sglang.log")),
        _error(lambda: connect("http://127.0.0.1:9", unit="sglang.service")),
        _error(lambda: LogSource.parse("syslog:x")),
        _error(lambda: LogSource.parse("file:-")),
        _error(lambda: Destination.parse("root@")),
        _error(lambda: parse_spec("gpu1:30000")),
        _error(lambda: parse_spec("http://user:pw@gpu1:30000")),
        _error(lambda: open_target(parse_spec("http://gpu1:30000?api_key_env=PYTEST_SGLANG_UNSET_VARIABLE"))),
    ]
    no_host = _target(None)
    nvidia_smi_missing = _target(HostFacts(where="ssh://root@gpu1:22", missing_tools=["nvidia-smi"]))
    unknown_gpu = _target(HostFacts(where="local", gpus=[GpuFact(index=0, name="Foo 9000")]))
    no_process = _target(HostFacts(where="local"))
    unchecked = _target(HostFacts(where="ssh://root@gpu1:22", host_key_checked=False, log_warnings=["`logs` file:/x on local: the command failed"]))
    messages += [t.gpu_unknown_reason() for t in (no_host, nvidia_smi_missing, unknown_gpu)]
    messages += [t.launch_unknown_reason() for t in (no_host, no_process)]
    messages += unchecked.warnings
    messages += _target(None, sm="abc").warnings  # a capture edited by hand
    # What to give for a value the target cannot tell, and explain's note on a GPU it lacks.
    messages += [no_host.effective.describe(name) for name in ("sm", "gpu_name", "flashinfer_allreduce_fusion")]
    from pytest_sglang.judge.explain.api import explain

    messages += [note for note in explain(unknown_gpu).notes if "Foo 9000" in note]

    from pytest_sglang.render.capture import write_capture
    from pytest_sglang.target.sources.replay import open_capture

    capture = tmp_path / "capture.json"
    write_capture(no_host, capture)
    replayed = open_capture(f"replay:{capture}", TargetOptions(ssh="local", unit="sglang.service", logs="file:/x"))
    messages += replayed.warnings
    messages.append(_error(lambda: replayed.client))
    return messages


def test_each_setting_has_a_name_in_both_front_ends() -> None:
    assert set(plugin_settings.FLAGS) == SETTINGS
    assert set(cli.FLAGS) == SETTINGS


def test_every_library_message_names_settings_not_flags_and_each_front_end_names_only_its_own(tmp_path: Path) -> None:
    messages = library_messages(tmp_path)
    named = [m for m in messages if re.search(r"`[a-z_]+`", m)]
    assert len(named) >= 20, messages  # nearly all of them name what to give
    for message in messages:
        assert not FLAG.findall(message) or set(FLAG.findall(message)).isdisjoint(EITHER), message
        for front_end, flags, speak in (("plugin", PLUGIN, plugin_settings.spoken), ("command line", CLI, cli.spoken)):
            said = speak(message)
            assert not re.search(r"`(%s)`" % "|".join(SETTINGS), said), (front_end, said)
            foreign = {flag for flag in FLAG.findall(said) if flag in EITHER and flag not in flags}
            assert not foreign, f"the {front_end} would say {said!r}, naming {foreign} it does not have"


def test_a_word_between_backquotes_that_is_no_setting_stays() -> None:
    assert spoken("run `pytest --sglang-host=...` with `ssh`", {"ssh": "--ssh"}) == "run `pytest --sglang-host=...` with --ssh"


def test_the_command_line_names_its_own_flags(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert cli.main(["explain", "http://h:9", "--logs", "file:/var/log/sglang.log"]) == cli.EXIT_USAGE
    said = capsys.readouterr().err
    assert said == "pytest-sglang: http://h:9: --logs and --unit need host access: give --ssh user@host (or local)\n"
    assert cli.main(["explain", "http://h:9", "--ssh-key", str(tmp_path / "nonexistent")]) == cli.EXIT_USAGE
    said = capsys.readouterr().err
    assert said == f"pytest-sglang: --ssh-key {tmp_path / 'nonexistent'}: no such file\n"
    assert "--sglang-" not in said


def test_the_plugin_names_its_own_options(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile("def test_x(sglang):\n    pass\n")
    result = pytester.runpytest("--sglang-host", "http://127.0.0.1:9", "--sglang-ssh-key", str(tmp_path / "nonexistent"))
    result.stderr.fnmatch_lines([f"ERROR: --sglang-ssh-key {tmp_path / 'nonexistent'}: no such file"])
    result = pytester.runpytest("--sglang-host", "http://127.0.0.1:9", "--sglang-logs", "file:/x")
    result.stdout.fnmatch_lines(["*http://127.0.0.1:9: --sglang-logs and --sglang-unit need host access: give --sglang-ssh user@host (or local)*"])
    assert "`" not in result.stdout.str() + result.stderr.str()
