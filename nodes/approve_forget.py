"""Ask the user to approve each requested deletion (a LangGraph interrupt per memory)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from nodes.common import owned_user_id
from nodes.state import Context, State

_YES = {"y", "yes", "approve", "true"}


def is_approval(answer: Any) -> bool:
    """True for ``true``, "y"/"yes"/"approve"/"true" (any case, trimmed) or {"approve": those}."""
    if isinstance(answer, dict):
        answer = answer.get("approve")
    if answer is True:
        return True
    return isinstance(answer, str) and answer.strip().lower() in _YES


def approve_forget(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Interrupt once per forget action; the node re-runs on resume, so nothing happens before."""
    owned_user_id(state, runtime)
    approved = []
    for action in state.forget_actions():
        answer = interrupt(
            {
                "memory_id": action.memory_id,
                "preview": action.preview,
                "reason": action.reason,
                "question": "Delete this memory? [y/N]",
            }
        )
        if is_approval(answer):
            approved.append(action.memory_id)
    return {"approved_forget_ids": approved}
