"""Paths and helpers the tests share (the shared corpus and artefacts, beside the project)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus"
ARTEFACTS = SHARED / "artefacts" / "sglang-0.5.23-cpu"


def corpus_text(path: Path) -> str:
    """A corpus file without its three header lines."""
    return path.read_text(encoding="utf-8", errors="replace").split("\n", 3)[3]


def corpus_files(folder: str) -> list[Path]:
    files = sorted((CORPUS / folder).glob("*.txt"))
    if not files:
        pytest.skip(f"shared corpus not found at {CORPUS / folder}", allow_module_level=True)
    return files


def artefact(name: str) -> str:
    path = ARTEFACTS / name
    if not path.exists():
        pytest.skip(f"shared artefact not found: {path}")
    return path.read_text()
