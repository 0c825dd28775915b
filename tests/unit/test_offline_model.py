"""The offline rules-based chat model: real decisions from the user's words.

Tool observations are simulated with the exact JSON the dispatcher produces, so each
test drives the model the way the graph does: one call, one observation, one call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from pydantic import BaseModel

from agent.offline.model import MAX_TOOL_RESULTS, OFFLINE_MARKER, OfflineChatModel
from agent.tools import RememberMemoryArgs, RequestForgetMemoryArgs, SearchMemoryArgs, tool_schemas
from memora.models import MemoryCandidate, MemoryType
from memora.write.policy import apply_memory_policy

ARG_MODELS: dict[str, type[BaseModel]] = {
    "search_memory": SearchMemoryArgs,
    "remember_memory": RememberMemoryArgs,
    "request_forget_memory": RequestForgetMemoryArgs,
}


@pytest.fixture
def model() -> Any:
    return OfflineChatModel().bind_tools(tool_schemas(), parallel_tool_calls=False)


def step(model: Any, messages: Sequence[BaseMessage]) -> AIMessage:
    """One model call; checks the invariants every message must keep."""
    reply = model.invoke(messages)
    assert isinstance(reply, AIMessage)
    assert len(reply.tool_calls) <= 1
    if reply.tool_calls:
        call = reply.tool_calls[0]
        assert call["type"] == "tool_call" and call["id"]
        ARG_MODELS[call["name"]].model_validate(call["args"])  # valid for the real tool
    else:
        assert reply.text.startswith(OFFLINE_MARKER)
    assert reply.usage_metadata and reply.usage_metadata["total_tokens"] > 0
    return reply


def observe(call_message: AIMessage, result: Any, ok: bool = True) -> ToolMessage:
    """The ToolMessage the dispatcher would write for this call."""
    payload = {"ok": True, "result": result} if ok else {"ok": False, "error": result}
    call = call_message.tool_calls[0]
    return ToolMessage(
        json.dumps(payload, ensure_ascii=False), tool_call_id=call["id"], name=call["name"]
    )


def only_call(reply: AIMessage) -> dict[str, Any]:
    assert len(reply.tool_calls) == 1, reply
    return dict(reply.tool_calls[0])


def search_result(*contents: str) -> dict[str, Any]:
    memories = [
        {
            "memory_id": f"mem-{i}",
            "content": content,
            "memory_type": "semantic",
            "importance_score": 3,
            "semantic_similarity": 0.8,
        }
        for i, content in enumerate(contents, start=1)
    ]
    return {"count": len(memories), "memories": memories}


def policy_verdict(content: str, memory_type: str, reason: str, user_message: str) -> Any:
    candidate = MemoryCandidate(
        content=content,
        memory_type=MemoryType(memory_type),
        user_message=user_message,
        reason=reason,
    )
    accepted, rejected = apply_memory_policy([candidate])
    return "accepted" if accepted else rejected[0].reason.value


# --------------------------------------------------------------------------- seed §15


def test_seed_1_no_memory_needed(model: Any) -> None:
    reply = step(model, [HumanMessage("請解釋 present perfect。")])
    assert reply.tool_calls == []
    assert "離線" in reply.text and "API key" in reply.text


def test_seed_2_recall_searches_for_the_weakness(model: Any) -> None:
    human = HumanMessage("依照我以前提過的弱點，今天應該練什麼？")
    call_message = step(model, [human])
    call = only_call(call_message)
    assert call["name"] == "search_memory"
    assert "弱點" in call["args"]["query"]
    assert "依照" not in call["args"]["query"] and "什麼" not in call["args"]["query"]

    found = search_result("使用者經常混淆 present perfect 與 past simple。")
    final = step(model, [human, call_message, observe(call_message, found)])
    assert final.tool_calls == []
    assert "使用者經常混淆 present perfect 與 past simple。" in final.text


def test_seed_3_explicit_remember(model: Any) -> None:
    human = HumanMessage("請記住，我預計明年五月參加 IELTS。")
    call_message = step(model, [human])
    call = only_call(call_message)
    assert call["name"] == "remember_memory"
    args = call["args"]
    assert args["reason"] == "explicit_request" and args["memory_type"] == "semantic"
    assert "IELTS" in args["content"] and "明年五月" in args["content"]
    assert "請記住" not in args["content"]
    assert policy_verdict(**args, user_message=human.text) == "accepted"

    final = step(
        model,
        [
            human,
            call_message,
            observe(call_message, {"status": "accepted_for_commit", "memory_type": "semantic"}),
        ],
    )
    assert "記住" in final.text and "IELTS" in final.text


def test_seed_4_sensitive_data_is_proposed_then_rejected(model: Any) -> None:
    human = HumanMessage("請記住，我的驗證碼是 482913。")
    call_message = step(model, [human])
    call = only_call(call_message)
    assert call["name"] == "remember_memory"
    assert call["args"]["reason"] == "explicit_request"
    # The application's policy, not the model, refuses it.
    assert policy_verdict(**call["args"], user_message=human.text) == "sensitive_data"

    rejected = {"status": "rejected", "reason": "sensitive_data"}
    final = step(model, [human, call_message, observe(call_message, rejected)])
    assert final.tool_calls == []
    assert "沒有被儲存" in final.text and "敏感資料" in final.text
    assert "會記住" not in final.text


def test_seed_5_forget_searches_then_requests_approval(model: Any) -> None:
    human = HumanMessage("不要再記得我以前想準備 IELTS。")
    search_message = step(model, [human])
    search = only_call(search_message)
    assert search["name"] == "search_memory"
    assert "IELTS" in search["args"]["query"] and "不要再記得" not in search["args"]["query"]

    found = search_result("使用者預計明年五月參加 IELTS。", "使用者住在高雄。")
    found["memories"][0]["memory_id"] = "3f2a-exact-id"
    history = [human, search_message, observe(search_message, found)]
    forget_message = step(model, history)
    forget = only_call(forget_message)
    assert forget["name"] == "request_forget_memory"
    assert forget["args"]["memory_id"] == "3f2a-exact-id"
    assert "不要再記得我以前想準備 IELTS" in forget["args"]["reason"]
    assert forget["id"] != search["id"]

    pending = {
        "status": "pending_approval",
        "memory_id": "3f2a-exact-id",
        "preview": "使用者預計明年五月參加 IELTS。",
    }
    final = step(model, [*history, forget_message, observe(forget_message, pending)])
    assert final.tool_calls == []
    assert "確認" in final.text and "使用者預計明年五月參加 IELTS。" in final.text


def test_forget_with_nothing_found_answers_without_a_forget_request(model: Any) -> None:
    human = HumanMessage("不要再記得我住在台北。")
    search_message = step(model, [human])
    final = step(model, [human, search_message, observe(search_message, search_result())])
    assert final.tool_calls == []
    assert "找不到" in final.text


# --------------------------------------------------------------------------- English


def test_english_explicit_remember(model: Any) -> None:
    human = HumanMessage("Please remember that I live in Kaohsiung.")
    call_message = step(model, [human])
    args = only_call(call_message)["args"]
    assert only_call(call_message)["name"] == "remember_memory"
    assert args == {
        "content": "The user lives in Kaohsiung.",
        "memory_type": "semantic",
        "reason": "explicit_request",
    }
    final = step(
        model,
        [
            human,
            call_message,
            observe(call_message, {"status": "accepted_for_commit", "memory_type": "semantic"}),
        ],
    )
    assert "I will remember" in final.text and "Kaohsiung" in final.text


def test_english_sensitive_rejection_says_why(model: Any) -> None:
    human = HumanMessage("Remember that my password is hunter2-Secret!")
    call_message = step(model, [human])
    assert only_call(call_message)["name"] == "remember_memory"
    rejected = {"status": "rejected", "reason": "sensitive_data"}
    final = step(model, [human, call_message, observe(call_message, rejected)])
    assert "did not store" in final.text and "sensitive data" in final.text


def test_english_dated_event_is_episodic(model: Any) -> None:
    reply = step(model, [HumanMessage("Remember that yesterday I passed my driving test.")])
    assert only_call(reply)["args"]["memory_type"] == "episodic"


def test_english_recall_quotes_what_was_found(model: Any) -> None:
    human = HumanMessage("Do you remember my favourite colour?")
    call_message = step(model, [human])
    call = only_call(call_message)
    assert call["name"] == "search_memory" and call["args"]["query"] == "favourite colour"
    final = step(
        model,
        [
            human,
            call_message,
            observe(call_message, search_result("The user's favourite colour is teal.")),
        ],
    )
    assert "The user's favourite colour is teal." in final.text


def test_english_recall_with_nothing_found(model: Any) -> None:
    human = HumanMessage("What do you know about my travel plans?")
    call_message = step(model, [human])
    final = step(model, [human, call_message, observe(call_message, search_result())])
    assert "could not find" in final.text and "travel plans" in final.text


def test_english_forget_flow(model: Any) -> None:
    human = HumanMessage("Please forget that I live in Kaohsiung.")
    search_message = step(model, [human])
    search = only_call(search_message)
    assert search["name"] == "search_memory"
    assert "kaohsiung" in search["args"]["query"].lower()
    assert "forget" not in search["args"]["query"].lower()
    found = search_result("The user lives in Kaohsiung.")
    history = [human, search_message, observe(search_message, found)]
    forget_message = step(model, history)
    assert only_call(forget_message)["args"]["memory_id"] == "mem-1"
    pending = {
        "status": "pending_approval",
        "memory_id": "mem-1",
        "preview": "The user lives in Kaohsiung.",
    }
    final = step(model, [*history, forget_message, observe(forget_message, pending)])
    assert "confirmation is still required" in final.text
    assert "The user lives in Kaohsiung." in final.text


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("hello", None),
        ("Can you explain the present perfect?", None),
        ("I don't remember where I put my keys.", None),
        ("I forgot my umbrella", None),
        ("Delete the file notes.txt", None),
        ("Don't forget that my exam is on May 3.", "remember_memory"),
        ("Can you remember that I like green tea?", "remember_memory"),
        ("What's my favourite colour?", "search_memory"),
        ("Based on what I told you before, what should I practise?", "search_memory"),
        ("Please don't remember my address.", "search_memory"),
        ("Delete the memory about my old job.", "search_memory"),
        ("刪除關於我住在高雄的記憶", "search_memory"),
        ("你記得我住在哪裡嗎？", "search_memory"),
        ("我之前說過我喜歡什麼？", "search_memory"),
        ("幫我記得我每週三晚上上吉他課", "remember_memory"),
        ("请记住我住在北京", "remember_memory"),
        ("我忘了帶傘", None),
    ],
)
def test_request_kinds(model: Any, message: str, expected: str | None) -> None:
    reply = step(model, [HumanMessage(message)])
    assert (reply.tool_calls[0]["name"] if reply.tool_calls else None) == expected


# --------------------------------------------------------------------------- statements


@pytest.mark.parametrize(
    ("message", "content"),
    [
        ("I prefer concise answers.", "The user prefers concise answers."),
        ("My favourite colour is blue.", "The user's favourite colour is blue."),
        ("I live in Taipei.", "The user lives in Taipei."),
        (
            "I'm working on a project called Atlas.",
            "The user is working on a project called Atlas.",
        ),
        ("I usually study in the morning.", "The user usually studies in the morning."),
        ("I am a software engineer.", "The user is a software engineer."),
        ("我住在高雄", "使用者住在高雄。"),
        ("我喜歡喝烏龍茶。", "使用者喜歡喝烏龍茶。"),
        ("我的英文程度是 B2", "使用者的英文程度是 B2。"),
        ("我偏好簡短的回答。", "使用者偏好簡短的回答。"),
        ("我是 Marlin，我平時主要用 C++ 寫 Win32。", "使用者是 Marlin，平時主要用 C++ 寫 Win32。"),
    ],
)
def test_durable_statements_are_remembered(model: Any, message: str, content: str) -> None:
    call = only_call(step(model, [HumanMessage(message)]))
    assert call["name"] == "remember_memory"
    assert call["args"] == {
        "content": content,
        "memory_type": "semantic",
        "reason": "useful_future_context",
    }
    assert policy_verdict(**call["args"], user_message=message) == "accepted"


@pytest.mark.parametrize(
    "message",
    [
        "Do I prefer tea?",
        "Is my favourite colour blue?",
        "I'm a bit tired.",
        "我喜歡什麼？",
        "我住在高雄嗎？",
        "今天天氣很好。",
    ],
)
def test_questions_and_small_talk_are_not_statements(model: Any, message: str) -> None:
    reply = step(model, [HumanMessage(message)])
    assert not any(c["name"] == "remember_memory" for c in reply.tool_calls)


# --------------------------------------------------------------------------- cross-session


def test_cross_session_memory(model: Any) -> None:
    stored: list[str] = []
    for said in (
        "I prefer concise answers with code examples.",
        "I'm working on a project called Atlas, a LangGraph agent.",
    ):
        human = HumanMessage(said)
        call_message = step(model, [human])
        call = only_call(call_message)
        assert call["name"] == "remember_memory"
        assert call["args"]["reason"] == "useful_future_context"
        accepted = {"status": "accepted_for_commit", "memory_type": "semantic"}
        final = step(model, [human, call_message, observe(call_message, accepted)])
        assert final.tool_calls == []
        stored.append(call["args"]["content"])
    assert "concise answers with code examples" in stored[0]
    assert "Atlas, a LangGraph agent" in stored[1]

    # Session 2: a new thread, nothing but the question.
    human = HumanMessage("What do you know about my project and my preferred style?")
    call_message = step(model, [SystemMessage("background"), human])
    call = only_call(call_message)
    assert call["name"] == "search_memory"
    query = call["args"]["query"].lower()
    assert "project" in query and "style" in query and "what do you know" not in query
    final = step(model, [human, call_message, observe(call_message, search_result(*stored))])
    assert final.tool_calls == []
    for content in stored:
        assert content in final.text


# --------------------------------------------------------------------------- invariants


def test_every_reply_carries_the_marker(model: Any) -> None:
    replies = [
        step(model, [HumanMessage("hello")]),
        step(model, [HumanMessage("請解釋 present perfect。")]),
        step(model, [HumanMessage("Remember this")]),
        OfflineChatModel().invoke("Remember that I live in Taipei."),
    ]
    for reply in replies:
        assert reply.text.startswith(OFFLINE_MARKER)


def test_tool_call_ids_are_unique(model: Any) -> None:
    messages = [HumanMessage("Do you remember my favourite colour?")]
    ids = {only_call(step(model, messages))["id"] for _ in range(5)}
    assert len(ids) == 5


def test_only_bound_tools_are_called() -> None:
    unbound = OfflineChatModel()
    reply = unbound.invoke([HumanMessage("Please remember that I live in Taipei.")])
    assert reply.tool_calls == [] and "not available" in reply.text

    search_only: Any = OfflineChatModel().bind_tools([tool_schemas()[0]])
    assert search_only.tool_names == ("search_memory",)
    human = HumanMessage("Forget that I live in Taipei.")
    search_message = search_only.invoke([human])
    assert only_call(search_message)["name"] == "search_memory"
    found = search_result("The user lives in Taipei.")
    final = search_only.invoke([human, search_message, observe(search_message, found)])
    assert final.tool_calls == [] and "request_forget_memory" in final.text


def test_stops_calling_tools_after_the_step_limit(model: Any) -> None:
    human = HumanMessage("Please remember that I live in Taipei.")
    messages: list[BaseMessage] = [human]
    for _ in range(MAX_TOOL_RESULTS):
        call_message = AIMessage(
            "",
            tool_calls=[
                {
                    "name": "remember_memory",
                    "id": f"c{len(messages)}",
                    "args": {"content": "x"},
                    "type": "tool_call",
                }
            ],
        )
        messages += [call_message, observe(call_message, "invalid arguments", ok=False)]
    final = step(model, messages)
    assert final.tool_calls == [] and "4 tool steps" in final.text


def test_too_long_content_is_truncated_once_then_explained(model: Any) -> None:
    human = HumanMessage("Remember that I like " + "very " * 150 + "long walks.")
    first = model.invoke([human])
    assert len(only_call(first)["args"]["content"]) > 500  # faithful, not pre-cut
    # The dispatcher refuses it before the tool runs, so the raw args never validated.
    error = "invalid arguments: content: String should have at most 500 characters"
    history = [human, first, observe(first, error, ok=False)]
    retry = step(model, history)
    retry_args = only_call(retry)["args"]
    assert len(retry_args["content"]) <= 500 and retry_args["reason"] == "explicit_request"
    final = step(model, [*history, retry, observe(retry, "still wrong", ok=False)])
    assert final.tool_calls == [] and "still wrong" in final.text


def test_unknown_memory_id_error_is_explained(model: Any) -> None:
    human = HumanMessage("Forget that I live in Taipei.")
    search_message = step(model, [human])
    history = [human, search_message, observe(search_message, search_result("Lives in Taipei"))]
    forget_message = step(model, history)
    error = "memory not found; search first and use the exact memory_id"
    final = step(model, [*history, forget_message, observe(forget_message, error, ok=False)])
    assert final.tool_calls == [] and "memory not found" in final.text


def test_only_the_latest_turn_counts(model: Any) -> None:
    old_human = HumanMessage("不要再記得我以前想準備 IELTS。")
    old_search = AIMessage(
        "",
        tool_calls=[
            {"name": "search_memory", "id": "old1", "args": {"query": "IELTS"}, "type": "tool_call"}
        ],
    )
    old_forget = AIMessage(
        "",
        tool_calls=[
            {
                "name": "request_forget_memory",
                "id": "old2",
                "args": {"memory_id": "m1", "reason": "asked"},
                "type": "tool_call",
            }
        ],
    )
    earlier = [
        old_human,
        old_search,
        observe(old_search, search_result("使用者預計明年五月參加 IELTS。")),
        old_forget,
        observe(old_forget, {"status": "pending_approval", "memory_id": "m1", "preview": "p"}),
        AIMessage(f"{OFFLINE_MARKER} 我找到這筆記憶，刪除前需要你的確認。"),
    ]
    reply = step(model, [*earlier, HumanMessage("hello")])
    assert reply.tool_calls == [] and "offline" in reply.text.lower()

    reply = step(model, [*earlier, HumanMessage("I live in Taipei.")])
    assert only_call(reply)["name"] == "remember_memory"


def test_reply_language_follows_the_script(model: Any) -> None:
    human = HumanMessage("请记住，我预计明年五月参加 IELTS。")
    call_message = step(model, [human])
    assert only_call(call_message)["args"]["content"] == "使用者预计明年五月参加 IELTS。"
    final = step(
        model,
        [
            human,
            call_message,
            observe(call_message, {"status": "accepted_for_commit", "memory_type": "semantic"}),
        ],
    )
    assert "我会记住" in final.text


# --------------------------------------------------------------------------- model plumbing


def test_streaming_matches_invoke(model: Any) -> None:
    messages = [HumanMessage("請解釋 present perfect。")]
    chunks = list(model.stream(messages))
    assert len(chunks) >= 3
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    assert "".join(c.text for c in chunks) == model.invoke(messages).text
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk
    assert merged.usage_metadata and merged.usage_metadata["output_tokens"] > 0


def test_streaming_a_tool_call(model: Any) -> None:
    chunks = list(model.stream([HumanMessage("Do you remember my favourite colour?")]))
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk
    assert [c["name"] for c in merged.tool_calls] == ["search_memory"]
    assert merged.tool_calls[0]["args"] == {"query": "favourite colour"}


def test_identity_and_usage(model: Any) -> None:
    assert model._llm_type == "memora-offline"
    reply = model.invoke([HumanMessage("hello")])
    usage = reply.usage_metadata
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def _rules_file() -> dict[str, Any]:
    import tomllib
    from importlib import resources

    from agent.offline.intents import RULES_FILE

    return tomllib.loads(resources.files("agent.offline").joinpath(RULES_FILE).read_text("utf-8"))


def test_every_naming_example_holds(model: Any) -> None:
    rule = _rules_file()["naming"]
    assert rule["matches"] and rule["not_matches"]
    named = re.compile(r"^The user's name is [A-Z][\w'-]*(?: [A-Z][\w'-]*)*\.$")
    for example in rule["matches"]:
        [call] = model.invoke(example).tool_calls
        assert named.match(call["args"]["content"]), (example, call["args"])
    for example in rule["not_matches"]:
        calls = model.invoke(example).tool_calls
        assert not [c for c in calls if named.match(c["args"].get("content", ""))], example


def test_every_help_request_example_holds(model: Any) -> None:
    rule = _rules_file()["help_request"]
    assert rule["matches"] and rule["not_matches"]
    for example in rule["matches"]:
        # Asking for help is not a question about the user's past: no memory search.
        assert model.invoke(example).tool_calls == [], example
    for example in rule["not_matches"]:
        [call] = model.invoke(example).tool_calls
        assert call["name"] == "search_memory", example


@pytest.mark.parametrize(
    ("question", "query"),
    [
        ("What exam did I say I am preparing for?", "exam preparing"),
        ("Who is my favourite composer?", "favourite composer"),
        ("What's my dog's name?", "dog's name"),
        ("Where do I work?", "work"),
        ("我之前說過我在準備什麼考試？", "在準備考試"),
        ("我最喜歡的作曲家是誰？", "最喜歡的作曲家"),
    ],
)
def test_first_person_questions_search_for_their_topic(
    model: Any, question: str, query: str
) -> None:
    [call] = model.invoke(question).tool_calls
    assert (call["name"], call["args"]) == ("search_memory", {"query": query})


def test_a_recall_answer_quotes_only_what_answers_the_question(model: Any) -> None:
    human = HumanMessage("Who is my favourite composer?")
    call_message = step(model, [human])
    found = search_result(
        "\u27e6data 1234abcd\u27e7The\u02c6user's\u02c6dog's\u02c6name\u02c6is\u02c6Rex."
        "\u27e6/data 1234abcd\u27e7",
        "\u27e6data 1234abcd\u27e7The\u02c6user's\u02c6favourite\u02c6composer\u02c6is"
        "\u02c6Bach.\u27e6/data 1234abcd\u27e7",
    )
    final = step(model, [human, call_message, observe(call_message, found)])
    assert final.text == (
        f'{OFFLINE_MARKER} From what you told me:\n- "The user\'s favourite composer is Bach."'
    )
