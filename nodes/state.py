"""The graph's state and runtime context."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages


@dataclass(kw_only=True)
class Context:
    """Run-scoped settings a client may pass; the user id scopes every memory."""

    user_id: str = ""
    """Whose memories this run reads and writes ("" means: take it from the config)."""


@dataclass(kw_only=True)
class State:
    """One thread's conversation and the current turn's bookkeeping."""

    messages: Annotated[list[AnyMessage], add_messages] = field(default_factory=list)
    """The transcript: user messages, replies, and each turn's tool traffic."""
    owner_user_id: str = ""
    """The user of the thread's first run; other users are refused."""
    summary: str = ""
    """Short summary of earlier turns that no longer fit the context budget."""
    summarised_turns: int = 0
    """How many of the earliest turns the summary covers."""
    context_message_ids: list[str] = field(default_factory=list)
    """Earlier-turn messages (user messages and replies only) the model sees this turn."""
    tool_steps: int = 0
    """Tool executions in this turn, ok:false ones included."""
    response_tokens: int = 0
    """Chat model tokens used in this turn."""
    tool_tokens: int = 0
    """Embedding tokens used by tools in this turn."""
    used_memory_ids: list[str] = field(default_factory=list)
    """Memories this turn's searches returned; touched only on a final answer."""
    pending_actions: list[dict[str, Any]] = field(default_factory=list)
    """Remember and forget actions awaiting a final answer (never shown to the model)."""
    approved_forget_ids: list[str] = field(default_factory=list)
    """Memory ids whose deletion the user approved in this turn."""
    deleted_memory_ids: list[str] = field(default_factory=list)
    """Memory ids actually deleted in this turn (whole chains)."""
    commit_outcomes: list[dict[str, Any]] = field(default_factory=list)
    """What the write path did with each remember action."""
    stop_reason: str = ""
    """final_answer, max_steps, api_error, empty_response or tool_error."""
    reply: str = ""
    """The text shown to the user for this turn."""
    refused_user_id: str = ""
    """A user who tried to run this thread without owning it; the run fails in finish."""
    error: str = ""
    """Detail of an api_error or tool_error, for logs and --verbose."""
