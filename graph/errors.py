"""How the server answers a known failure: each kind of ``MemoraError`` has one HTTP status."""

from __future__ import annotations

from langgraph_sdk import Auth

from memora.errors import (
    ConfigurationError,
    IdentityError,
    InvalidInput,
    InvalidToken,
    MemoraError,
    MemoryRefused,
    NotFound,
    Unavailable,
)

HTTP_STATUSES: tuple[tuple[type[MemoraError], int], ...] = (
    (InvalidToken, 401),
    (IdentityError, 403),
    (NotFound, 404),
    (InvalidInput, 422),
    (MemoryRefused, 422),
    (Unavailable, 503),
    (ConfigurationError, 500),
)
"""The status of each kind of known failure, first match wins; any other kind is a 500."""


def http_status_for(error: MemoraError) -> int:
    """The HTTP status the server answers this failure with."""
    return next((status for kind, status in HTTP_STATUSES if isinstance(error, kind)), 500)


def http_refusal(error: MemoraError) -> Auth.exceptions.HTTPException:
    """The server's answer to a known failure: its status and its one-line message."""
    return Auth.exceptions.HTTPException(status_code=http_status_for(error), detail=str(error))
