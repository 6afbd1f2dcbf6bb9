"""Shell text read as bash reads it: variables, arrays, arithmetic, quoting, and what stays unknown.

A launch script sets values before the command that uses them. Each construct is held to what
the package judges (``explain_launch``, ``parse_launch_command``) and to what the command line
prints (``pytest-sglang explain --show-command``); a property test holds generated scripts to the
argv real ``bash`` passes. A value the text does not give is never judged: the rules that read it
are undecided, and a note names it. No secret held in a variable reaches any output.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from support import ROOT, property_settings

from pytest_sglang.base.errors import SpecError
from pytest_sglang.cli.main import main as cli_main
from pytest_sglang.judge.explain.api import explain_launch
from pytest_sglang.parse.launch import parse_launch_command, split_command
from pytest_sglang.parse.shellscript import MIN_BUDGET, is_unresolved

DOCS = ROOT / "docs"
LAUNCH = "python -m sglang.launch_server"
BASH = "/bin/bash" if Path("/bin/bash").exists() else "bash"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``pytest-sglang ARGS`` in a process of its own, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", *args], capture_output=True, text=True, timeout=120)


def main(*args: str) -> subprocess.CompletedProcess[str]:
    """``pytest-sglang ARGS`` through the command line's own ``main`` (in this process: faster)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(list(args))
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def show_command(script: str, *more: str) -> str:
    """The ``command:`` line ``explain --show-command`` prints for a launch file."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "launch.sh"
        path.write_text(script)
        done = main("explain", "--launch-file", str(path), "--sglang-version", "0.5.16", "--show-command", *more)
    assert done.returncode in (0, 1), done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("command: ")
    return first.removeprefix("command: ")


# ---- each construct: what the package reads, as bash would pass it -------------------------------

CONSTRUCTS = [
    ("assignment", "TP=4\n", "--tp $TP", ["--tp", "4"]),
    ("export", "export TP=4\n", "--tp ${TP}", ["--tp", "4"]),
    ("declare-readonly", "declare TP=4\nreadonly DP=2\n", "--tp $TP --dp $DP", ["--tp", "4", "--dp", "2"]),
    ("declare-x-i", "declare -x -i TP=2*2\n", "--tp $TP", ["--tp", "4"]),
    ("several-on-a-line", "TP=4 DP=2; MODEL='org/My Model'\n", '--tp $TP --dp $DP --served-model-name "$MODEL"', ["--tp", "4", "--dp", "2", "--served-model-name", "org/My Model"]),
    ("default-unset", "", "--tp ${TP:-4} --dp ${DP-2}", ["--tp", "4", "--dp", "2"]),
    ("default-set", "TP=8\nDP=\n", "--tp ${TP:-4} --dp ${DP:-2} --pp-size ${DP-3}1", ["--tp", "8", "--dp", "2", "--pp-size", "1"]),
    ("assign-default", "", "--tp ${TP:=4} --dp $TP", ["--tp", "4", "--dp", "4"]),
    ("alternative", "SPEC=1\nNOSPEC=\n", "--tp 2 ${SPEC:+--enable-dp-attention} ${NOSPEC:+--disable-radix-cache}", ["--tp", "2", "--enable-dp-attention"]),
    ("length", "NAME=abcd\n", "--tp ${#NAME}", ["--tp", "4"]),
    ("arithmetic", "num_prefill=2\nnodes=3\n", "--dp $((${num_prefill}*8)) --tp $(( (nodes + 1) * 4 / 2 - 10 % 3 ))", ["--dp", "16", "--tp", "7"]),
    ("arithmetic-assign", "N=1\n((N += 3))\nlet 'M = N * 2'\n", "--tp $N --dp $M", ["--tp", "4", "--dp", "8"]),
    ("array", "ARGS=(--tp 4 --dp 2)\nARGS+=(--enable-dp-attention)\n", '"${ARGS[@]}"', ["--tp", "4", "--dp", "2", "--enable-dp-attention"]),
    ("array-items", "BS=(1 2 4 8)\nBS[4]=16\n", "--cuda-graph-bs ${BS[*]} --tp ${BS[2]} --dp ${#BS[@]}", ["--cuda-graph-bs", "1", "2", "4", "8", "16", "--tp", "4", "--dp", "5"]),
    ("array-first", "A=(4 x)\n", "--tp $A", ["--tp", "4"]),
    ("word-splitting", 'FLAGS="--tp 4   --dp 2"\n', "$FLAGS", ["--tp", "4", "--dp", "2"]),
    ("quoted-no-splitting", 'NAME="a  b"\n', '--served-model-name "$NAME"', ["--served-model-name", "a  b"]),
    ("quoting", "", "--served-model-name 'it'\\''s' --chat-template $'a\\tb' --tp \"4\"", ["--served-model-name", "it's", "--chat-template", "a\tb", "--tp", "4"]),
    ("brace-expansion", "", "--cuda-graph-bs {1..4} --tp {2,}", ["--cuda-graph-bs", "1", "2", "3", "4", "--tp", "2"]),
    ("unset", "TP=4\nunset TP\n", "--tp ${TP:-2}", ["--tp", "2"]),
    ("env-prefix", "GPUS=0,1\n", "--tp 2", ["--tp", "2"]),
]


def _script(prefix: str, args: str, env_prefix: str = "") -> str:
    return f"{prefix}{env_prefix}{LAUNCH} --model-path m {args}\n"


@pytest.mark.parametrize("name, prefix, args, words", CONSTRUCTS, ids=[c[0] for c in CONSTRUCTS])
def test_each_construct_reads_as_bash_passes_it(name: str, prefix: str, args: str, words: list[str]) -> None:
    script = _script(prefix, args)
    launch = parse_launch_command(script, sglang_version="0.5.16")
    assert launch.command_line == shlex.join([*LAUNCH.split(), "--model-path", "m", *words])
    assert launch.unresolved == {} and launch.unresolved_words == []
    assert not [p for p in launch.problems if "refuses" in p], launch.problems
    # And bash itself passes these words.
    assert bash_argv(script) == ["-m", "sglang.launch_server", "--model-path", "m", *words]


def test_an_environment_prefix_is_the_commands_environment_from_the_scripts_values() -> None:
    script = "GPUS=0,1\nexport HOME_DIR=/srv\nCUDA_VISIBLE_DEVICES=$GPUS python -m sglang.launch_server --model-path m --tp 2\n"
    launch = parse_launch_command(script, sglang_version="0.5.16")
    assert launch.env == {"CUDA_VISIBLE_DEVICES": "0,1", "HOME_DIR": "/srv"}
    assert launch.requested == {"model_path": "m", "tp_size": 2}


def test_a_systemd_unit_expands_its_environment_in_execstart() -> None:
    unit = "[Service]\nEnvironment=TP=4 MODEL=org/m\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path ${MODEL} --tp $TP\n"
    launch = parse_launch_command(unit, sglang_version="0.5.16")
    assert launch.form == "systemd unit" and launch.requested == {"model_path": "org/m", "tp_size": 4}


def test_a_container_script_reads_the_containers_environment() -> None:
    manifest = 'command: ["/bin/sh", "-c"]\nargs: ["python3 -m sglang.launch_server --model-path m --tp $TP"]\nenv:\n- name: TP\n  value: "4"\n'
    launch = parse_launch_command(manifest, sglang_version="0.5.16")
    assert launch.requested == {"model_path": "m", "tp_size": 4}


# What explain judges: the dp the script computes divides chunked prefill under DP attention.
DP_SCRIPTS = [
    ("arithmetic", "num_prefill=2\n", "--dp $((${num_prefill}*2))", 4),
    ("array", "ARGS=(--dp 8 --tp 8)\n", '"${ARGS[@]}"', 8),
    ("default", "", "--dp ${DP:-2}", 2),
    ("export-split", 'export PAR="--dp 16"\n', "$PAR", 16),
]


@pytest.mark.parametrize("name, prefix, args, dp", DP_SCRIPTS, ids=[c[0] for c in DP_SCRIPTS])
def test_explain_judges_the_value_the_script_computes(name: str, prefix: str, args: str, dp: int) -> None:
    script = _script(prefix, f"--tp 16 --enable-dp-attention {args}")
    explanation = explain_launch(script, gpu="H100", gpus=16, sglang_version="0.5.16", model="DeepseekV3ForCausalLM")
    chunked = explanation.by_rule("capacity.dp-attention-chunked")
    assert [f.predicted for f in chunked] == [8192 // dp]
    assert f" --dp {dp}" in show_command(script, "--gpu", "H100")


@pytest.mark.parametrize("name, prefix, args, words", CONSTRUCTS, ids=[c[0] for c in CONSTRUCTS])
def test_the_command_line_shows_the_argv_it_judged(name: str, prefix: str, args: str, words: list[str]) -> None:
    assert show_command(_script(prefix, args)) == shlex.join([*LAUNCH.split(), "--model-path", "m", *words])


# ---- what the text does not give is never judged ------------------------------------------------

MRR = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct \\\n  --max-running-requests $MAX_RUNNING_REQUESTS --chunked-prefill-size 4096\n"


def test_an_unset_variable_is_not_judged_as_its_text() -> None:
    launch = parse_launch_command(MRR, sglang_version="0.5.16")
    assert "max_running_requests" not in launch.requested and launch.requested["chunked_prefill_size"] == 4096
    assert launch.unresolved == {"max_running_requests": "$MAX_RUNNING_REQUESTS"}
    assert launch.problems == []  # not "is not a valid whole number"
    assert launch.notes == ["`$MAX_RUNNING_REQUESTS` is not set in this file: max_running_requests is unknown, and rules that read it are undecided"]
    explanation = explain_launch(MRR, gpu="H100", gpus=1, sglang_version="0.5.16", model="LlamaForCausalLM")
    # The KV cap reads the requested value: it is undecided, never judged with the text.
    assert not explanation.by_rule("capacity.kv-cap.v3")
    gap = explanation.by_rule("gap.unresolved.max_running_requests")
    assert len(gap) == 1 and gap[0].status == "undecided" and gap[0].severity == "info"
    assert gap[0].title == "`$MAX_RUNNING_REQUESTS` is not set in this file: rules that read max_running_requests are undecided"
    assert "capacity.kv-cap.v3" in gap[0].related
    assert gap[0].how_to_provide == ["set MAX_RUNNING_REQUESTS=... in the script before the command, or write the value in place of $MAX_RUNNING_REQUESTS"]
    assert not any("$MAX_RUNNING_REQUESTS" in repr(f.requested) for f in explanation.findings)
    # The same command with the value in place judges it.
    # (on an SM90 GPU of unknown memory, so the cap is information with its threshold)
    given = explain_launch(MRR.replace("$MAX_RUNNING_REQUESTS", "64"), sm=90, gpus=1, sglang_version="0.5.16", model="LlamaForCausalLM")
    assert [f.requested for f in given.by_rule("capacity.kv-cap.v3")] == [64]


def test_a_value_not_known_leaves_every_rule_that_reads_it_undecided() -> None:
    script = "python -m sglang.launch_server --model-path m --tp 16 --enable-dp-attention --dp $(nproc)\n"
    explanation = explain_launch(script, gpu="H100", gpus=16, sglang_version="0.5.16", model="DeepseekV3ForCausalLM")
    assert not explanation.by_rule("capacity.dp-attention-chunked")  # never judged as dp 1
    gap = explanation.by_rule("gap.unresolved.dp_size")
    assert gap and "capacity.dp-attention-chunked" in gap[0].related
    assert gap[0].title == "`$(nproc)` is a command's output, not run here: rules that read dp_size are undecided"
    assert gap[0].how_to_provide == ["write the value in place of $(nproc)"]


def test_an_environment_value_not_known_leaves_its_rules_undecided() -> None:
    command = "python -m sglang.launch_server --model-path m --speculative-algorithm EAGLE --speculative-draft-model-path d"
    unset = explain_launch(command, gpu="H100", gpus=1, sglang_version="0.5.9", model="LlamaForCausalLM")
    known = explain_launch(f"SGLANG_ENABLE_SPEC_V2=1 {command}", gpu="H100", gpus=1, sglang_version="0.5.9", model="LlamaForCausalLM")
    unknown = explain_launch(f"SGLANG_ENABLE_SPEC_V2=$SPEC {command}", gpu="H100", gpus=1, sglang_version="0.5.9", model="LlamaForCausalLM")
    assert unset.by_rule("spec.overlap-off") and not known.by_rule("spec.overlap-off")
    gap = unknown.by_rule("gap.unresolved.env.SGLANG_ENABLE_SPEC_V2")
    assert gap and gap[0].related, [f.id for f in unknown.findings]
    assert gap[0].title == "`$SPEC` is not set in this file: rules that read env.SGLANG_ENABLE_SPEC_V2 are undecided"
    assert not known.by_rule("gap.unresolved.env.SGLANG_ENABLE_SPEC_V2")
    assert "spec.overlap-off" in gap[0].related and not unknown.by_rule("spec.overlap-off")  # waiting, not judged
    # Judged the same for every release when the version is unknown.
    unknown_release = explain_launch(f"SGLANG_ENABLE_SPEC_V2=$SPEC {command}", gpu="H100", gpus=1, model="LlamaForCausalLM")
    assert unknown_release.by_rule("gap.unresolved.env.SGLANG_ENABLE_SPEC_V2")


@pytest.mark.parametrize(
    "args, field, shown, why",
    [
        ("--tp $1", "tp_size", "$1", "is an argument the script is run with, not known here"),
        ("--tp `nproc --all`", "tp_size", "`nproc...`", "is a command's output, not run here"),
        ("--tp ${TP:?set TP}", "tp_size", "$TP", "is not set in this file"),
        ("--tp ${#TP[1]}", "tp_size", "${#TP[1]}", "is not set in this file"),
        ("--served-model-name ${MODEL##*/}", "served_model_name", "${MODEL##*/}", "is an expansion not evaluated here"),
        ("--tp $((TP * 2))", "tp_size", "$TP", "is not set in this file"),
        ('--api-key "$KEY"', "api_key", "$KEY", "is not set in this file"),
    ],
)
def test_each_kind_of_value_not_known_is_named_with_why(args: str, field: str, shown: str, why: str) -> None:
    launch = parse_launch_command(f"{LAUNCH} --model-path m {args}", sglang_version="0.5.16")
    assert launch.unresolved == {field: shown} and field not in launch.requested
    assert launch.unresolved_why[field] == f"`{shown}` {why}"
    assert launch.problems == []


def test_a_variable_set_in_a_branch_or_a_loop_is_not_known_after_it() -> None:
    script = "TP=2\nif [ -n \"$BIG\" ]; then\n  TP=8\nfi\nfor DP in 1 2; do :; done\n[ -z \"$PP\" ] && PP=2\n" + LAUNCH + " --model-path m --tp $TP --dp $DP --pp-size $PP\n"
    launch = parse_launch_command(script, sglang_version="0.5.16")
    assert set(launch.unresolved) == {"tp_size", "dp_size", "pp_size"}
    assert launch.unresolved_why["tp_size"].startswith("`$TP` is set in a branch")
    assert launch.unresolved_why["dp_size"] == "`$DP` is set by a loop or read, not followed here"
    # Inside the branch, the branch's own value is read.
    inside = parse_launch_command("TP=2\nif true; then\n  TP=8\n  " + LAUNCH + " --model-path m --tp $TP\nfi\n", sglang_version="0.5.16")
    assert inside.requested["tp_size"] == 8


def test_a_function_reads_what_is_set_before_it_and_not_what_may_change_later() -> None:
    script = "MODEL=m\nTP=2\nstart() {\n  " + LAUNCH + " --model-path $MODEL --tp $TP\n}\nTP=4\nstart\n"
    launch = parse_launch_command(script, sglang_version="0.5.16")
    assert launch.requested == {"model_path": "m"} and list(launch.unresolved) == ["tp_size"]
    assert launch.unresolved_why["tp_size"] == "`$TP` is set again after the function that reads it, and when that function runs is not known"
    # A subshell's assignment is not seen after it.
    sub = parse_launch_command("(TP=4)\n" + LAUNCH + " --model-path m --tp ${TP:-1}\n", sglang_version="0.5.16")
    assert sub.requested["tp_size"] == 1


def test_a_word_that_may_hold_more_flags_is_a_note_not_a_refusal() -> None:
    script = "python -m sglang.launch_server --model-path m --tp 2 $EXTRA_ARGS\n"
    launch = parse_launch_command(script, sglang_version="0.5.16")
    assert launch.requested == {"model_path": "m", "tp_size": 2} and launch.unresolved_words == ["$EXTRA_ARGS"]
    assert launch.notes == ["`$EXTRA_ARGS` is not set in this file: it may hold more flags, which are not judged"]
    assert launch.problems == [] and launch.refusals == [] and launch.unrecognized == []
    explanation = explain_launch(script, gpu="H100", gpus=2, sglang_version="0.5.16", model="LlamaForCausalLM")
    assert explanation.errors == [] and launch.notes[0] in explanation.notes
    # Even the one required flag: $ARGS may hold --model-path.
    only = parse_launch_command("python -m sglang.launch_server $ARGS", sglang_version="0.5.16")
    assert only.problems == [] and only.unresolved_words == ["$ARGS"]
    only.require_arguments()


@pytest.mark.parametrize(
    "text, note",
    [
        ("sglang serve $MODEL --tp 2", "`$MODEL` is not set in this file: model_path is unknown"),
        ("sglang serve --model-path m --model-type $T --tp 2", "`$T` is not set in this file: which server sglang serve starts (--model-type) is not known"),
        (LAUNCH + " --model-path m --config $CFG --tp 2", "`$CFG` is not set in this file: the --config file is not known"),
        (LAUNCH + " --model-path m --$NAME 4 --tp 2", "`--$NAME` holds `$NAME`, which is not set in this file: it may hold more flags"),
    ],
    ids=["serve-model", "serve-model-type", "config", "flag-name"],
)
def test_a_value_not_known_in_any_place_is_a_note_never_a_refusal(text: str, note: str) -> None:
    launch = parse_launch_command(text, sglang_version="0.5.16")
    assert any(n.startswith(note) for n in launch.notes), launch.notes
    assert launch.problems == [] and launch.refusals == [] and launch.requested["tp_size"] == 2
    assert launch.command_line == text  # as written, before sglang serve's own rewrites


@pytest.mark.parametrize(
    "text, expected, unresolved",
    [
        ("docker run --gpus all img bash -c 'TP=4; python3 -m sglang.launch_server --model-path m --tp $TP --dp ${DP:-2}'", {"model_path": "m", "tp_size": 4, "dp_size": 2}, {}),
        ('docker run -e TP=4 img bash -c "python3 -m sglang.launch_server --model-path m --tp $TP"', {"model_path": "m"}, {"tp_size": "$TP"}),
        ("sh -c 'sh -c \"python -m sglang.launch_server --model-path m --tp 2\"'", {"model_path": "m", "tp_size": 2}, {}),
    ],
    ids=["single-quoted-script", "outer-shell-expands", "nested"],
)
def test_a_bash_c_script_is_read_as_its_own_shell_text(text: str, expected: dict[str, object], unresolved: dict[str, str]) -> None:
    launch = parse_launch_command(text, sglang_version="0.5.16")
    assert launch.requested == expected and launch.unresolved == unresolved and launch.problems == []


def test_a_launch_command_a_host_reports_is_read_the_same_way() -> None:
    from pytest_sglang.model.facts import Endpoint, Facts
    from pytest_sglang.normaliser.snapshot import normalise
    from pytest_sglang.parse.redact import redact_mapping

    def requested(launch_command: object) -> object:
        body = redact_mapping({"launch_command": launch_command, "version": "0.5.23", "tp_size": 4})
        snapshot = normalise(Facts(target="http://gpu1:30000", endpoints={"server_info": Endpoint(path="/server_info", status=200, body=body)}))
        return snapshot.requested

    # An argv a process was started with holds no shell: a '$' in it is the character itself.
    argv = requested(["python", "-m", "sglang.launch_server", "--model-path", "m", "--served-model-name", "a$b"])
    assert argv.requested["served_model_name"] == "a$b" and argv.unresolved == {}  # type: ignore[attr-defined]


def test_an_unresolved_value_is_judged_nowhere_for_an_unknown_release() -> None:
    explanation = explain_launch(MRR, gpu="H100", gpus=1, model="LlamaForCausalLM")
    assert not [f for f in explanation.findings if f.rule.startswith("capacity.kv-cap")]
    assert explanation.by_rule("gap.unresolved.max_running_requests")
    assert explanation.errors == []


# ---- a missing continuation ------------------------------------------------------------------------

CUT = "#!/bin/bash\n# start the server\npython -m sglang.launch_server --model-path m \\\n  --max-running-requests 64\n  --tp 4 \\\n  --dp 2 \\\n  --enable-dp-attention\n"


def test_a_missing_backslash_ends_the_command_and_a_note_names_the_lines_left_out() -> None:
    launch = parse_launch_command(CUT, sglang_version="0.5.16")
    assert launch.requested == {"model_path": "m", "max_running_requests": 64}
    assert launch.notes == [
        "line 4 ends without '\\': the 3 lines after it (--tp 4, --dp 2, --enable-dp-attention) are not part of the command; add the backslash if they belong to it"
    ]
    assert bash_argv(CUT) == ["-m", "sglang.launch_server", "--model-path", "m", "--max-running-requests", "64"]
    done = main("explain", "--launch", CUT, "--sglang-version", "0.5.16")
    assert "note: line 4 ends without '\\': the 3 lines after it" in done.stdout


@pytest.mark.parametrize(
    "text, note",
    [
        ("```bash\n" + LAUNCH + " --model-path m\n  --tp 4\n```\n", "line 2 ends without '\\': the line after it (--tp 4) is not part of the command"),
        (LAUNCH + " --model-path m \\ \n  --tp 4\n", "line 1 ends with a space after its '\\': the line after it (--tp 4) is not part of the command"),
        (LAUNCH + " --model-path m \\\n\n  --tp 4 --api-key sk-left-out-SECRET1\n  --dp 2\n  --a\n  --b\n", "line 2 is empty after a '\\': the 4 lines after it (--tp 4, --dp 2, --a, ...) are not part of the command"),
        (LAUNCH + " --model-path m\n  --api-key sk-left-out-SECRET1\n", "line 1 ends without '\\': the line after it (--api-key <redacted>) is not part of the command"),
    ],
    ids=["fence", "space-after-backslash", "blank-line", "secret"],
)
def test_the_note_names_the_line_where_the_command_ended(text: str, note: str) -> None:
    launch = parse_launch_command(text, sglang_version="0.5.16")
    assert any(n.startswith(note) for n in launch.notes), launch.notes
    assert "SECRET1" not in repr(launch)


def test_a_command_that_ends_where_the_next_line_is_not_a_flag_has_no_note() -> None:
    launch = parse_launch_command(LAUNCH + " --model-path m --tp 2\necho started\n  --not-ours\n", sglang_version="0.5.16")
    assert launch.notes == []


# ---- --show-command ----------------------------------------------------------------------------------


def test_show_command_prints_the_judged_argv_first_and_as_a_json_field() -> None:
    script = "TP=4\nKEY=sk-shown-NEVER-42\nARGS=(--dp 2 --api-key \"$KEY\")\npython -m sglang.launch_server --model-path 'org/a b' --tp $TP \"${ARGS[@]}\" --max-running-requests $MRR\n"
    done = cli("explain", "--launch", script, "--sglang-version", "0.5.16", "--show-command")
    expected = "python -m sglang.launch_server --model-path 'org/a b' --tp 4 --dp 2 --api-key <redacted> --max-running-requests $MRR"
    assert done.stdout.splitlines()[0] == f"command: {expected}"
    assert done.stdout.splitlines()[1].startswith("launch command (SGLang 0.5.16)")
    as_json = cli("explain", "--launch", script, "--sglang-version", "0.5.16", "--show-command", "--json")
    data = json.loads(as_json.stdout)
    assert data["command"] == expected and data["findings"] is not None
    for output in (done.stdout + done.stderr, as_json.stdout, main("explain", "--launch", script, "--show-command", "-v").stdout):
        assert "NEVER-42" not in output
    # Without the option, nothing changes.
    plain_run = main("explain", "--launch", script, "--sglang-version", "0.5.16", "--json")
    assert "command" not in json.loads(plain_run.stdout)


def test_show_command_for_a_target_is_the_launch_command_it_reports() -> None:
    done = main("explain", "sim://qwen35-122b-a10b-4xrtx6000-candidate", "--show-command")
    assert done.stdout.startswith("command: python -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B --served-model-name qwen3.5-122b-a10b --tp 4 --max-running-requests 48 ")


def test_show_command_for_a_start_up_line_is_a_usage_error() -> None:
    done = main("explain", "--startup-line", "server_args=ServerArgs(tp_size=2)", "--show-command")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--show-command is for --launch" in done.stderr


# ---- secrets held in variables ----------------------------------------------------------------------

SECRET = "sk-varheld-Q7W8E9R0T1"


@pytest.mark.parametrize(
    "script",
    [
        f"K={SECRET}\n{LAUNCH} --model-path m --api-key $K",
        f"K={SECRET}\n{LAUNCH} --model-path m --api-key=$K",
        f"A=sk-varheld; B=-Q7W8E9R0T1\nK=$A$B\n{LAUNCH} --model-path m --api-key \"$K\"",
        f"ARGS=(--api-key {SECRET})\n{LAUNCH} --model-path m \"${{ARGS[@]}}\"",
        f"T={SECRET}\nexport HF_TOKEN=$T\n{LAUNCH} --model-path m",
        f"T={SECRET}\nHF_TOKEN=$T {LAUNCH} --model-path m",
        f"K={SECRET}\n{LAUNCH} --model-path m --api-key $K --served-model-name $K",
        f"K={SECRET}\n{LAUNCH} --model-path m --json-model-override-args '{{\"hf_token\": \"'$K'\"}}'",
        f"K={SECRET}\n{LAUNCH} --model-path m\n  --api-key $K",
    ],
    ids=["flag", "inline", "concatenated", "array", "exported", "prefix", "reused", "json", "left-out"],
)
def test_a_key_held_in_a_variable_never_shows(script: str) -> None:
    launch = parse_launch_command(script, sglang_version="0.5.16")
    assert SECRET not in repr(launch) and "Q7W8E9R0T1" not in repr(launch)
    explanation = explain_launch(script, sglang_version="0.5.16")
    assert "Q7W8E9R0T1" not in explanation.to_json()
    for args in (("--show-command",), ("--show-command", "--json"), ("-v", "--show-command")):
        done = main("explain", "--launch", script, "--sglang-version", "0.5.16", *args)
        assert "Q7W8E9R0T1" not in done.stdout + done.stderr


# ---- the same argv as bash --------------------------------------------------------------------------

_RECORDER = r"""
python() { printf '%s\0' "$@" > "$REC"; for n in $(compgen -e); do printf '%s=%s\0' "$n" "${!n}"; done > "$REC.env"; }
"""


def bash_run(script: str) -> tuple[list[str] | None, dict[str, str]]:
    """The argv bash passes to ``python`` when it runs ``script`` (python is a recording shell
    function), and the environment it runs with."""
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as cwd:
        rec = Path(tmp) / "argv"
        subprocess.run([BASH, "--noprofile", "--norc", "-c", _RECORDER + script], cwd=cwd, env={"REC": str(rec), "PATH": "/usr/bin:/bin"}, capture_output=True, timeout=20)
        if not rec.exists():
            return None, {}
        words = [w.decode() for w in rec.read_bytes().split(b"\0")[:-1]]
        env = dict(w.decode().partition("=")[::2] for w in Path(str(rec) + ".env").read_bytes().split(b"\0")[:-1])
    return words, env


def bash_argv(script: str) -> list[str] | None:
    return bash_run(script)[0]


hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

# Text a value is made of: no glob characters, no '~' (the shell would look at the file system).
PLAIN = ["m", "4", "--tp", "--dp", "a=b", "x,y", "1.5", "-x", "org/Model-7B", "", "a b", " lead", "trail ", "two  spaces", "it's", 'say "hi"', "back\\slash", "$dollar", "#hash", "semi;colon"]
SCALARS, NUMBERS, ARRAYS, UNSET = ["V1", "V2", "V3"], ["N1", "N2"], ["A1", "A2"], ["U1", "U2"]


def quote(draw, text: str) -> str:  # type: ignore[no-untyped-def]
    """``text`` written the ways a shell reads as that text."""
    styles = ["single", "double", "ansi"] + (["bare"] if re.fullmatch(r"[\w@%+=:,./-]+", text) else []) + (["escaped"] if text else [])
    style = draw(st.sampled_from(styles))
    if style == "bare":
        return text
    if style == "single":
        return "'" + text.replace("'", "'\\''") + "'"
    if style == "double":
        return '"' + re.sub(r'([\\"$`])', r"\\\1", text) + '"'
    if style == "ansi":
        return "$'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return "".join("\\" + c for c in text)


@st.composite
def arithmetic(draw, numbers: list[str], depth: int = 0):  # type: ignore[no-untyped-def]
    leaves = [str(draw(st.integers(0, 40)))] + [draw(st.sampled_from([n, "$" + n, "${" + n + "}"])) for n in numbers[:1]] + ([numbers[-1]] if numbers else [])
    if depth >= 2 or draw(st.booleans()):
        return draw(st.sampled_from(leaves))
    left = draw(arithmetic(numbers, depth + 1))
    op = draw(st.sampled_from(["+", "-", "*", "/", "%", "unary", "paren"]))
    if op in ("/", "%"):
        return f"{left} {op} {draw(st.integers(1, 9))}"
    if op == "unary":
        return f"-{left}"
    if op == "paren":
        return f"({left})"
    return f"{left} {op} {draw(arithmetic(numbers, depth + 1))}"


@st.composite
def value(draw, state: dict[str, list[str]], quoted: bool, alone: bool = False):  # type: ignore[no-untyped-def]
    """A piece of a word: literal text, or an expansion of what the script has set (``$X``
    without braces only as a word of its own: ``$Xm`` is the variable ``Xm``)."""
    kinds = ["literal", "literal", "default", "arithmetic"]
    kinds += ["scalar", "scalar", "length", "alternative"] if state["scalars"] else []
    kinds += ["item", "count"] if state["arrays"] else []
    kind = draw(st.sampled_from(kinds))
    if kind == "literal":
        text = draw(st.sampled_from(PLAIN))
        return quote(draw, text) if not quoted else re.sub(r'([\\"$`])', r"\\\1", text)
    if kind == "scalar":
        name = draw(st.sampled_from(state["scalars"]))
        return draw(st.sampled_from(([f"${name}"] if alone else []) + [f"${{{name}}}", f"${{{name}:-z}}"]))
    if kind == "length":
        return "${#" + draw(st.sampled_from(state["scalars"])) + "}"
    if kind == "alternative":  # of a variable the script sets (one it does not set is not known)
        return "${" + draw(st.sampled_from(state["scalars"])) + draw(st.sampled_from([":+", "+"])) + "alt}"
    if kind == "default":
        name = draw(st.sampled_from(UNSET + state["scalars"]))
        op = draw(st.sampled_from([":-", "-"]))
        inner = draw(st.sampled_from(["4", "a b", "'q r'", '"$' + state["scalars"][0] + '"' if state["scalars"] else "d"]))
        return "${" + name + op + inner + "}"
    if kind == "item":
        name = draw(st.sampled_from(state["arrays"]))
        return draw(st.sampled_from([f"${{{name}[0]}}", f"${{{name}[1]}}", f"${{{name}[*]}}", f"${{{name}}}"] + ([f"${name}"] if alone else [])))
    if kind == "count":
        return "${#" + draw(st.sampled_from(state["arrays"])) + "[@]}"
    return "$((" + draw(arithmetic(state["numbers"])) + "))"


@st.composite
def scripts(draw):  # type: ignore[no-untyped-def]
    """A small script that sets values, then the command that reads them."""
    state: dict[str, list[str]] = {"scalars": [], "numbers": [], "arrays": []}
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 7))):
        kind = draw(st.sampled_from(["scalar", "scalar", "number", "arithmetic-command", "array", "append", "several", "export", "declare", "unset", "assign-default"]))
        if kind in ("scalar", "export", "declare"):
            name = draw(st.sampled_from(SCALARS))
            pieces = draw(st.lists(value(state, quoted=False), min_size=1, max_size=3))
            keyword = {"scalar": "", "export": "export ", "declare": draw(st.sampled_from(["declare ", "declare -x ", "typeset "]))}[kind]
            lines.append(f"{keyword}{name}={''.join(pieces)}")
            state["scalars"] = sorted(set(state["scalars"]) | {name})
        elif kind == "number":
            name = draw(st.sampled_from(NUMBERS))
            lines.append(f"{name}=$(({draw(arithmetic(state['numbers']))}))" if draw(st.booleans()) else f"{name}={draw(st.integers(-5, 50))}")
            state["numbers"] = sorted(set(state["numbers"]) | {name})
        elif kind == "arithmetic-command" and state["numbers"]:
            name = draw(st.sampled_from(state["numbers"]))
            expression = draw(arithmetic(state["numbers"]))
            lines.append(draw(st.sampled_from([f"(({name} += {expression}))", f"let '{name} = {expression}'", f"(( {name}++ ))", f"declare -i {name}={name}*2+1"])))
        elif kind in ("array", "append"):
            name = draw(st.sampled_from(ARRAYS))
            items = draw(st.lists(value(state, quoted=False), min_size=0, max_size=4))
            append = kind == "append" and name in state["arrays"]
            lines.append(f"{name}{'+=' if append else '='}({' '.join(items)})")
            state["arrays"] = sorted(set(state["arrays"]) | {name})
        elif kind == "several":
            names = draw(st.lists(st.sampled_from(SCALARS), min_size=2, max_size=3, unique=True))
            lines.append(" ".join(f"{n}={draw(value(state, quoted=False))}" for n in names))
            state["scalars"] = sorted(set(state["scalars"]) | set(names))
        elif kind == "unset" and state["scalars"]:
            name = draw(st.sampled_from(state["scalars"]))
            lines.append(f"unset {name}")
            state["scalars"].remove(name)
        elif kind == "assign-default":
            name = draw(st.sampled_from([n for n in SCALARS if n not in state["scalars"]] or ["V1"]))
            lines.append(f": ${{{name}:={draw(st.sampled_from(['7', 'x y']))}}}")
            state["scalars"] = sorted(set(state["scalars"]) | {name})
    words: list[str] = []
    for _ in range(draw(st.integers(1, 6))):
        form = draw(st.sampled_from(["plain", "plain", "unquoted", "double", "flag=", "array@", "array*", "brace"]))
        if form == "plain":
            words.append(draw(st.sampled_from(["--tp", "4", "--dp", "2", "--served-model-name", "--cuda-graph-bs"])))
        elif form == "unquoted":
            words.append(draw(value(state, quoted=False, alone=True)))
        elif form == "double":
            words.append('"' + "".join(draw(st.lists(value(state, quoted=True), min_size=1, max_size=3))) + '"')
        elif form == "flag=":
            words.append('"--served-model-name=' + draw(value(state, quoted=True)) + '"')
        elif form in ("array@", "array*") and state["arrays"]:
            name = draw(st.sampled_from(state["arrays"]))
            words.append(draw(st.sampled_from([f'"${{{name}[@]}}"', f"${{{name}[@]}}"] if form == "array@" else [f'"${{{name}[*]}}"', f"${{{name}[*]}}"])))
        elif form == "brace":
            words.append(draw(st.sampled_from(["{1..3}", "x{a,b}y", "{2,4}", "{a..c}"])))
    prefix = draw(st.sampled_from(["", "", "P1=prefixed ", f"P1=${state['scalars'][0]} " if state["scalars"] else ""]))
    glue = draw(st.sampled_from([" ", " \\\n  "]))
    lines.append(f"{prefix}python -m sglang.launch_server --model-path m{glue}{glue.join(words)}")
    return "\n".join(lines) + "\n"


# A fixed set of 80 scripts (a few seconds, one bash each); ODD_VALUES_EXAMPLES=2000 searches at random.
_SETTINGS = property_settings(suppress_health_check=list(hypothesis.HealthCheck), database=None)
_DIFFERENTIAL = _SETTINGS if "ODD_VALUES_EXAMPLES" in os.environ else hypothesis.settings(_SETTINGS, max_examples=80)


@_DIFFERENTIAL
@hypothesis.given(script=scripts())
def test_generated_scripts_give_the_argv_and_environment_bash_gives(script: str) -> None:
    words, env = split_command(script)[:2]
    expected, bash_env = bash_run(script)
    assert expected is not None, script
    assert not any(is_unresolved(w) for w in words), (script, words)
    assert words[1:] == expected, script
    ours = {k: v for k, v in env.items() if re.fullmatch(r"[VNAP]\d", k)}
    theirs = {k: v for k, v in bash_env.items() if re.fullmatch(r"[VNAP]\d", k)}
    assert ours == theirs, script


# ---- bounded ----------------------------------------------------------------------------------------


def test_a_doubling_chain_is_one_line_naming_the_variable() -> None:
    script = "A0=xxxxxxxxxxxxxxxx\n" + "".join(f"A{k}=$A{k - 1}$A{k - 1}\n" for k in range(1, 60)) + LAUNCH + " --model-path $A59\n"
    started = time.process_time()
    launch = parse_launch_command(script, sglang_version="0.5.16")
    assert time.process_time() - started < 5
    assert launch.read_error is not None and "\n" not in launch.read_error
    assert re.search(r"expanding \$A\d+ makes more than 1048576 characters", launch.read_error)
    with pytest.raises(SpecError, match=r"the launch command cannot be read: expanding \$A\d+"):
        launch.require_arguments()
    done = cli("explain", "--launch", script)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "expanding $A" in done.stderr


@pytest.mark.parametrize(
    "script",
    [
        "X=${a:-" * 5000 + "x" + "}" * 5000 + "\n" + LAUNCH + " --model-path m --tp 2",
        "N=$((" + "(" * 5000 + "1" + ")" * 5000 + "))\n" + LAUNCH + " --model-path m --tp $N",
        "".join(f"V{k}=V{k + 1}\n" for k in range(3000)) + LAUNCH + " --model-path m --tp $((V0))",
        LAUNCH + " --model-path m --cuda-graph-bs " + "{1,2}" * 30,
        LAUNCH + " --model-path m --cuda-graph-bs {1..999999999}",
        "".join(f"A+=(--x{k})\n" for k in range(20000)) + LAUNCH + ' --model-path m "${A[@]}"',
        "f() {\n" * 3000 + LAUNCH + " --model-path m\n" + "}\n" * 3000,
        "if x; then\n" * 3000 + LAUNCH + " --model-path m --tp 2\n" + "fi\n" * 3000,
    ],
    ids=["nested-defaults", "nested-parentheses", "variable-chain", "brace-bomb", "long-sequence", "big-array", "nested-functions", "nested-ifs"],
)
def test_hostile_scripts_finish_quickly_with_bounded_output(script: str) -> None:
    started = time.process_time()
    launch = parse_launch_command(script, sglang_version="0.5.16")
    assert time.process_time() - started < 5
    assert len(launch.command_line) <= max(4 * len(script), MIN_BUDGET) + 1000
    assert launch.read_error is None or "\n" not in launch.read_error
    assert all("\n" not in note for note in launch.notes)


STATEMENTS = ["X{k}=$((k0 + {k}))\n", "A+=(a{k} 'b {k}')\n", "Y{k}=\"${{Y{j}:-v}}-{k}\"\n", "export E{k}=${{#A[@]}}\n", "if t; then Z=1; fi\n", "echo $X{j} | cat > /dev/null\n"]


@hypothesis.settings(_SETTINGS, max_examples=6)
@hypothesis.given(mix=st.lists(st.sampled_from(range(len(STATEMENTS))), min_size=1, max_size=6), size=st.sampled_from([300, 600]))
def test_reading_time_grows_linearly_with_the_script(mix: list[int], size: int) -> None:
    def script(n: int) -> str:
        lines = ["k0=1\n"] + [STATEMENTS[mix[k % len(mix)]].format(k=k, j=max(k - 1, 0)) for k in range(n)]
        return "".join(lines) + LAUNCH + " --model-path m --tp $X1\n"

    def seconds(n: int) -> float:
        text = script(n)
        best = float("inf")
        for _ in range(2):
            started = time.process_time()
            launch = parse_launch_command(text, sglang_version="0.5.16")
            best = min(best, time.process_time() - started)
        assert len(launch.command_line) <= max(4 * len(text), MIN_BUDGET)
        return best

    small, large = seconds(size), seconds(4 * size)
    assert large < 10 * small + 0.25, (small, large)  # linear: 4x the text, about 4x the time (quadratic would be 16x)


# ---- the example in docs/launch-commands.md ---------------------------------------------------------


def test_the_docs_example_prints_what_the_docs_say() -> None:
    page = (DOCS / "launch-commands.md").read_text()
    section = page.split("## Shell text: variables, arrays, arithmetic", 1)[1].split("\n## ", 1)[0]
    script = re.search(r"```bash\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    launch = parse_launch_command(script)
    shown = re.findall(r"^launch\.(\w+)\s+# (.*)$", section, re.M)
    assert {name for name, _ in shown} >= {"command_line", "requested", "unresolved", "notes"}
    for name, value in shown:
        assert getattr(launch, name) == ast.literal_eval(value), name
    console = re.search(r"```console\n\$ (pytest-sglang explain [^\n]*)\n(.*?)```", section, re.S)
    assert console is not None
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "launch.sh").write_text(script)
        args = shlex.split(console.group(1))[1:]
        done = subprocess.run([sys.executable, "-m", "pytest_sglang.cli.main", *args], capture_output=True, text=True, cwd=tmp, timeout=120)
    printed, lines = console.group(2).splitlines(), done.stdout.splitlines()
    # The headline's counts follow the rules of the day; the command and the notes are this page's.
    assert lines[1].split(":")[0] == printed[1].split(":")[0]
    assert lines[:1] + lines[2 : len(printed)] == printed[:1] + printed[2:]
    finding = re.search(r"among the findings:\n\n```\n(.*?)```", section, re.S).group(1).splitlines()  # type: ignore[union-attr]
    start = lines.index(finding[0])
    assert lines[start : start + len(finding)] == finding


@pytest.mark.parametrize("given", ["--tp 2 \ue000", ["--tp", "2", "\ue000V$X\ue001"], "['--tp', '2', '\ue000']"])
def test_text_holding_the_readers_own_mark_characters_is_read_as_given(given):
    launch = parse_launch_command(given, sglang_version="0.5.12")
    assert launch.requested.get("tp_size") == 2
    assert not launch.unresolved_words


def test_a_script_that_starts_sglang_twice_says_which_command_was_judged():
    script = textwrap.dedent("""\
        #!/bin/bash
        if [ "$ISL" = 1024 ]; then
          python -m sglang.launch_server --model-path m --tp 8 --max-running-requests 512
        else
          python3 -m sglang.launch_server --model-path m --tp 8 --max-running-requests 256
        fi
        # python -m sglang.launch_server --commented-out
        """)
    launch = parse_launch_command(script, sglang_version="0.5.12")
    assert launch.requested["max_running_requests"] == 512
    assert [n for n in launch.notes if "more than once" in n] == [
        "the text starts SGLang more than once (line 3, and line 5): the first is judged; "
        "give another alone to judge it (which one runs may depend on a branch)"
    ]
    assert not [n for n in parse_launch_command("python -m sglang.launch_server --model-path m", sglang_version="0.5.12").notes if "more than once" in n]
