"""The one family of errors Memora raises on purpose.

Every exception class the project defines derives from :class:`MemoraError`, so a
boundary (the command line, the server) handles known failures with one ``except``
and maps each kind to an exit code or a status in one table. Each kind also derives
from the built-in exception it refines, so code that catches ``ValueError`` or
``PermissionError`` keeps working. Messages are one line a person can act on, and
never quote a secret or a refused input.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "EmbeddingMismatchError",
    "IdentityError",
    "IdentityMismatchError",
    "InvalidInput",
    "InvalidToken",
    "MemoraError",
    "MemoryRefused",
    "NotFound",
    "StoreError",
    "ThreadOwnershipError",
    "Unavailable",
]


class MemoraError(Exception):
    """A failure Memora expects and explains; the message is one line."""


class ConfigurationError(MemoraError, ValueError):
    """A setting or a rule file has an invalid value; the message names it."""


class InvalidInput(MemoraError, ValueError):
    """An input refused before any work; the message is one line and quotes none of it."""


class MemoryRefused(MemoraError, ValueError):
    """The write path's policy refused a memory; nothing was stored.

    Raised where a caller expects a write to succeed (a LangGraph store's ``put``);
    ``reason`` is the policy's reason (``sensitive_data``, ``instruction_like``, …).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(f"memory refused by Memora's write policy: {reason}; nothing was stored")
        self.reason = reason


class NotFound(MemoraError, LookupError):
    """The thing asked for does not exist for this user (unknown and foreign look alike)."""


class StoreError(MemoraError, RuntimeError):
    """The memory store cannot be used (locked, corrupt, unwritable, mismatched)."""


class EmbeddingMismatchError(StoreError):
    """The collection was built with another embedding model or dimension."""


class Unavailable(MemoraError, RuntimeError):
    """Something optional cannot run here (a package is missing); the message says why."""


class IdentityError(MemoraError, PermissionError):
    """The caller did not prove who they are, or is not allowed what they asked."""


class InvalidToken(IdentityError):
    """A bearer token that does not prove who sent it; the message is the one-line reason."""


class ThreadOwnershipError(IdentityError):
    """A run or resume came from a user other than the thread's owner."""


class IdentityMismatchError(IdentityError):
    """A client claimed a user id other than the one its token proves."""
