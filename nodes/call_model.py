"""Ask the chat model for the next step, and decide whether the turn goes on."""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.runtime import Runtime

from agent.chat_models import get_chat_model
from agent.messages import text_of
from agent.spotlight import frame_quotations, quoted_sources
from agent.tools import tool_schemas
from nodes.common import (
    current_turn_start,
    data_frame,
    library,
    owned_user_id,
    requested_calls,
    run_context,
    step_limit,
)
from nodes.state import Context, State, StopReason, stopped

logger = logging.getLogger(__name__)


def model_input(state: State) -> list[AnyMessage]:
    """The turn's background, the earlier turns that fit, and this turn's messages."""
    keep = set(state.context_message_ids)
    start = current_turn_start(state.messages)
    return [SystemMessage(state.background), *_history(state, keep, start), *state.messages[start:]]


def _history(state: State, keep: set[str], start: int) -> list[AnyMessage]:
    """The earlier turns that fit, each reply with what it quoted of stored text framed.

    A reply could quote only what its own turn showed the model (search results,
    forget previews) and the profile, so those are the texts looked for.
    """
    frame = data_frame(state)
    profile = quoted_sources([state.background])
    shown: list[str] = []
    history: list[AnyMessage] = []
    for message in state.messages[:start]:
        if isinstance(message, HumanMessage):
            shown = []
        elif isinstance(message, ToolMessage):
            shown += quoted_sources([text_of(message)])
        if message.id not in keep:
            continue
        if isinstance(message, AIMessage) and isinstance(message.content, str):
            framed = frame_quotations(message.content, [*profile, *shown], frame)
            if framed != message.content:
                message = message.model_copy(update={"content": framed})
        history.append(message)
    return history


def _bound_model(runtime: Runtime[Context]) -> Any:
    model = get_chat_model(library(runtime).settings, run_context(runtime).chat_model)
    return model.bind_tools(tool_schemas(), parallel_tool_calls=False)


def call_model(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Call the model once and set the stop reason when the turn ends here.

    MAX_AGENT_STEPS counts tool executions: after the last allowed
    observation the model gets one more call, and a tool call it asks for then
    ends the turn with ``max_steps`` without being run.
    """
    owned_user_id(state, runtime)
    try:
        response = _bound_model(runtime).invoke(model_input(state))
    except Exception as error:  # any provider failure ends the turn with api_error
        logger.warning("chat model call failed: %s", error)
        return {
            **stopped(StopReason.API_ERROR),
            "error": f"{type(error).__name__}: {error}"[:300],
        }
    if not isinstance(response, AIMessage) or not (
        requested_calls(response) or text_of(response).strip()
    ):
        return stopped(StopReason.EMPTY_RESPONSE)
    usage: dict[str, Any] = dict(response.usage_metadata or {})
    update: dict[str, Any] = {
        "messages": [response],
        "response_tokens": state.response_tokens + int(usage.get("total_tokens", 0)),
    }
    if not requested_calls(response):
        update |= stopped(StopReason.FINAL_ANSWER)
    elif state.tool_steps >= step_limit(runtime):
        update |= stopped(StopReason.MAX_STEPS)
    return update
