"""A thread paused on deletion questions keeps its promises when the memory goes another way.

A turn asks about two deletions and accepts a new memory; while it waits, the first
memory is forgotten from the command line (a second process). The paused question must
lose that memory's words (in the files on disk and in what a client reads back), the
other question and the new memory must stay, each answer must still reach its own
question, and the reply must not claim a deletion it did not make. Run on SQLite files
and on Postgres with a Chroma server.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
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
from memora.config import load_settings
from memora.models import MemorySource, MemoryStatus, MemoryUnit, utcnow
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
REPO = Path(__file__).resolve().parents[2]
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
    memora = Memora(backend.settings(root))
    with open_agent(root, backend.database_url) as agent:
        # Not an answer, and it quotes the memory: the resume value is kept in the checkpoint.
        agent.invoke(
            Command(resume="wait, Quokkaville? the old flat?"),
            CONFIG,
            context=Context(user_id=USER, memora=memora),
        )
        [again] = _questions(agent)
        assert again["memory_id"] == "m-home" and "not understood" in again["error"]
    memora.close()
    if backend.name == "sqlite":
        assert files_containing(root, [b"Quokkaville", b"the old flat"]) != []  # the control

    forgot = ok(run(root, "memories", "forget", "m-home", "--user", USER, "--yes", **backend.env()))
    assert "from 1 conversation(s)" in forgot

    if backend.name == "sqlite":  # Postgres seals thread values; its key test scans for keys
        assert files_containing(root, [b"Quokkaville", b"the old flat"]) == []
    memora = Memora(backend.settings(root))
    context = Context(user_id=USER, memora=memora)
    with open_agent(root, backend.database_url) as agent:
        [asked] = _questions(agent)
        assert asked["memory_id"] == "m-home" and asked["preview"] == REMOVED
        assert asked["deletes"] == [{"memory_id": "m-home", "content": REMOVED}]
        assert "Quokkaville" not in str(asked) and "not understood" in asked["error"]
        pending = agent.get_state(CONFIG).values["pending_actions"]
        assert [a.get("memory_id") for a in pending] == ["m-home", "m-tea", None]
        assert "Quokkaville" not in str(pending)
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


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ("y", "Memory already deleted; nothing more to delete."),
        ("n", "Memory not kept: it was already deleted another way."),
    ],
)
def test_an_answer_about_a_memory_already_gone_says_so(
    tmp_path: Path, scripted: ScriptedChatModel, answer: str, said: str
) -> None:
    root = tmp_path / "data"
    backend = Backend("sqlite")
    _pause(root, backend, scripted)
    memora = Memora(backend.settings(root))
    assert memora.forget(USER, "m-home") == ["m-home"]  # the library: no thread is touched
    context = Context(user_id=USER, memora=memora)
    with open_agent(root) as agent:
        agent.invoke(Command(resume=answer), CONFIG, context=context)
        agent.invoke(Command(resume="n"), CONFIG, context=context)
        done = agent.get_state(CONFIG).values
    assert said in done["reply"]
    assert "Memory deleted" not in done["reply"]
    assert "Memory kept (deletion not approved): The user lives" not in done["reply"]
    assert f"Memory kept (deletion not approved): {TEA}" in done["reply"]
    assert done["deleted_memory_ids"] == []
    assert sorted(m.content for m in memora.list(USER)) == sorted([TEA, CELLO, NEW])
    memora.close()


def _flagged(memory_id: str, content: str, replacing: str) -> MemoryUnit:
    """A memory waiting for review as the newer version of ``replacing``."""
    return _unit(memory_id, content).model_copy(
        update={"needs_review": True, "metadata": {"review_targets": [replacing]}}
    )


def _chain(*contents: str) -> list[MemoryUnit]:
    """Versions of one memory, each replacing the one before (ids v0, v1, ...)."""
    units = []
    for i, content in enumerate(contents):
        unit = _unit(f"v{i}", content).model_copy(
            update={
                "supersedes": f"v{i - 1}" if i else None,
                "superseded_by": f"v{i + 1}" if i + 1 < len(contents) else None,
                "status": MemoryStatus.SUPERSEDED if i + 1 < len(contents) else MemoryStatus.ACTIVE,
            }
        )
        units.append(unit)
    return units


def _ask_four(root: Path, memora: Memora, model: ScriptedChatModel, ids: list[str]) -> None:
    model.script += [
        *(_call(REQUEST_FORGET_MEMORY, {"memory_id": i, "reason": "asked"}, f"c{i}") for i in ids),
        _answer("I will ask before deleting."),
    ]
    with open_agent(root) as agent:
        agent.invoke(
            {"messages": [HumanMessage("Forget these.")]},
            CONFIG,
            context=Context(user_id=USER, memora=memora),
        )


def _answer_all(root: Path, memora: Memora, answers: dict[str, str]) -> dict[str, Any]:
    """Answer each question by the memory it shows; returns the thread's values."""
    context = Context(user_id=USER, memora=memora)
    with open_agent(root) as agent:
        while questions := _questions(agent):
            agent.invoke(
                Command(resume=answers[questions[0]["memory_id"]]), CONFIG, context=context
            )
        return dict(agent.get_state(CONFIG).values)


def test_answers_reach_their_own_questions_when_a_chain_changes_while_they_wait(
    tmp_path: Path, scripted: ScriptedChatModel
) -> None:
    """An older version an approved deletion covers is forgotten elsewhere while a later
    question waits: the questions must not shift onto other answers."""
    root = tmp_path / "data"
    memora = Memora(load_settings(data_dir=root))
    kaohsiung, tainan, taipei = (
        "Alice lives in Kaohsiung.",
        "Alice lives in Tainan.",
        "Alice lives in Taipei.",
    )
    memora.ingest([*_chain(kaohsiung, tainan, taipei), _unit("m-kayak", "Alice owns a red kayak."),
                   _unit("m-bassoon", "Alice plays the bassoon.")])  # fmt: skip
    _ask_four(root, memora, scripted, ["v2", "v0", "m-kayak", "m-bassoon"])
    partly = {"v2": "y", "m-kayak": "n"}
    context = Context(user_id=USER, memora=memora)
    with open_agent(root) as agent:
        for expected in ("v2", "m-kayak"):  # v0 goes with v2: not asked
            [question] = _questions(agent)
            assert question["memory_id"] == expected
            agent.invoke(Command(resume=partly[expected]), CONFIG, context=context)
        assert [q["memory_id"] for q in _questions(agent)] == ["m-bassoon"]
    memora.close()
    ok(run(root, "memories", "forget", "v0", "--user", USER, "--yes"))

    memora = Memora(load_settings(data_dir=root))
    done = _answer_all(root, memora, {"m-bassoon": "y"})
    assert sorted(done["approved_forget_ids"]) == ["m-bassoon", "v0", "v2"]
    assert {m.id for m in memora.list(USER)} == {"m-kayak"}
    memora.close()


def test_a_version_linked_while_the_question_waits_is_not_deleted(
    tmp_path: Path, scripted: ScriptedChatModel
) -> None:
    """A review accepted while the turn waits makes a memory the user refused to delete an
    older version of one they approved: it must stay, and each answer its question's."""
    root = tmp_path / "data"
    memora = Memora(load_settings(data_dir=root))
    flagged = _flagged("m-taipei", "Alice lives in Taipei now.", replacing="m-kaohsiung")
    memora.ingest([_unit("m-kaohsiung", "Alice lives in Kaohsiung."), flagged,
                   _unit("m-kayak", "Alice owns a red kayak."),
                   _unit("m-bassoon", "Alice plays the bassoon.")])  # fmt: skip
    _ask_four(root, memora, scripted, ["m-taipei", "m-kaohsiung", "m-kayak", "m-bassoon"])
    first = {"m-taipei": "y", "m-kaohsiung": "n", "m-kayak": "y"}
    context = Context(user_id=USER, memora=memora)
    with open_agent(root) as agent:
        for _ in first:
            [question] = _questions(agent)
            agent.invoke(Command(resume=first[question["memory_id"]]), CONFIG, context=context)
    memora.close()
    ok(run(root, "memories", "review", "--user", USER, input="y\n"))
    memora = Memora(load_settings(data_dir=root))
    assert {u.id for u in memora.chain(USER, "m-taipei")} == {"m-kaohsiung", "m-taipei"}

    done = _answer_all(root, memora, {"m-bassoon": "n"})
    assert sorted(done["deleted_memory_ids"]) == ["m-kayak", "m-taipei"]
    assert {m.id for m in memora.list(USER)} == {"m-kaohsiung", "m-bassoon"}
    memora.close()


def test_a_turn_cut_short_after_its_approval_is_finished_when_the_chat_reopens(
    tmp_path: Path, scripted: ScriptedChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    _pause(root, Backend("sqlite"), scripted)
    memora = Memora(load_settings(data_dir=root))

    def power_cut(*args: Any, **kwargs: Any) -> list[str]:
        raise OSError("power cut after the approvals, before the delete")

    monkeypatch.setattr(Memora, "forget", power_cut)
    context = Context(user_id=USER, memora=memora)
    with open_agent(root) as agent:
        agent.invoke(Command(resume="y"), CONFIG, context=context)
        with pytest.raises(OSError):
            agent.invoke(Command(resume="n"), CONFIG, context=context)
        assert agent.get_state(CONFIG).next == ("delete_memory",)
    monkeypatch.undo()
    memora.close()

    reopened = ok(run(root, "chat", "--user", USER, "--thread", "asked", input="/exit\n"))
    assert "Memory deleted." in reopened
    memora = Memora(load_settings(data_dir=root))
    assert {m.id for m in memora.list(USER)} == {"m-tea", "m-cello", *(
        m.id for m in memora.list(USER) if m.content == NEW)}  # fmt: skip
    assert memora.get(USER, "m-home") is None
    memora.close()


KILLED_MID_REWRITE = """
import os, signal, sys
from langgraph.checkpoint.sqlite import SqliteSaver
saved = SqliteSaver.put_writes
def put_writes(self, config, writes, task_id, task_path=""):
    if any(channel == "__interrupt__" for channel, _ in writes):
        os.kill(os.getpid(), signal.SIGKILL)  # the thread's values are saved, its question not
    return saved(self, config, writes, task_id, task_path)
SqliteSaver.put_writes = put_writes
sys.argv = ["memora", "memories", "forget", "m-home", "--user", "alice", "--yes"]
from cli.app import main
main()
"""


def test_a_forget_killed_while_it_rewrites_a_paused_thread_can_be_run_again(
    tmp_path: Path, scripted: ScriptedChatModel
) -> None:
    root = tmp_path / "data"
    _pause(root, Backend("sqlite"), scripted)
    env = {**os.environ, "MEMORA_DATA_DIR": str(root)}
    env = {k: v for k, v in env.items() if not k.startswith(("OPENAI_", "MEMORA_DATABASE"))}
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_MID_REWRITE], env=env, capture_output=True, cwd=REPO
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert files_containing(root, [b"Quokkaville"]) != []  # cut short: the words are still there

    ok(run(root, "memories", "forget", "m-home", "--user", USER, "--yes"))
    assert files_containing(root, [b"Quokkaville"]) == []
    memora = Memora(load_settings(data_dir=root))
    assert memora.get(USER, "m-home") is None
    with open_agent(root) as agent:
        [asked] = _questions(agent)
        assert asked["memory_id"] == "m-home" and asked["preview"] == REMOVED
    memora.close()


def test_a_version_the_user_refused_is_not_deleted_with_a_newer_one(
    tmp_path: Path, scripted: ScriptedChatModel
) -> None:
    root = tmp_path / "data"
    memora = Memora(load_settings(data_dir=root))
    memora.ingest(_chain("Alice lives in Tainan.", "Alice lives in Taipei."))
    _ask_four(root, memora, scripted, ["v0", "v1"])
    context = Context(user_id=USER, memora=memora)
    with open_agent(root) as agent:
        agent.invoke(Command(resume="n"), CONFIG, context=context)  # keep Tainan
        [newer] = _questions(agent)
        assert (
            newer["memory_id"] == "v1"
            and "Tainan" not in newer["action_requests"][0]["description"]
        )
        assert [d["memory_id"] for d in newer["deletes"]] == ["v1"]
        agent.invoke(Command(resume="y"), CONFIG, context=context)
        done = agent.get_state(CONFIG).values
    assert done["deleted_memory_ids"] == ["v1"]
    assert [m.id for m in memora.list(USER)] == ["v0"]
    assert "Memory kept (deletion not approved): Alice lives in Tainan." in done["reply"]
    memora.close()


def test_the_command_line_deletes_only_what_its_prompt_listed(
    tmp_path: Path, scripted: ScriptedChatModel
) -> None:
    import pexpect

    root = tmp_path / "data"
    memora = Memora(load_settings(data_dir=root))
    flagged = _flagged("m-taipei", "Alice lives in Taipei now.", replacing="m-kaohsiung")
    memora.ingest([_unit("m-kaohsiung", "Alice lives in Kaohsiung."), flagged])
    memora.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEMORA_"))}
    env.update(MEMORA_DATA_DIR=str(root), TERM="dumb", NO_COLOR="1")
    memora_cli = str(Path(sys.executable).with_name("memora"))
    prompt = pexpect.spawn(
        memora_cli, ["memories", "forget", "m-taipei", "--user", USER],
        env=env, encoding="utf-8", timeout=60, use_poll=True,
    )  # fmt: skip
    # use_poll: late in a run the test process's descriptors pass select()'s limit of 1024.
    prompt.expect(r"Delete this memory\? \[y/N\]: ")
    assert "Kaohsiung" not in str(prompt.before)
    ok(run(root, "memories", "review", "--user", USER, input="y\n"))  # linked meanwhile
    prompt.sendline("y")
    prompt.expect("deleted 1 version")
    prompt.expect(pexpect.EOF)
    memora = Memora(load_settings(data_dir=root))
    assert [m.id for m in memora.list(USER)] == ["m-kaohsiung"]
    memora.close()
