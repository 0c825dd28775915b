"""A served Postgres checkpointer never waits for a thread's key on its event loop.

The first read of a thread in a process needs its key from ``thread_keys``, on the keys' own
connection; a key table rewrite holds that connection for seconds. The server's event loop
serves every request, so the lookup runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from graph.server_checkpointer import postgres_checkpointer
from memora.config import get_settings

HELD_S = 1.5


async def _save_one_thread() -> dict:
    async with postgres_checkpointer() as saver:
        config = {"configurable": {"thread_id": "t-first-read", "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"summary": "the user keeps bees"}
        checkpoint["channel_versions"] = {"summary": 1}
        return await saver.aput(config, checkpoint, {}, {"summary": 1})


async def _read(saver: object, every_thread: bool) -> object:
    if every_thread:  # a forget's blanking lists every thread's checkpoints
        return [item async for item in saver.alist(None)]  # type: ignore[attr-defined]
    config = {"configurable": {"thread_id": "t-first-read", "checkpoint_ns": ""}}
    return await saver.aget_tuple(config)  # type: ignore[attr-defined]


async def _first_read_while_the_keys_are_busy(every_thread: bool) -> tuple[float, object]:
    async with postgres_checkpointer() as saver:  # a new process's saver: no key cached
        keys = saver.serde.keys
        held = threading.Event()

        def hold_the_keys() -> None:  # what a key table rewrite does to the connection
            with keys._lock:
                held.set()
                time.sleep(HELD_S)

        holder = threading.Thread(target=hold_the_keys)
        holder.start()
        held.wait()
        gaps: list[float] = []

        async def tick() -> None:
            last = time.monotonic()
            for _ in range(int(HELD_S / 0.05) + 10):
                await asyncio.sleep(0.05)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        ticker = asyncio.create_task(tick())
        found = await _read(saver, every_thread)
        await ticker
        holder.join()
        return max(gaps), found


@pytest.mark.usefixtures("services")
@pytest.mark.parametrize("every_thread", [False, True], ids=["one thread", "every thread"])
def test_a_first_read_during_a_key_rewrite_leaves_the_event_loop_free(
    database_url: str, monkeypatch: pytest.MonkeyPatch, every_thread: bool
) -> None:
    monkeypatch.setenv("MEMORA_DATABASE_URL", database_url)
    get_settings.cache_clear()
    try:
        asyncio.run(_save_one_thread())
        longest_gap, found = asyncio.run(_first_read_while_the_keys_are_busy(every_thread))
    finally:
        get_settings.cache_clear()
    [read] = found if isinstance(found, list) else [found]
    assert read is not None
    assert read.checkpoint["channel_values"]["summary"] == "the user keeps bees"
    assert longest_gap < 0.5, f"the event loop stalled {longest_gap:.2f} s on a key lookup"
