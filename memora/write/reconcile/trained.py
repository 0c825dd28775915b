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
from memora.write.reconcile.structure import (
    Relation,
    has_contrast,
    has_named_attribute,
    relate,
    same_text,
)


@dataclass(frozen=True)
class RelationThresholds:
    """When the relation decision acts (cosines are WordLlama's, as the rules read them)."""

    gate: float = 0.35
    """Least cosine for a neighbour to be read at all. Low, because an update is often worded
    far from what it replaces ("switched to a Pixel" / "the phone is an iPhone"), and the
    decision was trained on unrelated pairs too."""
    replace: float = 0.7
    """Least probability of update + restatement for the decision to replace a memory."""
    restatement_gate: float = 0.8
    """Least cosine for the decision to read a pair as the same fact said again."""
    gate_backed: float = 0.5
    """Least cosine for the same slot (as structure reads it) to back a replacement: the
    rules' own gate for it."""
    contrast_backed: float = 0.65
    """Least cosine for a change word alone to back a replacement: the rules' contrast gate."""
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
        if update[best] + restatement[best] >= self.thresholds.replace and self._confirmed(
            chosen, candidate, ruled, says_again=restatement[best] > update[best]
        ):
            says_again = bool(restatement[best] > update[best])
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

    def _confirmed(
        self,
        neighbour: Neighbour,
        candidate: MemoryCandidate,
        ruled: ReconcileDecision,
        *,
        says_again: bool,
    ) -> bool:
        """Whether what the rules read in the pair backs the decision's replacement.

        The decision alone is too sure of itself on wordings its corpus lacks ("my orchestra
        uniform is a black shirt" / "I bought a new bow before the concert" read as an
        update), so a memory is replaced only where the rules replace it too, read the same
        attribute of the same subject, or the candidate says that something changed; a
        restatement needs the two texts to be close as well.
        """
        old, new = neighbour.memory.content, candidate.content
        relation = relate(old, new)
        if relation is Relation.DISTINCT:
            return False
        if says_again:
            return neighbour.similarity >= self.thresholds.restatement_gate
        close = neighbour.similarity >= self.thresholds.gate_backed
        return (
            (ruled.action is ReconcileAction.UPDATE and neighbour.memory.id in ruled.target_ids)
            or (relation is Relation.SAME_ATTRIBUTE and close)
            or (has_named_attribute(old, new) and close)
            or (has_contrast(old, new) and neighbour.similarity >= self.thresholds.contrast_backed)
        )
