"""The machine's floors that bench scripts print beside their latencies.

- ``raw_query_embedder()``: the packaged model in a bare ``onnxruntime.InferenceSession``
  with default options, tokenise + run + mean-pool one text: what a query embedding costs
  on this machine with nothing of ours in the way;
- ``scan_ms(matrix)``: the plain numpy mat-vec over a matrix: the floor of a vector scan
  (scanned again and again, a matrix that fits the CPU's last cache is read from it);
- ``sequence_ms(matrix, queries)``: one raw embedding and then the scan with its
  vector, as every search runs them: the model's weights pass through the cache in
  between, so the scan reads the matrix from memory (at 10k chunks, 17 MB, 4-5x the
  cached scan on a 32 MB L3);
- ``median_ms(fn, items)``: the median wall time of ``fn(item)`` over items, after one
  warm-up call.

Imported by the scripts in this folder (``bench/ab.py`` copies the whole folder, so both
sides of an A/B measure with the same floors).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import plaud_index  # noqa: F401  (first: it switches onnxruntime's telemetry off)


def packaged_files() -> Any:
    from plaud_index.embedding.files import packaged

    files = packaged()
    assert files is not None, "bash .ci/setup first: the packaged model is needed"
    return files


def raw_query_embedder(session: Any = None) -> Callable[[str], np.ndarray]:
    """One text → its unit vector, through a bare default session unless one is given."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    files = packaged_files()
    if session is None:
        session = ort.InferenceSession(str(files.onnx_path), providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(files.tokenizer_path))
    # the shipped tokenizer.json pads every text to 128 pieces: a floor that ran those
    # would be 3-5x slower than the work a short query needs
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=256)
    names = {i.name for i in session.get_inputs()}

    def embed(text: str) -> np.ndarray:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, {k: v for k, v in feed.items() if k in names})[0]
        pooled: np.ndarray = hidden[0].mean(axis=0)
        return pooled / np.linalg.norm(pooled)
    return embed


def median_ms(fn: Callable[[Any], object], items: Iterable[Any]) -> float:
    items = list(items)
    fn(items[0])  # the first run of a session or a matrix pays for its allocations
    times = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 2)


def scan_ms(matrix: np.ndarray, repeats: int = 15) -> float:
    query = np.asarray(matrix[0], dtype=np.float32).copy()
    return median_ms(lambda _: matrix @ query, range(repeats))


def sequence_ms(matrix: np.ndarray, queries: Iterable[str]) -> float:
    """The median of one query's embedding followed by the scan with its vector, through a
    bare session whose pool threads do not spin after a run (a default session's spin on
    and take the cores the scan needs: 2-3x on 2 cores, which no search need pay)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    embed = raw_query_embedder(ort.InferenceSession(
        str(packaged_files().onnx_path), sess_options=options,
        providers=["CPUExecutionProvider"]))

    def both(query: str) -> object:
        return matrix @ np.asarray(embed(query), dtype=np.float32)
    return median_ms(both, queries)
