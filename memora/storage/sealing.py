"""Sealed vectors: what Chroma holds of a memory is its vector masked with the memory's own key.

A memory's embedding is the memory too: short personal facts can be read back
from it. chromadb 1.5 does not truly delete a vector. Measured here: after
``collection.delete`` the vector's bytes stay in ``chroma.sqlite3`` (the
``embeddings_queue`` log) and, once the log was compacted, in the HNSW segment's
``data_level0.bin`` (deletion only marks it); ``delete_collection`` leaves both
until the process ends, and only a VACUUM clears the SQLite copy. Rebuilding a
collection on every forget would cost O(memories) per delete and still leave
segment files behind.

So Chroma never receives a plain embedding. Each memory gets a random 256-bit
key, kept only in the row store beside its text (SQLite with ``secure_delete``), or on
Postgres in its key table, where the text itself is sealed under the same key
(:func:`seal_text`; see ``memora.storage.rows_postgres``).
Chroma stores ``embedding + MASK_SCALE * noise(key)``, the noise a stream derived
from the key with SHAKE-256. Forgetting deletes the key with the row,
in one transaction; whatever copies Chroma's log or segments still hold are then
noise, whatever Chroma does with them.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

KEY_BYTES = 32
MASK_SCALE = 64.0
"""Noise per dimension, for unit-length embeddings. Without the key, telling the right
embedding from any other by its cosine with the sealed vector has a signal-to-noise ratio
of 1/MASK_SCALE; with the key, float32 rounding moves a component by about 1e-5."""


def new_key() -> bytes:
    """A fresh random key for one memory's vector."""
    return os.urandom(KEY_BYTES)


def _noise(keys: list[bytes], dimension: int) -> np.ndarray:
    """One row of unit-variance noise per key, times ``MASK_SCALE``: SHAKE-256 output read as
    uniform on ±sqrt(3).

    Uniform rather than Gaussian: it costs no transcendental functions, so a user's
    whole index unseals quickly; with this scale, a sealed component falls within an
    embedding component of the noise's edge (where it would hint at a sign) about once
    in two thousand. The arithmetic is float32, as stored: a mask of up to ±111 rounds
    to within 4e-6, below the float32 rounding of the sealed value itself.
    """
    raw = np.frombuffer(
        b"".join(hashlib.shake_256(key).digest(4 * dimension) for key in keys), dtype="<u4"
    ).reshape(len(keys), dimension)
    edge = np.float32(MASK_SCALE * np.sqrt(3.0))
    masks = raw.astype(np.float32)
    masks *= np.float32(2.0 / 2.0**32) * edge
    masks -= edge
    return masks


def _masks(vectors: np.ndarray, keys: list[bytes]) -> np.ndarray:
    if len(keys) != len(vectors):
        raise ValueError("one key per vector is required")
    dimension = vectors.shape[1] if vectors.ndim == 2 else 0
    return _noise(keys, dimension).reshape(vectors.shape)


def seal(vectors: np.ndarray, keys: list[bytes]) -> np.ndarray:
    """The vectors as Chroma may hold them: each masked with its memory's key."""
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors + _masks(vectors, keys)


def unseal(sealed: np.ndarray, keys: list[bytes]) -> np.ndarray:
    """The embeddings back from sealed vectors and their keys."""
    sealed = np.asarray(sealed, dtype=np.float32)
    return sealed - _masks(sealed, keys)


TEXT_FORMAT = 1
"""First byte of a sealed text. A stored text that does not start with it is plain UTF-8
(a memory that has no key yet); memory text never holds control characters."""
_NONCE_BYTES = 12


def _text_cipher(key: bytes) -> AESGCM:
    """AES-256-GCM under a key derived from the memory's key, so the text cipher and the
    vector mask never use the same bytes for two purposes."""
    return AESGCM(hashlib.blake2b(key, digest_size=32, person=b"memora-text").digest())


def seal_text(text: str, key: bytes) -> bytes:
    """A memory's text as the database may hold it: readable only with the memory's key."""
    nonce = os.urandom(_NONCE_BYTES)
    sealed = _text_cipher(key).encrypt(nonce, text.encode("utf-8"), None)
    return bytes([TEXT_FORMAT]) + nonce + sealed


def unseal_text(stored: bytes, key: bytes | None) -> str:
    """The text back from what :func:`seal_text` gave (or from plain UTF-8 bytes).

    Raises:
        ValueError: The text is sealed and the key is missing or not its own.
    """
    stored = bytes(stored)
    if not stored or stored[0] != TEXT_FORMAT:
        return stored.decode("utf-8")
    if key is None:
        raise ValueError("a sealed memory text has no key")
    nonce, sealed = stored[1 : 1 + _NONCE_BYTES], stored[1 + _NONCE_BYTES :]
    try:
        return _text_cipher(key).decrypt(nonce, sealed, None).decode("utf-8")
    except InvalidTag:
        raise ValueError("a sealed memory text does not open with its key") from None
