"""Redaction: sensitive values cut out of text Memora keeps (transcripts, audit, logs).

The policy's sensitive-data detectors decide what is sensitive; this module
replaces each value they find with ``[redacted: sensitive_data]``. When a
detector fires but the value cannot be located, the whole text is replaced:
what is kept never holds a value a detector would find.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from memora.judgement import Judgement
from memora.validation import has_surrogates
from memora.write.policy import (
    holds_secret_shaped_value,
    is_sensitive,
    located_secret_spans,
    secret_value_spans,
    sensitive_spans,
)
from memora.write.policy.secrets import REDACTION_MARK as MARK
from memora.write.policy.secrets import REDACTION_WHOLE as WHOLE


@dataclass(frozen=True)
class Redacted:
    """A text after redaction, and how many values were cut."""

    text: str
    redactions: int


MIN_ECHO_CHARS = 4
"""Shorter values are chased through other texts only where they stand alone as a token
("Got it, 381"): inside other words and numbers they would match by chance."""


PLUMBING = frozenset(
    {"type", "id", "name", "index", "call_id", "tool_call_id", "signature"}
    | {"url", "image_url", "base64", "data", "file_data", "input_audio", "encrypted_content"}
)
"""Keys whose values name, link or encode a part of a chat message and are never cut (pass
them to :func:`redact_tree` as ``fixed``): a value cut inside "remember_memory" would leave a
thread a call to a tool that does not exist, and a cut block type, call id, image or encrypted
reasoning a message a provider refuses on every later turn (base64 reads as a key)."""


def values_outside_kept(text: str, spans: list[tuple[int, int]], keep: frozenset[str]) -> set[str]:
    """The values of ``text`` at ``spans``, but for those that lie in a kept value (an id):
    a value that merely also occurs inside an id ("381" in "call_Zq381tY") is still a value."""
    return {text[start:end] for start, end in _outside_kept(text, spans, keep)}


def _outside_kept(
    text: str, spans: list[tuple[int, int]], keep: frozenset[str]
) -> list[tuple[int, int]]:
    """``spans`` but for those that cut into an occurrence of a kept value in ``text``."""
    kept = [
        (match.start(), match.end())
        for value in keep
        if value
        for match in re.finditer(re.escape(value), text)
    ]
    return [
        (start, end)
        for start, end in spans
        if not any(start < stop and begin < end for begin, stop in kept)
    ]


def sensitive_values(text: str, keep: frozenset[str] = frozenset()) -> list[str]:
    """The sensitive values the detectors find in ``text`` (for chasing echoes of them)."""
    spans = sensitive_spans(text) if text and is_sensitive(text) else []
    return sorted(values_outside_kept(text, spans or [], keep), key=len, reverse=True)


def redact(
    text: str,
    also: list[str] | None = None,
    keep: frozenset[str] = frozenset(),
    judge: Judgement | None = None,
) -> Redacted:
    """``text`` with every sensitive value replaced by :data:`MARK`.

    Args:
        text: The text to clean.
        also: Values found elsewhere (the user's message) whose echoes are cut too,
            such as a reply that repeats a code without saying what it is.
        keep: Values that only look secret, such as the application's own memory ids
            (32 hex digits read as a high-entropy key); they stay.
        judge: The trained decisions: the values they take for secrets are cut too.
    """
    echoes = [
        (match.start(), match.end())
        for value in also or []
        if value.strip()
        for match in re.finditer(_echo_pattern(value), text)
    ]
    # A kept value (an id) is never cut, so the decisions are not asked to read it.
    judged = secret_value_spans(text, judge) if judge and text and text not in keep else []
    if not text or (not echoes and not judged and not is_sensitive(text)):
        return Redacted(text, 0)
    spans = sensitive_spans(text) if is_sensitive(text) else []
    if spans is None:
        return Redacted(WHOLE, 1)
    # A kept value stays whole: a span that cuts into it (half an id read as a code) is dropped.
    spans = _outside_kept(text, [*spans, *echoes, *judged], keep)
    if not spans:
        return Redacted(text, 0) if _only_kept(text, keep) else Redacted(WHOLE, 1)
    merged = merged_spans(spans)
    pieces, cursor = [], 0
    for start, end in merged:
        pieces += [text[cursor:start], MARK]
        cursor = end
    pieces.append(text[cursor:])
    redacted = "".join(pieces)
    # Keyword rules placed their own values; a key, card or ID shape left over was not placed.
    if holds_secret_shaped_value(_without(redacted, keep)):
        return Redacted(WHOLE, len(merged))
    return Redacted(redacted, len(merged))


def merged_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` in order, each run of overlapping or touching spans made one: a value inside
    a sentence cut whole, or two cuts side by side, leave one mark."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def redact_tree(
    value: Any,
    also: list[str] | None = None,
    keep: frozenset[str] = frozenset(),
    judge: Judgement | None = None,
    fixed: frozenset[str] = frozenset(),
) -> tuple[Any, int]:
    """``value`` (strings in any nesting of dicts and lists) with every string redacted
    as :func:`redact` does, and how many values were cut; other values stay as they are,
    and so does whatever a dict holds under a key in ``fixed`` (a tool call's name, an image)."""
    if isinstance(value, str):
        encoded = _json_container(value)
        if encoded is not None:  # its keys are data, not the message's plumbing
            return _redact_json(value, encoded, also, keep, judge)
        cleaned = redact(value, also=also, keep=keep, judge=judge)
        return cleaned.text, cleaned.redactions
    if isinstance(value, dict):
        pairs = {
            key: (item, 0) if key in fixed else redact_tree(item, also, keep, judge, fixed)
            for key, item in value.items()
        }
        return {key: item for key, (item, _) in pairs.items()}, sum(n for _, n in pairs.values())
    if isinstance(value, list):
        items = [redact_tree(item, also, keep, judge, fixed) for item in value]
        return [item for item, _ in items], sum(n for _, n in items)
    return value, 0


def _json_container(text: str) -> dict[str, Any] | list[Any] | None:
    """``text`` parsed, when it is a JSON object or array (a provider's raw copy of a tool
    call's arguments, a tool's JSON observation) that parsing loses nothing of; otherwise
    None, and the text is read as text: a repeated key would be dropped, and a document
    nested past the parser's depth cannot be read at all."""
    if text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        parsed = json.loads(text, object_pairs_hook=_unique_keys)
        if has_surrogates(json.dumps(parsed, ensure_ascii=False)):
            return None  # an escaped lone surrogate: no encoder reads it, no checkpoint writes it
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict | list) else None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    if len({key for key, _ in pairs}) != len(pairs):
        raise ValueError("a repeated key")
    return dict(pairs)


def _redact_json(
    text: str,
    parsed: dict[str, Any] | list[Any],
    also: list[str] | None,
    keep: frozenset[str],
    judge: Judgement | None,
) -> tuple[str, int]:
    """A JSON text redacted value by value, so that what is left is still JSON: a cut
    through ``\\"sunflower\\"`` would break the document, and a value escaped as
    ``\\u85cd…`` is found only once parsed. The detectors first read the text as a whole,
    where a key says what its value opens (``"door_code": 7391``), as they read "door code:
    7391"; the values they find are then cut wherever they stand, numbers and keys included.
    What cannot be written back as the JSON it was (two keys cut to one, a number too large
    for a float, a lone surrogate) is redacted as text."""
    try:
        if is_sensitive(text) and sensitive_spans(text) is None:
            raise ValueError("a value that cannot be placed")
        chased = [*(also or []), *sensitive_values(text, keep)]
        redacted, count = _redact_parsed(parsed, chased, keep, judge)
        if not count:
            return text, 0
        compact = '":' in text and '": ' not in text
        written = json.dumps(
            redacted,
            ensure_ascii=text.isascii() and "\\u" in text,
            separators=(",", ":") if compact else None,
            allow_nan=False,
        )
        written.encode("utf-8")
    except (ValueError, RecursionError):  # UnicodeEncodeError is a ValueError
        cleaned = redact(text, also=also, keep=keep, judge=judge)
        return cleaned.text, cleaned.redactions
    return written, count


def _redact_parsed(
    value: Any, also: list[str], keep: frozenset[str], judge: Judgement | None, key: str = ""
) -> tuple[Any, int]:
    """A parsed JSON value redacted: a string as :func:`redact_tree` does (a JSON string
    inside is JSON again), the trained decisions reading it beside its ``key``; a number that
    is or holds a value replaced by the mark; a key that holds one cut."""
    if isinstance(value, str):
        beside_key = _with_key(key, value, keep, judge) if judge is not None else None
        if beside_key is None:
            return redact_tree(value, also, keep, judge)
        cleaned = redact(value, also=[*also, *beside_key], keep=keep)
        return cleaned.text, cleaned.redactions
    if isinstance(value, dict):
        keys = {key: redact(key, keep=keep) if is_sensitive(key) else None for key in value}
        renamed = {key: cut.text if cut else key for key, cut in keys.items()}
        if len(set(renamed.values())) != len(renamed):
            raise ValueError("two keys cut to one")
        pairs = {k: _redact_parsed(item, also, keep, judge, k) for k, item in value.items()}
        return (
            {renamed[key]: item for key, (item, _) in pairs.items()},
            sum(n for _, n in pairs.values()) + sum(cut.redactions for cut in keys.values() if cut),
        )
    if isinstance(value, list):
        items = [_redact_parsed(item, also, keep, judge) for item in value]
        return [item for item, _ in items], sum(n for _, n in items)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (
            (MARK, 1) if redact(json.dumps(value), also=also, keep=keep).redactions else (value, 0)
        )
    return value, 0


def judged_values(text: str, judge: Judgement, keep: frozenset[str] = frozenset()) -> set[str]:
    """The values the trained decisions place in ``text``, to be chased wherever a turn echoes
    them: a JSON text's read value by value, each beside its key, as :func:`redact_tree` cuts
    them (read whole, its marks and keys read as values of their own)."""
    parsed = _json_container(text)
    if parsed is None:
        return values_outside_kept(text, located_secret_spans(text, judge), keep)
    return _judged_in(parsed, keep, judge)


def _judged_in(value: Any, keep: frozenset[str], judge: Judgement, key: str = "") -> set[str]:
    """The values the trained decisions read in each string of a parsed JSON value that stands
    under a key (a JSON string inside is read as JSON in turn)."""
    if isinstance(value, dict):
        return {found for k, item in value.items() for found in _judged_in(item, keep, judge, k)}
    if isinstance(value, list):
        return {found for item in value for found in _judged_in(item, keep, judge)}
    if isinstance(value, str) and (parsed := _json_container(value)) is not None:
        return _judged_in(parsed, keep, judge)
    if isinstance(value, str):
        return set(_with_key(key, value, keep, judge) or ())
    return set()


def _with_key(key: str, text: str, keep: frozenset[str], judge: Judgement) -> set[str] | None:
    """The values the trained decisions read in ``text`` as "door code: …" under a key
    ``door_code`` (a bare "sunflower field" opens nothing, a wifi password's does); None for a
    text with no key, a blank or kept one, or a JSON text (read as JSON instead)."""
    if not key or not text.strip() or text in keep or _json_container(text) is not None:
        return None
    label = re.sub(r"[_\-\s]+|(?<=[a-z])(?=[A-Z])", " ", key).strip()
    read = f"{label}: {text}" if label else text
    shift = len(read) - len(text)
    spans = [
        (max(start - shift, 0), end - shift)
        for start, end in secret_value_spans(read, judge)
        if end > shift
    ]
    return values_outside_kept(text, spans, keep)


def _echo_pattern(value: str) -> str:
    if len(value) >= MIN_ECHO_CHARS:
        return re.escape(value)
    return rf"(?<!\w){re.escape(value)}(?!\w)"


def _without(text: str, keep: frozenset[str]) -> str:
    for value in keep:
        text = text.replace(value, " ")
    return text


def _only_kept(text: str, keep: frozenset[str]) -> bool:
    """Whether the text is sensitive only because of values that are to stay."""
    return bool(keep) and not is_sensitive(_without(text, keep))


_OWN_FILE_NAME = re.compile(r"[\w.\-]+\.(?:npz|db|sqlite3?|wal|lock|jsonl?|pckl|bin)\b")
"""A file name with an extension Memora's stores write (a cache file is named by a hash)."""


class RedactingFilter(logging.Filter):
    """Rewrites each log record's message with its sensitive values redacted; names of
    the stores' own files (a vector cache is named by a digest) stay readable."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        names = frozenset(_OWN_FILE_NAME.findall(message))
        keep = frozenset(part for name in names for part in re.split(r"[.\-]", name) if part)
        cleaned = redact(message, keep=keep)
        if cleaned.redactions:
            record.msg, record.args = cleaned.text, None
        return True


def install_log_redaction() -> None:
    """Redact every record that reaches the root logger's handlers (once per handler)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
