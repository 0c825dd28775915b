"""The deletion request is LangChain's human-in-the-loop request, checked against LangChain's
own types and against the test Agent Chat UI applies before it renders a review card."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain.agents.middleware.human_in_the_loop import HITLRequest, HITLResponse
from pydantic import TypeAdapter

from agent.forgotten import REMOVED, Forgotten, blanked_fields
from agent.pending_actions import ForgetAction
from graph.inspector.threads import resume_value
from memora.errors import InvalidInput
from nodes.approve_forget import approval_request, blanked_request, read_answer

ACTION = ForgetAction(memory_id="m-1", preview="The user lives in Kaohsiung.", reason="asked")


def _agent_chat_ui_renders(value: Any) -> bool:
    """agent-chat-ui's ``isAgentInboxInterruptSchema`` (src/lib/agent-inbox-interrupt.ts)."""
    requests, configs = value.get("action_requests"), value.get("review_configs")
    if not isinstance(requests, list) or not requests:
        return False
    if not isinstance(configs, list) or not configs:
        return False
    requests_ok = all(
        isinstance(r, dict) and isinstance(r.get("name"), str) and isinstance(r.get("args"), dict)
        for r in requests
    )
    configs_ok = all(
        isinstance(c, dict)
        and isinstance(c.get("action_name"), str)
        and isinstance(c.get("allowed_decisions"), list)
        for c in configs
    )
    return requests_ok and configs_ok


def test_the_request_is_langchains_and_keeps_memoras_fields() -> None:
    request = approval_request(ACTION)
    TypeAdapter(HITLRequest).validate_python(
        {k: request[k] for k in ("action_requests", "review_configs")}, strict=True
    )
    assert _agent_chat_ui_renders(request)
    assert {k: request[k] for k in ("memory_id", "preview", "reason")} == {
        "memory_id": "m-1",
        "preview": "The user lives in Kaohsiung.",
        "reason": "asked",
    }
    [config] = request["review_configs"]
    assert config["allowed_decisions"] == ["approve", "reject"]
    assert config["action_name"] == request["action_requests"][0]["name"]
    assert "Kaohsiung" in request["action_requests"][0]["description"]


@pytest.mark.parametrize(
    ("body", "approved"),
    [
        ({"decision": "approve"}, True),
        ({"decision": "reject"}, False),
        ({"decision": "reject", "message": "I still live there"}, False),
    ],
)
def test_the_inspectors_answers_are_standard_decisions(
    body: dict[str, Any], approved: bool
) -> None:
    resume = resume_value(body)
    TypeAdapter(HITLResponse).validate_python(resume, strict=True)
    assert read_answer(resume) is approved


@pytest.mark.parametrize(
    "body", [{}, {"decision": "edit"}, {"decision": True}, {"decision": "reject", "message": 3}]
)
def test_anything_else_is_refused_in_one_line(body: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput, match="nothing was changed"):
        resume_value(body)


def test_a_paused_question_loses_only_the_forgotten_memorys_words() -> None:
    forgotten = Forgotten.of(["m-old"], ["使用者住在高雄市前鎮區"])
    older = [
        {"memory_id": "m-old", "content": "使用者住在高雄市前鎮區"},
        {"memory_id": "m-1", "content": "The user lives in Kaohsiung."},
    ]
    asked = approval_request(ACTION, older, error="That answer (a number) was not understood")
    blanked = blanked_request(asked, forgotten)
    assert blanked["memory_id"] == "m-1" and blanked["preview"] == ACTION.preview
    assert blanked["deletes"] == [{"memory_id": "m-old", "content": REMOVED}, older[1]]
    assert "高雄市前鎮區" not in json.dumps(blanked, ensure_ascii=False)
    assert blanked["error"] == asked["error"]
    [action] = blanked["action_requests"]
    assert action["description"].startswith(asked["error"]) and REMOVED in action["description"]
    assert blanked_request(asked, Forgotten.of(["m-9"], ["The user owns a red bicycle."])) is asked


def test_pending_actions_keep_their_questions_and_lose_the_forgotten_words() -> None:
    forgotten = Forgotten.of(["m-old"], ["使用者住在高雄市前鎮區"])
    remember = {
        "type": "remember_memory",
        "candidate": {"content": "使用者住在高雄市前鎮區，靠近捷運站", "user_message": "記住"},
    }
    other = {"type": "remember_memory", "candidate": {"content": "使用者會拉大提琴"}}
    shown = [{"memory_id": "m-old", "content": "使用者住在高雄市前鎮區"}]
    forget = {"type": "forget_memory", "memory_id": "m-old", "preview": "使用者住在高雄市前鎮區",
              "reason": "搬家了", "deletes": shown}  # fmt: skip
    moved = {"memory_id": "m-new", "content": "使用者搬到台北了"}
    newer = {"type": "forget_memory", "memory_id": "m-new", "preview": "使用者搬到台北了",
             "reason": "x", "deletes": [*shown, moved]}  # fmt: skip
    kept = {"type": "forget_memory", "memory_id": "m-2", "preview": "使用者喝烏龍茶", "reason": "x"}
    fields = blanked_fields({"pending_actions": [forget, remember, other, newer, kept]}, forgotten)
    assert fields["pending_actions"] == [
        {**forget, "preview": REMOVED, "reason": REMOVED, "deletes": [
            {"memory_id": "m-old", "content": REMOVED}]},
        other,
        {**newer, "deletes": [{"memory_id": "m-old", "content": REMOVED}, moved]},
        kept,
    ]  # fmt: skip


def test_a_deletion_shows_what_it_removes_less_what_the_user_refused() -> None:
    from nodes.approve_forget import shown_deletes
    from nodes.state import State

    older = {"memory_id": "m-0", "content": "The user lives in Tainan."}
    newer = ForgetAction(
        memory_id="m-1", preview=ACTION.preview, reason="asked",
        deletes=[older, {"memory_id": "m-1", "content": ACTION.preview}],
    )  # fmt: skip
    asked = State(answered_forget_ids=["m-0"], approved_forget_ids=[])
    assert [d["memory_id"] for d in shown_deletes(newer, asked)] == ["m-1"]
    approved = State(answered_forget_ids=["m-0"], approved_forget_ids=["m-0"])
    assert [d["memory_id"] for d in shown_deletes(newer, approved)] == ["m-0", "m-1"]
    # Saved before the versions were kept: the memory alone, never a chain read later.
    assert shown_deletes(ACTION, State()) == [{"memory_id": "m-1", "content": ACTION.preview}]
