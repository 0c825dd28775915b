"""The row store on Postgres: one database shared by every node that serves the same users.

Same contract as :class:`memora.rows.SqliteRowStore`; what differs is how
writers on several machines are kept in step:

- every write bumps the store-wide generation and then the user's inside its
  own transaction, with ``INSERT … ON CONFLICT DO UPDATE … RETURNING``: the row
  locks order concurrent writers (always store-wide first, so two writers never
  wait on each other crosswise), and the generations they see are the order in
  which they commit;
- the change log is the same table, so a node that missed writes patches its
  ranking cache from it exactly as a second process on one machine does;
- the cross-node vector lock is a session-level advisory lock
  (``pg_advisory_lock``) instead of a file lock.

Deleting rows leaves dead tuples until ``VACUUM``; :meth:`scrub` runs it on
the tables that held the text and keys (see the README's "Scaling out").
"""

from __future__ import annotations

import builtins
import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from memora.models import MemorySource, MemoryStatus, MemoryUnit, utcnow
from memora.postgres import PostgresDatabase
from memora.rows import (  # the same columns in the same order: IndexRow reads them by position
    _COLUMNS,
    CHANGE_LOG_GENERATIONS,
    EmbeddingModelRecord,
    GenerationBump,
    IndexRow,
)

SCHEMA_VERSION = 1
_STORE_WIDE = ""
_VECTOR_LOCK = 0x6D656D6F7261_01
"""Advisory lock id of the vector lock (distinct from the schema lock)."""

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS memories (
        seq BIGSERIAL UNIQUE,
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        content TEXT NOT NULL,
        memory_type TEXT NOT NULL,
        kind TEXT NOT NULL,
        scope TEXT NOT NULL,
        thread_id TEXT,
        importance INTEGER NOT NULL,
        confidence DOUBLE PRECISION NOT NULL,
        source TEXT NOT NULL,
        metadata TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        last_accessed_at TEXT,
        access_count INTEGER NOT NULL DEFAULT 0,
        expires_at TEXT,
        status TEXT NOT NULL,
        superseded_by TEXT,
        supersedes TEXT,
        embedding_model TEXT NOT NULL,
        needs_review BOOLEAN NOT NULL DEFAULT FALSE
    )""",
    "CREATE INDEX IF NOT EXISTS memories_user_order ON memories (user_id, created_at, seq)",
    """CREATE TABLE IF NOT EXISTS tombstones (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        deleted_at TEXT NOT NULL,
        chain_ids TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS generations (
        user_id TEXT PRIMARY KEY,
        generation BIGINT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS changes (
        user_id TEXT NOT NULL,
        generation BIGINT NOT NULL,
        memory_id TEXT NOT NULL,
        PRIMARY KEY (user_id, generation, memory_id)
    )""",
    """CREATE TABLE IF NOT EXISTS vector_keys (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        key BYTEA NOT NULL
    )""",
]

_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM memories"
_SCRUBBED_TABLES = ("memories", "vector_keys", "changes")
"""Tables whose deleted rows held memory text or keys, or name forgotten ids."""


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _row_values(unit: MemoryUnit) -> tuple[Any, ...]:
    return (
        unit.id,
        unit.user_id,
        unit.content,
        unit.memory_type.value,
        unit.kind,
        unit.scope.value,
        unit.thread_id,
        unit.importance,
        unit.confidence,
        unit.source.model_dump_json(),
        json.dumps(unit.metadata, ensure_ascii=False),
        _iso(unit.created_at),
        _iso(unit.updated_at),
        _iso(unit.last_accessed_at),
        unit.access_count,
        _iso(unit.expires_at),
        unit.status.value,
        unit.superseded_by,
        unit.supersedes,
        unit.embedding_model,
        unit.needs_review,
    )


def _unit_from_row(row: dict[str, Any]) -> MemoryUnit:
    data = {name: row[name] for name in _COLUMNS}
    data["source"] = MemorySource.model_validate_json(data["source"])
    data["metadata"] = json.loads(data["metadata"])
    return MemoryUnit.model_validate(data)


class PostgresRowStore:
    """:class:`memora.rows.RowStore` on a shared Postgres database."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db
        db.ensure_schema("rows", SCHEMA_VERSION, _SCHEMA)
        self._vector_thread_lock = threading.Lock()

    @contextmanager
    def vector_lock(self) -> Iterator[None]:
        """A session advisory lock, held on one pooled connection: every node waits on it."""
        with self._vector_thread_lock, self.db.connection() as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (_VECTOR_LOCK,))
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (_VECTOR_LOCK,))

    def close(self) -> None:
        """Close the pool."""
        self.db.close()

    def scrub(self) -> bool:
        """VACUUM the tables deleted rows came from, so their tuples are pruned and reused."""
        return self.db.vacuum(*_SCRUBBED_TABLES)

    # -- writes ----------------------------------------------------------

    def _bump(
        self, conn: psycopg.Connection[Any], user_id: str, changed: Sequence[str] = ()
    ) -> GenerationBump:
        """Advance the store-wide, then the user's counter; log the changed ids."""

        def advance(key: str) -> int:
            row = conn.execute(
                "INSERT INTO generations VALUES (%s, 1) ON CONFLICT (user_id)"
                " DO UPDATE SET generation = generations.generation + 1 RETURNING generation",
                (key,),
            ).fetchone()
            assert row is not None
            return int(row["generation"])

        store_after = advance(_STORE_WIDE)
        after = advance(user_id)
        ids = list(dict.fromkeys(changed))
        if ids:
            conn.cursor().executemany(
                "INSERT INTO changes VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                [(user_id, after, memory_id) for memory_id in ids],
            )
        conn.execute(
            "DELETE FROM changes WHERE user_id = %s AND generation <= %s",
            (user_id, after - CHANGE_LOG_GENERATIONS),
        )
        return GenerationBump(after - 1, after, store_after - 1, store_after)

    def changed_since(self, user_id: str, generation: int) -> builtins.list[str] | None:
        """Ids written after ``generation`` up to the current one; None when the log
        no longer covers them all."""
        with self.db.connection() as conn:
            current = _generation(conn, user_id)
            rows = conn.execute(
                "SELECT generation, memory_id FROM changes WHERE user_id = %s"
                " AND generation > %s AND generation <= %s ORDER BY generation",
                (user_id, generation, current),
            ).fetchall()
        if len({row["generation"] for row in rows}) != current - generation:
            return None
        return list(dict.fromkeys(row["memory_id"] for row in rows))

    def insert(
        self, user_id: str, units: Sequence[MemoryUnit], keys: Sequence[bytes]
    ) -> GenerationBump:
        """Insert new rows and their vector keys; the units must belong to ``user_id``."""
        if len(keys) != len(units):
            raise ValueError("one vector key per memory is required")
        with self.db.writing() as conn:
            cursor = conn.cursor()
            cursor.executemany(
                f"INSERT INTO memories ({', '.join(_COLUMNS)}) VALUES"
                f" ({', '.join('%s' for _ in _COLUMNS)})",
                [_row_values(unit) for unit in units],
            )
            cursor.executemany(
                "INSERT INTO vector_keys VALUES (%s, %s, %s)",
                [(unit.id, user_id, key) for unit, key in zip(units, keys, strict=True)],
            )
            return self._bump(conn, user_id, [unit.id for unit in units])

    def rewrite(self, user_id: str, units: Sequence[MemoryUnit]) -> GenerationBump:
        """Overwrite every column but id and owner; foreign ids match no row."""
        assignments = ", ".join(f"{name} = %s" for name in _COLUMNS[2:])
        with self.db.writing() as conn:
            conn.cursor().executemany(
                f"UPDATE memories SET {assignments} WHERE id = %s AND user_id = %s",
                [(*_row_values(unit)[2:], unit.id, user_id) for unit in units],
            )
            return self._bump(conn, user_id, [unit.id for unit in units])

    def touch(
        self, user_id: str, memory_ids: Sequence[str], at: datetime
    ) -> tuple[int, GenerationBump]:
        """Set the last access to ``at`` and count one more access."""
        with self.db.writing() as conn:
            cursor = conn.execute(
                "UPDATE memories SET last_accessed_at = %s, access_count = access_count + 1"
                " WHERE user_id = %s AND id = ANY(%s)",
                (at.isoformat(), user_id, list(memory_ids)),
            )
            return cursor.rowcount, self._bump(conn, user_id, memory_ids)

    def delete_with_tombstones(self, user_id: str, memory_ids: Sequence[str]) -> GenerationBump:
        """Delete the rows; each tombstone lists every id deleted with it."""
        ids = list(memory_ids)
        now = utcnow().isoformat()
        with self.db.writing() as conn:
            conn.execute("DELETE FROM memories WHERE user_id = %s AND id = ANY(%s)", (user_id, ids))
            conn.execute(
                "DELETE FROM vector_keys WHERE user_id = %s AND id = ANY(%s)", (user_id, ids)
            )
            conn.cursor().executemany(
                "INSERT INTO tombstones VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO UPDATE"
                " SET user_id = excluded.user_id, deleted_at = excluded.deleted_at,"
                " chain_ids = excluded.chain_ids",
                [(deleted, user_id, now, json.dumps(ids)) for deleted in ids],
            )
            return self._bump(conn, user_id, ids)

    def erase_user(self, user_id: str) -> builtins.list[str]:
        """Delete the user's rows and keys in one transaction; tombstones name each id."""
        now = utcnow().isoformat()
        with self.db.writing() as conn:
            ids = [
                row["id"]
                for row in conn.execute(
                    "DELETE FROM memories WHERE user_id = %s RETURNING id", (user_id,)
                ).fetchall()
            ]
            conn.execute("DELETE FROM vector_keys WHERE user_id = %s", (user_id,))
            conn.cursor().executemany(
                "INSERT INTO tombstones VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO UPDATE"
                " SET deleted_at = excluded.deleted_at, chain_ids = excluded.chain_ids",
                [(memory_id, user_id, now, json.dumps([memory_id])) for memory_id in ids],
            )
            self._bump(conn, user_id, ids)
        return ids

    def add_vector_keys(self, user_id: str, keys: dict[str, bytes]) -> dict[str, bytes]:
        """Store keys for live memories of ``user_id`` that have none; the rest are ignored."""
        if not keys:
            return {}
        with self.db.writing() as conn:
            rows = conn.execute(
                "INSERT INTO vector_keys (id, user_id, key)"
                " SELECT m.id, m.user_id, k.key FROM unnest(%s::text[], %s::bytea[]) AS k(id, key)"
                " JOIN memories m ON m.id = k.id AND m.user_id = %s"
                " ON CONFLICT (id) DO NOTHING RETURNING id",
                (list(keys), list(keys.values()), user_id),
            ).fetchall()
        return {row["id"]: keys[row["id"]] for row in rows}

    def record_embedding_model(self, model_id: str, dimension: int) -> None:
        """Write the model id and dimension to ``meta`` (the first node to start wins)."""
        with self.db.writing() as conn:
            conn.cursor().executemany(
                "INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
                [("embedding_model", model_id), ("embedding_dimension", str(dimension))],
            )

    def record_reindex(self, model_id: str, dimension: int) -> None:
        """Relabel every row and ``meta`` with the new model; advance every generation."""
        with self.db.writing() as conn:
            conn.execute("UPDATE memories SET embedding_model = %s", (model_id,))
            conn.cursor().executemany(
                "INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE"
                " SET value = excluded.value",
                [("embedding_model", model_id), ("embedding_dimension", str(dimension))],
            )
            # In the writers' lock order (store-wide first), so no writer deadlocks with this.
            conn.execute(
                "SELECT user_id FROM generations ORDER BY user_id = '' DESC, user_id FOR UPDATE"
            )
            conn.execute("UPDATE generations SET generation = generation + 1")

    # -- reads -----------------------------------------------------------

    def embedding_model(self) -> EmbeddingModelRecord | None:
        """The ``meta`` rows naming the embedding model, if recorded."""
        rows = {r["key"]: r["value"] for r in self._query("SELECT key, value FROM meta")}
        recorded = rows.get("embedding_model")
        if recorded is None:
            return None
        return EmbeddingModelRecord(recorded, rows.get("embedding_dimension"))

    def _query(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[dict[str, Any]]:
        with self.db.connection() as conn:
            return conn.execute(sql, tuple(params)).fetchall()

    def generation(self, user_id: str) -> int:
        """The user's generation; 0 before the first write."""
        with self.db.connection() as conn:
            return _generation(conn, user_id)

    def store_generation(self) -> int:
        """The store-wide generation; 0 before the first write."""
        return self.generation(_STORE_WIDE)

    def get(self, user_id: str, memory_id: str) -> MemoryUnit | None:
        """One row of this user, or None."""
        rows = self._query(f"{_SELECT} WHERE id = %s AND user_id = %s", (memory_id, user_id))
        return _unit_from_row(rows[0]) if rows else None

    def get_many(self, user_id: str, memory_ids: Sequence[str]) -> builtins.list[MemoryUnit]:
        """The live memories of this user among ``memory_ids``."""
        rows = self._query(
            f"{_SELECT} WHERE user_id = %s AND id = ANY(%s)", (user_id, list(memory_ids))
        )
        return [_unit_from_row(row) for row in rows]

    def list(
        self,
        user_id: str,
        status: MemoryStatus | None = None,
        *,
        review_only: bool = False,
        limit: int | None = None,
        offset: int = 0,
    ) -> builtins.list[MemoryUnit]:
        """This user's rows by creation time, then insertion order (a page with ``limit``)."""
        sql = f"{_SELECT} WHERE user_id = %s"
        params: builtins.list[Any] = [user_id]
        if status is not None:
            sql += " AND status = %s"
            params.append(status.value)
        if review_only:
            sql += " AND needs_review"
        sql += " ORDER BY created_at, seq"
        if limit is not None:
            sql += " LIMIT %s OFFSET %s"
            params += [limit, offset]
        return [_unit_from_row(row) for row in self._query(sql, params)]

    def index_rows(self, user_id: str) -> builtins.list[IndexRow]:
        """All the user's rows, oldest first, parsed only as far as ranking needs."""
        with self.db.connection() as conn:
            cursor = conn.cursor(row_factory=tuple_row)
            rows = cursor.execute(
                f"{_SELECT} WHERE user_id = %s ORDER BY created_at, seq", (user_id,)
            ).fetchall()
        return [IndexRow(row) for row in rows]

    def all_memories(self) -> builtins.list[MemoryUnit]:
        """Every row, in insertion order."""
        return [_unit_from_row(row) for row in self._query(f"{_SELECT} ORDER BY seq")]

    def count(self, user_id: str, status: MemoryStatus | None = None) -> int:
        """How many rows this user has, optionally of one status."""
        sql = "SELECT COUNT(*) AS n FROM memories WHERE user_id = %s"
        params: builtins.list[Any] = [user_id]
        if status is not None:
            sql += " AND status = %s"
            params.append(status.value)
        return int(self._query(sql, params)[0]["n"])

    def users(self) -> builtins.list[str]:
        """Distinct owners of rows."""
        return [row["user_id"] for row in self._query("SELECT DISTINCT user_id FROM memories")]

    def chain(self, user_id: str, memory_id: str) -> builtins.list[MemoryUnit]:
        """Follow ``supersedes`` and ``superseded_by`` links both ways, within the user."""
        start = self.get(user_id, memory_id)
        if start is None:
            return []
        seen: dict[str, MemoryUnit] = {start.id: start}
        frontier = [start.id]
        while frontier:
            rows = self._query(
                f"{_SELECT} WHERE user_id = %s AND (id = ANY(%s) OR superseded_by = ANY(%s)"
                " OR supersedes = ANY(%s))",
                (user_id, frontier, frontier, frontier),
            )
            frontier = []
            for row in rows:
                unit = _unit_from_row(row)
                for linked in (unit.id, unit.superseded_by, unit.supersedes):
                    if linked and linked not in seen:
                        frontier.append(linked)
                if unit.id not in seen:
                    seen[unit.id] = unit
                    frontier.append(unit.id)
        return sorted(seen.values(), key=lambda unit: unit.created_at)

    def vector_keys(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, bytes]:
        """Keys of this user's live memories among ``memory_ids``."""
        rows = self._query(
            "SELECT id, key FROM vector_keys WHERE user_id = %s AND id = ANY(%s)",
            (user_id, list(memory_ids)),
        )
        return {row["id"]: bytes(row["key"]) for row in rows}

    def live_ids(self, memory_ids: Sequence[str]) -> set[str]:
        """Ids among ``memory_ids`` that still have a row."""
        rows = self._query("SELECT id FROM memories WHERE id = ANY(%s)", (list(memory_ids),))
        return {row["id"] for row in rows}

    def foreign_ids(self, user_id: str, memory_ids: Sequence[str]) -> set[str]:
        """Ids among ``memory_ids`` held by another user's memory or tombstone."""
        ids = list(memory_ids)
        rows = self._query(
            "SELECT id FROM memories WHERE id = ANY(%s) AND user_id != %s"
            " UNION SELECT id FROM tombstones WHERE id = ANY(%s) AND user_id != %s",
            (ids, user_id, ids, user_id),
        )
        return {row["id"] for row in rows}

    def is_tombstoned(self, user_id: str, memory_id: str) -> bool:
        """Whether a tombstone of this user names ``memory_id``."""
        rows = self._query(
            "SELECT 1 AS found FROM tombstones WHERE id = %s AND user_id = %s",
            (memory_id, user_id),
        )
        return bool(rows)


def _generation(conn: psycopg.Connection[Any], user_id: str) -> int:
    row = conn.execute(
        "SELECT generation FROM generations WHERE user_id = %s", (user_id,)
    ).fetchone()
    return int(row["generation"]) if row else 0
