"""The local copy of sealed vectors: used when right, ignored when stale or damaged.

Each ``LongTermMemoryStore`` on one data dir stands in for a new process.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from memora.embeddings import EmbeddingSpec
from memora.models import MemoryUnit
from memora.storage.sealing import unseal
from memora.storage.store import LongTermMemoryStore

SPEC = EmbeddingSpec(model_id="test/hash-8", dimension=8)


def embed(texts: list[str]) -> np.ndarray:
    rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8) for t in texts]
    return np.asarray(rows, dtype=np.float32).reshape(len(texts), SPEC.dimension)


def _fill(store: LongTermMemoryStore, user: str, count: int, prefix: str = "m") -> list[str]:
    units = [
        MemoryUnit(id=f"{prefix}{n}", user_id=user, content=f"memory {prefix} {n}")
        for n in range(count)
    ]
    store.add(units, embed([unit.content for unit in units]))
    store.flush()
    return [unit.id for unit in units]


def _index_vectors(store: LongTermMemoryStore, user: str) -> dict[str, np.ndarray]:
    index = store.index_for(user)
    return {memory_id: index.vectors[row] for memory_id, row in index.row_of.items()}


class CountingGets:
    """Records the ids a store asks Chroma for."""

    def __init__(self, store: LongTermMemoryStore) -> None:
        self.ids: list[str] = []
        original = store.vectors.get

        def get(ids: list[str]) -> dict[str, np.ndarray]:
            self.ids.extend(ids)
            return original(ids)

        store.vectors.get = get  # type: ignore[method-assign]


def _copies(root: Path) -> list[Path]:
    return sorted((root / "vector_cache").glob("*.npz"))


def _new_store(root: Path) -> LongTermMemoryStore:
    return LongTermMemoryStore(root, SPEC, embed=embed)


def test_the_process_that_wrote_the_memories_leaves_the_copy(tmp_path: Path) -> None:
    writer = _new_store(tmp_path)
    ids = _fill(writer, "alice", 50)
    writer.close()
    assert len(_copies(tmp_path)) == 1
    reader = _new_store(tmp_path)
    asked = CountingGets(reader)
    loaded = _index_vectors(reader, "alice")
    reader.close()
    assert asked.ids == []
    assert sorted(loaded) == sorted(ids)
    for memory_id, vector in loaded.items():
        assert np.allclose(vector, embed([f"memory m {memory_id[1:]}"])[0], atol=1e-3)


def test_a_node_without_the_copy_loads_from_chroma_and_leaves_one(tmp_path: Path) -> None:
    writer = _new_store(tmp_path)
    ids = _fill(writer, "alice", 50)
    writer.local_vectors.drop("alice")
    writer.close()
    assert _copies(tmp_path) == []
    first = _new_store(tmp_path)
    asked_first = CountingGets(first)
    expected = _index_vectors(first, "alice")
    first.close()  # the flush runs the upkeep that writes the copy
    assert sorted(asked_first.ids) == sorted(ids)
    assert len(_copies(tmp_path)) == 1

    second = _new_store(tmp_path)
    asked_second = CountingGets(second)
    loaded = _index_vectors(second, "alice")
    second.close()
    assert asked_second.ids == []
    assert loaded.keys() == expected.keys()
    for memory_id, vector in expected.items():
        assert np.allclose(loaded[memory_id], vector, atol=1e-4)


def test_the_copy_holds_sealed_vectors_only(tmp_path: Path) -> None:
    store = _new_store(tmp_path)
    _fill(store, "alice", 10)
    store.close()
    loader = _new_store(tmp_path)
    loader.index_for("alice")
    loader.close()
    with np.load(_copies(tmp_path)[0]) as data:
        ids = [str(memory_id) for memory_id in data["ids"]]
        sealed = np.asarray(data["sealed"])
    plain = embed([f"memory m {memory_id[1:]}" for memory_id in ids])
    assert not np.allclose(sealed, plain, atol=1.0)
    check = _new_store(tmp_path)
    keys = check.rows.vector_keys("alice", ids)
    check.close()
    assert np.allclose(unseal(sealed, [keys[i] for i in ids]), plain, atol=1e-3)


def test_entries_of_forgotten_memories_are_never_used(tmp_path: Path) -> None:
    store = _new_store(tmp_path)
    ids = _fill(store, "alice", 20)
    store.close()
    loader = _new_store(tmp_path)
    loader.index_for("alice")
    loader.close()
    forgetter = _new_store(tmp_path)
    for memory_id in ids[:3]:
        forgetter.delete("alice", memory_id)
    forgetter.close()
    fresh = _new_store(tmp_path)
    loaded = _index_vectors(fresh, "alice")
    fresh.close()
    assert set(loaded) == set(ids[3:])


def test_vectors_missing_from_the_copy_come_from_chroma_and_refresh_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _new_store(tmp_path)
    _fill(store, "alice", 40)
    store.close()
    other = _new_store(tmp_path)
    # A process that wrote its vectors to Chroma but died before adding them to the copy.
    monkeypatch.setattr(other.local_vectors, "remember", lambda *args: False)
    added = _fill(other, "alice", 10, prefix="n")
    other.close()
    reader = _new_store(tmp_path)
    asked = CountingGets(reader)
    reader.index_for("alice")
    reader.close()
    assert sorted(asked.ids) == sorted(added)
    last = _new_store(tmp_path)
    asked_last = CountingGets(last)
    assert len(_index_vectors(last, "alice")) == 50
    last.close()
    assert asked_last.ids == []


@pytest.mark.parametrize("damage", [b"", b"not a numpy file at all", b"PK\x03\x04broken"])
def test_a_damaged_copy_is_ignored_and_replaced(tmp_path: Path, damage: bytes) -> None:
    store = _new_store(tmp_path)
    ids = _fill(store, "alice", 30)
    store.index_for("alice")
    store.close()
    loader = _new_store(tmp_path)
    loader.index_for("alice")
    loader.close()
    [copy] = _copies(tmp_path)
    copy.write_bytes(damage)
    reader = _new_store(tmp_path)
    loaded = _index_vectors(reader, "alice")
    reader.close()
    assert set(loaded) == set(ids)
    assert np.allclose(loaded[ids[0]], embed(["memory m 0"])[0], atol=1e-3)
    with np.load(copy) as data:
        assert len(data["ids"]) == 30


def test_erasing_a_user_deletes_their_copy(tmp_path: Path) -> None:
    store = _new_store(tmp_path)
    _fill(store, "alice", 10)
    _fill(store, "bob", 10, prefix="b")
    store.close()
    loader = _new_store(tmp_path)
    loader.index_for("alice")
    loader.index_for("bob")
    loader.flush()
    assert len(_copies(tmp_path)) == 2
    loader.erase_user("alice")
    loader.close()
    remaining = _copies(tmp_path)
    assert len(remaining) == 1
    with np.load(remaining[0]) as data:
        assert {str(memory_id) for memory_id in data["ids"]} == {f"b{n}" for n in range(10)}


def test_a_forget_removes_the_memorys_entry_from_the_copy(tmp_path: Path) -> None:
    store = _new_store(tmp_path)
    ids = _fill(store, "alice", 10)
    store.close()
    forgetter = _new_store(tmp_path)
    assert forgetter.delete("alice", ids[0]) == [ids[0]]
    forgetter.flush()
    [copy] = _copies(tmp_path)
    with np.load(copy) as data:
        assert {str(memory_id) for memory_id in data["ids"]} == set(ids[1:])
    forgetter.close()
    reader = _new_store(tmp_path)
    asked = CountingGets(reader)
    assert set(_index_vectors(reader, "alice")) == set(ids[1:])
    reader.close()
    assert asked.ids == []


def test_erasing_a_user_also_removes_what_a_killed_copy_writer_left(tmp_path: Path) -> None:
    store = _new_store(tmp_path)
    _fill(store, "alice", 10)
    [copy] = _copies(tmp_path)
    leftover = copy.with_name(copy.name.split("-", 1)[0] + "-half-written.tmp")
    leftover.write_bytes(copy.read_bytes()[:100])
    store.erase_user("alice")
    store.close()
    assert list((tmp_path / "vector_cache").iterdir()) == []
