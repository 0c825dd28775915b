"""SQLite connections with the pragmas Memora relies on, and clear errors."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

from memora.errors import EmbeddingMismatchError, StoreError

__all__ = [
    "Database",
    "EmbeddingMismatchError",
    "SqlDatabase",
    "StoreError",
    "describe_sqlite_error",
]


def _is_locked(error: sqlite3.Error) -> bool:
    """Whether another connection holds the file: worth waiting for, not a fault."""
    return "locked" in str(error) or "busy" in str(error)


def describe_sqlite_error(path: Path, error: sqlite3.Error) -> str:
    """One line a person can act on, for a SQLite failure on ``path``."""
    text = str(error)
    if _is_locked(error):
        return f"database {path} is locked by another process; try again shortly"
    if "malformed" in text or "not a database" in text or "file is encrypted" in text:
        return f"database {path} is corrupt ({text}); restore it from an export or move it aside"
    if "readonly" in text or "unable to open" in text:
        return f"cannot write to {path} ({text}); check MEMORA_DATA_DIR and its permissions"
    return f"database {path}: {text}"


def _enter_wal(conn: sqlite3.Connection, deadline: float) -> None:
    """Switch a file to the write-ahead log, waiting while another process does the same.

    Changing the journal mode needs the file to itself, and SQLite answers
    ``SQLITE_BUSY`` at once there instead of calling the busy handler, so several
    processes opening a new store together would fail where they should wait.
    """
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if not _is_locked(error) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


class SqlDatabase(Protocol):
    """What the profile and the audit need of a database: SQLite here, Postgres in
    ``memora.storage.postgres``. Statements use ``?`` placeholders; rows read by column name."""

    dialect: str
    """``sqlite`` or ``postgres``: which schema statements to use."""

    def transaction(self) -> AbstractContextManager[Any]:
        """Statements in one transaction; errors become ``StoreError``."""
        ...

    def query(self, sql: str, params: tuple | list = ()) -> list[Any]:
        """A read-only statement's rows."""
        ...

    def ensure_schema(self, component: str, version: int, statements: Sequence[Any]) -> bool | None:
        """Create a part's tables if they are missing (idempotent)."""
        ...

    def reclaim(self, *tables: str) -> bool:
        """Make deleted rows of these tables unreadable from storage as far as the engine can."""
        ...

    def rewrite(self, *tables: str) -> bool:
        """Copy these tables into new files (Postgres's ``VACUUM FULL``); False when a reader
        held one too long."""
        ...

    def close(self) -> None:
        """Release the connections."""
        ...


class Database:
    """One SQLite file shared by threads of this process through a lock.

    ``secure_delete`` zeroes freed cells so deleted memory text does not
    linger in the database file. The write-ahead log (fast commits without
    an fsync each, readers never blocked by a writer) would keep old page
    images until it is reused, so :meth:`scrub` checkpoints and truncates it
    after anything is deleted.
    """

    dialect = "sqlite"

    def __init__(self, path: Path, schema: str, busy_timeout_ms: int = 5000) -> None:
        self.path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._lock = threading.RLock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                path,
                timeout=busy_timeout_ms / 1000,
                check_same_thread=False,
                isolation_level=None,
            )
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA secure_delete=ON")
            _enter_wal(self._conn, deadline=time.monotonic() + busy_timeout_ms / 1000)
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
            self._conn.executescript(schema)
        except OSError as error:
            raise StoreError(f"cannot use data dir {path.parent}: {error}") from None
        except sqlite3.Error as error:
            raise StoreError(describe_sqlite_error(path, error)) from None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Run statements in one IMMEDIATE transaction; errors become ``StoreError``."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except sqlite3.Error as error:
                raise StoreError(describe_sqlite_error(self.path, error)) from None

    def query(self, sql: str, params: tuple | list = ()) -> list[sqlite3.Row]:
        """Run a read-only statement and return all rows."""
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as error:
                raise StoreError(describe_sqlite_error(self.path, error)) from None

    def scrub(self, attempts: int = 2, wait_ms: int = 250) -> bool:
        """Move the WAL into the database and truncate it, so deleted text leaves no copy.

        A reader in another process holds the log back for as long as it reads, so
        this waits briefly (``wait_ms`` per attempt), not the full busy timeout, and
        says whether it finished; the caller reports a pending scrub and tries again.

        Returns:
            Whether the log was fully checkpointed.
        """
        with self._lock:
            try:
                self._conn.execute(f"PRAGMA busy_timeout={wait_ms}")
                for _ in range(attempts):
                    busy, _, _ = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                    if not busy:
                        return True
                return False
            except sqlite3.Error as error:
                raise StoreError(describe_sqlite_error(self.path, error)) from None
            finally:
                self._conn.execute(f"PRAGMA busy_timeout={self._busy_timeout_ms}")

    def ensure_schema(self, component: str, version: int, statements: Sequence[str]) -> None:
        """Run ``CREATE … IF NOT EXISTS`` statements; one process's file needs no version table."""
        with self.transaction() as conn:
            for statement in statements:
                conn.execute(statement)

    def reclaim(self, *tables: str) -> bool:
        """``secure_delete`` already zeroed the rows; truncate the log (see :meth:`scrub`)."""
        return self.scrub()

    def rewrite(self, *tables: str) -> bool:
        """What :meth:`reclaim` does (SQLite zeroed the rows already)."""
        return self.reclaim(*tables)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()
