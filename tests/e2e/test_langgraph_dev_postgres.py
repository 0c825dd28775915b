"""`langgraph dev` with ``langgraph.postgres.json``: threads, checkpoints and memories in Postgres.

The server takes its checkpointer from the config's ``checkpointer.path``
(``graph/server_checkpointer.py``, LangGraph's AsyncPostgresSaver) and its
memories from MEMORA_DATABASE_URL and MEMORA_CHROMA_URL; this process is a
second node on the same servers and checks what the server stored, paused on
and deleted.
"""

from __future__ import annotations

import json

import httpx
import psycopg
import pytest
from langgraph_sdk import get_sync_client

from memora.api import Memora
from tests.conftest import postgres_backend, tables_containing
from tests.e2e.langgraph_server import langgraph_dev
from tests.e2e.test_langgraph_dev import FORGET, REMEMBER, _assert_final, _pending_interrupts, _turn


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
            # The server's checkpointer is async-only to a node: older checkpoints and the
            # thread it was said in still quote it (see README, "What forgetting removes").
            held = tables_containing(database_url, "code examples")
            assert held and all(table.startswith("checkpoint") for table in held), held
        finally:
            node.close()
    assert not (base / "data" / "memora.db").exists(), (
        "memories belong in Postgres, not the data dir"
    )
