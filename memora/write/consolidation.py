"""Consolidation: expire, merge near-duplicates and decay unused memories. Never deletes.

Merged and expired memories keep their rows (superseded or archived), so
their history and audit trail survive; text leaves the store only when a
person forgets it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from memora.audit import AuditLog
from memora.embeddings import MemoraEmbeddings
from memora.models import MemoryCandidate, MemoryStatus, ReconcileAction
from memora.storage.store import LongTermMemoryStore
from memora.write.reconcile import Reconciler, TrainedReconciler
from memora.write.write_path import find_neighbours, in_reconciler_scale


@dataclass
class ConsolidationReport:
    """What one consolidation run changed."""

    merged: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    decayed: list[str] = field(default_factory=list)


@dataclass
class Consolidator:
    """Tidies one user's active memories at a given time."""

    store: LongTermMemoryStore
    audit: AuditLog
    reconciler: Reconciler
    decay_after: timedelta
    """How long a memory may go unused before its importance drops by one (and between drops)."""
    embeddings: MemoraEmbeddings | None = None
    """The store's model: neighbours it finds are judged on WordLlama's scale when it is another."""

    def consolidate(self, user_id: str, now: datetime) -> ConsolidationReport:
        """Archive expired memories, supersede duplicates by the newest copy, decay the unused."""
        report = ConsolidationReport()
        for unit in self.store.list(user_id, MemoryStatus.ACTIVE):
            if unit.expires_at is not None and unit.expires_at <= now:
                self.store.update(user_id, unit.id, status=MemoryStatus.ARCHIVED)
                report.expired.append(unit.id)
        report.merged = self._merge_duplicates(user_id, now)
        for unit in self.store.list(user_id, MemoryStatus.ACTIVE):
            last_used = unit.last_accessed_at or unit.created_at
            last_decay = unit.metadata.get("decayed_at")
            recently_decayed = (
                last_decay and now - datetime.fromisoformat(last_decay) < self.decay_after
            )
            if unit.importance > 1 and now - last_used >= self.decay_after and not recently_decayed:
                self.store.update(
                    user_id,
                    unit.id,
                    importance=unit.importance - 1,
                    metadata={**unit.metadata, "decayed_at": now.isoformat()},
                )
                report.decayed.append(unit.id)
        if report.merged or report.expired or report.decayed:
            self.audit.record(
                user_id,
                "consolidate",
                "changed",
                memory_ids=[*report.merged, *report.expired, *report.decayed],
            )
        return report

    def _merge_duplicates(self, user_id: str, now: datetime) -> list[str]:
        """Supersede older near-duplicates by the newest copy; returns the superseded ids."""
        merged: list[str] = []
        # Only skips are acted on here, and the trained reconciler's skips are the rules' own:
        # asking the rules spares a sentence embedding of every memory read.
        skips = (
            self.reconciler.rules
            if isinstance(self.reconciler, TrainedReconciler)
            else self.reconciler
        )
        actives = sorted(
            self.store.list(user_id, MemoryStatus.ACTIVE), key=lambda u: u.created_at, reverse=True
        )
        for unit in actives:
            if unit.id in merged:
                continue
            index = self.store.index_for(user_id)
            stored_vector = index.vectors[index.row_of[unit.id]]  # no need to embed it again
            candidate = MemoryCandidate(
                content=unit.content, memory_type=unit.memory_type, thread_id=unit.thread_id
            )
            others = [
                n
                for n in find_neighbours(self.store, user_id, candidate, stored_vector, now)
                if n.memory.id != unit.id and n.memory.id not in merged
            ]
            if self.embeddings is not None:
                others = in_reconciler_scale(self.embeddings, unit.content, others)
            decision = skips.decide(candidate, others)
            if decision.action is ReconcileAction.SKIP:
                for target in decision.target_ids:
                    self.store.update(
                        user_id, target, status=MemoryStatus.SUPERSEDED, superseded_by=unit.id
                    )
                    merged.append(target)
        return merged
