"""A run's settings of the wrong JSON type get one-line ValueErrors naming the setting."""

from __future__ import annotations

from typing import Any

import pytest

from nodes.state import Context


@pytest.mark.parametrize(
    ("settings", "name"),
    [
        ({"max_agent_steps": "abc"}, "max_agent_steps"),
        ({"max_agent_steps": 2.5}, "max_agent_steps"),
        ({"max_agent_steps": True}, "max_agent_steps"),
        ({"retrieval_limit": "5"}, "retrieval_limit"),
        ({"retrieval_limit": [1]}, "retrieval_limit"),
        ({"retrieval_min_score": "high"}, "retrieval_min_score"),
        ({"retrieval_min_score": {"x": 1}}, "retrieval_min_score"),
        ({"chat_model": 7}, "chat_model"),
        ({"chat_model": None}, "chat_model"),
        ({"user_id": ["alice"]}, "user_id"),
    ],
)
def test_a_setting_of_the_wrong_type_is_a_one_line_value_error(
    settings: dict[str, Any], name: str
) -> None:
    with pytest.raises(ValueError, match=f"^{name} must be ") as refused:
        Context(**settings)
    assert type(refused.value) is ValueError
    assert "\n" not in str(refused.value)


def test_settings_of_the_right_type_pass() -> None:
    context = Context(
        user_id="alice",
        chat_model="offline",
        max_agent_steps=3,
        retrieval_limit=2,
        retrieval_min_score=1,
    )
    assert (context.max_agent_steps, context.retrieval_min_score) == (3, 1)
    assert Context().max_agent_steps is None
