"""The trained reconciler: the relation decision judges the neighbours a new memory resembles.

Supersession is the exception. A memory is replaced only where the relation decision reads the
pair as one fact (an update or a restatement) where the rules (:class:`OfflineReconciler`)
propose the replacement, a changed number as an update, or, alone, the same fact said again in
other words, near-certainly. Otherwise both are kept. Reading a pair costs a fraction of a
millisecond (the stored memory is read with word vectors only), so the decision reads every
close neighbour.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memora.judgement import Judgement
from memora.judgement.decisions import RELATION_CONFIRM
from memora.models import MemoryCandidate, Neighbour, ReconcileAction, ReconcileDecision
from memora.write.reconcile.offline import OfflineReconciler, Reconciler
from memora.write.reconcile.pair_structure import pair_structure
from memora.write.reconcile.structure import quantity_may_have_changed, same_text


@dataclass(frozen=True)
class RelationThresholds:
    """When the relation decision replaces a memory (cosines are WordLlama's, as the rules
    read them). Each bar is a least probability of update + restatement: of one fact."""

    confirm: float = RELATION_CONFIRM
    """For a replacement the rules propose to stand. Of 0.03 (a veto only where the decision
    is 0.97 sure of two facts), 0.2 and 0.5, on event log dev 2: 0.946 / 15 / 19, 0.971 / 8 /
    24 and 0.982 / 5 / 27 (distinct kept / wrongly superseded / stale); 0.5 also left 3 plain
    swaps of the development event log stale (a phone, a savings total, a job title the
    decision reads at 0.22 to 0.47 one fact) and 0.06 more of Letta's updates beside the old
    value."""
    alone: float = 0.99
    """Least probability of restatement (above that of update) for the decision to replace,
    alone, a close neighbour the rules keep: the same fact said again in other words. An update
    read alone is not enough: "I keep a pet lizard named A" → "... named B" reads as one at
    0.85 to 0.94, where a list grows. Of 0.98, 0.99 and 0.995 (restatement or update then, on
    event log dev 2 and Letta's dev file): 0.98 cost Letta 0.02 collateral per row more, 0.995
    left 3 more stale facts."""
    alone_gate: float = 0.6
    """Least cosine of such a neighbour."""
    quantity: float = 0.97
    """For the decision to replace a neighbour whose number may have changed
    (:func:`~memora.write.reconcile.structure.quantity_may_have_changed`), update the likelier.
    Chosen on the development files (event log dev 2, Letta's dev file) of 0.9, 0.97 and 0.99:
    0.9 cost Letta's file 0.005 collateral per row more, 0.99 left one more stale fact."""
    quantity_gate: float = 0.5
    """Least cosine for such a replacement."""


class TrainedReconciler:
    """The rules propose and the relation decision disposes; it proposes what it is sure of."""

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
        """Return SKIP, UPDATE, KEEP_BOTH or CREATE for ``candidate``.

        The same words again (up to filler, spelling and order, as the rules read them) are
        skipped. A new value, or the same fact in other words, replaces the memory it restates:
        of several statements of one fact the newest is kept, the older in its history.
        """
        for neighbour in neighbours:
            if same_text(neighbour.memory.content, candidate.content):
                return ReconcileDecision(
                    action=ReconcileAction.SKIP,
                    target_ids=[neighbour.memory.id],
                    rationale="repeats an existing memory",
                )
        ruled = self.rules.decide(candidate, neighbours)
        if ruled.action is ReconcileAction.SKIP:
            return ruled  # the rules skip the same words again (filler, spelling, order)
        replaced = set(ruled.target_ids) if ruled.action is ReconcileAction.UPDATE else set()
        ruled_pairs = [n for n in neighbours if n.memory.id in replaced]
        open_pairs = [
            n
            for n in neighbours
            if n.memory.id not in replaced
            and n.similarity >= self.thresholds.quantity_gate
            and quantity_may_have_changed(n.memory.content, candidate.content)
        ]
        reading = {n.memory.id for n in open_pairs + ruled_pairs}
        close = [
            n
            for n in neighbours
            if n.memory.id not in reading and n.similarity >= self.thresholds.alone_gate
        ]
        pairs = open_pairs + ruled_pairs + close
        read = self._read(candidate, pairs)
        if read is None:
            return ruled
        # Per neighbour: (distinct, update, restatement); one fact is update + restatement.
        relation = {n.memory.id: row.tolist() for n, row in zip(pairs, read, strict=True)}
        changed = [
            n
            for n in open_pairs
            if relation[n.memory.id][1] > relation[n.memory.id][2]
            and 1.0 - relation[n.memory.id][0] >= self.thresholds.quantity
        ]
        if changed:
            return self._update(max(changed, key=lambda n: relation[n.memory.id][1]))
        if ruled.action is ReconcileAction.UPDATE:
            confirmed = [
                i
                for i in ruled.target_ids
                if i in relation and 1.0 - relation[i][0] >= self.thresholds.confirm
            ]
            if confirmed:
                return ruled.model_copy(update={"target_ids": confirmed})
        restated = [
            n
            for n in open_pairs + close
            if n.similarity >= self.thresholds.alone_gate
            and relation[n.memory.id][2] > relation[n.memory.id][1]
            and relation[n.memory.id][2] >= self.thresholds.alone
        ]
        if restated:
            return self._update(max(restated, key=lambda n: relation[n.memory.id][2]))
        if ruled.action is ReconcileAction.UPDATE:
            return ReconcileDecision(
                action=ReconcileAction.KEEP_BOTH,
                rationale="a separate fact (trained relation), though worded alike",
            )
        return ruled

    @staticmethod
    def _update(neighbour: Neighbour) -> ReconcileDecision:
        return ReconcileDecision(
            action=ReconcileAction.UPDATE,
            target_ids=[neighbour.memory.id],
            rationale="states the same fact anew (trained relation)",
        )

    def _read(self, candidate: MemoryCandidate, pairs: list[Neighbour]) -> np.ndarray | None:
        """The decision's (len(pairs), 3) probabilities, or None for no pairs or no weights."""
        if not pairs:
            return None
        structure = np.stack([pair_structure(n.memory.content, candidate.content) for n in pairs])
        olds = [n.memory.content for n in pairs]
        return self.judge.relation(olds, candidate.content, structure, candidate.said_as)
