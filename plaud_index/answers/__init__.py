"""The reading services: each answer the tools and the CLI give, built from the index.

``Answers`` wires them for one process: the index as it reads it (``index``), whether it
can answer and who builds it (``readiness``), and one small service per reading
(``search``, ``browse``, ``reading``, ``people``), and the naming of a speaker on this
machine (``naming``: the one thing a reading tool may write, the person's own names,
never the index). Every answer is one of the types of ``results``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..config import Config
from ..embedding.embedder import Embedder
from ..people import Naming
from ..sync.detached import DetachedSync
from ..sync.progress import SyncProgress, log_commits
from .browse import Browsing
from .index import IndexReader, make_embedder
from .people import People
from .readiness import Readiness
from .reading import Reading
from .search import HEARD, Searching

__all__ = ["HEARD", "Answers", "make_embedder"]


@dataclass(frozen=True)
class Answers:
    index: IndexReader
    readiness: Readiness
    search: Searching
    browse: Browsing
    reading: Reading
    people: People
    naming: Naming

    @property
    def config(self) -> Config:
        return self.index.config

    @classmethod
    def of(cls, config: Config, embedder: Embedder | None = None, *,
           sync: DetachedSync | None = None,
           progress: Callable[[SyncProgress], object] = log_commits) -> Answers:
        """``sync``: how an incomplete or stale index gets synced (a server's or the CLI's
        process of its own); ``None`` builds an empty index in the caller."""
        index = IndexReader(config, embedder)
        readiness = Readiness(index, sync, progress)
        return cls(index, readiness, Searching(index, readiness), Browsing(index, readiness),
                   Reading(index, readiness), People(index, readiness),
                   Naming(index.opened, index.names))
