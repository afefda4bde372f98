"""Keep secrets out of logs, errors, state files and answers. Pure (no I/O).

By value first: every secret this process holds (access and refresh tokens, the web
token, a sign-in code and verifier) is registered here the moment it is read or made
(``remember``), and removed from any text that passes ``redact``, whatever its shape
(an opaque token quoted back in Plaud's error body has no shape to catch). Then by
shape, a second net for what was never registered: Bearer/Basic values, ``token=…``
pairs, JWTs.
"""

from __future__ import annotations

import logging
import re

MIN_SECRET_CHARS = 8  # shorter values would redact ordinary words
# This process's secrets, longest first (a token before any prefix of it): the one piece of
# state here. Replaced whole, never changed in place, so a reader on another thread always
# sees a complete tuple without a lock.
_secrets: tuple[str, ...] = ()


def remember(*values: str | None) -> None:
    """Register secrets so that ``redact`` removes them from every text from now on."""
    global _secrets
    new = {v for v in values if v and len(v) >= MIN_SECRET_CHARS} - set(_secrets)
    if new:
        _secrets = tuple(sorted({*_secrets, *new}, key=len, reverse=True))

_PATTERNS = [
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 [redacted]"),
    (re.compile(r"(?i)\b(access_token|refresh_token|code_verifier|code|token|client_secret)"
                r"([\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9._~+/-]{8,}"), r"\1\2[redacted]"),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"), "[redacted-jwt]"),
]


def redact(text: str) -> str:
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, "[redacted]")
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class RedactingFilter(logging.Filter):
    """Rewrites every record's final message, whatever its arguments held."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True
