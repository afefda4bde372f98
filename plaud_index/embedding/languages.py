"""Which languages indexed text is in, from scripts and stopwords alone, and the advice a
user of an English-only model needs when most of it is not English. Pure.

Good enough to tell "mostly German and Japanese" from "English": text in a script
of its own (kana, Hangul, Han, Cyrillic, Arabic, …) is that script's language; Latin
text is whichever language's common function words it uses most. Each passage votes
with its length, so a long meeting counts for more than a short note.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from .specs import KNOWN, MULTILINGUAL_DEFAULT

if TYPE_CHECKING:
    from ..index.snapshot import Snapshot

# The commonest function words, none of them common in the others' text.
STOPWORDS = {
    "English": "the and of to is that it you we this was for are with have not but what",
    "German": "der die und ist nicht das ich wir sie ein eine mit auf für den dem auch sich",
    "French": "le la les et est des une pas que nous vous pour dans sur avec ce qui sont",
    "Spanish": "el los las que es una por con para del se lo como pero más está son muy",
    "Italian": "il che di è non per una sono della gli anche ma questo come perché alla",
    "Portuguese": "não uma os que com para do da em mas está são muito isso você também",
    "Dutch": "de het een en is niet dat van ik we zijn voor met ook maar wat hebben",
}
_STOP = {lang: frozenset(words.split()) for lang, words in STOPWORDS.items()}
_WORD = re.compile(r"[^\W\d_]+")
# A script's first letter names its language (Han alone: Chinese; with kana: Japanese).
SCRIPTS = (("HIRAGANA", "Japanese"), ("KATAKANA", "Japanese"), ("HANGUL", "Korean"),
           ("CJK", "Chinese"), ("CYRILLIC", "Russian"), ("ARABIC", "Arabic"),
           ("HEBREW", "Hebrew"), ("GREEK", "Greek"), ("DEVANAGARI", "Hindi"),
           ("THAI", "Thai"))
MOSTLY = 0.5  # "most indexed text"
SHOWN = 0.1  # languages named when they hold at least this share
SAMPLE = 400  # passages read to tell (evenly spread over the index)


def language_of(text: str) -> str | None:
    """The language one passage is most likely in, or ``None`` for no letters."""
    scripts: Counter[str] = Counter()
    latin = 0
    for ch in text:
        if not ch.isalpha():
            continue
        if ch.isascii():
            latin += 1
            continue
        name = unicodedata.name(ch, "")
        found = next((lang for prefix, lang in SCRIPTS if name.startswith(prefix)), None)
        if found:
            scripts[found] += 1
        elif name.startswith("LATIN"):
            latin += 1
    if scripts and sum(scripts.values()) >= latin:
        if scripts["Japanese"]:
            return "Japanese"
        return scripts.most_common(1)[0][0]
    if not latin:
        return None
    words = Counter(w.lower() for w in _WORD.findall(text))
    votes = {lang: sum(words[w] for w in stop) for lang, stop in _STOP.items()}
    best = max(votes, key=lambda lang: votes[lang])
    return best if votes[best] else "English"


def language_shares(texts: Iterable[str]) -> dict[str, float]:
    """Each language's share of the letters of ``texts``, largest first."""
    weight: Counter[str] = Counter()
    for text in texts:
        if (lang := language_of(text)) is not None:
            weight[lang] += len(text)
    total = sum(weight.values())
    return {lang: n / total for lang, n in weight.most_common()} if total else {}


def english_only_advice(shares: dict[str, float], model_id: str, model_languages: str,
                        suggestion: str, suggestion_note: str) -> str | None:
    """The sentence to show when an English-only model indexes mostly other languages."""
    if model_languages != "English" or shares.get("English", 0.0) >= MOSTLY or not shares:
        return None
    others = [f"{lang} {share:.0%}" for lang, share in shares.items()
              if lang != "English" and share >= SHOWN]
    if not others:
        return None
    return (f"Most indexed text is not English ({', '.join(others)}), but the embedding model "
            f"{model_id} reads English only: keyword search works in every language, search "
            f"by meaning does not. Set PLAUD_EMBED_MODEL={suggestion} ({suggestion_note}); "
            "the index is then re-embedded beside the old one, which keeps answering until "
            "the new one is complete.")


def index_advice(snapshot: Snapshot | None) -> str | None:
    """``english_only_advice`` for an index: its model, and a sample of its passages."""
    if snapshot is None or not snapshot.recordings:
        return None
    spec = KNOWN.get(snapshot.model.model_id)
    if spec is None or spec.languages != "English":
        return None
    rows = np.flatnonzero(np.asarray(snapshot.live))
    if not len(rows):
        return None
    picked = rows[np.linspace(0, len(rows) - 1, min(SAMPLE, len(rows))).astype(int)]
    shares = language_shares(snapshot.chunks[int(r)].text for r in picked)
    better = KNOWN[MULTILINGUAL_DEFAULT]
    return english_only_advice(shares, spec.model_id, spec.languages, better.model_id,
                               f"{better.languages}, a {better.download_mb} MB download")
