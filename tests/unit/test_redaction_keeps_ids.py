"""A value kept from redaction (Memora's own memory id) stays whole, even when an echo or a
trained span would cut into it."""

from __future__ import annotations

from memora.redaction import MARK, redact, sensitive_values

MEMORY_ID = "81589b93f15b42fa98dea2c679a7980f"


def test_an_echo_that_cuts_into_a_kept_id_leaves_the_id_whole() -> None:
    text = f"Delete memory {MEMORY_ID}? The code 98dea2c679a7980f opens the shed."
    cleaned = redact(text, also=["98dea2c679a7980f"], keep=frozenset({MEMORY_ID}))
    assert MEMORY_ID in cleaned.text
    assert cleaned.text.endswith(f"The code {MARK} opens the shed.")


def test_a_detected_value_inside_a_kept_id_is_not_chased() -> None:
    assert sensitive_values(f"id {MEMORY_ID}", frozenset({MEMORY_ID})) == []


def test_a_value_inside_a_tool_name_leaves_every_copy_of_the_call_whole() -> None:
    from langchain_core.messages import AIMessage

    from nodes.redact_transcript import _redacted_message

    arguments = '{"content": "wifi password is memory"}'
    message = AIMessage(
        content="Saving: wifi password is memory",
        tool_calls=[
            {"name": "remember_memory", "args": {"content": "wifi password is memory"}, "id": "c1"}
        ],
        invalid_tool_calls=[
            {"name": "search_memory", "args": "{memory", "id": "c2", "error": "bad memory"}
        ],
        additional_kwargs={
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "remember_memory", "arguments": arguments},
                }
            ],
            "function_call": {"name": "search_memory", "arguments": arguments},
        },
    )
    cleaned = _redacted_message(message, ["memory"], frozenset(), None)
    assert cleaned is not None and cleaned.id == message.id
    assert cleaned.content == f"Saving: wifi password is {MARK}"
    [call] = cleaned.tool_calls
    assert (call["name"], call["id"], call["type"]) == ("remember_memory", "c1", "tool_call")
    assert call["args"] == {"content": f"wifi password is {MARK}"}
    [invalid] = cleaned.invalid_tool_calls
    assert (invalid["name"], invalid["id"]) == ("search_memory", "c2")
    assert invalid["args"] == "{" + MARK and invalid["error"] == f"bad {MARK}"
    [raw] = cleaned.additional_kwargs["tool_calls"]
    assert (raw["id"], raw["type"], raw["function"]["name"]) == (
        "c1",
        "function",
        "remember_memory",
    )
    assert 'memory"' not in raw["function"]["arguments"] and MARK in raw["function"]["arguments"]
    legacy = cleaned.additional_kwargs["function_call"]
    assert legacy["name"] == "search_memory" and MARK in legacy["arguments"]


def test_a_value_equal_to_a_content_blocks_type_leaves_the_block_whole() -> None:
    from langchain_core.messages import HumanMessage

    from nodes.redact_transcript import _redacted_message

    message = HumanMessage(content=[{"type": "text", "text": "the wifi password is text"}])
    cleaned = _redacted_message(message, ["text"], frozenset(), None)
    assert cleaned is not None
    assert cleaned.content == [{"type": "text", "text": f"the wifi password is {MARK}"}]


def test_a_run_input_keeps_its_call_ids_while_its_secrets_are_cut() -> None:
    from graph.auth import _redact_run

    call_id = "call_iK2ZWeqhFWCEPyYngFb51yBM"  # random letters and digits: read as a key
    assert redact(call_id).text == MARK
    messages = [
        {"type": "human", "content": "my PIN is 482913", "id": "m1"},
        {
            "type": "ai",
            "content": "",
            "tool_calls": [{"name": "search_memory", "args": {"query": "PIN"}, "id": call_id}],
        },
        {"type": "tool", "content": "no results", "tool_call_id": call_id, "name": "search_memory"},
    ]
    run = {"kwargs": {"input": {"messages": messages}}}
    _redact_run(run, "alice")
    human, ai, tool = run["kwargs"]["input"]["messages"]
    assert human["content"] == f"my PIN is {MARK}" and human["id"] == "m1"
    assert ai["tool_calls"][0]["id"] == tool["tool_call_id"] == call_id


def test_an_image_block_stays_whole_while_the_text_beside_it_is_cut() -> None:
    import base64
    import random

    from langchain_core.messages import HumanMessage

    from nodes.redact_transcript import _redacted_message

    # Random bytes in base64 read as a high-entropy key to the detectors.
    payload = base64.b64encode(random.Random(7).randbytes(600)).decode()
    url = f"data:image/png;base64,{payload}"
    assert redact(url).text != url
    image = {"type": "image_url", "image_url": {"url": url}}
    message = HumanMessage(content=[{"type": "text", "text": "my PIN is 482913"}, image])
    cleaned = _redacted_message(message, ["482913"], frozenset(), None)
    assert cleaned is not None
    assert cleaned.content == [{"type": "text", "text": f"my PIN is {MARK}"}, image]


def test_a_text_whose_folded_form_is_longer_has_only_its_values_cut() -> None:
    # "…" folds to "...", so the folded text no longer lines up with the original one;
    # the values are placed through a character map instead of the whole text going.
    observation = (
        f'{{"result": [{{"memory_id": "{MEMORY_ID}", "content": "The gate code is 4821"}},'
        ' {"content": "Likes tea… and biscuits"}]}'
    )
    cleaned = redact(observation, keep=frozenset({MEMORY_ID}))
    assert MEMORY_ID in cleaned.text and "4821" not in cleaned.text
    assert cleaned.text.endswith('"Likes tea… and biscuits"}]}')
    assert redact("用户说……门禁密码是 660912，记住").text == f"用户说……门禁密码是 {MARK}，记住"
    hidden = redact("password: ab\u200bc123xyz, thanks").text  # a zero-width space inside
    assert "c123xyz" not in hidden and hidden.endswith(", thanks")
