"""Which public checkpoint a model path names, so a launch command's ``--model-path`` decides
the model rules when no model was given.

A path names the repository ``ORG/NAME`` when it is that id (``Qwen/Qwen3.5-122B-A10B``, what
SGLang downloads), a Hugging Face cache folder of it
(``~/.cache/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B/snapshots/<hash>``), or a local
folder ending in it (``/models/Qwen/Qwen3.5-122B-A10B``). The id is matched against the catalog
(:mod:`pytest_sglang.model.knowledge.checkpoints`) without regard to case. A repository the
catalog lacks is not guessed from a similar one: ``...-FP8`` or ``...-AWQ`` is another
checkpoint, with other weights and often another config.json.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_sglang.model.knowledge.checkpoints import Checkpoint, checkpoint

# huggingface_hub's cache folder of a model repository: models--ORG--NAME (its "/" written "--").
_CACHE = re.compile(r"(?:^|[/\\])models--([^/\\]+?)--([^/\\]+)(?:[/\\]|$)")
# A Hugging Face id's two parts: letters, digits, "-", "_", "." (not starting with a dot).
_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class PathMatch:
    path: str
    repo: str | None  # the ORG/NAME the path names, as written; None: it names no repository
    entry: Checkpoint | None  # its catalog entry, when the catalog has it
    exact_id: bool = False  # the path is the id itself (or its cache folder), not a local folder ending in it

    @property
    def source(self) -> str:
        return f"catalog entry {self.entry.repo}" if self.entry else ""

    def note(self) -> str | None:
        """What explain says about the model path: the entry it used, or that the id it names
        is not in the catalog. A local folder whose last two parts are no known id says nothing
        (any folder ends in two names)."""
        if self.entry is not None:
            text = (
                f"the model path names the public checkpoint {self.entry.repo}: the model facts are its catalog entry "
                f"({self.entry.architecture}, and the config.json fields it holds; give --model to judge another model)"
            )
            if self.entry.partial:
                text += f"; the entry holds part of that config.json only ({self.entry.partial})"
            return text
        if self.repo is not None and self.exact_id:
            return (
                f"the model path names {self.repo}, which is not in the catalog of known checkpoints, so the model is "
                "unknown (give --model ARCH or --model path/to/config.json)"
            )
        return None


def match_model_path(path: object) -> PathMatch:
    """The repository a model path names, and its catalog entry."""
    text = str(path or "").strip()
    cached = _CACHE.search(text)
    if cached:
        repo = f"{cached.group(1)}/{cached.group(2)}"
        return PathMatch(text, repo, checkpoint(repo), exact_id=True)
    parts = [p for p in re.split(r"[/\\]+", text.rstrip("/\\")) if p]
    if len(parts) < 2 or not all(_PART.fullmatch(p) for p in parts[-2:]):
        return PathMatch(text, None, None)
    repo = "/".join(parts[-2:])
    # The id itself: two parts, not an absolute, home or relative folder.
    exact = len(parts) == 2 and not text.startswith(("/", "\\", "~", "."))
    return PathMatch(text, repo, checkpoint(repo), exact_id=exact)
