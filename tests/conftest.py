from __future__ import annotations

import json
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
        pytest.skip(f"shared corpus not found at {CORPUS / folder}")
    return files


@pytest.fixture(scope="session")
def real_server_info() -> dict:
    return json.loads((ARTEFACTS / "server_info.json").read_text())


@pytest.fixture(scope="session")
def real_model_info() -> dict:
    return json.loads((ARTEFACTS / "model_info.json").read_text())


@pytest.fixture(scope="session")
def real_log() -> str:
    return (ARTEFACTS / "server.log").read_text()
