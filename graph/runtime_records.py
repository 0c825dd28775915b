"""The in-memory runtime's own copies of a user's threads, brought in line with a forget.

Under `langgraph dev` (package ``langgraph_runtime_inmem``, with its own checkpointer or
``langgraph.postgres.json``'s) the runtime keeps, beside the checkpoints, a record of each
thread holding a copy of its last values and interrupts (what ``threads.search`` and
``threads.get`` return) and a record of each run holding its input, and pickles them all
to ``.langgraph_api/.langgraph_ops.pckl`` every 10 s. A forget rewrites checkpoints
(``nodes.other_threads``); the runtime copies a thread's values again only when a run on
it ends or its state is updated.

No public call refreshes them without changing the thread: the SDK's ``update_state`` (in
process, through ``/noauth``, it skips the server's auth) saves a new checkpoint, a step in
the thread's history that also moves a paused thread off the checkpoint its approval is
pending on, and nothing rewrites a recorded run's input. So this module does what the
runtime itself does after ``update_state`` (``Threads.State.get``, then
``Threads.set_status``) and blanks the typed words in the runs' input, through the
runtime's ops on the server's event loop. It is the one module that reaches into them;
under another runtime the records keep the old values until each thread's next run, and
the server's log says so.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from types import ModuleType
from typing import Any
from uuid import UUID

from agent.forgotten import REMOVED, Forgotten
from nodes.other_threads import Blanked

logger = logging.getLogger("memora.graph")

INMEM_OPS = "langgraph_runtime_inmem.ops"


def _inmem_ops() -> ModuleType | None:
    """The in-memory runtime's ops when this process serves with it, else None (with a
    warning when another runtime serves: its records are out of reach)."""
    ops = sys.modules.get("langgraph_runtime.ops")  # set by the server for its runtime
    if ops is None:
        return None  # not a LangGraph server: nothing keeps copies
    if ops.__name__ != INMEM_OPS or not hasattr(ops.Threads, "set_status"):
        logger.warning(
            "the server's runtime (%s) is not the in-memory one: its records of the blanked"
            " threads keep their old values until each thread's next run",
            ops.__name__,
        )
        return None
    return ops


async def refresh(blanked: Blanked, forgotten: Forgotten) -> None:
    """Copy each blanked thread's rewritten checkpoint into the runtime's record of it and
    blank the user's words in the input its runs recorded."""
    ops = _inmem_ops()
    if ops is None or not blanked:
        return
    from langgraph_runtime_inmem.database import connect

    async with connect() as conn:
        for thread_id, typed in blanked.items():
            try:
                record_id = UUID(thread_id)
            except ValueError:  # the runtime names every thread it keeps by a UUID
                continue
            try:
                _blank_runs(conn, record_id, set(typed), forgotten)
                await _refresh_thread(ops, conn, record_id)
            except Exception:
                # The forget itself is done and must not fail: this record waits for the
                # thread's next run, as under another runtime.
                logger.warning(
                    "the runtime's record of a blanked thread was not refreshed", exc_info=True
                )


def refresh_from_a_run(blanked: Blanked, forgotten: Forgotten) -> None:
    """:func:`refresh` for a node (``nodes.other_threads.after_blanking``): nodes run in a
    worker thread while the server's event loop, which owns the records, waits for them."""
    if _inmem_ops() is None or not blanked:
        return
    from langgraph_api.asyncio import get_event_loop

    loop = get_event_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:  # an async node: waiting here would never end
        logger.warning("the runtime's thread records were left as they are (called on its loop)")
        return
    asyncio.run_coroutine_threadsafe(refresh(blanked, forgotten), loop).result()


async def _refresh_thread(ops: ModuleType, conn: Any, thread_id: UUID) -> None:
    """The runtime's own refresh after a state update, for a thread no run is writing to
    (a run under way refreshes the record when it ends)."""
    thread = next((t for t in conn.store["threads"] if t["thread_id"] == thread_id), None)
    active = any(
        run["thread_id"] == thread_id and run["status"] in ("pending", "running")
        for run in conn.store["runs"]
    )
    if thread is None or active:
        return
    config = {"configurable": {"thread_id": str(thread_id)}}
    state = await ops.Threads.State.get(conn, config, subgraphs=False, ctx=None)
    status, error = thread.get("status"), thread.get("error")
    checkpoint = {
        "next": list(state.next),
        "values": state.values,
        "tasks": [{"id": t.id, "interrupts": list(t.interrupts)} for t in state.tasks],
    }
    await ops.Threads.set_status(conn, thread_id, checkpoint, None)
    if status == "error":  # the last run still failed; only its values were stale
        thread.update(status=status, error=error)


def _blank_runs(conn: Any, thread_id: UUID, typed: set[str], forgotten: Forgotten) -> None:
    """Blank, in the input and resume value each run of the thread recorded, every text the
    user typed in a blanked turn or that names the forgotten memory."""
    for run in conn.store["runs"]:
        kwargs = run.get("kwargs")
        if run["thread_id"] != thread_id or not isinstance(kwargs, dict):
            continue
        for name in ("input", "command"):
            if kwargs.get(name) is not None:
                kwargs[name] = _blank_texts(kwargs[name], typed, forgotten)


def _blank_texts(value: Any, typed: set[str], forgotten: Forgotten) -> Any:
    if isinstance(value, str):
        return REMOVED if value in typed or forgotten.in_text(value) else value
    if isinstance(value, dict):
        return {key: _blank_texts(item, typed, forgotten) for key, item in value.items()}
    if isinstance(value, list):
        return [_blank_texts(item, typed, forgotten) for item in value]
    return value
