"""Text → keyword terms: one analyser for the index, the query and snippets. Pure."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
STOPWORDS = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "did", "do", "does", "for",
    "from", "had", "has", "have", "he", "her", "his", "how", "i", "if", "in", "into", "is",
    "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "so", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "to", "was", "we", "were",
    "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would", "you",
    "your", "about", "um", "uh", "yeah", "okay", "ok", "oh", "like", "just", "also", "very",
    "really", "can", "could", "should"
])


def _stem(token: str) -> str:
    """A light, predictable suffix stripper: enough to join plural/verb forms."""
    if token.endswith("'s"):
        token = token[:-2]
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("s", "")):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            if suffix == "s" and token.endswith(("ss", "us", "is")):
                return token
            return token[: len(token) - len(suffix)] + keep
    return token


def tokenize(text: str) -> list[str]:
    """Lower-cased, stop-word-free, lightly stemmed terms."""
    return [_stem(t) for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


# Words that phrase a question about a meeting rather than name its subject
# ("what did we discuss about …"); they match every transcript, so the query drops them.
QUESTION_WORDS = frozenset(_stem(w) for w in [
    "discuss", "discussed", "discussion", "discussing", "talk", "talked", "talking", "say",
    "said", "says", "mention", "mentioned", "think", "thought", "thinks", "opinion",
    "summarize", "summarise", "summary", "meeting", "group", "decide", "decided", "decision",
    "anyone", "someone", "everyone", "people"
])


def query_terms(text: str) -> list[str]:
    terms = list(dict.fromkeys(tokenize(text)))
    content = [t for t in terms if t not in QUESTION_WORDS]
    return content or terms
