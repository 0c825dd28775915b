"""The row store on Postgres: one database shared by every node that serves the same users.

The SQL is :class:`memora.storage.rows.SqlRowStore`'s, shared with SQLite; what differs is
how writers on several machines are kept in step:

- every write bumps the store-wide generation and then the user's inside its
  own transaction, with ``INSERT … ON CONFLICT DO UPDATE … RETURNING``: the row
  locks order concurrent writers (always store-wide first, so two writers never
  wait on each other crosswise), and the generations they see are the order in
  which they commit;
- the change log is the same table, so a node that missed writes patches its
  ranking cache from it exactly as a second process on one machine does;
- the cross-node vector lock is a session-level advisory lock
  (``pg_advisory_lock``) instead of a file lock;
- memory text is sealed (crypto-shredding). Postgres never zeroes a deleted row's
  bytes: VACUUM compacts a page and leaves the freed bytes in the file. So
  ``memories.content`` holds the text sealed under the memory's own key
  (``memora.storage.sealing.seal_text``), the same key that seals its vector, and
  every key lives in ``vector_keys`` alone. After a forget or an erase
  :meth:`scrub` rewrites the part of that table that held the keys with
  ``VACUUM FULL`` (a new file; the old one is truncated and unlinked), so no table
  or index file keeps a deleted key, and what the other files keep of the text is
  ciphertext without a key. A rewrite costs time in proportion to the table (about
  75 ms per 10,000 keys measured here) and holds off every reader of it meanwhile,
  so the table is hash-partitioned by user into ``KEY_PARTITIONS`` parts and a
  deletion rewrites only its user's part.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg

from memora.errors import StoreError
from memora.models import MemoryUnit
from memora.storage.postgres import PostgresDatabase
from memora.storage.rows import (
    COLUMNS,
    ColumnTypes,
    GenerationBump,
    IndexRow,
    row_values,
    table_statements,
)
from memora.storage.sealing import TEXT_FORMAT, seal_text, unseal_text
from memora.storage.sql_rows import SqlRowStore

SCHEMA_VERSION = 2
_CONTENT = COLUMNS.index("content")
KEY_TABLE = "vector_keys"
"""The one table holding memory keys: its part is rewritten (not just vacuumed) after
every deletion."""
KEY_PARTITIONS = 64
_VECTOR_LOCK = 0x6D656D6F7261_01
"""Advisory lock id of the vector lock (distinct from the schema lock)."""

_SCHEMA = [
    *table_statements(
        ColumnTypes(
            insertion_sequence="seq BIGSERIAL UNIQUE,\n    ",
            real="DOUBLE PRECISION",
            flag="BOOLEAN NOT NULL DEFAULT FALSE",
            counter="BIGINT",
            bytes="BYTEA",
        )
    ),
    "CREATE INDEX IF NOT EXISTS memories_user_order ON memories (user_id, created_at, seq)",
]


def _seal_plain_texts(conn: psycopg.Connection[Any]) -> None:
    """Seal every stored text that has a key (a store of schema 1 held them plain).

    A memory without a key keeps its text plain until it gets one
    (:meth:`PostgresRowStore.add_vector_keys`); its vector in Chroma is plain too.
    """
    rows = conn.execute(
        "SELECT m.id, m.content, k.key FROM memories m JOIN vector_keys k ON k.id = m.id"
    ).fetchall()
    plain = [row for row in rows if not bytes(row["content"]).startswith(bytes([TEXT_FORMAT]))]
    if plain:
        conn.cursor().executemany(
            "UPDATE memories SET content = %s WHERE id = %s",
            [
                (seal_text(bytes(row["content"]).decode("utf-8"), row["key"]), row["id"])
                for row in plain
            ],
        )


_SEALED_TEXT: list[str | Callable[[psycopg.Connection[Any]], None]] = [
    # The keys move to a partitioned table; dropping the old one unlinks its file, and with
    # it the keys of memories forgotten before.
    "ALTER TABLE vector_keys RENAME TO vector_keys_unpartitioned",
    "ALTER INDEX vector_keys_pkey RENAME TO vector_keys_unpartitioned_pkey",
    "CREATE TABLE vector_keys (id TEXT NOT NULL, user_id TEXT NOT NULL, key BYTEA NOT NULL,"
    " PRIMARY KEY (user_id, id)) PARTITION BY HASH (user_id)",
    *(
        f"CREATE TABLE {KEY_TABLE}_{n} PARTITION OF {KEY_TABLE}"
        f" FOR VALUES WITH (MODULUS {KEY_PARTITIONS}, REMAINDER {n})"
        for n in range(KEY_PARTITIONS)
    ),
    "INSERT INTO vector_keys SELECT id, user_id, key FROM vector_keys_unpartitioned",
    "DROP TABLE vector_keys_unpartitioned",
    # Rewriting the column gives the table a new file: the plain texts' old file is unlinked.
    "ALTER TABLE memories ALTER COLUMN content TYPE BYTEA USING convert_to(content, 'UTF8')",
    # ANALYZE would copy sample values into pg_statistic, a table no deletion rewrites.
    "ALTER TABLE memories ALTER COLUMN content SET STATISTICS 0",
    "ALTER TABLE vector_keys ALTER COLUMN key SET STATISTICS 0",
    _seal_plain_texts,
    "CREATE OR REPLACE VIEW keyed_memories AS SELECT memories.*, vector_keys.key AS sealing_key"
    " FROM memories LEFT JOIN vector_keys"
    " ON vector_keys.user_id = memories.user_id AND vector_keys.id = memories.id",
]


class PostgresRowStore(SqlRowStore):
    """:class:`memora.storage.rows.RowStore` on a shared Postgres database."""

    db: PostgresDatabase
    insertion_order = "seq"
    ids_per_statement = sys.maxsize
    """Ids are bound as one array parameter, so any number fits in one statement."""

    select = f"SELECT {', '.join(COLUMNS)}, sealing_key FROM keyed_memories"
    rewritten_columns = tuple(name for name in COLUMNS[2:] if name != "content")
    """A memory's text never changes once stored, so a rewrite needs no key."""

    def __init__(self, db: PostgresDatabase) -> None:
        super().__init__(db)
        self._unshredded: set[str] = set()
        """Users whose keys this process deleted and whose key part is not yet rewritten."""
        if db.ensure_schema("rows", SCHEMA_VERSION, [*_SCHEMA, *_SEALED_TEXT]):
            # The sealing left the plain texts in dead tuples of the new file.
            db.rewrite("memories")

    def delete_with_tombstones(self, user_id: str, memory_ids: Sequence[str]) -> GenerationBump:
        self._unshredded.add(user_id)
        return super().delete_with_tombstones(user_id, memory_ids)

    def erase_user(self, user_id: str) -> builtins.list[str]:
        self._unshredded.add(user_id)
        return super().erase_user(user_id)

    def scrub(self) -> bool:
        """Rewrite the key parts that held deleted keys, so they leave no file.

        What the other tables' free space keeps of a deleted memory is ciphertext without
        a key and ids, so they are left to autovacuum (a VACUUM of ``memories`` and
        ``changes`` would add about 30 ms to a forget at 10,000 memories).
        """
        users = set(self._unshredded)
        if not users:
            return True
        parts = [
            row[0]
            for row in self.db.query_tuples(
                f"SELECT DISTINCT '{KEY_TABLE}_' || r FROM unnest(?::text[]) AS u(name),"
                f" generate_series(0, {KEY_PARTITIONS - 1}) AS r"
                f" WHERE satisfies_hash_partition('{KEY_TABLE}'::regclass, {KEY_PARTITIONS},"
                " r, u.name)",
                (list(users),),
            )
        ]
        if not self.db.rewrite(*parts):
            return False
        self._unshredded -= users
        return True

    def _stored_values(
        self, units: Sequence[MemoryUnit], keys: Sequence[bytes]
    ) -> builtins.list[tuple[Any, ...]]:
        """Rows with the text sealed under the memory's key."""
        rows = []
        for unit, key in zip(units, keys, strict=True):
            values = row_values(unit)
            rows.append((*values[:_CONTENT], seal_text(unit.content, key), *values[_CONTENT + 1 :]))
        return rows

    def _units(self, sql: str, params: Sequence[Any]) -> builtins.list[MemoryUnit]:
        return [IndexRow(values).unit() for values in self._positional_rows(sql, params)]

    def add_vector_keys(self, user_id: str, keys: dict[str, bytes]) -> dict[str, bytes]:
        """Store keys for live memories that have none, and seal their texts under them."""
        stored: dict[str, bytes] = {}
        with self.db.writing() as conn:
            for memory_id, key in keys.items():
                cursor = conn.execute(
                    "INSERT INTO vector_keys SELECT id, user_id, %s FROM memories"
                    " WHERE id = %s AND user_id = %s ON CONFLICT (user_id, id) DO NOTHING",
                    (key, memory_id, user_id),
                )
                if cursor.rowcount:
                    stored[memory_id] = key
            if stored:
                rows = conn.execute(
                    "SELECT id, content FROM memories WHERE id = ANY(%s) FOR UPDATE",
                    (list(stored),),
                ).fetchall()
                conn.cursor().executemany(
                    "UPDATE memories SET content = %s WHERE id = %s",
                    [
                        (seal_text(unseal_text(row["content"], None), stored[row["id"]]), row["id"])
                        for row in rows
                        if not bytes(row["content"]).startswith(bytes([TEXT_FORMAT]))
                    ],
                )
        return stored

    @contextmanager
    def vector_lock(self) -> Iterator[None]:
        """A session advisory lock, held on one pooled connection: every node waits on it."""
        with self._vector_thread_lock, self.db.connection() as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (_VECTOR_LOCK,))
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (_VECTOR_LOCK,))

    def _positional_rows(self, sql: str, params: Sequence[Any]) -> Sequence[Sequence[Any]]:
        """Tuples rather than the pool's dicts (ranking a large user reads every row), each
        with its text unsealed and without its key (a :attr:`select` row ends with it)."""
        opened = []
        for row in self.db.query_tuples(sql, params):
            try:
                content = unseal_text(row[_CONTENT], row[-1])
            except ValueError as error:
                raise StoreError(
                    f"database {self.db.description}: memory {row[0]}: {error}"
                ) from None
            opened.append((*row[:_CONTENT], content, *row[_CONTENT + 1 : -1]))
        return opened

    def _id_in(self, column: str, ids: Sequence[str]) -> tuple[str, builtins.list[Any]]:
        """One array parameter, so the statement's text is the same for any number of ids."""
        return f"{column} = ANY(?)", [list(ids)]

    def _lock_all_generations(self, conn: Any) -> None:
        """Take the generation rows in the writers' order (store-wide first), so no
        writer deadlocks with a bump of them all."""
        conn.execute(
            "SELECT user_id FROM generations ORDER BY user_id = '' DESC, user_id FOR UPDATE"
        )
