"""The stored real shapes the simulator is held to are still what SGLang 0.5.23 answers."""

from __future__ import annotations

import json

import capture_shapes


def test_stored_shapes_are_what_the_real_server_answers_now(sglang_python, tmp_path):
    fresh = json.loads(json.dumps(capture_shapes.capture_from_a_real_server(tmp_path)))
    stored = json.loads(capture_shapes.DATA.read_text())
    assert fresh == stored, "run tests/real_sglang/capture_shapes.py"
