"""What explain says about a platform whose SGLang paths the knowledge base does not hold.

The rules describe SGLang's CUDA (NVIDIA) and ROCm (AMD) code. On an Ascend NPU, an Intel XPU,
the CPU or another device, a rule that reads the platform does not apply (SGLang takes its own
branch there), and the settings those branches decide are not judged: one info line says how
many rules that leaves out and why. The rules that do not read the platform are judged as
everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_sglang.judge.explain.expr import is_unknown
from pytest_sglang.judge.explain.findings import Finding
from pytest_sglang.model.gpu import PLATFORMS

if TYPE_CHECKING:
    from pytest_sglang.judge.explain.kb import Rule
    from pytest_sglang.judge.explain.situation import Situation

# The platforms whose SGLang paths the rules hold.
JUDGED = ("cuda", "hip")


def not_judged(situation: Situation, rules: tuple[Rule, ...] | list[Rule]) -> Finding | None:
    """One info finding naming the rules that read the platform and did not apply, when the
    platform is one the rules do not cover (``None`` on CUDA, ROCm or an unknown platform).
    Those rules were decided (they do not apply there), so the finding lists them in its
    summary, not as undecided ``related`` rules."""
    fact = situation.gpu.get("platform")
    if fact is None or fact.value is None or fact.value in JUDGED:
        return None
    platform = fact.value
    reads = situation.kb.reads_all
    ids = [r.id for r in rules if "gpu.platform" in reads.get(r.id, ()) and not _held(situation, r.id)]
    if not ids:
        return None
    where = PLATFORMS.get(platform, platform)
    shown = ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
    n = len(ids)
    return Finding(
        id=f"gap.platform.{platform}",
        rule=f"gap.platform.{platform}",
        severity="info",
        status="undecided",
        setting="gpu.platform",
        title=f"{n} rule{'s' if n != 1 else ''} cannot be judged on {where}",
        summary=(
            f"SGLang runs on {where} ({fact.source}): {n} rule{'s' if n != 1 else ''} follow SGLang's CUDA and ROCm "
            f"paths and do not apply there, and the knowledge base holds no rules for the {platform} paths that decide "
            f"those settings instead ({shown}); the other rules are judged"
        ),
        cause=(
            "The knowledge base is proven against SGLang's CUDA and ROCm code. Where SGLang takes another platform's "
            "branch (the attention backend, the memory tiers, CUDA graphs), the value it sets is not predicted."
        ),
        needs=["gpu.platform"],
    )


def _held(situation: Situation, rule_id: str) -> bool:
    outcome = situation.fired.get(rule_id, False)
    return not is_unknown(outcome) and bool(outcome)  # an unknown outcome has no truth value
