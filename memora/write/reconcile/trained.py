"""The trained reconciler: the relation decision judges the neighbours a new memory resembles.

Supersession is the exception. The rules (:class:`OfflineReconciler`) put replacements forward
and the relation decision vetoes those it reads as clearly distinct. On its own, the decision
replaces one memory only where a number may have changed and it reads an update. It does not
replace where the rules keep both for any other reason: read freely, it takes a change worded
about someone ("no longer", "instead") as an update of every other fact about them. Each pair
it reads costs an embedding of a stored memory the bundled encoder may not have seen in this
process, so it reads only the rules' replacements and the close neighbours whose number may
have changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memora.judgement import Judgement
from memora.judgement.decisions import RELATION_VETO
from memora.models import MemoryCandidate, Neighbour, ReconcileAction, ReconcileDecision
from memora.write.reconcile.offline import OfflineReconciler, Reconciler
from memora.write.reconcile.pair_structure import pair_structure
from memora.write.reconcile.structure import quantity_may_have_changed, same_text


@dataclass(frozen=True)
class RelationThresholds:
    """When the relation decision acts (cosines are WordLlama's, as the rules read them)."""

    quantity: float = 0.97
    """Least probability of update + restatement (update the likelier) for the decision to
    replace a memory on its own, where only a number may have changed
    (:func:`~memora.write.reconcile.structure.quantity_may_have_changed`). Chosen on the
    development files (event log dev 2, Letta's dev file) of 0.9, 0.97 and 0.99: 0.9 cost
    Letta's file 0.005 collateral per row more, 0.99 left one more stale fact."""
    quantity_gate: float = 0.5
    """Least cosine for such a replacement."""
    veto: float = RELATION_VETO
    """Probability of distinct above which a replacement the rules chose is undone."""


class TrainedReconciler:
    """The rules propose and the relation decision disposes; it proposes a changed number."""

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
        read = self._read(candidate, open_pairs + ruled_pairs)
        if read is None:
            return ruled
        quantities = self._quantities(open_pairs, read)
        if quantities:
            return self._update(open_pairs[max(quantities, key=lambda i: float(read[i, 1]))])
        if ruled.action is ReconcileAction.UPDATE:
            vetoed = {
                n.memory.id
                for n, p in zip(ruled_pairs, read[len(open_pairs) :, 0], strict=True)
                if p >= self.thresholds.veto
            }
            kept = [i for i in ruled.target_ids if i not in vetoed]
            if kept:
                return ruled.model_copy(update={"target_ids": kept})
        if ruled.action is not ReconcileAction.UPDATE:
            return ruled
        return ReconcileDecision(
            action=ReconcileAction.KEEP_BOTH,
            rationale="a separate fact (trained relation), though worded alike",
        )

    def _quantities(self, pairs: list[Neighbour], read: np.ndarray) -> list[int]:
        """Indices of ``pairs`` (each a number that may have changed) read as updated."""
        return [
            i
            for i, (_, update, restatement) in enumerate(read[: len(pairs)].tolist())
            if update > restatement and update + restatement >= self.thresholds.quantity
        ]

    @staticmethod
    def _update(neighbour: Neighbour) -> ReconcileDecision:
        return ReconcileDecision(
            action=ReconcileAction.UPDATE,
            target_ids=[neighbour.memory.id],
            rationale="states a new value for the same fact (trained relation)",
        )

    def _read(self, candidate: MemoryCandidate, pairs: list[Neighbour]) -> np.ndarray | None:
        """The decision's (len(pairs), 3) probabilities, or None for no pairs or no weights."""
        if not pairs:
            return None
        structure = np.stack([pair_structure(n.memory.content, candidate.content) for n in pairs])
        olds = [n.memory.content for n in pairs]
        return self.judge.relation(olds, candidate.content, structure, candidate.said_as)
