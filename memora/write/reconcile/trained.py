"""The trained reconciler: the relation decision judges the neighbours a new memory resembles.

Supersession is the exception. The rules (:class:`OfflineReconciler`) put replacements forward
and the relation decision vetoes those it reads as clearly distinct. On its own, the decision
replaces one memory only: where a number may have changed and it reads an update, or where it
is near-certain of an update, the two statements share a word beyond the names of whom they
are about, and no other neighbour reads as an update too (a change word read as an update of
everything about one person is not one update). Each pair it reads costs an embedding of a
stored memory the bundled encoder may not have seen in this process.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memora.judgement import Judgement
from memora.models import MemoryCandidate, Neighbour, ReconcileAction, ReconcileDecision
from memora.write.reconcile.offline import OfflineReconciler, Reconciler
from memora.write.reconcile.pair_structure import pair_structure, shares_more_than_its_subject
from memora.write.reconcile.structure import quantity_may_have_changed, same_text


@dataclass(frozen=True)
class RelationThresholds:
    """When the relation decision acts (cosines are WordLlama's, as the rules read them)."""

    quantity: float = 0.9
    """Least probability of update + restatement (update the likelier) for the decision to
    replace a memory on its own, where only a number may have changed
    (:func:`~memora.write.reconcile.structure.quantity_may_have_changed`)."""
    quantity_gate: float = 0.5
    """Least cosine for such a replacement."""
    update: float = 0.99
    """Least probability of update for the decision to replace a memory the rules keep, where
    more than a number differs."""
    update_gate: float = 0.5
    """Least cosine for such a replacement."""
    veto: float = 0.97
    """Probability of distinct above which a replacement the rules chose is undone."""


class TrainedReconciler:
    """The rules propose and the relation decision disposes; it proposes one update itself."""

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
        gate = min(self.thresholds.quantity_gate, self.thresholds.update_gate)
        open_pairs = [n for n in neighbours if n.memory.id not in replaced and n.similarity >= gate]
        read = self._read(candidate, open_pairs + ruled_pairs)
        if read is None:
            return ruled
        quantities, updates = self._proposals(candidate.content, open_pairs, read)
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
        if len(updates) == 1:
            return self._update(open_pairs[updates[0]])
        if ruled.action is not ReconcileAction.UPDATE:
            return ruled
        return ReconcileDecision(
            action=ReconcileAction.KEEP_BOTH,
            rationale="a separate fact (trained relation), though worded alike",
        )

    def _proposals(
        self, new: str, pairs: list[Neighbour], read: np.ndarray
    ) -> tuple[list[int], list[int]]:
        """Indices of ``pairs`` the decision would replace: where only a number may have
        changed, and elsewhere."""
        limits = self.thresholds
        quantities, updates = [], []
        for i, neighbour in enumerate(pairs):
            _, update, restatement = (float(p) for p in read[i])
            if update <= restatement:
                continue
            old = neighbour.memory.content
            if quantity_may_have_changed(old, new):
                if neighbour.similarity >= limits.quantity_gate and (
                    update + restatement >= limits.quantity
                ):
                    quantities.append(i)
            elif (
                neighbour.similarity >= limits.update_gate
                and update >= limits.update
                and shares_more_than_its_subject(old, new)
            ):
                updates.append(i)
        return quantities, updates

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
        return self.judge.relation([n.memory.content for n in pairs], candidate.content, structure)
