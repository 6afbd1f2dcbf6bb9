"""Variables in manifests are read as the tool that runs the manifest reads them.

Compose interpolates ``${VAR:-default}`` (the file's default is used, with a note) and leaves a
variable without a default not known; Kubernetes replaces ``$(VAR)`` in command and args with the
container's ``env``; a YAML list of neither kind keeps its ``$`` parts not known. A part not known
is never judged: it is never an ERROR, never a requested value. Real manifests from other people's
deployments (tests/data/corpus/launch_commands/unseen-*.txt) hold both forms.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_sglang.cli.main import main
from pytest_sglang.judge.explain import explain_launch
from pytest_sglang.parse.launch import parse_launch_command

CORPUS = Path(__file__).parent / "data" / "corpus" / "launch_commands"
LAUNCH = ["python3", "-m", "sglang.launch_server"]


def compose(command: str) -> str:
    return f"services:\n  sglang:\n    image: lmsysorg/sglang:v0.5.12\n    restart: always\n    command: {command}\n"


def pod(args: list[str], env: dict[str, str]) -> str:
    env_lines = "".join(f"    - name: {k}\n      value: \"{v}\"\n" for k, v in env.items())
    items = ", ".join(f'"{a}"' for a in args)
    return (
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: s\n    image: x\n"
        f'    command: ["python3", "-m", "sglang.launch_server"]\n    args: [{items}]\n'
        + (f"    env:\n{env_lines}" if env else "")
    )


def test_a_compose_default_is_the_value_and_a_note_says_it_was_assumed():
    text = compose(">\n      python3 -m sglang.launch_server --model-path m\n      --port ${PORT:-8000} --tp ${TP:-2} ${EXTRA:-}\n")
    launch = parse_launch_command(text, sglang_version="0.5.12")
    assert launch.requested["tp_size"] == 2 and launch.requested["port"] == 8000
    assert not launch.refusals and not launch.unresolved_words
    assert any("`$PORT`, `$TP`, `$EXTRA` are set where compose runs" in n for n in launch.notes)


def test_a_compose_variable_without_a_default_is_not_known_and_never_refused():
    text = compose('["python3", "-m", "sglang.launch_server", "--model-path=m", "--tp-size=${TP}", "--mem-fraction-static=$MEM"]')
    launch = parse_launch_command(text, sglang_version="0.5.12")
    assert "tp_size" not in launch.requested and "mem_fraction_static" not in launch.requested
    assert {"tp_size", "mem_fraction_static"} <= set(launch.unresolved)
    assert not launch.refusals
    assert "$$" not in launch.command_line


def test_compose_writes_a_dollar_as_two():
    text = compose('["python3", "-m", "sglang.launch_server", "--model-path=m", "--served-model-name=a$$b"]')
    assert parse_launch_command(text, sglang_version="0.5.12").requested["served_model_name"] == "a$b"


def test_kubernetes_fills_dollar_parentheses_from_the_containers_env_only():
    launch = parse_launch_command(pod(["--model-path", "m", "--tp", "$(TP)", "--port", "$(PORT)"], {"TP": "4"}), sglang_version="0.5.12")
    assert launch.requested["tp_size"] == 4
    assert "port" in launch.unresolved and not launch.refusals
    escaped = parse_launch_command(pod(["--model-path", "m", "--served-model-name", "$$(X)"], {"X": "y"}), sglang_version="0.5.12")
    assert escaped.requested["served_model_name"] == "$(X)"


def test_a_list_of_no_known_tool_keeps_its_variables_not_known():
    launch = parse_launch_command('["--model-path", "m", "--tp", "${TP:-2}"]\n', sglang_version="0.5.12")
    assert "tp_size" in launch.unresolved and not launch.refusals


INT_FLAGS = ["--tp", "--dp", "--max-running-requests", "--chunked-prefill-size", "--port", "--page-size", "--cuda-graph-max-bs"]
NAME = st.from_regex(r"[A-Z][A-Z0-9_]{0,12}", fullmatch=True)


@settings(max_examples=150, deadline=None)
@given(flag=st.sampled_from(INT_FLAGS), name=NAME, default=st.one_of(st.none(), st.integers(1, 4096)), glued=st.booleans(),
       shape=st.sampled_from(["compose list", "compose line", "kubernetes", "bare list"]))
def test_a_manifest_variable_is_never_judged_as_its_text(flag, name, default, glued, shape):
    """Whatever the variable, the form and the flag: its value is the default compose would use,
    the env Kubernetes would use, or not known; never the text ``${...}`` refused as a value."""
    ref = f"${{{name}:-{default}}}" if default is not None and shape != "kubernetes" else (f"$({name})" if shape == "kubernetes" else f"${{{name}}}")
    words = ["--model-path", "m", *([f"{flag}={ref}"] if glued else [flag, ref])]
    if shape == "compose list":
        text = compose("[" + ", ".join(f'"{w}"' for w in [*LAUNCH, *words]) + "]")
    elif shape == "compose line":
        text = compose(">\n      " + " ".join([*LAUNCH, *words]) + "\n")
    elif shape == "kubernetes":
        text = pod(words, {name: str(default)} if default is not None else {})
    else:
        text = "[" + ", ".join(f'"{w}"' for w in words) + "]\n"
    explanation = explain_launch(text, sglang_version="0.5.12")
    assert not [f for f in explanation.findings if f.severity == "error"], [f.title for f in explanation.findings]
    launch = parse_launch_command(text, sglang_version="0.5.12")
    assert not any("$" in str(v) for v in launch.requested.values())
    known = default is not None and shape != "bare list"
    dest = next(iter(set(launch.requested) | set(launch.unresolved) - {"model_path"}), None)
    assert dest is not None
    if known:
        assert default in launch.requested.values()
    else:
        assert launch.unresolved


@pytest.mark.parametrize("name, releases", [("unseen-11.txt", (None, "0.5.23")), ("unseen-12.txt", (None, "0.5.13", "0.5.23"))])
def test_real_compose_files_with_defaults_are_judged_without_a_false_refusal(name, releases):
    """Each as pasted and in the releases its file names (0.5.13.post1; a nightly after 0.5.21)."""
    text = "\n".join((CORPUS / name).read_text().splitlines()[3:])
    for version in releases:
        explanation = explain_launch(text, sglang_version=version)
        assert not [f.title for f in explanation.findings if f.severity == "error"]


def test_the_real_kubernetes_job_is_read_with_its_values():
    text = "\n".join((CORPUS / "unseen-20.txt").read_text().splitlines()[3:])
    launch = parse_launch_command(text, sglang_version="0.5.16")
    assert launch.requested["tp_size"] == 8 and launch.requested["dp_size"] == 8 and not launch.refusals


def test_a_cpu_device_with_release_and_model_unknown_is_explained(capsys):
    assert main(["explain", "--launch", "python -m sglang.launch_server --model-path x --device cpu"]) == 0
    out = capsys.readouterr().out
    assert "cannot be judged on the CPU" in out
    text = "\n".join((CORPUS / "unseen-19.txt").read_text().splitlines()[3:])
    assert main(["explain", "--launch", text]) == 0
    assert "`$MODEL_ID` is not set in this file" in capsys.readouterr().out


def test_a_config_file_that_is_not_read_does_not_make_its_flags_missing():
    launch = parse_launch_command("python -m sglang.launch_server --config /srv/sglang.yaml", sglang_version="0.5.12")
    assert not launch.refusals
    assert any("the file was not read" in p for p in launch.problems)
    read = parse_launch_command("python -m sglang.launch_server --config /srv/sglang.yaml", sglang_version="0.5.12", config_loader=lambda path: {"tp-size": 2})
    assert [r.kind for r in read.refusals] == ["required"]
