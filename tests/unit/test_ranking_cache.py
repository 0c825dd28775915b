"""The per-user ranking cache follows writes from this store and from another one.

Two ``LongTermMemoryStore`` objects on one data dir stand in for two processes:
each has its own SQLite connection, Chroma client and cache.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memora.embeddings import EmbeddingSpec
from memora.models import MemoryStatus, MemoryUnit
from memora.storage.sealing import unseal
from memora.storage.store import LongTermMemoryStore

SPEC = EmbeddingSpec(model_id="test/hash-8", dimension=8)


class HashEmbed:
    """A deterministic embedding that counts the texts it embedded."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        rows = [
            np.frombuffer(hashlib.sha256(text.encode()).digest()[:8], dtype=np.uint8)
            for text in texts
        ]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), SPEC.dimension)


@pytest.fixture
def embed() -> HashEmbed:
    return HashEmbed()


@pytest.fixture
def stores(tmp_path: Path, embed: HashEmbed) -> Iterator[tuple[LongTermMemoryStore, ...]]:
    first = LongTermMemoryStore(tmp_path, SPEC, embed=embed)
    second = LongTermMemoryStore(tmp_path, SPEC, embed=embed)
    yield first, second
    first.close()
    second.close()


def _add(store: LongTermMemoryStore, embed: HashEmbed, memory_id: str, user: str = "alice") -> None:
    unit = MemoryUnit(id=memory_id, user_id=user, content=f"memory {memory_id}")
    store.add([unit], embed([unit.content]))


def test_own_writes_patch_the_cached_index_in_place(
    stores: tuple[LongTermMemoryStore, ...], embed: HashEmbed
) -> None:
    store, _ = stores
    _add(store, embed, "a1")
    index = store.index_for("alice")
    _add(store, embed, "a2")
    store.update("alice", "a1", status=MemoryStatus.ARCHIVED)
    assert store.index_for("alice") is index
    assert set(index.units) == {"a1", "a2"}
    assert not index.active[index.row_of["a1"]]
    assert index.generation == 3


def test_touch_patches_the_cached_rows_without_building_units(
    stores: tuple[LongTermMemoryStore, ...], embed: HashEmbed
) -> None:
    writer, reader = stores
    _add(writer, embed, "a1")
    writer.flush()
    index = reader.index_for("alice")  # loaded from stored rows, no unit built yet
    before = index.last_used_at[index.row_of["a1"]]

    assert reader.touch("alice", ["a1", "unknown"]) == 1
    assert reader.index_for("alice") is index
    assert index.last_used_at[index.row_of["a1"]] > before
    assert index.records["a1"]._unit is None
    unit = index.units["a1"]
    assert unit.access_count == 1
    assert unit.last_accessed_at is not None
    assert unit.last_accessed_at.timestamp() == index.last_used_at[index.row_of["a1"]]
    assert reader.touch("alice", ["a1"]) == 1
    assert index.units["a1"].access_count == 2  # a built unit is copied with the new count


def test_another_writers_write_is_patched_into_the_users_index(
    stores: tuple[LongTermMemoryStore, ...], embed: HashEmbed
) -> None:
    reader, writer = stores
    _add(reader, embed, "a1")
    before = reader.index_for("alice")

    _add(writer, embed, "a2")
    writer.flush()
    embedded = len(embed.texts)
    after = reader.index_for("alice")
    assert after is before  # patched from the change log, not rebuilt
    assert set(after.units) == {"a1", "a2"}
    np.testing.assert_allclose(
        after.vectors[after.row_of["a2"]], embed(["memory a2"])[0], rtol=1e-5
    )
    assert len(embed.texts) == embedded + 1  # only the check above embedded; Chroma had it


def test_a_write_after_a_foreign_write_catches_up_from_the_change_log(
    stores: tuple[LongTermMemoryStore, ...], embed: HashEmbed
) -> None:
    first, second = stores
    _add(first, embed, "a1")
    stale = first.index_for("alice")
    _add(second, embed, "a2")
    _add(first, embed, "a3")  # its generation shows a2 happened in between
    second.delete("alice", "a1")
    fresh = first.index_for("alice")
    assert fresh is stale
    assert set(fresh.units) == {"a2", "a3"}
    assert fresh.generation == first.rows.generation("alice")


def test_a_gap_the_change_log_does_not_cover_reloads_the_user(
    stores: tuple[LongTermMemoryStore, ...], embed: HashEmbed
) -> None:
    first, second = stores
    _add(first, embed, "a1")
    stale = first.index_for("alice")
    _add(second, embed, "a2")
    with second.db.transaction() as conn:
        conn.execute("DELETE FROM changes")  # as if the log had been pruned past this process
    fresh = first.index_for("alice")
    assert fresh is not stale
    assert set(fresh.units) == {"a1", "a2"}


def test_another_users_write_reopens_chroma_so_new_vectors_are_read(
    stores: tuple[LongTermMemoryStore, ...], embed: HashEmbed
) -> None:
    reader, writer = stores
    _add(writer, embed, "a1")
    _add(writer, embed, "b1", user="bob")
    writer.flush()
    assert set(reader.index_for("bob").units) == {"b1"}
    alice = reader.index_for("alice")  # a user with memories: an empty one is never cached

    _add(writer, embed, "b2", user="bob")
    writer.flush()
    embedded = len(embed.texts)
    bob = reader.index_for("bob")
    assert set(bob.units) == {"b1", "b2"}
    assert len(embed.texts) == embedded  # b2's vector came from Chroma, not re-embedded
    assert reader.index_for("alice") is alice  # alice's generation did not move


def test_rows_without_vectors_are_re_embedded_and_written_back(
    stores: tuple[LongTermMemoryStore, ...], embed: HashEmbed
) -> None:
    reader, crashed = stores
    lost = MemoryUnit(id="a1", user_id="alice", content="a vector lost in a crash")
    crashed.rows.insert("alice", [lost], [bytes(32)])  # committed; its vector never reached Chroma

    index = reader.index_for("alice")
    assert embed.texts == ["a vector lost in a crash"]
    expected = embed(["a vector lost in a crash"])[0]
    np.testing.assert_array_equal(index.vectors[index.row_of["a1"]], expected)
    reader.flush()
    stored = reader.vectors.get(["a1"])["a1"]
    assert not np.allclose(stored, expected, atol=1e-3)  # Chroma holds it sealed
    np.testing.assert_allclose(unseal(stored[None, :], [bytes(32)])[0], expected, atol=1e-4)
