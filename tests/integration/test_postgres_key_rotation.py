"""On Postgres, blanking a thread rotates its key: the old checkpoints' bytes lose theirs.

A blanked thread's old checkpoint rows stay in the tables' free space, sealed under the
thread's key. After a forget (from the command line, or approved in a chat turn) the
data directory is scanned, as in ``test_postgres_shredding``, for the key each blanked
thread had before: no file may hold it, and the thread must still load and go on.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import psycopg
import pytest

from agent.forgotten import REMOVED
from graph.checkpointed import open_agent, thread_records
from memora.api import Memora
from tests.integration.test_cli import ok, run
from tests.integration.test_forget_in_conversations import _resume, _say
from tests.integration.test_postgres_shredding import TYPED_IN_CHAT, _backend, _held


def _thread_key(url: str, thread_id: str) -> bytes:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT key FROM thread_keys WHERE thread_id = %s", (thread_id,)
        ).fetchone()
    assert row is not None, f"thread {thread_id} has no key"
    return bytes(row[0])


def test_a_forget_from_the_command_line_rotates_the_blanked_threads_key(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    services, backend, url = _backend(request)
    data = tmp_path / "data"
    env = backend.env()
    chatted = ok(run(data, "chat", "--user", "alice", input=f"{TYPED_IN_CHAT}\n/exit\n", **env))
    match = re.search(r"Thread: (\w+)", chatted)
    assert match is not None, chatted
    thread = match.group(1)
    memora = Memora(backend.settings(data))
    [memory] = [m for m in memora.list("alice") if "Xiaohuzi" in m.content]
    memora.close()
    old_key = _thread_key(url, thread)
    assert _held(services, url, [old_key]) != []  # the control: the scan finds the key

    forgot = ok(run(data, "memories", "forget", memory.id, "--user", "alice", "--yes", **env))
    assert "from 1 conversation(s)" in forgot
    assert _thread_key(url, thread) != old_key
    assert _held(services, url, [old_key]) == []

    # The thread still opens under its new key and goes on.
    ok(run(data, "chat", "--user", "alice", "--thread", thread, input="Hello\n/exit\n", **env))
    exported = json.loads(ok(run(data, "users", "export", "alice", **env)))
    [said] = [t["messages"] for t in exported["threads"] if t["thread_id"] == thread]
    contents = [m["content"] for m in said]
    assert REMOVED in contents and "Hello" in contents
    assert not any("Xiaohuzi" in str(c) for c in contents)


def test_an_approved_forget_in_a_chat_turn_rotates_every_blanked_threads_key(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    services, backend, url = _backend(request)
    root = tmp_path / "data"
    memora = Memora(backend.settings(root))
    with open_agent(root, url) as agent:
        _say(agent, memora, "alice", "said", "Please remember that I live in Kaohsiung.")
        _say(agent, memora, "alice", "said", "Please remember that I play the cello.")
        _say(agent, memora, "bob", "bobs", "Please remember that I visited Kaohsiung.")
        paused = _say(agent, memora, "alice", "asked", "Please forget that I live in Kaohsiung.")
        assert paused["pending_actions"]
        old = {thread: _thread_key(url, thread) for thread in ("said", "asked", "bobs")}
        assert _held(services, url, list(old.values())) != []  # the control

        done = _resume(agent, memora, "alice", "asked", "yes")
        assert "1 other conversation(s)" in done["reply"]
        for thread in ("said", "asked"):
            assert _thread_key(url, thread) != old[thread]
            assert _held(services, url, [old[thread]]) == [], thread
        assert _thread_key(url, "bobs") == old["bobs"]  # bob's thread was not blanked

        for thread in ("said", "asked"):
            again = _say(agent, memora, "alice", thread, "What instrument do I play?")
            assert again["stop_reason"] == "final_answer"
        threads = {record.thread_id: record for record in thread_records(agent)}
        said = [str(m.content) for m in threads["said"].messages]
        assert REMOVED in said and "Please remember that I play the cello." in said
        assert not any("Kaohsiung" in text for text in said)
    memora.close()
