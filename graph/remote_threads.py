"""A LangGraph server's threads of one user, reached through its HTTP API (``langgraph_sdk``).

``memora users erase --server URL`` uses it: threads the in-memory runtime of
``langgraph dev`` keeps are out of reach of the local checkpointer. With a token the
server shows only that user's threads; without authentication every thread is listed
and a thread is the user's when its state names them as owner (``graph.thread_owners``).
"""

from __future__ import annotations

from typing import Any

import httpx
from langgraph_sdk import get_sync_client

from graph.thread_owners import PAGE, next_offset, owned, search_filter
from memora.errors import Unavailable


def erase_server_threads(url: str, user_id: str, token: str | None = None) -> int:
    """Delete every thread of ``user_id`` the server at ``url`` keeps; returns how many.

    Raises:
        Unavailable: The server cannot be reached or refuses the request.
    """
    headers = {"Authorization": f"Bearer {token}"} if token else None
    client = get_sync_client(url=url, headers=headers, timeout=(10.0, 60.0, 60.0, 10.0))
    authenticated = token is not None
    metadata = search_filter(user_id, authenticated=authenticated)
    try:
        found: list[Any] = []
        offset: int | None = 0
        while offset is not None:
            page = client.threads.search(metadata=metadata, limit=PAGE, offset=offset)
            found += page
            offset = next_offset(len(found), page, most=None)
        mine = owned(found, user_id, authenticated=authenticated)
        for thread in mine:
            client.threads.delete(thread["thread_id"])
    except httpx.HTTPError as error:
        raise Unavailable(f"cannot erase the threads on {url}: {error}") from None
    return len(mine)
