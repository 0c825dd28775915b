"""Start a turn: claim the thread for its user, reset the turn's counters, fit history."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.config import get_config
from langgraph.runtime import Runtime

from memora.prompts import model_background
from nodes.common import (
    current_turn_start,
    library,
    requested_calls,
    resolve_user_id,
    step_limit,
    text_of,
)
from nodes.state import Context, State, fresh_turn

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
    memora = library(runtime)
    background = model_background(memora.get_profile(user_id), state.summary)
    budget = (
        memora.settings.context_token_budget
        - memora.settings.tool_step_token_reserve * step_limit(runtime)
        - count_tokens_approximately([background])
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
        **fresh_turn(),
        "owner_user_id": user_id,
        "summary": _summarise(newly_dropped, state.summary) if newly_dropped else state.summary,
        "summarised_turns": max(dropped, state.summarised_turns),
        "context_message_ids": [m.id for turn in kept for m in turn if m.id],
    }
