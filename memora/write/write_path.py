"""The write path: how one candidate memory becomes a stored memory, or does not.

policy (again) -> importance -> embedding -> candidate search in the user's
scope -> reconcile -> store -> audit.

The policy runs again although the agent's remember tool already checked the
candidate: a person's ``memora add`` and the graph's committed pending
actions both arrive here. Only bulk ingest (imports, evaluations) bypasses
policy and reconciliation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from memora.audit import AuditLog
from memora.embeddings import (
    MemoraEmbeddings,
    WordLlamaEmbeddings,
    estimate_tokens,
    shared_wordllama,
)
from memora.judgement import Judgement
from memora.models import (
    MemoryCandidate,
    MemorySource,
    MemoryUnit,
    Neighbour,
    ReconcileAction,
    ReconcileDecision,
)
from memora.recall.retrieval import rank
from memora.storage.store import LongTermMemoryStore, new_memory_id
from memora.text.dates import resolve_relative_dates
from memora.write.importance import ImportanceScorer
from memora.write.policy import MemoryClassifier, apply_memory_policy
from memora.write.reconcile import Reconciler

RECONCILE_NEIGHBOURS = 10


@dataclass
class WriteOutcome:
    """What the write path did with one candidate."""

    accepted: bool
    reason: str | None = None
    """The policy's rejection reason when not accepted."""
    action: ReconcileAction | None = None
    memory_id: str | None = None
    """The stored memory, or for ``skip`` the existing duplicate."""
    affected_ids: list[str] = field(default_factory=list)
    """Existing memories the action touched (superseded, duplicated, in conflict)."""
    tokens: int = 0
    """Embedding tokens spent."""


def find_neighbours(
    store: LongTermMemoryStore,
    user_id: str,
    candidate: MemoryCandidate,
    vector: np.ndarray,
    now: datetime,
) -> list[Neighbour]:
    """The user's memories nearest a candidate, in its scope, for the reconciler to judge."""
    found = rank(
        store.index_for(user_id),
        candidate.content,
        vector,
        now=now,
        limit=RECONCILE_NEIGHBOURS,
        min_relevance=0.0,
        thread_id=candidate.thread_id,
        unrelated_cosine=store.spec.unrelated_cosine,
        dense_weight=store.spec.fusion_dense_weight,
        newer_restatements_first=False,
    )
    return [Neighbour(memory=hit.memory, similarity=hit.semantic_similarity) for hit in found]


def in_reconciler_scale(
    embeddings: MemoraEmbeddings, content: str, neighbours: list[Neighbour]
) -> list[Neighbour]:
    """Neighbours whose similarity is WordLlama's cosine, whatever model ranked them.

    The offline reconciler's thresholds were set on WordLlama cosines; e5's cosines sit
    higher (unrelated sentences score around 0.7), so they would read as near-duplicates.
    WordLlama embeds a dozen short texts in well under a millisecond.
    """
    if isinstance(embeddings, WordLlamaEmbeddings) or not neighbours:
        return neighbours
    vectors = shared_wordllama().embed_array([content, *(n.memory.content for n in neighbours)])
    cosines = vectors[1:] @ vectors[0]
    return [
        n.model_copy(update={"similarity": float(cosine)})
        for n, cosine in zip(neighbours, cosines, strict=True)
    ]


def with_sentence_vectors(
    store: LongTermMemoryStore, user_id: str, neighbours: list[Neighbour]
) -> list[Neighbour]:
    """Neighbours with the sentence vectors kept when they were written, where kept."""
    kept = store.sentence_vectors(user_id, [n.memory.id for n in neighbours])
    return [
        n.model_copy(update={"sentence_vector": kept[n.memory.id]}) if n.memory.id in kept else n
        for n in neighbours
    ]


@dataclass
class WritePath:
    """Runs candidates through the write path into one store."""

    store: LongTermMemoryStore
    audit: AuditLog
    embeddings: MemoraEmbeddings
    reconciler: Reconciler
    importance: ImportanceScorer
    classifier: MemoryClassifier | None
    clock: Callable[[], datetime]
    judge: Judgement | None = None
    """The trained decisions the gate reads, if enabled."""

    def write(
        self, user_id: str, candidates: Sequence[MemoryCandidate], source: MemorySource
    ) -> list[WriteOutcome]:
        """Run the write path for each candidate, in order."""
        return [self._write_one(user_id, candidate, source) for candidate in candidates]

    def _write_one(
        self, user_id: str, candidate: MemoryCandidate, source: MemorySource
    ) -> WriteOutcome:
        accepted, rejected = apply_memory_policy([candidate], self.classifier, self.judge)
        if not accepted:
            reason = rejected[0].reason.value
            self.audit.record(
                user_id,
                "write",
                "rejected",
                reason=reason,
                source=source.actor,
                thread_id=source.thread_id,
            )
            return WriteOutcome(accepted=False, reason=reason)
        said_at = candidate.said_at or self.clock()
        content, resolved = resolve_relative_dates(candidate.content.strip(), said_at)
        candidate = candidate.model_copy(
            update={
                "content": content,
                "said_at": said_at,
                "said_as": candidate.content,
            }
        )
        rating = self.importance.score(candidate)
        vector = self.embeddings.embed_array([content])[0]
        tokens = estimate_tokens([content])
        neighbours = in_reconciler_scale(
            self.embeddings,
            content,
            find_neighbours(self.store, user_id, candidate, vector, said_at),
        )
        sentence = self.judge.sentence_vector(candidate.said_as or content) if self.judge else None
        if sentence is not None:
            neighbours = with_sentence_vectors(self.store, user_id, neighbours)
        decision = self.reconciler.decide(candidate, neighbours)
        unit = MemoryUnit(
            id=new_memory_id(),
            user_id=user_id,
            content=content,
            memory_type=candidate.memory_type,
            kind=rating.kind,
            scope=candidate.scope,
            thread_id=candidate.thread_id,
            importance=rating.importance,
            source=source,
            metadata={
                **candidate.metadata,
                **({"resolved_dates": [r.value for r in resolved]} if resolved else {}),
            },
            created_at=said_at,
            updated_at=said_at,
            expires_at=candidate.metadata.get("expires_at"),
        )
        outcome = self._apply(user_id, unit, vector, sentence, decision)
        outcome.tokens = tokens
        self.audit.record(
            user_id,
            "write",
            "accepted",
            action=decision.action.value,
            memory_ids=[i for i in [outcome.memory_id, *outcome.affected_ids] if i],
            source=source.actor,
            thread_id=source.thread_id,
        )
        return outcome

    def _apply(
        self,
        user_id: str,
        unit: MemoryUnit,
        vector: np.ndarray,
        sentence: np.ndarray | None,
        decision: ReconcileDecision,
    ) -> WriteOutcome:
        action = decision.action
        if action is ReconcileAction.SKIP:
            duplicate = decision.target_ids[0] if decision.target_ids else None
            return WriteOutcome(
                True, action=action, memory_id=duplicate, affected_ids=list(decision.target_ids)
            )
        if action is ReconcileAction.UPDATE and decision.target_ids:
            superseded = self.store.supersede(user_id, decision.target_ids, unit, vector, sentence)
            return WriteOutcome(True, action=action, memory_id=unit.id, affected_ids=superseded)
        if action is ReconcileAction.REVIEW:
            unit.metadata["review_targets"] = list(decision.target_ids)
            unit.needs_review = True
            self.store.add([unit], np.asarray([vector]), [sentence])
            return WriteOutcome(
                True, action=action, memory_id=unit.id, affected_ids=list(decision.target_ids)
            )
        self.store.add([unit], np.asarray([vector]), [sentence])
        return WriteOutcome(
            True, action=action, memory_id=unit.id, affected_ids=list(decision.target_ids)
        )
