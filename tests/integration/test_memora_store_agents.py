"""LangMem's memory tools and a ``create_react_agent`` graph on ``MemoraStore``, driven by a
scripted tool-calling model that reads the conversation (tests only)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.prebuilt import ToolNode, create_react_agent
from langmem import create_manage_memory_tool, create_search_memory_tool

from memora.api import Memora
from memora.errors import MemoryRefused
from memora.integrations import MemoraStore
from tests.scripted import ScriptedToolCaller

# create_react_agent moved to langchain.agents in LangGraph 1 and is still shipped here.
pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
NAMESPACE = ("memories", "{langgraph_user_id}")


def _call(name: str, args: dict[str, Any]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": uuid.uuid4().hex[:8]}])


def _librarian(messages: list[BaseMessage]) -> AIMessage:
    """Remembers, recalls and forgets as the user asks; answers once a tool has spoken."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return _after_tool(messages, last)
    text = str(last.content)
    if text.startswith("Remember "):
        content = text.removeprefix("Remember ")
        return _call("manage_memory", {"content": content, "action": "create"})
    return _call("search_memory", {"query": text.split(": ", 1)[-1]})


def _after_tool(messages: list[BaseMessage], result: ToolMessage) -> AIMessage:
    asked = next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))
    if result.name == "search_memory":
        found = json.loads(str(result.content))
        if asked.startswith("Forget") and found:
            return _call("manage_memory", {"action": "delete", "id": found[0]["key"]})
        return AIMessage("I recall: " + "; ".join(item["value"]["content"] for item in found))
    return AIMessage(f"Done: {result.content}")


def _agent(store: MemoraStore, **tool_node: Any) -> Any:
    tools = [create_manage_memory_tool(NAMESPACE), create_search_memory_tool(NAMESPACE)]
    model = ScriptedToolCaller(script=_librarian)
    return create_react_agent(model, ToolNode(tools, **tool_node), store=store)


def _say(agent: Any, user: str, text: str) -> str:
    config = {"configurable": {"langgraph_user_id": user}}
    result = agent.invoke({"messages": [HumanMessage(text)]}, config)
    return str(result["messages"][-1].content)


def test_langmem_tools_remember_recall_and_ask_before_forgetting(memora: Memora) -> None:
    agent = _agent(MemoraStore(memora), handle_tool_errors=MemoryRefused)

    assert "created memory" in _say(agent, "alice", "Remember I prefer concise answers")
    stored = memora.list("alice")
    assert [unit.content for unit in stored] == ["I prefer concise answers"]
    assert stored[0].source.actor == "store"

    assert "concise answers" in _say(agent, "alice", "Search: how do I like answers?")
    assert "concise answers" not in _say(agent, "bob", "Search: how do I like answers?")

    reply = _say(agent, "alice", "Forget: concise answers")
    assert "Deleted memory" in reply  # what LangMem says; Memora only recorded a request
    assert memora.count("alice") == 1
    pending = memora.pending_forgets("alice")
    assert [request.memory_id for request in pending] == [stored[0].id]
    memora.approve_forget("alice", pending[0].id)
    assert memora.count("alice") == 0


def test_a_refusal_reaches_the_model_with_its_reason(memora: Memora) -> None:
    agent = _agent(MemoraStore(memora), handle_tool_errors=MemoryRefused)
    reply = _say(agent, "alice", "Remember my bank password is hunter2-Zq9")
    assert "sensitive_data" in reply and "nothing was stored" in reply
    assert "hunter2" not in reply
    assert memora.count("alice") == 0


def test_without_error_handling_a_refusal_stops_the_run(memora: Memora) -> None:
    agent = _agent(MemoraStore(memora))
    with pytest.raises(MemoryRefused) as refused:
        _say(agent, "alice", "Remember my bank password is hunter2-Zq9")
    assert refused.value.reason == "sensitive_data"
    assert memora.count("alice") == 0


def test_langmem_update_by_a_memory_written_elsewhere(memora: Memora) -> None:
    memory_id = memora.add("alice", "I live in London").memory_id
    manage = create_manage_memory_tool(NAMESPACE, store=MemoraStore(memora))
    config = {"configurable": {"langgraph_user_id": "alice"}}
    # LangMem parses the id as a UUID, so the memory id comes back dashed.
    args = {"action": "update", "id": memory_id, "content": "I moved to Taipei"}
    assert "updated memory" in manage.invoke(args, config)
    active = [unit.content for unit in memora.list("alice") if unit.status.value == "active"]
    assert active == ["I moved to Taipei"]
