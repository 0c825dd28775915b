"""The long-term memory store: text and metadata in SQLite, vectors in Chroma.

Every call is scoped to one ``user_id``; another user's id behaves exactly
like an unknown id.

Why the text stays out of Chroma: chromadb 1.5 keeps deleted documents in its
write-ahead log (``embeddings_queue``, chroma issue 7659), so a forgotten
memory's text would survive on disk. Chroma holds only vectors and the owner's
user id; SQLite with ``secure_delete`` holds the text, and deleting a row
really removes it.

Why searches rank on a per-user matrix rather than Chroma's HNSW query: a
second process's persistent client does not see vectors that another process
added after it opened the collection (its ``get`` does, its ``query`` does
not). Each user has a generation counter in SQLite, bumped by every write;
a process whose cached generation differs reloads that user's rows from
SQLite and vectors from Chroma's ``get``, so no search is answered from a
stale index. The matrix search is also exact, where a filtered HNSW query
over a large shared collection may miss a user's nearest items.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import json
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from memora.db import Database, StoreError
from memora.embeddings import EmbeddingSpec
from memora.lexical import BM25Index
from memora.models import MemoryScope, MemorySource, MemoryStatus, MemoryUnit, utcnow

logger = logging.getLogger(__name__)

COLLECTION_NAME = "memora_memories"
_STORE_WIDE = ""
"""Generation row counting every write to the store, whoever the user."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    content TEXT NOT NULL,
    memory_type TEXT NOT NULL,
    kind TEXT NOT NULL,
    scope TEXT NOT NULL,
    thread_id TEXT,
    importance INTEGER NOT NULL,
    confidence REAL NOT NULL,
    source TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    last_accessed_at TEXT,
    access_count INTEGER NOT NULL DEFAULT 0,
    expires_at TEXT,
    status TEXT NOT NULL,
    superseded_by TEXT,
    supersedes TEXT,
    embedding_model TEXT NOT NULL,
    needs_review INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS memories_user_status ON memories (user_id, status);
CREATE TABLE IF NOT EXISTS tombstones (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    deleted_at TEXT NOT NULL,
    chain_ids TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS generations (
    user_id TEXT PRIMARY KEY,
    generation INTEGER NOT NULL
);
"""

_COLUMNS = (
    "id",
    "user_id",
    "content",
    "memory_type",
    "kind",
    "scope",
    "thread_id",
    "importance",
    "confidence",
    "source",
    "metadata",
    "created_at",
    "updated_at",
    "last_accessed_at",
    "access_count",
    "expires_at",
    "status",
    "superseded_by",
    "supersedes",
    "embedding_model",
    "needs_review",
)


class EmbeddingMismatchError(StoreError):
    """The collection was built with another embedding model or dimension."""


def new_memory_id() -> str:
    """Return a fresh memory id."""
    return uuid.uuid4().hex


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _row_values(unit: MemoryUnit) -> tuple[Any, ...]:
    return (
        unit.id,
        unit.user_id,
        unit.content,
        unit.memory_type.value,
        unit.kind,
        unit.scope.value,
        unit.thread_id,
        unit.importance,
        unit.confidence,
        unit.source.model_dump_json(),
        json.dumps(unit.metadata, ensure_ascii=False),
        _iso(unit.created_at),
        _iso(unit.updated_at),
        _iso(unit.last_accessed_at),
        unit.access_count,
        _iso(unit.expires_at),
        unit.status.value,
        unit.superseded_by,
        unit.supersedes,
        unit.embedding_model,
        int(unit.needs_review),
    )


def _unit_from_row(row: Any) -> MemoryUnit:
    data = {name: row[name] for name in _COLUMNS}
    data["source"] = MemorySource.model_validate_json(data["source"])
    data["metadata"] = json.loads(data["metadata"])
    return MemoryUnit.model_validate(data)


def _epoch(value: datetime | None, default: float) -> float:
    return value.timestamp() if value is not None else default


class UserIndex:
    """One user's memories as held in this process, laid out for vectorised ranking.

    Row ``i`` of every array belongs to the ``i``-th memory inserted; rows of
    deleted memories stay but are never eligible.
    """

    def __init__(self, generation: int, dimension: int) -> None:
        self.generation = generation
        self.units: dict[str, MemoryUnit] = {}
        self.row_of: dict[str, int] = {}
        self.ids: list[str] = []
        self.thread_ids: list[str | None] = []
        self.lexical = BM25Index()
        self.size = 0
        capacity = 64
        self.vectors = np.zeros((capacity, dimension), dtype=np.float32)
        self.active = np.zeros(capacity, dtype=bool)
        self.persistent = np.zeros(capacity, dtype=bool)
        self.expires_at = np.full(capacity, np.inf)
        self.importance = np.zeros(capacity)
        self.last_used_at = np.zeros(capacity)
        self.lexical_slot = np.full(capacity, -1, dtype=np.int64)

    def _grow(self) -> None:
        capacity = self.vectors.shape[0] * 2
        for name, fill in (
            ("vectors", 0.0),
            ("active", False),
            ("persistent", False),
            ("expires_at", np.inf),
            ("importance", 0.0),
            ("last_used_at", 0.0),
            ("lexical_slot", -1),
        ):
            old = getattr(self, name)
            grown = np.full((capacity, *old.shape[1:]), fill, dtype=old.dtype)
            grown[: old.shape[0]] = old
            setattr(self, name, grown)

    def insert(self, unit: MemoryUnit, vector: np.ndarray) -> None:
        """Add a memory (any status) to the index."""
        if self.size == self.vectors.shape[0]:
            self._grow()
        row = self.size
        self.size += 1
        self.row_of[unit.id] = row
        self.ids.append(unit.id)
        self.thread_ids.append(unit.thread_id)
        self.vectors[row] = vector
        self.replace(unit)

    def replace(self, unit: MemoryUnit) -> None:
        """Record a memory's current fields (status, expiry, importance, access)."""
        row = self.row_of[unit.id]
        previous = self.units.get(unit.id)
        self.units[unit.id] = unit
        is_active = unit.status is MemoryStatus.ACTIVE
        was_indexed = previous is not None and previous.status is MemoryStatus.ACTIVE
        if was_indexed and not is_active:
            self.lexical.remove(unit.id)
            self.lexical_slot[row] = -1
        elif is_active and not was_indexed:
            self.lexical.add(unit.id, unit.content)
            self.lexical_slot[row] = self.lexical.slot_of(unit.id)
        self.active[row] = is_active
        self.persistent[row] = unit.scope is MemoryScope.PERSISTENT
        self.thread_ids[row] = unit.thread_id
        self.expires_at[row] = _epoch(unit.expires_at, np.inf)
        self.importance[row] = unit.importance
        self.last_used_at[row] = _epoch(unit.last_accessed_at or unit.created_at, 0.0)

    def drop(self, memory_id: str) -> None:
        """Remove a deleted memory; its row stays, never eligible again."""
        row = self.row_of.pop(memory_id, None)
        unit = self.units.pop(memory_id, None)
        if row is None or unit is None:
            return
        if unit.status is MemoryStatus.ACTIVE:
            self.lexical.remove(memory_id)
        self.active[row] = False
        self.lexical_slot[row] = -1

    def eligible_rows(self, now: datetime, thread_id: str | None) -> np.ndarray:
        """Rows of active, unexpired memories in scope for ``thread_id``."""
        size = self.size
        in_scope = self.persistent[:size].copy()
        if thread_id is not None:
            in_scope |= np.fromiter(
                (tid == thread_id for tid in self.thread_ids), dtype=bool, count=size
            )
        mask = self.active[:size] & (self.expires_at[:size] > now.timestamp()) & in_scope
        return np.flatnonzero(mask)


def _open_chroma(data_dir: Path, chroma_url: str | None) -> Any:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    settings = ChromaSettings(anonymized_telemetry=False)
    if chroma_url:
        parsed = urlparse(chroma_url)
        return chromadb.HttpClient(
            host=parsed.hostname or "127.0.0.1",
            port=parsed.port or 8000,
            ssl=parsed.scheme == "https",
            settings=settings,
        )
    return chromadb.PersistentClient(path=str(data_dir / "chroma"), settings=settings)


def _at_thread_shutdown(callback: Callable[[], None]) -> None:
    """Run ``callback`` when the interpreter starts shutting down threads.

    Plain ``atexit`` is too late: concurrent.futures, which chromadb uses,
    refuses new work once threading's shutdown hooks ran, and those run first.
    Hooks registered later run earlier, so this one still finds Chroma alive.
    """
    register = getattr(threading, "_register_atexit", None)
    if register is None:  # pragma: no cover - present on every supported CPython
        atexit.register(callback)
    else:
        register(callback)


@dataclass(frozen=True)
class _Bump:
    """The user's and the store-wide generations around one write."""

    before: int
    after: int
    store_before: int
    store_after: int


class _VectorWriter:
    """Writes vectors to Chroma from one background thread, batched, in submission order.

    A Chroma upsert costs about 30 ms here whatever its size (an fsync), and
    its bindings hold the GIL meanwhile, so writing each memory's vector
    inline or on its own would blow the write path's budget. Vectors are
    gathered for up to ``max_delay_s`` and written in one call. SQLite holds
    the text and is the source of truth: a vector not yet written (or lost in
    a crash) is re-embedded from it by whichever process next loads the user.
    """

    def __init__(
        self,
        write: Callable[[Sequence[MemoryUnit], np.ndarray], None],
        max_delay_s: float = 1.0,
        max_batch: int = 2000,
    ) -> None:
        self._write = write
        self._max_delay_s = max_delay_s
        self._max_batch = max_batch
        self._queue: queue.Queue[tuple[list[MemoryUnit], np.ndarray] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def submit(self, units: Sequence[MemoryUnit], vectors: np.ndarray) -> None:
        """Queue vectors for writing."""
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="memora-vector-writer", daemon=True
                )
                self._thread.start()
                _at_thread_shutdown(self.flush)
        self._queue.put((list(units), np.array(vectors, dtype=np.float32)))

    def flush(self) -> None:
        """Write everything queued now and wait until it is written (or logged as failed)."""
        if self._thread is not None:
            self._queue.put(None)
            self._queue.join()

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            deadline = time.monotonic() + self._max_delay_s
            while batch[-1] is not None and sum(len(b[0]) for b in batch if b) < self._max_batch:
                try:
                    batch.append(self._queue.get(timeout=max(0.0, deadline - time.monotonic())))
                except queue.Empty:
                    break
            items = [item for item in batch if item is not None]
            try:
                if items:
                    self._write(
                        [unit for units, _ in items for unit in units],
                        np.vstack([vectors for _, vectors in items]),
                    )
            except Exception:  # the next load re-embeds what is missing
                logger.warning(
                    "could not write %d vector batches to Chroma", len(items), exc_info=True
                )
            finally:
                for _ in batch:
                    self._queue.task_done()


class LongTermMemoryStore:
    """Persistent, user-scoped memory storage with an in-process ranking index."""

    def __init__(
        self,
        data_dir: Path,
        spec: EmbeddingSpec,
        chroma_url: str | None = None,
        *,
        embed: Callable[[list[str]], np.ndarray] | None = None,
        allow_model_change: bool = False,
    ) -> None:
        self.data_dir = data_dir
        self._embed = embed
        self.spec = spec
        self.db = Database(data_dir / "memora.db", _SCHEMA)
        self._check_model(allow_model_change)
        self._chroma_url = chroma_url
        self._client: Any = None
        self._collection: Any = None
        self._indexes: dict[str, UserIndex] = {}
        self._seen_store_generation = self._generation(_STORE_WIDE)
        self._lock = threading.RLock()
        self._chroma_lock = threading.RLock()
        self._vector_writer = _VectorWriter(self._upsert_vectors)

    def flush(self) -> None:
        """Wait for queued vector writes to reach Chroma."""
        self._vector_writer.flush()

    def close(self) -> None:
        """Flush pending vectors and close the database."""
        self.flush()
        self.db.close()

    # -- model identity -------------------------------------------------

    def _check_model(self, allow_change: bool) -> None:
        rows = {r["key"]: r["value"] for r in self.db.query("SELECT key, value FROM meta")}
        recorded = rows.get("embedding_model")
        dimension = rows.get("embedding_dimension")
        if recorded is None:
            with self.db.transaction() as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('embedding_model', ?),"
                    " ('embedding_dimension', ?)",
                    (self.spec.model_id, str(self.spec.dimension)),
                )
            return
        if not allow_change and (
            recorded != self.spec.model_id or dimension != str(self.spec.dimension)
        ):
            raise EmbeddingMismatchError(
                f"the memory store in {self.data_dir} was built with embedding model "
                f"{recorded} ({dimension} dims) but {self.spec.model_id} "
                f"({self.spec.dimension} dims) is configured; run `memora memories reindex` "
                "to re-embed every memory with the configured model"
            )

    @property
    def collection(self) -> Any:
        """The Chroma collection, opened through langchain-chroma on first use."""
        if self._collection is None:
            from langchain_chroma import Chroma

            try:
                client = _open_chroma(self.data_dir, self._chroma_url)
                self._client = client
                store = Chroma(
                    client=client,
                    collection_name=COLLECTION_NAME,
                    collection_metadata={
                        "hnsw:space": "cosine",
                        "embedding_model": self.spec.model_id,
                        "embedding_dimension": self.spec.dimension,
                    },
                )
            except Exception as error:  # chromadb raises many types; all mean "unusable"
                raise StoreError(f"cannot open the Chroma store: {error}") from None
            metadata = store._collection.metadata or {}
            if metadata.get("embedding_model", self.spec.model_id) != self.spec.model_id:
                raise EmbeddingMismatchError(
                    f"the Chroma collection holds {metadata.get('embedding_model')} vectors but "
                    f"{self.spec.model_id} is configured; run `memora memories reindex`"
                )
            self._collection = store._collection
        return self._collection

    def _reopen_chroma(self) -> None:
        """Drop the Chroma client so the next use opens a fresh one.

        A persistent client that has only read does not see another
        process's later writes (its ``get`` by id even fails), so after a
        foreign write the client is closed and opened again.
        """
        with self._chroma_lock:
            if self._client is not None and self._chroma_url is None:
                # A client that fails to close is replaced all the same.
                with contextlib.suppress(Exception):
                    self._client.close()
            self._client = None
            self._collection = None

    # -- generations and the in-process index ----------------------------

    def _generation(self, user_id: str) -> int:
        rows = self.db.query("SELECT generation FROM generations WHERE user_id = ?", (user_id,))
        return int(rows[0]["generation"]) if rows else 0

    def _bump(self, conn: Any, user_id: str) -> _Bump:
        """Advance the user's and the store-wide counters inside the write's transaction."""

        def read(key: str) -> int:
            row = conn.execute(
                "SELECT generation FROM generations WHERE user_id = ?", (key,)
            ).fetchone()
            return int(row["generation"]) if row else 0

        before, store_before = read(user_id), read(_STORE_WIDE)
        conn.executemany(
            "INSERT INTO generations VALUES (?, 1) ON CONFLICT(user_id)"
            " DO UPDATE SET generation = generation + 1",
            [(user_id,), (_STORE_WIDE,)],
        )
        return _Bump(before, before + 1, store_before, store_before + 1)

    def _load_index(self, user_id: str, generation: int) -> UserIndex:
        index = UserIndex(generation, self.spec.dimension)
        units = [
            _unit_from_row(row)
            for row in self.db.query(
                f"SELECT {', '.join(_COLUMNS)} FROM memories WHERE user_id = ?"
                " ORDER BY created_at, rowid",
                (user_id,),
            )
        ]
        if not units:
            return index
        self.flush()
        vectors = self._fetch_vectors([unit.id for unit in units])
        missing = [unit for unit in units if unit.id not in vectors]
        if missing and self._embed is not None:
            # Written by a process that has not flushed yet, or lost in a crash.
            fresh = self._embed([unit.content for unit in missing])
            vectors.update(zip((unit.id for unit in missing), fresh, strict=True))
            self._vector_writer.submit(missing, fresh)
        zero = np.zeros(self.spec.dimension, dtype=np.float32)
        for unit in units:
            index.insert(unit, vectors.get(unit.id, zero))
        return index

    def _fetch_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(ids), 5000):
            batch = list(ids[start : start + 5000])
            with self._chroma_lock:
                result = self.collection.get(ids=batch, include=["embeddings"])
            embeddings = result.get("embeddings")
            if embeddings is None:
                continue
            for memory_id, vector in zip(result["ids"], embeddings, strict=True):
                found[memory_id] = np.asarray(vector, dtype=np.float32)
        return found

    def index_for(self, user_id: str) -> UserIndex:
        """This user's ranking index, reloaded if any process wrote since it was built."""
        with self._lock:
            store_generation = self._generation(_STORE_WIDE)
            if store_generation != self._seen_store_generation:
                self._reopen_chroma()
                self._seen_store_generation = store_generation
            generation = self._generation(user_id)
            index = self._indexes.get(user_id)
            if index is None or index.generation != generation:
                index = self._load_index(user_id, generation)
                self._indexes[user_id] = index
            return index

    def _after_write(self, user_id: str, bump: _Bump) -> UserIndex | None:
        """The cached index to patch in place, or None when another process wrote meanwhile."""
        if bump.store_before == self._seen_store_generation:
            self._seen_store_generation = bump.store_after
        index = self._indexes.get(user_id)
        if index is not None and index.generation == bump.before:
            index.generation = bump.after
            return index
        self._indexes.pop(user_id, None)
        return None

    # -- writes ----------------------------------------------------------

    def add(self, units: Sequence[MemoryUnit], vectors: np.ndarray) -> list[str]:
        """Store new memories with their vectors; all must belong to one user.

        Raises:
            StoreError: The store cannot be written.
            ValueError: The units span several users or do not match the vectors.
        """
        if not units:
            return []
        user_id = units[0].user_id
        if any(unit.user_id != user_id for unit in units):
            raise ValueError("add() takes memories of one user at a time")
        if len(vectors) != len(units):
            raise ValueError("one vector per memory is required")
        for unit in units:
            unit.embedding_model = self.spec.model_id
        with self._lock:
            with self.db.transaction() as conn:
                conn.executemany(
                    f"INSERT INTO memories ({', '.join(_COLUMNS)}) VALUES"
                    f" ({', '.join('?' for _ in _COLUMNS)})",
                    [_row_values(unit) for unit in units],
                )
                bump = self._bump(conn, user_id)
            self._vector_writer.submit(units, vectors)
            index = self._after_write(user_id, bump)
            if index is not None:
                for unit, vector in zip(units, vectors, strict=True):
                    index.insert(unit, vector)
        return [unit.id for unit in units]

    def _upsert_vectors(self, units: Sequence[MemoryUnit], vectors: np.ndarray) -> None:
        try:
            self._chroma_lock.acquire()  # released in finally; `with` would add a level
            for start in range(0, len(units), 5000):
                chunk = units[start : start + 5000]
                self.collection.upsert(
                    ids=[unit.id for unit in chunk],
                    embeddings=np.asarray(vectors[start : start + 5000], dtype=np.float32),
                    metadatas=[{"user_id": unit.user_id} for unit in chunk],
                )
        except StoreError:
            raise
        except Exception as error:
            raise StoreError(f"cannot write vectors to Chroma: {error}") from None
        finally:
            self._chroma_lock.release()

    def update(self, user_id: str, memory_id: str, **changes: Any) -> MemoryUnit | None:
        """Change fields of one memory (not its content or owner); None if unknown."""
        forbidden = {"id", "user_id", "content", "embedding_model"} & changes.keys()
        if forbidden:
            raise ValueError(f"update() cannot change {sorted(forbidden)}")
        with self._lock:
            current = self.get(user_id, memory_id)
            if current is None:
                return None
            updated = current.model_copy(update={**changes, "updated_at": utcnow()})
            MemoryUnit.model_validate(updated.model_dump())
            self._rewrite(user_id, [updated])
            return updated

    def _rewrite(self, user_id: str, units: Sequence[MemoryUnit]) -> None:
        assignments = ", ".join(f"{name} = ?" for name in _COLUMNS[2:])
        with self.db.transaction() as conn:
            conn.executemany(
                f"UPDATE memories SET {assignments} WHERE id = ? AND user_id = ?",
                [(*_row_values(unit)[2:], unit.id, user_id) for unit in units],
            )
            bump = self._bump(conn, user_id)
        index = self._after_write(user_id, bump)
        if index is not None:
            for unit in units:
                index.replace(unit)

    def supersede(
        self, user_id: str, old_ids: Iterable[str], new_unit: MemoryUnit, vector: np.ndarray
    ) -> list[str]:
        """Store ``new_unit`` and mark the old memories superseded by it, keeping history.

        Returns:
            The ids that were superseded (unknown or foreign ids are ignored).
        """
        with self._lock:
            olds = [m for m in (self.get(user_id, i) for i in old_ids) if m is not None]
            if olds:
                new_unit.supersedes = olds[0].id
            self.add([new_unit], np.asarray([vector]))
            now = utcnow()
            changed = [
                old.model_copy(
                    update={
                        "status": MemoryStatus.SUPERSEDED,
                        "superseded_by": new_unit.id,
                        "updated_at": now,
                    }
                )
                for old in olds
            ]
            if changed:
                self._rewrite(user_id, changed)
            return [old.id for old in olds]

    def touch(self, user_id: str, memory_ids: Iterable[str]) -> int:
        """Record an access to memories the agent used; returns how many were updated."""
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return 0
        now = utcnow().isoformat()
        with self._lock, self.db.transaction() as conn:
            cursor = conn.executemany(
                "UPDATE memories SET last_accessed_at = ?, access_count = access_count + 1"
                " WHERE id = ? AND user_id = ?",
                [(now, memory_id, user_id) for memory_id in ids],
            )
            touched = cursor.rowcount
            bump = self._bump(conn, user_id)
        index = self._after_write(user_id, bump)
        if index is not None:
            for memory_id in ids:
                unit = index.units.get(memory_id)
                if unit is not None:
                    index.replace(
                        unit.model_copy(
                            update={
                                "last_accessed_at": datetime.fromisoformat(now),
                                "access_count": unit.access_count + 1,
                            }
                        )
                    )
        return touched

    def chain(self, user_id: str, memory_id: str) -> list[MemoryUnit]:
        """Every memory linked to ``memory_id`` by supersession, oldest first."""
        start = self.get(user_id, memory_id)
        if start is None:
            return []
        seen: dict[str, MemoryUnit] = {start.id: start}
        frontier = [start.id]
        while frontier:
            placeholders = ", ".join("?" for _ in frontier)
            rows = self.db.query(
                f"SELECT {', '.join(_COLUMNS)} FROM memories WHERE user_id = ? AND"
                f" (id IN ({placeholders}) OR superseded_by IN ({placeholders})"
                f" OR supersedes IN ({placeholders}))",
                (user_id, *frontier, *frontier, *frontier),
            )
            frontier = []
            for row in rows:
                unit = _unit_from_row(row)
                for linked in (unit.id, unit.superseded_by, unit.supersedes):
                    if linked and linked not in seen:
                        frontier.append(linked)
                if unit.id not in seen:
                    seen[unit.id] = unit
                    frontier.append(unit.id)
        return sorted(seen.values(), key=lambda unit: unit.created_at)

    def delete(self, user_id: str, memory_id: str) -> list[str]:
        """Hard-delete a memory and its whole supersession chain, leaving a tombstone.

        Idempotent: deleting an unknown, foreign or already deleted id returns [].
        """
        with self._lock:
            chain_ids = [unit.id for unit in self.chain(user_id, memory_id)]
            if not chain_ids:
                return []
            placeholders = ", ".join("?" for _ in chain_ids)
            with self.db.transaction() as conn:
                conn.execute(
                    f"DELETE FROM memories WHERE user_id = ? AND id IN ({placeholders})",
                    (user_id, *chain_ids),
                )
                conn.executemany(
                    "INSERT OR REPLACE INTO tombstones VALUES (?, ?, ?, ?)",
                    [
                        (deleted, user_id, utcnow().isoformat(), json.dumps(chain_ids))
                        for deleted in chain_ids
                    ],
                )
                bump = self._bump(conn, user_id)
            self.flush()
            try:
                with self._chroma_lock:
                    self.collection.delete(ids=chain_ids)
            except Exception as error:  # text is already gone; a stray vector is unreachable
                raise StoreError(f"memory deleted but its vectors remain: {error}") from None
            index = self._after_write(user_id, bump)
            if index is not None:
                for deleted in chain_ids:
                    index.drop(deleted)
            return chain_ids

    def mark_review(self, user_id: str, memory_id: str, needs_review: bool) -> None:
        """Flag or unflag a memory for a person's review."""
        self.update(user_id, memory_id, needs_review=needs_review)

    # -- reads -----------------------------------------------------------

    def get(self, user_id: str, memory_id: str) -> MemoryUnit | None:
        """One memory of this user, or None for an unknown or foreign id."""
        rows = self.db.query(
            f"SELECT {', '.join(_COLUMNS)} FROM memories WHERE id = ? AND user_id = ?",
            (memory_id, user_id),
        )
        return _unit_from_row(rows[0]) if rows else None

    def get_preview(self, user_id: str, memory_id: str, max_chars: int = 120) -> str | None:
        """A short read-only preview of one memory, or None if unknown or foreign."""
        unit = self.get(user_id, memory_id)
        if unit is None:
            return None
        content = unit.content
        return content if len(content) <= max_chars else content[:max_chars] + "..."

    def list(
        self, user_id: str, status: MemoryStatus | None = None, *, review_only: bool = False
    ) -> list[MemoryUnit]:
        """This user's memories, oldest first, optionally of one status."""
        sql = f"SELECT {', '.join(_COLUMNS)} FROM memories WHERE user_id = ?"
        params: list[Any] = [user_id]
        if status is not None:
            sql += " AND status = ?"
            params.append(status.value)
        if review_only:
            sql += " AND needs_review = 1"
        rows = self.db.query(sql + " ORDER BY created_at, rowid", params)
        return [_unit_from_row(row) for row in rows]

    def count(self, user_id: str, status: MemoryStatus | None = None) -> int:
        """How many memories this user has, optionally of one status."""
        sql = "SELECT COUNT(*) AS n FROM memories WHERE user_id = ?"
        params: list[Any] = [user_id]
        if status is not None:
            sql += " AND status = ?"
            params.append(status.value)
        return int(self.db.query(sql, params)[0]["n"])

    def users(self) -> builtins.list[str]:
        """Every user id that has memories."""
        return [row["user_id"] for row in self.db.query("SELECT DISTINCT user_id FROM memories")]

    def is_tombstoned(self, user_id: str, memory_id: str) -> bool:
        """Whether this user's memory was deleted."""
        rows = self.db.query(
            "SELECT 1 FROM tombstones WHERE id = ? AND user_id = ?", (memory_id, user_id)
        )
        return bool(rows)

    # -- re-embedding ------------------------------------------------------

    def reindex(self, embed: Any, batch_size: int = 512) -> int:
        """Re-embed every memory with ``embed`` (texts -> matrix) into a fresh collection.

        Returns:
            The number of memories re-embedded.
        """
        self.flush()
        with self._lock:
            self._reopen_chroma()
            try:
                client = _open_chroma(self.data_dir, self._chroma_url)
                client.delete_collection(COLLECTION_NAME)
            except Exception:  # missing collection: nothing to drop
                pass
            self._collection = None
            self._indexes.clear()
            rows = self.db.query(f"SELECT {', '.join(_COLUMNS)} FROM memories ORDER BY rowid")
            units = [_unit_from_row(row) for row in rows]
            for start in range(0, len(units), batch_size):
                chunk = units[start : start + batch_size]
                self._upsert_vectors(chunk, embed([unit.content for unit in chunk]))
            with self.db.transaction() as conn:
                conn.execute("UPDATE memories SET embedding_model = ?", (self.spec.model_id,))
                conn.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('embedding_model', ?),"
                    " ('embedding_dimension', ?)",
                    (self.spec.model_id, str(self.spec.dimension)),
                )
                conn.execute("UPDATE generations SET generation = generation + 1")
            return len(units)
