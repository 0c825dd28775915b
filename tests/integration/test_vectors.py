"""The Chroma vector index and its batched writer, on a real on-disk Chroma."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memora.embeddings import EmbeddingSpec
from memora.models import MemoryUnit
from memora.storage.db import EmbeddingMismatchError
from memora.storage.vectors import CHROMA_BATCH, ChromaVectorIndex, VectorWriter

SPEC = EmbeddingSpec(model_id="test/spec-8", dimension=8)


def _units(count: int, user_id: str = "alice", prefix: str = "m") -> list[MemoryUnit]:
    return [
        MemoryUnit(id=f"{prefix}{i}", user_id=user_id, content=f"memory {i}") for i in range(count)
    ]


def _vectors(count: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((count, SPEC.dimension)).astype(np.float32)


def test_vectors_round_trip_with_their_owner(tmp_path: Path) -> None:
    index = ChromaVectorIndex(tmp_path, SPEC, owner_label=lambda user: f"tag-of-{user}")
    units, vectors = _units(3), _vectors(3)
    index.upsert(units, vectors)
    assert sorted(index.ids_of("alice")) == ["m0", "m1", "m2"]

    found = index.get(["m0", "m2", "unknown"])
    assert sorted(found) == ["m0", "m2"]
    np.testing.assert_allclose(found["m2"], vectors[2], rtol=1e-6)
    stored = index.collection.get(ids=["m1"], include=["metadatas", "documents"])
    assert stored["metadatas"] == [{"owner": "tag-of-alice"}]  # never the user id
    assert stored["documents"] == [None]  # the text never reaches Chroma

    index.delete(["m0"])
    assert sorted(index.get(["m0", "m1", "m2"])) == ["m1", "m2"]


def test_more_ids_than_one_chroma_call_takes(tmp_path: Path) -> None:
    index = ChromaVectorIndex(tmp_path, SPEC)
    count = CHROMA_BATCH + 700  # over chromadb's per-call maximum
    units, vectors = _units(count), _vectors(count)
    index.upsert(units, vectors)
    assert len(index.get([unit.id for unit in units])) == count


def test_reopen_sees_another_clients_writes(tmp_path: Path) -> None:
    reader = ChromaVectorIndex(tmp_path, SPEC)
    writer = ChromaVectorIndex(tmp_path, SPEC)
    writer.upsert(_units(1), _vectors(1))
    assert sorted(reader.get(["m0"])) == ["m0"]

    writer.upsert(_units(1, prefix="late"), _vectors(1, seed=1))
    reader.reopen()
    assert sorted(reader.get(["late0", "m0"])) == ["late0", "m0"]


def test_drop_empties_the_collection_and_the_next_model_may_use_it(tmp_path: Path) -> None:
    index = ChromaVectorIndex(tmp_path, SPEC)
    index.upsert(_units(2), _vectors(2))
    other = EmbeddingSpec(model_id="test/other-8", dimension=8)
    with pytest.raises(EmbeddingMismatchError, match="reindex"):
        _ = ChromaVectorIndex(tmp_path, other).collection

    index.drop()
    assert index.get(["m0", "m1"]) == {}
    rebuilt = ChromaVectorIndex(tmp_path, other)
    rebuilt.drop()
    assert rebuilt.collection.metadata["embedding_model"] == "test/other-8"


def test_writer_batches_queued_vectors_in_submission_order(tmp_path: Path) -> None:
    index = ChromaVectorIndex(tmp_path, SPEC)
    calls: list[list[str]] = []

    def write(units: Sequence[MemoryUnit], vectors: np.ndarray) -> None:
        calls.append([unit.id for unit in units])
        index.upsert(units, vectors)

    writer = VectorWriter(write, max_delay_s=0.5)
    batches = [_units(2, prefix=f"b{i}-") for i in range(5)]
    for seed, units in enumerate(batches):
        writer.submit(units, _vectors(2, seed=seed))
    writer.flush()

    written = [memory_id for call in calls for memory_id in call]
    assert written == [unit.id for units in batches for unit in units]
    assert len(calls) < len(batches)  # gathered, not one Chroma call per submission
    assert len(index.get(written)) == len(written)


def test_writer_survives_a_failed_batch(tmp_path: Path) -> None:
    index = ChromaVectorIndex(tmp_path, SPEC)
    index.upsert(_units(1, prefix="first"), _vectors(1))  # fixes the collection's width
    writer = VectorWriter(index.upsert, max_delay_s=0.0)
    wrong_width = np.zeros((1, SPEC.dimension + 1), dtype=np.float32)
    writer.submit(_units(1, prefix="bad"), wrong_width)
    writer.flush()  # the failure is logged, not raised; the thread keeps running
    writer.submit(_units(1, prefix="good"), _vectors(1))
    writer.flush()
    assert sorted(index.get(["bad0", "good0"])) == ["good0"]


def test_an_answer_with_fewer_vectors_than_ids_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Chroma server being written by another process can answer a read by id with
    fewer embeddings than ids; such an answer cannot be paired, so it is asked again."""
    from memora.storage import vectors as module

    index = ChromaVectorIndex(tmp_path, SPEC)
    units, vectors = _units(3), _vectors(3)
    index.upsert(units, vectors)
    real = module._get_by_ids
    answers = {"short": 1}

    def short_once(collection: object, ids: list[str], include: list[str]) -> dict:
        result = dict(real(collection, ids=ids, include=include))
        if answers["short"] > 0:
            answers["short"] -= 1
            result["embeddings"] = list(result["embeddings"])[:-1]
        return result

    monkeypatch.setattr(module, "_get_by_ids", short_once)
    found = index.get(["m0", "m1", "m2"])
    assert sorted(found) == ["m0", "m1", "m2"]
    np.testing.assert_allclose(found["m1"], vectors[1], rtol=1e-6)

    answers["short"] = 100
    assert index.get(["m0", "m1"]) == {}  # never paired: missing, so callers re-embed


def test_vectors_labelled_with_the_user_id_before_are_still_the_users(tmp_path: Path) -> None:
    index = ChromaVectorIndex(tmp_path, SPEC, owner_label=lambda user: f"tag-of-{user}")
    index.collection.upsert(ids=["old"], embeddings=_vectors(1), metadatas=[{"user_id": "carol"}])
    index.upsert(_units(1), _vectors(1))
    assert index.ids_of("carol") == ["old"]
    assert index.ids_of("alice") == ["m0"]
