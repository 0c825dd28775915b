"""A forget reaches the threads of a checkpointer that offers only the async API (as a
LangGraph server's adapter does), by waiting for coroutines on the checkpointer's loop."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from agent.forgotten import REMOVED, Forgotten
from nodes.other_threads import blank_outside_a_run

FACT = "I play the cello in an orchestra"


class AsyncOnly(BaseCheckpointSaver[str]):
    """An in-memory saver behind the async API only, bound to ``loop`` as LangGraph's async
    savers are; records the thread each call ran on."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self.inner = InMemorySaver()
        super().__init__(serde=self.inner.serde)
        if loop is not None:
            self.loop = loop
        self.ran_on: set[int] = set()
        self.pruned: list[str] = []

    async def alist(self, config: Any, **kwargs: Any) -> AsyncIterator[CheckpointTuple]:
        self.ran_on.add(threading.get_ident())
        for checkpoint in self.inner.list(config, **kwargs):
            yield checkpoint

    async def aget_tuple(self, config: Any) -> CheckpointTuple | None:
        return self.inner.get_tuple(config)

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self.ran_on.add(threading.get_ident())
        return self.inner.put(config, checkpoint, metadata, new_versions)

    def get_next_version(self, current: Any, channel: None) -> str:
        return self.inner.get_next_version(current, channel)

    async def aprune(self, thread_ids: Any, *, strategy: str = "keep_latest") -> None:
        self.pruned += list(thread_ids)


def _save(saver: AsyncOnly, thread_id: str, user_id: str) -> None:
    checkpoint = empty_checkpoint()
    messages = [HumanMessage(f"Please remember: {FACT}.", id=f"{thread_id}-h"), AIMessage("Noted.")]
    checkpoint["channel_values"] = {"owner_user_id": user_id, "messages": messages}
    versions = {
        name: saver.inner.get_next_version(None, None) for name in ("owner_user_id", "messages")
    }
    checkpoint["channel_versions"] = versions
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    saver.inner.put(config, checkpoint, {}, versions)  # type: ignore[arg-type]


def _said(saver: AsyncOnly, thread_id: str) -> str:
    newest = saver.inner.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    assert newest is not None
    return " ".join(str(m.content) for m in newest.checkpoint["channel_values"]["messages"])


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    running = asyncio.new_event_loop()
    thread = threading.Thread(target=running.run_forever, daemon=True)
    thread.start()
    yield running
    running.call_soon_threadsafe(running.stop)
    thread.join(timeout=5)
    running.close()


def test_the_threads_are_blanked_by_coroutines_on_the_savers_loop(
    loop: asyncio.AbstractEventLoop,
) -> None:
    saver = AsyncOnly(loop)
    _save(saver, "alices", "alice")
    _save(saver, "bobs", "bob")
    forgotten = Forgotten.of(["m1"], [FACT])

    assert list(blank_outside_a_run(saver, "alice", forgotten)) == ["alices"]

    assert FACT not in _said(saver, "alices") and REMOVED in _said(saver, "alices")
    assert FACT in _said(saver, "bobs")
    assert saver.pruned == ["alices"]
    assert saver.ran_on and threading.get_ident() not in saver.ran_on


def test_without_a_loop_to_wait_for_the_threads_stay_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    saver = AsyncOnly(None)
    _save(saver, "alices", "alice")
    with caplog.at_level(logging.WARNING, logger="memora.nodes"):
        assert blank_outside_a_run(saver, "alice", Forgotten.of(["m1"], [FACT])) == {}
    assert "no event loop to wait for" in caplog.text
    assert FACT in _said(saver, "alices")
