"""Every real launch command and start-up line in tests/data through each release's own post-init
(run with --real-sglang): the stored answers (tests/data/sglang-corpus-postinit.json) are still
what each release says, and explain_launch agrees with them (corpus_postinit.py). Each release is
imported once.
"""

from __future__ import annotations

from collections import defaultdict

import corpus_postinit as corpus
import postinit_differential as differential
import pytest

STORED = corpus.stored()
BY_RELEASE: dict[str, list[dict]] = defaultdict(list)
for _case in STORED["cases"]:
    BY_RELEASE[_case["release"]].append(_case)


@pytest.mark.parametrize("version", sorted(BY_RELEASE, key=differential._key))
def test_each_release_still_gives_the_stored_answers_and_explain_agrees(sglang_python, version):
    cases = BY_RELEASE[version]
    answers = corpus.real_answers(cases, sglang_python, [version])
    changed = [c["item"] for c in cases if answers[c["name"]] != c["answer"]]
    assert not changed, f"SGLang {version} answers differently for {changed[:5]}: run tests/real_sglang/corpus_postinit.py --store"
    result = corpus.report(cases, answers, STORED["known"])
    open_ = [cls for cls in result["classes"] if not differential.known(cls, STORED["known"])]
    assert not open_, corpus.render(result, STORED["known"], [])
