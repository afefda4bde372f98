"""Models as data: the registry, and pooling and prefixes checked on a tiny model by hand.

The tiny model is a real ONNX graph (an embedding lookup, built here with ``onnx``)
and a real ``tokenizers`` word-level tokenizer, so the whole ``OnnxEmbedder`` path
runs and every expected vector can be worked out on paper.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import FakeSource, detail
from onnx import TensorProto, helper
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import WhitespaceSplit
from tokenizers.processors import TemplateProcessing

from plaud_index.config import build_config
from plaud_index.embedding.embedder import OnnxEmbedder, pool
from plaud_index.embedding.files import ModelFiles, sha256_file
from plaud_index.embedding.specs import KNOWN, ModelSpec, model_spec
from plaud_index.index.store import open_snapshot
from plaud_index.sync.indexer import Indexer

VOCAB = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "query:": 4, "passage:": 5,
         "red": 6, "blue": 7}
# One row per token id; chosen so that means and norms are easy to do by hand.
TABLE = np.array([[0, 0, 0], [0, 0, 0], [0, 0, 4], [0, 0, 0], [0, 6, 0], [0, 2, 0],
                  [2, 0, 0], [0, 0, 2]], dtype=np.float32)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> ModelFiles:
    folder = tmp_path_factory.mktemp("tiny-model")
    tokenizer = Tokenizer(WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = WhitespaceSplit()
    tokenizer.post_processor = TemplateProcessing(single="[CLS] $A [SEP]",
                                                  special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tokenizer.save(str(folder / "tokenizer.json"))
    table = helper.make_tensor("table", TensorProto.FLOAT, TABLE.shape, TABLE.flatten())
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"], axis=0)],
        "tiny", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "t"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["b", "t", 3])], initializer=[table])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(folder / "model.onnx"))
    onnx_path = folder / "model.onnx"
    return ModelFiles("test/tiny", onnx_path, folder / "tokenizer.json", sha256_file(onnx_path))


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_mean_pooling_averages_the_unmasked_tokens_only() -> None:
    hidden = np.array([[[2, 0], [0, 2], [9, 9]]], dtype=np.float32)  # third is padding
    mask = np.array([[1, 1, 0]])
    np.testing.assert_allclose(pool(hidden, mask, "mean")[0], unit(1, 1), rtol=1e-6)
    np.testing.assert_allclose(pool(hidden, mask, "cls")[0], unit(2, 0), rtol=1e-6)


def test_passage_prefix_and_mean_pooling_on_a_real_graph(tiny: ModelFiles) -> None:
    spec = ModelSpec("test/tiny", 3, "mean", "query: ", "passage: ", 16)
    embedder = OnnxEmbedder(tiny, spec=spec)
    # [CLS] passage: red [SEP] → mean of (0,0,4) (0,2,0) (2,0,0) (0,0,0) = (0.5, 0.5, 1)
    np.testing.assert_allclose(embedder.embed(["red"])[0], unit(0.5, 0.5, 1), rtol=1e-6)
    # [CLS] query: red [SEP] → mean of (0,0,4) (0,6,0) (2,0,0) (0,0,0) = (0.5, 1.5, 1)
    np.testing.assert_allclose(embedder.embed_query("red"), unit(0.5, 1.5, 1), rtol=1e-6)
    assert embedder.count_tokens("red") == 4  # the passage prefix counts against the budget


def test_cls_pooling_takes_the_first_token(tiny: ModelFiles) -> None:
    embedder = OnnxEmbedder(tiny, spec=ModelSpec("test/tiny", 3, "cls", max_tokens=16))
    np.testing.assert_allclose(embedder.embed(["red blue"])[0], unit(0, 0, 1), rtol=1e-6)


def test_padding_in_a_batch_does_not_change_a_vector(tiny: ModelFiles) -> None:
    embedder = OnnxEmbedder(tiny, spec=ModelSpec("test/tiny", 3, max_tokens=16))
    together = embedder.embed(["red", "red blue blue blue"])
    np.testing.assert_allclose(together[0], embedder.embed(["red"])[0], rtol=1e-6)


def test_truncation_follows_the_models_limit(tiny: ModelFiles) -> None:
    short = OnnxEmbedder(tiny, spec=ModelSpec("test/tiny", 3, "mean", max_tokens=3))
    # [CLS] red [SEP] after truncation to 3 pieces: the blues never reach the model
    np.testing.assert_allclose(short.embed(["red blue blue"])[0],
                               unit(2, 0, 4), rtol=1e-6)


def test_known_models_carry_their_recipe() -> None:
    e5, known = model_spec("Xenova/multilingual-e5-small")
    assert known and (e5.query_prefix, e5.passage_prefix, e5.pooling) == ("query: ",
                                                                         "passage: ", "mean")
    bge, _ = model_spec("Xenova/bge-small-en-v1.5")
    assert bge.pooling == "cls" and bge.query_prefix and not bge.passage_prefix
    assert KNOWN["Xenova/all-MiniLM-L6-v2"].max_tokens == 256


def test_an_unknown_model_runs_with_defaults_and_accepts_overrides() -> None:
    spec, known = model_spec("someone/new-model")
    assert not known and (spec.pooling, spec.query_prefix, spec.max_tokens) == ("mean", "", 256)
    spec, _ = model_spec("someone/new-model", pooling="cls", query_prefix="q: ", max_tokens=64)
    assert (spec.pooling, spec.query_prefix, spec.max_tokens) == ("cls", "q: ", 64)


def test_the_default_recipe_keeps_the_bare_weight_hash_and_others_do_not() -> None:
    assert KNOWN["Xenova/all-MiniLM-L6-v2"].model_hash("abc") == "abc"
    assert KNOWN["Xenova/multilingual-e5-small"].model_hash("abc") != "abc"


def test_overrides_are_read_from_the_environment() -> None:
    config = build_config({"PLAUD_INDEX_HOME": "/tmp/x", "PLAUD_EMBED_POOLING": "CLS",
                           "PLAUD_EMBED_MAX_TOKENS": "128", "PLAUD_EMBED_QUERY_PREFIX": "q: "},
                          None)
    assert (config.embed_pooling, config.embed_max_tokens, config.embed_query_prefix) == (
        "cls", 128, "q: ")
    bad = build_config({"PLAUD_INDEX_HOME": "/tmp/x", "PLAUD_EMBED_POOLING": "max",
                        "PLAUD_EMBED_MAX_TOKENS": "-1"}, None)
    assert bad.embed_pooling is None and bad.embed_max_tokens is None


def test_switching_the_model_recipe_re_indexes_through_the_staged_rebuild(
        tiny: ModelFiles, tmp_path: Path) -> None:
    source = FakeSource([detail(f"r{i}", name=f"Meeting {i}") for i in range(3)])
    mean = OnnxEmbedder(tiny, spec=ModelSpec("test/tiny", 3, max_tokens=64))
    Indexer(source, mean, tmp_path).run_cycle()
    cls = OnnxEmbedder(tiny, spec=ModelSpec("test/tiny", 3, "cls", max_tokens=64))
    assert cls.model_hash != mean.model_hash
    report = Indexer(source, cls, tmp_path).run_cycle()
    assert report.added == 3  # everything embedded again, for the new recipe
    snap = open_snapshot(tmp_path / "vector-index")
    assert snap is not None and snap.model.sha256 == cls.model_hash
    assert len(snap.recordings) == 3 and not (tmp_path / "vector-index" /
                                              "manifest.next.json").exists()
