"""Forgetting leaves nothing: the files on disk are scanned for the forgotten memory.

What is looked for: the memory's text, its embedding as Chroma would store it
(float32 bytes), and the key that unseals the vector Chroma holds. Chroma may
keep its sealed copy in its log or segment files; without the key it is noise.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from memora.api import Memora
from memora.config import load_settings
from memora.models import MemorySource, MemoryUnit
from memora.storage.sealing import unseal
from tests.conftest import Services, postgres_backend, tables_containing
from tests.integration.test_chroma_server import chroma_url  # noqa: F401  (fixture)

FACTS = [
    "I keep a sourdough starter named Bubbles",
    "My favourite tea is oolong",
    "I run the Taipei marathon every December",
    "My sister works as a nurse in Tainan",
    "I am allergic to peanuts",
    "My bike is a blue Brompton",
    "I play the cello in a community orchestra",
    "My dog is a corgi named Mochi",
    "I prefer aisle seats on flights",
    "I learned to swim when I was thirty",
]
SECRET_FACT = "My ex-husband Chen Wei lives in Taichung"


def files_containing(root: Path, needles: list[bytes]) -> list[str]:
    """Every file under ``root`` holding any of ``needles`` (SQLite WAL files included).

    Chroma's HNSW ``length.bin`` is left out: chromadb writes it from an unzeroed buffer of
    the process's heap (chroma-core/chroma issue 7688), so any text the process once held
    can turn up there by chance, whatever Memora keeps; the README states this limit.
    """
    found = []
    for path in sorted(root.rglob("*")):
        if path.name == "length.bin" and path.parent.parent.name == "chroma":
            continue
        if path.is_file():
            data = path.read_bytes()
            if any(needle in data for needle in needles):
                found.append(str(path.relative_to(root)))
    return found


def embedding_fingerprints(vector: np.ndarray) -> list[bytes]:
    """Runs of the float32 embedding as Chroma writes it; any one in a file is a copy."""
    raw = np.asarray(vector, dtype="<f4").tobytes()
    return [raw[start : start + 16] for start in range(0, len(raw) - 16, 64)]


def _bulk(memora: Memora, user_id: str, count: int) -> None:
    units = [
        MemoryUnit(
            id=f"{user_id}-{n:05d}",
            user_id=user_id,
            content=f"Filler fact {n} about {user_id}",
            source=MemorySource(actor="test"),
        )
        for n in range(count)
    ]
    memora.ingest(units)


def _forget_and_scan(memora: Memora, root: Path) -> None:
    outcome = memora.add("alice", SECRET_FACT)
    memory_id = outcome.memory_id or ""
    embedding = memora.embeddings.embed_array([SECRET_FACT])[0]
    memora.flush()
    key = memora.store.rows.vector_keys("alice", [memory_id])[memory_id]
    sealed = memora.store.vectors.get([memory_id])[memory_id]
    assert np.allclose(unseal(sealed[None, :], [key])[0], embedding, atol=1e-4)
    fingerprints = embedding_fingerprints(embedding)
    assert files_containing(root, fingerprints) == [], "a plain embedding reached the disk"
    # A second library loads the user, leaving a local copy of the sealed vectors that
    # holds this memory's (an older copy would be kept while it is 95% complete).
    memora.drop_local_vector_copy("alice")
    other = Memora(memora.settings, embeddings=memora.embeddings)
    other.search("alice", "tea")
    other.close()
    assert any("vector_cache" in path for path in files_containing(root, [sealed.tobytes()])), (
        "the local vector copy was not written, so the scan below would not test it"
    )

    assert memora.forget("alice", memory_id) == [memory_id]
    assert files_containing(root, [SECRET_FACT.encode(), b"Chen Wei"]) == []
    assert files_containing(root, [key]) == []
    assert files_containing(root, fingerprints) == []
    # Chroma may keep the sealed vector (noise once the key is gone); the local cache may not.
    memora.flush()  # the copy is rewritten without the entry once searches pause
    sealed_copies = files_containing(root, [sealed.tobytes()])
    assert [path for path in sealed_copies if "vector_cache" in path] == []
    hits = memora.search("alice", "Who lives in Taichung?")
    assert memory_id not in [hit.memory.id for hit in hits]


def test_the_scan_finds_what_it_looks_for(tmp_path: Path) -> None:
    vector = np.linspace(-1, 1, 256).astype(np.float32)
    (tmp_path / "a.bin").write_bytes(b"xx" + vector.tobytes() + b"yy")
    (tmp_path / "b.bin").write_bytes(b"nothing here")
    assert files_containing(tmp_path, embedding_fingerprints(vector)) == ["a.bin"]


def test_nothing_of_a_forgotten_memory_stays_on_disk(tmp_path: Path) -> None:
    root = tmp_path / "data"
    memora = Memora(load_settings(data_dir=root))
    # Enough vectors that Chroma compacts its log into an HNSW segment.
    _bulk(memora, "alice", 1200)
    for fact in FACTS:
        memora.add("alice", fact)
    _forget_and_scan(memora, root)
    assert len(memora.list("alice")) == 1200 + len(FACTS)
    memora.close()
    assert any(path.name == "data_level0.bin" for path in root.rglob("*"))


def test_nothing_stays_in_a_chroma_servers_directory(
    chroma_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    memora = Memora(load_settings(data_dir=tmp_path / "data", chroma_url=chroma_url))
    _bulk(memora, "alice", 300)
    _forget_and_scan(memora, tmp_path)  # the server's files are under tmp_path/server
    memora.close()


def test_another_users_vectors_stay_readable(tmp_path: Path) -> None:
    memora = Memora(load_settings(data_dir=tmp_path / "data"))
    kept = memora.add("bob", "I collect vintage fountain pens")
    gone = memora.add("alice", "I collect vintage fountain pens")
    memora.forget("alice", gone.memory_id or "")
    memora.close()
    reopened = Memora(load_settings(data_dir=tmp_path / "data"))
    hits = reopened.search("bob", "I collect vintage fountain pens")
    assert [hit.memory.id for hit in hits] == [kept.memory_id]
    assert hits[0].semantic_similarity > 0.99
    assert reopened.search("alice", "fountain pens") == []
    reopened.close()


def test_nothing_of_a_forgotten_memory_stays_in_postgres_tables_or_heap(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """On Postgres: no live row holds the memory, and once the pages were written out, no
    table or index file holds its text or key either (the text is sealed, the key's table
    part rewritten; ``test_postgres_shredding.py`` covers the cases plain VACUUM leaves)."""
    import psycopg

    services: Services = request.getfixturevalue("services")
    backend = postgres_backend(request)
    database_url = backend.database_url or ""
    memora = Memora(backend.settings(tmp_path / "data"))
    _bulk(memora, "alice", 300)
    outcome = memora.add("alice", SECRET_FACT)
    memory_id = outcome.memory_id or ""
    _bulk(memora, "bob", 300)  # rows after it, so its page is not simply cut off the table
    memora.flush()
    key = memora.store.rows.vector_keys("alice", [memory_id])[memory_id]
    with psycopg.connect(services.database_url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        row = conn.execute(
            "SELECT oid FROM pg_database WHERE datname = %s", (database_url.rsplit("/", 1)[1],)
        ).fetchone()
    assert row is not None
    heap = (services.postgres_data or Path("/nonexistent")) / "base" / str(row[0])
    if services.postgres_data is None:
        pytest.fail("MEMORA_TEST_POSTGRES_DATA must name the server's data dir for this scan")
    assert files_containing(heap, [key]) != []  # the control: the scan finds the key
    assert files_containing(heap, [SECRET_FACT.encode()]) == []  # the text is only sealed

    assert memora.forget("alice", memory_id) == [memory_id]
    with psycopg.connect(services.database_url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
    assert files_containing(heap, [SECRET_FACT.encode(), b"Chen Wei"]) == []
    assert files_containing(heap, [key]) == []
    assert tables_containing(database_url, "Chen Wei") == []
    assert files_containing(tmp_path, [SECRET_FACT.encode(), key]) == []
    assert len(memora.list("alice")) == 300
    memora.close()


def test_a_forget_behind_a_reader_says_the_scrub_is_pending_and_finishes_it(
    tmp_path: Path,
) -> None:
    """A reader in another process holds SQLite's log: the deleted text stays in it until
    the reader lets go, so the forget reports a pending scrub, and a later one finishes."""
    import sqlite3

    root = tmp_path / "data"
    memora = Memora(load_settings(data_dir=root))
    _bulk(memora, "alice", 20)
    memory_id = memora.add("alice", SECRET_FACT).memory_id or ""
    reader = sqlite3.connect(root / "memora.db")
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM memories").fetchone()
    started = time.monotonic()
    assert memora.forget("alice", memory_id) == [memory_id]
    assert time.monotonic() - started < 5  # it does not wait for the reader
    assert memora.scrub_pending
    assert files_containing(root, [b"Chen Wei"]) != []  # the control: the log still holds it
    reader.rollback()
    reader.close()
    assert memora.forget("alice", memory_id) == []  # nothing to delete; the scrub finishes
    assert not memora.scrub_pending
    assert files_containing(root, [b"Chen Wei"]) == []
    memora.close()
