"""Ask the user to approve each requested deletion (a LangGraph interrupt per memory).

The interrupt carries LangChain's human-in-the-loop request (``action_requests`` and
``review_configs``, the shape ``HumanInTheLoopMiddleware`` raises and Studio and Agent
Chat UI render as a review card) beside Memora's own fields (``memory_id``, ``preview``,
``reason``, ``question``), so both kinds of client can answer it.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from agent.tool_schemas import REQUEST_FORGET_MEMORY
from nodes.common import library, owned_user_id
from nodes.state import Context, ForgetAction, State

_YES = {"y", "yes", "approve", "true"}
ALLOWED_DECISIONS = ["approve", "reject"]
"""The standard decisions a deletion accepts: no edit (the memory id is not the
reviewer's to change) and no respond (a person is not the tool's result)."""
QUESTION = "Delete this memory? [y/N]"


def approval_request(
    action: ForgetAction, deletes: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    """The interrupt value for one deletion: Memora's fields, every memory it removes (it and
    the older versions it replaced, oldest first) and the standard HITL request, whose
    description names each of them too (it is what Studio and Agent Chat UI show)."""
    older = [d["content"] for d in deletes or [] if d.get("memory_id") != action.memory_id]
    also = "".join(f"\nAlso deletes this older version: {text}" for text in older)
    return {
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
                    f"Delete this memory?\n\nMemory: {action.preview}{also}\n"
                    f"Reason: {action.reason}"
                ),
            }
        ],
        "review_configs": [
            {"action_name": REQUEST_FORGET_MEMORY, "allowed_decisions": ALLOWED_DECISIONS}
        ],
    }


def is_approval(answer: Any) -> bool:
    """Whether a resume value approves the deletion.

    True for ``true``; "y"/"yes"/"approve"/"true" (any case, trimmed); ``{"approve": those}``;
    and the standard ``{"decisions": [{"type": "approve"}]}``. Anything else keeps the
    memory, the chat's ``[y/N]`` default: ``{"decisions": [{"type": "reject", ...}]}``, an
    unknown decision type, or a list of decisions that is not exactly one (one action was
    asked about, so more or fewer answers are not an answer to it).
    """
    if isinstance(answer, dict) and "decisions" in answer:
        return _standard_approval(answer["decisions"])
    if isinstance(answer, dict):
        answer = answer.get("approve")
    if answer is True:
        return True
    return isinstance(answer, str) and answer.strip().lower() in _YES


def _standard_approval(decisions: Any) -> bool:
    if not isinstance(decisions, list) or len(decisions) != 1:
        return False
    decision = decisions[0]
    return isinstance(decision, dict) and decision.get("type") == "approve"


def approve_forget(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Interrupt once per forget action; the node re-runs on resume, so nothing happens before."""
    user_id = owned_user_id(state, runtime)
    memora = library(runtime)
    approved: list[str] = []
    covered: set[str] = set()
    for action in state.forget_actions():
        if action.memory_id in covered:
            # An older version a deletion approved above removes: asking again could only
            # show a choice that is no longer there.
            approved.append(action.memory_id)
            continue
        # Reading is no side effect: the node may re-run on resume.
        chain = memora.chain(user_id, action.memory_id)
        deletes = [{"memory_id": unit.id, "content": unit.content} for unit in chain]
        if is_approval(interrupt(approval_request(action, deletes))):
            approved.append(action.memory_id)
            covered.update(unit.id for unit in chain)
    return {"approved_forget_ids": approved}
