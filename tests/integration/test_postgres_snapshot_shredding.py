"""On Postgres, a forget made while another session holds an older snapshot leaves no file
holding the forgotten memory's key once that session has ended.

``VACUUM FULL`` copies a row that a snapshot older than its deletion may still read
("recently dead"), key included, into the partition's new file. So the rewrite waits for
such snapshots (``memora.storage.key_rewrites``); when the wait runs out it rewrites anyway
and keeps the partition's record, and the next scrub (here the one ``Memora.close`` runs for
a pending scrub) rewrites the partition again once the snapshot is gone. The scan is
``test_postgres_shredding``'s.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from memora.api import Memora
from memora.storage.rows_postgres import SCHEMA_VERSION
from tests.integration.test_forgetting import _bulk
from tests.integration.test_postgres_shredding import (
    FORGOTTEN,
    KEPT,
    _backend,
    _held,
    assert_reads_without,
)
from tests.integration.test_postgres_user_sealing import _user_key


def _pending_records(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM pending_rewrites").fetchone()
    assert row is not None
    return int(row[0])


def test_a_key_an_older_snapshot_could_still_read_leaves_every_file_once_it_ends(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The snapshot outlasts the wait on purpose; 5 s would only make the test slow.
    monkeypatch.setattr("memora.storage.key_rewrites.HORIZON_WAIT_S", 0.5)
    services, backend, url = _backend(request)
    memora = Memora(backend.settings(tmp_path / "data"))
    _bulk(memora, "alice", 50)
    forgotten = memora.add("alice", FORGOTTEN).memory_id or ""
    memora.add("alice", KEPT)
    memora.flush()
    memora.search("alice", "Where does my ex-husband live?")  # its audit entry makes the user key
    [key] = memora.store.rows.vector_keys("alice", [forgotten]).values()
    user_key = _user_key(url, "alice")  # the forget replaces it: the old one is shredded too

    # Another node's long report: a snapshot taken before the forget. It reads `memories`
    # only; a lock on the key partition would hold the rewrite off altogether.
    reader = psycopg.connect(url)
    reader.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    try:
        reader.execute("SELECT count(*) FROM memories WHERE user_id = 'alice'").fetchone()
        assert memora.forget("alice", forgotten) == [forgotten]
        # The window is real: the rewrite copied the keys the snapshot may still read.
        assert _held(services, url, [key, user_key]) != []
        reported_pending = memora.scrub_pending
        reader.commit()
    finally:
        reader.close()

    memora.close()  # finishes the scrub the forget left pending
    assert _held(services, url, [key, user_key, b"Chen Weiqiang"]) == []
    assert reported_pending, "the forget did not report its scrub as pending"
    assert _pending_records(url) == 0

    reopened = Memora(backend.settings(tmp_path / "data"))
    assert_reads_without(reopened, forgotten, 51)
    reopened.close()


def test_a_database_of_the_schema_before_records_deleting_transactions_once_it_opens(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Rows schema 3 kept no deleting transaction in ``pending_rewrites``: a record left
    then is waited for as if made just before the open, rewritten and dropped."""
    _, backend, url = _backend(request)
    memora = Memora(backend.settings(tmp_path / "data"))
    _bulk(memora, "alice", 5)
    memora.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE pending_rewrites DROP COLUMN deleted_by")
        conn.execute("INSERT INTO pending_rewrites (relation) VALUES ('vector_keys_7')")
        conn.execute("UPDATE schema_version SET version = 3 WHERE component = 'rows'")

    reopened = Memora(backend.settings(tmp_path / "data"))
    assert len(reopened.list("alice")) == 5
    assert _pending_records(url) == 0
    with psycopg.connect(url) as conn:
        version = conn.execute("SELECT version FROM schema_version WHERE component = 'rows'")
        assert version.fetchone() == (SCHEMA_VERSION,)
        columns = conn.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_name = 'pending_rewrites' ORDER BY ordinal_position"
        ).fetchall()
    assert [c[0] for c in columns] == ["seq", "relation", "deleted_by"]
    reopened.close()
