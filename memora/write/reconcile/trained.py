"""The trained reconciler: the relation decision judges the neighbours a new memory resembles.

Supersession is the exception. A memory is replaced only where the relation decision reads the
pair as one fact (an update or a restatement) where the rules (:class:`OfflineReconciler`)
propose the replacement, a changed number as an update, or, alone, near-certainly, the same fact
said again in other words or the one memory whose value the new one changes. Otherwise both are
kept. Reading a pair costs a fraction of a millisecond (the stored memory is read with word
vectors only), so the decision reads every close neighbour.
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
    read them, but :attr:`alone_gate_kept`'s, of the kept sentence vectors). Each bar is a
    least probability of update + restatement: of one fact."""

    confirm: float = RELATION_CONFIRM
    """For a replacement the rules propose to stand. Of 0.2, 0.3, 0.35, 0.4 and 0.5, with the
    committee and the kept sentence vectors, on event log dev 2 and dev 3 (distinct kept /
    wrongly superseded / stale) and Letta's dev file (collateral / contradiction per row):
    0.975 / 7 / 16, 0.978 / 7 / 63, 0.019 / 0.328; 0.989 / 3 / 19, 0.984 / 5 / 63, 0.017 /
    0.354; 0.993 / 2 / 19, 0.987 / 4 / 63, 0.015 / 0.366; 0.993 / 2 / 19, 0.990 / 3 / 63,
    0.015 / 0.382; 0.993 / 2 / 19, 0.990 / 3 / 63, 0.015 / 0.427. 0.5 also left a plain swap
    of the development event log stale (it left 3 before the committee: a phone, a savings
    total, a job title read at 0.22 to 0.47 one fact). An unsure replacement loses a distinct
    fact; an unsure keep leaves a stale one beside its update, both still recalled."""
    alone: float = 0.99
    """Least probability of restatement (above that of update) for the decision to replace,
    alone, a close neighbour the rules keep: the same fact said again in other words. Of 0.98,
    0.99 and 0.995, read by one fit (restatement or update then, on event log dev 2 and Letta's
    dev file): 0.98 cost Letta 0.02 collateral per row more, 0.995 left 3 more stale facts."""
    alone_update: float = 0.95
    """Least probability of update for the decision to replace, alone, a close neighbour the
    rules keep and whose number has not changed: its new value, where it reads no other
    neighbour at :attr:`alone_sibling` (a list grows by another item that reads like a new
    value of each). The committee of three fits reads "I keep a pet X named A" against "... B"
    at most at 0.67, where the single fit shipped before read 0.99. Of 0.9, 0.95 and 0.98 on
    event log dev 2: 0.968 / 9 / 20, 22 and 25 (distinct kept / wrongly superseded / stale); on
    Letta's dev file 0.039, 0.015 and 0.015 collateral per row (siblings counted at the same
    bar then)."""
    alone_kept: float = 0.97
    """As :attr:`alone`, for a neighbour read with its kept sentence vector too (the average
    of both relation decisions). Of 0.99, 0.97 and 0.95 on event log dev 2: 20, 17 and 17
    stale facts (0.975 / 7 distinct kept / wrongly superseded each); Letta's dev file 0.015
    collateral per row each."""
    alone_update_kept: float = 0.9
    """As :attr:`alone_update`, for a neighbour read with its kept sentence vector too. With
    :attr:`alone_kept` at 0.97, 0.95 and 0.9 left 17 and 16 stale facts on event log dev 2
    (0.975 / 7 both) and Letta's dev file 0.015 collateral per row both (0.328 and 0.326
    contradiction); the word-vector reading alone cost Letta 0.039 at 0.9."""

    alone_sibling: float = 0.5
    """Probability of update at which another close neighbour counts as a value the new memory
    could replace as well, so that it replaces neither on its own reading."""
    alone_gate: float = 0.6
    """Least cosine of such a neighbour."""
    alone_gate_kept: float = 0.84
    """Least cosine of the sentence vectors (the encoder's, kept with the memory) at which a
    neighbour is close though its WordLlama cosine is below :attr:`alone_gate`: a change or a
    restatement in other words shares few of them ("is seeing a dentist named Pavel" / "and
    Pavel are now engaged": WordLlama 0.52, the encoder 0.88). On event log dev 3 (distinct
    kept / wrongly superseded / stale; off: 0.978 / 7 / 67), of 0.8, 0.82, 0.84, 0.86, 0.88
    and 0.9: 64, 63, 63 and 64 stale at 0.978 / 7, then 64 and 63 at 0.974 / 8; event log
    dev 2 16 stale each but 17 at 0.86 (off: 16); Letta's dev file 0.019 collateral per row
    each (off: 0.019). Above 1, off."""
    quantity: float = 0.97
    """For the decision to replace a neighbour whose number may have changed
    (:func:`~memora.write.reconcile.structure.quantity_may_have_changed`), update the likelier.
    Chosen on the development files (event log dev 2, Letta's dev file) of 0.9, 0.97 and 0.99:
    0.9 cost Letta's file 0.005 collateral per row more, 0.99 left one more stale fact."""
    quantity_gate: float = 0.5
    """Least cosine for such a replacement."""

    def restatement_bar(self, neighbour: Neighbour) -> float:
        """:attr:`alone_kept` for a neighbour with its kept sentence vector, else :attr:`alone`."""
        return self.alone if neighbour.sentence_vector is None else self.alone_kept

    def update_bar(self, neighbour: Neighbour) -> float:
        """:attr:`alone_update_kept` for a neighbour with its kept sentence vector, else
        :attr:`alone_update`."""
        return self.alone_update if neighbour.sentence_vector is None else self.alone_update_kept


def comparable(neighbours: list[Neighbour], said: np.ndarray | None) -> list[Neighbour]:
    """The neighbours with only the kept sentence vectors that can be read beside ``said``
    (the new memory's): one kept under another encoder, of another width, is read as none
    by every bar and by the decision, as where no vector was kept."""
    return [
        n
        if n.sentence_vector is None or (said is not None and n.sentence_vector.shape == said.shape)
        else n.model_copy(update={"sentence_vector": None})
        for n in neighbours
    ]


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
        said = self.judge.sentence_vector(candidate.said_as or candidate.content)
        neighbours = comparable(neighbours, said)
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
        near = self._near(said, neighbours)
        close = [n for n in neighbours if n.memory.id not in reading and n.memory.id in near]
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
            newest = max(changed, key=lambda n: relation[n.memory.id][1])
            return self._update(newest, "gives it a new number")
        if ruled.action is ReconcileAction.UPDATE:
            confirmed = [
                i
                for i in ruled.target_ids
                if i in relation and 1.0 - relation[i][0] >= self.thresholds.confirm
            ]
            if confirmed:
                return ruled.model_copy(update={"target_ids": confirmed})
        alone = self._alone(open_pairs, close, relation, near)
        if alone is not None:
            updated = relation[alone.memory.id][1] > relation[alone.memory.id][2]
            return self._update(
                alone, "gives it a new value" if updated else "states the same fact anew"
            )
        if ruled.action is ReconcileAction.UPDATE:
            return ReconcileDecision(
                action=ReconcileAction.KEEP_BOTH,
                rationale="a separate fact (trained relation), though worded alike",
            )
        return ruled

    def _near(self, said: np.ndarray | None, neighbours: list[Neighbour]) -> set[str]:
        """Ids of the neighbours close enough for the decision to replace on its own reading
        (``said``: the new memory's sentence vector)."""
        bars = self.thresholds
        near = {n.memory.id for n in neighbours if n.similarity >= bars.alone_gate}
        if said is None or bars.alone_gate_kept > 1.0:
            return near
        return near | {
            n.memory.id
            for n in neighbours
            if n.sentence_vector is not None
            and n.memory.id not in near
            and float(n.sentence_vector @ said) >= bars.alone_gate_kept
        }

    def _alone(
        self,
        numbered: list[Neighbour],
        close: list[Neighbour],
        relation: dict[str, list[float]],
        near_ids: set[str],
    ) -> Neighbour | None:
        """The close neighbour the decision replaces on its own reading: one it is near-certain
        the new memory restates, or gives a new value of where no number may have changed (those
        have their own bar). None of the new values where it reads another neighbour as likelier
        given a new value than not: the new memory is then another item of a list, or a
        statement of several facts, and one value replaces one value."""
        bars = self.thresholds
        near = [n for n in numbered + close if n.memory.id in near_ids]
        siblings = [n for n in near if relation[n.memory.id][1] >= bars.alone_sibling]
        updated = [n for n in close if relation[n.memory.id][1] >= bars.update_bar(n)]
        restated = [
            n
            for n in near
            if relation[n.memory.id][2] > relation[n.memory.id][1]
            and relation[n.memory.id][2] >= bars.restatement_bar(n)
        ]
        chosen = restated + (updated if len(siblings) == 1 else [])
        if not chosen:
            return None
        return max(chosen, key=lambda n: 1.0 - relation[n.memory.id][0])

    @staticmethod
    def _update(neighbour: Neighbour, how: str) -> ReconcileDecision:
        return ReconcileDecision(
            action=ReconcileAction.UPDATE,
            target_ids=[neighbour.memory.id],
            rationale=f"{how} (trained relation)",
        )

    def _read(self, candidate: MemoryCandidate, pairs: list[Neighbour]) -> np.ndarray | None:
        """The decision's (len(pairs), 3) probabilities, or None for no pairs or no weights."""
        if not pairs:
            return None
        structure = np.stack([pair_structure(n.memory.content, candidate.content) for n in pairs])
        olds = [n.memory.content for n in pairs]
        stored = [n.sentence_vector for n in pairs]
        return self.judge.relation(olds, candidate.content, structure, candidate.said_as, stored)
