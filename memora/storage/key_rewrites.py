"""Rewrites of Postgres key tables, recorded until no snapshot can still see a deleted key.

A transaction that deletes keys (a memory's, a user's, a thread's) records, in the same
transaction, the key table or partition to rewrite and its own transaction id
(``deleted_by``) in ``pending_rewrites``. ``VACUUM FULL`` then copies the table into a new
file, but it copies a "recently dead" row too: one that a transaction or snapshot older than
the deletion may still read, deleted key included. So the rewrite first waits for every such
transaction to end (:func:`older_transactions_ended`), and only a rewrite that ran after the
wait settled deletes the records it saw. A record whose wait ran out stays, and the next
rewrite of its table waits and rewrites again; the key stays in the file until then.

Every statement here takes psycopg's ``%s`` placeholders and reads rows by position, so a
connection of either row factory (the row store's dict rows, the thread keys' tuples) works.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
from psycopg.rows import tuple_row

HORIZON_WAIT_S = 5.0
"""How long a key table rewrite waits for transactions older than the deletion before it
runs anyway (the deleted keys may then stay in the new file until the next rewrite)."""
_POLL_S = 0.02

PENDING_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS pending_rewrites"
    " (seq BIGSERIAL PRIMARY KEY, relation TEXT NOT NULL, deleted_by BIGINT)"
)
"""Key tables (or partitions) whose deleted keys wait for a rewrite, with the deleting
transaction's id (``txid_current()``; NULL in a record made before Memora kept it)."""
DELETED_BY = "coalesce(deleted_by, txid_snapshot_xmax(txid_current_snapshot()))"
"""A record's deleting transaction, as a column expression. A record without one was made
by some transaction that committed before now, so every transaction running now counts as
older (the next transaction id is newer than any of them)."""


def ensure_pending_table(conn: psycopg.Connection[Any]) -> None:
    """Create ``pending_rewrites``, or add ``deleted_by`` to one made before it existed.

    The column is looked up first: ``ALTER TABLE`` would lock out every other node's
    deletions for as long as it waits, at every open.
    """
    conn.execute(PENDING_SCHEMA)
    found = (
        conn.cursor(row_factory=tuple_row)
        .execute(
            "SELECT 1 FROM pg_attribute WHERE attrelid = 'pending_rewrites'::regclass"
            " AND attname = 'deleted_by' AND NOT attisdropped"
        )
        .fetchone()
    )
    if found is None:
        conn.execute("ALTER TABLE pending_rewrites ADD COLUMN IF NOT EXISTS deleted_by BIGINT")


def older_transactions_ended(conn: psycopg.Connection[Any], xid: int) -> bool:
    """Whether, within ``HORIZON_WAIT_S``, no other session of this database holds a
    snapshot or a transaction from before transaction ``xid`` (a 64-bit ``txid``) committed.

    Past that, a rewrite no longer copies a row ``xid`` deleted. Autovacuum's workers are
    left out: a vacuum's snapshot keeps no row alive. ``conn`` should be in autocommit
    mode: a transaction of its own held through the wait would hold the horizon back too.
    """
    cursor = conn.cursor(row_factory=tuple_row)
    newest = cursor.execute("SELECT txid_snapshot_xmax(txid_current_snapshot())").fetchone()
    # pg_stat_activity shows 32-bit ids, compared by age() modulo 2^31; an id that old has
    # no transaction left from before it (Postgres stops short of wraparound while one runs).
    if newest is not None and int(newest[0]) - xid >= 2**31:
        return True
    xid32 = str(xid % 2**32)
    deadline = time.monotonic() + HORIZON_WAIT_S
    while True:
        row = cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type <> 'autovacuum worker'"
            " AND (age(backend_xmin) >= age(%s::text::xid)"
            " OR age(backend_xid) >= age(%s::text::xid))",
            (xid32, xid32),
        ).fetchone()
        if row is not None and row[0] == 0:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(_POLL_S)
