"""Whose a LangGraph server's thread is, and how a user's threads are paged through its API.

One test for both clients that list a user's threads on a server: the CLI's
(``graph.remote_threads``, the sync SDK over HTTP) and the inspector's
(``graph.inspector.threads.ServerThreads``, the async in-process SDK).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

T = TypeVar("T", bound=Mapping[str, Any])

PAGE = 100
"""Threads asked for per search."""
MAX_THREADS = 2000
"""Most threads one listing reads (the oldest beyond it are left out)."""


def thread_owner(thread: Mapping[str, Any], *, authenticated: bool) -> str | None:
    """The thread's owner as the server's API returns the thread.

    With authentication, the ``owner`` metadata ``graph.auth`` stamps when the thread
    is created (no client can change it, and a thread with no run yet has it). Without,
    the owner its state names (the user of its first run): there metadata is anyone's
    to write.
    """
    if authenticated:
        owner = (thread.get("metadata") or {}).get("owner")
    else:
        values = thread.get("values")
        owner = values.get("owner_user_id") if isinstance(values, Mapping) else None
    return owner if isinstance(owner, str) else None


def search_filter(user_id: str, *, authenticated: bool) -> dict[str, Any] | None:
    """The metadata a search can narrow to (authenticated: the owner stamp), or None."""
    return {"owner": user_id} if authenticated else None


def owned(threads: Iterable[T], user_id: str, *, authenticated: bool) -> list[T]:
    """The threads among ``threads`` that belong to ``user_id``."""
    return [t for t in threads if thread_owner(t, authenticated=authenticated) == user_id]


def next_offset(found: int, page: list[Any], most: int | None = MAX_THREADS) -> int | None:
    """Where the next search starts, or None when the last page was read or ``most``
    threads were (None: read them all, as an erase must)."""
    if len(page) < PAGE or (most is not None and found >= most):
        return None
    return found
