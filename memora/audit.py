"""The audit log: every write decision and every read, in SQLite (``audit.db``) or Postgres.

A rejected candidate's text is never recorded, only its reason. Memory text
is never recorded either: entries name memory ids, so forgetting a memory
leaves nothing of it here except read queries, which are redacted when a
memory they returned is forgotten or when they name it (``memora.text.naming``),
found or not. On Postgres queries and reasons are sealed under the user's key
(``memora.storage.user_keys``), which every forget replaces and an erase destroys, so
a redacted query's old bytes in free space have no key.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memora.models import utcnow
from memora.redaction import redact
from memora.storage.db import Database, SqlDatabase
from memora.storage.user_keys import (
    drop_user_key,
    key_join,
    open_field,
    seal_field,
    seal_plain_rows,
    user_key,
)
from memora.text.naming import distinctive_terms, names_any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    user_id TEXT NOT NULL,
    thread_id TEXT,
    event TEXT NOT NULL,
    decision TEXT NOT NULL,
    reason TEXT,
    action TEXT,
    memory_ids TEXT NOT NULL,
    query TEXT,
    scores TEXT,
    source TEXT,
    redactions INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS audit_user ON audit (user_id, seq);
"""
SCHEMA_VERSION = 2
REDACTED = "[redacted: a memory this query returned or named was forgotten]"
_POSTGRES_SCHEMA = [
    _SCHEMA.split(";")[0].replace("INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY"),
    _SCHEMA.split(";")[1],
    # Version 2: queries and reasons sealed under the user's key.
    lambda conn: seal_plain_rows(conn, "audit", keep=REDACTED),
]


@dataclass(frozen=True)
class AuditEntry:
    """One audit record as read back."""

    seq: int
    at: str
    user_id: str
    thread_id: str | None
    event: str
    decision: str
    reason: str | None
    action: str | None
    memory_ids: list[str]
    query: str | None
    scores: list[float] | None
    source: str | None
    redactions: int = 0
    """Sensitive values cut from the query before it was written."""


class AuditLog:
    """Append-only audit records, plus redaction on forget."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        self.sealed = db.dialect == "postgres"
        if self.sealed:
            if db.ensure_schema("audit", SCHEMA_VERSION, _POSTGRES_SCHEMA):
                db.rewrite("audit")  # the plain values' dead tuples leave with the old file
            return
        columns = {row["name"] for row in db.query("PRAGMA table_info(audit)")}
        if "redactions" not in columns:
            with db.transaction() as conn:
                conn.execute("ALTER TABLE audit ADD COLUMN redactions INTEGER NOT NULL DEFAULT 0")

    @classmethod
    def in_data_dir(cls, data_dir: Path) -> AuditLog:
        """The audit in its own SQLite file, ``audit.db``."""
        return cls(Database(data_dir / "audit.db", _SCHEMA))

    def scrub(self) -> bool:
        """Make deleted or redacted entries unreadable from storage."""
        return self.db.reclaim("audit")

    def record(
        self,
        user_id: str,
        event: str,
        decision: str,
        *,
        reason: str | None = None,
        action: str | None = None,
        memory_ids: Sequence[str] = (),
        query: str | None = None,
        scores: Sequence[float] | None = None,
        source: str | None = None,
        thread_id: str | None = None,
    ) -> None:
        """Append one entry. ``event`` is write, read, delete, review or consolidate.

        A query is written with its sensitive values redacted, and the entry
        records how many were cut.
        """
        cleaned = redact(query) if query is not None else None
        text = cleaned.text if cleaned is not None else None
        with self.db.transaction() as conn:
            if self.sealed and (text is not None or reason is not None):
                key = user_key(conn, user_id)
                text, reason = seal_field(text, key), seal_field(reason, key)
            conn.execute(
                "INSERT INTO audit (at, user_id, thread_id, event, decision, reason, action,"
                " memory_ids, query, scores, source, redactions)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    utcnow().isoformat(),
                    user_id,
                    thread_id,
                    event,
                    decision,
                    reason,
                    action,
                    json.dumps(list(memory_ids)),
                    text,
                    json.dumps([round(s, 4) for s in scores]) if scores is not None else None,
                    source,
                    cleaned.redactions if cleaned is not None else 0,
                ),
            )

    def redact_reads_of(self, user_id: str, memory_ids: Sequence[str]) -> int:
        """Blank the query text of reads that returned any of these memories."""
        changed = 0
        with self.db.transaction() as conn:
            for memory_id in memory_ids:
                cursor = conn.execute(
                    "UPDATE audit SET query = ? WHERE user_id = ? AND event = 'read'"
                    " AND query IS NOT NULL AND query != ? AND memory_ids LIKE ?",
                    (REDACTED, user_id, REDACTED, f'%"{memory_id}"%'),
                )
                changed += cursor.rowcount
        return changed

    def redact_reads_naming(self, user_id: str, texts: Sequence[str]) -> int:
        """Blank the query text of reads that name any of these texts, whatever they returned.

        Every unredacted read of the user is read back: the rule works on folded,
        stemmed terms, which SQL cannot match.
        """
        terms = frozenset().union(*(distinctive_terms(text) for text in texts))
        if not terms:
            return 0
        with self.db.transaction() as conn:
            rows = conn.execute(
                f"SELECT seq, query{self._key_column} FROM audit {self._key_join}"
                " WHERE audit.user_id = ? AND event = 'read' AND query IS NOT NULL AND query != ?",
                (user_id, REDACTED),
            ).fetchall()
            naming = [
                (REDACTED, row["seq"])
                for row in rows
                if names_any(str(self._open(row, "query")), terms)
            ]
            if naming:
                conn.executemany("UPDATE audit SET query = ? WHERE seq = ?", naming)
        return len(naming)

    @property
    def _key_column(self) -> str:
        return ", user_key.key AS sealing_key" if self.sealed else ""

    @property
    def _key_join(self) -> str:
        return key_join("audit") if self.sealed else ""

    def _open(self, row: Any, column: str) -> str | None:
        """A column of a row read with :attr:`_key_column`, unsealed."""
        if not self.sealed:
            return row[column]
        key = row["sealing_key"]
        return open_field(row[column], bytes(key) if key is not None else None)

    def erase(self, user_id: str) -> int:
        """Delete every entry of the user; returns how many there were."""
        with self.db.transaction() as conn:
            if self.sealed:
                drop_user_key(conn, user_id)
            return int(conn.execute("DELETE FROM audit WHERE user_id = ?", (user_id,)).rowcount)

    def entries(
        self, user_id: str, memory_id: str | None = None, limit: int = 200
    ) -> list[AuditEntry]:
        """Recent entries of a user, newest last, optionally only those naming one memory."""
        sql = f"SELECT audit.*{self._key_column} FROM audit {self._key_join}"
        sql += " WHERE audit.user_id = ?"
        params: list[Any] = [user_id]
        if memory_id is not None:
            sql += " AND memory_ids LIKE ?"
            params.append(f'%"{memory_id}"%')
        sql += " ORDER BY seq DESC"
        if limit >= 0:
            sql += " LIMIT ?"
            params.append(limit)
        rows = self.db.query(sql, params)
        return [
            AuditEntry(
                seq=row["seq"],
                at=row["at"],
                user_id=row["user_id"],
                thread_id=row["thread_id"],
                event=row["event"],
                decision=row["decision"],
                reason=self._open(row, "reason"),
                action=row["action"],
                memory_ids=json.loads(row["memory_ids"]),
                query=self._open(row, "query"),
                scores=json.loads(row["scores"]) if row["scores"] else None,
                source=row["source"],
                redactions=row["redactions"],
            )
            for row in reversed(rows)
        ]
