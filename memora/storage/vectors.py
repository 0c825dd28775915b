"""The vector index: one Chroma collection of memory vectors, and its background writer.

Why the text stays out of Chroma: chromadb 1.5 keeps deleted documents in its
write-ahead log (``embeddings_queue``, chroma issue 7659), so a forgotten
memory's text would survive on disk. Chroma holds only vectors and the owner's
user id; the row store holds the text, and deleting a row really removes it.

Chroma is read by id only (``get``), never queried by similarity: ranking
runs on a per-user matrix (see ``memora.storage.ranking_cache``).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import fcntl
import functools
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from memora.embeddings import EmbeddingSpec
from memora.models import MemoryUnit
from memora.storage.db import EmbeddingMismatchError, StoreError

logger = logging.getLogger(__name__)

COLLECTION_NAME = "memora_memories"
CHROMA_BATCH = 5000
"""Ids or vectors per Chroma call; a local client refuses more than 5461 at once."""
CHROMA_ATTEMPTS = 4
"""Tries of one Chroma call, reopening the client between them."""


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


def _get_by_ids(collection: Any, ids: list[str], include: list[str]) -> Any:
    return collection.get(ids=ids, include=include)


def _upsert(collection: Any, **fields: Any) -> Any:
    return collection.upsert(**fields)


def _delete_ids(collection: Any, ids: list[str]) -> Any:
    return collection.delete(ids=ids)


class ChromaVectorIndex:
    """Memory vectors by id, labelled with their owner, in a persistent or remote Chroma.

    The label is ``owner_label(user_id)``: the store's keyed digest of the id
    (``RowStore.user_tag``), so Chroma's files, which keep deleted records' metadata
    in their log and free pages, never hold a user id. Vectors written before carry
    ``user_id`` itself and are still found.

    Threads of this process share one client through a lock.
    """

    def __init__(
        self,
        data_dir: Path,
        spec: EmbeddingSpec,
        chroma_url: str | None = None,
        collection_name: str = COLLECTION_NAME,
        owner_label: Callable[[str], str] = str,
    ) -> None:
        self.owner_label = owner_label
        self.data_dir = data_dir
        self.spec = spec
        self._chroma_url = chroma_url
        self.collection_name = collection_name
        self._client: Any = None
        self._collection: Any = None
        self._lock = threading.RLock()

    @property
    def collection(self) -> Any:
        """The Chroma collection, opened through langchain-chroma on first use.

        Raises:
            StoreError: Chroma cannot be opened.
            EmbeddingMismatchError: The collection holds another model's vectors.
        """
        if self._collection is None:
            from langchain_chroma import Chroma

            for attempt in range(CHROMA_ATTEMPTS):
                try:
                    with self._open_lock():
                        client = _open_chroma(self.data_dir, self._chroma_url)
                        self._client = client
                        store = Chroma(
                            client=client,
                            collection_name=self.collection_name,
                            collection_metadata={
                                "hnsw:space": "cosine",
                                "embedding_model": self.spec.model_id,
                                "embedding_dimension": self.spec.dimension,
                            },
                        )
                    break
                except Exception as error:  # chromadb raises many types; all mean "unusable"
                    if attempt == CHROMA_ATTEMPTS - 1:
                        raise StoreError(f"cannot open the Chroma store: {error}") from None
                    logger.info("opening Chroma failed (%s); retrying", error)
                    self._forget_half_open_client()
                    time.sleep(0.05 * 2**attempt)
            metadata = store._collection.metadata or {}
            if metadata.get("embedding_model", self.spec.model_id) != self.spec.model_id:
                raise EmbeddingMismatchError(
                    f"the Chroma collection holds {metadata.get('embedding_model')} vectors but "
                    f"{self.spec.model_id} is configured; run `memora memories reindex`"
                )
            self._collection = store._collection
        return self._collection

    @contextlib.contextmanager
    def _open_lock(self) -> Iterator[None]:
        """An exclusive ``flock`` while a persistent client opens.

        Processes opening one new data dir at once race to create Chroma's own
        tables ("table collections already exists"); a server needs no lock.
        """
        if self._chroma_url is not None:
            yield
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with (self.data_dir / "chroma.open-lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _forget_half_open_client(self) -> None:
        """Drop a client whose opening failed, and chromadb's cached system for its path:
        reusing that half-built system fails on every later call."""
        self._client = None
        self._collection = None
        from chromadb.api.shared_system_client import SharedSystemClient

        # chromadb keys a persistent client's system by its directory; other paths' stay.
        identifier = str(self.data_dir / "chroma")
        with SharedSystemClient._refcount_lock:
            SharedSystemClient._identifier_to_system.pop(identifier, None)
            SharedSystemClient._identifier_to_refcount.pop(identifier, None)

    def reopen(self) -> None:
        """Drop the Chroma client so the next use opens a fresh one.

        A persistent client that has only read does not see another
        process's later writes (its ``get`` by id even fails), so after a
        foreign write the client is closed and opened again.
        """
        with self._lock:
            if self._client is not None and self._chroma_url is None:
                # A client that fails to close is replaced all the same.
                with contextlib.suppress(Exception):
                    self._client.close()
            self._client = None
            self._collection = None

    def see_foreign_writes(self) -> None:
        """Make another process's writes visible: a persistent client is reopened, a
        server's client already sees them."""
        if self._chroma_url is None:
            self.reopen()

    def _call(self, action: str, operation: Callable[[Any], Any]) -> Any:
        """Run ``operation(collection)``, reopening the client and retrying on a Chroma error.

        Another process's writes can leave this process's client with a stale
        view (``Error finding id``); a fresh client sees the current state.

        Raises:
            StoreError: Chroma still fails after the retries.
        """
        for attempt in range(CHROMA_ATTEMPTS):
            try:
                with self._lock:
                    return operation(self.collection)
            except StoreError:
                raise
            except Exception as error:
                if attempt == CHROMA_ATTEMPTS - 1:
                    raise StoreError(f"cannot {action} vectors in Chroma: {error}") from None
                logger.info("Chroma %s failed (%s); reopening and retrying", action, error)
                self.reopen()
                time.sleep(0.05 * 2**attempt)
        raise AssertionError("unreachable")

    def get(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these ids; ids without a vector are left out.

        Raises:
            StoreError: Chroma cannot be read.
        """
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(ids), CHROMA_BATCH):
            found.update(self._get_batch(list(ids[start : start + CHROMA_BATCH])))
        return found

    def _get_batch(self, batch: list[str]) -> dict[str, np.ndarray]:
        """One batch of :meth:`get`.

        A Chroma server that is being written to by another process can answer
        with fewer embeddings than ids; such an answer cannot be paired, so it is
        asked again, and a batch that never pairs counts as having no vectors
        (callers re-embed a memory whose vector is missing).
        """
        for attempt in range(CHROMA_ATTEMPTS):
            result = self._call(
                "read", functools.partial(_get_by_ids, ids=batch, include=["embeddings"])
            )
            embeddings = result.get("embeddings")
            if embeddings is None:
                return {}
            if len(embeddings) == len(result["ids"]):
                return {
                    memory_id: np.asarray(vector, dtype=np.float32)
                    for memory_id, vector in zip(result["ids"], embeddings, strict=True)
                }
            time.sleep(0.05 * 2**attempt)
        logger.warning("Chroma kept answering with unpaired vectors; treating them as missing")
        return {}

    def upsert(self, units: Sequence[MemoryUnit], vectors: np.ndarray) -> None:
        """Write one vector per memory, labelled with its owner.

        Raises:
            StoreError: Chroma cannot be written.
        """
        for start in range(0, len(units), CHROMA_BATCH):
            chunk = units[start : start + CHROMA_BATCH]
            embeddings = np.asarray(vectors[start : start + CHROMA_BATCH], dtype=np.float32)
            self._call(
                "write",
                functools.partial(
                    _upsert,
                    ids=[unit.id for unit in chunk],
                    embeddings=embeddings,
                    metadatas=[{"owner": self.owner_label(unit.user_id)} for unit in chunk],
                ),
            )

    def ids_of(self, user_id: str) -> list[str]:
        """Every id with a vector labelled as ``user_id``'s.

        Raises:
            StoreError: Chroma cannot be read.
        """
        where = {"$or": [{"owner": self.owner_label(user_id)}, {"user_id": user_id}]}
        result = self._call("read", lambda c: c.get(where=where, include=[]))
        return list(result["ids"])

    def delete(self, ids: Sequence[str]) -> None:
        """Remove these ids' vectors.

        Raises:
            StoreError: Chroma cannot be written.
        """
        for start in range(0, len(ids), CHROMA_BATCH):
            batch = list(ids[start : start + CHROMA_BATCH])
            self._call("delete", functools.partial(_delete_ids, ids=batch))

    def drop(self) -> None:
        """Delete the whole collection; the next use creates it empty for the configured model."""
        self.reopen()
        try:
            client = _open_chroma(self.data_dir, self._chroma_url)
            client.delete_collection(self.collection_name)
        except Exception:  # missing collection: nothing to drop
            pass
        self._collection = None


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


UPKEEP_IDLE_S = 2.0
"""Upkeep waits for this long a pause in searches and writes (or a flush), so that no answer
waits for it or shares the interpreter with it."""
_Batch = tuple[list[MemoryUnit], np.ndarray]
_WAKE = "wake"
"""Queue marker that only makes the writer look at its upkeep again."""


class VectorWriter:
    """Writes vectors to Chroma from one background thread, batched, in submission order.

    A Chroma upsert costs about 30 ms here whatever its size (an fsync), and
    its bindings hold the GIL meanwhile, so writing each memory's vector
    inline or on its own would blow the write path's budget. Vectors are
    gathered for up to ``max_delay_s`` and written in one call. The row store
    holds the text and is the source of truth: a vector not yet written (or
    lost in a crash) is re-embedded from it by whichever process next loads
    the user.

    The same thread runs upkeep (sweeping stray vectors) once writes pause, since
    it holds the GIL as much as a write does.
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
        self._queue: queue.Queue[_Batch | str | None] = queue.Queue()
        self._upkeep: collections.deque[Callable[[], None]] = collections.deque()
        self._last_activity = time.monotonic()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="memora-vector-writer", daemon=True
                )
                self._thread.start()
                _at_thread_shutdown(self.flush)

    def submit(self, units: Sequence[MemoryUnit], vectors: np.ndarray) -> None:
        """Queue vectors for writing."""
        self._start()
        self._queue.put((list(units), np.array(vectors, dtype=np.float32)))

    def note_activity(self) -> None:
        """A search or write is under way: pending upkeep waits for the next pause."""
        self._last_activity = time.monotonic()

    def run_later(self, task: Callable[[], None]) -> None:
        """Run ``task`` on the writer's thread after a pause in activity, or at the next flush."""
        self._start()
        self._upkeep.append(task)
        self._queue.put(_WAKE)

    def flush(self) -> None:
        """Write everything queued now, run pending upkeep, and wait until both are done."""
        if self._thread is not None:
            self._queue.put(None)
            self._queue.join()

    def _run(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=self._upkeep_wait())
            except queue.Empty:
                if time.monotonic() - self._last_activity >= UPKEEP_IDLE_S:
                    self._run_upkeep()
                continue
            batch = [first]
            deadline = time.monotonic() + self._max_delay_s
            while isinstance(batch[-1], tuple) and self._queued_units(batch) < self._max_batch:
                try:
                    batch.append(self._queue.get(timeout=max(0.0, deadline - time.monotonic())))
                except queue.Empty:
                    break
            items = [item for item in batch if isinstance(item, tuple)]
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
                if None in batch:
                    self._run_upkeep()
                for _ in batch:
                    self._queue.task_done()

    def _upkeep_wait(self) -> float | None:
        """Seconds until pending upkeep may run (None: nothing pending, wait for work)."""
        if not self._upkeep:
            return None
        return max(0.05, UPKEEP_IDLE_S - (time.monotonic() - self._last_activity))

    def _run_upkeep(self) -> None:
        while self._upkeep:
            task = self._upkeep.popleft()
            try:
                task()
            except StoreError as error:  # a known state of the store: one line says it
                logger.warning("vector upkeep failed: %s", error)
            except Exception:  # the next load schedules the same upkeep again
                logger.warning("vector upkeep failed", exc_info=True)

    @staticmethod
    def _queued_units(batch: list[_Batch | str | None]) -> int:
        return sum(len(item[0]) for item in batch if isinstance(item, tuple))
