"""What the normaliser needs to know of SGLang, read from the explain knowledge base's data
(``pytest_sglang/model/knowledge/knowledge.toml``), so each fact is written once.

Only the lists are read here (with the standard TOML reader, no validation models), which keeps
the normaliser's import cheap; the rules themselves are for :mod:`pytest_sglang.judge.explain`.
"""

from __future__ import annotations

import sys
from importlib import resources
from typing import TypeVar

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

_LISTS = tomllib.loads(resources.files(__name__).joinpath("knowledge.toml").read_text(encoding="utf-8"))["lists"]

def _newest_multimodal_archs() -> frozenset[str]:
    """configs/model_config.py multimodal_model_archs of the newest release with a model table
    (models/sglang-models-VERSION.json; explain reads each release's own)."""
    import json

    from packaging.version import Version

    tables = [p.name for p in resources.files(__name__).joinpath("models").iterdir() if p.name.startswith("sglang-models-")]
    newest = max(tables, key=lambda n: Version(n[len("sglang-models-") : -len(".json")]))
    data = json.loads(resources.files(__name__).joinpath("models").joinpath(newest).read_text(encoding="utf-8"))
    return frozenset(data["lists"]["multimodal_archs"]["members"])


MULTIMODAL_ARCHS = _newest_multimodal_archs()
# Architectures with a mamba-like (linear attention / SSM) state cache.
HYBRID_ARCHS = frozenset(_LISTS["hybrid_archs"])


def flashinfer_allreduce_fusion_runs_on(sm: int) -> bool:
    """The runtime gate (0.5.10-0.5.13 ``layers/communicator.py:158``; 0.5.14+ ``add_norm.py:144``):
    SM90 (``is_sm90_supported``) or SM10x (``is_sm100_supported``: major 10). Not SM11x, not SM12x."""
    return sm // 10 in (9, 10)


_Figure = TypeVar("_Figure", int, float)


def max_req_input_len(context_len: _Figure, max_total_num_tokens: _Figure) -> _Figure:
    """The longest prompt a server accepts, as every release's TP worker computes it
    (0.5.5-0.5.23 ``TpModelWorker.__init__``): ``min(context_len - 1, max_total_num_tokens - 1) - 5``.
    A KV pool smaller than the context length caps it below ``--context-length``."""
    return min(context_len - 1, max_total_num_tokens - 1) - 5


MAX_REQ_INPUT_LEN_FORMULA = "min(context_len - 1, max_total_num_tokens - 1) - 5, the TP worker's formula"
# Settings under which the TP worker sizes the longest prompt otherwise (any value but None, 0
# or 1): the formula above does not apply, and why.
MAX_REQ_INPUT_LEN_EXCEPTIONS = {
    "dllm_algorithm": "a diffusion LLM's block",
    "dcp_size": "decode context parallelism",
    "attn_dcp_size": "decode context parallelism",
}


FLASHINFER_ALLREDUCE_FUSION_GATE = (
    "FlashInfer allreduce fusion runs only on SM90 and SM10x "
    "(a silent no-op elsewhere in SGLang 0.5.10-0.5.13, a start-up error from 0.5.14)"
)
