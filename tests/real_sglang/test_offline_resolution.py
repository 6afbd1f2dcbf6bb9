"""The stored resolutions (tests/data) are what the real SGLang says today, and the flag tables
the launch-command parser uses are each release's own argparse (run with --real-sglang)."""

from __future__ import annotations

import json
from pathlib import Path

import argparse_releases
import flag_table_live
import generate_data
import pytest

from pytest_sglang.parse.launch import table_versions

ROOT = Path(__file__).resolve().parents[2]


def test_stored_resolutions_match_what_sglang_resolves_now(sglang_python):
    fresh = generate_data.generate()
    stored = json.loads(generate_data.DATA.read_text())
    assert fresh["base"] == stored["base"]
    assert fresh["cases"].keys() == stored["cases"].keys()
    for name in fresh["cases"]:
        assert fresh["cases"][name] == stored["cases"][name], f"{name}: run tests/real_sglang/generate_data.py"


@pytest.mark.parametrize("version", table_versions())
def test_every_packaged_flag_table_is_that_releases_own_argparse(sglang_python, version):
    packaged = ROOT / "pytest_sglang" / "model" / "knowledge" / "flags" / f"sglang-cli-{version}.json"
    # A release whose parser the stored commands are also checked against is imported once for both.
    fresh = argparse_releases.ask(version, sglang_python)[0] if version in argparse_releases.RELEASES else flag_table_live.table(version, sglang_python)
    assert fresh == json.loads(packaged.read_text()), f"run tests/real_sglang/flag_table_live.py {version}"


def test_what_each_release_parses_is_what_the_stored_data_says(sglang_python):
    stored = json.loads(argparse_releases.DATA.read_text())
    fresh = argparse_releases.generate()
    assert fresh["commands"] == stored["commands"]
    for version in fresh["releases"]:
        assert fresh["releases"][version] == stored["releases"][version], f"{version}: run tests/real_sglang/argparse_releases.py"
