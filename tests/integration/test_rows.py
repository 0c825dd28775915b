"""The row store on SQLite and on Postgres: user scoping, tombstones, generations bumped with
each write."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memora.models import MemoryStatus, MemoryUnit
from memora.storage.db import StoreError
from memora.storage.postgres import PostgresDatabase
from memora.storage.rows import GenerationBump
from memora.storage.rows_postgres import SCHEMA_VERSION, PostgresRowStore
from memora.storage.sql_rows import SqliteRowStore, SqlRowStore

_T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def sqlite_rows(tmp_path: Path) -> Iterator[SqliteRowStore]:
    store = SqliteRowStore(tmp_path / "memora.db")
    yield store
    store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def rows(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlRowStore]:
    """Each test that takes it runs on a SQLite file and on a fresh Postgres database."""
    store: SqlRowStore
    if request.param == "sqlite":
        store = SqliteRowStore(tmp_path / "memora.db")
    else:
        store = PostgresRowStore(PostgresDatabase(request.getfixturevalue("database_url")))
    yield store
    store.close()


def _insert(rows: SqlRowStore, user_id: str, units: list[MemoryUnit]) -> GenerationBump:
    return rows.insert(user_id, units, [bytes(32) for _ in units])


def _unit(memory_id: str, user_id: str = "alice", day: int = 0, **fields: object) -> MemoryUnit:
    at = _T0 + timedelta(days=day)
    return MemoryUnit.model_validate(
        {
            "id": memory_id,
            "user_id": user_id,
            "content": f"memory {memory_id}",
            "created_at": at,
            "updated_at": at,
            **fields,
        }
    )


def test_rows_round_trip_and_stay_with_their_user(rows: SqlRowStore) -> None:
    stored = _unit("a1", metadata={"note": "café"}, importance=5)
    _insert(rows, "alice", [stored])
    _insert(rows, "bob", [_unit("b1", user_id="bob")])

    assert rows.get("alice", "a1") == stored
    assert rows.get("bob", "a1") is None
    assert [u.id for u in rows.list("alice")] == ["a1"]
    assert rows.count("alice") == 1 and rows.count("carol") == 0
    assert sorted(rows.users()) == ["alice", "bob"]
    assert [u.id for u in rows.all_memories()] == ["a1", "b1"]


def test_rewrite_of_a_foreign_id_changes_nothing(rows: SqlRowStore) -> None:
    _insert(rows, "alice", [_unit("a1")])
    archived = _unit("a1", status=MemoryStatus.ARCHIVED)
    rows.rewrite("bob", [archived])
    assert rows.count("alice", MemoryStatus.ACTIVE) == 1
    rows.rewrite("alice", [archived])
    assert rows.count("alice", MemoryStatus.ARCHIVED) == 1
    assert rows.count("alice", MemoryStatus.ACTIVE) == 0


def test_list_orders_by_creation_and_filters(rows: SqlRowStore) -> None:
    _insert(rows, "alice", [_unit("late", day=2), _unit("early", day=0, needs_review=True)])
    _insert(rows, "alice", [_unit("gone", day=1, status=MemoryStatus.SUPERSEDED)])
    assert [u.id for u in rows.list("alice")] == ["early", "gone", "late"]
    assert [u.id for u in rows.list("alice", MemoryStatus.ACTIVE)] == ["early", "late"]
    assert [u.id for u in rows.list("alice", review_only=True)] == ["early"]


def test_every_write_bumps_the_user_and_the_store_wide_generation(rows: SqlRowStore) -> None:
    assert (rows.generation("alice"), rows.store_generation()) == (0, 0)
    assert _insert(rows, "alice", [_unit("a1")]) == GenerationBump(0, 1, 0, 1)
    assert _insert(rows, "bob", [_unit("b1", user_id="bob")]) == GenerationBump(0, 1, 1, 2)
    touched, bump = rows.touch("alice", ["a1", "b1"], _T0)
    assert touched == 1  # bob's id is not alice's
    assert bump == GenerationBump(1, 2, 2, 3)
    assert rows.rewrite("alice", [_unit("a1")]) == GenerationBump(2, 3, 3, 4)
    assert rows.delete_with_tombstones("alice", ["a1"]) == GenerationBump(3, 4, 4, 5)
    assert (rows.generation("alice"), rows.generation("bob"), rows.store_generation()) == (4, 1, 5)


def test_a_failed_write_leaves_the_generations_alone(rows: SqlRowStore) -> None:
    _insert(rows, "alice", [_unit("a1")])
    with pytest.raises(StoreError):
        _insert(rows, "alice", [_unit("a2"), _unit("a1")])  # duplicate id: the whole write fails
    assert rows.get("alice", "a2") is None
    assert (rows.generation("alice"), rows.store_generation()) == (1, 1)


def test_touch_records_the_access(rows: SqlRowStore) -> None:
    _insert(rows, "alice", [_unit("a1")])
    at = _T0 + timedelta(hours=5)
    rows.touch("alice", ["a1"], at)
    rows.touch("alice", ["a1"], at)
    touched = rows.get("alice", "a1")
    assert touched is not None
    assert touched.last_accessed_at == at and touched.access_count == 2


def test_chain_follows_supersession_both_ways_within_the_user(rows: SqlRowStore) -> None:
    _insert(
        rows,
        "alice",
        [
            _unit("v1", day=0, superseded_by="v2", status=MemoryStatus.SUPERSEDED),
            _unit("v2", day=1, supersedes="v1", superseded_by="v3"),
            _unit("v3", day=2, supersedes="v2"),
            _unit("other", day=3),
        ],
    )
    _insert(rows, "bob", [_unit("b1", user_id="bob", supersedes="v3")])
    assert [u.id for u in rows.chain("alice", "v2")] == ["v1", "v2", "v3"]
    assert [u.id for u in rows.chain("alice", "other")] == ["other"]
    assert rows.chain("bob", "v2") == []


def test_delete_leaves_tombstones_only_for_that_user(rows: SqlRowStore) -> None:
    _insert(rows, "alice", [_unit("a1"), _unit("a2"), _unit("a3")])
    rows.delete_with_tombstones("alice", ["a1", "a2"])
    assert [u.id for u in rows.list("alice")] == ["a3"]
    assert rows.is_tombstoned("alice", "a1") and rows.is_tombstoned("alice", "a2")
    assert not rows.is_tombstoned("alice", "a3")
    assert not rows.is_tombstoned("bob", "a1")
    tombstone = rows.db.query("SELECT chain_ids FROM tombstones WHERE id = 'a2'")[0]
    assert tombstone["chain_ids"] == '["a1", "a2"]'


def test_deleting_another_users_id_removes_nothing(rows: SqlRowStore) -> None:
    _insert(rows, "alice", [_unit("a1")])
    rows.delete_with_tombstones("bob", ["a1"])
    assert rows.get("alice", "a1") is not None
    assert not rows.is_tombstoned("alice", "a1")


def test_deleted_text_is_gone_from_the_file(sqlite_rows: SqlRowStore, tmp_path: Path) -> None:
    rows = sqlite_rows
    secret = "my locker code is 4417-unique"
    _insert(rows, "alice", [_unit("a1", content=secret)])
    rows.delete_with_tombstones("alice", ["a1"])
    assert rows.scrub()
    for path in tmp_path.iterdir():
        assert secret.encode() not in path.read_bytes(), path


def test_embedding_model_and_reindex(rows: SqlRowStore) -> None:
    assert rows.embedding_model() is None
    rows.record_embedding_model("model-a", 256)
    recorded = rows.embedding_model()
    assert recorded is not None and (recorded.model_id, recorded.dimension) == ("model-a", "256")

    _insert(rows, "alice", [_unit("a1", embedding_model="model-a")])
    _insert(rows, "bob", [_unit("b1", user_id="bob", embedding_model="model-a")])
    rows.record_reindex("model-b", 384)
    recorded = rows.embedding_model()
    assert recorded is not None and (recorded.model_id, recorded.dimension) == ("model-b", "384")
    assert {u.embedding_model for u in rows.all_memories()} == {"model-b"}
    # Every cached index, whoever's, must be rebuilt after a reindex.
    assert (rows.generation("alice"), rows.generation("bob"), rows.store_generation()) == (2, 2, 3)


def test_a_memorys_vector_key_goes_with_its_row(rows: SqlRowStore) -> None:
    units = [_unit("a1"), _unit("a2")]
    rows.insert("alice", units, [b"1" * 32, b"2" * 32])
    assert rows.vector_keys("alice", ["a1", "a2", "zz"]) == {"a1": b"1" * 32, "a2": b"2" * 32}
    assert rows.vector_keys("bob", ["a1"]) == {}
    rows.delete_with_tombstones("alice", ["a1"])
    assert rows.vector_keys("alice", ["a1", "a2"]) == {"a2": b"2" * 32}
    assert rows.live_ids(["a1", "a2"]) == {"a2"}
    assert rows.add_vector_keys("alice", {"a1": b"x" * 32, "a2": b"y" * 32}) == {}


def test_a_memory_without_a_key_gets_the_one_offered(rows: SqlRowStore) -> None:
    _insert(rows, "alice", [_unit("a1"), _unit("a2")])
    with rows.db.transaction() as conn:
        conn.execute("DELETE FROM vector_keys WHERE id = ?", ("a1",))
    offered = {"a1": b"n" * 32, "a2": b"m" * 32}
    assert rows.add_vector_keys("bob", offered) == {}
    assert rows.add_vector_keys("alice", offered) == {"a1": b"n" * 32}
    assert rows.vector_keys("alice", ["a1", "a2"]) == {"a1": b"n" * 32, "a2": bytes(32)}


def test_changed_since_lists_the_logged_writes_or_asks_for_a_reload(rows: SqlRowStore) -> None:
    _insert(rows, "alice", [_unit("a1")])
    rows.rewrite("alice", [_unit("a1", importance=4)])
    _insert(rows, "alice", [_unit("a2")])
    _insert(rows, "bob", [_unit("b1", user_id="bob")])
    assert rows.changed_since("alice", 0) == ["a1", "a2"]
    assert rows.changed_since("alice", 2) == ["a2"]
    assert rows.changed_since("alice", 3) == []
    with rows.db.transaction() as conn:
        conn.execute("DELETE FROM changes WHERE generation = ?", (1,))
    assert rows.changed_since("alice", 0) is None
    assert rows.changed_since("alice", 1) == ["a1", "a2"]


def test_erase_user_tombstones_every_memory_of_that_user_only(rows: SqlRowStore) -> None:
    _insert(rows, "alice", [_unit("a1"), _unit("a2")])
    _insert(rows, "bob", [_unit("b1", user_id="bob")])
    assert sorted(rows.erase_user("alice")) == ["a1", "a2"]
    assert rows.count("alice") == 0 and rows.count("bob") == 1
    assert rows.is_tombstoned("alice", "a1") and rows.is_tombstoned("alice", "a2")
    assert rows.vector_keys("alice", ["a1", "a2"]) == {}
    assert rows.vector_keys("bob", ["b1"]) == {"b1": bytes(32)}
    # The counter moved to the user's tag, advanced once: a new memory starts past it, so a
    # process that cached alice before the erase cannot take her new index for the old one.
    assert rows.generation("alice") == 0 and rows.store_generation() == 3
    _insert(rows, "alice", [_unit("a3")])
    assert rows.generation("alice") == 3 and rows.changed_since("alice", 1) is None
    assert rows.db.query("SELECT 1 FROM tombstones WHERE user_id = 'alice'") == []
    assert rows.db.query("SELECT user_id FROM tombstones WHERE id = 'a1'")[0]["user_id"] == (
        rows.user_tag("alice")
    )


def test_foreign_ids_are_other_users_memories_and_tombstones(rows: SqlRowStore) -> None:
    _insert(rows, "alice", [_unit("a1"), _unit("a2")])
    rows.delete_with_tombstones("alice", ["a2"])
    assert rows.foreign_ids("bob", ["a1", "a2", "new"]) == {"a1", "a2"}
    assert rows.foreign_ids("alice", ["a1", "a2", "new"]) == set()


def test_index_rows_are_the_users_memories_oldest_first(rows: SqlRowStore) -> None:
    _insert(rows, "alice", [_unit("late", day=2), _unit("early", day=0, needs_review=True)])
    _insert(rows, "bob", [_unit("b1", user_id="bob")])
    index = rows.index_rows("alice")
    assert [row.id for row in index] == ["early", "late"]
    assert [row.unit() for row in index] == [rows.get("alice", "early"), rows.get("alice", "late")]
    assert index[0].created_at == _T0.timestamp()


def test_more_ids_than_one_statement_binds(rows: SqlRowStore) -> None:
    ids = [f"m{number:04d}" for number in range(950)]
    _insert(rows, "alice", [_unit(memory_id) for memory_id in ids])
    assert len(rows.get_many("alice", ids)) == 950
    assert rows.live_ids(ids) == set(ids)
    assert len(rows.vector_keys("alice", ids)) == 950
    assert rows.touch("alice", ids, _T0)[0] == 950
    rows.delete_with_tombstones("alice", ids)
    assert rows.count("alice") == 0 and rows.live_ids(ids) == set()
    assert rows.foreign_ids("bob", ids) == set(ids)


def test_a_memorys_sentence_vector_goes_with_its_key(rows: SqlRowStore) -> None:
    vector = np.arange(4, dtype="<f4").tobytes()
    rows.insert("alice", [_unit("a1"), _unit("a2")], [bytes(32), bytes(32)], [vector, None])
    assert rows.sentence_vectors("alice", ["a1", "a2", "zz"]) == {"a1": vector}
    assert rows.sentence_vectors("bob", ["a1"]) == {}
    rows.delete_with_tombstones("alice", ["a1"])
    assert rows.sentence_vectors("alice", ["a1"]) == {}
    with pytest.raises(ValueError, match="sentence vector"):
        rows.insert("alice", [_unit("a3")], [bytes(32)], [])


def test_a_sqlite_store_from_before_sentence_vectors_gains_their_column(tmp_path: Path) -> None:
    path = tmp_path / "memora.db"
    SqliteRowStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE vector_keys DROP COLUMN sentence")
        conn.execute("INSERT INTO vector_keys VALUES ('old', 'alice', x'00')")

    first, second = SqliteRowStore(path), SqliteRowStore(path)  # the second finds it added
    first.insert("alice", [_unit("a1")], [bytes(32)], [b"\x01\x02\x03\x04"])
    assert second.sentence_vectors("alice", ["a1", "old"]) == {"a1": b"\x01\x02\x03\x04"}
    first.close()
    second.close()


def test_a_postgres_store_of_schema_4_gains_the_sentence_column(database_url: str) -> None:
    import psycopg

    PostgresRowStore(PostgresDatabase(database_url)).close()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE vector_keys DROP COLUMN sentence")
        conn.execute("UPDATE schema_version SET version = 4 WHERE component = 'rows'")

    rows = PostgresRowStore(PostgresDatabase(database_url))
    rows.insert("alice", [_unit("a1")], [bytes(32)], [b"\x01\x02\x03\x04"])
    assert rows.sentence_vectors("alice", ["a1"]) == {"a1": b"\x01\x02\x03\x04"}
    rows.close()
    with psycopg.connect(database_url) as conn:
        version = conn.execute("SELECT version FROM schema_version WHERE component = 'rows'")
        assert version.fetchone() == (SCHEMA_VERSION,) == (5,)
