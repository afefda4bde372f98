"""Recordings waiting for their vectors, embedded a group of chunks at a time.

The cycle fetches recordings one by one and hands each to this queue; the
queue embeds the chunks it does not already know in groups of about
``GROUP_CHUNKS`` (length-sorted model batches inside each group keep the model
busy), so the indexer can report and commit between groups instead of after one
call over everything fetched. A group may span recordings (short folder files)
or cover part of one (a two-hour meeting is ~80 chunks). A group the model
rejects is embedded again recording by recording, so only the recording whose
text breaks the model is dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..embedder import Embedder
from ..models import Chunk, Recording

log = logging.getLogger(__name__)

# Chunks per embedding call: ~2-4 s of work on 2 cores, so progress and commits come
# that often, while a call is still long enough to sort its texts into full batches.
GROUP_CHUNKS = 64


@dataclass
class Waiting:
    """A fetched recording and what is known of its vectors so far."""

    recording: Recording
    digest: str
    chunks: list[Chunk]
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # by chunk id
    missing: list[Chunk] = field(default_factory=list)  # still to embed, in order

    @property
    def ready(self) -> bool:
        return not self.missing

    def matrix(self, chunks: list[Chunk], dim: int) -> np.ndarray:
        matrix = np.array([self.vectors[c.chunk_id] for c in chunks], dtype=np.float32)
        matrix = matrix.reshape(len(chunks), dim)
        if not np.isfinite(matrix).all():
            raise ValueError("the model produced vectors that are not numbers")
        return matrix

    def embedded(self) -> list[Chunk]:
        """The chunks that have their vector, in recording order."""
        return [c for c in self.chunks if c.chunk_id in self.vectors]


@dataclass
class Failed:
    waiting: Waiting
    error: Exception


class EmbedQueue:
    def __init__(self, embedder: Embedder,
                 known_vector: Callable[[Chunk], np.ndarray | None],
                 group_chunks: int = GROUP_CHUNKS) -> None:
        self.embedder = embedder
        self.known_vector = known_vector  # a committed vector, so it is never embedded again
        self.group_chunks = group_chunks
        self.waiting: list[Waiting] = []

    @property
    def fresh(self) -> int:
        """Chunks waiting to be embedded."""
        return sum(len(w.missing) for w in self.waiting)

    def add(self, recording: Recording, digest: str, chunks: list[Chunk]) -> tuple[int, int]:
        """Queue a recording; returns (chunks to embed, chunks whose vector is reused)."""
        waiting = Waiting(recording, digest, chunks)
        for chunk in chunks:
            vector = self.known_vector(chunk)
            if vector is None:
                waiting.missing.append(chunk)
            else:
                waiting.vectors[chunk.chunk_id] = vector
        self.waiting.append(waiting)
        return len(waiting.missing), len(chunks) - len(waiting.missing)

    def embed_group(self) -> tuple[int, list[Failed]]:
        """Embed up to ``group_chunks`` waiting chunks, oldest recordings first. Returns
        how many were embedded and the recordings dropped because the model failed on
        them (no longer queued)."""
        taken: list[tuple[Waiting, list[Chunk]]] = []
        room = self.group_chunks
        for waiting in self.waiting:
            if room <= 0:
                break
            if waiting.missing:
                part = waiting.missing[:room]
                taken.append((waiting, part))
                room -= len(part)
        if not taken:
            return 0, []
        try:
            self._embed(taken)
            return sum(len(part) for _, part in taken), []
        except Exception as exc:  # noqa: BLE001 - whatever the model raises, find who caused it
            if len(taken) == 1:
                return 0, [self._drop(taken[0][0], exc)]
            log.warning("Embedding a group of %d chunks failed; embedding its recordings "
                        "one by one to find the one at fault", sum(len(p) for _, p in taken))
        done, failed = 0, []
        for waiting, part in taken:
            try:
                self._embed([(waiting, part)])
                done += len(part)
            except Exception as exc:  # noqa: BLE001 - e.g. text the tokenizer rejects
                failed.append(self._drop(waiting, exc))
        return done, failed

    def _embed(self, taken: list[tuple[Waiting, list[Chunk]]]) -> None:
        texts = [c.embed_text for _, part in taken for c in part]
        vectors = iter(self.embedder.embed(texts))
        for waiting, part in taken:
            for chunk in part:
                waiting.vectors[chunk.chunk_id] = next(vectors)
            del waiting.missing[:len(part)]

    def _drop(self, waiting: Waiting, error: Exception) -> Failed:
        self.waiting.remove(waiting)
        return Failed(waiting, error)

    def pop_ready(self) -> list[Waiting]:
        """Recordings whose every chunk has its vector, taken off the queue."""
        ready = [w for w in self.waiting if w.ready]
        self.waiting = [w for w in self.waiting if not w.ready]
        return ready

    def clear(self) -> None:
        self.waiting = []
