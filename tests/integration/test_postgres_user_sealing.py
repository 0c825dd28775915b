"""On Postgres, what a user typed beside their memories leaves no file either.

The profile's values, the audit's search queries, the reasons of forget requests and
a memory's metadata are sealed (under the user's key, or the memory's); a forget
gives the user a new key and an erase destroys it. The scan is
``test_postgres_shredding``'s: every file of the database and ``global/`` after a
``CHECKPOINT``, the write-ahead log excluded.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from memora.api import Memora
from memora.storage.rows_postgres import SCHEMA_VERSION as ROWS_VERSION
from memora.storage.user_keys import USER_KEY_ID
from tests.integration.test_forgetting import _bulk
from tests.integration.test_postgres_shredding import FORGOTTEN, KEPT, _backend, _held

METADATA = {"origin": "Dongshan notebook"}
QUERY = "Which city is Weiqiang in now?"
REASON = "Quokka paperwork is settled"
PROFILE = ("pet", "Mochi the shiba")
NEEDLES = [b"Weiqiang", b"Dongshan", b"Quokka", b"Mochi"]
GHOST_KEY = bytes.fromhex("6a1f" * 16)


def _user_key(url: str, user_id: str) -> bytes:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT key FROM vector_keys WHERE user_id = %s AND id = %s", (user_id, USER_KEY_ID)
        ).fetchone()
    assert row is not None, f"{user_id} has no key of their own"
    return bytes(row[0])


def _write_everything(memora: Memora) -> str:
    """A memory with metadata, a search naming it, a request to forget it, a profile field
    set and removed; returns the memory's id."""
    _bulk(memora, "alice", 100)
    memory_id = memora.add("alice", FORGOTTEN, metadata=METADATA).memory_id or ""
    assert memora.search("alice", QUERY), "the search did not find the memory"
    assert memora.request_forget("alice", memory_id, reason=REASON) is not None
    memora.set_profile("alice", *PROFILE)
    memora.set_profile("alice", "city", "Taichung")
    memora.search("alice", "fountain pens")
    memora.flush()
    return memory_id


def test_a_forget_leaves_no_query_reason_metadata_or_removed_profile_value(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    services, backend, url = _backend(request)
    memora = Memora(backend.settings(tmp_path / "data"))
    memory_id = _write_everything(memora)
    memora.add("alice", KEPT)
    other = memora.search("alice", "vintage pens")[0].memory.id
    assert memora.request_forget("alice", other, reason="keep this reason") is not None
    old_key = _user_key(url, "alice")
    assert _held(services, url, [old_key]) != []  # the control: the scan finds the key

    assert memora.unset_profile("alice", PROFILE[0])
    assert memora.forget("alice", memory_id) == [memory_id]
    assert _user_key(url, "alice") != old_key
    assert _held(services, url, [*NEEDLES, old_key]) == []

    # What was not forgotten still reads, under the new key.
    assert memora.get_profile("alice") == {"city": "Taichung"}
    queries = [entry.query for entry in memora.audit.entries("alice", limit=-1)]
    assert "fountain pens" in queries and QUERY not in queries
    [pending] = memora.pending_forgets("alice")
    assert pending.reason == "keep this reason" and pending.memory_id == other
    assert len(memora.list("alice")) == 101
    memora.close()


def test_an_erase_leaves_no_profile_query_reason_or_metadata(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    services, backend, url = _backend(request)
    memora = Memora(backend.settings(tmp_path / "data"))
    _write_everything(memora)
    memora.set_profile("bob", "hobby", "fountain pens")
    memora.search("bob", "Where are my pens?")
    key = _user_key(url, "alice")
    assert _held(services, url, [key]) != []  # the control

    report = memora.erase_user("alice")
    assert report.profile_fields == 2 and report.forget_requests == 1
    assert _held(services, url, [*NEEDLES, b"Taichung", key]) == []
    assert memora.get_profile("bob") == {"hobby": "fountain pens"}
    assert [e.query for e in memora.audit.entries("bob")] == ["Where are my pens?"]
    memora.close()


def test_metadata_is_sealed_and_still_found_by_its_field(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    _, backend, url = _backend(request)
    memora = Memora(backend.settings(tmp_path / "data"))
    memory_id = memora.add("carol", FORGOTTEN, metadata=METADATA).memory_id
    with psycopg.connect(url) as conn:
        [(stored,)] = conn.execute("SELECT metadata FROM memories").fetchall()
    assert "Dongshan" not in stored
    [found] = memora.store.list("carol", metadata=("origin", METADATA["origin"]))
    assert found.id == memory_id and found.metadata == METADATA
    assert memora.store.list("carol", metadata=("origin", "elsewhere")) == []
    memora.close()


def test_a_database_of_the_schema_before_is_sealed_when_it_opens(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A database as the version before kept it (rows schema 2: metadata plain, no user
    keys, no record of pending rewrites; profile, audit and requests of schema 1, plain)
    opens, reads as before, and no file keeps the plain values afterwards."""
    services, backend, url = _backend(request)
    memora = Memora(backend.settings(tmp_path / "data"))
    memory_id = _write_everything(memora)
    memora.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE memories SET metadata = %s WHERE id = %s", (json.dumps(METADATA), memory_id)
        )
        conn.execute(
            "UPDATE profile SET value = CASE key WHEN 'pet' THEN %s ELSE 'Taichung' END",
            (PROFILE[1],),
        )
        conn.execute("UPDATE audit SET query = %s WHERE query IS NOT NULL", (QUERY,))
        conn.execute("UPDATE audit SET reason = 'plain' WHERE reason IS NOT NULL")
        conn.execute("UPDATE forget_requests SET reason = %s", (REASON,))
        conn.execute("DELETE FROM vector_keys WHERE id = %s", (USER_KEY_ID,))
        # A key a node of that version deleted and died before rewriting: nothing recorded it.
        conn.execute("INSERT INTO vector_keys VALUES ('ghost', 'alice', %s)", (GHOST_KEY,))
        conn.execute("DELETE FROM vector_keys WHERE id = 'ghost'")
        conn.execute("DROP TABLE pending_rewrites")
        conn.execute("UPDATE schema_version SET version = 2 WHERE component = 'rows'")
        conn.execute(
            "UPDATE schema_version SET version = 1"
            " WHERE component IN ('profile', 'audit', 'forget_requests')"
        )
    assert _held(services, url, NEEDLES) != []  # the control: plain values in the files
    assert _held(services, url, [GHOST_KEY]) != []

    reopened = Memora(backend.settings(tmp_path / "data"))
    unit = reopened.get("alice", memory_id)
    assert unit is not None and unit.metadata == METADATA
    assert reopened.get_profile("alice") == {PROFILE[0]: PROFILE[1], "city": "Taichung"}
    assert QUERY in [entry.query for entry in reopened.audit.entries("alice")]
    assert [r.reason for r in reopened.pending_forgets("alice")] == [REASON]
    assert _held(services, url, [*NEEDLES, GHOST_KEY]) == []
    with psycopg.connect(url) as conn:
        versions = dict(conn.execute("SELECT component, version FROM schema_version").fetchall())
    assert versions["rows"] == ROWS_VERSION and versions["profile"] == versions["audit"] == 2
    reopened.close()
