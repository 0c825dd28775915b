"""Sealed vectors: exact round trip with the key, noise without it."""

from __future__ import annotations

import numpy as np

from memora.storage.sealing import MASK_SCALE, new_key, seal, unseal


def _embeddings(count: int, dimension: int = 256) -> np.ndarray:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((count, dimension))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def _keys(count: int, seed: int = 11) -> list[bytes]:
    """Fixed keys, so the statistical checks below give the same answer every run."""
    rng = np.random.default_rng(seed)
    return [rng.bytes(32) for _ in range(count)]


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_the_key_gives_the_embedding_back() -> None:
    vectors = _embeddings(50)
    keys = [new_key() for _ in vectors]
    restored = unseal(seal(vectors, keys), keys)
    assert np.abs(restored - vectors).max() < 1e-4
    for original, back in zip(vectors, restored, strict=True):
        assert _cosine(original, back) > 0.99999


def test_without_the_key_a_sealed_vector_says_nothing_of_the_embedding() -> None:
    vectors = _embeddings(400)
    sealed = seal(vectors, _keys(len(vectors)))
    own = [_cosine(v, s) for v, s in zip(vectors, sealed, strict=True)]
    other = [_cosine(v, s) for v, s in zip(vectors, np.roll(sealed, 1, axis=0), strict=True)]
    # Matching a sealed vector to its own embedding is no easier than to any other one.
    assert abs(float(np.mean(own)) - float(np.mean(other))) < 0.01
    hits = sum(int(np.argmax(vectors @ s)) == i for i, s in enumerate(sealed))
    assert hits <= 8  # chance is 1 in 400 each
    assert abs(float(np.linalg.norm(sealed[0])) - MASK_SCALE * 16) < MASK_SCALE * 4


def test_a_wrong_key_gives_noise() -> None:
    vectors = _embeddings(200)
    keys = _keys(len(vectors), seed=13)
    wrong = unseal(seal(vectors, keys), _keys(len(vectors), seed=12))
    assert abs(float(np.mean([_cosine(v, w) for v, w in zip(vectors, wrong, strict=True)]))) < 0.05


def test_the_same_key_always_draws_the_same_mask() -> None:
    key = new_key()
    vector = _embeddings(1)
    assert np.array_equal(seal(vector, [key]), seal(vector, [key]))
    assert not np.array_equal(seal(vector, [key]), seal(vector, [new_key()]))
