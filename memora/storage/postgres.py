"""A Postgres database shared by many nodes: a psycopg 3 connection pool, schemas, clear errors.

Memory rows, profile and audit live here when ``MEMORA_DATABASE_URL`` is set.
Each part creates its tables on first use (``CREATE … IF NOT EXISTS`` under a
transaction-level advisory lock, so two nodes starting together do not race)
and records its version in ``schema_version`` for later migrations.

The profile and the audit are written once for both backends: their SQL uses
SQLite's ``?`` placeholders, which :class:`PostgresDatabase` translates.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import ConnectionPool, PoolTimeout

from memora.storage.db import StoreError

POOL_MIN = 1
POOL_MAX = 8
"""Connections one process keeps open at most (Postgres allows 100 by default)."""
CONNECT_TIMEOUT_S = 10.0
REWRITE_LOCK_TIMEOUT = "5s"
"""How long a table rewrite waits for readers to let go before it is left for the next
forget (the rewrite's exclusive lock would hold every new reader behind it meanwhile)."""
_SCHEMA_LOCK = 0x6D656D6F7261
"""Advisory lock id held while a schema is created ("memora" in hex)."""

_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS schema_version (
    component TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)
"""


def describe_url(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        parts = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "the configured MEMORA_DATABASE_URL"
    host = parts.get("host") or "localhost"
    if str(host).startswith("/"):
        host = f"socket {host}"
    return f"postgresql://{parts.get('user', '')}@{host}:{parts.get('port', 5432)}/" + str(
        parts.get("dbname", "")
    )


def describe_postgres_error(url: str, error: BaseException) -> str:
    """One line a person can act on, for a Postgres failure."""
    text = " ".join(str(error).split()) or type(error).__name__
    where = describe_url(url)
    if isinstance(error, PoolTimeout | psycopg.OperationalError):
        return f"cannot reach the database {where} ({text}); check MEMORA_DATABASE_URL"
    return f"database {where}: {text}"


class _Translated:
    """A connection whose ``execute`` takes SQLite-style ``?`` placeholders."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        return self._conn.execute(_translate(sql), tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> psycopg.Cursor[Any]:
        cursor = self._conn.cursor()
        cursor.executemany(_translate(sql), [tuple(row) for row in rows])
        return cursor


def translated(conn: psycopg.Connection[Any]) -> _Translated:
    """``conn`` taking ``?`` placeholders (for SQL shared with SQLite)."""
    return _Translated(conn)


def _translate(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


class PostgresDatabase:
    """A pool of connections to one Postgres database, shared by this process's threads.

    Connections are in autocommit mode, so a read is one round trip; a write
    runs in an explicit transaction (:meth:`writing`). Both at READ COMMITTED,
    Postgres's default; writers that must not interleave take row locks (see
    ``memora.storage.rows_postgres``).
    """

    dialect = "postgres"

    def __init__(self, url: str, *, min_size: int = POOL_MIN, max_size: int = POOL_MAX) -> None:
        self.url = url
        self.description = describe_url(url)
        self._closed = threading.Event()
        try:
            # One plain connection first: a wrong URL or a server that is down fails here at
            # once with Postgres's own reason, rather than after the pool's retries.
            psycopg.connect(url, connect_timeout=int(CONNECT_TIMEOUT_S)).close()
            self.pool = ConnectionPool(
                url,
                min_size=min_size,
                max_size=max_size,
                kwargs={
                    "row_factory": dict_row,
                    "autocommit": True,
                    "connect_timeout": int(CONNECT_TIMEOUT_S),
                },
                timeout=CONNECT_TIMEOUT_S,
                open=False,
                name="memora",
            )
            self.pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        except (psycopg.Error, PoolTimeout) as error:
            raise StoreError(describe_postgres_error(url, error)) from None
        self.ensure_schema("schema_version", 1, [_VERSION_TABLE])

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """One pooled autocommit connection; errors are ``StoreError``."""
        try:
            with self.pool.connection() as conn:
                yield conn
        except (psycopg.Error, PoolTimeout) as error:
            raise StoreError(describe_postgres_error(self.url, error)) from None

    @contextmanager
    def writing(self) -> Iterator[psycopg.Connection[Any]]:
        """One pooled connection in a transaction, committed on success, rolled back on error."""
        with self.connection() as conn, conn.transaction():
            yield conn

    @contextmanager
    def transaction(self) -> Iterator[_Translated]:
        """Statements with ``?`` placeholders in one transaction (the SQLite ``Database`` API)."""
        with self.writing() as conn:
            yield _Translated(conn)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Run a read-only statement with ``?`` placeholders and return all rows."""
        with self.connection() as conn:
            return conn.execute(_translate(sql), tuple(params)).fetchall()

    def query_tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """:meth:`query`'s rows as tuples in column order, cheaper to build than dicts."""
        with self.connection() as conn:
            cursor = conn.cursor(row_factory=tuple_row)
            return cursor.execute(_translate(sql), tuple(params)).fetchall()

    def ensure_schema(
        self,
        component: str,
        version: int,
        statements: Sequence[str | Callable[[psycopg.Connection[Any]], None]],
    ) -> bool:
        """Create a part's tables once, whichever node starts first, and record its version.

        A statement may be a function of the connection, for a migration SQL cannot do alone.

        Returns:
            Whether the statements ran (a new or older schema).

        Raises:
            StoreError: The database holds a newer version than this code knows.
        """
        with self.writing() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            conn.execute(_VERSION_TABLE)
            row = conn.execute(
                "SELECT version FROM schema_version WHERE component = %s", (component,)
            ).fetchone()
            if row is not None and row["version"] > version:
                raise StoreError(
                    f"database {self.description} holds {component} schema version "
                    f"{row['version']}, newer than this Memora ({version}); upgrade Memora"
                )
            if row is None or row["version"] < version:
                for statement in statements:
                    if callable(statement):
                        statement(conn)
                    else:
                        conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_version (component, version) VALUES (%s, %s)"
                    " ON CONFLICT (component) DO UPDATE SET version = excluded.version,"
                    " applied_at = now()",
                    (component, version),
                )
                return True
        return False

    def vacuum(self, *tables: str) -> bool:
        """Run ``VACUUM`` on these tables so deleted rows' space is reclaimed (see README).

        VACUUM cannot run inside a transaction; pooled connections are in autocommit mode.
        """
        with self.connection() as conn:
            conn.execute(f"VACUUM {', '.join(tables)}")
        return True

    def rewrite(self, *tables: str) -> bool:
        """``VACUUM FULL`` these tables: each is copied into a new file and the old file is
        truncated and unlinked, so no table or index file keeps a deleted row's bytes (plain
        VACUUM only compacts a page; the bytes it frees stay in the file).

        Returns:
            False when a reader held a table past ``REWRITE_LOCK_TIMEOUT`` (try again later).
        """
        with self.connection() as conn:
            conn.execute(f"SET lock_timeout = '{REWRITE_LOCK_TIMEOUT}'")
            try:
                conn.execute(f"VACUUM FULL {', '.join(tables)}")
            except psycopg.errors.LockNotAvailable:
                return False
            finally:
                conn.execute("RESET lock_timeout")
        return True

    def reclaim(self, *tables: str) -> bool:
        """VACUUM these tables (the ``SqlDatabase`` name for it)."""
        return self.vacuum(*tables)

    def close(self) -> None:
        """Close every pooled connection (idempotent)."""
        if not self._closed.is_set():
            self._closed.set()
            self.pool.close()
