"""On Postgres, forgetting and erasing leave no file holding the text or a key.

Postgres does not zero what it deletes: VACUUM compacts a page and leaves the freed
bytes in the file (a page whose rows are all deleted keeps them all). So the scan
reads the server's data directory itself, every file but the write-ahead log
(``pg_wal``, see the README) and other databases' directories, after a
``CHECKPOINT`` has written every page out.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import psycopg
import pytest

from memora.api import Memora
from memora.models import MemorySource, MemoryUnit
from memora.storage.rows import COLUMNS, ColumnTypes, row_values, table_statements
from memora.storage.rows_postgres import SCHEMA_VERSION
from memora.storage.sealing import new_key
from tests.conftest import Backend, Services, postgres_backend
from tests.integration.test_cli import ok, run
from tests.integration.test_forgetting import _bulk, embedding_fingerprints, files_containing

FORGOTTEN = "My ex-husband Chen Weiqiang lives in Taichung"
ERASED = "My sister Lin Yuting works as a nurse in Tainan"
TYPED_IN_CHAT = "Please remember that my cat Xiaohuzi was born in Hualien."
KEPT = "I collect vintage fountain pens"


def _database_files(services: Services, database_url: str) -> Path:
    """Write every page out; the directory of this test's database (its tables, indexes,
    and its catalog, ``pg_statistic`` included)."""
    if services.postgres_data is None:
        pytest.fail("MEMORA_TEST_POSTGRES_DATA must name the server's data dir for this scan")
    with psycopg.connect(services.database_url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        row = conn.execute(
            "SELECT oid FROM pg_database WHERE datname = %s", (database_url.rsplit("/", 1)[1],)
        ).fetchone()
    assert row is not None
    return services.postgres_data / "base" / str(row[0])


def _held(services: Services, database_url: str, needles: list[bytes]) -> list[str]:
    """Files of this database, and the server's shared catalog, holding any needle."""
    base = _database_files(services, database_url)
    shared = base.parent.parent / "global"
    return files_containing(base, needles) + files_containing(shared, needles)


def assert_reads_without(memora: Memora, forgotten: str, remaining: int) -> None:
    """The store still reads right after a forget: the memory is gone, the others stay and
    are found."""
    assert memora.get("alice", forgotten) is None
    assert len(memora.list("alice")) == remaining
    assert memora.search("alice", "fountain pens")[0].memory.content == KEPT


def _backend(request: pytest.FixtureRequest) -> tuple[Services, Backend, str]:
    services: Services = request.getfixturevalue("services")
    backend = postgres_backend(request)
    return services, backend, backend.database_url or ""


def _superseded(memora: Memora, others: int) -> tuple[str, list[str]]:
    """Alice's ``others`` memories, then a fact and the update that supersedes it: the new
    memory's id and its chain (both versions)."""
    _bulk(memora, "alice", others)
    old = memora.add("alice", "My ex-husband Chen Weiqiang lives in Taipei").memory_id or ""
    new = memora.add("alice", FORGOTTEN).memory_id or ""
    chain = [unit.id for unit in memora.chain("alice", new)]
    assert old in chain, "the update did not supersede the old version"
    return new, chain


def test_a_forgotten_memory_leaves_neither_text_nor_key_in_any_table_file(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    services, backend, url = _backend(request)
    memora = Memora(backend.settings(tmp_path / "data"))
    new, chain = _superseded(memora, 200)
    memora.search("alice", "Where does my ex-husband live?")  # an access: one more row version
    memora.flush()
    keys = list(memora.store.rows.vector_keys("alice", chain).values())
    assert len(keys) == len(chain)
    assert _held(services, url, keys) != []  # the control: the scan finds the keys

    # The forgotten memory is the table's last row: its page's compaction leaves the
    # freed bytes where they were.
    assert sorted(memora.forget("alice", new)) == sorted(chain)
    assert _held(services, url, [b"Chen Weiqiang", *keys]) == []
    assert memora.search("alice", "Where does my ex-husband live?") == []
    assert len(memora.list("alice")) == 200
    memora.close()


def test_an_erased_user_leaves_no_memory_text_key_or_thread_text_in_any_table_file(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    services, backend, url = _backend(request)
    data = tmp_path / "data"
    env = backend.env()
    memora = Memora(backend.settings(data))
    _bulk(memora, "alice", 200)
    memora.add("alice", ERASED)
    memora.add("bob", KEPT)
    memora.flush()
    keys = list(
        memora.store.rows.vector_keys("alice", [u.id for u in memora.list("alice")]).values()
    )
    memora.close()
    ok(run(data, "chat", "--user", "alice", input=f"{TYPED_IN_CHAT}\n/exit\n", **env))
    with psycopg.connect(url) as conn:
        thread_keys = [bytes(row[0]) for row in conn.execute("SELECT key FROM thread_keys")]
    assert thread_keys, "the chat's thread has no key"
    assert _held(services, url, [keys[0], thread_keys[0]]) != []  # the control

    erased = ok(run(data, "users", "erase", "alice", "--yes", **env))
    assert "erased alice: 20" in erased and "1 threads" in erased
    needles = [b"Lin Yuting", b"Xiaohuzi", b"Filler fact 17 about alice", *keys, *thread_keys]
    assert _held(services, url, needles) == []
    assert KEPT in ok(run(data, "memories", "search", "--user", "bob", "fountain pens", **env))


def test_threads_are_sealed_in_the_checkpoint_tables_and_still_resume(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    _, backend, url = _backend(request)
    data = tmp_path / "data"
    env = backend.env()
    ok(run(data, "chat", "--user", "carol", input=f"{TYPED_IN_CHAT}\n/exit\n", **env))
    with psycopg.connect(url) as conn:
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
            plain = conn.execute(
                f"SELECT count(*) FROM {table} t WHERE t::text LIKE %s OR t::text LIKE %s",
                ("%Xiaohuzi%", f"%{b'Xiaohuzi'.hex()}%"),
            ).fetchone()
            assert plain == (0,), f"{table} holds the typed text in the clear"
    exported = json.loads(ok(run(data, "users", "export", "carol", **env)))
    said = [m["content"] for t in exported["threads"] for m in t["messages"]]
    assert TYPED_IN_CHAT in said  # read back through its thread's key


def test_a_store_of_plain_texts_is_sealed_when_it_opens(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A database written before sealing (rows schema 1, texts plain) opens as before,
    and its texts are sealed in place: no table file keeps them plain afterwards."""
    services, backend, url = _backend(request)
    unit = MemoryUnit(
        id=uuid.uuid4().hex, user_id="dave", content=ERASED, source=MemorySource(actor="test")
    )
    types = ColumnTypes(
        "seq BIGSERIAL UNIQUE,\n    ", "DOUBLE PRECISION", "BOOLEAN", "BIGINT", "BYTEA"
    )
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in table_statements(types):
            conn.execute(statement)
        conn.execute(
            "CREATE TABLE schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL,"
            " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        conn.execute("INSERT INTO schema_version VALUES ('rows', 1)")
        values = row_values(unit)
        conn.execute(
            f"INSERT INTO memories ({', '.join(COLUMNS)}) VALUES"
            f" ({', '.join('%s' for _ in values)})",
            values,
        )
        conn.execute("INSERT INTO vector_keys VALUES (%s, %s, %s)", (unit.id, "dave", new_key()))
    assert _held(services, url, [b"Lin Yuting"]) != []  # the control: it is there, plain

    memora = Memora(backend.settings(tmp_path / "data"))
    assert [m.content for m in memora.list("dave")] == [ERASED]
    assert _held(services, url, [b"Lin Yuting"]) == []
    with psycopg.connect(url) as conn:
        version = conn.execute("SELECT version FROM schema_version WHERE component = 'rows'")
        assert version.fetchone() == (SCHEMA_VERSION,)
    memora.close()


def test_a_forgotten_memorys_kept_sentence_vectors_leave_no_table_file(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    services, backend, url = _backend(request)
    memora = Memora(backend.settings(tmp_path / "data"))
    new, chain = _superseded(memora, 50)
    kept = memora.store.sentence_vectors("alice", chain)
    assert sorted(kept) == sorted(chain), "the write path kept no sentence vector"
    needles = [piece for vector in kept.values() for piece in embedding_fingerprints(vector)]
    memora.flush()
    assert _held(services, url, needles) != []  # the control: the scan finds them

    assert sorted(memora.forget("alice", new)) == sorted(chain)
    assert memora.store.sentence_vectors("alice", chain) == {}
    assert _held(services, url, needles) == []
    memora.close()
