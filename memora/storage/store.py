"""The long-term memory store: rows, vectors and the ranking cache behind one interface.

Every call is scoped to one ``user_id``; another user's id behaves exactly
like an unknown id.

Three parts, each in its own module:

- the row store (``memora.storage.rows``): text, fields, tombstones and generations,
  the source of truth;
- the vector index (``memora.storage.vectors``): one vector per memory in Chroma,
  written in batches from a background thread;
- the ranking cache (``memora.storage.ranking_cache``): each user's memories as a
  matrix in this process, reloaded when another process wrote.

This class keeps them consistent: a write goes to the rows first, then its
vectors are queued, then the cached index is patched in place, or dropped
when the generations show that someone else wrote in between.
"""

from __future__ import annotations

import builtins
import functools
import logging
import re
import threading
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memora.embeddings import EmbeddingSpec
from memora.limits import PREVIEW_CHARS
from memora.models import MemoryStatus, MemoryUnit, utcnow
from memora.storage.db import EmbeddingMismatchError, SqlDatabase, StoreError
from memora.storage.ranking_cache import (
    DEFAULT_MAX_USERS,
    RankingCache,
    UserIndex,
    vector_keys_of,
)
from memora.storage.rows import RowStore
from memora.storage.sealing import new_key, seal
from memora.storage.sql_rows import SqliteRowStore, SqlRowStore
from memora.storage.vector_cache import SealedVectorCache
from memora.storage.vectors import COLLECTION_NAME, ChromaVectorIndex, VectorWriter

logger = logging.getLogger(__name__)

__all__ = [
    "COLLECTION_NAME",
    "EmbeddingMismatchError",
    "LongTermMemoryStore",
    "open_rows",
    "UserIndex",
    "is_memory_id",
    "new_memory_id",
]

_MEMORY_ID = re.compile(r"[0-9a-f]{32}")
UUID_FORM = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
"""A UUID in its dashed form (LangGraph's thread ids, LangMem's store keys)."""


def _superseded_by(olds: Sequence[MemoryUnit], new_id: str) -> list[MemoryUnit]:
    """The old memories marked superseded by ``new_id``, history kept."""
    now = utcnow()
    return [
        old.model_copy(
            update={"status": MemoryStatus.SUPERSEDED, "superseded_by": new_id, "updated_at": now}
        )
        for old in olds
    ]


def new_memory_id() -> str:
    """Return a fresh memory id."""
    return uuid.uuid4().hex


def is_random_id(text: str) -> bool:
    """Whether ``text`` is a random id, a memory id or a UUID (any case): its hex digits read
    as a key to the secret detectors, yet it can carry no words."""
    lowered = text.lower()
    return is_memory_id(lowered) or UUID_FORM.fullmatch(lowered) is not None


def is_memory_id(text: str) -> bool:
    """Whether ``text`` has the form :func:`new_memory_id` gives (32 lowercase hex digits).

    Ids are shown to the model; an imported id of any other form could carry words.
    """
    return _MEMORY_ID.fullmatch(text) is not None


def open_rows(data_dir: Path, database_url: str | None = None) -> tuple[SqlRowStore, str]:
    """The row store (Postgres when a URL is given, else SQLite in ``data_dir``) and where it is.

    Opened before the store itself when the recorded embedding model decides which model
    to load (``Memora`` with ``MEMORA_EMBEDDINGS`` unset).
    """
    if database_url:
        from memora.storage.postgres import PostgresDatabase, describe_url
        from memora.storage.rows_postgres import PostgresRowStore

        return PostgresRowStore(PostgresDatabase(database_url)), (
            f"the database {describe_url(database_url)}"
        )
    return SqliteRowStore(data_dir / "memora.db"), f"the memory store in {data_dir}"


class LongTermMemoryStore:
    """Persistent, user-scoped memory storage with an in-process ranking index."""

    def __init__(
        self,
        data_dir: Path,
        spec: EmbeddingSpec,
        chroma_url: str | None = None,
        *,
        database_url: str | None = None,
        chroma_collection: str = COLLECTION_NAME,
        embed: Callable[[list[str]], np.ndarray] | None = None,
        allow_model_change: bool = False,
        ranking_cache_users: int = DEFAULT_MAX_USERS,
        rows: tuple[SqlRowStore, str] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.spec = spec
        sql_rows, self._where = rows or open_rows(data_dir, database_url)
        self.db: SqlDatabase = sql_rows.db
        self.rows: RowStore = sql_rows
        self._check_model(allow_model_change)
        self.vectors = ChromaVectorIndex(
            data_dir, spec, chroma_url, chroma_collection, owner_label=self.rows.user_tag
        )
        self._vector_writer = VectorWriter(self._write_live_vectors)
        self.local_vectors = SealedVectorCache(
            data_dir / "vector_cache", spec.model_id, spec.dimension
        )
        self._cache = RankingCache(
            self.rows,
            self.vectors,
            self._vector_writer,
            spec,
            self.local_vectors,
            embed,
            max_users=ranking_cache_users,
        )
        self._lock = threading.RLock()

    @property
    def collection(self) -> Any:
        """The Chroma collection, opened on first use."""
        return self.vectors.collection

    def flush(self) -> None:
        """Wait for queued vector writes to reach Chroma."""
        self._vector_writer.flush()

    def close(self) -> None:
        """Flush pending vectors and close the database."""
        self.flush()
        self.rows.close()

    def _check_model(self, allow_change: bool) -> None:
        recorded = self.rows.embedding_model()
        if recorded is None:
            self.rows.record_embedding_model(self.spec.model_id, self.spec.dimension)
            return
        if not allow_change and (
            recorded.model_id != self.spec.model_id
            or recorded.dimension != str(self.spec.dimension)
        ):
            raise EmbeddingMismatchError(
                f"{self._where} was built with embedding model "
                f"{recorded.model_id} ({recorded.dimension} dims) but {self.spec.model_id} "
                f"({self.spec.dimension} dims) is configured; run `memora memories reindex` "
                "to re-embed every memory with the configured model"
            )

    def index_for(self, user_id: str) -> UserIndex:
        """This user's ranking index, reloaded if any process wrote since it was built."""
        with self._lock:
            return self._cache.index_for(user_id)

    def cached_users(self) -> int:
        """How many users' ranking indexes this process holds (bounded by the settings)."""
        with self._lock:
            return len(self._cache)

    # -- writes ----------------------------------------------------------

    def add(
        self,
        units: Sequence[MemoryUnit],
        vectors: np.ndarray,
        sentences: Sequence[np.ndarray | None] | None = None,
    ) -> list[str]:
        """Store new memories with their vectors; all must belong to one user. ``sentences``:
        each memory's sentence vector as the trained judgement read it, kept beside its key
        for the relation decision to read when a later memory meets it (None: not read).

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
        keys = [new_key() for _ in units]
        with self._lock:
            bump = self.rows.insert(user_id, units, keys, _sentence_bytes(sentences))
            self._vector_writer.submit(units, seal(vectors, keys))
            index = self._cache.after_write(user_id, bump)
            if index is not None:
                for unit, vector in zip(units, vectors, strict=True):
                    index.insert(unit, vector)
        return [unit.id for unit in units]

    def _write_live_vectors(self, units: Sequence[MemoryUnit], sealed: np.ndarray) -> None:
        """Write sealed vectors of memories that still exist; a forgotten one gets none back."""
        with self.rows.vector_lock():
            live = self.rows.live_ids([unit.id for unit in units])
            keep = [i for i, unit in enumerate(units) if unit.id in live]
            if keep:
                self.vectors.upsert([units[i] for i in keep], sealed[keep])
        by_user: dict[str, list[int]] = {}
        for i in keep:
            by_user.setdefault(units[i].user_id, []).append(i)
        for user_id, rows in by_user.items():
            ids = [units[i].id for i in rows]
            if self.local_vectors.remember(user_id, ids, sealed[rows]):
                self._vector_writer.run_later(self.local_vectors.merge_pending)

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
        bump = self.rows.rewrite(user_id, units)
        index = self._cache.after_write(user_id, bump)
        if index is not None:
            for unit in units:
                index.replace(unit)

    def supersede(
        self,
        user_id: str,
        old_ids: Iterable[str],
        new_unit: MemoryUnit,
        vector: np.ndarray,
        sentence: np.ndarray | None = None,
    ) -> list[str]:
        """Store ``new_unit`` (with its ``sentence`` vector, as :meth:`add` takes it) and mark
        the old memories superseded by it, keeping history.

        Returns:
            The ids that were superseded (unknown or foreign ids are ignored).
        """
        with self._lock:
            olds = self._others(user_id, old_ids, new_unit.id)
            if olds:
                new_unit.supersedes = olds[0].id
            self.add([new_unit], np.asarray([vector]), [sentence])
            if olds:
                self._rewrite(user_id, _superseded_by(olds, new_unit.id))
            return [old.id for old in olds]

    def supersede_with_stored(
        self, user_id: str, old_ids: Iterable[str], memory_id: str
    ) -> list[str] | None:
        """Let a stored memory supersede the old ones, as :meth:`supersede` does for a new
        one, and clear its review flag (a person settled the conflict).

        Returns:
            The ids that were superseded, or None when ``memory_id`` is unknown or foreign.
        """
        with self._lock:
            unit = self.get(user_id, memory_id)
            if unit is None:
                return None
            olds = self._others(user_id, old_ids, memory_id)
            settled = unit.model_copy(
                update={
                    "supersedes": olds[0].id if olds else unit.supersedes,
                    "needs_review": False,
                    "updated_at": utcnow(),
                }
            )
            self._rewrite(user_id, [settled, *_superseded_by(olds, memory_id)])
            return [old.id for old in olds]

    def _others(self, user_id: str, old_ids: Iterable[str], new_id: str) -> list[MemoryUnit]:
        """The user's memories among ``old_ids``, other than ``new_id``, in the given order."""
        found = (self.get(user_id, i) for i in dict.fromkeys(old_ids) if i != new_id)
        return [old for old in found if old is not None]

    def sentence_vectors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The sentence vectors kept with these memories of the user (see :meth:`add`); a
        damaged one is left out, and its memory read as one without."""
        stored = self.rows.sentence_vectors(user_id, memory_ids)
        return {
            i: np.frombuffer(raw, dtype="<f4").copy()
            for i, raw in stored.items()
            if raw and len(raw) % 4 == 0
        }

    def touch(self, user_id: str, memory_ids: Iterable[str]) -> int:
        """Record an access to memories the agent used; returns how many were updated."""
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return 0
        now = utcnow()
        with self._lock:
            touched, bump = self.rows.touch(user_id, ids, now)
            index = self._cache.after_write(user_id, bump)
            if index is not None:
                index.mark_used(ids, now)
        return touched

    def delete(
        self, user_id: str, memory_id: str, only: Collection[str] | None = None
    ) -> list[str]:
        """Hard-delete a memory and every older version it replaced, leaving tombstones; a
        newer version that replaced it stays (a fact of its own, kept as the user last said).
        ``only``: of those, delete only these ids (the versions a person was shown).

        Idempotent: deleting an unknown, foreign or already deleted id returns [].
        """
        with self._lock:
            replaced = self.replaced(user_id, memory_id)
            chain_ids = [u.id for u in replaced if only is None or u.id in only]
            if not chain_ids:
                return []
            bump = self.rows.delete_with_tombstones(user_id, chain_ids)
            self.flush()
            try:
                with self.rows.vector_lock():
                    self.vectors.delete(chain_ids)
            except StoreError as error:
                # The keys went with the rows: what Chroma still holds is noise, swept on load.
                logger.warning("forgotten vectors stay in Chroma until the next sweep: %s", error)
            # The copy's entries are noise already (their keys are gone); rewriting a user's
            # copy costs ~0.1 s at 50,000, so it waits for a pause instead of the answer.
            self._vector_writer.run_later(
                functools.partial(self.local_vectors.discard, user_id, chain_ids)
            )
            index = self._cache.after_write(user_id, bump)
            if index is not None:
                for deleted in chain_ids:
                    index.drop(deleted)
            return chain_ids

    def erase_user(self, user_id: str) -> tuple[builtins.list[str], int]:
        """Delete every memory of the user and every vector labelled as theirs.

        Returns:
            The deleted memory ids, and how many vectors Chroma held for the user.
        """
        with self._lock:
            self.flush()
            ids = self.rows.erase_user(user_id)
            with self.rows.vector_lock():
                vector_ids = self.vectors.ids_of(user_id)
                self.vectors.delete(vector_ids)
                self.local_vectors.drop(user_id)
            self._cache.clear()
            return ids, len(vector_ids)

    def mark_review(self, user_id: str, memory_id: str, needs_review: bool) -> None:
        """Flag or unflag a memory for a person's review."""
        self.update(user_id, memory_id, needs_review=needs_review)

    # -- reads -----------------------------------------------------------

    def chain(self, user_id: str, memory_id: str) -> list[MemoryUnit]:
        """Every memory linked to ``memory_id`` by supersession, oldest first."""
        return self.rows.chain(user_id, memory_id)

    def replaced(self, user_id: str, memory_id: str) -> list[MemoryUnit]:
        """The memory and every older version it replaced (what a delete removes)."""
        return self.rows.replaced(user_id, memory_id)

    def get(self, user_id: str, memory_id: str) -> MemoryUnit | None:
        """One memory of this user, or None for an unknown or foreign id."""
        return self.rows.get(user_id, memory_id)

    def foreign_ids(self, user_id: str, memory_ids: Sequence[str]) -> set[str]:
        """Which of these ids a memory or tombstone of another user holds (for imports)."""
        return self.rows.foreign_ids(user_id, memory_ids)

    def scrub(self) -> bool:
        """Make deleted rows unreadable from storage (see ``SqlDatabase.reclaim``)."""
        return self.rows.scrub()

    def get_preview(
        self, user_id: str, memory_id: str, max_chars: int = PREVIEW_CHARS
    ) -> str | None:
        """A short read-only preview of one memory, or None if unknown or foreign."""
        unit = self.get(user_id, memory_id)
        if unit is None:
            return None
        content = unit.content
        return content if len(content) <= max_chars else content[:max_chars] + "..."

    def list(
        self,
        user_id: str,
        status: MemoryStatus | None = None,
        *,
        review_only: bool = False,
        limit: int | None = None,
        offset: int = 0,
        metadata: tuple[str, str] | None = None,
    ) -> list[MemoryUnit]:
        """This user's memories, oldest first, optionally of one status, optionally one page;
        with ``metadata=(field, value)``, only those whose metadata holds that text value."""
        return self.rows.list(
            user_id, status, review_only=review_only, limit=limit, offset=offset, metadata=metadata
        )

    def count(self, user_id: str, status: MemoryStatus | None = None) -> int:
        """How many memories this user has, optionally of one status."""
        return self.rows.count(user_id, status)

    def users(self) -> builtins.list[str]:
        """Every user id that has memories."""
        return self.rows.users()

    def is_tombstoned(self, user_id: str, memory_id: str) -> bool:
        """Whether this user's memory was deleted."""
        return self.rows.is_tombstoned(user_id, memory_id)

    # -- re-embedding ------------------------------------------------------

    def reindex(self, embed: Any, batch_size: int = 512) -> int:
        """Re-embed every memory with ``embed`` (texts -> matrix) into a fresh collection.

        Returns:
            The number of memories re-embedded.
        """
        self.flush()
        with self._lock:
            self.vectors.drop()
            self.local_vectors.drop_all()
            self._cache.clear()
            units = self.rows.all_memories()
            for start in range(0, len(units), batch_size):
                chunk = units[start : start + batch_size]
                keys = {}
                for user_id in {unit.user_id for unit in chunk}:
                    ids = [unit.id for unit in chunk if unit.user_id == user_id]
                    keys.update(vector_keys_of(self.rows, user_id, ids))
                vectors = embed([unit.content for unit in chunk])
                self.vectors.upsert(chunk, seal(vectors, [keys[unit.id] for unit in chunk]))
            self.rows.record_reindex(self.spec.model_id, self.spec.dimension)
            return len(units)


def _sentence_bytes(sentences: Sequence[np.ndarray | None] | None) -> list[bytes | None] | None:
    """Sentence vectors as stored: little-endian float32."""
    if sentences is None:
        return None
    return [None if v is None else np.asarray(v, dtype="<f4").tobytes() for v in sentences]
