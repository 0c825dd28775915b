"""Ask the chat model for the next step: one tool call or the answer."""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, SystemMessage
from langgraph.runtime import Runtime

from memora.chat_models import get_chat_model
from memora.prompts import PROFILE_HEADER, SUMMARY_HEADER, SYSTEM_PROMPT
from memora.tools import tool_schemas
from nodes.common import (
    current_turn_start,
    library,
    owned_user_id,
    requested_calls,
    settings,
    text_of,
)
from nodes.state import Context, State

logger = logging.getLogger(__name__)


def _bound_model() -> Any:
    model: BaseChatModel = get_chat_model(settings())
    return model.bind_tools(tool_schemas(), parallel_tool_calls=False)


def model_input(state: State, user_id: str) -> list[AnyMessage]:
    """Background, the earlier turns that fit, and this turn's messages."""
    background = SYSTEM_PROMPT
    profile = library().get_profile(user_id)
    if profile:
        background += f"\n\n{PROFILE_HEADER}\n" + "\n".join(
            f"- {k}: {v}" for k, v in profile.items()
        )
    if state.summary:
        background += f"\n\n{SUMMARY_HEADER}\n{state.summary}"
    keep = set(state.context_message_ids)
    start = current_turn_start(state.messages)
    history = [m for m in state.messages[:start] if m.id in keep]
    return [SystemMessage(background), *history, *state.messages[start:]]


def call_model(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Call the model once; a failure or an empty answer ends the turn."""
    user_id = owned_user_id(state, runtime)
    try:
        response = _bound_model().invoke(model_input(state, user_id))
    except Exception as error:  # any provider failure ends the turn with api_error
        logger.warning("chat model call failed: %s", error)
        return {"stop_reason": "api_error", "error": f"{type(error).__name__}: {error}"[:300]}
    if not isinstance(response, AIMessage) or not (
        requested_calls(response) or text_of(response).strip()
    ):
        return {"stop_reason": "empty_response"}
    usage: dict[str, Any] = dict(response.usage_metadata or {})
    return {
        "messages": [response],
        "response_tokens": state.response_tokens + int(usage.get("total_tokens", 0)),
    }
