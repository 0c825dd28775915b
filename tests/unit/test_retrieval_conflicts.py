"""Recall puts a newer restatement of a fact above the older one it updates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memora.api import Memora
from memora.models import MemoryCandidate, MemoryUnit
from memora.recall import retrieval
from memora.storage.store import new_memory_id
from memora.write.write_path import find_neighbours

_T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _store(memora: Memora, *contents: str) -> list[str]:
    """Ingest memories one day apart, oldest first (no reconciliation)."""
    units = [
        MemoryUnit(
            id=new_memory_id(),
            user_id="u",
            content=content,
            created_at=_T0 + timedelta(days=day),
            updated_at=_T0 + timedelta(days=day),
        )
        for day, content in enumerate(contents)
    ]
    return memora.ingest(units)


def _ranked(memora: Memora, query: str) -> list[str]:
    hits = memora.rank_for_evaluation("u", query, 5, _T0 + timedelta(days=30))
    return [hit.memory.id for hit in hits]


OLD = "Nora Fishel and Eliza Woodley collaborated on a charity event combining music and books."
NEW = "Joren Sullivar and Eliza Woodley collaborated on a charity event combining music and books."
QUERY = "Did Nora Fishel collaborate with Eliza Woodley on a charity event?"


def test_newer_restatement_ranks_above_older(
    memora: Memora, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = _store(memora, OLD, NEW)
    monkeypatch.setattr(retrieval, "CONFLICT_MIN_COSINE", 2.0)  # rule off
    assert _ranked(memora, QUERY) == [old, new], "the older fact should score higher"
    monkeypatch.undo()
    assert _ranked(memora, QUERY) == [new, old]


def test_promotion_reaches_into_the_top_from_below_the_limit(memora: Memora) -> None:
    fillers = [f"Nora Fishel plays violin in concert number {n} with Eliza." for n in range(6)]
    ids = _store(memora, OLD, *fillers, NEW)
    hits = memora.rank_for_evaluation("u", QUERY, 2, _T0 + timedelta(days=30))
    ranked = [hit.memory.id for hit in hits]
    assert ranked[0] == ids[-1]
    assert ids[0] in ranked


def test_unrelated_memories_keep_their_order(memora: Memora) -> None:
    old, new = _store(
        memora,
        "Nora Fishel is an accomplished violinist who performs across Europe.",
        "Eliza Woodley writes historical fiction novels about Scotland.",
    )
    assert _ranked(memora, "Which violinist performs in Europe?")[0] == old


def test_same_time_restatements_keep_score_order(memora: Memora) -> None:
    units = [
        MemoryUnit(id=new_memory_id(), user_id="u", content=text, created_at=_T0, updated_at=_T0)
        for text in (OLD, NEW)
    ]
    old, new = memora.ingest(units)
    assert _ranked(memora, QUERY) == [old, new]


def test_the_write_paths_neighbours_keep_score_order(memora: Memora) -> None:
    """The reconciler judges every neighbour, so its search skips the reordering (a cost on
    every write); a reader's search keeps it."""
    old, new = _store(memora, OLD, NEW)
    assert _ranked(memora, QUERY) == [new, old]
    store = memora.store
    candidate = MemoryCandidate(content=QUERY)
    vector = memora.embeddings.embed_array([retrieval.dense_query_text(QUERY)])[0]
    found = find_neighbours(store, "u", candidate, vector, _T0 + timedelta(days=30))
    assert [n.memory.id for n in found][:2] == [old, new]
