"""Stand-ins that let the real SGLang server run on a CPU-only machine.

Installed into the harness's virtual environment only (never into the project). Loaded by a
``.pth`` line at interpreter start, it does nothing until ``torchvision`` is imported.

PyPI's torchvision beside a CPU build of torch cannot load its C extension, and its Python
meta registrations then fail on ``operator torchvision::nms does not exist``. Registering the
operator schemas (no kernels) first lets it import. Calling them raises.
"""

from __future__ import annotations

import importlib.abc
import sys

_LIBRARY = None


def _register_torchvision_schemas() -> None:
    global _LIBRARY
    import torch

    if _LIBRARY is not None:
        return
    _LIBRARY = torch.library.Library("torchvision", "DEF")  # kept alive: the schemas live with it
    for schema in (
        "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
        "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    ):
        try:
            _LIBRARY.define(schema)
        except RuntimeError:
            pass  # already defined (a torchvision build that works)


class _BeforeTorchvision(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name == "torchvision":
            sys.meta_path.remove(self)
            _register_torchvision_schemas()
        return None


sys.meta_path.insert(0, _BeforeTorchvision())
