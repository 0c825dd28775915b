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
  (``pg_advisory_lock``) instead of a file lock.

Deleting rows leaves dead tuples until ``VACUUM``; :meth:`scrub` runs it on
the tables that held the text and keys (see the README's "Scaling out").
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from memora.storage.postgres import PostgresDatabase
from memora.storage.rows import ColumnTypes, table_statements
from memora.storage.sql_rows import SqlRowStore

SCHEMA_VERSION = 1
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


class PostgresRowStore(SqlRowStore):
    """:class:`memora.storage.rows.RowStore` on a shared Postgres database."""

    db: PostgresDatabase
    insertion_order = "seq"
    ids_per_statement = sys.maxsize
    """Ids are bound as one array parameter, so any number fits in one statement."""

    def __init__(self, db: PostgresDatabase) -> None:
        super().__init__(db)
        db.ensure_schema("rows", SCHEMA_VERSION, _SCHEMA)

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
        """Tuples rather than the pool's dicts: ranking a large user reads every row."""
        return self.db.query_tuples(sql, params)

    def _id_in(self, column: str, ids: Sequence[str]) -> tuple[str, builtins.list[Any]]:
        """One array parameter, so the statement's text is the same for any number of ids."""
        return f"{column} = ANY(?)", [list(ids)]

    def _lock_all_generations(self, conn: Any) -> None:
        """Take the generation rows in the writers' order (store-wide first), so no
        writer deadlocks with a bump of them all."""
        conn.execute(
            "SELECT user_id FROM generations ORDER BY user_id = '' DESC, user_id FOR UPDATE"
        )
