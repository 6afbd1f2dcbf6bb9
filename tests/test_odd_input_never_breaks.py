"""Whatever a host, a log or a user hands over, the parsers answer or raise one SGLangError;
never a traceback. Property tests with a fixed example set (CI cannot fail by chance); a deeper,
random search: ODD_VALUES_EXAMPLES=10000 pytest tests/test_odd_input_never_breaks.py"""

from __future__ import annotations

import json
import shlex

import pytest
from support import property_settings

from pytest_sglang import parse_startup_line
from pytest_sglang.base.errors import SGLangError
from pytest_sglang.collect.host import MARK, HostOptions, parse_output
from pytest_sglang.collect.shell.ssh import Destination
from pytest_sglang.parse.launch import parse_launch_command
from pytest_sglang.parse.lines import parse_capacity_line
from pytest_sglang.parse.logs import LogSource, SGLangLogs
from pytest_sglang.target.spec import parse_spec

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

SETTINGS = property_settings()

SECTIONS = ["gpus", "gpus-old", "gpu-apps", "systemd", "pid", "cmdline", "visible", "processes", "logs", "execstart"]
HOST_LINES = st.one_of(
    st.text(max_size=60),
    st.sampled_from(
        [
            "0, NVIDIA H100 80GB HBM3, 9.0, 81559, 550.54.15, GPU-abc",
            "0, X, , , ,",
            "@@missing nvidia-smi",
            "InvocationID=abc",
            "MainPID=12",
            "@@reversed",
            "@@no-invocation-id",
            '{"MESSAGE": "server_args=ServerArgs(tp_size=4, api_key=\'sk-odd\')"}',
            '{"MESSAGE": [1, 2]}',
            '{"MESSAGE": null}',
            "12 1",
            "CUDA_VISIBLE_DEVICES=0,1",
            "python\x00-m\x00sglang.launch_server\x00--api-key\x00sk-odd",
            "\u00b9",
        ]
    ),
)


@SETTINGS
@hypothesis.given(
    parts=st.lists(st.tuples(st.sampled_from(SECTIONS), st.lists(HOST_LINES, max_size=5)), max_size=8),
    logs=st.sampled_from([None, "journald:sglang.service", "file:/var/log/sglang.log", "docker:sglang", "cmd:cat x"]),
)
def test_any_host_output_gives_host_facts_without_secrets(parts, logs):
    text = "".join(f"\n{MARK}{name}@@\n" + "\n".join(body) for name, body in parts)
    facts = parse_output(text, where="ssh://root@gpu1:22", options=HostOptions(logs=LogSource.parse(logs) if logs else None))
    assert "sk-odd" not in facts.model_dump_json()


WORDS = st.one_of(
    st.sampled_from(
        ["--tp", "--tp-size", "--config", "--model", "=", "--cuda-graph-bs", "1", "-5", "'", '"', "\\", "--no-lora-strict-loading",
         "ExecStart=", "Environment=X=1", "\n", "python", "-m", "sglang.launch_server", "serve", "sglang", "--api", "--x=y"]
    ),  # fmt: skip
    st.text(max_size=8),
)


@SETTINGS
@hypothesis.given(words=st.lists(WORDS, max_size=12), version=st.sampled_from([None, "0.5.5", "0.5.12", "0.5.18", "0.5.23", "garbage", "1.0"]))
def test_any_launch_command_parses_and_an_api_key_after_a_secret_flag_never_shows(words, version):
    parse_launch_command(" ".join(words), sglang_version=version, strict_version=False, config_loader=lambda path: {"tp-size": 2})
    # Quoted as a shell would, the secret flag stays a flag, wherever it lands (in a systemd
    # unit, a leading '-' is an ExecStart prefix and the flag would be the program: not a flag).
    hypothesis.assume(not any("ExecStart" in w or "Environment" in w for w in words))
    for command in (shlex.join(words) + " --api-k sk-odd", [*words, "--api-k", "sk-odd"]):
        launch = parse_launch_command(command, sglang_version=version, strict_version=False, config_loader=lambda path: {"tp-size": 2})
        assert "sk-odd" not in repr(launch)


LIST_ITEMS = st.one_of(WORDS, st.sampled_from(['"', "'", "[", "]", "{", "}", ",", "#", "...", "- ", ": ", "|", ">-", "sh", "-c", "args:", "\t", "\\u12"]))
# A list of argv strings as code and manifests write it: Python, prepare_server_args, YAML flow
# and block lists (Kubernetes args/command, a bare list), some items quoted and some not.
LIST_SHAPES = {
    "python": lambda items: "[" + ", ".join(json.dumps(w) for w in items) + "]",
    "python-raw": lambda items: "[" + ", ".join(items) + "]",
    "prepare": lambda items: "server_args = prepare_server_args([" + ", ".join(json.dumps(w) for w in items) + "])",
    "prepare-raw": lambda items: "prepare_server_args([" + " ".join(items) + ")",
    "flow": lambda items: "args: [" + ", ".join(items) + "]",
    "flow-quoted": lambda items: "command: [" + ", ".join(json.dumps(w) for w in items) + "]",
    "block": lambda items: "args:\n" + "".join(f"- {w}\n" for w in items),
    "block-quoted": lambda items: "containers:\n- name: x\n  args:\n" + "".join(f"  - {json.dumps(w)}\n" for w in items),
    "bare": lambda items: "".join(f"- {w}\n" for w in items),
    "lines": lambda items: "\n".join(items),
}


@SETTINGS
@hypothesis.given(items=st.lists(LIST_ITEMS, max_size=12), shape=st.sampled_from(sorted(LIST_SHAPES)), version=st.sampled_from([None, "0.5.5", "0.5.23"]))
def test_any_list_form_parses_and_a_command_without_arguments_is_one_usage_error(items, shape, version):
    launch = parse_launch_command(LIST_SHAPES[shape](items), sglang_version=version)
    assert launch.read_error is None or "\n" not in launch.read_error
    try:
        launch.require_arguments()
    except SGLangError as exc:
        assert "\n" not in str(exc)
    # A quoted list keeps a secret flag a flag: what follows it never shows.
    if shape in ("python", "prepare", "flow-quoted", "block-quoted"):
        launch = parse_launch_command(LIST_SHAPES[shape]([*items, "--api-k", "sk-odd"]), sglang_version=version)
        assert "sk-odd" not in repr(launch)


@SETTINGS
@hypothesis.given(text=st.text(max_size=200), prefix=st.sampled_from(["server_args=ServerArgs(", "server_args={", "", "max_total_num_tokens="]))
def test_any_log_text_parses_or_is_one_parse_error(text, prefix):
    for parse in (parse_startup_line, parse_capacity_line):
        try:
            parse(prefix + text)
        except SGLangError as exc:
            assert "\n" not in str(exc)
    logs = SGLangLogs(source="file:/x", lines=[prefix + text, text])
    _ = (logs.startup_line, logs.capacity, logs.mamba_cache_size, logs.kv_pool, logs.mamba_pool, logs.adjustments, logs.ready)


@SETTINGS
@hypothesis.given(text=st.text(max_size=40))
def test_any_spec_is_understood_or_one_clear_error(text):
    for parse in (parse_spec, LogSource.parse, Destination.parse, lambda t: parse_spec("http://" + t), lambda t: parse_spec("sim://" + t)):
        try:
            parse(text)
        except SGLangError as exc:
            assert "\n" not in str(exc)
