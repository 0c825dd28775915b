"""A JSON text (a provider's raw copy of a tool call's arguments, a tool's JSON observation)
is redacted value by value and stays JSON that parses to the same shape."""

from __future__ import annotations

import json

import pytest

from memora.judgement import trained_judgement
from memora.redaction import MARK, redact_tree


@pytest.mark.parametrize("judge", [None, "trained"])
@pytest.mark.parametrize(
    ("arguments", "value"),
    [
        (json.dumps({"text": 'My wifi password is "sunflower"'}), "sunflower"),
        (json.dumps({"text": "我的密碼是「藍色月亮」"}), "藍色月亮"),
        (json.dumps({"text": "我的密碼是「藍色月亮」"}, ensure_ascii=False), "藍色月亮"),
        (
            json.dumps({"memories": [{"id": "m1", "text": "the safe code is 'blue moon 42'"}]}),
            "blue moon 42",
        ),
    ],
)
def test_a_json_text_stays_json_and_loses_only_the_value(
    arguments: str, value: str, judge: str | None
) -> None:
    judgement = trained_judgement(judge) if judge else None
    cleaned, count = redact_tree({"arguments": arguments}, judge=judgement)
    parsed = json.loads(cleaned["arguments"])
    assert count >= 1
    assert value not in json.dumps(parsed, ensure_ascii=False)
    assert MARK in json.dumps(parsed, ensure_ascii=False)
    assert _shape(parsed) == _shape(json.loads(arguments))


def test_a_value_that_is_also_a_key_leaves_the_keys_whole() -> None:
    arguments = '{"content":"wifi password is content"}'
    cleaned, _ = redact_tree({"arguments": arguments}, also=["content"])
    assert json.loads(cleaned["arguments"]) == {"content": f"wifi password is {MARK}"}
    assert cleaned["arguments"].startswith('{"content":"')  # compact stays compact


def test_a_key_that_holds_a_value_is_cut_as_text() -> None:
    arguments = json.dumps({"AKIAIOSFODNN7EXAMPLE": "aws"})
    cleaned, count = redact_tree({"arguments": arguments})
    assert count >= 1 and "AKIAIOSFODNN7EXAMPLE" not in cleaned["arguments"]


def test_json_without_a_value_is_left_byte_for_byte() -> None:
    arguments = '{ "text" :  "likes tea",\n "n": 1.50 }'
    assert redact_tree({"arguments": arguments}) == ({"arguments": arguments}, 0)


def test_text_that_only_starts_like_json_is_redacted_as_text() -> None:
    cleaned, count = redact_tree('{"text": "my password is hunter2"')
    assert count == 1 and "hunter2" not in cleaned


def _shape(value: object) -> object:
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(item) for item in value]
    return type(value).__name__
