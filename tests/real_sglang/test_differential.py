"""The differential test against every release (run with --real-sglang): a fresh random sample of
launch commands per release, generated from that release's own flag table, is read by the
release's real entry point and by parse_launch_command, which must agree (rules a-d of
differential.py); and the stored set's answers (tests/data/sglang-launch-differential.json) are
still what each release says.

``SGLANG_DIFFERENTIAL_EXAMPLES`` (default 60) sets the sample per release;
``SGLANG_DIFFERENTIAL_SEED`` picks it (default a fixed seed, so CI cannot fail by chance;
``random`` draws a new one, and every failure message names its seed).
Each release is imported once for both tests, and its flag table from that import is reused by
test_offline_resolution.py.
"""

from __future__ import annotations

import os
import random
import subprocess
from functools import lru_cache
from pathlib import Path

import differential
import pytest

EXAMPLES = int(os.environ.get("SGLANG_DIFFERENTIAL_EXAMPLES", "60"))
# A fixed sample by default, so a CI run cannot fail by chance; SGLANG_DIFFERENTIAL_SEED=random
# (or a number) draws another one to search further.
_SEED_TEXT = os.environ.get("SGLANG_DIFFERENTIAL_SEED", "20261203")
SEED = random.randrange(2**32) if _SEED_TEXT == "random" else int(_SEED_TEXT)
STORED = differential.stored()


@lru_cache(maxsize=None)
def _release(version: str, python: Path) -> tuple[list[dict], list[dict], dict, dict]:
    """(stored cases, sample cases, defaults, answers) from one import of the release."""
    stored = STORED["releases"].get(version, {}).get("cases", [])  # SGLANG_REAL_RELEASES=all: a release the set does not hold
    sample = [{**case, "name": f"sample-{case['name']}"} for case in differential.generate(version, EXAMPLES, derandomize=False, seed=SEED)]
    defaults, answers = differential.real_answers(version, python, stored + sample)
    return stored, sample, defaults, answers


@pytest.mark.parametrize("version", differential.executed_versions())
def test_the_stored_answers_are_what_each_release_says(sglang_python, version):
    stored, _, defaults, answers = _release(version, sglang_python)
    if version in STORED["releases"]:
        assert defaults == STORED["releases"][version]["defaults"], f"{version}: run tests/real_sglang/differential.py --store"
    for case in stored:
        fresh = differential.stored_answer(answers[case["name"]], defaults)
        assert _choices_sorted(fresh) == _choices_sorted(case["answer"]), f"{case['name']}: run tests/real_sglang/differential.py --store"


def _choices_sorted(answer: dict) -> dict:
    """An answer with argparse's '(choose from ...)' list in sorted order: a release that builds
    its choices from a set lists them in a different order in each process."""
    import re

    def sort(match: re.Match) -> str:
        return "(choose from " + ", ".join(sorted(match.group(1).split(", "))) + ")"

    if "error" not in answer:
        return answer
    return {**answer, "error": re.sub(r"\(choose from ([^)]*)\)", sort, answer["error"])}


@pytest.mark.parametrize("version", differential.executed_versions())
def test_a_random_sample_is_read_as_the_release_reads_it(sglang_python, version):
    _, sample, defaults, answers = _release(version, sglang_python)
    assert sample, f"{version}: no command generated"
    report = {"generated": {version: len(sample)}, "accepted": {version: sum("parsed" in answers[c["name"]] for c in sample)}, "classes": {}}
    for case in sample:
        for cls, detail in differential.compare(case, version, answers[case["name"]], defaults):
            report["classes"].setdefault(cls, []).append({"release": version, "name": case["name"], "text": case["text"], "detail": detail})
    assert not report["classes"], f"SGLANG_DIFFERENTIAL_SEED={SEED}\n" + differential.render(report)


def test_every_network_connection_is_refused_in_the_release_process(sglang_python):
    # The entry-point runner (sglang_offline.py entry) refuses every address but loopback, so
    # no answer depends on a model hub or any other host.
    check = (
        "import socket, sys\n"
        f"sys.path.insert(0, {str(Path(differential.__file__).parent)!r})\n"
        "import sglang_offline\n"
        "sglang_offline._refuse_the_network()\n"
        "try:\n"
        "    socket.create_connection(('huggingface.co', 443), timeout=5)\n"
        "    print('connected')\n"
        "except OSError as exc:\n"
        "    print('refused' if 'network access refused' in str(exc) else f'other: {exc}')\n"
    )
    out = subprocess.run([str(sglang_python), "-c", check], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "refused", out.stdout + out.stderr
