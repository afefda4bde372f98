"""Today's module names for a tree from before the house moves (issues 30 and 42), so one
bench script measures both sides of ``bench/ab.py BASE``.

The scripts import the modules where they live now (``plaud_index.embedding.files``,
``plaud_index.search.rank``, ...). A base commit from before the moves has them at the top
of the package; ``alias_moved_modules()`` registers each old module under its new name
there, and does nothing in a tree that has the new layout.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

MOVED = {  # today's name: the name before the moves (7c4e3ec and earlier)
    "plaud_index.embedding.embedder": "plaud_index.embedder",
    "plaud_index.embedding.files": "plaud_index.model_files",
    "plaud_index.embedding.specs": "plaud_index.model_specs",
    "plaud_index.search.rank": "plaud_index.search",
}


RENDER_MOVED = {  # today's name: the name before the renderers made one room (issue 52)
    "plaud_index.render.answers": "plaud_index.render",
    "plaud_index.render.reports": "plaud_index.render",
    "plaud_index.render.reading": "plaud_index.render_reading",
}


def alias_moved_modules() -> None:
    if importlib.util.find_spec("plaud_index.render_reading") is not None:
        for new, old in RENDER_MOVED.items():
            sys.modules.setdefault(new, importlib.import_module(old))
    if importlib.util.find_spec("plaud_index.embedding") is not None:
        return  # the layout these scripts are written for
    for new, old in MOVED.items():
        sys.modules.setdefault(new, importlib.import_module(old))


class Reader:
    """What the scripts ask of the reading side, on either layout: ``plaud_index.answers``
    (issue 42 on) or the ``SearchService`` of the commits before it."""

    def __init__(self, config: Any, embedder: Any = None) -> None:
        if importlib.util.find_spec("plaud_index.answers") is not None:
            answers = importlib.import_module("plaud_index.answers")
            self._old = None
            if importlib.util.find_spec("plaud_index.sync.keeper") is not None:  # issue 52 on
                keeper = importlib.import_module("plaud_index.sync.keeper").Keeper(config)
                self._answers = answers.Answers.of(config, embedder, keeper=keeper)
            else:
                self._answers = answers.Answers.of(config, embedder)
        else:
            service = importlib.import_module("plaud_index.service")
            self._old = service.SearchService(config, embedder)

    @property
    def embedder(self) -> Any:
        return self._old.embedder if self._old is not None else self._answers.index.embedder

    def search(self, request: Any) -> Any:
        return self._old.search(request) if self._old is not None else \
            self._answers.search.search(request)

    def snapshot(self) -> Any:
        return self._old.snapshot() if self._old is not None else \
            self._answers.index.snapshot()

    def ready_snapshot(self) -> Any:
        return self._old.ready_snapshot() if self._old is not None else \
            self._answers.readiness.ready()[0]


def make_embedder(config: Any) -> Any:
    where = "plaud_index.answers" if importlib.util.find_spec("plaud_index.answers") \
        else "plaud_index.service"
    return importlib.import_module(where).make_embedder(config)


def heard() -> float:
    where = "plaud_index.answers" if importlib.util.find_spec("plaud_index.answers") \
        else "plaud_index.service"
    return float(importlib.import_module(where).HEARD)
