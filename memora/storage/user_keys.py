"""Per-user keys on Postgres, for what a user's rows hold beside their memories.

Postgres never zeroes a deleted or updated row's bytes (see ``memora.storage.rows_postgres``),
so on Postgres every text a person typed is sealed under a key that a forget or an erase
destroys:

- a memory's text and its metadata under the memory's own key;
- the profile's values, the audit's search queries and reasons, and the reasons of
  pending forget requests under the user's key. It is a row of ``vector_keys`` (id
  :data:`USER_KEY_ID`) in the user's partition, so an erase deletes it with the
  memories' keys and the same partition rewrite shreds it. A forget (or removing a
  profile field) gives the user a new key (:func:`rotate_user_key`): the rows still
  held are resealed under it in the same transaction, the old key is deleted, and
  the partition is rewritten, so what redacted queries and dropped requests left in
  free space is ciphertext without a key.

A deletion of keys records its partition and its transaction id in ``pending_rewrites``
in its own transaction; the rewrite (``VACUUM FULL``) deletes the record once done and
settled (``memora.storage.key_rewrites``: no transaction older than the deletion was left
to see the deleted key), and a process that finds records left (one killed between the
two, or one whose wait ran out) finishes them when it opens the store, at the next forget
or at close (:meth:`PostgresRowStore.scrub`).

A sealed value is text (``sealed:`` and base64), so the columns keep their types and a
value written before sealing (no prefix) is read as it is.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from memora.errors import StoreError
from memora.storage.postgres import translated
from memora.storage.sealing import new_key, seal_text, unseal_text

USER_KEY_ID = ""
"""The id of a user's own key in ``vector_keys`` (memory ids are never empty)."""
SEALED_PREFIX = "sealed:"
KEY_TABLE = "vector_keys"
KEY_PARTITIONS = 64

USER_SEALED: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "profile": (("key",), ("value",)),
    "audit": (("seq",), ("query", "reason")),
    "forget_requests": (("id",), ("reason",)),
}
"""Tables whose text columns are sealed under the user's key: (row key columns, sealed
columns). Every one has a ``user_id`` column."""


def seal_field(text: str | None, key: bytes) -> str | None:
    """``text`` as a text column may hold it, readable only with ``key``."""
    if text is None:
        return None
    return SEALED_PREFIX + base64.b64encode(seal_text(text, key)).decode("ascii")


def is_sealed(stored: str | None) -> bool:
    return stored is not None and stored.startswith(SEALED_PREFIX)


def open_field(stored: str | None, key: bytes | None) -> str | None:
    """What :func:`seal_field` sealed, back; a plain value as it is.

    Raises:
        StoreError: The value is sealed and its key is missing or another.
    """
    if stored is None or not stored.startswith(SEALED_PREFIX):
        return stored
    try:
        return unseal_text(base64.b64decode(stored[len(SEALED_PREFIX) :]), key)
    except ValueError as error:
        raise StoreError(f"a sealed field does not open: {error}") from None


def key_partition_sql(parameter: str = "?") -> str:
    """The name of the ``vector_keys`` partition holding a user's keys (``parameter``: the
    user id's placeholder), as a query."""
    return (
        f"SELECT '{KEY_TABLE}_' || r FROM generate_series(0, {KEY_PARTITIONS - 1}) AS r"
        f" WHERE satisfies_hash_partition('{KEY_TABLE}'::regclass, {KEY_PARTITIONS}, r,"
        f" {parameter}::text)"
    )


def mark_rewrite(conn: Any, user_id: str) -> None:
    """Record, inside the deleting transaction, that the user's key partition must be
    rewritten once every transaction older than this one has ended (``conn`` takes ``?``
    placeholders)."""
    conn.execute(
        "INSERT INTO pending_rewrites (relation, deleted_by)"
        f" SELECT part, txid_current() FROM ({key_partition_sql()}) AS chosen(part)",
        (user_id,),
    )


def user_key(conn: Any, user_id: str, *, exclusive: bool = False) -> bytes:
    """The user's key, made on first use, locked against a rotation until the caller's
    transaction ends (``conn`` takes ``?`` placeholders and is in a transaction).

    A writer that seals under it holds the row shared, so a rotation (which takes it
    exclusively) waits for the writer's row to be committed and then reseals it too.
    A writer that may rotate takes it ``exclusive`` before touching its rows: every
    transaction locks the key before the rows it seals, so none waits crosswise.
    """
    conn.execute(
        "INSERT INTO vector_keys (id, user_id, key) VALUES (?, ?, ?)"
        " ON CONFLICT (user_id, id) DO NOTHING",
        (USER_KEY_ID, user_id, new_key()),
    )
    rows = conn.execute(
        "SELECT key FROM vector_keys WHERE user_id = ? AND id = ?"
        f" FOR {'UPDATE' if exclusive else 'SHARE'}",
        (user_id, USER_KEY_ID),
    ).fetchall()
    return bytes(rows[0]["key"])


def drop_user_key(conn: Any, user_id: str) -> None:
    """Delete the user's key, if any (erasing a user; the row store's erase already did
    unless something sealed meanwhile), and record the partition for its rewrite."""
    deleted = conn.execute(
        "DELETE FROM vector_keys WHERE user_id = ? AND id = ?", (user_id, USER_KEY_ID)
    ).rowcount
    if deleted:
        mark_rewrite(conn, user_id)


def key_join(table: str) -> str:
    """A join that adds the user's key (``sealing_key``) to ``table``'s rows."""
    return (
        f"LEFT JOIN vector_keys AS user_key ON user_key.user_id = {table}.user_id"
        f" AND user_key.id = '{USER_KEY_ID}'"
    )


def rotate_user_key(conn: Any, user_id: str, tables: Sequence[str] = tuple(USER_SEALED)) -> bool:
    """Give the user a new key and reseal every sealed value of theirs under it, in the
    caller's transaction; record the partition for its rewrite.

    Until the transaction commits every reader sees the old key and the old values,
    afterwards the new ones, so a crash at any point leaves every value readable.

    Returns:
        Whether the user had a key.
    """
    rows = conn.execute(
        "SELECT key FROM vector_keys WHERE user_id = ? AND id = ? FOR UPDATE",
        (user_id, USER_KEY_ID),
    ).fetchall()
    if not rows:
        return False
    old, new = bytes(rows[0]["key"]), new_key()
    for table in tables:
        names, sealed = USER_SEALED[table]
        found = conn.execute(
            f"SELECT {', '.join((*names, *sealed))} FROM {table} WHERE user_id = ?"
            f" AND ({' OR '.join(f'{column} LIKE ?' for column in sealed)}) FOR UPDATE",
            (user_id, *(f"{SEALED_PREFIX}%" for _ in sealed)),
        ).fetchall()
        if found:
            assignments = ", ".join(f"{column} = ?" for column in sealed)
            where = " AND ".join(f"{name} = ?" for name in names)
            conn.executemany(
                f"UPDATE {table} SET {assignments} WHERE user_id = ? AND {where}",
                [
                    (
                        *(_reseal(row[column], old, new) for column in sealed),
                        user_id,
                        *(row[name] for name in names),
                    )
                    for row in found
                ],
            )
    # The old key stays in a dead row version until the partition's rewrite drops it.
    conn.execute(
        "UPDATE vector_keys SET key = ? WHERE user_id = ? AND id = ?", (new, user_id, USER_KEY_ID)
    )
    mark_rewrite(conn, user_id)
    return True


def _reseal(stored: str | None, old: bytes, new: bytes) -> str | None:
    if not is_sealed(stored):
        return stored
    return seal_field(open_field(stored, old), new)


def seal_plain_rows(raw: Any, table: str, keep: str | None = None) -> None:
    """Seal every plain value of ``table`` under its user's key (a migration of a table
    written before sealing, on the migration's psycopg connection); values equal to
    ``keep`` (a marker) stay as they are."""
    conn = translated(raw)
    names, sealed = USER_SEALED[table]
    found = conn.execute(
        f"SELECT user_id, {', '.join((*names, *sealed))} FROM {table}"
        f" WHERE {' OR '.join(f'({c} IS NOT NULL AND {c} NOT LIKE ?)' for c in sealed)}",
        tuple(f"{SEALED_PREFIX}%" for _ in sealed),
    ).fetchall()
    keys: dict[str, bytes] = {}
    updates = []
    for row in found:
        user = row["user_id"]
        if user not in keys:
            keys[user] = user_key(conn, user)
        values = [
            row[column]
            if is_sealed(row[column]) or row[column] == keep
            else seal_field(row[column], keys[user])
            for column in sealed
        ]
        updates.append((*values, user, *(row[name] for name in names)))
    if updates:
        assignments = ", ".join(f"{column} = ?" for column in sealed)
        where = " AND ".join(f"{name} = ?" for name in names)
        conn.executemany(f"UPDATE {table} SET {assignments} WHERE user_id = ? AND {where}", updates)
