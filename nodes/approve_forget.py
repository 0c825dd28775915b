"""Ask the user to approve each requested deletion (a LangGraph interrupt per memory).

The interrupt carries LangChain's human-in-the-loop request (``action_requests`` and
``review_configs``, the shape ``HumanInTheLoopMiddleware`` raises and Studio and Agent
Chat UI render as a review card) beside Memora's own fields (``memory_id``, ``preview``,
``reason``, ``question``), so both kinds of client can answer it.
"""

from __future__ import annotations

import json
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from agent.forgotten import Forgotten, blanked_forget
from agent.tool_schemas import REQUEST_FORGET_MEMORY
from nodes.common import library, owned_user_id
from nodes.state import Context, ForgetAction, State

_YES = {"y", "yes", "approve", "true"}
_NO = {"n", "no", "reject", "false", ""}
ALLOWED_DECISIONS = ["approve", "reject"]
"""The standard decisions a deletion accepts: no edit (the memory id is not the
reviewer's to change) and no respond (a person is not the tool's result)."""
QUESTION = "Delete this memory? [y/N]"


def approval_request(
    action: ForgetAction, deletes: list[dict[str, str]] | None = None, error: str = ""
) -> dict[str, Any]:
    """The interrupt value for one deletion: Memora's fields, every memory it removes (it and
    the older versions it replaced, oldest first) and the standard HITL request, whose
    description names each of them too (it is what Studio and Agent Chat UI show). With
    ``error`` (the question asked again), it says first why."""
    older = [d["content"] for d in deletes or [] if d.get("memory_id") != action.memory_id]
    also = "".join(f"\nAlso deletes this older version: {text}" for text in older)
    before = f"{error}\n\n" if error else ""
    return {
        **({"error": error} if error else {}),
        "memory_id": action.memory_id,
        "preview": action.preview,
        "reason": action.reason,
        "question": QUESTION,
        "deletes": deletes if deletes is not None else [],
        "action_requests": [
            {
                "name": REQUEST_FORGET_MEMORY,
                "args": {"memory_id": action.memory_id, "reason": action.reason},
                "description": (
                    f"{before}Delete this memory?\n\nMemory: {action.preview}{also}\n"
                    f"Reason: {action.reason}"
                ),
            }
        ],
        "review_configs": [
            {"action_name": REQUEST_FORGET_MEMORY, "allowed_decisions": ALLOWED_DECISIONS}
        ],
    }


NOT_AN_ANSWER = (
    "That answer ({kind}) was not understood, so nothing was deleted yet. Answer y or n,"
    " or with one decision of type approve or reject."
)
"""Shown with the question asked again after an answer it cannot read. The answer itself is
not repeated: someone may have typed anything at the prompt, and the question is kept."""


def read_answer(answer: Any) -> bool | None:
    """Whether a resume value approves the deletion, or None if it is not an answer.

    Approves: ``true``; "y"/"yes"/"approve"/"true" (any case, trimmed); ``{"approve": those}``;
    the standard ``{"decisions": [{"type": "approve"}]}``. Keeps the memory: ``false``;
    "n"/"no"/"reject"/"false" or an empty answer (the chat's ``[y/N]`` default);
    ``{"approve": those}``; ``{"decisions": [{"type": "reject", ...}]}``. Anything else is not
    an answer (the question is asked again): another word, a number, an unknown or
    disallowed decision type, or a list that is not exactly one decision (one action was
    asked about).
    """
    if isinstance(answer, dict) and "decisions" in answer:
        return _standard_answer(answer["decisions"])
    if isinstance(answer, dict) and set(answer) == {"approve"}:
        answer = answer["approve"]
    if isinstance(answer, bool):
        return answer
    if isinstance(answer, str):
        word = answer.strip().lower()
        return True if word in _YES else False if word in _NO else None
    return None


def _standard_answer(decisions: Any) -> bool | None:
    if not isinstance(decisions, list) or len(decisions) != 1:
        return None
    decision = decisions[0]
    kind = decision.get("type") if isinstance(decision, dict) else None
    return {"approve": True, "reject": False}.get(kind) if isinstance(kind, str) else None


def blanked_request(request: dict[str, Any], forgotten: Forgotten) -> dict[str, Any]:
    """A paused question with a memory forgotten elsewhere taken out of it: the question
    stays (answers are matched to questions in order), its words about that memory go."""
    if not forgotten.in_text(json.dumps(request, ensure_ascii=False, default=str)):
        return request
    fields = blanked_forget(request, forgotten)
    action = ForgetAction(
        memory_id=str(fields.get("memory_id", "")),
        preview=str(fields["preview"] or ""),
        reason=str(fields["reason"] or ""),
        deletes=fields["deletes"],
    )
    return approval_request(action, action.deletes, str(request.get("error", "")))


def _kind(answer: Any) -> str:
    if isinstance(answer, dict) and "decisions" in answer:
        decisions = answer["decisions"]
        if isinstance(decisions, list) and len(decisions) != 1:
            return f"{len(decisions)} decisions for one question"
        return "a decision other than approve or reject"
    if isinstance(answer, str):
        return "another word"
    if isinstance(answer, int | float):
        return "a number"
    return "an object" if isinstance(answer, dict) else f"a {type(answer).__name__}"


def approve_forget(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Ask about the next deletion not yet answered: one question a run, so each answer is
    saved before the next question is put, and what happens while one waits (a forget
    elsewhere, a review) cannot change which question a later answer is read for. The node
    re-runs from its top on resume, so nothing happens before the interrupt."""
    user_id = owned_user_id(state, runtime)
    action = next_unanswered(state)
    if action is None:
        return {}
    actions = state.forget_actions()
    approved = list(state.approved_forget_ids)
    done = {"answered_forget_ids": [*state.answered_forget_ids, action.memory_id]}
    if action.memory_id in _covered(actions, set(approved)):
        # An older version a deletion approved above removes: asking again could only show
        # a choice that is no longer there.
        return {**done, "approved_forget_ids": [*approved, action.memory_id]}
    memora = library(runtime)
    answer = interrupt(approval_request(action, shown_deletes(action, state), state.forget_retry))
    decision = read_answer(answer)
    if decision is None:
        return {"forget_retry": NOT_AN_ANSWER.format(kind=_kind(answer))}
    update: dict[str, Any] = {**done, "forget_retry": ""}
    if decision:
        update["approved_forget_ids"] = [*approved, action.memory_id]
    if memora.preview(user_id, action.memory_id) is None:
        update["gone_forget_ids"] = [*state.gone_forget_ids, action.memory_id]
    return update


def shown_deletes(action: ForgetAction, state: State) -> list[dict[str, str]]:
    """What approving this deletion removes, as its question shows it: the versions read when
    it was requested, less any the user has refused to delete in this turn. An action saved
    before those were kept shows (and removes) the memory alone."""
    refused = set(state.answered_forget_ids) - set(state.approved_forget_ids)
    deletes = action.deletes or [{"memory_id": action.memory_id, "content": action.preview}]
    return [
        d for d in deletes if d["memory_id"] == action.memory_id or d["memory_id"] not in refused
    ]


def _covered(actions: list[ForgetAction], approved: set[str]) -> set[str]:
    """The older versions the approved deletions remove, as their questions showed them."""
    return {d["memory_id"] for a in actions if a.memory_id in approved for d in a.deletes}


def next_unanswered(state: State) -> ForgetAction | None:
    """The first deletion of this turn still waiting for its answer, if any."""
    answered = set(state.answered_forget_ids)
    return next((a for a in state.forget_actions() if a.memory_id not in answered), None)
