"""Sentence embeddings: the ``Embedder`` protocol, the ONNX model, and a fast fake.

``OnnxEmbedder`` runs any model of ``model_specs`` the way sentence-transformers
does: the model's passage or query prefix, truncation at its token limit set
explicitly (a shipped ``tokenizer.json`` may carry other truncation/padding
settings), dynamic padding per batch, mean or CLS pooling, L2 normalisation
(the index stores unit rows, so dot = cosine). Texts are sorted by length before
batching so a batch pads to its own longest text, not the corpus's. Where the
model files come from is ``model_files.py``'s job.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..chunker import MAX_TOKENS
from ..errors import ModelUnavailableError
from .specs import ModelSpec
from .together import Together

if TYPE_CHECKING:
    from .files import ModelFiles

log = logging.getLogger(__name__)

BATCH_SIZE = 32  # texts per model run at most (short texts: queries, small notes)
# Padded tokens per model run at most. The attention's working memory grows with the batch
# and the square of its width, and onnxruntime's arena keeps its peak for the life of the
# process: batches of 32 full-length chunks held 1.2 GB, batches of <= 1024 tokens hold
# about 350 MB, and on 2 cores they are faster too (bench/first_use.py, README "Memory").
MAX_BATCH_TOKENS = 1024


class Embedder(Protocol):
    model_id: str
    model_hash: str
    dim: int
    max_tokens: int  # the chunker's budget per passage, special tokens included
    weak_similarity: float | None  # a best cosine under this is no close match (None: unknown)
    unmatched_similarity: float | None  # the same when no query word occurs in any passage

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Passages → ``(len(texts), dim)`` float32, each row L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """A search query → one unit vector (some models embed queries differently)."""
        ...

    def count_tokens(self, text: str) -> int:
        """Word pieces the model would see for this passage, special tokens and passage
        prefix included, untruncated."""
        ...


def pool(hidden: np.ndarray, mask: np.ndarray, pooling: str) -> np.ndarray:
    """Token vectors ``(batch, tokens, dim)`` → one unit vector per text."""
    if hidden.ndim == 2:  # an export that pools inside the graph
        return l2_normalize(hidden)
    if pooling == "cls":
        return l2_normalize(hidden[:, 0, :])
    weights = mask[:, :, None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    return l2_normalize(pooled)


def token_batches(lengths: Sequence[int], max_texts: int,
                  max_tokens: int) -> list[range]:
    """Cut texts sorted by token count (ascending) into runs whose padded size, texts ×
    the longest, stays within ``max_tokens`` (one text alone may exceed it)."""
    batches: list[range] = []
    start = 0
    for end in range(1, len(lengths) + 1):
        if end == len(lengths) or end - start >= max_texts or \
                (end + 1 - start) * lengths[end] > max_tokens:
            batches.append(range(start, end))
            start = end
    return batches


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    normalized: np.ndarray = (matrix / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
    return normalized


def session_options(ort: Any, threads: int | None = None) -> Any:
    """How the one session of the model runs queries and passages alike, chosen by
    measurement (``bench/embedding.py``, docs/tools.md "Memory"):

    - Basic graph optimisations, because they include constant folding: the int8 model keeps
      its weights as int8 initialisers behind ``Cast``/``Mul`` nodes, and without folding
      every run dequantises all of them again (a short query 11x slower than a bare
      session). Folding keeps a float32 copy resident (~120 MB more after load): the price
      of searching at the machine's speed. The higher levels add fusions that were no
      faster here.
    - The memory arena on: with the weights folded it holds only activations, so a hundred
      queries of many lengths leave the process where it was, and batches run 10-30%
      faster than without it.
    - Pool threads that spin during a run and stop when it ends
      (``session.force_spinning_stop``): inside a run the threads hand work to each other
      without sleeping (a short query 15-20% faster, at a bare session's speed), and after
      it they take none of the cores the vector scan that follows needs (threads left
      spinning after a run made a 100k scan 2x slower on 2 cores; bench/embedding.py).
    """
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.enable_cpu_mem_arena = True
    options.add_session_config_entry("session.intra_op.allow_spinning", "1")
    options.add_session_config_entry("session.force_spinning_stop", "1")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    if threads:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    return options


def embed_batches(embedder: Embedder,
                  texts: Sequence[str]) -> Iterator[tuple[list[int], np.ndarray]]:
    """``embedder.embed_batches`` where the embedder runs its model in batches; one batch
    of everything where it does not (a test's fake, the hash embedder)."""
    batches = getattr(embedder, "embed_batches", None)
    if batches is not None:
        yield from batches(texts)
    elif texts:
        yield list(range(len(texts))), embedder.embed(texts)


class OnnxEmbedder:
    def __init__(self, files: ModelFiles, *, spec: ModelSpec | None = None,
                 threads: int | None = None, batch_size: int = BATCH_SIZE,
                 batch_tokens: int = MAX_BATCH_TOKENS) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - both are hard dependencies
            raise ModelUnavailableError(f"Cannot import the model runtime: {exc}") from exc
        self.spec = spec or ModelSpec(files.model_id, max_tokens=MAX_TOKENS)
        self.model_id = files.model_id
        self.model_hash = self.spec.model_hash(files.sha256)
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.max_tokens = max_tokens = self.spec.max_tokens
        self.weak_similarity = self.spec.weak_similarity
        self.unmatched_similarity = self.spec.unmatched_similarity
        try:
            self._tokenizer = Tokenizer.from_file(str(files.tokenizer_path))
            self._counter = Tokenizer.from_file(str(files.tokenizer_path))
            self._session = ort.InferenceSession(
                str(files.onnx_path), sess_options=session_options(ort, threads),
                providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime and tokenizers raise their own types
            raise ModelUnavailableError(
                f"Cannot load the embedding model from {files.onnx_path.parent}: {exc}. "
                "Delete that folder to re-download it, or set PLAUD_EMBED_MODEL_PATH."
            ) from exc
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._counter.no_padding()
        self._counter.no_truncation()
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._queries: Together[Any] = Together(self._run)
        width = self._session.get_outputs()[0].shape[-1]
        dim = width if isinstance(width, int) else self.spec.dim
        if dim is None:
            raise ModelUnavailableError(f"Cannot tell the output size of {files.onnx_path}; "
                                        "it is not a known model, so set its dimension.")
        self.dim = int(dim)
        log.debug("Loaded embedding model %s (%s…, dim %s)", self.model_id,
                 self.model_hash[:12], self.dim)

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(self.spec.passage_prefix + text).ids)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self.spec.passage_prefix + t for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        """One text, the shortest path: no batch to sort or pad (every search pays this);
        queries of searches running at the same time share one run (``together``)."""
        return self._queries.embed(self._tokenizer.encode(self.spec.query_prefix + text))

    def embed_batches(self, texts: Sequence[str]) -> Iterator[tuple[list[int], np.ndarray]]:
        """``embed`` one model run at a time: the rows of ``texts`` each run embedded and
        their vectors, so a caller can report, and keep what is done, between runs."""
        return self._batches([self.spec.passage_prefix + t for t in texts])

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for rows, vectors in self._batches(texts):
            out[rows] = vectors
        return out

    def _batches(self, texts: Sequence[str]) -> Iterator[tuple[list[int], np.ndarray]]:
        if not texts:
            return
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for batch in token_batches([len(encodings[i].ids) for i in order], self.batch_size,
                                   self.batch_tokens):
            rows = [order[i] for i in batch]
            yield rows, self._run([encodings[i] for i in rows])

    def _run(self, encodings: Sequence[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = enc.attention_mask
            types[row, :n] = enc.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        hidden = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
        return pool(np.asarray(hidden, dtype=np.float32), mask, self.spec.pooling)


_TOKEN = re.compile(r"\w+")


class HashEmbedder:
    """Deterministic bag-of-words feature hashing. For fast unit tests only."""

    model_id = "mock/hash-embedder"
    model_hash = "mock-hash-v1"

    def __init__(self, dim: int = 128) -> None:
        self.dim = dim
        self.max_tokens = MAX_TOKENS
        self.weak_similarity: float | None = None
        self.unmatched_similarity: float | None = None

    def count_tokens(self, text: str) -> int:
        return len(_TOKEN.findall(text)) + 2

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed([text])[0]
        return vector

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN.findall(text.lower()):
                digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dim
                out[row, bucket] += 1.0 if digest[4] & 1 else -1.0
            if not out[row].any():
                out[row, 0] = 1.0
        return l2_normalize(out)
