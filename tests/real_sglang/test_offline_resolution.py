"""The stored resolutions (tests/data) are what the real SGLang says today, and the CLI table
the launch-command parser uses is SGLang's own (run with --real-sglang)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import generate_data
import harness

ROOT = Path(__file__).resolve().parents[2]


def test_stored_resolutions_match_what_sglang_resolves_now(sglang_python):
    fresh = generate_data.generate()
    stored = json.loads(generate_data.DATA.read_text())
    assert fresh["base"] == stored["base"]
    assert fresh["cases"].keys() == stored["cases"].keys()
    for name in fresh["cases"]:
        assert fresh["cases"][name] == stored["cases"][name], f"{name}: run tests/real_sglang/generate_data.py"


def test_the_packaged_flag_table_is_sglangs_own(sglang_python):
    out = subprocess.run([str(sglang_python), str(harness.HERE / "sglang_offline.py"), "cli-table"], capture_output=True, text=True, check=True).stdout
    packaged = ROOT / "pytest_sglang" / "knowledge_data" / f"sglang-cli-{harness.SGLANG_VERSION}.json"
    assert json.loads(out) == json.loads(packaged.read_text())


@pytest.mark.parametrize("version", ["0.5.5", "0.5.9", "0.5.12"])
def test_the_older_flag_tables_are_read_from_their_wheels(version):
    import flag_table_from_source

    fresh = flag_table_from_source.table(flag_table_from_source.server_args_source(version), version)
    packaged = ROOT / "pytest_sglang" / "knowledge_data" / f"sglang-cli-{version}.json"
    assert fresh == json.loads(packaged.read_text())
