"""The row store in SQL that SQLite and Postgres both run, and its SQLite backend."""

from __future__ import annotations

import builtins
import fcntl
import hashlib
import hmac
import json
import secrets
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from memora.models import MemoryStatus, MemoryUnit, utcnow
from memora.storage.db import Database, SqlDatabase
from memora.storage.rows import (
    CHANGE_LOG_GENERATIONS,
    COLUMNS,
    SCRUBBED_TABLES,
    SELECT,
    SQLITE_ID_BATCH,
    SQLITE_SCHEMA,
    STORE_WIDE,
    EmbeddingModelRecord,
    GenerationBump,
    IndexRow,
    row_values,
    unit_from_row,
)


def _like_pair(field: str, value: str) -> str:
    """A LIKE pattern (escape ``!``) for ``"field": "value"`` as the metadata JSON spells it."""
    pair = f"{json.dumps(field, ensure_ascii=False)}: {json.dumps(value, ensure_ascii=False)}"
    escaped = pair.replace("!", "!!").replace("%", "!%").replace("_", "!_")
    return f"%{escaped}%"


# ---------------------------------------------------------------- sql
class SqlRowStore(ABC):
    """:class:`RowStore` in SQL both engines run: statements use ``?`` placeholders, which
    ``PostgresDatabase`` translates, and rows are read by column name.

    A backend supplies the connection, the vector lock and the few statements its
    dialect spells differently: how a list of ids is bound, how many fit in one
    statement, which column orders rows by insertion.
    """

    insertion_order: str
    """Column that orders rows as they were inserted."""
    ids_per_statement: int
    """Most ids bound in one statement (the rest go in further statements)."""
    select: str = SELECT
    """The statement that reads whole memories (``COLUMNS`` first), before its conditions."""
    rewritten_columns: tuple[str, ...] = COLUMNS[2:]
    """What :meth:`rewrite` overwrites."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        self._vector_thread_lock = threading.Lock()
        self._tag_key: bytes | None = None

    @abstractmethod
    def vector_lock(self) -> AbstractContextManager[None]:
        """Held across processes while vectors are checked and written, or deleted."""

    @abstractmethod
    def _positional_rows(self, sql: str, params: Sequence[Any]) -> Sequence[Sequence[Any]]:
        """A query's rows as value sequences in column order (what :class:`IndexRow` takes)."""

    def _id_in(self, column: str, ids: Sequence[str]) -> tuple[str, builtins.list[Any]]:
        """The condition that ``column`` is one of ``ids``, and its parameters."""
        return f"{column} IN ({', '.join('?' for _ in ids)})", list(ids)

    @abstractmethod
    def _lock_all_generations(self, conn: Any) -> None:
        """Lock every generation row in the writers' order before bumping them all."""

    def _stored_values(
        self, units: Sequence[MemoryUnit], keys: Sequence[bytes]
    ) -> builtins.list[tuple[Any, ...]]:
        """The rows :meth:`insert` writes, in ``COLUMNS`` order."""
        return [row_values(unit) for unit in units]

    def _rewritten_values(
        self, conn: Any, user_id: str, units: Sequence[MemoryUnit]
    ) -> builtins.list[tuple[Any, ...]]:
        """The rows :meth:`rewrite` writes, in ``COLUMNS`` order (inside its transaction)."""
        return [row_values(unit) for unit in units]

    def _keys_deleted(self, conn: Any, user_id: str) -> None:
        """Called inside a transaction that deleted keys of ``user_id`` (Postgres records
        the key partition to rewrite; SQLite's ``secure_delete`` zeroed them already)."""
        return None

    def _units(self, sql: str, params: Sequence[Any]) -> builtins.list[MemoryUnit]:
        """The memories a :attr:`select` statement reads."""
        return [unit_from_row(row) for row in self.db.query(sql, tuple(params))]

    def _batches(self, ids: Sequence[str]) -> Iterator[builtins.list[str]]:
        for start in range(0, len(ids), self.ids_per_statement):
            yield list(ids[start : start + self.ids_per_statement])

    def close(self) -> None:
        """Release the database."""
        self.db.close()

    def scrub(self) -> bool:
        """Make deleted rows unreadable from storage as far as the engine can.

        SQLite's ``secure_delete`` zeroed them already and its write-ahead log is
        truncated; Postgres VACUUMs the tables so the dead tuples are pruned.
        """
        return self.db.reclaim(*SCRUBBED_TABLES)

    def user_tag(self, user_id: str, conn: Any = None) -> str:
        """A keyed one-way digest of ``user_id``: Chroma's label for the user's vectors, and
        all that tombstones and generations keep of a user once erased.

        The key (``meta``, drawn by the first process) stays with the rows, so the store
        can still tell an erased user's tombstones. Whoever reads the rows can test a
        guessed id against a digest; Chroma's files (perhaps on another machine) alone cannot.
        """
        if self._tag_key is None:
            if conn is None:
                with self.db.transaction() as own:
                    self._tag_key = self._load_tag_key(own)
            else:
                self._tag_key = self._load_tag_key(conn)
        digest = hmac.new(self._tag_key, user_id.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return f"user-{digest.hexdigest()[:40]}"

    @staticmethod
    def _load_tag_key(conn: Any) -> bytes:
        conn.execute(
            "INSERT INTO meta VALUES ('user_tag_key', ?) ON CONFLICT (key) DO NOTHING",
            (secrets.token_hex(32),),
        )
        rows = conn.execute("SELECT value FROM meta WHERE key = 'user_tag_key'").fetchall()
        return bytes.fromhex(rows[0]["value"])

    # -- writes ----------------------------------------------------------

    def _bump(self, conn: Any, user_id: str, changed: Sequence[str] = ()) -> GenerationBump:
        """Advance the store-wide, then the user's counter inside the write's transaction.

        On Postgres the upserted rows stay locked until commit, so concurrent
        writers are ordered by them (always store-wide first, so two writers never
        wait on each other crosswise). The ids the write changed are logged under
        the new generation, so a process holding an older generation can patch its
        index instead of reloading it.
        """

        def advance(key: str, retired: str) -> int:
            # A user erased before starts past where the erased counter stopped, so no
            # process mistakes the new memories for the index it cached before the erase.
            rows = conn.execute(
                "INSERT INTO generations VALUES (?, 1 + COALESCE((SELECT generation FROM"
                " generations WHERE user_id = ?), 0)) ON CONFLICT (user_id)"
                " DO UPDATE SET generation = generations.generation + 1 RETURNING generation",
                (key, retired),
            ).fetchall()
            return int(rows[0]["generation"])

        store_after = advance(STORE_WIDE, STORE_WIDE)
        after = advance(user_id, self.user_tag(user_id, conn))
        ids = list(dict.fromkeys(changed))
        if ids:
            conn.executemany(
                "INSERT INTO changes VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                [(user_id, after, memory_id) for memory_id in ids],
            )
        conn.execute(
            "DELETE FROM changes WHERE user_id = ? AND generation <= ?",
            (user_id, after - CHANGE_LOG_GENERATIONS),
        )
        return GenerationBump(after - 1, after, store_after - 1, store_after)

    def insert(
        self,
        user_id: str,
        units: Sequence[MemoryUnit],
        keys: Sequence[bytes],
        sentences: Sequence[bytes | None] | None = None,
    ) -> GenerationBump:
        """Insert new rows and their vector keys (with each memory's sentence vector, where
        given); the units must belong to ``user_id``."""
        if len(keys) != len(units):
            raise ValueError("one vector key per memory is required")
        sentences = sentences if sentences is not None else [None] * len(units)
        if len(sentences) != len(units):
            raise ValueError("one sentence vector (or None) per memory is required")
        with self.db.transaction() as conn:
            conn.executemany(
                f"INSERT INTO memories ({', '.join(COLUMNS)}) VALUES"
                f" ({', '.join('?' for _ in COLUMNS)})",
                self._stored_values(units, keys),
            )
            conn.executemany(
                "INSERT INTO vector_keys (id, user_id, key, sentence) VALUES (?, ?, ?, ?)",
                [
                    (unit.id, user_id, key, sentence)
                    for unit, key, sentence in zip(units, keys, sentences, strict=True)
                ],
            )
            return self._bump(conn, user_id, [unit.id for unit in units])

    def rewrite(self, user_id: str, units: Sequence[MemoryUnit]) -> GenerationBump:
        """Overwrite every column but id and owner; foreign ids match no row."""
        assignments = ", ".join(f"{name} = ?" for name in self.rewritten_columns)
        positions = [COLUMNS.index(name) for name in self.rewritten_columns]
        with self.db.transaction() as conn:
            conn.executemany(
                f"UPDATE memories SET {assignments} WHERE id = ? AND user_id = ?",
                [
                    (*(values[i] for i in positions), unit.id, user_id)
                    for unit, values in zip(
                        units, self._rewritten_values(conn, user_id, units), strict=True
                    )
                ],
            )
            return self._bump(conn, user_id, [unit.id for unit in units])

    def touch(
        self, user_id: str, memory_ids: Sequence[str], at: datetime
    ) -> tuple[int, GenerationBump]:
        """Set the last access to ``at`` and count one more access."""
        touched = 0
        with self.db.transaction() as conn:
            for batch in self._batches(memory_ids):
                condition, ids = self._id_in("id", batch)
                cursor = conn.execute(
                    "UPDATE memories SET last_accessed_at = ?, access_count = access_count + 1"
                    f" WHERE user_id = ? AND {condition}",
                    (at.isoformat(), user_id, *ids),
                )
                touched += cursor.rowcount
            return touched, self._bump(conn, user_id, memory_ids)

    def delete_with_tombstones(self, user_id: str, memory_ids: Sequence[str]) -> GenerationBump:
        """Delete the rows; each tombstone lists every id deleted with it."""
        chain_ids = json.dumps(list(memory_ids))
        now = utcnow().isoformat()
        with self.db.transaction() as conn:
            for batch in self._batches(memory_ids):
                condition, ids = self._id_in("id", batch)
                for table in ("memories", "vector_keys"):
                    conn.execute(
                        f"DELETE FROM {table} WHERE user_id = ? AND {condition}", (user_id, *ids)
                    )
            self._keys_deleted(conn, user_id)
            self._write_tombstones(
                conn, [(deleted, user_id, now, chain_ids) for deleted in memory_ids]
            )
            return self._bump(conn, user_id, memory_ids)

    def erase_user(self, user_id: str) -> builtins.list[str]:
        """Delete the user's rows and keys in one transaction; tombstones name each id.

        Nothing keeps the user id: tombstones (old and new) and the generation counter
        are moved to the user's tag, and the change log's entries are deleted.
        """
        now = utcnow().isoformat()
        tag = self.user_tag(user_id)
        with self.db.transaction() as conn:
            ids = [
                row["id"]
                for row in conn.execute(
                    "DELETE FROM memories WHERE user_id = ? RETURNING id", (user_id,)
                ).fetchall()
            ]
            conn.execute("DELETE FROM vector_keys WHERE user_id = ?", (user_id,))
            self._keys_deleted(conn, user_id)
            conn.execute("UPDATE tombstones SET user_id = ? WHERE user_id = ?", (tag, user_id))
            self._write_tombstones(
                conn, [(memory_id, tag, now, json.dumps([memory_id])) for memory_id in ids]
            )
            self._retire_generation(conn, user_id, tag)
        return ids

    def _retire_generation(self, conn: Any, user_id: str, tag: str) -> None:
        """Move the user's counter, advanced once, to ``tag``; drop their change log."""
        conn.execute(
            "INSERT INTO generations VALUES (?, 1) ON CONFLICT (user_id)"
            " DO UPDATE SET generation = generations.generation + 1",
            (STORE_WIDE,),
        )
        conn.execute(
            "INSERT INTO generations SELECT ?, generation + 1 FROM generations WHERE user_id = ?"
            " ON CONFLICT (user_id) DO UPDATE SET generation = excluded.generation",
            (tag, user_id),
        )
        conn.execute("DELETE FROM generations WHERE user_id = ?", (user_id,))
        conn.execute("DELETE FROM changes WHERE user_id = ?", (user_id,))

    def _write_tombstones(self, conn: Any, tombstones: builtins.list[tuple[str, ...]]) -> None:
        if tombstones:
            conn.executemany(
                "INSERT INTO tombstones VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE"
                " SET user_id = excluded.user_id, deleted_at = excluded.deleted_at,"
                " chain_ids = excluded.chain_ids",
                tombstones,
            )

    def add_vector_keys(self, user_id: str, keys: dict[str, bytes]) -> dict[str, bytes]:
        """Store keys for live memories of ``user_id`` that have none; the rest are ignored."""
        stored: dict[str, bytes] = {}
        with self.db.transaction() as conn:
            for memory_id, key in keys.items():
                cursor = conn.execute(
                    "INSERT INTO vector_keys (id, user_id, key)"
                    " SELECT id, user_id, ? FROM memories WHERE id = ? AND user_id = ?"
                    " ON CONFLICT (id) DO NOTHING",
                    (key, memory_id, user_id),
                )
                if cursor.rowcount:
                    stored[memory_id] = key
        return stored

    def record_embedding_model(self, model_id: str, dimension: int) -> None:
        """Write the model id and dimension to ``meta`` (the first process to start wins)."""
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO meta VALUES ('embedding_model', ?), ('embedding_dimension', ?)"
                " ON CONFLICT (key) DO NOTHING",
                (model_id, str(dimension)),
            )

    def record_reindex(self, model_id: str, dimension: int) -> None:
        """Relabel every row and ``meta`` with the new model; advance every generation."""
        with self.db.transaction() as conn:
            conn.execute("UPDATE memories SET embedding_model = ?", (model_id,))
            conn.execute(
                "INSERT INTO meta VALUES ('embedding_model', ?), ('embedding_dimension', ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (model_id, str(dimension)),
            )
            self._lock_all_generations(conn)
            conn.execute("UPDATE generations SET generation = generation + 1")

    # -- reads -----------------------------------------------------------

    def changed_since(self, user_id: str, generation: int) -> builtins.list[str] | None:
        """Ids written after ``generation`` up to the current one; None when the log
        no longer covers them all."""
        current = self.generation(user_id)
        rows = self.db.query(
            "SELECT generation, memory_id FROM changes WHERE user_id = ?"
            " AND generation > ? AND generation <= ? ORDER BY generation",
            (user_id, generation, current),
        )
        if len({row["generation"] for row in rows}) != current - generation:
            return None
        return list(dict.fromkeys(row["memory_id"] for row in rows))

    def embedding_model(self) -> EmbeddingModelRecord | None:
        """The ``meta`` rows naming the embedding model, if recorded."""
        rows = {r["key"]: r["value"] for r in self.db.query("SELECT key, value FROM meta")}
        recorded = rows.get("embedding_model")
        if recorded is None:
            return None
        return EmbeddingModelRecord(recorded, rows.get("embedding_dimension"))

    def generation(self, user_id: str) -> int:
        """The user's generation; 0 before the first write."""
        rows = self.db.query("SELECT generation FROM generations WHERE user_id = ?", (user_id,))
        return int(rows[0]["generation"]) if rows else 0

    def store_generation(self) -> int:
        """The store-wide generation; 0 before the first write."""
        return self.generation(STORE_WIDE)

    def get(self, user_id: str, memory_id: str) -> MemoryUnit | None:
        """One row of this user, or None."""
        units = self._units(f"{self.select} WHERE id = ? AND user_id = ?", (memory_id, user_id))
        return units[0] if units else None

    def get_many(self, user_id: str, memory_ids: Sequence[str]) -> builtins.list[MemoryUnit]:
        """The live memories of this user among ``memory_ids``."""
        found: builtins.list[MemoryUnit] = []
        for batch in self._batches(memory_ids):
            condition, ids = self._id_in("id", batch)
            found += self._units(
                f"{self.select} WHERE user_id = ? AND {condition}", (user_id, *ids)
            )
        return found

    def list(
        self,
        user_id: str,
        status: MemoryStatus | None = None,
        *,
        review_only: bool = False,
        limit: int | None = None,
        offset: int = 0,
        metadata: tuple[str, str] | None = None,
    ) -> builtins.list[MemoryUnit]:
        """This user's rows by creation time, then insertion order (a page with ``limit``)."""
        sql = f"{self.select} WHERE user_id = ?"
        params: builtins.list[Any] = [user_id]
        if status is not None:
            sql += " AND status = ?"
            params.append(status.value)
        if review_only:
            sql += " AND needs_review"
        if metadata is not None:
            # The column is JSON text in both engines: LIKE narrows, the parsed value decides.
            sql += " AND metadata LIKE ? ESCAPE '!'"
            params.append(_like_pair(*metadata))
        sql += f" ORDER BY created_at, {self.insertion_order}"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        units = self._units(sql, params)
        if metadata is not None:
            field, value = metadata
            units = [unit for unit in units if unit.metadata.get(field) == value]
        return units

    def index_rows(self, user_id: str) -> builtins.list[IndexRow]:
        """All the user's rows, oldest first, parsed only as far as ranking needs."""
        rows = self._positional_rows(
            f"{self.select} WHERE user_id = ? ORDER BY created_at, {self.insertion_order}",
            (user_id,),
        )
        return [IndexRow(row) for row in rows]

    def all_memories(self) -> builtins.list[MemoryUnit]:
        """Every row, in insertion order."""
        return self._units(f"{self.select} ORDER BY {self.insertion_order}", ())

    def count(self, user_id: str, status: MemoryStatus | None = None) -> int:
        """How many rows this user has, optionally of one status."""
        sql = "SELECT COUNT(*) AS n FROM memories WHERE user_id = ?"
        params: builtins.list[Any] = [user_id]
        if status is not None:
            sql += " AND status = ?"
            params.append(status.value)
        return int(self.db.query(sql, params)[0]["n"])

    def users(self) -> builtins.list[str]:
        """Distinct owners of rows."""
        return [row["user_id"] for row in self.db.query("SELECT DISTINCT user_id FROM memories")]

    def chain(self, user_id: str, memory_id: str) -> builtins.list[MemoryUnit]:
        """Follow ``supersedes`` and ``superseded_by`` links both ways, within the user."""
        start = self.get(user_id, memory_id)
        if start is None:
            return []
        seen: dict[str, MemoryUnit] = {start.id: start}
        frontier = [start.id]
        asked: set[str] = set()  # a link to an id the user does not hold is asked after once
        while frontier:
            asked.update(frontier)
            conditions = [
                self._id_in(column, frontier) for column in ("id", "superseded_by", "supersedes")
            ]
            units = self._units(
                f"{self.select} WHERE user_id = ? AND"
                f" ({' OR '.join(condition for condition, _ in conditions)})",
                [user_id, *(value for _, values in conditions for value in values)],
            )
            frontier = []
            for unit in units:
                seen.setdefault(unit.id, unit)
                for linked in (unit.id, unit.superseded_by, unit.supersedes):
                    if linked and linked not in asked and linked not in frontier:
                        frontier.append(linked)
        return sorted(seen.values(), key=lambda unit: unit.created_at)

    def replaced(self, user_id: str, memory_id: str) -> builtins.list[MemoryUnit]:
        """The memory and every version it replaced, however far back: those whose
        ``superseded_by`` names it or one of them. Newer versions are not among them."""
        start = self.get(user_id, memory_id)
        if start is None:
            return []
        found: dict[str, MemoryUnit] = {start.id: start}
        frontier = [start.id]
        while frontier:
            condition, ids = self._id_in("superseded_by", frontier)
            units = self._units(f"{self.select} WHERE user_id = ? AND {condition}", [user_id, *ids])
            frontier = [unit.id for unit in units if unit.id not in found]
            found.update((unit.id, unit) for unit in units)
        return sorted(found.values(), key=lambda unit: unit.created_at)

    def vector_keys(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, bytes]:
        """Keys of this user's live memories among ``memory_ids``."""
        found: dict[str, bytes] = {}
        for batch in self._batches(memory_ids):
            condition, ids = self._id_in("id", batch)
            for row in self.db.query(
                f"SELECT id, key FROM vector_keys WHERE user_id = ? AND {condition}",
                (user_id, *ids),
            ):
                found[row["id"]] = bytes(row["key"])
        return found

    def sentence_vectors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, bytes]:
        """Sentence vectors kept with the keys of this user's live memories among the ids."""
        found: dict[str, bytes] = {}
        for batch in self._batches(memory_ids):
            condition, ids = self._id_in("id", batch)
            for row in self.db.query(
                f"SELECT id, sentence FROM vector_keys WHERE user_id = ? AND {condition}"
                " AND sentence IS NOT NULL",
                (user_id, *ids),
            ):
                found[row["id"]] = bytes(row["sentence"])
        return found

    def live_ids(self, memory_ids: Sequence[str]) -> set[str]:
        """Ids among ``memory_ids`` that still have a row."""
        live: set[str] = set()
        for batch in self._batches(memory_ids):
            condition, ids = self._id_in("id", batch)
            rows = self.db.query(f"SELECT id FROM memories WHERE {condition}", ids)
            live.update(row["id"] for row in rows)
        return live

    def foreign_ids(self, user_id: str, memory_ids: Sequence[str]) -> set[str]:
        """Ids among ``memory_ids`` held by another user's memory or tombstone."""
        taken: set[str] = set()
        for batch in self._batches(memory_ids):
            condition, ids = self._id_in("id", batch)
            rows = self.db.query(
                f"SELECT id FROM memories WHERE {condition} AND user_id != ?"
                f" UNION SELECT id FROM tombstones WHERE {condition} AND user_id NOT IN (?, ?)",
                [*ids, user_id, *ids, user_id, self.user_tag(user_id)],
            )
            taken.update(row["id"] for row in rows)
        return taken

    def is_tombstoned(self, user_id: str, memory_id: str) -> bool:
        """Whether a tombstone of this user (or of this user erased) names ``memory_id``."""
        rows = self.db.query(
            "SELECT 1 AS found FROM tombstones WHERE id = ? AND user_id IN (?, ?)",
            (memory_id, user_id, self.user_tag(user_id)),
        )
        return bool(rows)


class SqliteRowStore(SqlRowStore):
    """:class:`RowStore` on one SQLite file (``memora.db`` in the data dir)."""

    db: Database
    insertion_order = "rowid"
    ids_per_statement = SQLITE_ID_BATCH

    def __init__(self, path: Path) -> None:
        super().__init__(Database(path, SQLITE_SCHEMA))
        self._vector_lock_path = path.with_name(path.name + ".vector-lock")
        self._add_sentence_column()

    def _add_sentence_column(self) -> None:
        """Give a store written before sentence vectors were kept their column."""
        if self._has_sentence_column(self.db.query("PRAGMA table_info(vector_keys)")):
            return
        with self.db.transaction() as conn:  # another process may have added it meanwhile
            if not self._has_sentence_column(conn.execute("PRAGMA table_info(vector_keys)")):
                conn.execute("ALTER TABLE vector_keys ADD COLUMN sentence BLOB")

    @staticmethod
    def _has_sentence_column(columns: Iterable[Any]) -> bool:
        return any(column["name"] == "sentence" for column in columns)

    @contextmanager
    def vector_lock(self) -> Iterator[None]:
        """An exclusive ``flock`` on a file beside the database (processes on one machine)."""
        with self._vector_thread_lock, self._vector_lock_path.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _positional_rows(self, sql: str, params: Sequence[Any]) -> Sequence[Sequence[Any]]:
        """``sqlite3.Row`` is already a sequence in column order."""
        return self.db.query(sql, tuple(params))

    def _lock_all_generations(self, conn: Any) -> None:
        """Nothing to lock: SQLite's write transactions already exclude each other."""
