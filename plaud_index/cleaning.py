"""One cleaning for all text from outside (Plaud payloads, folder files, file names). Pure.

Every source passes what it read through here once, so no later stage (index,
snippets, tool answers, the terminal) meets a control character: lone surrogates
become U+FFFD; control characters (NUL, ESC, BEL, …; newline and tab stay in text)
and the characters that reorder or hide text go everywhere.
"""

from __future__ import annotations

import re

_SURROGATES = re.compile("[\ud800-\udfff]")
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Bidirectional embeddings, overrides and isolates reorder what follows them, so a title can
# display as something it is not; zero-width spaces and the BOM hide text boundaries. No
# script needs them in running text (RTL text orders itself), so they go everywhere.
_REORDERING = re.compile("[\u202a-\u202e\u2066-\u2069\u200b\u2060\ufeff]")
# In one-line names (titles, speakers) the invisible marks and joiners go too; transcript
# text keeps ZWJ/ZWNJ (Persian, Indic scripts and emoji need them) and LRM/RLM.
_INVISIBLE = re.compile("[\u061c\u200c-\u200f\u180e]")


def clean_text(value: str) -> str:
    """Lone surrogates → U+FFFD; control characters (but newline and tab) and reordering
    controls removed."""
    return _REORDERING.sub("", _CONTROLS.sub("", _SURROGATES.sub("\ufffd", value)))


def clean_line(value: str, limit: int) -> str:
    """A clean one-line name (a title, a speaker, a path) of at most ``limit`` characters."""
    return " ".join(_INVISIBLE.sub("", clean_text(value)).split())[:limit]
