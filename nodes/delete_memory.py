"""Delete what the user approved; idempotent, so a re-run after a crash deletes nothing twice.

The memory's words also leave the conversations: every turn that involved it,
in this thread and the user's others, is blanked (:mod:`agent.forgotten`).
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.forgotten import REMOVED, Forgotten, blanked_forget, blanked_turns
from nodes.approve_forget import shown_deletes
from nodes.common import current_thread_id, library, owned_user_id
from nodes.other_threads import blank_in_other_threads, report_blanked, typed_in
from nodes.state import Context, State


def delete_memory(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Forget each approved memory and the older versions its question showed, then blank
    the turns that involved them."""
    user_id = owned_user_id(state, runtime)
    memora = library(runtime)
    approved = [a for a in state.forget_actions() if a.memory_id in state.approved_forget_ids]
    texts = [a.preview for a in approved]
    deleted: list[str] = []
    for action in approved:
        # What the question showed is the most that goes: a version linked to it while the
        # question waited (a review, an import) was never asked about.
        # Their texts were read when the deletion was requested: the store is not read again.
        shown = shown_deletes(action, state)
        texts += [d["content"] for d in shown]
        ids = [d["memory_id"] for d in shown]
        deleted += memora.forget(user_id, action.memory_id, actor="agent-approved", only=ids)
    forgotten = Forgotten.of([*state.approved_forget_ids, *deleted], texts)
    thread_id = current_thread_id()
    elsewhere = blank_in_other_threads(user_id, thread_id, forgotten)
    update: dict[str, Any] = {
        "deleted_memory_ids": deleted,
        "reply": REMOVED,  # the model's answer spoke of it; finish says what was done
        "pending_actions": _without_words(state.pending_actions, forgotten),
        "scrubbed_threads": len(elsewhere),
    }
    blanked = blanked_turns(state.messages, forgotten)
    if blanked:
        update["messages"] = blanked
    here = {thread_id: typed_in(state.messages, blanked)} if thread_id and blanked else {}
    # This thread's own record follows its checkpoint when the run ends; the rest
    # (the others' records, this one's earlier runs' input) only through the hooks.
    report_blanked({**elsewhere, **here}, forgotten)
    if state.summary and forgotten.in_text(state.summary):
        update["summary"] = ""
    return update


def _without_words(actions: list[dict[str, Any]], forgotten: Forgotten) -> list[dict[str, Any]]:
    """The pending actions with the deleted memories' words taken out of each deletion."""
    return [
        blanked_forget(action, forgotten) if action.get("type") == "forget_memory" else action
        for action in actions
    ]
