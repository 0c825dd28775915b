"""Deletion requests waiting for the user's approval.

A door that cannot ask the user in the moment (a LangGraph ``BaseStore`` delete, the
MCP ``request_forget_memory`` tool) records a request here instead of deleting. The
user approves or rejects it later (``memora memories pending``, the inspector); only
an approval forgets, through ``Memora.forget``.

The table lives beside the memories (``memora.db`` on SQLite, the shared database on
Postgres; the same statements serve both). It holds ids and the requester's reason,
never the memory's text: the preview is read from the memory when the request is
listed, so a forgotten memory leaves no copy here. On Postgres the reason is sealed
under the user's key (``memora.storage.user_keys``), which the forget that settles a
request replaces and an erase destroys.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memora.limits import MAX_REASON_CHARS
from memora.models import utcnow
from memora.storage.db import SqlDatabase
from memora.storage.user_keys import (
    drop_user_key,
    key_join,
    open_field,
    seal_field,
    seal_plain_rows,
    user_key,
)
from memora.validation import check_text

SCHEMA_VERSION = 2
_SCHEMA = """
CREATE TABLE IF NOT EXISTS forget_requests (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    source TEXT NOT NULL,
    requested_at TEXT NOT NULL,
    UNIQUE (user_id, memory_id)
)
"""
_COLUMNS = "id, user_id, memory_id, reason, source, requested_at"


@dataclass(frozen=True)
class ForgetRequest:
    """One pending deletion request, as the CLI and the inspector show it."""

    id: str
    user_id: str
    memory_id: str
    reason: str
    source: str
    """Which door asked: ``store``, ``mcp``, …"""
    requested_at: str
    """ISO 8601, UTC."""
    preview: str = ""
    """A short preview of the memory, read when the request is listed."""


def new_request_id() -> str:
    """A request id, visibly not a memory id (those are 32 bare hex digits)."""
    return "fr_" + uuid.uuid4().hex[:20]


class ForgetRequests:
    """Pending deletion requests of every user, one per memory."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        self.sealed = db.dialect == "postgres"
        statements: list = [_SCHEMA.strip()]
        if self.sealed:
            statements.append(lambda conn: seal_plain_rows(conn, "forget_requests"))
        if db.ensure_schema("forget_requests", SCHEMA_VERSION, statements) and self.sealed:
            db.rewrite("forget_requests")  # the plain reasons leave with the old file

    def _select(self, condition: str) -> str:
        """The requests' columns (and on Postgres the user's key) where ``condition``."""
        columns = ", ".join(f"forget_requests.{name}" for name in _COLUMNS.split(", "))
        if not self.sealed:
            return f"SELECT {columns} FROM forget_requests WHERE {condition}"
        return (
            f"SELECT {columns}, user_key.key AS sealing_key FROM forget_requests"
            f" {key_join('forget_requests')} WHERE {condition}"
        )

    def add(self, user_id: str, memory_id: str, reason: str, source: str) -> ForgetRequest:
        """Record a request, or return the one already pending for this memory.

        Raises:
            InvalidInput: The reason is too long or not valid UTF-8.
        """
        reason = check_text(reason, "reason", MAX_REASON_CHARS, allow_empty=True).strip()
        with self.db.transaction() as conn:
            stored = seal_field(reason, user_key(conn, user_id)) if self.sealed else reason
            conn.execute(
                f"INSERT INTO forget_requests ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (user_id, memory_id) DO NOTHING",
                (new_request_id(), user_id, memory_id, stored, source, utcnow().isoformat()),
            )
        rows = self.db.query(
            self._select("forget_requests.user_id = ? AND memory_id = ?"), (user_id, memory_id)
        )
        return _request(rows[0])

    def get(self, user_id: str, request_id: str) -> ForgetRequest | None:
        """One request of this user, or None (unknown and foreign ids look the same)."""
        rows = self.db.query(
            self._select("forget_requests.user_id = ? AND forget_requests.id = ?"),
            (user_id, request_id),
        )
        return _request(rows[0]) if rows else None

    def pending(self, user_id: str) -> list[ForgetRequest]:
        """This user's requests, oldest first."""
        rows = self.db.query(
            self._select("forget_requests.user_id = ? ORDER BY requested_at, forget_requests.id"),
            (user_id,),
        )
        return [_request(row) for row in rows]

    def remove(self, user_id: str, request_id: str) -> bool:
        """Drop one request; returns whether it was pending."""
        with self.db.transaction() as conn:
            cursor = conn.execute(
                "DELETE FROM forget_requests WHERE user_id = ? AND id = ?", (user_id, request_id)
            )
            return cursor.rowcount > 0

    def remove_for_memories(self, user_id: str, memory_ids: Sequence[str]) -> int:
        """Drop the requests naming these memories (they are gone); returns how many."""
        removed = 0
        with self.db.transaction() as conn:
            for memory_id in memory_ids:
                cursor = conn.execute(
                    "DELETE FROM forget_requests WHERE user_id = ? AND memory_id = ?",
                    (user_id, memory_id),
                )
                removed += cursor.rowcount
        return removed

    def erase(self, user_id: str) -> int:
        """Drop every request of the user; returns how many there were."""
        with self.db.transaction() as conn:
            if self.sealed:
                drop_user_key(conn, user_id)
            cursor = conn.execute("DELETE FROM forget_requests WHERE user_id = ?", (user_id,))
            return int(cursor.rowcount)

    def scrub(self) -> bool:
        """Make dropped requests unreadable from storage (see ``SqlDatabase.reclaim``)."""
        return self.db.reclaim("forget_requests")


def _request(row: Any) -> ForgetRequest:
    # A sqlite3.Row or a psycopg dict row: both read by column name.
    return ForgetRequest(
        id=row["id"],
        user_id=row["user_id"],
        memory_id=row["memory_id"],
        reason=_reason(row),
        source=row["source"],
        requested_at=row["requested_at"],
    )


def _reason(row: Any) -> str:
    """The reason, unsealed with the row's ``sealing_key`` where it has one."""
    try:
        key = row["sealing_key"]
    except (KeyError, IndexError):
        return str(row["reason"])
    return str(open_field(row["reason"], bytes(key) if key is not None else None))
