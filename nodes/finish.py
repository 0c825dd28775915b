"""End the turn: render the reply its stop reason calls for, and keep the thread valid."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.runtime import Runtime

from agent.prompts import (
    API_ERROR_REPLY,
    EMPTY_RESPONSE_REPLY,
    FORGET_DELETED_LINE,
    FORGET_GONE_LINE,
    FORGET_KEPT_LINE,
    FORGET_NOT_KEPT_LINE,
    FORGET_OTHER_THREADS,
    MAX_STEPS_REPLY,
    STEP_LIMIT_OBSERVATION,
    TOOL_ERROR_REPLY,
)
from nodes.common import (
    current_thread_id,
    last_ai_message,
    ownership_error,
    requested_calls,
    step_limit,
)
from nodes.other_threads import keep_only_latest
from nodes.state import Context, State, StopReason


def _forget_outcome(state: State) -> str:
    """After approvals were answered, say what happened to each requested deletion.

    A deleted memory is not named: its words have just been taken out of the thread. One
    approved but already gone (deleted another way while the question waited, or by this
    approval before a crash) is said to be gone, not deleted now; one refused but gone
    meanwhile, not kept.
    """
    requested = state.forget_actions()
    if not requested:
        return ""
    approved = set(state.approved_forget_ids)
    now = approved & set(state.deleted_memory_ids)
    refused_gone = set(state.gone_forget_ids)
    lines = [
        FORGET_NOT_KEPT_LINE
        if a.memory_id in refused_gone
        else FORGET_KEPT_LINE.format(preview=a.preview)
        for a in requested
        if a.memory_id not in approved
    ]
    if approved - now:
        gone = len(approved - now)
        lines.insert(0, FORGET_GONE_LINE.format(count=f" ({gone})" if gone > 1 else ""))
    if now:
        lines.insert(0, _deleted_line(len(now), state.scrubbed_threads))
    return "\n".join(lines)


def _deleted_line(count: int, other_threads: int) -> str:
    others = FORGET_OTHER_THREADS.format(count=other_threads) if other_threads else ""
    return FORGET_DELETED_LINE.format(count=f" ({count})" if count > 1 else "", others=others)


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
            if state.approved_forget_ids:  # the answer spoke of what is now forgotten
                keep_only_latest(current_thread_id())
                return {"reply": _forget_outcome(state)}
            outcome = _forget_outcome(state)
            return {"reply": f"{state.reply}\n\n{outcome}" if outcome else state.reply}
        case StopReason.MAX_STEPS:
            return _step_limit_reply(state, step_limit(runtime))
        case StopReason.API_ERROR:
            return _failure_reply(API_ERROR_REPLY.format(error=state.error))
        case StopReason.EMPTY_RESPONSE:
            return _failure_reply(EMPTY_RESPONSE_REPLY)
        case StopReason.TOOL_ERROR:
            return _failure_reply(TOOL_ERROR_REPLY.format(error=state.error))
    raise RuntimeError(f"the turn reached finish without a stop reason ({state.stop_reason!r})")
