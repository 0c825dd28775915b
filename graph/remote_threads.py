"""A LangGraph server's threads of one user, reached through its HTTP API (``langgraph_sdk``).

``memora users erase --server URL`` uses it: threads the in-memory runtime of
``langgraph dev`` keeps are out of reach of the local checkpointer. With a token the
server shows only that user's threads; without authentication every thread is listed
and a thread is the user's when its state names them as owner.
"""

from __future__ import annotations

from typing import Any

import httpx
from langgraph_sdk import get_sync_client

from memora.errors import Unavailable

PAGE = 100


def _owner(thread: Any) -> str | None:
    values = thread.get("values")
    owner = values.get("owner_user_id") if isinstance(values, dict) else None
    metadata = thread.get("metadata") or {}
    return owner or metadata.get("owner")


def erase_server_threads(url: str, user_id: str, token: str | None = None) -> int:
    """Delete every thread of ``user_id`` the server at ``url`` keeps; returns how many.

    Raises:
        Unavailable: The server cannot be reached or refuses the request.
    """
    headers = {"Authorization": f"Bearer {token}"} if token else None
    client = get_sync_client(url=url, headers=headers, timeout=(10.0, 60.0, 60.0, 10.0))
    try:
        mine: list[str] = []
        offset = 0
        while True:
            page = client.threads.search(limit=PAGE, offset=offset)
            mine += [t["thread_id"] for t in page if _owner(t) == user_id]
            if len(page) < PAGE:
                break
            offset += PAGE
        for thread_id in mine:
            client.threads.delete(thread_id)
    except httpx.HTTPError as error:
        raise Unavailable(f"cannot erase the threads on {url}: {error}") from None
    return len(mine)
