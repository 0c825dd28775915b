"""End to end: `langgraph dev` with ``MemoraStore`` as the server's store (``langgraph.store.json``)
and authentication on, driven by langgraph_sdk with signed HS256 tokens.

The tests share the server and alice's memory, so they run in file order.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import jwt
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import AuthenticationError, BadRequestError, PermissionDeniedError

from memora.api import Memora
from memora.config import load_settings
from tests.e2e.langgraph_server import Server, langgraph_dev

SECRET = "test-secret-for-memora-store-e2e-0123456789"
ALICE = ["memories", "alice"]


def _client(server: Server, user: str | None) -> SyncLangGraphClient:
    headers = {}
    if user is not None:
        token = jwt.encode({"sub": user, "exp": int(time.time() + 3600)}, SECRET, "HS256")
        headers["Authorization"] = f"Bearer {token}"
    return get_sync_client(
        url=server.url, timeout=httpx.Timeout(60.0, connect=10.0), headers=headers
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("langgraph_store")
    env = {"MEMORA_AUTH_SECRET": SECRET}
    with langgraph_dev(base, env, config="langgraph.store.json") as running:
        yield running


@pytest.fixture(scope="module")
def alice(server: Server) -> SyncLangGraphClient:
    return _client(server, "alice")


@pytest.fixture(scope="module")
def mallory(server: Server) -> SyncLangGraphClient:
    return _client(server, "mallory")


@pytest.fixture(scope="module")
def memora(server: Server) -> Iterator[Memora]:
    instance = Memora(load_settings(data_dir=server.data_dir))
    yield instance
    instance.close()


def test_the_server_store_is_memora(alice: SyncLangGraphClient, memora: Memora) -> None:
    alice.store.put_item(ALICE, "pref", {"content": "I prefer concise answers"})
    item = alice.store.get_item(ALICE, "pref")
    assert item["value"] == {"content": "I prefer concise answers", "memory_type": "semantic"}
    found = alice.store.search_items(ALICE, query="how should answers be written?")["items"]
    assert [hit["key"] for hit in found] == ["pref"] and found[0]["score"] > 0
    narrowed = alice.store.search_items(["memories"])["items"]
    assert [hit["key"] for hit in narrowed] == ["pref"]
    stored = memora.list("alice")
    assert [(unit.content, unit.source.actor) for unit in stored] == [
        ("I prefer concise answers", "store")
    ]


def test_a_refused_value_is_a_clear_400(alice: SyncLangGraphClient, memora: Memora) -> None:
    with pytest.raises(BadRequestError) as refused:
        alice.store.put_item(ALICE, "secret", {"content": "My bank password is hunter2-Zq9"})
    detail = refused.value.response.json()["detail"]
    assert "sensitive_data" in detail and "nothing was stored" in detail
    assert "hunter2" not in detail
    assert memora.count("alice") == 1


def test_another_users_namespace_is_refused(
    mallory: SyncLangGraphClient, server: Server, memora: Memora
) -> None:
    with pytest.raises(PermissionDeniedError):
        mallory.store.get_item(ALICE, "pref")
    with pytest.raises(PermissionDeniedError):
        mallory.store.put_item(ALICE, "x", {"content": "I like pineapple pizza"})
    with pytest.raises(PermissionDeniedError):
        mallory.store.search_items(ALICE, query="answers")
    with pytest.raises(PermissionDeniedError):
        mallory.store.delete_item(ALICE, "pref")
    assert mallory.store.search_items(["memories"], query="answers")["items"] == []
    with pytest.raises(AuthenticationError):
        _client(server, None).store.get_item(ALICE, "pref")
    assert memora.count("alice") == 1 and memora.pending_forgets("alice") == []


def test_a_delete_waits_for_approval(alice: SyncLangGraphClient, memora: Memora) -> None:
    alice.store.delete_item(ALICE, "pref")
    assert alice.store.get_item(ALICE, "pref")["value"]["content"] == "I prefer concise answers"
    pending = memora.pending_forgets("alice")
    assert [(r.preview, r.source) for r in pending] == [("I prefer concise answers", "store")]
    memora.approve_forget("alice", pending[0].id)
    assert alice.store.get_item(ALICE, "pref") is None


def test_the_agent_and_the_store_share_one_memory(
    alice: SyncLangGraphClient, mallory: SyncLangGraphClient, memora: Memora
) -> None:
    thread = alice.threads.create()["thread_id"]
    message = {"role": "user", "content": "Please remember that my therapist is Dr. Lin."}
    result = alice.runs.wait(thread, "memora", input={"messages": [message]})
    assert isinstance(result, dict) and result["stop_reason"] == "final_answer", result
    [unit] = [unit for unit in memora.list("alice") if "Dr. Lin" in unit.content]

    found = alice.store.search_items(ALICE, query="who is my therapist?")["items"]
    assert [(hit["key"], hit["value"]["content"]) for hit in found] == [(unit.id, unit.content)]
    assert alice.store.get_item(ALICE, unit.id)["value"]["content"] == unit.content
    assert mallory.store.search_items(["memories"], query="who is my therapist?")["items"] == []
