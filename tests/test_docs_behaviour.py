"""What the docs promise, held to what the package does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
BASELINE = "qwen35-122b-a10b-4xrtx6000-baseline"
CANDIDATE = "qwen35-122b-a10b-4xrtx6000-candidate"  # requests the FlashInfer all-reduce fusion


def _bundled(name: str) -> dict[str, Any]:
    return json.loads(resources.files("pytest_sglang.simulator").joinpath("profiles", f"{name}.json").read_text())


# ---- sim://NAME?api_key=K (docs/options.md) ------------------------------------------------

KEYED = """
def test_reads(sglang, server_args):
    assert server_args.api_key == "<redacted>"
    assert sglang.client.get("/v1/models").status_code == 200
"""


def test_a_simulator_with_a_key_in_its_spec_is_read_with_that_key_and_never_shows_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(KEYED)
    result = pytester.runpytest("--sglang-host", f"sim://{BASELINE}?api_key=sk-spec-KEY-7", "-v", "-rA")
    result.assert_outcomes(passed=1)
    assert "sk-spec-KEY-7" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines([f"*test_reads?sim://{BASELINE}? PASSED*"])


# ---- profile validation (docs/simulator.md, "Writing a profile") ---------------------------------


def _bad_profile(tmp_path: Path, change: Any) -> Path:
    data = _bundled(BASELINE)
    change(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    return path


BAD_PROFILES = [
    (lambda d: d.pop("model"), "model: missing (add it)"),
    (lambda d: d["gpu"].update(nam=d["gpu"].pop("name")), "gpu.name: missing (add it); gpu.nam: not a profile key (did you mean name?)"),
    (lambda d: d.update(servr_args=d.pop("server_args")), "servr_args: not a profile key (did you mean server_args?)"),
    (lambda d: d["runtime"].update(max_total_num_tokens="lots"), "runtime.max_total_num_tokens: input should be a valid integer"),
    (lambda d: d.update(sglang_version="banana"), "sglang_version: 'banana' is not a version"),
    (lambda d: d.update(template="0.4"), "template: '0.4' does not exist (use one of 0.5.12, 0.5.23)"),
]
BAD_IDS = ["missing-section", "misspelt-key", "misspelt-section", "wrong-type", "bad-version", "no-such-template"]


@pytest.mark.parametrize("change, message", BAD_PROFILES, ids=BAD_IDS)
def test_a_bad_profile_is_refused_in_one_line_naming_the_file_and_the_field(tmp_path: Path, change: Any, message: str) -> None:
    from pytest_sglang.base.errors import SpecError
    from pytest_sglang.simulator import load_profile

    path = _bad_profile(tmp_path, change)
    with pytest.raises(SpecError) as raised:
        load_profile(str(path))
    text = str(raised.value)
    assert "\n" not in text
    assert text.startswith(f"simulator profile {path} is not valid: ")
    assert message in text


def test_more_than_three_profile_errors_are_counted_not_listed(tmp_path: Path) -> None:
    from pytest_sglang.base.errors import SpecError
    from pytest_sglang.simulator import load_profile

    path = _bad_profile(tmp_path, lambda d: [d.pop(key) for key in ("name", "model", "runtime", "template", "sglang_version")])
    with pytest.raises(SpecError, match=r"name: missing \(add it\); .*; and 2 more") as raised:
        load_profile(str(path))
    assert str(raised.value).count(": missing") == 3


@pytest.mark.parametrize("text, message", [('{"name": ', "is not valid JSON: Expecting value: line 1"), ("[1]", "the file must hold one JSON object")])
def test_a_profile_that_is_not_a_json_object_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    from pytest_sglang.base.errors import SpecError
    from pytest_sglang.simulator import load_profile

    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(SpecError, match=message):
        load_profile(str(path))


def test_a_bad_profile_fails_its_host_in_one_line_without_a_traceback(pytester: pytest.Pytester, tmp_path: Path) -> None:
    path = _bad_profile(tmp_path, BAD_PROFILES[1][0])
    pytester.makepyfile("def test_x(sglang):\n    pass\n")
    result = pytester.runpytest("--sglang-host", f"sim://{path}")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "Traceback" not in out and "pydantic" not in out and "validation error" not in out
    lines = [line for line in out.splitlines() if f"simulator profile {path} is not valid" in line]
    assert lines and BAD_PROFILES[1][1] in lines[0]


def test_a_bad_profile_stops_the_simulator_cli_with_one_line(tmp_path: Path) -> None:
    path = _bad_profile(tmp_path, BAD_PROFILES[3][0])
    process = subprocess.run(
        [sys.executable, "-m", "pytest_sglang.sim", "--profile", str(path), "--port", "0"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert process.returncode != 0
    assert process.stdout == ""
    assert len(process.stderr.splitlines()) == 1, process.stderr
    assert process.stderr.startswith(f"error: simulator profile {path} is not valid: runtime.max_total_num_tokens")


def test_every_bundled_profile_still_loads() -> None:
    from pytest_sglang.simulator import load_profile
    from pytest_sglang.simulator.profile import bundled_profiles

    assert [load_profile(name).name for name in bundled_profiles()] == bundled_profiles()


# ---- the simulator from Python (docs/simulator.md, "From Python") -------------------------------


def test_the_simulator_sample_runs_as_printed_and_serves_the_profile() -> None:
    """The page's sample, run as a user's script: it prints the URL of a server that answers as
    the profile's SGLang release, and the process ends with its simulator."""
    page = (DOCS / "simulator.md").read_text()
    sample = page.split("## From Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    check = (
        "\nimport requests\n"
        "server = start_simulator(profile.name)\n"
        "print(requests.get(server.url + '/get_server_info', timeout=10).json()['version'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", sample + check],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    url, version = done.stdout.split()
    assert url.startswith("http://127.0.0.1:") and url.rsplit(":", 1)[1].isdigit()
    assert version == "0.5.12"


def test_the_simulator_is_one_package_under_its_documented_name_and_its_former_one() -> None:
    """``pytest_sglang.sim`` is the simulator package itself, and the command under the
    simulator's former module name (``pytest_sglang.target.sources.sim``) still runs it."""
    import pytest_sglang.sim
    import pytest_sglang.simulator
    from pytest_sglang.sim import start_simulator, unknown_profile

    assert pytest_sglang.sim is pytest_sglang.simulator
    assert start_simulator is pytest_sglang.simulator.launcher.start_simulator
    assert unknown_profile(BASELINE) is None and unknown_profile("/x/profile.json") is None
    assert "(did you mean sim://qwen35-122b-a10b-4xrtx6000-baseline " in (unknown_profile("qwen35-122b-a10b-4xrtx6000-basline") or "")
    for module in ("pytest_sglang.sim", "pytest_sglang.target.sources.sim"):
        done = subprocess.run(
            [sys.executable, "-m", module, "--list"], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert [line.split()[0] for line in done.stdout.splitlines()] == pytest_sglang.simulator.bundled_profiles()


# ---- pytest --help (docs/options.md) --------------------------------------------------------------


def test_the_options_page_names_the_group_as_pytest_help_prints_it(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    heading = next(line for line in result.stdout.lines if line.startswith("SGLang"))
    assert heading == "SGLang server configuration:"
    assert f"`{heading}`" in (DOCS / "options.md").read_text()


# ---- parse_launch_command(..., sglang_version=) (docs/launch-commands.md) -------------------------


@pytest.mark.parametrize(
    "version, message",
    [
        ("banana", "sglang_version 'banana' is not a version: give an SGLang release such as '0.5.23' (flag tables exist for SGLang 0.5.0rc2 to 0.5.23)"),
        ("", "sglang_version '' is not a version: give an SGLang release such as '0.5.23' (flag tables exist for SGLang 0.5.0rc2 to 0.5.23)"),
        ("0.4.0", "no flag table for SGLang 0.4.0: flag tables exist for SGLang 0.5.0rc2 to 0.5.23"),
    ],
)
def test_a_version_without_a_flag_table_is_one_line_naming_the_known_ones(version: str, message: str) -> None:
    from pytest_sglang.base.errors import SpecError
    from pytest_sglang.parse.launch import parse_launch_command

    with pytest.raises(SpecError) as raised:
        parse_launch_command("python -m sglang.launch_server --model-path m --tp 2", sglang_version=version)
    assert str(raised.value) == message


@pytest.mark.parametrize("version", ["0.5.30", "0.6.1"])
def test_a_release_newer_than_the_newest_table_is_read_with_it_and_says_so(version: str) -> None:
    from pytest_sglang.parse.launch import parse_launch_command

    launch = parse_launch_command("python -m sglang.launch_server --model-path m --tp 2", sglang_version=version)
    assert launch.flag_table_version == "0.5.23"
    assert launch.requested["tp_size"] == 2
    assert launch.problems == [f"no flag table for SGLang {version}: read with 0.5.23's"]


@pytest.mark.parametrize("version, table", [("0.5.24.dev3+g1234abc", "0.5.23"), ("0.0.0.dev1+g1a2b3c4", "0.5.23"), ("0.5.12.dev5+g1234abc", "0.5.11")])
def test_a_development_build_is_read_with_the_newest_release_before_it_and_says_so(version: str, table: str) -> None:
    from pytest_sglang.parse.launch import parse_launch_command

    launch = parse_launch_command("python -m sglang.launch_server --model-path m --tp 2", sglang_version=version)
    assert (launch.flag_table_version, launch.requested["tp_size"]) == (table, 2)
    assert launch.problems == [f"SGLang {version} is a development build: read with the flag table of {table}, the newest release before it"]


@pytest.mark.parametrize("version, table", [("0.5.5", "0.5.5"), ("0.5.12", "0.5.12"), ("0.5.8.post1", "0.5.8.post1"), ("0.5.3", "0.5.3"), ("0.5.23rc1", "0.5.23"), (None, "0.5.23")])
def test_a_known_release_is_read_with_its_own_table_without_a_note(version: str | None, table: str) -> None:
    from pytest_sglang.parse.launch import parse_launch_command

    launch = parse_launch_command("python -m sglang.launch_server --model-path m", sglang_version=version)
    assert (launch.flag_table_version, launch.problems) == (table, [])


@pytest.mark.parametrize("version, table", [("banana", "0.5.23"), ("0.4.9", "0.5.0rc2"), ("0.6.1", "0.5.23"), ("0.5.8.post2", "0.5.8.post1")])
def test_a_server_reporting_a_release_without_a_table_is_read_with_the_nearest(version: str, table: str) -> None:
    """What a server reports is never refused: its launch command is read with the nearest
    table, and ``requested.problems`` says so (the normaliser passes strict_version=False)."""
    from test_normalise import facts_of

    from pytest_sglang import normalise
    from pytest_sglang.simulator import load_profile

    profile = load_profile("qwen35-122b-a10b-4xrtx6000-0.5.23")  # reports its launch command
    info = profile.server_info()
    info["version"] = version
    requested = normalise(facts_of(info, profile.model_info())).requested
    assert requested is not None and requested.flag_table_version == table
    assert requested.problems[0].startswith(("no flag table for SGLang", "SGLang version"))


def test_the_docs_name_the_releases_with_a_flag_table() -> None:
    from pytest_sglang.parse.launch import table_versions

    known = table_versions()
    assert known[0] == "0.5.0rc2" and known[-1] == "0.5.23"
    text = (DOCS / "launch-commands.md").read_text()
    assert f"from {known[0]} to {known[-1]}" in text
    assert "sglang_version=" in text and "sglang_version=" in (DOCS / "library.md").read_text()


# ---- connect() (docs/library.md) ---------------------------------------------------------------------


def test_connect_takes_every_target_option_and_the_library_page_lists_them() -> None:
    import dataclasses
    import inspect

    from pytest_sglang import connect
    from pytest_sglang.target.options import TargetOptions

    fields = {f.name: f.default for f in dataclasses.fields(TargetOptions)}
    keywords = {name: p.default for name, p in inspect.signature(connect).parameters.items() if p.kind is p.KEYWORD_ONLY}
    assert keywords == fields
    page = (DOCS / "library.md").read_text()
    for name, default in fields.items():
        assert f"| `{name}` | `{default!r}` |" in page, name


# ---- effective.describe() for what the target cannot tell (docs/effective.md) ---------------------

SM_HINT = "give `sm` (the compute capability, e.g. 120)"


def _snapshot_over_http_only(overrides: dict[str, Any] | None = None, name: str = CANDIDATE) -> Any:
    """A deployment read over HTTP alone: SGLang 0.5.12 names no GPU there."""
    from test_normalise import facts_of

    from pytest_sglang import normalise
    from pytest_sglang.simulator import load_profile

    profile = load_profile(name)
    return normalise(facts_of(profile.server_info(), profile.model_info(), overrides=overrides))


def test_an_unknown_sm_is_described_with_how_to_give_it() -> None:
    e = _snapshot_over_http_only().effective
    assert e.sm is None
    assert e.describe("sm") == f"effective.sm = None (source unknown; {SM_HINT})"
    assert e.describe("gpu_name").endswith("give host access (`ssh` USER@HOST, or local) to read the GPUs with nvidia-smi)")
    # Each front end names its own options (docs/effective.md shows all three).
    from pytest_sglang.cli.main import spoken as cli_spoken
    from pytest_sglang.plugin.settings import spoken as plugin_spoken

    page = (DOCS / "effective.md").read_text()
    for said in (e.describe("sm"), plugin_spoken(e.describe("sm")), cli_spoken(e.describe("sm")), plugin_spoken(e.describe("gpu_name"))):
        assert said in page, said
    assert "give --sglang-sm (the compute capability" in plugin_spoken(e.describe("sm"))
    assert "give --sm (the compute capability" in cli_spoken(e.describe("sm"))
    # Requested, and whether it runs depends on the SM: said once, where the normaliser says it.
    assert e.flashinfer_allreduce_fusion is None and e.flashinfer_allreduce_fusion_requested is True
    assert e.describe("flashinfer_allreduce_fusion").count("`sm`") == 1


def test_a_given_sm_is_described_with_its_source_and_no_hint() -> None:
    e = _snapshot_over_http_only({"sm": 120}).effective
    assert e.describe("sm") == "effective.sm = 120 (from the sm setting)"
    assert e.flashinfer_allreduce_fusion is False  # SM120: decided
    assert SM_HINT not in e.describe("flashinfer_allreduce_fusion")
    assert SM_HINT not in e.describe("tp_size")
