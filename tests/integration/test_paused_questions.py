"""A thread paused on deletion questions keeps its promises when the memory goes another way.

A turn asks about two deletions and accepts a new memory; while it waits, the first
memory is forgotten from the command line (a second process). The paused question must
lose that memory's words (in the files on disk and in what a client reads back), the
other question and the new memory must stay, each answer must still reach its own
question, and the reply must not claim a deletion it did not make. Run on SQLite files
and on Postgres with a Chroma server.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command

import nodes.call_model
from agent.forgotten import REMOVED
from agent.tool_schemas import REMEMBER_MEMORY, REQUEST_FORGET_MEMORY
from graph.checkpointed import open_agent
from memora.api import Memora
from memora.models import MemorySource, MemoryUnit, utcnow
from nodes.state import Context
from tests.conftest import Backend
from tests.integration.test_cli import ok, run
from tests.integration.test_forgetting import files_containing
from tests.integration.test_stop_reasons import ScriptedChatModel, _answer, _call

HOME = "The user lives in Quokkaville."
TEA = "The user drinks oolong tea every morning."
CELLO = "The user plays the cello."
NEW = "The user is learning to sail."
USER = "alice"
CONFIG = {"configurable": {"thread_id": "asked", "user_id": USER}}


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedChatModel]:
    model = ScriptedChatModel(script=[])
    monkeypatch.setattr(nodes.call_model, "get_chat_model", lambda settings, choice="": model)
    yield model


def _unit(memory_id: str, content: str) -> MemoryUnit:
    return MemoryUnit(
        id=memory_id, user_id=USER, content=content, source=MemorySource(actor="test"),
        created_at=utcnow(),
    )  # fmt: skip


def _questions(agent: Any) -> list[dict[str, Any]]:
    return [item.value for task in agent.get_state(CONFIG).tasks for item in task.interrupts]


def _pause(root: Path, backend: Backend, model: ScriptedChatModel) -> None:
    """Alice's memories, and a turn paused on deleting her home and her tea."""
    memora = Memora(backend.settings(root))
    memora.ingest([_unit("m-home", HOME), _unit("m-tea", TEA), _unit("m-cello", CELLO)])
    model.script += [
        _call(REQUEST_FORGET_MEMORY, {"memory_id": "m-home", "reason": "moved"}, "c1"),
        _call(REQUEST_FORGET_MEMORY, {"memory_id": "m-tea", "reason": "quit tea"}, "c2"),
        _call(
            REMEMBER_MEMORY,
            {"content": NEW, "memory_type": "semantic", "reason": "explicit_request"},
            "c3",
        ),
        _answer("I will ask before deleting."),
    ]
    message = "Forget where I live and that I drink tea; remember I am learning to sail."
    with open_agent(root, backend.database_url) as agent:
        agent.invoke(
            {"messages": [HumanMessage(message)]},
            CONFIG,
            context=Context(user_id=USER, memora=memora),
        )
        [asked] = _questions(agent)
        assert asked["memory_id"] == "m-home" and "Quokkaville" in asked["preview"]
    memora.close()


def test_a_paused_question_loses_a_memory_forgotten_elsewhere_and_the_rest_holds(
    backend: Backend, tmp_path: Path, scripted: ScriptedChatModel
) -> None:
    root = tmp_path / "data"
    _pause(root, backend, scripted)
    if backend.name == "sqlite":
        assert files_containing(root, [b"Quokkaville"]) != []  # the control

    forgot = ok(run(root, "memories", "forget", "m-home", "--user", USER, "--yes", **backend.env()))
    assert "from 1 conversation(s)" in forgot

    if backend.name == "sqlite":  # Postgres seals thread values; its key test scans for keys
        assert files_containing(root, [b"Quokkaville"]) == []
    memora = Memora(backend.settings(root))
    context = Context(user_id=USER, memora=memora)
    with open_agent(root, backend.database_url) as agent:
        [asked] = _questions(agent)
        assert asked["memory_id"] == "m-home" and asked["preview"] == REMOVED
        assert asked["deletes"] == [{"memory_id": "m-home", "content": REMOVED}]
        assert "Quokkaville" not in str(asked)
        pending = agent.get_state(CONFIG).values["pending_actions"]
        assert [a.get("memory_id") for a in pending] == ["m-home", "m-tea", None]
        assert pending[1]["preview"] == TEA and NEW in str(pending[2])

        # The first answer is the blanked question's; the tea is asked about on its own.
        agent.invoke(Command(resume="y"), CONFIG, context=context)
        [tea] = _questions(agent)
        assert tea["memory_id"] == "m-tea" and tea["preview"] == TEA
        assert memora.get(USER, "m-tea") is not None
        agent.invoke(Command(resume="y"), CONFIG, context=context)
        done = agent.get_state(CONFIG).values
    assert done["reply"].startswith("Memory deleted.")
    assert "Memory already deleted; nothing more to delete." in done["reply"]
    assert done["deleted_memory_ids"] == ["m-tea"]
    assert sorted(m.content for m in memora.list(USER)) == [NEW, CELLO]
    memora.close()


def test_an_approval_of_a_memory_already_gone_does_not_say_it_deleted_it(
    tmp_path: Path, scripted: ScriptedChatModel
) -> None:
    root = tmp_path / "data"
    backend = Backend("sqlite")
    _pause(root, backend, scripted)
    memora = Memora(backend.settings(root))
    assert memora.forget(USER, "m-home") == ["m-home"]  # the library: no thread is touched
    context = Context(user_id=USER, memora=memora)
    with open_agent(root) as agent:
        agent.invoke(Command(resume="y"), CONFIG, context=context)
        agent.invoke(Command(resume="n"), CONFIG, context=context)
        done = agent.get_state(CONFIG).values
    assert done["reply"].startswith("Memory already deleted; nothing more to delete.")
    assert "Memory deleted" not in done["reply"]
    assert f"Memory kept (deletion not approved): {TEA}" in done["reply"]
    assert done["deleted_memory_ids"] == []
    assert sorted(m.content for m in memora.list(USER)) == sorted([TEA, CELLO, NEW])
    memora.close()
