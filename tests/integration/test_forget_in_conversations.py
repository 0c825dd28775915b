"""An approved forget takes the memory's words out of every conversation of its user.

The offline model drives three threads of alice and one of bob through a
checkpointed graph; after alice approves the deletion, the data dir's files are
scanned for the memory's words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.types import Command

from agent.forgotten import REMOVED
from graph.checkpointed import open_agent, thread_records
from memora.api import Memora
from memora.config import load_settings
from nodes.state import Context
from tests.integration.test_forgetting import files_containing

WORDS = b"Kaohsiung"


def _say(agent: Any, memora: Memora, user: str, thread: str, text: str) -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread, "user_id": user}}
    context = Context(user_id=user, memora=memora, chat_model="offline")
    agent.invoke({"messages": [HumanMessage(text)]}, config, context=context)
    return dict(agent.get_state(config).values)


def _resume(agent: Any, memora: Memora, user: str, thread: str, answer: Any) -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread, "user_id": user}}
    context = Context(user_id=user, memora=memora, chat_model="offline")
    agent.invoke(Command(resume=answer), config, context=context)
    return dict(agent.get_state(config).values)


def test_an_approved_forget_leaves_no_word_of_it_in_any_thread(tmp_path: Path) -> None:
    root = tmp_path / "data"
    memora = Memora(load_settings(data_dir=root))
    with open_agent(root) as agent:
        _say(agent, memora, "alice", "said", "Please remember that I live in Kaohsiung.")
        _say(agent, memora, "alice", "said", "Please remember that I play the cello.")
        [memory] = [m for m in memora.list("alice") if "Kaohsiung" in m.content]
        searched = _say(agent, memora, "alice", "searched", "Where do I live?")
        assert memory.id in searched["used_memory_ids"]
        _say(agent, memora, "bob", "bobs", "Please remember that I visited Kaohsiung.")
        paused = _say(agent, memora, "alice", "asked", "Please forget that I live in Kaohsiung.")
        assert [a["memory_id"] for a in paused["pending_actions"]] == [memory.id]
        assert files_containing(root, [WORDS]) != []  # the control: the words were there

        done = _resume(agent, memora, "alice", "asked", "yes")
        assert done["deleted_memory_ids"] == [memory.id]
        assert done["reply"].startswith("Memory deleted.")
        assert "2 other conversation(s)" in done["reply"]
        threads = {record.thread_id: record for record in thread_records(agent)}
        alice = [m for t in ("said", "searched", "asked") for m in threads[t].messages]
        assert all("Kaohsiung" not in str(m.content) for m in alice)
        # Only the turns that involved it went: the cello turn stays as it was said.
        said = [str(m.content) for m in threads["said"].messages]
        assert said.count(REMOVED) >= 2 and "Please remember that I play the cello." in said
        # Bob's own conversation and memory are his.
        assert any("Kaohsiung" in str(m.content) for m in threads["bobs"].messages)
        assert [m.content for m in memora.list("bob") if "Kaohsiung" in m.content]

        # The threads go on: the next turn in a blanked thread runs as usual.
        again = _say(agent, memora, "alice", "said", "What instrument do I play?")
        assert again["stop_reason"] == "final_answer"
    memora.erase_user("bob")
    memora.close()
    with open_agent(root) as agent:
        from graph.checkpointed import delete_threads

        delete_threads(agent, ["bobs"])
    assert files_containing(root, [WORDS]) == []


def test_a_forget_from_the_command_line_leaves_no_word_of_it_in_any_thread(
    tmp_path: Path,
) -> None:
    from tests.integration.test_cli import run

    root = tmp_path / "data"
    memora = Memora(load_settings(data_dir=root))
    with open_agent(root) as agent:
        _say(agent, memora, "alice", "said", "Please remember that I live in Kaohsiung.")
        _say(agent, memora, "alice", "searched", "Where do I live?")
    [memory] = [m for m in memora.list("alice") if "Kaohsiung" in m.content]
    memora.close()
    assert files_containing(root, [WORDS]) != []

    forgot = run(root, "memories", "forget", memory.id, "--user", "alice", "--yes")
    assert forgot.returncode == 0, forgot.stderr
    assert "from 2 conversation(s)" in forgot.stdout
    assert files_containing(root, [WORDS]) == []
