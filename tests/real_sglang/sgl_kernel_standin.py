"""Stand-in for ``sgl_kernel`` on CPU-only machines (no CPU build of it exists on PyPI).

SGLang imports these names at start with ``SGLANG_USE_CPU_ENGINE=1`` but, for the models the
harness serves, never calls them. If a future SGLang does call one, it fails loudly here
instead of passing silently.
"""

from __future__ import annotations

from typing import Any, NoReturn


class StandInCalled(RuntimeError):
    pass


def _stand_in(name: str):  # type: ignore[no-untyped-def]
    def call(*args: Any, **kwargs: Any) -> NoReturn:
        raise StandInCalled(
            f"sgl_kernel.{name} was called, but this is the pytest-sglang CPU harness's stand-in: "
            "this SGLang version needs a real kernel for this path"
        )

    call.__name__ = name
    return call


_KNOWN = (
    "copy_all_layer_kv_cache_cpu",
    "assign_req_to_token_pool_cpu",
    "assign_extend_cache_locs_cpu",
    "assign_draft_cache_locs_contiguous_cpu",
    "build_tree_kernel_efficient_cpu",
    "fill_accept_out_cache_loc_cpu",
    "fill_bonus_tokens_cpu",
    "verify_tree_greedy_cpu",
)
for _name in _KNOWN:
    globals()[_name] = _stand_in(_name)

