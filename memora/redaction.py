"""Redaction: sensitive values cut out of text Memora keeps (transcripts, audit, logs).

The policy's sensitive-data detectors decide what is sensitive; this module
replaces each value they find with ``[redacted: sensitive_data]``. When a
detector fires but the value cannot be located, the whole text is replaced:
what is kept never holds a value a detector would find.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from memora.policy import holds_secret_shaped_value, is_sensitive, sensitive_spans

MARK = "[redacted: sensitive_data]"
"""What stands where a sensitive value was."""
WHOLE = "[redacted: this text held sensitive data]"
"""What stands for a text whose sensitive value could not be located."""


@dataclass(frozen=True)
class Redacted:
    """A text after redaction, and how many values were cut."""

    text: str
    redactions: int


MIN_ECHO_CHARS = 4
"""Shorter values are not chased through other texts (they would match by chance)."""


def sensitive_values(text: str) -> list[str]:
    """The sensitive values the detectors find in ``text`` (for chasing echoes of them)."""
    spans = sensitive_spans(text) if text and is_sensitive(text) else []
    return sorted({text[start:end] for start, end in spans or []}, key=len, reverse=True)


def redact(text: str, also: list[str] | None = None) -> Redacted:
    """``text`` with every sensitive value replaced by :data:`MARK`.

    Args:
        text: The text to clean.
        also: Values found elsewhere (the user's message) whose echoes are cut too,
            such as a reply that repeats a code without saying what it is.
    """
    echoes = [
        (match.start(), match.end())
        for value in also or []
        if len(value) >= MIN_ECHO_CHARS
        for match in re.finditer(re.escape(value), text)
    ]
    if not text or (not echoes and not is_sensitive(text)):
        return Redacted(text, 0)
    spans = sensitive_spans(text) if is_sensitive(text) else []
    if spans is None:
        return Redacted(WHOLE, 1)
    spans = [*spans, *echoes]
    if not spans:
        return Redacted(WHOLE, 1)
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    pieces, cursor = [], 0
    for start, end in merged:
        pieces += [text[cursor:start], MARK]
        cursor = end
    pieces.append(text[cursor:])
    redacted = "".join(pieces)
    # Keyword rules placed their own values; a key, card or ID shape left over was not placed.
    if holds_secret_shaped_value(redacted):
        return Redacted(WHOLE, len(merged))
    return Redacted(redacted, len(merged))


class RedactingFilter(logging.Filter):
    """Rewrites each log record's message with its sensitive values redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned.redactions:
            record.msg, record.args = cleaned.text, None
        return True


def install_log_redaction() -> None:
    """Redact every record that reaches the root logger's handlers (once per handler)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
