"""Tool schemas, policy gate, offline model and profile share one set of limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from memora import offline_model
from memora.db import Database
from memora.limits import MAX_MEMORY_CHARS, MAX_PROFILE_VALUE_CHARS
from memora.models import MemoryCandidate
from memora.policy import check_candidate
from memora.profile import UserProfileStore
from memora.tools import TOOL_HANDLERS


def test_offline_model_clips_each_argument_to_its_tool_schema_limit() -> None:
    # The tools the offline model calls; it never calls count_english_words.
    schema_limits: dict[str, int] = {}
    for tool in (offline_model.SEARCH, offline_model.REMEMBER, offline_model.FORGET):
        for name, field in TOOL_HANDLERS[tool].args.model_json_schema()["properties"].items():
            if "maxLength" in field:
                schema_limits.setdefault(name, field["maxLength"])
                assert schema_limits[name] == field["maxLength"], name
    assert schema_limits == offline_model._STRING_LIMITS


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
