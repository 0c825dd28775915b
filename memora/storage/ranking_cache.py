"""Each user's memories held in this process as a matrix for ranking, kept current.

Why searches rank on a per-user matrix rather than Chroma's HNSW query: a
second process's persistent client does not see vectors that another process
added after it opened the collection (its ``get`` does, its ``query`` does
not). Each user has a generation counter in the row store, bumped by every
write; a process whose cached generation differs reloads that user's rows
from the row store and vectors from Chroma's ``get``, so no search is
answered from a stale index. The matrix search is also exact, where a
filtered HNSW query over a large shared collection may miss a user's nearest
items.

The cache holds at most ``max_users`` indexes, least recently used dropped first,
so a process serving many users (or searches for ids that hold nothing) keeps a
bounded footprint; a user with no memories is never cached at all.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime

import numpy as np

from memora.embeddings import EmbeddingSpec
from memora.models import MemoryUnit
from memora.recall.lexical import BM25Index
from memora.storage.rows import GenerationBump, IndexRow, RowStore
from memora.storage.sealing import new_key, seal, unseal
from memora.storage.vector_cache import SealedVectorCache, needs_refresh
from memora.storage.vectors import ChromaVectorIndex, VectorWriter


class UnitView(Mapping[str, MemoryUnit]):
    """The index's memories by id, each validated into a :class:`MemoryUnit` on first access."""

    def __init__(self, rows: dict[str, IndexRow]) -> None:
        self._rows = rows

    def __getitem__(self, memory_id: str) -> MemoryUnit:
        return self._rows[memory_id].unit()

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


class UserIndex:
    """One user's memories as held in this process, laid out for vectorised ranking.

    Row ``i`` of every array belongs to the ``i``-th memory inserted; rows of
    deleted memories stay but are never eligible.
    """

    def __init__(self, generation: int, dimension: int) -> None:
        self.generation = generation
        self.records: dict[str, IndexRow] = {}
        self.units = UnitView(self.records)
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

    def _grow(self, needed: int) -> None:
        capacity = self.vectors.shape[0]
        while capacity < needed:
            capacity *= 2
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
        """Add a new memory (any status) to the index."""
        self.insert_rows([IndexRow.of(unit)], np.asarray(vector)[None, :])

    def insert_rows(self, records: list[IndexRow], vectors: np.ndarray) -> None:
        """Add new stored memories (any status): one array write per field."""
        start = self.size
        end = start + len(records)
        if end > self.vectors.shape[0]:
            self._grow(end)
        self.size = end
        ids = [record.id for record in records]
        self.row_of.update(zip(ids, range(start, end), strict=True))
        self.ids.extend(ids)
        self.thread_ids.extend(record.thread_id for record in records)
        self.vectors[start:end] = vectors
        self.records.update(zip(ids, records, strict=True))
        self.lexical.add_many((r.id, r.content) for r in records if r.is_active)
        self.lexical_slot[start:end] = [
            self.lexical.slot_of(r.id) if r.is_active else -1 for r in records
        ]
        self._set_fields(slice(start, end), records)

    def mark_used(self, memory_ids: Iterable[str], at: datetime) -> None:
        """Record one more access at ``at`` to each of these memories it holds."""
        stamp = at.timestamp()
        for memory_id in memory_ids:
            record = self.records.get(memory_id)
            if record is not None:
                self.records[memory_id] = record.used_at(at)
                self.last_used_at[self.row_of[memory_id]] = stamp

    def replace(self, unit: MemoryUnit) -> None:
        """Record a memory's current fields (status, expiry, importance, access)."""
        record = IndexRow.of(unit)
        row = self.row_of[record.id]
        previous = self.records.get(record.id)
        self.records[record.id] = record
        was_indexed = previous is not None and previous.is_active
        if was_indexed and not record.is_active:
            self.lexical.remove(record.id)
            self.lexical_slot[row] = -1
        elif record.is_active and not was_indexed:
            self.lexical.add(record.id, record.content)
            self.lexical_slot[row] = self.lexical.slot_of(record.id)
        self.thread_ids[row] = record.thread_id
        self._set_fields(slice(row, row + 1), [record])

    def _set_fields(self, rows: slice, records: list[IndexRow]) -> None:
        self.active[rows] = [r.is_active for r in records]
        self.persistent[rows] = [r.is_persistent for r in records]
        self.expires_at[rows] = [np.inf if r.expires_at is None else r.expires_at for r in records]
        self.importance[rows] = [r.importance for r in records]
        self.last_used_at[rows] = [r.last_used_at for r in records]

    def drop(self, memory_id: str) -> None:
        """Remove a deleted memory; its row stays, never eligible again."""
        row = self.row_of.pop(memory_id, None)
        record = self.records.pop(memory_id, None)
        if row is None or record is None:
            return
        if record.is_active:
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


PATCH_LIMIT = 5000
"""More changed memories than this and a full reload is cheaper than patching."""
DEFAULT_MAX_USERS = 1000
"""Users whose indexes one process keeps (MEMORA_RANKING_CACHE_USERS)."""


class RankingCache:
    """This process's :class:`UserIndex` per user, reloaded when the row store's generations move.

    Not thread-safe on its own: the store serialises every call.
    """

    def __init__(
        self,
        rows: RowStore,
        vectors: ChromaVectorIndex,
        writer: VectorWriter,
        spec: EmbeddingSpec,
        local: SealedVectorCache,
        embed: Callable[[list[str]], np.ndarray] | None = None,
        max_users: int = DEFAULT_MAX_USERS,
    ) -> None:
        if max_users < 1:
            raise ValueError(f"max_users must be at least 1, got {max_users}")
        self._rows = rows
        self._local = local
        self._vectors = vectors
        self._writer = writer
        self._dimension = spec.dimension
        self._embed = embed
        self._max_users = max_users
        # Least recently used first: eviction pops from the front.
        self._indexes: OrderedDict[str, UserIndex] = OrderedDict()
        self._seen_store_generation = rows.store_generation()

    def index_for(self, user_id: str) -> UserIndex:
        """This user's ranking index, reloaded if any process wrote since it was built."""
        self._writer.note_activity()
        store_generation = self._rows.store_generation()
        if store_generation != self._seen_store_generation:
            self._vectors.see_foreign_writes()
            self._seen_store_generation = store_generation
        generation = self._rows.generation(user_id)
        index = self._indexes.get(user_id)
        if (
            index is not None
            and index.generation != generation
            and not self._patch(index, user_id, generation)
        ):
            index = None
        if index is None:
            index = self._load(user_id, generation)
            if not index.size:
                # Nothing to rank: caching it would let searches for made-up ids grow the
                # process, and the next write makes the next use load afresh anyway.
                self._indexes.pop(user_id, None)
                return index
            self._indexes[user_id] = index
            while len(self._indexes) > self._max_users:
                self._indexes.popitem(last=False)
        self._indexes.move_to_end(user_id)
        return index

    def __len__(self) -> int:
        """How many users' indexes this process holds."""
        return len(self._indexes)

    def _patch(self, index: UserIndex, user_id: str, generation: int) -> bool:
        """Apply another process's writes to ``index`` from the row store's change log.

        Returns:
            False when the log does not cover the gap (or it is too wide): reload instead.
        """
        changed = self._rows.changed_since(user_id, index.generation)
        if changed is None or len(changed) > PATCH_LIMIT:
            return False
        self._writer.flush()
        units = {unit.id: unit for unit in self._rows.get_many(user_id, changed)}
        for memory_id in changed:
            if memory_id not in units:
                index.drop(memory_id)
        new = [unit for unit in units.values() if unit.id not in index.row_of]
        for unit in units.values():
            if unit.id in index.row_of:
                index.replace(unit)
        for unit, vector in zip(new, self._vectors_for(user_id, new), strict=True):
            index.insert(unit, vector)
        index.generation = generation
        return True

    def _vectors_for(self, user_id: str, units: list[MemoryUnit]) -> list[np.ndarray]:
        """The embeddings of these new memories: unsealed from Chroma, else re-embedded."""
        if not units:
            return []
        ids = [unit.id for unit in units]
        keys = vector_keys_of(self._rows, user_id, ids)
        stored = {k: v for k, v in self._vectors.get(ids).items() if k in keys}
        found = _unsealed(stored, keys)
        self._embed_missing(units, found, keys)
        zero = np.zeros(self._dimension, dtype=np.float32)
        return [found.get(unit.id, zero) for unit in units]

    def _embed_missing(
        self, units: list[MemoryUnit], found: dict[str, np.ndarray], keys: dict[str, bytes]
    ) -> None:
        """Embed live memories Chroma has no vector for (written by a process that has not
        flushed yet, or lost in a crash) into ``found``, and queue their sealed vectors."""
        missing = [unit for unit in units if unit.id not in found and unit.id in keys]
        if missing and self._embed is not None:
            fresh = self._embed([unit.content for unit in missing])
            found.update(zip((unit.id for unit in missing), fresh, strict=True))
            self._writer.submit(missing, seal(fresh, [keys[unit.id] for unit in missing]))

    def after_write(self, user_id: str, bump: GenerationBump) -> UserIndex | None:
        """The cached index to patch in place, or None when another process wrote meanwhile."""
        if bump.store_before == self._seen_store_generation:
            self._seen_store_generation = bump.store_after
        index = self._indexes.get(user_id)
        if index is not None and index.generation == bump.before:
            index.generation = bump.after
            self._indexes.move_to_end(user_id)
            return index
        # Another process wrote in between: the next use patches from the change log.
        return None

    def clear(self) -> None:
        """Forget every cached index; each is rebuilt on next use."""
        self._indexes.clear()

    def _load(self, user_id: str, generation: int) -> UserIndex:
        index = UserIndex(generation, self._dimension)
        if not generation:
            # Never written (by any process): no rows, no vectors, nothing to wait for.
            return index
        self._writer.flush()
        records = self._rows.index_rows(user_id)
        # Strays never reach a ranking (the index is built from the rows), so the sweep
        # need not hold up the search that triggered this load.
        live = {record.id for record in records}
        self._writer.run_later(lambda: self._sweep(user_id, live))
        if not records:
            return index
        ids = [record.id for record in records]
        sealed_before = self._rows.vector_keys(user_id, ids)
        keys = vector_keys_of(self._rows, user_id, ids, known=sealed_before)
        copied = self._local.read(user_id)
        sealed = {i: copied[i] for i in ids if i in copied and i in sealed_before}
        stored = self._vectors.get([i for i in ids if i not in sealed])
        # A vector without a key was forgotten by another process since the rows were read.
        sealed |= {k: v for k, v in stored.items() if k in sealed_before}
        vectors = _unsealed(sealed, keys)
        if needs_refresh(len(stored), copied, live):
            self._writer.run_later(lambda: self._local.write(user_id, sealed))
        missing = [r.unit() for r in records if r.id not in vectors and r.id in keys]
        self._embed_missing(missing, vectors, keys)
        matrix = np.zeros((len(records), self._dimension), dtype=np.float32)
        for row, record in enumerate(records):
            vector = vectors.get(record.id)
            if vector is not None:
                matrix[row] = vector
        index.insert_rows(records, matrix)
        return index

    def _sweep(self, user_id: str, live: set[str]) -> None:
        """Delete this user's vectors that have no memory: left by a crash or a stale process."""
        strays = [memory_id for memory_id in self._vectors.ids_of(user_id) if memory_id not in live]
        if strays:
            with self._rows.vector_lock():
                # Another process may have added one of them since ``live`` was read.
                gone = set(strays) - self._rows.live_ids(strays)
                if gone:
                    self._vectors.delete(sorted(gone))


def vector_keys_of(
    rows: RowStore, user_id: str, ids: list[str], known: dict[str, bytes] | None = None
) -> dict[str, bytes]:
    """The sealing keys of these live memories, creating one for any memory without."""
    keys = dict(known) if known is not None else rows.vector_keys(user_id, ids)
    unkeyed = {memory_id: new_key() for memory_id in ids if memory_id not in keys}
    if unkeyed:
        keys.update(rows.add_vector_keys(user_id, unkeyed))
    return keys


def _unsealed(sealed: dict[str, np.ndarray], keys: dict[str, bytes]) -> dict[str, np.ndarray]:
    """The embeddings of these sealed vectors, unsealed in one batch."""
    if not sealed:
        return {}
    ids = list(sealed)
    plain = unseal(np.array([sealed[i] for i in ids]), [keys[i] for i in ids])
    return dict(zip(ids, plain, strict=True))
