"""The turn contract: what a run may send in, what it gets back, and what a thread keeps.

``InputState`` is all a client can set (messages). ``OutputState`` is the turn's
result, the same shape for every stop reason. ``State`` adds the thread's own
bookkeeping (owner, summary, which history fits) and the turn's internals.
``Context`` holds the run's settings: who the user is and what a run may override.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum
from functools import cached_property
from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from agent.pending_actions import (
    ForgetAction,
    PendingAction,
    RememberAction,
    as_pending_actions,
    to_checkpoint,
)
from memora.api import Memora
from memora.config import MAX_AGENT_STEPS_LIMIT

__all__ = [
    "Context",
    "ForgetAction",
    "InputState",
    "OutputState",
    "PendingAction",
    "RememberAction",
    "State",
    "StopReason",
    "Turn",
    "fresh_turn",
    "stopped",
    "to_checkpoint",
]


class StopReason(StrEnum):
    """Why a turn ended; every run ends with exactly one."""

    FINAL_ANSWER = "final_answer"
    MAX_STEPS = "max_steps"
    API_ERROR = "api_error"
    EMPTY_RESPONSE = "empty_response"
    TOOL_ERROR = "tool_error"


_KINDS: dict[object, str] = {str: "a string", int: "a whole number", (int, float): "a number"}


def _expect(name: str, value: object, kind: type | tuple[type, ...]) -> None:
    """Refuse a run setting of the wrong JSON type (None means: use the default)."""
    if value is None and kind is not str:
        return
    if isinstance(value, bool) or not isinstance(value, kind):
        raise ValueError(f"{name} must be {_KINDS[kind]}, got {type(value).__name__}")


@dataclass(kw_only=True)
class Context:
    """Run-scoped settings: whose memories, and what one run may override."""

    user_id: str = ""
    """Whose memories this run reads and writes ("" means: take it from the config)."""
    chat_model: str = ""
    """The chat model: "" the configured one, "offline" the rules-based model, else a model name."""
    max_agent_steps: int | None = None
    """Tool executions allowed in this turn (None: MEMORA_MAX_AGENT_STEPS)."""
    retrieval_limit: int | None = None
    """Most memories one search returns (None: the policy's; a run can only lower it)."""
    retrieval_min_score: float | None = None
    """Lowest relevance a memory needs (None: the policy's; a run can only raise it)."""
    memora: Memora | None = None
    """The memory library for a local run (CLI, demo, evals); None: the process-wide one.
    A server's client cannot set it: JSON never decodes to a library."""

    def __post_init__(self) -> None:
        # A server's client sends these as JSON: a wrong type gets the same one-line
        # ValueError as a wrong value, not a TypeError from a comparison.
        for name in ("user_id", "chat_model"):
            _expect(name, getattr(self, name), str)
        _expect("max_agent_steps", self.max_agent_steps, int)
        _expect("retrieval_limit", self.retrieval_limit, int)
        _expect("retrieval_min_score", self.retrieval_min_score, (int, float))
        steps = self.max_agent_steps
        if steps is not None and not 1 <= steps <= MAX_AGENT_STEPS_LIMIT:
            raise ValueError(f"max_agent_steps must be 1..{MAX_AGENT_STEPS_LIMIT}, got {steps}")
        if self.retrieval_limit is not None and self.retrieval_limit < 1:
            raise ValueError(f"retrieval_limit must be at least 1, got {self.retrieval_limit}")
        score = self.retrieval_min_score
        if score is not None and not 0.0 <= score <= 1.0:
            raise ValueError(f"retrieval_min_score must be 0..1, got {score}")


@dataclass(kw_only=True)
class InputState:
    """What a client sends: messages, and nothing else."""

    messages: Annotated[list[AnyMessage], add_messages] = field(default_factory=list)
    """New messages for the thread (the user's turn)."""


@dataclass(kw_only=True)
class TurnResult:
    """What every turn returns, whatever its stop reason."""

    reply: str = ""
    """The text shown to the user for this turn."""
    stop_reason: StopReason | None = None
    """Why the turn ended; None only while it runs."""
    tool_steps: int = 0
    """Tool executions in this turn, ok:false ones included."""
    response_tokens: int = 0
    """Chat model tokens used in this turn."""
    tool_tokens: int = 0
    """Embedding tokens used by tools and the write path in this turn."""
    used_memory_ids: list[str] = field(default_factory=list)
    """Memories this turn's searches returned; touched only on a final answer."""
    pending_actions: list[dict[str, Any]] = field(default_factory=list)
    """Remember and forget actions awaiting a final answer (never shown to the model), as
    the checkpoint keeps them: plain JSON, read as models through :attr:`actions`."""

    def __post_init__(self) -> None:
        if self.stop_reason is not None:
            self.stop_reason = StopReason(self.stop_reason)

    @cached_property
    def actions(self) -> list[RememberAction | ForgetAction]:
        """The pending actions as models, parsed once per state and only when a node asks
        (most nodes never read them)."""
        return as_pending_actions(self.pending_actions)

    def remember_actions(self) -> list[RememberAction]:
        """The pending remember actions, in the order the tools accepted them."""
        return [a for a in self.actions if isinstance(a, RememberAction)]

    def forget_actions(self) -> list[ForgetAction]:
        """The pending forget actions, in the order the model asked, one per memory (a second
        request for the same memory would be a second question about one deletion)."""
        first: dict[str, ForgetAction] = {}
        for action in self.actions:
            if isinstance(action, ForgetAction):
                first.setdefault(action.memory_id, action)
        return list(first.values())


@dataclass(kw_only=True)
class OutputState(TurnResult):
    """The graph's output: the turn result and the thread's messages."""

    messages: Annotated[list[AnyMessage], add_messages] = field(default_factory=list)
    """The transcript: user messages, replies, and each turn's tool traffic."""


@dataclass(kw_only=True)
class Turn(TurnResult):
    """Everything that belongs to one turn: reset together when a turn starts."""

    approved_forget_ids: list[str] = field(default_factory=list)
    """Memory ids whose deletion the user approved in this turn."""
    answered_forget_ids: list[str] = field(default_factory=list)
    """Memory ids whose deletion question was answered (or needed none) in this turn."""
    gone_forget_ids: list[str] = field(default_factory=list)
    """Memory ids asked about that were already deleted another way when the answer came."""
    forget_retry: str = ""
    """Why the last answer to a deletion question was not one; asked again with it."""
    deleted_memory_ids: list[str] = field(default_factory=list)
    """Memory ids actually deleted in this turn (with the older versions they replaced)."""
    scrubbed_threads: int = 0
    """The user's other threads whose turns about a deleted memory were blanked."""
    commit_outcomes: list[dict[str, Any]] = field(default_factory=list)
    """What the write path did with each remember action."""
    refused_user_id: str = ""
    """A user who tried to run this thread without owning it; the run fails in finish."""
    cut_note: str = ""
    """Told to the user when their message was cut to fit the context budget."""
    error: str = ""
    """Detail of an api_error or tool_error, for logs and --verbose."""
    data_frame_id: str = ""
    """The random code of this turn's quoted-data frames (agent.spotlight), set at its start."""
    background: str = ""
    """The model's system message for this turn (instructions, profile, summary), built once
    by assemble_context; emptied with the turn's redaction, so no saved checkpoint keeps it."""


def fresh_turn() -> dict[str, Any]:
    """A state update that resets every per-turn field to its start value."""
    blank = Turn()
    return {f.name: getattr(blank, f.name) for f in fields(Turn)}


def stopped(reason: StopReason) -> dict[str, str]:
    """The state update that ends the turn for ``reason`` (kept as its plain string value)."""
    return {"stop_reason": reason.value}


@dataclass(kw_only=True)
class State(Turn):
    """One thread: its transcript and bookkeeping, and the current turn."""

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
