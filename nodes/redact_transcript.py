"""Once a turn has its answer: cut sensitive values out of what the thread keeps of it.

The user's message, the model's replies and tool calls, and the tool
observations of this turn are rewritten with the policy's sensitive values
replaced by ``[redacted: sensitive_data]``, so no later turn sends them to the
model again and no checkpoint keeps them (the local checkpointer keeps only
the newest checkpoint). MEMORA_REDACT_TRANSCRIPTS=false turns this off.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.runtime import Runtime

from agent.messages import text_of
from memora.judgement import Judgement
from memora.redaction import (
    PLUMBING,
    judged_values,
    redact,
    redact_tree,
    sensitive_values,
)
from nodes.common import current_turn_start, library, settings
from nodes.state import Context, State


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [
            text for key, item in value.items() if key not in PLUMBING for text in _strings(item)
        ]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


_MEMORY_ID = re.compile(r'"memory_id":\s*"([^"]+)"')


def _own_ids(state: State, turn: list[AnyMessage]) -> frozenset[str]:
    """Ids the turn's tools carry: memory ids look like hex keys and a provider's tool-call
    ids ("call_iK2ZWeqh…") like random tokens, but they are plumbing, and a call id cut from
    the model's message no longer matches its tool's answer in the stored thread."""
    ids = set(state.used_memory_ids)
    for action in state.forget_actions():
        ids.update([action.memory_id, *(d["memory_id"] for d in action.deletes)])
    for message in turn:
        for text in _strings(_parts(message)):
            ids.update(_MEMORY_ID.findall(text))
        if isinstance(message, AIMessage):
            ids.update(str(call["args"].get("memory_id", "")) for call in message.tool_calls)
            calls = [*message.tool_calls, *message.invalid_tool_calls]
            ids.update(str(call.get("id") or "") for call in calls)
        if isinstance(message, ToolMessage):
            ids.add(message.tool_call_id)
    return frozenset(own_id for own_id in ids if own_id)


def _parts(message: AnyMessage) -> dict[str, Any]:
    """The fields of a message that can carry text."""
    parts: dict[str, Any] = {
        "content": message.content,
        "additional_kwargs": dict(message.additional_kwargs),
    }
    if isinstance(message, AIMessage):
        parts["tool_calls"] = [dict(call) for call in message.tool_calls]
        parts["invalid_tool_calls"] = [dict(call) for call in message.invalid_tool_calls]
    return parts


def _redacted_message(
    message: AnyMessage, found: list[str], keep: frozenset[str], judge: Judgement | None
) -> AnyMessage | None:
    """A copy of ``message`` (same id) with sensitive values cut, or None if it had none.

    The user's words and the model's tool calls are also cut where the trained decisions
    place a secret: a short value inside a run of Han characters is not a token the echo
    chase can find, and the model words a memory its own way ("the user's safe opens with
    ...") where the user's sentence went whole. The model's prose is only chased for the
    values found: read on its own, a reply ("Got it, 381 for the shed.") would go whole.
    """
    parts = _parts(message)
    if isinstance(message, HumanMessage):
        update, cut = redact_tree(parts, found, keep, judge=judge, fixed=PLUMBING)
    elif isinstance(message, AIMessage):
        prose, prose_cut = redact_tree(parts.pop("content"), found, keep, fixed=PLUMBING)
        calls, calls_cut = redact_tree(parts, found, keep, judge=judge, fixed=PLUMBING)
        update, cut = {"content": prose, **calls}, prose_cut + calls_cut
    else:
        update, cut = redact_tree(parts, found, keep, fixed=PLUMBING)
    return message.model_copy(update=update) if cut else None


def _judged_values(
    turn: list[AnyMessage], runtime: Runtime[Context], keep: frozenset[str]
) -> set[str]:
    """Values the trained judgement places in the user's words, cut wherever echoed."""
    judge = library(runtime).judge
    if judge is None:
        return set()
    values: set[str] = set()
    for message in turn:
        if isinstance(message, HumanMessage):
            text = text_of(message)
            values |= judged_values(text, judge, keep)
    return {value for value in values if value.strip()}


def redact_transcript(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Replace this turn's messages (and pending actions) by their redacted copies, and drop
    the turn's background: the model has had it, and the checkpoint must not keep the
    profile a person may change or erase."""
    return {"background": "", **_redacted_turn(state, runtime)}


def _redacted_turn(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    if not settings(runtime).redact_transcripts:
        return {}
    turn = state.messages[current_turn_start(state.messages) :]
    keep = _own_ids(state, turn)
    # Values found anywhere in the turn are cut wherever they are echoed.
    found = sorted(
        {
            value
            for m in turn
            for text in _strings(_parts(m))
            for value in sensitive_values(text, keep)
        },
        key=len,
        reverse=True,
    )
    found = sorted(set(found) | _judged_values(turn, runtime, keep), key=len, reverse=True)
    judge = library(runtime).judge
    cleaned = [m for m in (_redacted_message(m, found, keep, judge) for m in turn) if m is not None]
    update: dict[str, Any] = {}
    if cleaned:
        update["messages"] = cleaned
    reply = redact(state.reply, also=found, keep=keep)
    if reply.redactions:
        update["reply"] = reply.text
    actions, cut = redact_tree(state.pending_actions, found, keep)
    if cut:
        update["pending_actions"] = actions
    return update
