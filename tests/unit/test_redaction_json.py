"""A JSON text (a provider's raw copy of a tool call's arguments, a tool's JSON observation)
is redacted value by value and stays JSON that parses to the same shape."""

from __future__ import annotations

import json

import pytest

from memora.judgement import trained_judgement
from memora.redaction import MARK, judged_values, redact_tree


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


@pytest.mark.parametrize(
    ("document", "values"),
    [
        # A key says what its value opens, and the value is cut though it stands alone.
        ('{"password": "sunflower7"}', ["sunflower7"]),
        ('{"wifi_password": "sunflower field 7"}', ["sunflower field 7"]),
        # Numbers are values too; one that is cut becomes the mark, a string.
        ('{"name": "front door", "door_code": 7391}', ["7391"]),
        ('{"card": 4111111111111111, "t": "my pin is 4821"}', ["4111111111111111", "4821"]),
        # Inside a JSON text, "data" or "name" are the user's keys, not a message's plumbing.
        ('{"data": "my password is hunter2x"}', ["hunter2x"]),
        ('{"name": "my PIN is 4821"}', ["4821"]),
        # A key that holds a value is cut, and the values beside it still as JSON.
        ('{"AKIAIOSFODNN7EXAMPLE": "aws", "t": "\\u6211\\u7684\\u5bc6\\u78bc\\u662f 5173"}', []),
    ],
)
def test_a_value_in_json_is_cut_wherever_it_stands(document: str, values: list[str]) -> None:
    cleaned, count = redact_tree({"arguments": document}, fixed=frozenset({"data", "name"}))
    parsed = json.loads(cleaned["arguments"])
    written = json.dumps(parsed, ensure_ascii=False)
    assert count >= 1 and MARK in written
    for value in [*values, "AKIAIOSFODNN7EXAMPLE", "5173"]:
        assert value not in written and value not in cleaned["arguments"]
    assert len(parsed) == len(json.loads(document))


@pytest.mark.parametrize(
    "document",
    [
        '{"query": "my PIN is 4821", "query": "bank balance"}',  # json.loads keeps the last
        '{"query": "bank balance", "query": "my PIN is 4821"}',
        "[" * 1200 + '"my PIN is 4821"' + "]" * 1200,  # deeper than the parser goes
        '{"note": "café \\ud800", "t": "my PIN is 4821"}',  # a lone surrogate
        '{"pin": 4821, "big": 1e400}',  # a number no float holds
    ],
)
def test_json_that_parsing_would_change_is_redacted_as_text(document: str) -> None:
    cleaned, count = redact_tree({"arguments": document})
    assert count >= 1 and "4821" not in cleaned["arguments"]
    assert "query" not in document or cleaned["arguments"].count('"query"') == 2
    cleaned["arguments"].encode("utf-8")  # a checkpoint can write it


def test_the_trained_reading_of_a_json_text_reads_each_value_beside_its_key() -> None:
    judge = trained_judgement("trained")
    assert judge is not None
    pasted = '{"name": "front door", "wifi_password": "sunflower field"}'
    values = judged_values(pasted, judge)
    assert "sunflower" in " ".join(values)
    assert not values & {"front door", "front", "door", "name"}  # read whole, it held them
    # An escaped lone surrogate is read as text: no encoder could read the parsed value.
    assert "4821" in judged_values('{"note": "café \\ud800", "t": "my PIN is 4821"}', judge)
