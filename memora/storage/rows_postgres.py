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
  (``memora.storage.sealing.seal_text``), the same key that seals its vector,
  ``memories.metadata`` too (``memora.storage.user_keys.seal_field``), and every
  key lives in ``vector_keys`` alone. A deletion records the user's part of that
  table in ``pending_rewrites`` in its own transaction; after a forget or an erase
  (or at the next open, if the process died first) :meth:`scrub` rewrites the part
  that held the keys with
  ``VACUUM FULL`` (a new file; the old one is truncated and unlinked), so no table
  or index file keeps a deleted key, and what the other files keep of the text is
  ciphertext without a key. The rewrite first waits for the transactions older than the
  deletion, which would have it copy the deleted key (``memora.storage.key_rewrites``).
  A rewrite costs time in proportion to the table (about
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
from memora.models import MemoryStatus, MemoryUnit
from memora.storage.key_rewrites import DELETED_BY, ensure_pending_table, older_transactions_ended
from memora.storage.postgres import PostgresDatabase
from memora.storage.rows import (
    COLUMNS,
    ColumnTypes,
    IndexRow,
    row_values,
    table_statements,
)
from memora.storage.sealing import TEXT_FORMAT, seal_text, unseal_text
from memora.storage.sql_rows import SqlRowStore
from memora.storage.user_keys import (
    KEY_PARTITIONS,
    KEY_TABLE,
    is_sealed,
    mark_rewrite,
    open_field,
    seal_field,
)

SCHEMA_VERSION = 5
_CONTENT = COLUMNS.index("content")
_METADATA = COLUMNS.index("metadata")
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


def _seal_plain_metadata(conn: psycopg.Connection[Any]) -> None:
    """Seal the metadata of every keyed memory (a store of schema 2 kept it plain)."""
    rows = conn.execute(
        "SELECT m.id, m.metadata, k.key FROM memories m"
        " JOIN vector_keys k ON k.user_id = m.user_id AND k.id = m.id"
        " WHERE m.metadata NOT LIKE 'sealed:%%'"
    ).fetchall()
    if rows:
        conn.cursor().executemany(
            "UPDATE memories SET metadata = %s WHERE id = %s",
            [(seal_field(row["metadata"], bytes(row["key"])), row["id"]) for row in rows],
        )


_SEALED_FIELDS: list[str | Callable[[psycopg.Connection[Any]], None]] = [
    # Key partitions whose deleted keys wait for their rewrite (a process killed between
    # a forget's commit and its rewrite leaves the record; the next open finishes it).
    ensure_pending_table,
    "ALTER TABLE memories ALTER COLUMN metadata SET STATISTICS 0",
    _seal_plain_metadata,
]
"""Schema 3: metadata sealed like the text; key rewrites recorded until done."""
_EVERY_PART = [
    "INSERT INTO pending_rewrites (relation, deleted_by)"
    f" VALUES ('{KEY_TABLE}_{n}', txid_current())"
    for n in range(KEY_PARTITIONS)
]
"""From schema 2, every partition is rewritten once: no process recorded which ones held
keys deleted before (a node killed before its rewrite)."""
_DELETING_TRANSACTIONS: list[str | Callable[[psycopg.Connection[Any]], None]] = [
    ensure_pending_table
]
"""Schema 4: a record names its deleting transaction, so a rewrite (a later one too) waits
for the transactions older than it."""
_SENTENCE_VECTORS: list[str | Callable[[psycopg.Connection[Any]], None]] = [
    "ALTER TABLE vector_keys ADD COLUMN IF NOT EXISTS sentence BYTEA",
    "ALTER TABLE vector_keys ALTER COLUMN sentence SET STATISTICS 0",
]
"""Schema 5: each memory's sentence vector beside its key, in the rows a forget deletes and
whose partition it rewrites."""


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
        older = self._version()
        schema = [
            *_SCHEMA,
            *_SEALED_TEXT,
            *_SEALED_FIELDS,
            *_DELETING_TRANSACTIONS,
            *_SENTENCE_VECTORS,
        ]
        if older == 2:
            schema = [*_SEALED_FIELDS, *_DELETING_TRANSACTIONS, *_EVERY_PART, *_SENTENCE_VECTORS]
        elif older == 3:
            schema = [*_DELETING_TRANSACTIONS, *_SENTENCE_VECTORS]
        elif older == 4:
            schema = _SENTENCE_VECTORS
        if db.ensure_schema("rows", SCHEMA_VERSION, schema) and older < 3:
            # The sealing left the plain texts and metadata in dead tuples of the new file.
            db.rewrite("memories")
        # A process killed between a deletion's commit and its rewrite left the record, or
        # its rewrite's wait for older transactions ran out.
        self.scrub()

    def _version(self) -> int:
        rows = self.db.query("SELECT version FROM schema_version WHERE component = 'rows'")
        return int(rows[0]["version"]) if rows else 0

    def _keys_deleted(self, conn: Any, user_id: str) -> None:
        mark_rewrite(conn, user_id)

    def scrub(self) -> bool:
        """Rewrite the key partitions recorded as holding deleted keys (by this process or
        by one that died before its rewrite, or whose wait ran out), so no file keeps them.

        The rewrite first waits up to ``key_rewrites.HORIZON_WAIT_S`` for every transaction
        older than the newest recorded deletion: ``VACUUM FULL`` would copy a deleted key
        one of them may still see. Idempotent: the records read here are deleted only once
        their partitions were rewritten after that wait settled; a record made meanwhile, or
        one whose wait ran out, stays for the next scrub (at the next forget, erase, close
        or open). What the other tables' free space keeps of a deleted memory is ciphertext
        without a key and ids, so they are left to autovacuum (a VACUUM of ``memories``
        and ``changes`` would add about 30 ms to a forget at 10,000 memories).

        Returns:
            False when a reader held a partition too long or an older transaction was
            still open: a deleted key may stay in a file until the next scrub.
        """
        records = self.db.query_tuples(
            f"SELECT seq, relation, {DELETED_BY} FROM pending_rewrites"
            " WHERE starts_with(relation, ?)",
            (f"{KEY_TABLE}_",),
        )
        if not records:
            return True
        with self.db.connection() as conn:
            settled = older_transactions_ended(conn, max(int(row[2]) for row in records))
        if not self.db.rewrite(*sorted({row[1] for row in records})):
            return False
        if settled:
            # These records alone, not every seq up to the newest: a deletion committing
            # after the read above may hold a lower seq (taken at its insert), and the
            # rewrite may have copied its key before that commit.
            with self.db.transaction() as conn:
                conn.execute(
                    "DELETE FROM pending_rewrites WHERE seq = ANY(?)",
                    ([row[0] for row in records],),
                )
        return settled

    def _stored_values(
        self, units: Sequence[MemoryUnit], keys: Sequence[bytes]
    ) -> builtins.list[tuple[Any, ...]]:
        """Rows with the text sealed under the memory's key."""
        return [
            _sealed_row(row_values(unit), key, content=True)
            for unit, key in zip(units, keys, strict=True)
        ]

    def _rewritten_values(
        self, conn: Any, user_id: str, units: Sequence[MemoryUnit]
    ) -> builtins.list[tuple[Any, ...]]:
        """Rows with the metadata sealed under each memory's key (the text is not rewritten)."""
        keys = {
            row["id"]: bytes(row["key"])
            for row in conn.execute(
                "SELECT id, key FROM vector_keys WHERE user_id = ? AND id = ANY(?)",
                (user_id, [unit.id for unit in units]),
            ).fetchall()
        }
        return [_sealed_row(row_values(unit), keys.get(unit.id), content=False) for unit in units]

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
        """As :meth:`SqlRowStore.list`; metadata is sealed, so it is matched once opened."""
        if metadata is None:
            return super().list(
                user_id, status, review_only=review_only, limit=limit, offset=offset
            )
        field, value = metadata
        units = [
            unit
            for unit in super().list(user_id, status, review_only=review_only)
            if unit.metadata.get(field) == value
        ]
        return units[offset:] if limit is None else units[offset : offset + limit]

    def _units(self, sql: str, params: Sequence[Any]) -> builtins.list[MemoryUnit]:
        return [IndexRow(values).unit() for values in self._positional_rows(sql, params)]

    def add_vector_keys(self, user_id: str, keys: dict[str, bytes]) -> dict[str, bytes]:
        """Store keys for live memories that have none, and seal their texts under them."""
        stored: dict[str, bytes] = {}
        with self.db.writing() as conn:
            for memory_id, key in keys.items():
                cursor = conn.execute(
                    "INSERT INTO vector_keys (id, user_id, key)"
                    " SELECT id, user_id, %s FROM memories WHERE id = %s AND user_id = %s"
                    " ON CONFLICT (user_id, id) DO NOTHING",
                    (key, memory_id, user_id),
                )
                if cursor.rowcount:
                    stored[memory_id] = key
            if stored:
                rows = conn.execute(
                    "SELECT id, content, metadata FROM memories WHERE id = ANY(%s) FOR UPDATE",
                    (list(stored),),
                ).fetchall()
                conn.cursor().executemany(
                    "UPDATE memories SET content = %s, metadata = %s WHERE id = %s",
                    [
                        (
                            seal_text(unseal_text(row["content"], None), stored[row["id"]]),
                            seal_field(row["metadata"], stored[row["id"]]),
                            row["id"],
                        )
                        for row in rows
                        if not bytes(row["content"]).startswith(bytes([TEXT_FORMAT]))
                        or not is_sealed(row["metadata"])
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
                metadata = open_field(row[_METADATA], row[-1] and bytes(row[-1]))
            except (ValueError, StoreError) as error:
                raise StoreError(
                    f"database {self.db.description}: memory {row[0]}: {error}"
                ) from None
            values = list(row[:-1])
            values[_CONTENT], values[_METADATA] = content, metadata
            opened.append(values)
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


def _sealed_row(values: tuple[Any, ...], key: bytes | None, *, content: bool) -> tuple[Any, ...]:
    """A row's values with its metadata (and, with ``content``, its text) sealed under
    ``key``; a memory without a key keeps them plain until it gets one."""
    if key is None:
        return values
    sealed = list(values)
    if content:
        sealed[_CONTENT] = seal_text(values[_CONTENT], key)
    sealed[_METADATA] = seal_field(values[_METADATA], key)
    return tuple(sealed)
