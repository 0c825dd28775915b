"""Conversation threads on Postgres, sealed per thread (crypto-shredding).

Postgres never zeroes a deleted row's bytes: ``VACUUM`` compacts a page and leaves
the freed bytes in the file, so a deleted thread's transcript would stay readable in
``checkpoint_blobs`` and ``checkpoint_writes``. So every value LangGraph's Postgres
checkpointer serialises is sealed (AES-256-GCM) under its thread's own random key,
kept only in ``thread_keys``. Deleting a thread deletes its key and rewrites that
small table with ``VACUUM FULL`` (a new file; the old one is truncated and unlinked):
what the checkpoint tables keep is then ciphertext without a key.

:class:`SealingSerializer` is the checkpointer's serde. Sealing needs the thread,
which a serde is not told, so the saver names it around each save
(:meth:`SealingSerializer.sealing_for`); reading needs no thread, since a sealed
value starts with its key's id. A value without the ``+sealed`` type suffix (saved
before sealing) is read as it is.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from memora.errors import StoreError

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
        with self._lock:
            self._conn.execute(_SCHEMA)
            target = self._conn.execute(
                "SELECT attstattarget FROM pg_attribute"
                " WHERE attrelid = 'thread_keys'::regclass AND attname = 'key'"
            ).fetchone()
            if target is not None and _column(target, "attstattarget", 0) != 0:
                # ANALYZE would copy sample keys into pg_statistic, which no deletion
                # rewrites. Altered once: ALTER TABLE locks out every other node meanwhile.
                self._conn.execute("ALTER TABLE thread_keys ALTER COLUMN key SET STATISTICS 0")

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
        key_id, key = bytes(_column(row, "key_id", 0)), bytes(_column(row, "key", 1))
        self._by_id[key_id] = key
        return key_id, key

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
            False when a reader held the table past the lock timeout (the keys are
            deleted; their bytes stay in the table's file until the next rewrite).
        """
        with self._lock:
            if thread_ids:
                deleted = self._conn.execute(
                    "DELETE FROM thread_keys WHERE thread_id = ANY(%s) RETURNING key_id",
                    (list(thread_ids),),
                ).fetchall()
                for row in deleted:
                    self._by_id.pop(bytes(_column(row, "key_id", 0)), None)
            self._conn.execute(f"SET lock_timeout = '{REWRITE_LOCK_TIMEOUT}'")
            try:
                self._conn.execute("VACUUM FULL thread_keys")
            except psycopg.errors.LockNotAvailable:
                return False
            finally:
                self._conn.execute("RESET lock_timeout")
        return True


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

    @contextmanager
    def sealing_for(self, thread_id: str) -> Iterator[None]:
        """Seal what is serialised meanwhile under ``thread_id``'s key."""
        token = self._current.set(self.keys.for_thread(thread_id))
        try:
            yield
        finally:
            self._current.reset(token)

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if isinstance(obj, SealedText):
            obj = obj.text
        kind, data = self.inner.dumps_typed(obj)
        current = self._current.get()
        if current is None:
            # Only LangGraph's migration of checkpoints older than its format 4 serialises
            # outside a save; Memora never wrote those.
            return kind, data
        key_id, key = current
        nonce = os.urandom(_NONCE_BYTES)
        return kind + SUFFIX, key_id + nonce + AESGCM(key).encrypt(nonce, data, key_id)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, blob = data
        if not kind.endswith(SUFFIX):
            return self.inner.loads_typed(data)
        blob = bytes(blob)
        key_id = blob[:KEY_ID_BYTES]
        nonce = blob[KEY_ID_BYTES : KEY_ID_BYTES + _NONCE_BYTES]
        key = self.keys.by_id(key_id)
        if key is None:
            raise StoreError("a checkpoint of a deleted thread was read: its key is destroyed")
        try:
            plain = AESGCM(key).decrypt(nonce, blob[KEY_ID_BYTES + _NONCE_BYTES :], key_id)
        except InvalidTag:
            raise StoreError("a sealed checkpoint value does not open with its key") from None
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
