"""Secrets are not kept at rest: the stored thread, the audit and the logs are scanned."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from graph.checkpointed import open_agent
from memora.api import Memora
from memora.config import load_settings
from memora.redaction import MARK, RedactingFilter, redact
from memora.write.policy import is_sensitive
from nodes.state import Context
from tests.integration.test_forgetting import files_containing
from tests.integration.test_stop_reasons import ScriptedChatModel, _answer, _call

CODE = "482913"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
MESSAGE = f"請記住，我的驗證碼是 {CODE}。另外我的 AWS key 是 {AWS_KEY}"


def _turns(
    monkeypatch: pytest.MonkeyPatch, root: Path, call_id: str = "r1", **settings: Any
) -> ScriptedChatModel:
    remember = _call(
        "remember_memory",
        {"content": f"驗證碼是 {CODE}", "memory_type": "semantic", "reason": "explicit_request"},
        call_id,
    )
    model = ScriptedChatModel(
        script=[remember, _answer(f"I cannot keep {CODE}."), _answer("Hello again.")]
    )
    model.seen.clear()
    monkeypatch.setattr("nodes.call_model.get_chat_model", lambda s, choice="": model)
    memora = Memora(load_settings(data_dir=root, **settings))
    context = Context(user_id="alice", memora=memora)
    config = {"configurable": {"thread_id": "t1", "user_id": "alice"}}
    with open_agent(root) as agent:
        agent.invoke({"messages": [HumanMessage(MESSAGE)]}, config, context=context)
        agent.invoke({"messages": [HumanMessage("Hi!")]}, config, context=context)
        model.__dict__["state"] = agent.get_state(config).values
    memora.close()
    return model


def test_a_secret_leaves_no_trace_in_the_stored_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    model = _turns(monkeypatch, root)
    assert files_containing(root, [CODE.encode(), AWS_KEY.encode()]) == []
    first = model.__dict__["state"]["messages"][0]
    assert first.content == f"請記住，我的驗證碼是 {MARK}。另外我的 AWS key 是 {MARK}"
    # The next turn's model call never saw the secret again.
    later = " ".join(str(m.content) for m in model.seen[-1])
    assert CODE not in later and AWS_KEY not in later and MARK in later


def test_a_tool_call_id_that_looks_like_a_key_still_matches_its_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A provider's call id: random letters and digits, which the detectors read as a key.
    call_id = "call_iK2ZWeqhFWCEPyYngFb51yBM"
    assert is_sensitive(call_id)
    model = _turns(monkeypatch, tmp_path / "data", call_id=call_id)
    messages = model.__dict__["state"]["messages"]
    assert MARK in str(messages[0].content)  # the turn was redacted
    calls = [call["id"] for m in messages if isinstance(m, AIMessage) for call in m.tool_calls]
    answers = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert calls == answers == [call_id]


def test_redaction_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "data"
    _turns(monkeypatch, root, redact_transcripts=False)
    assert files_containing(root, [CODE.encode()]) == ["checkpoints.sqlite"]


def test_a_search_for_a_secret_is_audited_redacted(tmp_path: Path) -> None:
    memora = Memora(load_settings(data_dir=tmp_path / "data"))
    memora.search("alice", f"my AWS key is {AWS_KEY}")
    (entry,) = memora.audit.entries("alice")
    assert entry.query == f"my AWS key is {MARK}" and entry.redactions == 1
    memora.close()
    assert files_containing(tmp_path / "data", [AWS_KEY.encode()]) == []


def test_log_records_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("memora.test")
    handler = caplog.handler
    handler.addFilter(RedactingFilter())
    logger.warning("the user sent %s", f"password: {CODE}xyz")
    assert CODE not in caplog.text and MARK in caplog.text


@pytest.mark.parametrize(
    "text",
    [
        f"My AWS key is {AWS_KEY}",
        f"驗證碼：{CODE}",
        "card 4111 1111 1111 1111 thanks",
        "我的身分證字號是A123456789",
        "postgres://bob:s3cretpw@db.example.com/app",
    ],
)
def test_what_is_redacted_no_longer_looks_sensitive(text: str) -> None:
    from memora.write.policy import is_sensitive

    cleaned = redact(text)
    assert cleaned.redactions >= 1 and not is_sensitive(cleaned.text.replace(MARK, " "))


def test_a_turn_whose_memory_cannot_be_saved_is_still_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store locked past its timeout fails the commit: the turn still ends through
    redaction, and the reply says that nothing was saved."""
    import sqlite3

    root = tmp_path / "data"
    remember = _call(
        "remember_memory",
        {
            "content": "The user likes green tea",
            "memory_type": "semantic",
            "reason": "explicit_request",
        },
        "r1",
    )
    model = ScriptedChatModel(script=[remember, _answer("Noted."), _answer("Hello again.")])
    monkeypatch.setattr("nodes.call_model.get_chat_model", lambda s, choice="": model)
    memora = Memora(load_settings(data_dir=root))
    memora.add("alice", "The user owns a bicycle")  # the store exists before it is locked
    context = Context(user_id="alice", memora=memora)
    config = {"configurable": {"thread_id": "t1", "user_id": "alice"}}
    holder = sqlite3.connect(root / "memora.db", isolation_level=None)
    with open_agent(root) as agent:
        holder.execute("BEGIN EXCLUSIVE")
        try:
            result = agent.invoke(
                {"messages": [HumanMessage(f"My PIN is {CODE}. I like green tea, remember.")]},
                config,
                context=context,
            )
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert result["stop_reason"] == "final_answer"
        state = agent.get_state(config).values
        assert "Nothing from this turn was saved to memory" in result["reply"]
        assert [o["reason"] for o in state["commit_outcomes"]] == ["store_unavailable"]
    memora.close()
    assert files_containing(root, [CODE.encode()]) == []


def test_log_redaction_leaves_the_stores_file_names_readable() -> None:
    name = "3f2b8c1e9d0a4b5c6d7e8f9012345678-ab12cd34ef56ab78.npz"
    record = logging.LogRecord(
        "memora", logging.WARNING, __file__, 1, f"ignoring {name}; key {AWS_KEY}", None, None
    )
    RedactingFilter().filter(record)
    assert record.getMessage() == f"ignoring {name}; key {MARK}"


def test_a_secret_that_is_part_of_a_tool_name_leaves_the_tool_calls_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value is chased through the turn's texts, but a tool call's name, id and type are
    plumbing: "memory" cut inside "remember_memory" would leave the thread with a call to
    a tool that does not exist, which a provider refuses on every later turn."""
    root = tmp_path / "data"
    remember = _call(
        "remember_memory",
        {
            "content": "The user's wifi password is memory",
            "memory_type": "semantic",
            "reason": "explicit_request",
        },
        "r1",
    )
    model = ScriptedChatModel(
        script=[remember, _answer("I won't keep the password."), _answer("Hello again.")]
    )
    monkeypatch.setattr("nodes.call_model.get_chat_model", lambda s, choice="": model)
    memora = Memora(load_settings(data_dir=root))
    context = Context(user_id="alice", memora=memora)
    config = {"configurable": {"thread_id": "t1", "user_id": "alice"}}
    with open_agent(root) as agent:
        agent.invoke(
            {"messages": [HumanMessage("Remember: my wifi password is memory")]},
            config,
            context=context,
        )
        agent.invoke({"messages": [HumanMessage("Hi!")]}, config, context=context)
        messages = agent.get_state(config).values["messages"]
    memora.close()
    assert messages[0].content == f"Remember: my wifi password is {MARK}"
    calls = [call for m in messages if isinstance(m, AIMessage) for call in m.tool_calls]
    assert [(c["name"], c["id"], c["type"]) for c in calls] == [
        ("remember_memory", "r1", "tool_call")
    ]
    assert calls[0]["args"]["content"] == f"The user's wifi password is {MARK}"
    answers = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in answers] == ["r1"]
    assert all("password is memory" not in str(m.content) for m in messages)
    assert files_containing(root, [b"password is memory"]) == []


def test_a_secret_that_also_occurs_inside_a_call_id_is_still_chased(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ids are kept whole, but a value that only also occurs inside one is still a value:
    the model's echo of it is cut, and the id stays as it was."""
    call_id = f"call_Zq{CODE}tY"
    root = tmp_path / "data"
    model = _turns(monkeypatch, root, call_id=call_id)
    messages = model.__dict__["state"]["messages"]
    assert messages[0].content == f"請記住，我的驗證碼是 {MARK}。另外我的 AWS key 是 {MARK}"
    replies = [m.content for m in messages if isinstance(m, AIMessage) and m.content]
    assert replies[0] == f"I cannot keep {MARK}."
    calls = [call["id"] for m in messages if isinstance(m, AIMessage) for call in m.tool_calls]
    answers = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert calls == answers == [call_id]
    later = " ".join(str(m.content) for m in model.seen[-1])
    assert CODE not in later
    assert files_containing(root, [f"keep {CODE}".encode(), f"是 {CODE}".encode()]) == []


def test_a_json_message_keeps_its_shape_and_loses_its_values_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user who pastes JSON: a number under a key that names what it opens, and a text under
    a key ("data") that only a message's own structure treats as plumbing, are both cut, and
    what is stored still parses as the same document."""
    root = tmp_path / "data"
    pasted = '{"name": "front door", "door_code": 739164028, "data": "my password is hunter2x"}'
    model = ScriptedChatModel(script=[_answer("I won't keep those.")])
    monkeypatch.setattr("nodes.call_model.get_chat_model", lambda s, choice="": model)
    memora = Memora(load_settings(data_dir=root))
    context = Context(user_id="alice", memora=memora)
    config = {"configurable": {"thread_id": "t1", "user_id": "alice"}}
    with open_agent(root) as agent:
        agent.invoke({"messages": [HumanMessage(pasted)]}, config, context=context)
        stored = agent.get_state(config).values["messages"][0].content
    memora.close()
    assert json.loads(stored) == {
        "name": "front door",
        "door_code": MARK,
        "data": stored_data(stored),
    }
    assert "hunter2x" not in stored and MARK in stored_data(stored)
    assert files_containing(root, [b"739164028", b"hunter2x"]) == []


def stored_data(stored: str) -> str:
    return str(json.loads(stored)["data"])
