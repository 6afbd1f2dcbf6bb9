"""Each release's model table against its wheel (run with --real-sglang).

The tables explain reads per release (``pytest_sglang/model/knowledge/models/``: the model
registry's architectures, the architecture lists of ``configs/model_config.py`` and the
allreduce-fusion list, and the classes each pinned transformers exports) are regenerated from
the wheels of SGLang 0.5.5-0.5.23 and of the transformers versions they pin, and must be what
the package ships.
"""

from __future__ import annotations

import model_tables_live

from pytest_sglang.model.knowledge.model_tables import model_table, model_table_versions


def test_every_release_has_a_model_table_and_each_is_what_its_wheel_says():
    releases = model_tables_live.shipped_versions()
    assert list(model_table_versions()) == releases
    differences = list(model_tables_live.differences(releases))
    assert not differences, "run: python tests/real_sglang/model_tables_live.py\n" + "\n".join(differences)


def test_each_registry_holds_the_architectures_the_tier_serves():
    # The tiny models the real-SGLang servers run are these architectures: each release's table has them.
    for release in model_table_versions():
        table = model_table(release)
        assert table is not None and {"LlamaForCausalLM", "Qwen3MoeForCausalLM"} <= table.architectures, release
