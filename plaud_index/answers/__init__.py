"""The reading services: each answer the tools and the CLI give, built from the index.

``Answers`` wires them for one process: the index as it reads it (``index``), whether it
can answer and who builds it (``readiness``), and one small service per reading
(``search``, ``browse``, ``pages``: a transcript or notes page by page, ``people``), and
the naming of a speaker on this machine (``naming``: the one thing a reading tool may
write, the person's own names, never the index). Every answer is one of the types of ``results``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import Config
from ..embedding.embedder import Embedder
from ..people import Naming
from .index import IndexReader, Keeping, make_embedder
from .listing import Browsing
from .pages import Pages
from .people import People
from .readiness import Readiness
from .searching import HEARD, Searching

__all__ = ["HEARD", "Answers", "Keeping", "make_embedder"]


@dataclass(frozen=True)
class Answers:
    index: IndexReader
    readiness: Readiness
    search: Searching
    browse: Browsing
    pages: Pages
    people: People
    naming: Naming

    @property
    def config(self) -> Config:
        return self.index.config

    @classmethod
    def of(cls, config: Config, embedder: Embedder | None = None, *,
           keeper: Keeping) -> Answers:
        """``keeper``: who starts, keeps and upgrades the index for these answers
        (``sync.keeper.Keeper``: the server's and the CLI's start syncs in a process of
        their own); the answers only read."""
        index = IndexReader(config, embedder, keeper)
        readiness = Readiness(index, keeper)
        return cls(index, readiness, Searching(index, readiness), Browsing(index, readiness),
                   Pages(index, readiness), People(index, readiness),
                   Naming(index.opened, index.names))
