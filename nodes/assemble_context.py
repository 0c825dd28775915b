"""Start a turn: claim the thread for its user, reset the turn's counters, fit history."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.config import get_config
from langgraph.runtime import Runtime

from memora.prompts import SYSTEM_PROMPT
from nodes.common import (
    current_turn_start,
    library,
    requested_calls,
    resolve_user_id,
    settings,
    text_of,
)
from nodes.state import Context, State

SUMMARY_MAX_CHARS = 1200


def _earlier_turns(messages: list[AnyMessage]) -> list[list[AnyMessage]]:
    """Earlier turns as [user message, final reply], tool traffic left out (seed 002)."""
    turns: list[list[AnyMessage]] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            turns.append([message])
        elif (
            isinstance(message, AIMessage)
            and not requested_calls(message)
            and turns
            and text_of(message)
        ):
            turns[-1] = [turns[-1][0], message]
    return turns


def _summarise(turns: list[list[AnyMessage]], previous: str) -> str:
    """A compact record of turns that no longer fit: what the user said, newest last."""
    lines = [previous] if previous else []
    lines += [f"- user said: {text_of(turn[0])[:160]}" for turn in turns]
    summary = "\n".join(lines)
    return summary[-SUMMARY_MAX_CHARS:]


def assemble_context(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Reset the turn and choose which earlier turns fit the token budget.

    Background (system prompt, profile, summary) and the agent loop's reserve
    (TOOL_STEP_TOKEN_RESERVE x MAX_AGENT_STEPS) come off the budget first;
    then earlier turns are kept newest first while they fit. Turns that do not
    fit are folded into the summary. Earlier tool traffic is never replayed,
    so no tool call can be separated from its result.
    """
    start = current_turn_start(state.messages)
    current = state.messages[start:]
    user_id = resolve_user_id(runtime, get_config())
    if state.owner_user_id and state.owner_user_id != user_id:
        # The server saved this run's input before any node ran: take it back out of
        # the owner's transcript, then let finish fail the run.
        return {
            "messages": [RemoveMessage(id=m.id) for m in current if m.id],
            "refused_user_id": user_id,
        }
    config_settings = settings()
    profile = library().get_profile(user_id)
    background = SYSTEM_PROMPT + "\n".join(f"{k}: {v}" for k, v in profile.items())
    budget = (
        config_settings.context_token_budget
        - config_settings.agent_token_reserve
        - count_tokens_approximately([background, state.summary])
        - count_tokens_approximately(current)
    )
    turns = _earlier_turns(state.messages[:start])
    kept: list[list[AnyMessage]] = []
    for turn in reversed(turns):
        cost = count_tokens_approximately(turn)
        if cost > budget:
            break
        kept.insert(0, turn)
        budget -= cost
    dropped = len(turns) - len(kept)
    newly_dropped = turns[state.summarised_turns : dropped]
    return {
        "owner_user_id": user_id,
        "summary": _summarise(newly_dropped, state.summary) if newly_dropped else state.summary,
        "summarised_turns": max(dropped, state.summarised_turns),
        "context_message_ids": [m.id for turn in kept for m in turn if m.id],
        "tool_steps": 0,
        "response_tokens": 0,
        "tool_tokens": 0,
        "used_memory_ids": [],
        "pending_actions": [],
        "approved_forget_ids": [],
        "deleted_memory_ids": [],
        "commit_outcomes": [],
        "stop_reason": "",
        "reply": "",
        "error": "",
        "refused_user_id": "",
    }
