"""The server's long-term store: Memora itself (``langgraph.store.json`` → ``store.path``).

Clients reach it through the server's ``/store`` API, graphs through ``get_store()``;
either way a write runs Memora's write path and a delete waits for the user's approval.
With authentication on, ``graph.auth`` keeps every ``("memories", user)`` namespace to
the token's user.
"""

from __future__ import annotations

from memora.api import shared_memora
from memora.integrations import MemoraStore


def memora_store() -> MemoraStore:
    """A ``MemoraStore`` over the process-wide Memora of the server's settings."""
    return MemoraStore(shared_memora())
