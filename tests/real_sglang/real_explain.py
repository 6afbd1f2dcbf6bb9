"""Explain against a real SGLang 0.5.23 server on CPU: with the server's own answers, its launch
command and its log, the knowledge base finds nothing false (no error, no warning, no
contradiction), and the server is explained by the rules of its own release. Used by the
modules that already run a server, so no server is started for it alone."""

from __future__ import annotations

from typing import Any

from pytest_sglang import connect
from pytest_sglang.judge.explain import explain


def assert_no_false_findings(real: Any) -> None:
    with connect(real.url, ssh="local", logs=f"file:{real.log_path}") as target:
        explanation = explain(target)
        assert target.launch_command, "0.5.23 reports its launch command: the rules read what was requested"
    assert explanation.sglang_version == "0.5.23" and explanation.rules_version == "0.5.23"
    false = [f"{f.id}: {f.summary}" for f in explanation.findings if f.severity != "info" or f.status == "contradicted"]
    assert false == []
    assert explanation.rules_evaluated > 0
