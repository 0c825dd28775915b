"""Delete what the user approved; idempotent, so a re-run after a crash deletes nothing twice."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from nodes.common import library, owned_user_id
from nodes.state import Context, State


def delete_memory(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Forget each approved memory and its supersession chain."""
    user_id = owned_user_id(state, runtime)
    memora = library(runtime)
    deleted: list[str] = []
    for memory_id in state.approved_forget_ids:
        deleted += memora.forget(user_id, memory_id, actor="agent-approved")
    return {"deleted_memory_ids": deleted}
