"""Memory systems the benchmarks can run side by side: Memora and its peers.

Every evaluation protocol talks to a :class:`MemorySystem` only, so the same
code scores Memora, mem0 and LangGraph's store (the search LangMem's
``create_search_memory_tool`` runs) on the same data with the same embedding
model (Memora's offline WordLlama, a LangChain ``Embeddings``).

The peers live in the optional ``bench`` extra (``pip install -e .[bench]``);
the product never imports this module. A peer that cannot run raises
:class:`PeerUnavailable` with the exact reason, which the commands print in
its row and put in its ``--json`` entry as ``{"error": reason}``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from langchain_core.embeddings import Embeddings

from evals.common import scratch_memora
from memora.api import Memora
from memora.errors import Unavailable
from memora.models import MemorySource, MemoryStatus, MemoryType, MemoryUnit, ReconcileAction
from memora.storage.store import new_memory_id

MEMORA = "memora"
MEM0 = "mem0"
LANGGRAPH_STORE = "langgraph_store"
PEERS = (MEM0, LANGGRAPH_STORE)
"""Peer names, in the order their rows print after Memora's."""

EMBEDDING_DIMS = 256
_INSTALL_HINT = "pip install -e .[bench]"


class PeerUnavailable(Unavailable):
    """A peer cannot run here; the message says exactly why."""


@dataclass(frozen=True)
class Item:
    """One memory to bulk-load, under a key the caller chooses (a LoCoMo dia_id, …)."""

    key: str
    text: str
    created_at: datetime
    metadata: dict[str, Any] = field(default_factory=dict)
    episodic: bool = False
    """An event rather than a fact (Memora stores it as an episodic memory)."""
    source: str = "bench"


@dataclass(frozen=True)
class Written:
    """What one write-path ``add`` did."""

    key: str | None
    """Where the text can now be found (for a write skipped as a duplicate, the existing
    memory's key); None when the system refused it."""
    new: bool
    """A new memory was stored (not refused, not skipped as a duplicate)."""


class MemorySystem(Protocol):
    """The small surface every benchmark needs from a memory system."""

    name: str

    def add_many(self, user_id: str, items: Sequence[Item]) -> None:
        """Bulk-load ready memories of one user (no selection, no reconciliation)."""

    def add(self, user_id: str, text: str, created_at: datetime) -> Written:
        """Remember one text through the system's own write path."""

    def search(self, user_id: str, query: str, k: int, now: datetime | None = None) -> list[str]:
        """The keys of the user's top k memories for the query, best first."""

    def content(self, user_id: str, key: str) -> str | None:
        """The text of an active memory; None once superseded, removed or never stored."""

    def data_dir(self) -> Path | None:
        """Where the system keeps its data on disk (None when it lives in memory)."""

    def close(self) -> None:
        """Release files and threads."""


# -- Memora -------------------------------------------------------------------


class MemoraSystem:
    """Memora through its public API: ``ingest``, ``add``, ``rank_for_evaluation``."""

    name = MEMORA

    def __init__(self, memora: Memora, root: Path | None = None, actor: str = "bench") -> None:
        self.memora = memora
        self._root = root
        self._actor = actor
        self._key_of: dict[str, str] = {}

    def add_many(self, user_id: str, items: Sequence[Item]) -> None:
        units = []
        for item in items:
            unit = MemoryUnit(
                id=new_memory_id(),
                user_id=user_id,
                content=item.text,
                source=MemorySource(actor=item.source),
                metadata=dict(item.metadata),
                created_at=item.created_at,
                updated_at=item.created_at,
                memory_type=MemoryType.EPISODIC if item.episodic else MemoryType.SEMANTIC,
                kind="event" if item.episodic else "fact",
            )
            self._key_of[unit.id] = item.key
            units.append(unit)
        self.memora.ingest(units)

    def add(self, user_id: str, text: str, created_at: datetime) -> Written:
        outcome = self.memora.add(
            user_id,
            text,
            source=MemorySource(actor=self._actor),
            reason="useful_future_context",
            said_at=created_at,
        )
        new = bool(
            outcome.accepted and outcome.action and outcome.action is not ReconcileAction.SKIP
        )
        return Written(outcome.memory_id, new)

    def search(self, user_id: str, query: str, k: int, now: datetime | None = None) -> list[str]:
        hits = self.memora.rank_for_evaluation(user_id, query, k, now or datetime.now(UTC))
        return [self._key_of.get(hit.memory.id, hit.memory.id) for hit in hits]

    def content(self, user_id: str, key: str) -> str | None:
        unit = self.memora.get(user_id, key)
        return unit.content if unit is not None and unit.status is MemoryStatus.ACTIVE else None

    def data_dir(self) -> Path | None:
        return self._root

    def close(self) -> None:
        self.memora.close()


# -- mem0 ---------------------------------------------------------------------


class Mem0System:
    """mem0 (``mem0ai`` 2.2.1) fully offline: Chroma, our embedder, no LLM.

    ``add`` is mem0's own ``Memory.add(..., infer=False)``: it stores the text as
    given, with no extraction and no reconciliation (both need a model). Bulk
    loads go through its vector store's batch ``insert`` with payloads shaped like
    the ones ``add`` writes (data, hash, created_at, user_id, …), because
    ``add`` costs several ms per memory; the search sees no difference.
    """

    name = MEM0

    def __init__(self, embeddings: Embeddings, root: Path) -> None:
        self._root = root
        os.environ["MEM0_TELEMETRY"] = "False"
        os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
        os.environ["MEM0_DIR"] = str(root / "mem0-home")
        (root / "mem0-home").mkdir(parents=True, exist_ok=True)
        try:
            from mem0 import Memory
            from mem0.utils.lemmatization import lemmatize_for_bm25
        except ImportError as error:
            raise PeerUnavailable(f"mem0ai not installed ({error}): {_INSTALL_HINT}") from error
        config = {
            "vector_store": {
                "provider": "chroma",
                "config": {"collection_name": "bench", "path": str(root / "chroma")},
            },
            "embedder": {
                "provider": "langchain",
                "config": {"model": embeddings, "embedding_dims": EMBEDDING_DIMS},
            },
            # Never called: infer=False skips the model; the address refuses connections.
            "llm": {
                "provider": "openai",
                "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"},
            },
            "history_db_path": str(root / "history.db"),
        }
        try:
            self.memory = Memory.from_config(config)
        except ImportError as error:
            raise PeerUnavailable(f"mem0 dependency missing ({error}): {_INSTALL_HINT}") from error
        self._embeddings = embeddings
        self._lemmatize = lemmatize_for_bm25

    def _payload(self, user_id: str, text: str, created_at: datetime, key: str) -> dict[str, Any]:
        stamp = created_at.isoformat()
        return {
            "data": text,
            "hash": hashlib.md5(text.encode()).hexdigest(),
            "created_at": stamp,
            "updated_at": stamp,
            "text_lemmatized": self._lemmatize(text),
            "user_id": user_id,
            "role": "user",
            "key": key,
        }

    def add_many(self, user_id: str, items: Sequence[Item]) -> None:
        for start in range(0, len(items), 2000):
            chunk = items[start : start + 2000]
            self.memory.vector_store.insert(
                vectors=self._embeddings.embed_documents([item.text for item in chunk]),
                payloads=[
                    self._payload(user_id, item.text, item.created_at, item.key) for item in chunk
                ],
                ids=[str(uuid.uuid4()) for _ in chunk],
            )

    def add(self, user_id: str, text: str, created_at: datetime) -> Written:
        result = self.memory.add(text, user_id=user_id, infer=False)
        added = [r for r in result.get("results", []) if r.get("event") == "ADD"]
        return Written(str(added[0]["id"]), True) if added else Written(None, False)

    def search(self, user_id: str, query: str, k: int, now: datetime | None = None) -> list[str]:
        found = self.memory.search(query, filters={"user_id": user_id}, top_k=k, threshold=0.0)
        return [str((hit.get("metadata") or {}).get("key", hit["id"])) for hit in found["results"]]

    def content(self, user_id: str, key: str) -> str | None:
        found = self.memory.get(key)
        return str(found["memory"]) if found else None

    def data_dir(self) -> Path | None:
        return self._root

    def close(self) -> None:
        closer = getattr(self.memory, "close", None)
        if callable(closer):
            closer()


# -- LangGraph store (LangMem's search) ----------------------------------------


def unique_text_batches(items: Sequence[Item], size: int) -> list[list[Item]]:
    """``items`` in order, in batches of at most ``size`` where no text repeats.

    ``InMemoryStore.batch`` embeds each distinct text once but then pairs the
    embeddings with every item, so a batch holding one text twice fails with
    "Number of embeddings (N) does not match number of indices (N+1)" (langgraph
    issue 8822, still open; langgraph-checkpoint 4.3.2 has it). Conversations repeat short turns
    ("Ana: Sounds great!"), so a repeated text starts a new batch.
    """
    batches: list[list[Item]] = []
    current: list[Item] = []
    texts: set[str] = set()
    for item in items:
        if item.text in texts or len(current) == size:
            batches.append(current)
            current, texts = [], set()
        current.append(item)
        texts.add(item.text)
    if current:
        batches.append(current)
    return batches


class LangGraphStoreSystem:
    """LangGraph's ``InMemoryStore`` with a vector index, searched as LangMem does.

    LangMem's ``create_search_memory_tool`` (langmem 0.0.30) calls exactly
    ``store.search(namespace, query=…, limit=…)``; that store search is what runs.
    Its write path is one ``put`` (no extraction, no reconciliation).
    """

    name = LANGGRAPH_STORE

    def __init__(self, embeddings: Embeddings) -> None:
        try:
            from langmem import create_search_memory_tool  # noqa: F401  (same store API)
        except ImportError as error:
            raise PeerUnavailable(f"langmem not installed ({error}): {_INSTALL_HINT}") from error
        from langgraph.store.memory import InMemoryStore

        self.store = InMemoryStore(
            index={"dims": EMBEDDING_DIMS, "embed": embeddings, "fields": ["content"]}
        )

    @staticmethod
    def _namespace(user_id: str) -> tuple[str, str]:
        return (user_id, "memories")

    def add_many(self, user_id: str, items: Sequence[Item]) -> None:
        from langgraph.store.base import PutOp

        namespace = self._namespace(user_id)
        for batch in unique_text_batches(items, 5000):
            self.store.batch(
                [
                    PutOp(
                        namespace,
                        item.key,
                        {"content": item.text, "created_at": item.created_at.isoformat()},
                    )
                    for item in batch
                ]
            )

    def add(self, user_id: str, text: str, created_at: datetime) -> Written:
        key = str(uuid.uuid4())
        self.store.put(
            self._namespace(user_id), key, {"content": text, "created_at": created_at.isoformat()}
        )
        return Written(key, True)

    def search(self, user_id: str, query: str, k: int, now: datetime | None = None) -> list[str]:
        return [
            hit.key for hit in self.store.search(self._namespace(user_id), query=query, limit=k)
        ]

    def content(self, user_id: str, key: str) -> str | None:
        found = self.store.get(self._namespace(user_id), key)
        return str(found.value["content"]) if found else None

    def data_dir(self) -> Path | None:
        return None

    def close(self) -> None:
        return None


# -- opening systems ------------------------------------------------------------


def bench_embeddings() -> Embeddings:
    """The one embedding model every system shares: Memora's offline WordLlama."""
    from memora.embeddings import WordLlamaEmbeddings

    return WordLlamaEmbeddings()


def open_peer(name: str, root: Path, embeddings: Embeddings) -> MemorySystem:
    """Open a peer on a fresh data dir; raises :class:`PeerUnavailable` with the reason."""
    root.mkdir(parents=True, exist_ok=True)
    if name == MEM0:
        return Mem0System(embeddings, root)
    if name == LANGGRAPH_STORE:
        return LangGraphStoreSystem(embeddings)
    raise PeerUnavailable(f"unknown peer {name!r}")


@contextmanager
def open_system(
    name: str,
    data_dir: Path | None = None,
    *,
    embeddings: Embeddings | None = None,
    actor: str = "bench",
    backend: str = "sqlite",
) -> Iterator[MemorySystem]:
    """Open one system on a fresh data dir (a temporary one unless given), close it after.

    ``backend`` places Memora's store (see ``evals.common.BACKENDS``); peers ignore it.
    Raises :class:`PeerUnavailable` when a peer cannot run here.
    """
    if name == MEMORA:
        with scratch_memora(data_dir, backend) as memora:
            yield MemoraSystem(memora, data_dir or memora.settings.data_dir, actor=actor)
        return
    with tempfile.TemporaryDirectory(prefix=f"memora-peer-{name}-") as tmp:
        system = open_peer(name, data_dir or Path(tmp), embeddings or bench_embeddings())
        try:
            yield system
        finally:
            system.close()
