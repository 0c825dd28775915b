"""Erasing a user: `memora users erase` through the console script, then a scan of the files."""

from __future__ import annotations

import json
from pathlib import Path

from memora.api import Memora
from memora.config import load_settings
from tests.conftest import Backend, tables_containing
from tests.integration.test_cli import ok, run
from tests.integration.test_forgetting import files_containing

ALICE_FACTS = ["I keep a sourdough starter named Bubbles", "My sister Meiling is a nurse"]
BOB_FACT = "I collect vintage fountain pens"


def _chat(data: Path, user: str, *lines: str, **env: str) -> None:
    ok(run(data, "chat", "--user", user, input="\n".join([*lines, "/exit"]) + "\n", **env))


def _held(data: Path, backend: Backend, texts: list[str]) -> list[str]:
    """Files under the data dir, and on Postgres tables, that hold any of ``texts``."""
    held = files_containing(data, [t.encode() for t in texts]) if data.exists() else []
    if backend.database_url is not None:
        held += [table for t in texts for table in tables_containing(backend.database_url, t)]
    return held


def test_erase_removes_everything_of_one_user_and_nothing_else(
    tmp_path: Path, backend: Backend
) -> None:
    data = tmp_path / "data"
    env = backend.env()
    for fact in ALICE_FACTS:
        ok(run(data, "memories", "add", "--user", "alice", fact, **env))
    ok(run(data, "memories", "add", "--user", "bob", BOB_FACT, **env))
    ok(run(data, "profile", "set", "--user", "alice", "nickname", "Tiramisu", **env))
    ok(run(data, "memories", "search", "--user", "alice", "sourdough starter", **env))
    _chat(data, "alice", "Please remember that I live in Kaohsiung.", **env)
    _chat(data, "bob", "Please remember that I live in Hualien.", **env)
    alice_texts = [*ALICE_FACTS, "Tiramisu", "Kaohsiung", "sourdough starter"]
    if backend.database_url is None:
        assert _held(data, backend, alice_texts) != []
    else:  # the threads are in Postgres, sealed, not in the data dir
        import psycopg

        # Profile values, audit queries and memory text are sealed: no row holds them plain.
        assert _held(data, backend, alice_texts) == []
        exported = ok(run(data, "users", "export", "alice", **env))
        assert "Tiramisu" in exported and "sourdough starter" in exported

        with psycopg.connect(backend.database_url) as conn:
            keys = conn.execute("SELECT count(*) FROM thread_keys").fetchone()
        assert keys == (2,)  # alice's thread and bob's, each sealed under its own key
        assert "Kaohsiung" in ok(run(data, "users", "export", "alice", **env))
        assert not (data / "checkpoints.sqlite").exists()

    erased = ok(run(data, "users", "erase", "alice", "--yes", **env))
    assert "erased alice: 3 memories, 3 vectors, 1 profile fields" in erased
    assert "1 threads" in erased

    assert _held(data, backend, alice_texts) == []
    assert _held(data, backend, ["alice"]) == []  # nor her id: tombstones keep a digest
    assert json.loads(ok(run(data, "memories", "list", "--json", "--user", "alice", **env))) == []
    assert "Hualien" in ok(run(data, "users", "export", "bob", **env))
    bob = json.loads(ok(run(data, "users", "export", "bob", **env)))
    assert {m["content"] for m in bob["memories"]} >= {BOB_FACT}
    assert [t for t in bob["threads"] if any("Hualien" in m["content"] for m in t["messages"])]
    assert BOB_FACT in ok(run(data, "memories", "search", "--user", "bob", "fountain pens", **env))


def test_export_holds_every_version_profile_and_audit(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ok(run(data, "memories", "add", "--user", "carol", "My favourite colour is white"))
    ok(run(data, "memories", "add", "--user", "carol", "My favourite colour is blue"))
    ok(run(data, "profile", "set", "--user", "carol", "language", "English"))
    exported = json.loads(ok(run(data, "users", "export", "carol")))
    contents = {m["content"] for m in exported["memories"]}
    assert len(exported["memories"]) == 2 and any("white" in c for c in contents)
    assert exported["profile"] == {"language": "English"}
    assert [e["event"] for e in exported["audit"]].count("write") == 2


def test_erase_asks_first(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ok(run(data, "memories", "add", "--user", "dora", "I keep bees on my roof"))
    assert "kept" in ok(run(data, "users", "erase", "dora", input="n\n"))
    assert "bees" in ok(run(data, "memories", "list", "--user", "dora"))


ERASED = "zelda-q7x4"
"""A user id no other byte in the data dir could spell by chance."""


def test_no_file_holds_an_erased_users_id(tmp_path: Path) -> None:
    """Tombstones, generations, the change log and Chroma's labels keep a keyed digest of
    the id instead, so an erase can still tell its own memories' ids apart."""
    data = tmp_path / "data"
    for fact in ALICE_FACTS:
        ok(run(data, "memories", "add", "--user", ERASED, fact))
    ok(run(data, "memories", "add", "--user", "bob", BOB_FACT))
    forgotten = json.loads(ok(run(data, "memories", "list", "--json", "--user", ERASED)))[0]["id"]
    ok(run(data, "memories", "forget", "--user", ERASED, forgotten, "--yes"))
    ok(run(data, "profile", "set", "--user", ERASED, "nickname", "Tiramisu"))
    _chat(data, ERASED, "Please remember that I live in Kaohsiung.")
    assert files_containing(data, [ERASED.encode()]) != []  # the control

    ok(run(data, "users", "erase", ERASED, "--yes"))
    assert files_containing(data, [ERASED.encode(), ERASED.encode("utf-16-le")]) == []
    # The tombstones still keep the erased user's ids from anyone else, and know whose.
    memora = Memora(load_settings(data_dir=data))
    assert memora.store.foreign_ids("bob", [forgotten]) == {forgotten}
    assert memora.store.is_tombstoned(ERASED, forgotten)
    assert not memora.store.is_tombstoned("bob", forgotten)
    assert memora.erase_user(ERASED).memories == 0
    memora.close()
    assert files_containing(data, [ERASED.encode()]) == []
