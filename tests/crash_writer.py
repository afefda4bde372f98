"""Child process for the kill -9 test: commits recordings forever, reporting each commit.

    python crash_writer.py INDEX_DIR START [--announce-merges]

Prints ``committed <file_id>`` after each commit returns (so the parent knows
that recording must survive any later kill); with ``--announce-merges`` also
``merging`` as each merge starts (so the parent can kill inside one).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from helpers import indexed, make_chunks

from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.index.manifest import ModelInfo
from plaud_index.index.writer import IndexWriter, open_writer


def announce_merges() -> None:
    merge = IndexWriter._merge

    def announced(self: IndexWriter, positions: list[int]) -> None:
        print("merging", flush=True)
        merge(self, positions)

    IndexWriter._merge = announced  # type: ignore[method-assign]


def main() -> None:
    directory, start = Path(sys.argv[1]), int(sys.argv[2])
    if "--announce-merges" in sys.argv:
        announce_merges()
    embedder = HashEmbedder()
    writer = open_writer(directory, ModelInfo(embedder.model_id, embedder.model_hash,
                                              embedder.dim))
    i = start
    while True:
        file_id = f"rec{i:05d}"
        chunks = make_chunks(file_id, 40)
        writer.put(indexed(file_id, len(chunks)), chunks,
                   embedder.embed([c.embed_text for c in chunks]))
        if i % 7 == 3:  # replace an earlier recording too: tombstones under fire
            old = f"rec{max(i - 5, 0):05d}"
            if old in writer.snapshot.by_id:
                again = make_chunks(old, 10, words="revised")
                writer.put(indexed(old, 10, digest=f"v{i}"), again,
                           embedder.embed([c.embed_text for c in again]))
        writer.commit()
        print(f"committed {file_id}", flush=True)
        i += 1
        if np.random.default_rng(i).random() < 0.01:
            sys.exit(0)


if __name__ == "__main__":
    main()
