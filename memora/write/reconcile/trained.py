"""The trained reconciler: the relation decision reads each close neighbour, the rules stand by.

Supersession is the exception: a candidate replaces a memory only when the relation decision
is confident that it states the same attribute of the same subject anew (or says the same
thing again), and then only the one memory it reads so most clearly. Whatever the trained
decision is not sure of goes to the rules (:class:`OfflineReconciler`), whose replacements it
can still veto when it reads the pair as clearly distinct.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memora.judgement import Judgement
from memora.models import MemoryCandidate, Neighbour, ReconcileAction, ReconcileDecision
from memora.write.reconcile.offline import OfflineReconciler, Reconciler
from memora.write.reconcile.pair_structure import pair_structure
from memora.write.reconcile.structure import Relation, relate, same_text


@dataclass(frozen=True)
class RelationThresholds:
    """When the relation decision acts (cosines are WordLlama's, as the rules read them)."""

    gate: float = 0.35
    """Least cosine for a neighbour to be read at all. Low, because an update is often worded
    far from what it replaces ("switched to a Pixel" / "the phone is an iPhone"), and the
    decision was trained on unrelated pairs too."""
    replace: float = 0.7
    """Least probability of update + restatement for the decision to replace a memory."""
    veto: float = 0.97
    """Probability of distinct above which a replacement the rules chose is undone."""


class TrainedReconciler:
    """The relation decision first, the rules for what it leaves open."""

    def __init__(
        self,
        judge: Judgement,
        rules: Reconciler | None = None,
        thresholds: RelationThresholds | None = None,
    ) -> None:
        self.judge = judge
        self.rules = rules or OfflineReconciler()
        self.thresholds = thresholds or RelationThresholds()

    def decide(self, candidate: MemoryCandidate, neighbours: list[Neighbour]) -> ReconcileDecision:
        """Return SKIP, UPDATE (of one memory), KEEP_BOTH or CREATE for ``candidate``.

        The same words again (up to filler, spelling and order, as the rules read them) are
        skipped. A restatement in other words replaces the memory it
        restates, like a new value does: of several statements of one fact the newest is the
        one kept, and the older wording stays in its history.
        """
        for neighbour in neighbours:
            if same_text(neighbour.memory.content, candidate.content):
                return ReconcileDecision(
                    action=ReconcileAction.SKIP,
                    target_ids=[neighbour.memory.id],
                    rationale="repeats an existing memory",
                )
        near = [n for n in neighbours if n.similarity >= self.thresholds.gate]
        ruled = self.rules.decide(candidate, neighbours)
        if not near or ruled.action is ReconcileAction.SKIP:
            return ruled  # the rules skip the same words again (filler, spelling, order)
        structure = np.stack([pair_structure(n.memory.content, candidate.content) for n in near])
        probabilities = self.judge.relation(
            [n.memory.content for n in near], candidate.content, structure
        )
        if probabilities is None:
            return ruled
        distinct, update, restatement = probabilities.T
        best = int(np.argmax(update + restatement))
        chosen = near[best]
        if update[best] + restatement[best] >= self.thresholds.replace and (
            relate(chosen.memory.content, candidate.content) is not Relation.DISTINCT
        ):
            says_again = restatement[best] > update[best]
            return ReconcileDecision(
                action=ReconcileAction.UPDATE,
                target_ids=[chosen.memory.id],
                rationale=(
                    "says a memory again in other words: the newest wording is kept"
                    if says_again
                    else "states a new value for the same fact"
                )
                + " (trained relation)",
            )
        if ruled.action is not ReconcileAction.UPDATE:
            return ruled
        read = {n.memory.id: float(p) for n, p in zip(near, distinct, strict=True)}
        kept = [i for i in ruled.target_ids if read.get(i, 0.0) < self.thresholds.veto]
        if kept:
            return ruled.model_copy(update={"target_ids": kept})
        return ReconcileDecision(
            action=ReconcileAction.KEEP_BOTH,
            rationale="a separate fact (trained relation), though worded alike",
        )
