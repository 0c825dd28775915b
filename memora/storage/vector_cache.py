"""A local copy of each user's sealed vectors, so a new process does not wait on Chroma.

Reading a user's 50,000 vectors back through Chroma's ``get`` costs about a second
(its bindings build a Python float for every component); reading the same
vectors from one ``.npy`` file costs tens of milliseconds. The copy holds sealed
vectors only (see ``memora.storage.sealing``): a forgotten memory's key is deleted with its
row, so its entry here is noise from then on, exactly like the copies Chroma's own
log keeps. A memory's sealed vector never changes while its id lives (a vector is
written once per id, and re-embedding with the same model gives the same vector), so
an entry is either right or ignored: only ids that are live and keyed are used.

The file names are a hash of the user id, not the id. A forget rewrites the copy
without the forgotten entries once searches pause (or at the next flush), and erasing the
user deletes the file, so a forgotten memory's entry does not even stay as noise in it.
Writes go to a temporary file renamed into place, so a reader in another process sees
the old copy or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

REFRESH_SHARE = 0.05
"""Rewrite a user's copy once this share of the live vectors came from Chroma or is stale."""
MAX_PENDING = 100_000
"""Vectors held for the next merge at most; past that, a later load refreshes the copy."""


class SealedVectorCache:
    """Sealed vectors by memory id, one file per user and embedding model, under ``root``."""

    def __init__(self, root: Path, model_id: str, dimension: int) -> None:
        self.root = root
        self._tag = hashlib.sha256(f"{model_id}\0{dimension}".encode()).hexdigest()[:16]
        self._dimension = dimension
        self._pending: dict[str, dict[str, np.ndarray]] = {}
        self._pending_count = 0
        self._lock = threading.Lock()

    def remember(self, user_id: str, ids: Sequence[str], sealed: np.ndarray) -> bool:
        """Hold vectors just written to Chroma for the next :meth:`merge_pending`, so the
        process that wrote a user's memories also leaves their copy.

        Returns:
            True when nothing was pending before (the caller schedules the merge).
        """
        with self._lock:
            first = not self._pending
            if self._pending_count + len(ids) <= MAX_PENDING:
                self._pending.setdefault(user_id, {}).update(zip(ids, sealed, strict=True))
                self._pending_count += len(ids)
            return first

    def merge_pending(self) -> None:
        """Add the held vectors to each user's copy, unless they are too few to be worth
        rewriting it for (a load fetches those from Chroma, and refreshes past
        ``REFRESH_SHARE``)."""
        with self._lock:
            pending, self._pending, self._pending_count = self._pending, {}, 0
        for user_id, fresh in pending.items():
            if len(fresh) > REFRESH_SHARE * self._entries(user_id):
                self.write(user_id, self.read(user_id) | fresh)

    def _entries(self, user_id: str) -> int:
        """About how many vectors the user's copy holds (from its size, without reading it)."""
        try:
            size = self._path(user_id).stat().st_size
        except FileNotFoundError:
            return 0
        return size // (4 * self._dimension)

    @staticmethod
    def _digest(user_id: str) -> str:
        return hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def _path(self, user_id: str) -> Path:
        return self.root / f"{self._digest(user_id)}-{self._tag}.npz"

    def read(self, user_id: str) -> dict[str, np.ndarray]:
        """The user's cached sealed vectors (empty when there is no usable copy)."""
        path = self._path(user_id)
        try:
            with np.load(path, allow_pickle=False) as data:
                ids = [str(memory_id) for memory_id in data["ids"]]
                sealed = np.asarray(data["sealed"], dtype=np.float32)
        except FileNotFoundError:
            return {}
        except Exception as error:  # a damaged copy is only a slower load
            logger.warning("ignoring the unreadable vector cache %s (%s)", path.name, error)
            return {}
        if sealed.shape != (len(ids), self._dimension):
            return {}
        return dict(zip(ids, sealed, strict=True))

    def write(self, user_id: str, sealed: dict[str, np.ndarray]) -> None:
        """Replace the user's copy with these sealed vectors (atomically)."""
        self.root.mkdir(parents=True, exist_ok=True)
        ids = list(sealed)
        matrix = (
            np.stack([sealed[memory_id] for memory_id in ids]).astype(np.float32)
            if ids
            else np.zeros((0, self._dimension), dtype=np.float32)
        )
        # Named after the user, so erasing them also removes what a killed writer left.
        handle, temporary = tempfile.mkstemp(
            dir=self.root, prefix=f"{self._digest(user_id)}-", suffix=".tmp"
        )
        try:
            with os.fdopen(handle, "wb") as file:
                np.savez(file, ids=np.array(ids, dtype=str), sealed=matrix)
            os.replace(temporary, self._path(user_id))
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise

    def discard(self, user_id: str, memory_ids: Iterable[str]) -> None:
        """Rewrite the user's copy without these memories' entries (forgotten ones)."""
        gone = set(memory_ids)
        with self._lock:
            held = self._pending.get(user_id, {})
            for memory_id in gone:
                held.pop(memory_id, None)
        copy = self.read(user_id)
        if gone & copy.keys():
            self.write(user_id, {k: v for k, v in copy.items() if k not in gone})

    def drop(self, user_id: str) -> None:
        """Delete the user's copies for every embedding model, and what is held for them."""
        with self._lock:
            self._pending.pop(user_id, None)
        for path in self.root.glob(f"{self._digest(user_id)}-*"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def drop_all(self) -> None:
        """Delete every copy (the vectors were rebuilt)."""
        with self._lock:
            self._pending.clear()
        for path in self.root.glob("*-*"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def needs_refresh(fetched: int, cached: Iterable[str], live_ids: set[str]) -> bool:
    """Whether a copy is worth rewriting: enough of it came from Chroma or is stale."""
    stale = sum(1 for memory_id in cached if memory_id not in live_ids)
    return bool(live_ids) and (fetched + stale) > REFRESH_SHARE * len(live_ids)
