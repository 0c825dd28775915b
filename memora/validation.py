"""Input validation that runs before any other work: one rule set for the API, tools and CLI.

Every check looks at the length first, so an oversized input costs nothing but
``len``; then at the encoding (lone surrogates, which is how invalid UTF-8 in a
command-line argument arrives), then at the shape. Messages name the field and
the rule, never the input itself, so they fit one line and leak nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memora.errors import InvalidInput
from memora.limits import (
    MAX_MEMORY_CHARS,
    MAX_MEMORY_ID_CHARS,
    MAX_PROFILE_KEY_CHARS,
    MAX_PROFILE_VALUE_CHARS,
    MAX_QUERY_CHARS,
    MAX_THREAD_ID_CHARS,
    MAX_USER_ID_CHARS,
    MAX_USER_MESSAGE_CHARS,
)

__all__ = [
    "InvalidInput",
    "check_arguments",
    "check_identifier",
    "check_text",
    "has_surrogates",
    "validate_memory_content",
    "validate_memory_id",
    "validate_profile_field",
    "validate_query",
    "validate_thread_id",
    "validate_user_id",
    "validate_user_message",
]

_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogates(value: str) -> bool:
    """Whether the text holds lone surrogates (not encodable as UTF-8)."""
    return _SURROGATE.search(value) is not None


def check_text(value: object, field: str, max_chars: int, *, allow_empty: bool = False) -> str:
    """Refuse a text that is not a str, too long, not valid UTF-8 or (unless allowed) blank.

    Args:
        value: The input.
        field: Its name in the error message.
        max_chars: The longest accepted length.
        allow_empty: Accept an empty or blank text (a later rule decides about it).

    Returns:
        The text, unchanged.

    Raises:
        InvalidInput: The text breaks one of the rules.
    """
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be text")
    if len(value) > max_chars:
        raise InvalidInput(f"{field} is longer than {max_chars} characters")
    if has_surrogates(value):
        raise InvalidInput(f"{field} is not valid UTF-8 text")
    if not allow_empty and not value.strip():
        raise InvalidInput(f"{field} must not be empty")
    return value


def check_identifier(value: object, field: str, max_chars: int) -> str:
    """Refuse an id that is not 1..max_chars printable characters (and not only spaces).

    Raises:
        InvalidInput: The id breaks one of the rules.
    """
    text = check_text(value, field, max_chars)
    if not text.isprintable():
        raise InvalidInput(f"{field} must be printable characters only")
    return text


def validate_user_id(user_id: object) -> str:
    """A user id: 1..MAX_USER_ID_CHARS printable characters."""
    return check_identifier(user_id, "user id", MAX_USER_ID_CHARS)


def validate_thread_id(thread_id: object) -> str:
    """A thread id: 1..MAX_THREAD_ID_CHARS printable characters."""
    return check_identifier(thread_id, "thread id", MAX_THREAD_ID_CHARS)


def validate_memory_id(memory_id: object) -> str:
    """A memory id: 1..MAX_MEMORY_ID_CHARS printable characters."""
    return check_identifier(memory_id, "memory id", MAX_MEMORY_ID_CHARS)


def validate_memory_content(content: object) -> str:
    """A memory's text: at most MAX_MEMORY_CHARS, valid UTF-8.

    A blank text passes: the policy rejects it as ``too_vague``, like any other
    content without substance.
    """
    return check_text(content, "memory", MAX_MEMORY_CHARS, allow_empty=True)


def validate_user_message(message: object) -> str:
    """The user message a memory came from: at most MAX_USER_MESSAGE_CHARS, valid UTF-8."""
    return check_text(message, "user message", MAX_USER_MESSAGE_CHARS, allow_empty=True)


def validate_query(query: object) -> str:
    """A search query: 1..MAX_QUERY_CHARS, valid UTF-8, not blank."""
    return check_text(query, "query", MAX_QUERY_CHARS)


def validate_profile_field(key: object, value: object) -> tuple[str, str]:
    """A profile key (printable) and value, both stripped and within their limits.

    Returns:
        ``(key, value)`` with surrounding whitespace removed.
    """
    clean_key = check_identifier(key, "profile key", MAX_PROFILE_KEY_CHARS).strip()
    clean_value = check_text(value, "profile value", MAX_PROFILE_VALUE_CHARS).strip()
    return clean_key, clean_value


def check_arguments(arguments: Sequence[str]) -> None:
    """Refuse command-line arguments that were not valid UTF-8.

    Python decodes such bytes with ``surrogateescape``, so they arrive as lone
    surrogates; no command can store, search or print them.

    Raises:
        InvalidInput: Names the first bad argument by position.
    """
    for position, argument in enumerate(arguments, start=1):
        if has_surrogates(argument):
            raise InvalidInput(f"argument {position} is not valid UTF-8")
