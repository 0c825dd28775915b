"""Run the model's tool call through the allowlist; the observation goes back to the model."""

from __future__ import annotations

import json
import logging
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.runtime import Runtime

from agent.messages import text_of
from agent.prompts import ONE_TOOL_OBSERVATION
from agent.tools import ToolContext, dispatch
from memora.models import utcnow
from nodes.common import (
    current_thread_id,
    current_turn_start,
    data_frame,
    last_ai_message,
    library,
    owned_user_id,
    requested_calls,
    run_context,
)
from nodes.state import Context, State, StopReason, stopped, to_checkpoint

logger = logging.getLogger(__name__)


def _refusal(tool_call_id: str, error: str) -> ToolMessage:
    return ToolMessage(json.dumps({"ok": False, "error": error}), tool_call_id=tool_call_id)


def execute_tool(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Execute the first tool call (one per step); answer any others with ok:false."""
    user_id = owned_user_id(state, runtime)
    request = last_ai_message(state.messages)
    calls = requested_calls(request)
    assert calls, "routed here without a tool call"
    call, *extra = calls
    start = current_turn_start(state.messages)
    run = run_context(runtime)
    context = ToolContext(
        memora=library(runtime),
        user_id=user_id,
        thread_id=current_thread_id(),
        user_message=text_of(state.messages[start]) if start < len(state.messages) else "",
        now=utcnow(),
        retrieval_limit=run.retrieval_limit,
        retrieval_min_score=run.retrieval_min_score,
        frame=data_frame(state),
    )
    update: dict[str, Any] = {"tool_steps": state.tool_steps + 1}
    try:
        outcome = dispatch(call["name"], call.get("args", {}), context)
    except Exception as error:  # a crash inside a handler stops the run
        logger.exception("tool %s failed", call["name"])
        message = f"{type(error).__name__}: {error}"[:300]
        update |= stopped(StopReason.TOOL_ERROR)
        update["error"] = message
        observation = _refusal(call["id"] or "", "the tool failed")
        update["messages"] = [
            observation,
            *(_refusal(c["id"] or "", ONE_TOOL_OBSERVATION) for c in extra),
        ]
        return update
    messages = [ToolMessage(outcome.observation, tool_call_id=call["id"] or "", name=call["name"])]
    messages += [_refusal(c["id"] or "", ONE_TOOL_OBSERVATION) for c in extra]
    update["messages"] = messages
    if outcome.result is not None:
        result = outcome.result
        update["tool_tokens"] = state.tool_tokens + result.token_usage
        update["used_memory_ids"] = list(
            dict.fromkeys(state.used_memory_ids + result.used_memory_ids)
        )
        update["pending_actions"] = to_checkpoint(
            state.actions
            + [action for action in result.pending_actions if action not in state.actions]
        )
    return update
