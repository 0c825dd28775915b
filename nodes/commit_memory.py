"""After a final answer: commit remember actions through the write path, touch used memories."""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from agent.messages import text_of
from agent.prompts import MEMORY_NOT_SAVED_NOTE
from memora.errors import StoreError
from memora.models import MemoryCandidate, MemorySource
from nodes.common import current_thread_id, last_ai_message, library, owned_user_id
from nodes.state import Context, State

logger = logging.getLogger("memora.nodes")


def commit_memory(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Run each pending remember action through policy and reconciliation, then touch."""
    user_id = owned_user_id(state, runtime)
    memora = library(runtime)
    # The turn's number in its thread (1 = the first user message), so a person can find
    # where a memory came from; the inspector shows it beside the thread id.
    turn = sum(isinstance(message, HumanMessage) for message in state.messages)
    source = MemorySource(thread_id=current_thread_id(), turn=turn or None, actor="agent")
    candidates = [action.candidate for action in state.remember_actions()]
    answer = last_ai_message(state.messages)
    reply = text_of(answer) if answer is not None else ""
    try:
        outcomes = memora.store_accepted_memories(user_id, candidates, source)
    except StoreError as error:
        # The turn still ends (and is redacted) as usual; the reply says what was lost.
        return _not_saved(reply, candidates, error)
    try:
        memora.touch(user_id, state.used_memory_ids)
    except StoreError as error:  # recency is a ranking hint; the turn stands without it
        logger.warning("could not record which memories were used: %s", error)
    return {
        "reply": reply,
        "commit_outcomes": [
            _outcome_json(
                outcome.accepted,
                outcome.reason,
                outcome.action.value if outcome.action else None,
                outcome.memory_id,
                outcome.affected_ids,
            )
            for outcome in outcomes
        ],
        "tool_tokens": state.tool_tokens + sum(outcome.tokens for outcome in outcomes),
    }


def _not_saved(reply: str, candidates: list[MemoryCandidate], error: StoreError) -> dict[str, Any]:
    """The update of a final answer whose memories the store refused to take."""
    note = MEMORY_NOT_SAVED_NOTE.format(error=str(error).splitlines()[0]) if candidates else ""
    return {
        "reply": f"{reply}\n\n{note}" if note else reply,
        "commit_outcomes": [_outcome_json(False, "store_unavailable") for _ in candidates],
    }


def _outcome_json(
    accepted: bool,
    reason: str | None,
    action: str | None = None,
    memory_id: str | None = None,
    affected_ids: list[str] | None = None,
) -> dict[str, Any]:
    """One remember action's outcome as the checkpoint keeps it (plain JSON)."""
    return {
        "accepted": accepted,
        "reason": reason,
        "action": action,
        "memory_id": memory_id,
        "affected_ids": affected_ids if affected_ids is not None else [],
    }
