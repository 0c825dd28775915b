"""End the turn with the same result shape whatever the stop reason."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.runtime import Runtime

from memora.prompts import (
    API_ERROR_REPLY,
    EMPTY_RESPONSE_REPLY,
    MAX_STEPS_REPLY,
    STEP_LIMIT_OBSERVATION,
    TOOL_ERROR_REPLY,
)
from nodes.common import (
    ThreadOwnershipError,
    last_ai_message,
    requested_calls,
    settings,
    text_of,
)
from nodes.state import Context, State


def _forget_outcome(state: State) -> str:
    """After approvals were answered, say what happened to each requested deletion."""
    requested = [a for a in state.pending_actions if a.get("type") == "forget_memory"]
    if not requested:
        return ""
    deleted = set(state.approved_forget_ids)
    lines = [
        f"Memory deleted: {a['preview']}"
        if a["memory_id"] in deleted
        else f"Memory kept (deletion not approved): {a['preview']}"
        for a in requested
    ]
    return "\n\n" + "\n".join(lines)


def finish(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Set ``stop_reason`` and ``reply``; keep the thread valid for the next turn."""
    if state.refused_user_id:
        raise ThreadOwnershipError(
            f"this thread belongs to another user; user {state.refused_user_id!r} cannot use it"
        )
    last = last_ai_message(state.messages)
    if state.stop_reason == "final_answer" and last is not None:
        return {"reply": text_of(last) + _forget_outcome(state)}
    if not state.stop_reason and requested_calls(last):
        steps = settings().max_agent_steps
        note = json.dumps({"ok": False, "error": STEP_LIMIT_OBSERVATION.format(steps=steps)})
        unrun = [ToolMessage(note, tool_call_id=call["id"]) for call in requested_calls(last)]
        reply = MAX_STEPS_REPLY.format(steps=steps)
        return {"stop_reason": "max_steps", "reply": reply, "messages": [*unrun, AIMessage(reply)]}
    replies = {
        "api_error": API_ERROR_REPLY.format(error=state.error),
        "empty_response": EMPTY_RESPONSE_REPLY,
        "tool_error": TOOL_ERROR_REPLY.format(error=state.error),
    }
    reply = replies.get(state.stop_reason, EMPTY_RESPONSE_REPLY)
    return {
        "stop_reason": state.stop_reason or "empty_response",
        "reply": reply,
        "messages": [AIMessage(reply)],
    }
