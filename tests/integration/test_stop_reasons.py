"""Every stop reason through the real graph, with a scripted chat model (tests only)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver

import agent.tools as tools
import memora.api
from agent.chat_models import clear_chat_models
from graph.builder import builder
from memora.config import get_settings
from nodes.state import Context

RESULT_KEYS = {
    "reply",
    "stop_reason",
    "tool_steps",
    "response_tokens",
    "tool_tokens",
    "used_memory_ids",
    "pending_actions",
}


class ScriptedChatModel(BaseChatModel):
    """A scripted stand-in for a chat model: replays a list of replies (tests only)."""

    script: list[Any]
    seen: list[list[BaseMessage]] = []

    @property
    def _llm_type(self) -> str:
        return "scripted-for-tests"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.seen.append(list(messages))
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        return ChatResult(generations=[ChatGeneration(message=step)])


def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[{"name": name, "args": args, "id": call_id}],
        usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
    )


def _answer(text: str) -> AIMessage:
    return AIMessage(
        text, usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    )


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("MEMORA_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    clear_chat_models()
    app = builder.compile(checkpointer=InMemorySaver())
    models: list[ScriptedChatModel] = []

    def turn(script: list[Any], text: str = "Please remember I like tea.") -> dict[str, Any]:
        model = ScriptedChatModel(script=script)
        monkeypatch.setattr("nodes.call_model.get_chat_model", lambda settings, choice="": model)
        config = {"configurable": {"thread_id": "t", "user_id": "alice"}}
        result = app.invoke(
            {"messages": [HumanMessage(text)]}, config, context=Context(user_id="alice")
        )
        assert result.keys() >= RESULT_KEYS
        assert model.script == [], "the script was not used up"
        models.append(model)
        return {**app.get_state(config).values, **result}

    turn.models = models  # type: ignore[attr-defined]
    yield turn
    memora.api.close_shared()
    get_settings.cache_clear()


def _library() -> memora.api.Memora:
    return memora.api.shared_memora(get_settings())


def test_final_answer_commits_and_touches(run: Any) -> None:
    seeded = _library().add("alice", "I drink green tea every morning")
    result = run(
        [
            _call("search_memory", {"query": "tea"}, "s1"),
            _call(
                "remember_memory",
                {
                    "content": "The user likes oolong tea",
                    "memory_type": "semantic",
                    "reason": "explicit_request",
                },
                "r1",
            ),
            _answer("Noted."),
        ]
    )
    assert result["stop_reason"] == "final_answer" and result["reply"] == "Noted."
    assert result["tool_steps"] == 2 and result["response_tokens"] == 45
    assert result["used_memory_ids"] == [seeded.memory_id]
    unit = _library().get("alice", seeded.memory_id or "")
    assert unit is not None and unit.access_count == 1
    assert any("oolong" in m.content for m in _library().list("alice"))


def test_tool_error_drops_pending_actions_and_touches_nothing(
    run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeded = _library().add("alice", "I drink green tea every morning")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("count failed")

    monkeypatch.setitem(
        tools.TOOL_HANDLERS,
        "count_english_words",
        tools.ToolSpec(tools.CountEnglishWordsArgs, broken),
    )
    result = run(
        [
            _call("search_memory", {"query": "tea"}, "s1"),
            _call(
                "remember_memory",
                {
                    "content": "The user likes oolong tea",
                    "memory_type": "semantic",
                    "reason": "explicit_request",
                },
                "r1",
            ),
            _call("count_english_words", {"text": "one two"}, "c1"),
        ]
    )
    assert result["stop_reason"] == "tool_error"
    assert "count failed" in result["error"]
    assert result["pending_actions"] and result["tool_steps"] == 3
    assert not any("oolong" in m.content for m in _library().list("alice"))
    unit = _library().get("alice", seeded.memory_id or "")
    assert unit is not None and unit.access_count == 0
    assert isinstance(result["messages"][-2], ToolMessage)  # the call is answered


def test_api_error_after_a_search_touches_nothing(run: Any) -> None:
    seeded = _library().add("alice", "I drink green tea every morning")
    result = run([_call("search_memory", {"query": "tea"}, "s1"), ConnectionError("down")])
    assert result["stop_reason"] == "api_error" and "down" in result["reply"]
    unit = _library().get("alice", seeded.memory_id or "")
    assert unit is not None and unit.access_count == 0


def test_empty_response(run: Any) -> None:
    result = run([_answer("")])
    assert result["stop_reason"] == "empty_response" and result["tool_steps"] == 0


def test_max_steps_runs_exactly_four_tools(run: Any) -> None:
    calls = [_call("count_english_words", {"text": f"word {n}"}, f"c{n}") for n in range(5)]
    result = run(calls)
    assert result["stop_reason"] == "max_steps" and result["tool_steps"] == 4
    observations = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in observations] == ["c0", "c1", "c2", "c3", "c4"]
    assert "step limit" in str(observations[-1].content)


def test_model_sees_only_data_never_bookkeeping(run: Any) -> None:
    result = run(
        [
            _call(
                "remember_memory",
                {
                    "content": "The user likes oolong tea",
                    "memory_type": "semantic",
                    "reason": "explicit_request",
                },
                "r1",
            ),
            _answer("Noted."),
        ]
    )
    assert result["pending_actions"]
    second_call = run.models[-1].seen[-1]
    observation = second_call[-1]
    assert isinstance(observation, ToolMessage)
    assert (
        observation.content == '{"ok": true, "result": {"status": "accepted_for_commit", '
        '"memory_type": "semantic"}}'
    )
    everything = " ".join(str(m.content) for m in second_call[1:])  # after the system prompt
    for secret in ("pending_actions", "candidate", "user_message", "token"):
        assert secret not in everything
