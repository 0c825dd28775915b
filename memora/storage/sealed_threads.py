"""Conversation threads on Postgres, sealed per thread (crypto-shredding).

Postgres never zeroes a deleted row's bytes: ``VACUUM`` compacts a page and leaves
the freed bytes in the file, so a deleted thread's transcript would stay readable in
``checkpoint_blobs`` and ``checkpoint_writes``. So every value LangGraph's Postgres
checkpointer serialises is sealed (AES-256-GCM) under its thread's own random key,
kept only in ``thread_keys``. Deleting a thread deletes its key and rewrites that
small table with ``VACUUM FULL`` (a new file; the old one is truncated and unlinked):
what the checkpoint tables keep is then ciphertext without a key. Blanking a thread's
turns (a forget) leaves the older checkpoints' bytes in free space under the same key, so
the thread then gets a new key (:meth:`ThreadKeys.rotate`): its values are resealed and the
old key goes as a deleted thread's does.

:class:`SealingSerializer` is the checkpointer's serde. Sealing needs the thread,
which a serde is not told, so the saver names it around each save
(:meth:`SealingSerializer.sealing_for`); reading needs no thread, since a sealed
value starts with its key's id. A value without the ``+sealed`` type suffix (saved
before sealing) is read as it is.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import psycopg
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from psycopg.rows import tuple_row

from memora.errors import StoreError
from memora.storage.key_rewrites import DELETED_BY, ensure_pending_table, older_transactions_ended

SUFFIX = "+sealed"
"""Appended to a sealed value's type (as LangGraph's own ``EncryptedSerializer`` does)."""
KEY_ID_BYTES = 16
_NONCE_BYTES = 12
KEY_TABLE = "thread_keys"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS thread_keys (
    thread_id TEXT PRIMARY KEY,
    key_id BYTEA NOT NULL UNIQUE,
    key BYTEA NOT NULL
)
"""
_TURN_POLL_S = 0.01
REWRITE_LOCK_TIMEOUT = "5s"


class SealedText:
    """A text channel value the saver must send through the serde.

    LangGraph's Postgres saver keeps ``str`` channel values inline in the checkpoint's
    JSON, where no serde sees them; wrapped, they are stored as (sealed) blobs and
    read back as plain ``str``.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class ThreadKeys:
    """The per-thread keys, on a connection of their own.

    The saver holds its connection's lock while it serialises, so the serde cannot
    use that connection to look a key up.
    """

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._by_id: dict[bytes, bytes] = {}
        self._current: dict[str, bytes] = {}
        """The key id each thread was last seen with here (its key may since be gone)."""
        with self._lock:
            self._conn.execute(_SCHEMA)
            ensure_pending_table(self._conn)
            target = self._conn.execute(
                "SELECT attstattarget FROM pg_attribute"
                " WHERE attrelid = 'thread_keys'::regclass AND attname = 'key'"
            ).fetchone()
            if target is not None and _column(target, "attstattarget", 0) != 0:
                # ANALYZE would copy sample keys into pg_statistic, which no deletion
                # rewrites. Altered once: ALTER TABLE locks out every other node meanwhile.
                self._conn.execute("ALTER TABLE thread_keys ALTER COLUMN key SET STATISTICS 0")
            # A process killed between deleting keys and the rewrite left the record, or its
            # rewrite's wait for older transactions ran out.
            if self._pending() is not None:
                self._rewrite()

    def for_thread(self, thread_id: str) -> tuple[bytes, bytes]:
        """The thread's key id and key, made on its first save.

        Read from the database every time: another node may have deleted the thread
        (and its key) since this process last saved it.
        """
        with self._lock:
            self._conn.execute(
                "INSERT INTO thread_keys VALUES (%s, %s, %s) ON CONFLICT (thread_id) DO NOTHING",
                (thread_id, os.urandom(KEY_ID_BYTES), AESGCM.generate_key(bit_length=256)),
            )
            row = self._conn.execute(
                "SELECT key_id, key FROM thread_keys WHERE thread_id = %s", (thread_id,)
            ).fetchone()
        assert row is not None  # inserted just above, or there already
        return self._remember(thread_id, row)

    def _remember(self, thread_id: str, row: Any) -> tuple[bytes, bytes]:
        """Cache a ``(key_id, key)`` row as the thread's current key."""
        key_id, key = bytes(_column(row, "key_id", 0)), bytes(_column(row, "key", 1))
        self._by_id[key_id] = key
        self._current[thread_id] = key_id
        return key_id, key

    def cache_current(self, thread_id: str | None = None) -> None:
        """Read the current key of a thread (of every thread: ``None``) into this process's
        cache, so that opening its values needs no query. A server calls this in a worker
        thread before a read, so its event loop never waits on the keys' connection; a
        listing of every thread (a forget's blanking) opens every thread's values anyway.
        A thread whose key this process already holds needs no query; one rotated by another
        node since is still found by :meth:`by_id`."""
        if thread_id is not None and self._current.get(thread_id) in self._by_id:
            return
        with self._lock:
            if thread_id is None:
                rows = self._conn.execute("SELECT key_id, key, thread_id FROM thread_keys")
            else:
                rows = self._conn.execute(
                    "SELECT key_id, key, thread_id FROM thread_keys WHERE thread_id = %s",
                    (thread_id,),
                )
            found = rows.fetchall()
        for row in found:
            self._remember(str(_column(row, "thread_id", 2)), row)

    def by_id(self, key_id: bytes) -> bytes | None:
        """The key with this id, or None once its thread was deleted."""
        if key_id not in self._by_id:
            with self._lock:
                row = self._conn.execute(
                    "SELECT key FROM thread_keys WHERE key_id = %s", (key_id,)
                ).fetchone()
            if row is None:
                return None
            self._by_id[key_id] = bytes(_column(row, "key", 0))
        return self._by_id[key_id]

    def destroy(self, thread_ids: Sequence[str]) -> bool:
        """Delete these threads' keys and rewrite the key table so no file keeps them.

        Returns:
            False when a reader held the table past the lock timeout, or a transaction
            older than the deletion outlasted ``key_rewrites.HORIZON_WAIT_S`` (the keys are
            deleted; their bytes stay in the table's file until the next rewrite).
        """
        with self._lock:
            if thread_ids:
                with self._conn.transaction():
                    deleted = self._conn.execute(
                        "DELETE FROM thread_keys WHERE thread_id = ANY(%s) RETURNING key_id",
                        (list(thread_ids),),
                    ).fetchall()
                    self._mark()
                for row in deleted:
                    self._by_id.pop(bytes(_column(row, "key_id", 0)), None)
            return self._rewrite()

    def rotate(self, thread_ids: Sequence[str]) -> bool:
        """Give these threads new keys, reseal their checkpoint values under them, delete
        the old keys and rewrite the key table so no file keeps them.

        What a blanked thread's older checkpoints left in the tables' free space is then
        ciphertext without a key, as a deleted thread's is. All threads change in one
        transaction: until it commits every reader sees the old key and the old
        ciphertext, afterwards the new ones, so a crash at any point leaves each thread
        readable (the old keys' bytes stay in the table's file until the next rewrite).

        Returns:
            As :meth:`destroy`.
        """
        with self._lock:
            retired: list[bytes] = []
            made: dict[str, tuple[bytes, bytes]] = {}
            with self._conn.transaction():
                for thread_id in thread_ids:
                    row = self._conn.execute(
                        "SELECT key_id, key FROM thread_keys WHERE thread_id = %s FOR UPDATE",
                        (thread_id,),
                    ).fetchone()
                    if row is None:  # never saved, or deleted meanwhile
                        continue
                    old = bytes(_column(row, "key_id", 0)), bytes(_column(row, "key", 1))
                    new = os.urandom(KEY_ID_BYTES), AESGCM.generate_key(bit_length=256)
                    self._conn.execute(
                        "UPDATE thread_keys SET key_id = %s, key = %s WHERE thread_id = %s",
                        (*new, thread_id),
                    )
                    _reseal_thread(self._conn, thread_id, old, new)
                    retired.append(old[0])
                    made[thread_id] = new
                if retired:
                    self._mark()
            for key_id in retired:
                self._by_id.pop(key_id, None)
            for thread_id, new in made.items():  # the next read of these threads needs no query
                self._remember(thread_id, new)
            return self._rewrite()

    def _mark(self) -> None:
        """Record, in the deleting transaction, that the key table waits for its rewrite
        once every transaction older than this one has ended."""
        self._conn.execute(
            "INSERT INTO pending_rewrites (relation, deleted_by)"
            f" VALUES ('{KEY_TABLE}', txid_current())"
        )

    def _pending(self) -> tuple[list[int], int] | None:
        """The records of rewrites the key table waits for, if any, and the newest of their
        deleting transactions."""
        rows = (
            self._conn.cursor(row_factory=tuple_row)
            .execute(
                f"SELECT seq, {DELETED_BY} FROM pending_rewrites WHERE relation = %s",
                (KEY_TABLE,),
            )
            .fetchall()
        )
        if not rows:
            return None
        return [int(row[0]) for row in rows], max(int(row[1]) for row in rows)

    def _rewrite(self) -> bool:
        """``VACUUM FULL`` the key table (the caller holds the lock), then drop the records
        of the rewrites it did (idempotent: one left by a killed process is done again).

        The rewrite copies a deleted row that an open transaction may still see, old
        key included; so it first waits for every transaction of this database older
        than the recorded deletions to end (``memora.storage.key_rewrites``); past that
        wait the records stay, so the next rewrite (or the next open) runs again.
        """
        pending = self._pending()
        settled = pending is None or older_transactions_ended(self._conn, pending[1])
        self._conn.execute(f"SET lock_timeout = '{REWRITE_LOCK_TIMEOUT}'")
        try:
            self._conn.execute("VACUUM FULL thread_keys")
        except psycopg.errors.LockNotAvailable:
            return False
        finally:
            self._conn.execute("RESET lock_timeout")
        if settled and pending is not None:
            # These records alone: one committed since the read above may have been copied.
            self._conn.execute("DELETE FROM pending_rewrites WHERE seq = ANY(%s)", (pending[0],))
        return settled


_SEALED_ROWS = {
    "checkpoint_blobs": ("checkpoint_ns", "channel", "version"),
    "checkpoint_writes": ("checkpoint_ns", "checkpoint_id", "task_id", "idx"),
}
"""The checkpoint tables that hold serialised values, with the columns naming a row beside
its thread. ``checkpoints`` holds none: its JSON keeps only ids, versions and the values
the saver inlines (numbers, flags, empty text; :class:`SealedText` sends the rest here)."""


def _reseal_thread(
    conn: psycopg.Connection[Any],
    thread_id: str,
    old: tuple[bytes, bytes],
    new: tuple[bytes, bytes],
) -> None:
    """Reseal every value of the thread sealed under ``old`` under ``new`` (key id, key)."""
    for table, names in _SEALED_ROWS.items():
        columns = ", ".join(names)
        rows = (
            conn.cursor(row_factory=tuple_row)
            .execute(
                f"SELECT {columns}, blob FROM {table}"
                " WHERE thread_id = %s AND type LIKE %s FOR UPDATE",
                (thread_id, f"%{SUFFIX}"),
            )
            .fetchall()
        )
        updates = [
            (_seal(new, _open(old, bytes(row[-1]))), thread_id, *row[:-1])
            for row in rows
            if row[-1] is not None and bytes(row[-1])[:KEY_ID_BYTES] == old[0]
        ]
        if updates:
            where = " AND ".join(f"{name} = %s" for name in names)
            conn.cursor().executemany(
                f"UPDATE {table} SET blob = %s WHERE thread_id = %s AND {where}", updates
            )


def _seal(key: tuple[bytes, bytes], data: bytes) -> bytes:
    """``data`` sealed under (key id, key): the key id, a nonce, the ciphertext."""
    key_id, secret = key
    nonce = os.urandom(_NONCE_BYTES)
    return key_id + nonce + AESGCM(secret).encrypt(nonce, data, key_id)


def _open(key: tuple[bytes, bytes], blob: bytes) -> bytes:
    """What :func:`_seal` sealed, back.

    Raises:
        StoreError: The blob does not open with this key.
    """
    key_id, secret = key
    nonce = blob[KEY_ID_BYTES : KEY_ID_BYTES + _NONCE_BYTES]
    try:
        return AESGCM(secret).decrypt(nonce, blob[KEY_ID_BYTES + _NONCE_BYTES :], key_id)
    except InvalidTag:
        raise StoreError("a sealed checkpoint value does not open with its key") from None


def _column(row: Any, name: str, index: int) -> Any:
    """A column of a row from a dict-row or a tuple-row connection."""
    return row[name] if isinstance(row, dict) else row[index]


class SealingSerializer(SerializerProtocol):
    """LangGraph's serde with every value sealed under its thread's key."""

    def __init__(self, keys: ThreadKeys, inner: SerializerProtocol | None = None) -> None:
        self.keys = keys
        self.inner = inner or JsonPlusSerializer()
        self._current: contextvars.ContextVar[tuple[bytes, bytes] | None] = contextvars.ContextVar(
            "memora_thread_key", default=None
        )
        self._saving = threading.RLock()
        """Held through each save and each rotation: a save that fetched a key before a
        rotation and wrote after it would leave values under a deleted key."""

    @contextmanager
    def sealing_for(self, thread_id: str) -> Iterator[None]:
        """Seal what is serialised meanwhile under ``thread_id``'s key."""
        with self._saving:
            token = self._current.set(self.keys.for_thread(thread_id))
            try:
                yield
            finally:
                self._current.reset(token)

    @asynccontextmanager
    async def asealing_for(self, thread_id: str) -> AsyncIterator[None]:
        """:meth:`sealing_for` for an async saver (a server's): the turn is waited for and the
        key looked up without blocking the event loop.

        The saves of one event loop share the turn (the lock is the loop thread's, and
        reentrant); a rotation, made from another thread, waits for them or they for it.
        """
        while not self._saving.acquire(blocking=False):
            await asyncio.sleep(_TURN_POLL_S)
        try:
            key = await asyncio.to_thread(self.keys.for_thread, thread_id)
            token = self._current.set(key)
            try:
                yield
            finally:
                self._current.reset(token)
        finally:
            self._saving.release()

    async def arotate(self, thread_ids: Sequence[str]) -> bool:
        """:meth:`rotate` from an event loop: in a worker thread, between the loop's saves."""
        return await asyncio.to_thread(self.rotate, thread_ids)

    def rotate(self, thread_ids: Sequence[str]) -> bool:
        """:meth:`ThreadKeys.rotate`, between this process's saves."""
        with self._saving:
            return self.keys.rotate(thread_ids)

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if isinstance(obj, SealedText):
            obj = obj.text
        kind, data = self.inner.dumps_typed(obj)
        current = self._current.get()
        if current is None:
            # Only LangGraph's migration of checkpoints older than its format 4 serialises
            # outside a save; Memora never wrote those.
            return kind, data
        return kind + SUFFIX, _seal(current, data)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, blob = data
        if not kind.endswith(SUFFIX):
            return self.inner.loads_typed(data)
        blob = bytes(blob)
        key_id = blob[:KEY_ID_BYTES]
        key = self.keys.by_id(key_id)
        if key is None:
            raise StoreError("a checkpoint of a deleted thread was read: its key is destroyed")
        plain = _open((key_id, key), blob)
        return self.inner.loads_typed((kind[: -len(SUFFIX)], plain))


def as_sealed_blobs(checkpoint: Any, new_versions: Any) -> tuple[Any, Any]:
    """The checkpoint with its non-empty text channels wrapped as :class:`SealedText`, and
    the versions to store with those channels added (each save stores them again: the
    saver would otherwise keep an unchanged one only inline)."""
    values = checkpoint.get("channel_values") or {}
    versions = checkpoint.get("channel_versions") or {}
    texts = {k: v for k, v in values.items() if isinstance(v, str) and v and k in versions}
    if not texts:
        return checkpoint, new_versions
    sealed = {k: SealedText(v) for k, v in texts.items()}
    wrapped = {**checkpoint, "channel_values": {**values, **sealed}}
    return wrapped, {**new_versions, **{k: versions[k] for k in texts}}
