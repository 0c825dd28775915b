"""Tool schemas, policy gate, offline model and profile share one set of limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.tools import TOOL_HANDLERS, RememberMemoryArgs
from memora.limits import MAX_MEMORY_CHARS, MAX_PROFILE_VALUE_CHARS
from memora.models import MemoryCandidate
from memora.profile import UserProfileStore
from memora.storage.db import Database
from memora.write.policy import check_candidate


def test_the_offline_model_corrects_arguments_to_the_tool_schemas_limits() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from agent.offline.model import OfflineChatModel
    from agent.tools import tool_schemas

    content = "I keep bees on the roof of my building. " * 20
    assert len(content) > MAX_MEMORY_CHARS
    call = {
        "name": "remember_memory",
        "args": {"content": content, "memory_type": "semantic", "reason": "x", "bogus": 1},
        "id": "call-1",
    }
    messages = [
        HumanMessage("Please remember that " + content),
        AIMessage("", tool_calls=[call]),
        ToolMessage(json.dumps({"ok": False, "error": "invalid arguments"}), tool_call_id="call-1"),
    ]
    model = OfflineChatModel().bind_tools(tool_schemas(), parallel_tool_calls=False)
    [retry] = model.invoke(messages).tool_calls
    assert set(retry["args"]) == {"content", "memory_type", "reason"}
    assert len(retry["args"]["content"]) <= MAX_MEMORY_CHARS
    assert retry["args"]["reason"] in ("explicit_request", "useful_future_context")
    RememberMemoryArgs.model_validate(retry["args"])


def test_the_remember_schema_and_the_policy_agree_on_memory_length() -> None:
    remember = TOOL_HANDLERS["remember_memory"].args
    assert remember.model_json_schema()["properties"]["content"]["maxLength"] == MAX_MEMORY_CHARS
    statement = "I keep bees on the roof of my building in Kaohsiung. "
    too_long = (statement * (MAX_MEMORY_CHARS // len(statement) + 2))[: MAX_MEMORY_CHARS + 1]
    rejection = check_candidate(MemoryCandidate(content=too_long, user_message=too_long))
    assert rejection is not None and rejection[1] == "vague:max-length"


def test_profile_values_stop_at_their_limit(tmp_path: Path) -> None:
    db = Database(tmp_path / "profile.db", "")
    profile = UserProfileStore(db)
    profile.set("alice", "city", "x" * MAX_PROFILE_VALUE_CHARS)
    with pytest.raises(ValueError, match=str(MAX_PROFILE_VALUE_CHARS)):
        profile.set("alice", "city", "x" * (MAX_PROFILE_VALUE_CHARS + 1))
    assert profile.get("alice") == {"city": "x" * MAX_PROFILE_VALUE_CHARS}
    db.close()
