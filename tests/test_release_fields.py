"""A test that reads a field its host's SGLang release does not have fails in one line naming
the field, the release, the releases that have it and its name there; a field the release has
but the host did not report reads None."""

from __future__ import annotations

import re

import pytest

from pytest_sglang import FieldNotInRelease, ServerArgs
from pytest_sglang.parse.launch import table_versions

OLD = "sim://llama31-8b-1xh100-0.5.9"
SEED = "sim://qwen35-122b-a10b-4xrtx6000-baseline"  # 0.5.12
NEW = "sim://qwen35-122b-a10b-4xrtx6000-0.5.23"

SUITE = """
def test_radix(server_args):
    assert server_args.mamba_radix_cache_strategy in ("no_buffer", "extra_buffer")

def test_scheduler(server_args):
    assert server_args.mamba_scheduler_strategy != "unknown"  # reads: a value, or None where not reported

def test_prefill_backend(server_args):
    assert server_args.cuda_graph_config.prefill.backend == "breakable"

def test_reported_by_every_release_the_release_has(server_args):
    assert server_args.get("mamba_radix_cache_strategy", "absent") != "x"
    assert getattr(server_args, "cuda_graph_config", "absent") != "x"
"""


def _failures(result: pytest.HookRecorder) -> dict[str, str]:
    """test name -> the failure's text, for each failed test of the run."""
    out: dict[str, str] = {}
    for report in result.getreports("pytest_runtest_logreport"):
        if report.failed:
            out[report.nodeid.split("::")[-1].split("[")[0]] = str(report.longrepr)
    return out


@pytest.mark.parametrize("host,release", [(OLD, "0.5.9"), (SEED, "0.5.12")])
def test_a_field_of_newer_releases_fails_in_one_line_before_them(pytester, host, release):
    pytester.makepyfile(SUITE)
    result = pytester.inline_run("--sglang-host", host, "-p", "no:cacheprovider")
    result.assertoutcome(passed=2, failed=2)
    failures = _failures(result)
    assert set(failures) == {"test_radix", "test_prefill_backend"}
    radix, nested = failures["test_radix"], failures["test_prefill_backend"]
    assert radix.endswith(
        f":2: server_args.mamba_radix_cache_strategy: SGLang {release} has no such field "
        f"(releases that have it: 0.5.14-0.5.23); in {release} it is mamba_scheduler_strategy"
    )
    assert nested.endswith(f":8: server_args.cuda_graph_config: SGLang {release} has no such field (releases that have it: 0.5.14-0.5.23); "
                           "read in every release as effective.decode_cuda_graph, effective.decode_cuda_graph_max_bs, effective.prefill_cuda_graph")
    for text in failures.values():
        assert "\n" not in text and "pydantic" not in text and "NoneType" not in text and "Traceback" not in text


def test_a_renamed_field_fails_in_one_line_after_its_rename(pytester):
    pytester.makepyfile(SUITE)
    result = pytester.inline_run("--sglang-host", NEW, "-p", "no:cacheprovider")
    result.assertoutcome(passed=3, failed=1)
    failures = _failures(result)
    assert list(failures) == ["test_scheduler"]
    assert failures["test_scheduler"].endswith(
        ":5: server_args.mamba_scheduler_strategy: SGLang 0.5.23 has no such field "
        "(releases that have it: 0.5.7-0.5.13.post1); in 0.5.23 it is mamba_radix_cache_strategy"
    )


def test_the_terminal_shows_the_line_and_no_traceback(pytester):
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("--sglang-host", SEED, "-p", "no:cacheprovider", "-k", "radix")
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines(["*.py:2: server_args.mamba_radix_cache_strategy: SGLang 0.5.12 has no such field*"])
    assert "pydantic" not in result.stdout.str() and "def test_radix" not in result.stdout.str()


def _args(fields: dict, version: str | None) -> ServerArgs:
    return ServerArgs.from_mapping(fields).bind("server_args", "/server_info", "host").for_release(version)


def test_a_field_the_release_has_but_did_not_report_is_none():
    args = _args({"tp_size": 2}, "0.5.12")
    assert args.mamba_scheduler_strategy is None  # declared, 0.5.12 has it
    assert args.enable_dp_lm_head is None  # undeclared, 0.5.12 has it
    assert args.get("enable_dp_lm_head", False) is False
    with pytest.raises(KeyError, match="did not report it"):
        args["enable_dp_lm_head"]


def test_the_error_is_an_attribute_error_and_a_key_error():
    args = _args({"tp_size": 2}, "0.5.12")
    assert not hasattr(args, "cuda_graph_config")
    assert getattr(args, "mamba_radix_cache_strategy", "default") == "default"
    with pytest.raises(FieldNotInRelease) as caught:
        args["cuda_graph_config"]
    assert isinstance(caught.value, KeyError) and str(caught.value).startswith("server_args.cuda_graph_config: SGLang 0.5.12")
    first, last = table_versions()[0], table_versions()[-1]
    said = f"server_args.tp_sise: the host did not report it, and no SGLang release {first}-{last} has a server argument of that name (did you mean tp_size?)"
    with pytest.raises(FieldNotInRelease, match=f"^{re.escape(said)}$"):
        args.tp_sise  # noqa: B018


def test_a_reported_value_is_read_whatever_the_tables_say():
    assert _args({"cuda_graph_config": {"prefill": {"backend": "full"}}}, "0.5.12").cuda_graph_config.prefill.backend == "full"


def test_an_unknown_release_or_an_unbound_model_keeps_the_old_behaviour():
    with pytest.raises(FieldNotInRelease, match="its SGLang release is unknown"):
        _args({}, None).mamba_radix_cache_strategy  # noqa: B018
    assert _args({}, None).mamba_scheduler_strategy is None  # a declared field: None, as before
    with pytest.raises(AttributeError) as caught:
        ServerArgs.from_mapping({}).mamba_radix_cache_strategy  # noqa: B018
    assert not isinstance(caught.value, FieldNotInRelease)


def test_a_newer_release_than_the_tables_is_read_as_the_newest_and_says_so():
    with pytest.raises(FieldNotInRelease, match=r"SGLang 0.5.30 \(read as 0.5.23, the nearest release pytest-sglang knows\) has no such field"):
        _args({}, "0.5.30").mamba_scheduler_strategy  # noqa: B018
