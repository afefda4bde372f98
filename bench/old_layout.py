"""Today's module names for a tree from before the house moves (issue 30), so one bench
script measures both sides of ``bench/ab.py BASE``.

The scripts import the modules where they live now (``plaud_index.embedding.files``,
``plaud_index.search.rank``, ...). A base commit from before the moves has them at the top
of the package; ``alias_moved_modules()`` registers each old module under its new name
there, and does nothing in a tree that has the new layout.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

MOVED = {  # today's name: the name before the moves (7c4e3ec and earlier)
    "plaud_index.embedding.embedder": "plaud_index.embedder",
    "plaud_index.embedding.files": "plaud_index.model_files",
    "plaud_index.embedding.specs": "plaud_index.model_specs",
    "plaud_index.search.rank": "plaud_index.search",
}


def alias_moved_modules() -> None:
    if importlib.util.find_spec("plaud_index.embedding") is not None:
        return  # the layout these scripts are written for
    for new, old in MOVED.items():
        sys.modules.setdefault(new, importlib.import_module(old))
