"""`memora eval agent`: GoodAI-style scripts played through the whole agent, offline.

The definitions are tiny synthetic ones in the GoodAI format, written into tmp_path;
the command runs as a real subprocess with the offline model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

MEMORA = Path(sys.executable).parent / "memora"
if not MEMORA.exists():  # e.g. a venv whose python is a symlink elsewhere
    MEMORA = Path(shutil.which("memora") or "memora")

COLOUR_QUESTION = "What is my favourite colour?"
NAME_QUESTION = "Which names have I told you so far?"


def _definition(folder: Path, name: str, script: list[str], expected: list[Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    definition = {
        "script": script,
        "is_question": [False] * (len(script) - 1) + [True],
        "expected_responses": expected,
        "can_be_interleaved": True,
    }
    (folder / f"{name}.def.json").write_text(json.dumps(definition), encoding="utf-8")


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    root = tmp_path / "goodai_ltm"
    colours, names = root / "Colours", root / "NameList"
    # The colour changes twice, in two phrasings; the latest one wins, in memory and reply.
    _definition(
        colours,
        "changes",
        [
            "My favourite colour is Red.",
            "Green is my favourite colour.",
            "My favourite colour is Orange.",
            COLOUR_QUESTION,
        ],
        ["Orange"],
    )
    # Must fail both ways: the expected colour was never stated, and Red stays active.
    _definition(colours, "never_stated", ["My favourite colour is Red.", COLOUR_QUESTION], ["Teal"])
    _definition(
        names,
        "four_names",
        [
            "Call me Peter.",
            "My name is Paul.",
            "Everyone knows me as Robert.",
            "I go by Patrick.",
            NAME_QUESTION,
        ],
        ["Peter", "Paul", "Robert", "Patrick"],
    )
    # Must fail: one expected name was never given.
    _definition(
        names,
        "missing_name",
        ["Call me Peter.", "My name is Paul.", NAME_QUESTION],
        ["Peter", "Zed"],
    )
    _definition(
        root / "Shopping",
        "list",
        ["Please add 2 Apples to my shopping list", "What is on my shopping list?"],
        [["apples", 2]],
    )
    return root


def _failure(result: dict[str, Any], name: str) -> dict[str, Any]:
    [failure] = [f for f in result["failures"] if f["definition"] == name]
    return failure


def test_eval_agent_scores_memory_and_reply(bench: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORA_", "OPENAI_"))}
    env["MEMORA_DATA_DIR"] = str(tmp_path / "data")
    proc = subprocess.run(
        [str(MEMORA), "eval", "agent", "--data", str(bench), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)["memora"]

    colours = result["Colours"]
    assert (colours["passed"], colours["total"], colours["pass_rate"]) == (1, 2, 0.5)
    assert (colours["reply_passed"], colours["reply_pass_rate"]) == (1, 0.5)
    assert [f["definition"] for f in colours["failures"]] == ["never_stated"]
    failure = _failure(colours, "never_stated")
    assert any("latest colour 'Teal'" in reason for reason in failure["memory"])
    assert failure["reply"][0] == "the reply does not name ['Teal']"

    names = result["NameList"]
    assert (names["passed"], names["total"]) == (1, 2)
    assert any("['Zed']" in reason for reason in _failure(names, "missing_name")["memory"])
    # The name memory's history holds all four names, but search shows only the current
    # one, so the reply cannot list them: memory passes, the reply fails.
    four = _failure(names, "four_names")
    assert four["memory"] == []
    assert four["reply"][0] == "the reply does not name ['Peter', 'Paul', 'Robert']"
    assert "Patrick" in four["reply"][-1]
    assert names["reply_passed"] == 0

    assert result["Shopping"] == {
        "skipped": "needs a real model: arithmetic over the shopping history",
        "total": 1,
    }


@pytest.mark.parametrize(
    ("message", "content"),
    [
        ("Bach is my favourite composer.", "The user's favourite composer is Bach."),
        ("Please call me Ann.", "The user's name is Ann."),
        ("Everyone knows me as Sam.", "The user's name is Sam."),
        ("You can address me as Dr Lee.", "The user's name is Dr Lee."),
        ("My name has changed to Ann.", "The user's name is Ann."),
        ("Hi, I go by Kim.", "The user's name is Kim."),
        ("Tokyo is my home town.", "The user's home town is Tokyo."),
        ("The colour of my car is red.", "The colour of the user's car is red."),
        (
            "My favourite tea has changed to oolong.",
            "The user's favourite tea has changed to oolong.",
        ),
    ],
)
def test_offline_model_reads_statements_in_several_phrasings(message: str, content: str) -> None:
    from agent.offline.model import OfflineChatModel
    from agent.tools import tool_schemas

    reply = OfflineChatModel().bind_tools(tool_schemas()).invoke(message)
    assert [(c["name"], c["args"]["content"]) for c in reply.tool_calls] == [
        ("remember_memory", content)
    ]


@pytest.mark.parametrize(
    "message",
    [
        "Call me tomorrow.",
        "This is my house.",
        "Today is my birthday.",
        "My car would be nice.",
        # A hedge states no value yet.
        "My favourite colour could be described as teal.",
    ],
)
def test_offline_model_does_not_misread_look_alikes(message: str) -> None:
    from agent.offline.model import OfflineChatModel
    from agent.tools import tool_schemas

    reply = OfflineChatModel().bind_tools(tool_schemas()).invoke(message)
    assert reply.tool_calls == []


def test_a_name_given_to_someone_else_is_not_the_users() -> None:
    from agent.offline.model import OfflineChatModel
    from agent.tools import tool_schemas

    model = OfflineChatModel().bind_tools(tool_schemas())
    for message in ("I named my dog Rex.", "My dog's name is Rex."):
        calls = model.invoke(message).tool_calls
        assert all("The user's name" not in c["args"].get("content", "") for c in calls), message
