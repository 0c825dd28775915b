"""The trained reconciler's decisions under given readings: when a replacement stands.

The relation decision and the rules are stand-ins here, so each bar is checked on its own;
tests/integration/test_trained_reconcile.py runs the shipped weights through the write path.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pytest

from memora.judgement import Judgement
from memora.judgement.decisions import RELATION_CONFIRM
from memora.models import (
    MemoryCandidate,
    MemoryUnit,
    Neighbour,
    ReconcileAction,
    ReconcileDecision,
)
from memora.write.reconcile import TrainedReconciler

NEW = "The user walks the dog before work."


class _Readings:
    """The relation decision, reading each stored text as one fact with a given probability:
    a restatement, or an update for the texts in ``updates``."""

    def __init__(self, one_fact: dict[str, float], updates: set[str]) -> None:
        self.one_fact = one_fact
        self.updates = updates
        self.stored: list[Any] = []

    def sentence_vector(self, text: str) -> Any:
        return np.array([1.0, 0.0])

    def relation(
        self, olds: list[str], new: str, structure: Any, said_as: Any = None, stored: Any = None
    ) -> Any:
        self.stored.append(stored)
        rows = []
        for old in olds:
            same = self.one_fact[old]
            rows.append([1 - same, same, 0.0] if old in self.updates else [1 - same, 0.0, same])
        return np.array(rows)


class _Rules:
    """The rules, proposing a given decision."""

    def __init__(self, decision: ReconcileDecision) -> None:
        self.decision = decision

    def decide(self, candidate: MemoryCandidate, neighbours: list[Neighbour]) -> Any:
        return self.decision


def _neighbour(memory_id: str, similarity: float) -> Neighbour:
    content = f"Stored fact {memory_id} about the user's mornings."
    return Neighbour(
        memory=MemoryUnit(id=memory_id, user_id="u", content=content), similarity=similarity
    )


def _decide(
    one_fact: dict[str, float],
    rules: ReconcileDecision,
    *neighbours: Neighbour,
    updates: frozenset[str] = frozenset(),
) -> ReconcileDecision:
    readings = _Readings(
        {n.memory.content: one_fact[n.memory.id] for n in neighbours},
        {n.memory.content for n in neighbours if n.memory.id in updates},
    )
    reconciler = TrainedReconciler(cast(Judgement, readings), rules=_Rules(rules))
    return reconciler.decide(MemoryCandidate(content=NEW), list(neighbours))


REPLACE_A = ReconcileDecision(action=ReconcileAction.UPDATE, target_ids=["a"], rationale="rules")
CREATE = ReconcileDecision(action=ReconcileAction.CREATE, rationale="rules")


def test_a_replacement_the_rules_propose_stands_only_if_read_as_one_fact() -> None:
    a = _neighbour("a", 0.8)
    for updated in (frozenset(), frozenset("a")):
        stands = _decide({"a": RELATION_CONFIRM + 0.05}, REPLACE_A, a, updates=updated)
        assert stands.target_ids == ["a"]
        kept = _decide({"a": RELATION_CONFIRM - 0.05}, REPLACE_A, a, updates=updated)
        assert kept.action is ReconcileAction.KEEP_BOTH and not kept.target_ids


def test_a_target_the_decision_did_not_read_is_not_replaced() -> None:
    elsewhere = ReconcileDecision(action=ReconcileAction.UPDATE, target_ids=["z"], rationale="r")
    assert _decide({"a": 0.2}, elsewhere, _neighbour("a", 0.8)).action is not (
        ReconcileAction.UPDATE
    )


def test_a_near_certain_neighbour_is_replaced_even_where_the_rules_propose_another() -> None:
    decision = _decide(
        {"a": 0.1, "c": 0.995}, REPLACE_A, _neighbour("a", 0.8), _neighbour("c", 0.7)
    )
    assert decision.action is ReconcileAction.UPDATE and decision.target_ids == ["c"]


def test_the_decision_alone_needs_a_near_certain_restatement_of_a_close_neighbour() -> None:
    assert _decide({"c": 0.98}, CREATE, _neighbour("c", 0.9)).action is ReconcileAction.CREATE
    assert _decide({"c": 0.999}, CREATE, _neighbour("c", 0.55)).action is ReconcileAction.CREATE
    assert _decide({"c": 0.99}, CREATE, _neighbour("c", 0.6)).target_ids == ["c"]


def test_the_decision_alone_replaces_the_one_value_it_reads_as_updated() -> None:
    c = _neighbour("c", 0.9)
    updated = frozenset("c")
    decision = _decide({"c": 0.95}, CREATE, c, updates=updated)
    assert decision.target_ids == ["c"] and decision.rationale.startswith("gives it a new value")
    assert _decide({"c": 0.94}, CREATE, c, updates=updated).action is ReconcileAction.CREATE
    far = _neighbour("c", 0.55)
    assert _decide({"c": 0.999}, CREATE, far, updates=updated).action is ReconcileAction.CREATE


def test_a_memory_read_as_the_new_value_of_several_replaces_none_of_them() -> None:
    # Two lizards, a third one named: another item of a list, not two values replaced.
    pair = (_neighbour("c", 0.9), _neighbour("d", 0.9))
    both = _decide({"c": 0.99, "d": 0.985}, CREATE, *pair, updates=frozenset("cd"))
    assert both.action is ReconcileAction.CREATE
    # A restatement beside them is still replaced: it is the same fact, not another value.
    e = _neighbour("e", 0.8)
    restated = _decide(
        {"c": 0.999, "d": 0.999, "e": 0.99}, CREATE, *pair, e, updates=frozenset("cd")
    )
    assert restated.target_ids == ["e"]


def test_the_decision_alone_replaces_one_memory_only() -> None:
    decision = _decide(
        {"c": 0.995, "d": 0.999, "e": 0.3},
        CREATE,
        _neighbour("c", 0.9),
        _neighbour("d", 0.8),
        _neighbour("e", 0.95),
    )
    assert decision.action is ReconcileAction.UPDATE and decision.target_ids == ["d"]


def test_a_sibling_read_as_likelier_updated_than_not_stops_the_decision_alone() -> None:
    pair = (_neighbour("c", 0.9), _neighbour("d", 0.9))
    decided = _decide({"c": 0.96, "d": 0.6}, CREATE, *pair, updates=frozenset("cd"))
    assert decided.action is ReconcileAction.CREATE
    lone = _decide({"c": 0.96, "d": 0.4}, CREATE, *pair, updates=frozenset("cd"))
    assert lone.target_ids == ["c"]


def test_a_changed_number_needs_its_own_bar_not_the_new_value_bar() -> None:
    old = Neighbour(
        memory=MemoryUnit(id="n", user_id="u", content="The user has 3 bonsai trees."),
        similarity=0.9,
    )
    new = MemoryCandidate(content="The user has 4 bonsai trees.")
    for one_fact, action in ((0.96, ReconcileAction.CREATE), (0.975, ReconcileAction.UPDATE)):
        readings = _Readings({old.memory.content: one_fact}, {old.memory.content})
        reconciler = TrainedReconciler(cast(Judgement, readings), rules=_Rules(CREATE))
        decision = reconciler.decide(new, [old])
        assert decision.action is action, one_fact
    assert decision.rationale.startswith("gives it a new number")


def test_each_neighbours_kept_sentence_vector_reaches_the_decision() -> None:
    readings = _Readings({"a": 0.1, "b": 0.1}, set())
    reconciler = TrainedReconciler(cast(Judgement, readings), rules=_Rules(CREATE))
    kept = Neighbour(
        memory=MemoryUnit(id="1", user_id="u", content="a"),
        similarity=0.9,
        sentence_vector=np.array([0.6, 0.8]),
    )
    bare = Neighbour(memory=MemoryUnit(id="2", user_id="u", content="b"), similarity=0.9)
    reconciler.decide(MemoryCandidate(content="c"), [kept, bare])
    (stored,) = readings.stored
    assert [None if v is None else v.tolist() for v in stored] == [
        pytest.approx([0.6, 0.8]),
        None,
    ]


def test_a_neighbour_read_with_its_kept_vector_has_the_bars_of_both_decisions() -> None:
    def kept(memory_id: str) -> Neighbour:
        return _neighbour(memory_id, 0.9).model_copy(
            update={"sentence_vector": np.array([1.0, 0.0])}
        )

    # A restatement: 0.97 with a kept vector, 0.99 without.
    assert _decide({"c": 0.98}, CREATE, kept("c")).target_ids == ["c"]
    assert _decide({"c": 0.96}, CREATE, kept("c")).action is ReconcileAction.CREATE
    assert _decide({"c": 0.98}, CREATE, _neighbour("c", 0.9)).action is ReconcileAction.CREATE
    # A new value: 0.9 with a kept vector, 0.95 without.
    updated = frozenset("c")
    assert _decide({"c": 0.92}, CREATE, kept("c"), updates=updated).target_ids == ["c"]
    assert _decide({"c": 0.88}, CREATE, kept("c"), updates=updated).action is (
        ReconcileAction.CREATE
    )
    assert _decide({"c": 0.92}, CREATE, _neighbour("c", 0.9), updates=updated).action is (
        ReconcileAction.CREATE
    )


def _worded_apart(memory_id: str, cosine: float, width: int = 2) -> Neighbour:
    """A neighbour at WordLlama cosine 0.3 whose kept vector has ``cosine`` with the new
    memory's: the stand-in reads every new memory's sentence vector as (1, 0)."""
    vector = np.zeros(width)
    vector[:2] = [cosine, np.sqrt(1 - cosine**2)]
    return _neighbour(memory_id, 0.3).model_copy(update={"sentence_vector": vector})


def test_a_neighbour_worded_apart_is_close_where_its_kept_sentence_vector_is() -> None:
    updated = frozenset("c")
    for close in (_worded_apart("c", 0.95), _worded_apart("c", 0.845)):
        assert _decide({"c": 0.92}, CREATE, close, updates=updated).target_ids == ["c"]
    far_ones = (
        _worded_apart("c", 0.835),
        _worded_apart("c", 0.95, width=3),
        _neighbour("c", 0.3),
    )
    for far in far_ones:
        assert _decide({"c": 0.999}, CREATE, far, updates=updated).action is (
            ReconcileAction.CREATE
        )


def test_a_neighbour_close_by_its_kept_vector_counts_as_a_sibling() -> None:
    updated = frozenset("cd")
    readings = {"c": 0.96, "d": 0.6}
    sibling = _decide(
        readings, CREATE, _neighbour("c", 0.9), _worded_apart("d", 0.9), updates=updated
    )
    assert sibling.action is ReconcileAction.CREATE
    apart = _decide(
        readings, CREATE, _neighbour("c", 0.9), _worded_apart("d", 0.5), updates=updated
    )
    assert apart.target_ids == ["c"]


def test_a_vector_kept_under_another_encoder_gets_the_bars_of_none() -> None:
    """A kept vector of another width is not read by the decision, so the lower bars of a
    pair read with it do not apply either."""
    elsewhere = _neighbour("c", 0.9).model_copy(update={"sentence_vector": np.ones(3) / 3**0.5})
    updated = frozenset("c")
    readings = _Readings({elsewhere.memory.content: 0.92}, {elsewhere.memory.content})
    reconciler = TrainedReconciler(cast(Judgement, readings), rules=_Rules(CREATE))
    decision = reconciler.decide(MemoryCandidate(content=NEW), [elsewhere])
    assert decision.action is ReconcileAction.CREATE
    assert readings.stored == [[None]]
    # Restated at 0.98: under the bar of no vector (0.99), over the kept one's (0.97).
    assert _decide({"c": 0.98}, CREATE, elsewhere).action is ReconcileAction.CREATE
    # The same readings with a comparable vector pass the lower bars.
    comparable = elsewhere.model_copy(update={"sentence_vector": np.array([0.0, 1.0])})
    assert _decide({"c": 0.92}, CREATE, comparable, updates=updated).target_ids == ["c"]
    assert _decide({"c": 0.98}, CREATE, comparable).target_ids == ["c"]
