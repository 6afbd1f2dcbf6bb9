"""Explain against real SGLang 0.5.23 servers on CPU (run with --real-sglang): with the server's
own answers, its launch command and its log, the knowledge base finds nothing false: no error,
no warning, no contradiction; and each server is explained by the rules of its own release."""

from __future__ import annotations

import pytest

from pytest_sglang import connect
from pytest_sglang.explain import explain


@pytest.mark.parametrize("server", ["real_llama", "real_qwen_moe_tp2"])
def test_a_real_server_explains_without_false_findings(server, request):
    real = request.getfixturevalue(server)
    with connect(real.url, ssh="local", logs=f"file:{real.log_path}") as target:
        explanation = explain(target)
        assert target.launch_command, "0.5.23 reports its launch command: the rules read what was requested"
    assert explanation.sglang_version == "0.5.23" and explanation.rules_version == "0.5.23"
    false = [f"{f.id}: {f.summary}" for f in explanation.findings if f.severity != "info" or f.status == "contradicted"]
    assert false == []
    assert explanation.rules_evaluated > 0
