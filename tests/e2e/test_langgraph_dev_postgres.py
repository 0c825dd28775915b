"""`langgraph dev` with ``langgraph.postgres.json``: threads, checkpoints and memories in Postgres.

The server takes its checkpointer from the config's ``checkpointer.path``
(``graph/server_checkpointer.py``, LangGraph's AsyncPostgresSaver with every value
sealed under its thread's key) and its memories from MEMORA_DATABASE_URL and
MEMORA_CHROMA_URL; this process is a second node on the same servers and checks
what the server stored, paused on and deleted, down to the database's files.
"""

from __future__ import annotations

import json
import time

import httpx
import jwt
import psycopg
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from agent.forgotten import REMOVED
from memora.api import Memora
from tests.conftest import postgres_backend, tables_containing
from tests.e2e.inspector_seed import CELLO
from tests.e2e.langgraph_server import Server, langgraph_dev
from tests.e2e.test_inspector_server_forget import _in_records
from tests.e2e.test_langgraph_dev import (
    ASSISTANT,
    FORGET,
    REMEMBER,
    _assert_final,
    _pending_interrupts,
    _turn,
)
from tests.integration.test_postgres_shredding import _backend as postgres_services
from tests.integration.test_postgres_shredding import _held as held_in_files


def test_a_served_graph_keeps_its_threads_in_postgres(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    backend = postgres_backend(request)
    database_url = backend.database_url or ""
    base = tmp_path_factory.mktemp("langgraph_dev_postgres")
    with langgraph_dev(base, backend.env(), config="langgraph.postgres.json") as server:
        client = get_sync_client(url=server.url, timeout=httpx.Timeout(60.0, connect=10.0))
        node = Memora(backend.settings(base / "second-node"))
        try:
            thread_id, values = _turn(client, REMEMBER, "alice")
            _assert_final(values)
            stored = [unit for unit in node.list("alice") if "concise answers" in unit.content]
            assert len(stored) == 1, "the server's memory should be visible to another node"
            with psycopg.connect(database_url) as conn:
                threads = {
                    row[0] for row in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")
                }
            assert thread_id in threads, "the server's checkpoint should be in Postgres"

            paused, _ = _turn(client, FORGET, "alice")
            interrupts = _pending_interrupts(client, paused)
            assert [i["value"]["memory_id"] for i in interrupts] == [stored[0].id]
            with psycopg.connect(database_url) as conn:
                pending = conn.execute(
                    "SELECT count(*) FROM checkpoint_writes WHERE thread_id = %s AND channel = %s",
                    (paused, "__interrupt__"),
                ).fetchone()
            assert pending is not None and pending[0] >= 1, (
                "the pause should be durable in Postgres"
            )
            client.runs.wait(
                paused,
                "memora",
                command={"resume": "yes"},
                config={"configurable": {"user_id": "alice"}},
            )
            assert node.get("alice", stored[0].id) is None
            now = json.dumps(client.threads.get_state(paused)["values"], ensure_ascii=False)
            assert "code examples" not in now, "the forgetting thread still quotes it"
            # Every thread of alice's was blanked, and the checkpoints are sealed anyway.
            assert tables_containing(database_url, "code examples") == []
        finally:
            node.close()
    assert not (base / "data" / "memora.db").exists(), (
        "memories belong in Postgres, not the data dir"
    )


SECRET = "test-secret-for-the-memora-postgres-threads-0123456789"
WORDS = ("code examples", "concise answers")


def _signed(user: str) -> dict[str, str]:
    token = jwt.encode({"sub": user, "exp": int(time.time()) + 3600}, SECRET, algorithm="HS256")
    return {"Authorization": f"Bearer {token}"}


def _signed_client(server: Server, user: str) -> SyncLangGraphClient:
    return get_sync_client(
        url=server.url, timeout=httpx.Timeout(60.0, connect=10.0), headers=_signed(user)
    )


def _said(client: SyncLangGraphClient, text: str, thread_id: str | None = None) -> str:
    thread_id = thread_id or client.threads.create()["thread_id"]
    message = {"messages": [{"role": "user", "content": text}]}
    result = client.runs.wait(thread_id, ASSISTANT, input=message)
    assert isinstance(result, dict), result
    return thread_id


def _words_in(client: SyncLangGraphClient, thread_id: str) -> list[str]:
    """Where the memory's words appear in the thread's state and in every checkpoint the
    server keeps of it."""
    found = []
    checkpoints = client.threads.get_history(thread_id, limit=100)
    assert checkpoints, f"thread {thread_id} has no history"
    for where, values in [
        ("state", client.threads.get_state(thread_id)["values"]),
        *((f"checkpoint {c['checkpoint']['checkpoint_id']}", c["values"]) for c in checkpoints),
    ]:
        text = json.dumps(values, ensure_ascii=False)
        found += [f"{where}: {word}" for word in WORDS if word in text]
    return found


def _thread_keys(database_url: str, thread_ids: list[str]) -> list[bytes]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT key FROM thread_keys WHERE thread_id = ANY(%s)", (thread_ids,)
        ).fetchall()
    return [bytes(row[0]) for row in rows]


def test_an_approved_forget_leaves_no_word_of_it_in_any_thread_or_file_of_postgres(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """alice says a fact in thread A and forgets it in thread B: the state and history of
    both lose its words, bob's thread keeps his, and no file of the database holds the
    words or the keys A and B were sealed under (``pg_wal`` aside, see the README)."""
    services, backend, database_url = postgres_services(request)
    base = tmp_path_factory.mktemp("langgraph_dev_postgres_threads")
    env = {**backend.env(), "MEMORA_AUTH_SECRET": SECRET}
    with langgraph_dev(base, env, config="langgraph.postgres.json") as server:
        alice, bob = _signed_client(server, "alice"), _signed_client(server, "bob")
        said = _said(alice, REMEMBER)
        bobs = _said(bob, REMEMBER)
        forgetting = _said(alice, FORGET)
        interrupts = _pending_interrupts(alice, forgetting)
        assert len(interrupts) == 1, interrupts
        assert _words_in(alice, said) != []  # the control: the thread quotes it
        keys = _thread_keys(database_url, [said, forgetting])
        assert len(keys) == 2, "each of alice's threads should be sealed under a key of its own"
        assert held_in_files(services, database_url, keys) != []  # the control: the scan sees

        done = alice.runs.wait(forgetting, ASSISTANT, command={"resume": "yes"})
        assert isinstance(done, dict) and "from 1 other conversation(s)" in done["reply"], done

        assert _words_in(alice, said) == []
        assert _words_in(alice, forgetting) == []
        for word in WORDS:  # the runtime's own records (thread values, runs' input) too
            assert _in_records(alice, [said, forgetting], word) == []
        messages = alice.threads.get_state(forgetting)["values"]["messages"]
        assert REMOVED in [m["content"] for m in messages]
        assert _words_in(bob, bobs) != [], "bob's thread is his"
        assert _thread_keys(database_url, [said, forgetting]) != keys  # both rotated
        held = held_in_files(services, database_url, [w.encode() for w in WORDS] + keys)
        assert held == [], f"files of the database still hold the words or a retired key: {held}"
        _said(alice, "Thanks, that is all.", forgetting)  # the thread goes on


def test_the_servers_inspector_forgets_and_erases_through_the_sealed_checkpointer(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A deletion in the server's inspector (outside any run) blanks alice's threads on
    Postgres too, and deleting a thread through the server destroys its key."""
    services, backend, database_url = postgres_services(request)
    base = tmp_path_factory.mktemp("langgraph_dev_postgres_inspector")
    env = {**backend.env(), "MEMORA_AUTH_SECRET": SECRET}
    with langgraph_dev(base, env, config="langgraph.postgres.json") as server:
        alice = _signed_client(server, "alice")
        told = _said(alice, CELLO)
        asked = _said(alice, "What instrument do I play? Search your memory for cello.")
        headers = _signed("alice")
        api = f"{server.url}/ui/api"
        memories = httpx.get(f"{api}/memories", headers=headers, timeout=60).json()["memories"]
        [memory] = [m for m in memories if "cello" in m["content"]]
        keys = _thread_keys(database_url, [told, asked])
        assert len(keys) == 2

        deleted = httpx.delete(f"{api}/memories/{memory['id']}", headers=headers, timeout=60)
        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["threads"] == 2
        for thread_id in (told, asked):
            history = alice.threads.get_history(thread_id, limit=100)
            assert "cello" not in json.dumps([c["values"] for c in history]).lower()
        assert _in_records(alice, [told, asked], "cello") == []
        assert held_in_files(services, database_url, [b"cello", *keys]) == []

        [kept] = _thread_keys(database_url, [told])
        alice.threads.delete(told)
        assert _thread_keys(database_url, [told]) == []
        assert held_in_files(services, database_url, [kept]) == []
