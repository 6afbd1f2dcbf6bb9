"""Baselines of the effective configuration: a reviewable document per deployment, compared
field by field with what a target runs now, under a per-field policy.

    from pytest_sglang import connect
    from pytest_sglang.judge.baseline import load_baseline
    from pytest_sglang.judge.baseline import document
    from pytest_sglang.judge.baseline import compare

    with connect("sim://qwen35-122b-a10b-4xrtx6000-candidate") as target:
        live = document(target)
    baseline = load_baseline("baselines/qwen35.json")
    for diff in compare(baseline, live, None):  # None: the baseline file's own policy
        print(diff.line())
"""

from __future__ import annotations

from pytest_sglang.judge.baseline.compare import FieldDiff, Policy, PolicyError, Rule, compare, flatten
from pytest_sglang.judge.baseline.document import default_key, document, dumps, safe_name
from pytest_sglang.judge.baseline.store import BaselineError, load_baseline

__all__ = ["BaselineError", "FieldDiff", "Policy", "PolicyError", "Rule", "compare", "default_key", "document", "dumps", "flatten", "load_baseline", "safe_name"]
