"""End the turn: render the reply its stop reason calls for, and keep the thread valid."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.runtime import Runtime

from agent.prompts import (
    API_ERROR_REPLY,
    EMPTY_RESPONSE_REPLY,
    MAX_STEPS_REPLY,
    STEP_LIMIT_OBSERVATION,
    TOOL_ERROR_REPLY,
)
from nodes.common import last_ai_message, ownership_error, requested_calls, step_limit
from nodes.state import Context, State, StopReason


def _forget_outcome(state: State) -> str:
    """After approvals were answered, say what happened to each requested deletion."""
    requested = state.forget_actions()
    if not requested:
        return ""
    deleted = set(state.approved_forget_ids)
    lines = [
        f"Memory deleted: {a.preview}"
        if a.memory_id in deleted
        else f"Memory kept (deletion not approved): {a.preview}"
        for a in requested
    ]
    return "\n\n" + "\n".join(lines)


def _step_limit_reply(state: State, steps: int) -> dict[str, Any]:
    """Answer the tool call that was not run, so the next turn's transcript stays valid."""
    note = json.dumps({"ok": False, "error": STEP_LIMIT_OBSERVATION.format(steps=steps)})
    unrun = [
        ToolMessage(note, tool_call_id=call["id"] or "")
        for call in requested_calls(last_ai_message(state.messages))
    ]
    reply = MAX_STEPS_REPLY.format(steps=steps)
    return {"reply": reply, "messages": [*unrun, AIMessage(reply)]}


def _failure_reply(reply: str) -> dict[str, Any]:
    return {"reply": reply, "messages": [AIMessage(reply)]}


def finish(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Render the reply for the stop reason ``call_model`` or ``execute_tool`` set."""
    if state.refused_user_id:
        raise ownership_error(state.refused_user_id)
    update = _render(state, runtime)
    if state.cut_note:
        update["reply"] = f"{update['reply']}\n\n{state.cut_note}"
    return update


def _render(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    match state.stop_reason:
        case StopReason.FINAL_ANSWER:
            return {"reply": state.reply + _forget_outcome(state)}
        case StopReason.MAX_STEPS:
            return _step_limit_reply(state, step_limit(runtime))
        case StopReason.API_ERROR:
            return _failure_reply(API_ERROR_REPLY.format(error=state.error))
        case StopReason.EMPTY_RESPONSE:
            return _failure_reply(EMPTY_RESPONSE_REPLY)
        case StopReason.TOOL_ERROR:
            return _failure_reply(TOOL_ERROR_REPLY.format(error=state.error))
    raise RuntimeError(f"the turn reached finish without a stop reason ({state.stop_reason!r})")
