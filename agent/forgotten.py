"""Taking a forgotten memory out of a conversation: every turn that involved it is blanked.

A memory's words reach a transcript in many shapes: the user's "remember …"
message, the remember and forget tool calls, search results, the approval's
preview, the replies that used it. Paraphrases cannot be found by matching text,
but every such turn carries the memory's id or its exact text somewhere (a tool
call's arguments, an observation, a preview), so the unit of removal is the
turn: each of its messages keeps its id, type and tool-call ids (the transcript
stays valid for the model) and loses its text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from memora.text.folding import fold

REMOVED = "[removed: this turn involved a memory you asked to forget]"
"""What stands in every message of a turn that involved a forgotten memory."""

MIN_NEEDLE_CHARS = 8
"""Shorter texts are not searched for (they would match unrelated turns)."""


@dataclass(frozen=True)
class Forgotten:
    """What identifies a forgotten memory in a transcript."""

    ids: frozenset[str]
    """The deleted memory ids (each with the older versions it replaced)."""
    texts: frozenset[str]
    """Their contents and previews, folded (case and width) for matching."""

    @classmethod
    def of(cls, ids: Iterable[str], texts: Iterable[str]) -> Forgotten:
        """Ids and the texts they had (previews may end with an ellipsis: it is dropped)."""
        needles = {fold(text.rstrip("…").strip()) for text in texts}
        return cls(
            ids=frozenset(i for i in ids if i),
            texts=frozenset(n for n in needles if len(n) >= MIN_NEEDLE_CHARS),
        )

    def named_in(self, message: AnyMessage) -> bool:
        """Whether the message carries one of the ids or texts anywhere."""
        return self.in_text(_message_text(message))

    def in_text(self, text: str) -> bool:
        """Whether ``text`` carries one of the ids or texts."""
        if any(memory_id in text for memory_id in self.ids):
            return True
        folded = fold(text)
        return any(needle in folded for needle in self.texts)


def blanked_fields(values: dict[str, object], forgotten: Forgotten) -> dict[str, object]:
    """The thread's text fields besides its messages (the last reply, the summary, pending
    actions) that carry the forgotten memory, blanked."""
    update: dict[str, object] = {}
    for name in ("reply", "summary"):
        text = values.get(name)
        if isinstance(text, str) and text and forgotten.in_text(text):
            update[name] = REMOVED if name == "reply" else ""
    actions = values.get("pending_actions")
    if isinstance(actions, list) and forgotten.in_text(_json(actions)):
        update["pending_actions"] = _blanked_actions(actions, forgotten)
    return update


def _blanked_actions(actions: list[object], forgotten: Forgotten) -> list[object]:
    """Pending actions without the forgotten memory's words. A deletion waiting for its
    answer stays, blanked (:func:`blanked_forget`): the answers of a paused turn are matched
    to its questions in order, so dropping one would hand its answer to the next. Any other
    action that carries the memory goes."""
    kept: list[object] = []
    for action in actions:
        if not forgotten.in_text(_json(action)):
            kept.append(action)
        elif isinstance(action, dict) and action.get("type") == "forget_memory":
            kept.append(blanked_forget(action, forgotten))
    return kept


def blanked_forget(fields: dict[str, Any], forgotten: Forgotten) -> dict[str, Any]:
    """A deletion's fields (a pending action's, or its question's) without the forgotten
    memory's words: its preview and reason if it is that memory or they quote it, and the
    text of each version it deletes that is that memory or quotes it."""
    named = fields.get("memory_id") in forgotten.ids

    def text(value: object) -> object:
        return REMOVED if named or forgotten.in_text(str(value or "")) else value

    deletes = [
        {**d, "content": REMOVED}
        if d.get("memory_id") in forgotten.ids or forgotten.in_text(str(d.get("content", "")))
        else d
        for d in fields.get("deletes") or []
        if isinstance(d, dict)
    ]
    return {
        **fields,
        "preview": text(fields.get("preview")),
        "reason": text(fields.get("reason")),
        "deletes": deletes,
    }


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _message_text(message: AnyMessage) -> str:
    parts: list[object] = [message.content, message.additional_kwargs]
    if isinstance(message, AIMessage):
        parts += [message.tool_calls, message.invalid_tool_calls]
    return json.dumps(parts, ensure_ascii=False, default=str)


def _turns(messages: Sequence[AnyMessage]) -> list[list[AnyMessage]]:
    """The transcript cut at each user message (messages before the first form a turn too)."""
    turns: list[list[AnyMessage]] = []
    for message in messages:
        if isinstance(message, HumanMessage) or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def _blanked(message: AnyMessage) -> AnyMessage:
    """The message with its text gone; ids and tool-call structure stay."""
    if isinstance(message, AIMessage):
        calls = [{**call, "args": {}} for call in message.tool_calls]
        return message.model_copy(
            update={
                "content": REMOVED,
                "additional_kwargs": {},
                "tool_calls": calls,
                "invalid_tool_calls": [],
                "response_metadata": {},
            }
        )
    if isinstance(message, ToolMessage):
        return message.model_copy(update={"content": REMOVED, "additional_kwargs": {}})
    return message.model_copy(update={"content": REMOVED, "additional_kwargs": {}})


def blanked_turns(messages: Sequence[AnyMessage], forgotten: Forgotten) -> list[AnyMessage]:
    """Blanked copies (same ids) of every message in a turn that involved ``forgotten``;
    empty when no turn did."""
    blanked: list[AnyMessage] = []
    for turn in _turns(messages):
        if any(forgotten.named_in(message) for message in turn):
            blanked += [_blanked(m) for m in turn if m.content != REMOVED or _has_args(m)]
    return blanked


def _has_args(message: AnyMessage) -> bool:
    return isinstance(message, AIMessage) and any(call["args"] for call in message.tool_calls)
