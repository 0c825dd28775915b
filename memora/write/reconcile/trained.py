"""The trained reconciler: a relation model decides update, restatement or distinct, per neighbour.

Supersession is the exception: a candidate replaces a stored memory only when the
model is confident that it gives a new value for the same attribute of the same
subject, and then it replaces that one memory, never a chain of look-alikes.
"""

from __future__ import annotations

from memora.judgement.decisions import Judgement
from memora.models import MemoryCandidate, Neighbour, ReconcileAction, ReconcileDecision
from memora.write.reconcile.structure import same_text

COMPARED_SIMILARITY = 0.3
"""Neighbours below this cosine are not compared at all (unrelated texts)."""
RELATED_SIMILARITY = 0.65
"""A candidate this close to a kept neighbour is recorded as related (keep both)."""


class TrainedReconciler:
    """Reconciles with the trained relation decision (see the module doc)."""

    def __init__(self, judge: Judgement) -> None:
        self.judge = judge

    def decide(self, candidate: MemoryCandidate, neighbours: list[Neighbour]) -> ReconcileDecision:
        """Return the action for ``candidate`` given its nearest active memories."""
        compared = [n for n in neighbours if n.similarity >= COMPARED_SIMILARITY]
        for neighbour in compared:
            if same_text(neighbour.memory.content, candidate.content):
                return ReconcileDecision(
                    action=ReconcileAction.SKIP,
                    target_ids=[neighbour.memory.id],
                    rationale="repeats a stored memory",
                )
        relations = self.judge.relations([n.memory.content for n in compared], candidate.content)
        scored = list(zip(compared, relations, strict=True))
        restated = [
            (n, r["restatement"])
            for n, r in scored
            if r and r["restatement"] >= self.judge.RESTATEMENT
        ]
        if restated:
            best, _ = max(restated, key=lambda pair: pair[1])
            return ReconcileDecision(
                action=ReconcileAction.SKIP,
                target_ids=[best.memory.id],
                rationale="restates a stored memory",
            )
        updates = [(n, r["update"]) for n, r in scored if r and r["update"] >= self.judge.UPDATE]
        if updates:
            best, _ = max(updates, key=lambda pair: pair[1])
            return ReconcileDecision(
                action=ReconcileAction.UPDATE,
                target_ids=[best.memory.id],
                rationale="gives a new value for the same attribute",
            )
        related = any(n.similarity >= RELATED_SIMILARITY for n in neighbours)
        return ReconcileDecision(
            action=ReconcileAction.KEEP_BOTH if related else ReconcileAction.CREATE,
            rationale="distinct from every stored memory",
        )
