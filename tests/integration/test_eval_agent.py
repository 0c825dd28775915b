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
    # The colour changes three times, in three phrasings; the latest one wins.
    _definition(
        colours,
        "changes",
        [
            "My favourite colour is Red.",
            "Green is my favourite colour.",
            "My favourite colour could be described as Orange.",
            COLOUR_QUESTION,
        ],
        ["Orange"],
    )
    # Must fail: the expected colour was never stated, and Red stays active.
    _definition(colours, "never_stated", ["My favourite colour is Red.", COLOUR_QUESTION], ["Teal"])
    _definition(
        names,
        "four_names",
        [
            "Call me Peter.",
            "My name is Paul.",
            "Robert is what people call me.",
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


def test_eval_agent_scores_colours_and_names(bench: Path, tmp_path: Path) -> None:
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
    [failure] = colours["failures"]
    assert failure["definition"] == "never_stated"
    assert any("latest colour 'Teal'" in reason for reason in failure["reasons"])

    names = result["NameList"]
    assert (names["passed"], names["total"]) == (1, 2)
    [failure] = names["failures"]
    assert failure["definition"] == "missing_name"
    assert any("['Zed']" in reason for reason in failure["reasons"])

    assert result["Shopping"] == {
        "skipped": "needs a real model: arithmetic over the shopping history",
        "total": 1,
    }


@pytest.mark.parametrize(
    ("message", "content"),
    [
        ("White is my favourite colour.", "The user's favourite colour is White."),
        ("My favourite colour could be described as Teal.", "The user's favourite colour is Teal."),
        ("The name of my favourite colour is Red.", "The user's favourite colour is Red."),
        ("The name of my dog is Rex.", "The user's dog's name is Rex."),
        ("My name has changed to Ann.", "The user's name is Ann."),
        ("Refer to me as Gary.", "The user's name is Gary."),
        ("Start calling me by my name which is Joe.", "The user's name is Joe."),
        ("Bo is what I am called.", "The user's name is Bo."),
        ("Hi, I go by Kim.", "The user's name is Kim."),
    ],
)
def test_offline_model_reads_rephrased_statements(message: str, content: str) -> None:
    from memora.offline_model import OfflineChatModel
    from memora.tools import tool_schemas

    reply = OfflineChatModel().bind_tools(tool_schemas()).invoke(message)
    assert [(c["name"], c["args"]["content"]) for c in reply.tool_calls] == [
        ("remember_memory", content)
    ]


@pytest.mark.parametrize(
    "message",
    ["Call me tomorrow.", "This is my house.", "Today is my birthday.", "My car would be nice."],
)
def test_offline_model_does_not_misread_look_alikes(message: str) -> None:
    from memora.offline_model import OfflineChatModel
    from memora.tools import tool_schemas

    reply = OfflineChatModel().bind_tools(tool_schemas()).invoke(message)
    assert reply.tool_calls == []
