"""What a release's own post-init makes of launch commands on a simulated GPU: the package's runner
(``pytest_sglang/judge/explain/run_in_sglang/postinit.py``, which ``pytest-sglang explain
--execute`` runs in a user's SGLang environment), under the name the real tier's scripts use.

    python sglang_postinit.py < cases     # as the runner: one JSON line of answers

Imported (``sglang_pools.py``), this module is the runner's module itself, its state shared.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

RUNNER = Path(__file__).resolve().parents[2] / "pytest_sglang" / "judge" / "explain" / "run_in_sglang" / "postinit.py"

if __name__ == "__main__":
    runpy.run_path(str(RUNNER), run_name="__main__")
else:
    sys.path.insert(0, str(RUNNER.parent))
    import postinit

    sys.modules[__name__] = postinit
