"""The trained reconciler: the relation model can stop a replacement, never start one.

Supersession is the exception. The offline rules propose what a candidate repeats
or replaces; a proposed replacement of a stored memory is dropped (both are kept)
where the trained relation model is confident the two are distinct facts, such as
two occasions of the same kind of event, so distinct facts are not lost.
"""

from __future__ import annotations

from memora.judgement.decisions import Judgement
from memora.models import MemoryCandidate, Neighbour, ReconcileAction, ReconcileDecision
from memora.write.reconcile.offline import OfflineReconciler


class TrainedReconciler:
    """Reconciles with the offline rules; the relation model vetoes replacing distinct facts."""

    def __init__(self, judge: Judgement, rules: OfflineReconciler | None = None) -> None:
        self.judge = judge
        self.rules = rules or OfflineReconciler()

    def decide(self, candidate: MemoryCandidate, neighbours: list[Neighbour]) -> ReconcileDecision:
        """Return the action for ``candidate`` given its nearest active memories."""
        proposed = self.rules.decide(candidate, neighbours)
        if proposed.action is not ReconcileAction.UPDATE or not proposed.target_ids:
            return proposed
        by_id = {n.memory.id: n.memory.content for n in neighbours}
        targets = [t for t in proposed.target_ids if t in by_id]
        relations = self.judge.relations([by_id[t] for t in targets], candidate.content)
        confirmed = [
            t
            for t, relation in zip(targets, relations, strict=True)
            if not relation or relation["distinct"] < self.judge.DISTINCT
        ]
        if confirmed:
            return proposed.model_copy(update={"target_ids": confirmed})
        return ReconcileDecision(
            action=ReconcileAction.KEEP_BOTH,
            rationale="the relation model reads it as a distinct fact, not a new value",
        )
