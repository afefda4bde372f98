"""The Markdown mirror: each Plaud recording as a file the user owns, kept in sync.

``Mirror`` writes the folder; ``open_mirror(config)`` is the configured one (or
``None``). The document format is ``document``, file names ``names``, what was
written ``state``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .writer import Mirror

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["Mirror", "open_mirror"]


def open_mirror(config: Config) -> Mirror | None:
    return Mirror(config.mirror, config.home, config.zone) if config.mirror else None
