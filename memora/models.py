"""Memory units, candidates and the decisions made about them."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field


def utcnow() -> datetime:
    """Return the current time, timezone-aware in UTC."""
    return datetime.now(UTC)


class MemoryType(StrEnum):
    """What the memory describes: a lasting fact or a dated happening."""

    SEMANTIC = "semantic"
    EPISODIC = "episodic"


class MemoryStatus(StrEnum):
    """Lifecycle state; only ACTIVE memories are recalled."""

    ACTIVE = "active"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"


class MemoryScope(StrEnum):
    """Where a memory applies: everywhere for the user, or one thread only."""

    PERSISTENT = "persistent"
    THREAD = "thread"


class RejectionReason(StrEnum):
    """Why the policy gate refused a candidate."""

    SENSITIVE_DATA = "sensitive_data"
    INSTRUCTION_LIKE = "instruction_like"
    USER_REFUSED = "user_refused"
    ASSISTANT_GENERATED = "assistant_generated"
    EPHEMERAL = "ephemeral"
    TOO_VAGUE = "too_vague"


class ReconcileAction(StrEnum):
    """What the write path does with an accepted candidate."""

    CREATE = "create"
    UPDATE = "update"
    KEEP_BOTH = "keep_both"
    SKIP = "skip"
    REVIEW = "review"


class MemorySource(BaseModel):
    """Where a memory came from."""

    thread_id: str | None = None
    turn: int | None = None
    actor: str = "user"


class MemoryCandidate(BaseModel):
    """A proposed memory, before the policy gate and the write path."""

    content: str
    memory_type: MemoryType = MemoryType.SEMANTIC
    user_message: str | None = None
    """The user's message this candidate came from; supplied by the application."""
    said_at: datetime | None = None
    """When the user said it; relative dates are resolved against this."""
    said_as: str | None = None
    """The content as the policy gate read it, before the write path resolved relative dates
    and trimmed spaces; set by the write path."""
    reason: str = "useful_future_context"
    kind: str | None = None
    scope: MemoryScope = MemoryScope.PERSISTENT
    thread_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class PolicyRejection(BaseModel):
    """A refused candidate with its reason; never persisted with its text."""

    candidate: MemoryCandidate
    reason: RejectionReason
    rule: str
    """Which rule fired, e.g. ``detect-secrets:KeywordDetector``; never contains the text."""


class MemoryUnit(BaseModel):
    """One stored long-term memory."""

    model_config = ConfigDict(validate_assignment=True)

    id: str
    user_id: str
    content: str
    memory_type: MemoryType = MemoryType.SEMANTIC
    kind: str = "fact"
    scope: MemoryScope = MemoryScope.PERSISTENT
    thread_id: str | None = None
    importance: int = Field(default=3, ge=1, le=5)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    source: MemorySource = Field(default_factory=MemorySource)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    last_accessed_at: datetime | None = None
    access_count: int = 0
    expires_at: datetime | None = None
    status: MemoryStatus = MemoryStatus.ACTIVE
    superseded_by: str | None = None
    supersedes: str | None = None
    embedding_model: str = ""
    needs_review: bool = False
    """Flagged by the write path as an ambiguous conflict for a person to settle."""


class Neighbour(BaseModel):
    """An existing memory found near a candidate during reconciliation."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: MemoryUnit
    similarity: float
    """Dense cosine similarity between candidate and memory."""
    sentence_vector: np.ndarray | None = Field(default=None, repr=False)
    """The memory's sentence vector as the trained judgement read it when it was written."""


class ReconcileDecision(BaseModel):
    """The reconciler's verdict for one candidate."""

    action: ReconcileAction
    target_ids: list[str] = Field(default_factory=list)
    """Existing memories the action applies to (superseded, duplicated or in conflict)."""
    rationale: str = ""
