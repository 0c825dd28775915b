"""Conversations that leave memories and paused deletions behind, for the inspector's tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

from graph.checkpointed import open_agent
from memora.api import Memora
from memora.config import load_settings
from nodes.state import Context

KAOHSIUNG = "Please remember that I live in Kaohsiung."
OOLONG = "Please remember that my favourite tea is oolong."
CELLO = "Please remember that I play the cello."
FORGET_KAOHSIUNG = "Please forget that I live in Kaohsiung."
FORGET_OOLONG = "Please forget that my favourite tea is oolong."


def seed_local(data_dir: Path) -> dict[str, str]:
    """alice remembers two facts and asks to forget both (two paused threads); bob remembers
    one. Returns each memory's id by its key word (Kaohsiung, oolong, cello)."""
    memora = Memora(load_settings(data_dir=data_dir))
    try:
        with open_agent(data_dir) as agent:

            def turn(thread_id: str, text: str, user: str = "alice") -> dict[str, Any]:
                config = {"configurable": {"thread_id": thread_id, "user_id": user}}
                context = Context(user_id=user, memora=memora, chat_model="offline")
                result: dict[str, Any] = agent.invoke(
                    {"messages": [HumanMessage(text)]}, config, context=context
                )
                return result

            turn("alice-1", KAOHSIUNG)
            turn("alice-1", OOLONG)
            turn("bob-1", CELLO, "bob")
            assert turn("alice-2", FORGET_KAOHSIUNG)["__interrupt__"]
            assert turn("alice-3", FORGET_OOLONG)["__interrupt__"]
        ids = {unit.content: unit.id for unit in memora.list("alice") + memora.list("bob")}
    finally:
        memora.close()
    assert len(ids) == 3, list(ids)
    return {
        word: next(i for text, i in ids.items() if word in text)
        for word in ("Kaohsiung", "oolong", "cello")
    }
