"""Start a turn: claim the thread for its user, reset the turn's counters, fit history."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.config import get_config
from langgraph.runtime import Runtime

from agent.chat_models import check_chat_model
from agent.messages import text_of
from agent.prompts import MESSAGE_CUT_NOTE, MESSAGE_CUT_REPLY, model_background
from agent.spotlight import DataFrame
from nodes.common import (
    current_turn_start,
    is_foreign,
    library,
    requested_calls,
    resolve_user_id,
    run_context,
    step_limit,
)
from nodes.state import Context, State, fresh_turn

SUMMARY_MAX_CHARS = 1200
CHARS_PER_TOKEN = 4
"""langchain_core's approximate counter charges about one token per four characters."""


def _earlier_turns(messages: list[AnyMessage]) -> list[list[AnyMessage]]:
    """Earlier turns as [user message, final reply]; tool traffic is never replayed, so no
    tool call can be separated from its result."""
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


@dataclass(frozen=True)
class _Cut:
    message: HumanMessage
    """The user's message cut to fit, with a note to the model; its id replaces the original."""
    note: str
    """What the user is told."""


def _cut_to_fit(current: list[AnyMessage], room: int) -> _Cut | None:
    """The user's message cut so the turn fits ``room`` tokens, or None if it already fits."""
    if not current or not isinstance(current[0], HumanMessage):
        return None
    if count_tokens_approximately(current) <= room:
        return None
    text = text_of(current[0])
    keep = max(0, room * CHARS_PER_TOKEN - len(MESSAGE_CUT_NOTE) - 64)
    while keep > 0:
        note = MESSAGE_CUT_NOTE.format(kept=keep, total=len(text))
        candidate = HumanMessage(text[:keep] + note, id=current[0].id)
        if count_tokens_approximately([candidate]) <= room:
            break
        keep = int(keep * 0.9)
    note = MESSAGE_CUT_NOTE.format(kept=keep, total=len(text))
    return _Cut(
        HumanMessage(text[:keep] + note, id=current[0].id),
        MESSAGE_CUT_REPLY.format(kept=keep, total=len(text)),
    )


def assemble_context(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Reset the turn, draw its data frame, and choose which earlier turns fit the budget.

    Background (system prompt, profile, summary) and the agent loop's reserve
    (TOOL_STEP_TOKEN_RESERVE x MAX_AGENT_STEPS) come off the budget first;
    then earlier turns are kept newest first while they fit. Turns that do not
    fit are folded into the summary. Earlier tool traffic is never replayed,
    so no tool call can be separated from its result.
    """
    start = current_turn_start(state.messages)
    current = state.messages[start:]
    user_id = resolve_user_id(runtime, get_config())
    # Before any work: a client-chosen model outside the operator's allowlist fails the run.
    check_chat_model(library(runtime).settings, run_context(runtime).chat_model)
    if is_foreign(state, user_id):
        # The server saved this run's input before any node ran: take it back out of
        # the owner's transcript, then let finish fail the run.
        return {
            "messages": [RemoveMessage(id=m.id) for m in current if m.id],
            "refused_user_id": user_id,
        }
    memora = library(runtime)
    frame = DataFrame.new()
    profile = memora.get_profile(user_id)
    background = model_background(profile, state.summary, frame)
    room = (
        memora.settings.context_token_budget
        - memora.settings.tool_step_token_reserve * step_limit(runtime)
        - count_tokens_approximately([background])
    )
    cut = _cut_to_fit(current, room)
    if cut is not None:
        current = [cut.message]
    budget = room - count_tokens_approximately(current)
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
    summary = _summarise(newly_dropped, state.summary) if newly_dropped else state.summary
    if summary != state.summary:
        background = model_background(profile, summary, frame)
    return {
        **fresh_turn(),
        "data_frame_id": frame.frame_id,
        "background": background,
        **({"messages": [cut.message], "cut_note": cut.note} if cut is not None else {}),
        "owner_user_id": user_id,
        "summary": summary,
        "summarised_turns": max(dropped, state.summarised_turns),
        "context_message_ids": [m.id for turn in kept for m in turn if m.id],
    }
