"""A deletion made in the server's inspector (outside any turn) reaches the user's threads.

`langgraph dev` with signed tokens: alice tells Memora she plays the cello in one thread
and asks about it in another; bob says the same in his. alice then forgets the memory in
the inspector: every turn of hers that involved it is blanked in the runtime's own
checkpoints (state and history), as an approved forget in a chat turn does; bob's stay.

The runtime also keeps its own record of each thread (its last values, what
``threads.search`` and ``threads.get`` return) and of each run (its input), pickled under
the repository's ``.langgraph_api``: after a forget, in a chat turn or in the inspector,
neither the API nor those files hold the fact. Those tests use a fact of their own (a
made-up name), since earlier servers' records stay in ``.langgraph_api``.
"""

from __future__ import annotations

import json
import random
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
from tests.e2e.langgraph_server import REPO_ROOT, Server, langgraph_dev
from tests.e2e.test_langgraph_dev import _files_holding

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


def _made_up_name() -> str:
    syllables = ["ka", "lo", "mi", "ru", "te", "vo", "zi", "pa", "ne", "shu"]
    return "Zo" + "".join(random.choice(syllables) for _ in range(5))


def _in_records(client: SyncLangGraphClient, thread_ids: list[str], word: str) -> list[str]:
    """Which of the runtime's records of these threads (search, get, their runs) hold ``word``."""
    found = []
    listed = [t for t in client.threads.search(limit=1000) if t["thread_id"] in thread_ids]
    assert len(listed) == len(thread_ids), "threads.search should list every thread"
    if word in json.dumps(listed, ensure_ascii=False):
        found.append("threads.search")
    for thread_id in thread_ids:
        for where, record in [
            ("threads.get", client.threads.get(thread_id)),
            ("runs.list", client.runs.list(thread_id)),
        ]:
            if word in json.dumps(record, ensure_ascii=False, default=str):
                found.append(f"{where} {thread_id}")
    return found


def _runtime_files_holding(word: str, *, until_gone: bool) -> list[str]:
    """The runtime's files holding ``word`` once it has flushed (every 10 s): waits for
    them to hold it (the control) or to lose it."""
    runtime_files, needle = REPO_ROOT / ".langgraph_api", word.encode()
    deadline = time.monotonic() + 40
    while bool(_files_holding(runtime_files, needle)) == until_gone:
        if time.monotonic() > deadline:
            break
        time.sleep(1)
    return _files_holding(runtime_files, needle)


def test_an_approved_forget_leaves_no_word_in_the_runtimes_records(server: Server) -> None:
    """alice says a fact in thread A and forgets it in thread B: the runtime's records of
    both (thread values, runs' input), through its API and in its files, lose it."""
    alice = _sdk(server, "alice")
    name = _made_up_name()
    said = _turn(alice, f"Please remember that my cat is called {name}.")
    forgetting = alice.threads.create()["thread_id"]
    asked = {
        "messages": [{"role": "user", "content": f"Please forget that my cat is called {name}."}]
    }
    alice.runs.wait(forgetting, ASSISTANT, input=asked)
    assert alice.threads.get(forgetting)["status"] == "interrupted"
    assert _in_records(alice, [said], name) != []  # the control: the records hold it
    assert _runtime_files_holding(name, until_gone=False) != []  # the control: flushed

    done = alice.runs.wait(forgetting, ASSISTANT, command={"resume": "yes"})
    assert isinstance(done, dict) and "from 1 other conversation(s)" in done["reply"], done

    assert _in_records(alice, [said, forgetting], name) == []
    assert REMOVED in json.dumps(alice.threads.get(said)["values"])
    assert alice.threads.get(said)["status"] == "idle"
    assert _runtime_files_holding(name, until_gone=True) == []
    _turn(alice, "Thanks, that is all.", said)  # the thread goes on


def test_a_deletion_in_the_inspector_leaves_no_word_in_the_runtimes_records(
    server: Server,
) -> None:
    """The same for a deletion in the server's inspector, which has no thread of its own:
    both threads that involved the memory get fresh records."""
    alice = _sdk(server, "alice")
    name = _made_up_name()
    told = _turn(alice, f"Please remember that my cat is called {name}.")
    asked = _turn(alice, f"What is my cat called? Search your memory for {name}.")
    memories = _api(server, "GET", "/memories", "alice").json()["memories"]
    [memory] = [m for m in memories if name in m["content"]]
    assert len(_in_records(alice, [told, asked], name)) >= 2  # the control
    assert _runtime_files_holding(name, until_gone=False) != []

    forgotten = _api(server, "DELETE", f"/memories/{memory['id']}", "alice")
    assert forgotten.status_code == 200 and forgotten.json()["threads"] == 2, forgotten.text

    assert _in_records(alice, [told, asked], name) == []
    assert _runtime_files_holding(name, until_gone=True) == []
    _turn(alice, "Thanks, that is all.", asked)
