"""What the library's lifecycle operations report: an erasure, a memory's history."""

from __future__ import annotations

from dataclasses import dataclass

from memora.audit import AuditEntry
from memora.models import MemoryUnit


@dataclass
class ErasureReport:
    """What erasing a user removed."""

    memories: int
    """Memories deleted, every version of every chain."""
    vectors: int
    """Vectors Chroma held for the user."""
    profile_fields: int
    audit_entries: int
    forget_requests: int = 0
    """Pending deletion requests dropped."""
    threads: int = 0
    """Conversation threads deleted (set by the caller that owns the checkpointer)."""


@dataclass
class History:
    """A memory's supersession chain and the audit entries that name it."""

    chain: list[MemoryUnit]
    audit: list[AuditEntry]
