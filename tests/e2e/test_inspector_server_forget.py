"""A deletion made in the server's inspector (outside any turn) reaches the user's threads.

`langgraph dev` with signed tokens: alice tells Memora she plays the cello in one thread
and asks about it in another; bob says the same in his. alice then forgets the memory in
the inspector: every turn of hers that involved it is blanked in the runtime's own
checkpoints (state and history), as an approved forget in a chat turn does; bob's stay.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import jwt
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from agent.forgotten import REMOVED
from tests.e2e.inspector_seed import CELLO
from tests.e2e.langgraph_server import Server, langgraph_dev

SECRET = "test-secret-for-the-memora-inspector-forget-0123456789"
ASSISTANT = "memora"
ASK = "What instrument do I play? Search your memory for cello."


def _token(sub: str) -> str:
    return jwt.encode({"sub": sub, "exp": int(time.time()) + 3600}, SECRET, algorithm="HS256")


TOKENS = {"alice": _token("alice"), "bob": _token("bob")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("inspector_server_forget")
    with langgraph_dev(base, {"MEMORA_AUTH_SECRET": SECRET}) as running:
        yield running


def _sdk(server: Server, user: str) -> SyncLangGraphClient:
    headers = {"Authorization": f"Bearer {TOKENS[user]}"}
    return get_sync_client(url=server.url, timeout=httpx.Timeout(60.0), headers=headers)


def _turn(client: SyncLangGraphClient, text: str, thread_id: str | None = None) -> str:
    thread_id = thread_id or client.threads.create()["thread_id"]
    message = {"messages": [{"role": "user", "content": text}]}
    result = client.runs.wait(thread_id, ASSISTANT, input=message)
    assert isinstance(result, dict) and result["stop_reason"] == "final_answer", result
    return thread_id


def _api(server: Server, method: str, path: str, user: str, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {TOKENS[user]}"}
    url = f"{server.url}/ui/api{path}"
    return httpx.request(method, url, headers=headers, timeout=60, **kwargs)


def _words_in(client: SyncLangGraphClient, thread_id: str) -> list[str]:
    """Where "cello" appears in the thread's state and every checkpoint the server keeps."""
    found = []
    state = client.threads.get_state(thread_id)
    if "cello" in str(state["values"]).lower():
        found.append("state")
    for checkpoint in client.threads.get_history(thread_id, limit=100):
        if "cello" in str(checkpoint["values"]).lower():
            found.append(f"checkpoint {checkpoint['checkpoint']['checkpoint_id']}")
    return found


def test_a_deletion_in_the_servers_inspector_blanks_the_users_threads(server: Server) -> None:
    alice, bob = _sdk(server, "alice"), _sdk(server, "bob")
    for client in (alice, bob):  # the repository's .langgraph_api may hold an earlier run's
        for thread in client.threads.search(limit=1000):
            client.threads.delete(thread["thread_id"])
    told = _turn(alice, CELLO)
    asked = _turn(alice, ASK)
    _turn(alice, "Please remember that I live in Kaohsiung.", asked)
    bobs = _turn(bob, CELLO)
    [memory] = [
        m
        for m in _api(server, "GET", "/memories", "alice").json()["memories"]
        if "cello" in m["content"]
    ]
    assert _words_in(alice, told) and _words_in(alice, asked)  # the control

    forgotten = _api(server, "DELETE", f"/memories/{memory['id']}", "alice")
    assert forgotten.status_code == 200, forgotten.text
    assert forgotten.json()["threads"] == 2
    assert _words_in(alice, told) == []
    assert _words_in(alice, asked) == []
    messages = alice.threads.get_state(asked)["values"]["messages"]
    assert REMOVED in [m["content"] for m in messages]
    assert "Kaohsiung" in str(messages)  # the turn that did not involve it stays
    assert _words_in(bob, bobs) != []  # another user's threads are theirs
    exported = _api(server, "GET", "/export", "alice").json()
    assert "Kaohsiung" in str(exported["threads"]) and "cello" not in str(exported).lower()
    # The thread goes on.
    _turn(alice, "Thanks, that is all.", asked)
