"""The row store: every memory's text and fields, tombstones, and write generations.

The row store is the source of truth. The vector index and each process's
ranking cache are derived from it and rebuilt from it when they fall behind.

Every write reads and advances two generation counters inside its own
transaction: the writing user's, and a store-wide one that counts every
write whoever the user. A process compares them with what it last saw to
know whether anyone else wrote meanwhile; bumping in the same transaction
means a write and its generation are never seen apart.

:class:`RowStore` is the interface the rest of Memora uses. :class:`SqlRowStore`
implements it once in SQL that SQLite and Postgres both run; :class:`SqliteRowStore`
puts it on one SQLite file with ``secure_delete`` (see ``memora.db``), so deleting
a row really removes its text, and ``memora.storage.rows_postgres`` on a shared database.
"""

from __future__ import annotations

import builtins
import copy
import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memora.models import MemoryScope, MemorySource, MemoryStatus, MemoryUnit

CHANGE_LOG_GENERATIONS = 1000
"""Generations of changes kept per user; a process further behind reloads the user."""
SQLITE_ID_BATCH = 900
"""Ids per ``IN (…)`` list, below SQLite's default limit of 999 bound parameters."""
STORE_WIDE = ""
"""Generation row counting every write to the store, whoever the user."""
SCRUBBED_TABLES = ("memories", "vector_keys", "changes", "tombstones", "generations")
"""Tables whose deleted rows held memory text or keys, name forgotten ids, or an erased user."""

_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS memories (
    {types.insertion_sequence}id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    content TEXT NOT NULL,
    memory_type TEXT NOT NULL,
    kind TEXT NOT NULL,
    scope TEXT NOT NULL,
    thread_id TEXT,
    importance INTEGER NOT NULL,
    confidence {types.real} NOT NULL,
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
    needs_review {types.flag}
)""",
    """CREATE TABLE IF NOT EXISTS tombstones (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    deleted_at TEXT NOT NULL,
    chain_ids TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS generations (
    user_id TEXT PRIMARY KEY,
    generation {types.counter} NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS changes (
    user_id TEXT NOT NULL,
    generation {types.counter} NOT NULL,
    memory_id TEXT NOT NULL,
    PRIMARY KEY (user_id, generation, memory_id)
)""",
    """CREATE TABLE IF NOT EXISTS vector_keys (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    key {types.bytes} NOT NULL,
    sentence {types.bytes}
)""",
)


@dataclass(frozen=True)
class ColumnTypes:
    """How a dialect spells the few column types the row store's tables differ in."""

    insertion_sequence: str
    """A column definition (with its comma) numbering rows as inserted, or empty."""
    real: str
    """A floating-point column."""
    flag: str
    """A true/false column with its constraints, false by default."""
    counter: str
    """A generation counter."""
    bytes: str
    """A binary column."""


def table_statements(types: ColumnTypes) -> builtins.list[str]:
    """The row store's ``CREATE TABLE IF NOT EXISTS`` statements in ``types``' dialect."""
    return [statement.format(types=types) for statement in _TABLES]


SQLITE_SCHEMA = ";\n".join(
    [
        *table_statements(
            ColumnTypes(
                insertion_sequence="",
                real="REAL",
                flag="INTEGER NOT NULL DEFAULT 0",
                counter="INTEGER",
                bytes="BLOB",
            )
        ),
        "CREATE INDEX IF NOT EXISTS memories_user_status ON memories (user_id, status)",
    ]
)

COLUMNS = (
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
SELECT = f"SELECT {', '.join(COLUMNS)} FROM memories"


_LAST_ACCESSED_AT = COLUMNS.index("last_accessed_at")
_ACCESS_COUNT = COLUMNS.index("access_count")


def _epoch(value: Any) -> float | None:
    """A stored timestamp (ISO text, or a datetime from a driver) as epoch seconds."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    return datetime.fromisoformat(str(value)).timestamp()


class IndexRow:
    """One stored memory as the ranking index reads it: the fields it ranks on, and the
    validated :class:`MemoryUnit` only when a caller asks for it.

    Building a unit costs about 17 µs; a user of 50,000 memories would pay most of a
    second for units that a search never returns.
    """

    __slots__ = (
        "id",
        "content",
        "thread_id",
        "is_active",
        "is_persistent",
        "importance",
        "created_at",
        "expires_at",
        "last_used_at",
        "_values",
        "_unit",
    )

    def __init__(self, values: Sequence[Any]) -> None:
        """Read a row as stored (columns in ``COLUMNS`` order)."""
        field = dict(zip(COLUMNS, values, strict=True))
        self._values: tuple[Any, ...] | None = tuple(values)
        self._unit: MemoryUnit | None = None
        self.id: str = str(field["id"])
        self.content: str = str(field["content"])
        self.thread_id: str | None = field["thread_id"]
        self.is_active: bool = field["status"] == MemoryStatus.ACTIVE.value
        self.is_persistent: bool = field["scope"] == MemoryScope.PERSISTENT.value
        self.importance: int = int(field["importance"])
        self.created_at: float = _epoch(field["created_at"]) or 0.0
        self.expires_at: float | None = _epoch(field["expires_at"])
        self.last_used_at: float = _epoch(field["last_accessed_at"]) or self.created_at

    @classmethod
    def of(cls, unit: MemoryUnit) -> IndexRow:
        """The row of an already built unit (nothing serialised)."""
        row = cls.__new__(cls)
        row._values = None
        row._unit = unit
        row.id = unit.id
        row.content = unit.content
        row.thread_id = unit.thread_id
        row.is_active = unit.status is MemoryStatus.ACTIVE
        row.is_persistent = unit.scope is MemoryScope.PERSISTENT
        row.importance = unit.importance
        row.created_at = unit.created_at.timestamp()
        row.expires_at = unit.expires_at.timestamp() if unit.expires_at else None
        row.last_used_at = (
            unit.last_accessed_at.timestamp() if unit.last_accessed_at else row.created_at
        )
        return row

    def used_at(self, at: datetime) -> IndexRow:
        """This row after one more access at ``at``.

        Patched from what the row holds: stored values stay values (no unit is built
        for it), and a unit already built is copied with the two fields changed.
        """
        row = copy.copy(self)
        row.last_used_at = at.timestamp()
        if self._values is not None:
            values = list(self._values)
            values[_LAST_ACCESSED_AT] = at.isoformat()
            values[_ACCESS_COUNT] = int(values[_ACCESS_COUNT]) + 1
            row._values = tuple(values)
        if self._unit is not None:
            row._unit = self._unit.model_copy(
                update={"last_accessed_at": at, "access_count": self._unit.access_count + 1}
            )
        return row

    def unit(self) -> MemoryUnit:
        """The validated memory (built on first use)."""
        if self._unit is None:
            assert self._values is not None  # one of the two is always set
            self._unit = _unit_from_values(self._values)
        return self._unit


@dataclass(frozen=True)
class GenerationBump:
    """The user's and the store-wide generations around one write."""

    before: int
    after: int
    store_before: int
    store_after: int


@dataclass(frozen=True)
class EmbeddingModelRecord:
    """The embedding model the stored vectors were made with, as recorded."""

    model_id: str
    dimension: str | None


class RowStore(Protocol):
    """Memories, tombstones and generations of many users; every call is user-scoped.

    Another user's id behaves exactly like an unknown id. Each write method
    applies its change and advances the generations in one transaction and
    returns them as a :class:`GenerationBump`.
    """

    def insert(
        self,
        user_id: str,
        units: Sequence[MemoryUnit],
        keys: Sequence[bytes],
        sentences: Sequence[bytes | None] | None = None,
    ) -> GenerationBump:
        """Store new memories of ``user_id``, each with the key that seals its vector and,
        where given, its sentence vector (:meth:`sentence_vectors`)."""
        ...

    def sentence_vectors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, bytes]:
        """The sentence vectors stored with these memories' keys (the judgement encoder's
        reading of each as written); ids without a live memory or a vector are left out."""
        ...

    def rewrite(self, user_id: str, units: Sequence[MemoryUnit]) -> GenerationBump:
        """Overwrite every field but id and owner of existing memories of ``user_id``."""
        ...

    def touch(
        self, user_id: str, memory_ids: Sequence[str], at: datetime
    ) -> tuple[int, GenerationBump]:
        """Record one access at ``at``; returns how many memories were updated."""
        ...

    def delete_with_tombstones(self, user_id: str, memory_ids: Sequence[str]) -> GenerationBump:
        """Delete memories and their vector keys; leave a tombstone for each, naming them all."""
        ...

    def vector_keys(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, bytes]:
        """The vector keys of these memories; ids without a live memory or key are left out."""
        ...

    def erase_user(self, user_id: str) -> builtins.list[str]:
        """Delete every memory and vector key of the user, leaving a tombstone per memory;
        what stays of the user is their :meth:`user_tag`, never the id."""
        ...

    def user_tag(self, user_id: str) -> str:
        """A keyed one-way digest of the user id (Chroma's label, an erased user's trace)."""
        ...

    def add_vector_keys(self, user_id: str, keys: dict[str, bytes]) -> dict[str, bytes]:
        """Give live memories that have no key one; returns the keys that were stored."""
        ...

    def live_ids(self, memory_ids: Sequence[str]) -> set[str]:
        """Which of these ids still have a memory (of any user)."""
        ...

    def changed_since(self, user_id: str, generation: int) -> builtins.list[str] | None:
        """Ids of the user's memories written after ``generation`` (None: ask for a reload)."""
        ...

    def get_many(self, user_id: str, memory_ids: Sequence[str]) -> builtins.list[MemoryUnit]:
        """The user's live memories among ``memory_ids``."""
        ...

    def foreign_ids(self, user_id: str, memory_ids: Sequence[str]) -> set[str]:
        """Which of these ids a memory or tombstone of another user holds (for imports)."""
        ...

    def vector_lock(self) -> AbstractContextManager[None]:
        """Held across processes while vectors are checked and written, or deleted.

        A vector writer checks that its memories still exist and writes their
        vectors under this lock; a forget deletes the rows first and the vectors
        under it. So no vector is ever written for a memory already forgotten.
        """
        ...

    def get(self, user_id: str, memory_id: str) -> MemoryUnit | None:
        """One memory, or None for an unknown or foreign id."""
        ...

    def list(
        self,
        user_id: str,
        status: MemoryStatus | None = None,
        *,
        review_only: bool = False,
        limit: int | None = None,
        offset: int = 0,
        metadata: tuple[str, str] | None = None,
    ) -> builtins.list[MemoryUnit]:
        """The user's memories, oldest first, optionally of one status or flagged ones,
        or whose metadata holds one (field, text value) pair, optionally one page of them."""
        ...

    def index_rows(self, user_id: str) -> builtins.list[IndexRow]:
        """All the user's memories as :class:`IndexRow`, oldest first (for the ranking index)."""
        ...

    def all_memories(self) -> builtins.list[MemoryUnit]:
        """Every memory of every user, in insertion order."""
        ...

    def count(self, user_id: str, status: MemoryStatus | None = None) -> int:
        """How many memories the user has, optionally of one status."""
        ...

    def users(self) -> builtins.list[str]:
        """Every user id that has memories."""
        ...

    def chain(self, user_id: str, memory_id: str) -> builtins.list[MemoryUnit]:
        """Every memory linked to ``memory_id`` by supersession, oldest first."""
        ...

    def replaced(self, user_id: str, memory_id: str) -> builtins.list[MemoryUnit]:
        """The memory and every older version it replaced, oldest first."""
        ...

    def is_tombstoned(self, user_id: str, memory_id: str) -> bool:
        """Whether this user's memory was deleted."""
        ...

    def generation(self, user_id: str) -> int:
        """How many writes the user's memories have seen."""
        ...

    def store_generation(self) -> int:
        """How many writes the whole store has seen."""
        ...

    def embedding_model(self) -> EmbeddingModelRecord | None:
        """The recorded embedding model, or None for a new store."""
        ...

    def record_embedding_model(self, model_id: str, dimension: int) -> None:
        """Record the embedding model of a new store."""
        ...

    def record_reindex(self, model_id: str, dimension: int) -> None:
        """Mark every memory as embedded with ``model_id`` and advance every generation."""
        ...

    def scrub(self) -> bool:
        """Make deleted text unrecoverable from storage; False if it must be retried."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def row_values(unit: MemoryUnit) -> tuple[Any, ...]:
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
        unit.needs_review,
    )


def unit_from_row(row: Any) -> MemoryUnit:
    """A unit from a row read by column name (SQLite's ``Row`` or psycopg's dict)."""
    return _unit_from_values(tuple(row[name] for name in COLUMNS))


def _unit_from_values(values: Sequence[Any]) -> MemoryUnit:
    data = dict(zip(COLUMNS, values, strict=True))
    data["source"] = MemorySource.model_validate_json(data["source"])
    data["metadata"] = json.loads(data["metadata"])
    return MemoryUnit.model_validate(data)
