"""The user's other conversations, reached through the run's own checkpointer.

An approved forget takes the memory's words out of every thread of its user,
not only the one it was asked in. The run's checkpointer holds them all; each
thread's newest checkpoint is rewritten in place (same checkpoint id, so a
thread paused on an approval keeps its pending writes and resumes as before).

Where the checkpointer seals threads (Postgres, ``memora.storage.sealed_threads``), a
blanked thread's older checkpoints stay in the tables' free space under the thread's
key, so each blanked thread then gets a new key and the old one is destroyed.

A LangGraph server hands nodes its checkpointer behind an adapter that offers only the
async API (``alist``, ``aput``, ``aprune``). Nodes run in a worker thread meanwhile, so
the same work is then done by coroutines on the checkpointer's own event loop, as
LangGraph's async savers do for their own sync methods.

A server's runtime may keep copies of a thread beside its checkpoints (``langgraph dev``
keeps each thread's last values and each run's input): the blanking functions return
what they blanked, and a forget in a run hands it to the hooks the server registered
with :func:`after_blanking`, which know that runtime.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from langchain_core.messages import AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, copy_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import INTERRUPT, RESUME
from langgraph.config import get_config
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.types import Interrupt

from agent.forgotten import REMOVED, Forgotten, blanked_fields, blanked_turns
from memora.storage.sealed_threads import SealingSerializer
from nodes.approve_forget import blanked_request

logger = logging.getLogger("memora.nodes")
T = TypeVar("T")

Blanked = dict[str, list[str]]
"""The threads a forget blanked: thread id -> what the user typed in the blanked turns
(a runtime that records each run's input holds those words there too)."""
AfterBlanking = Callable[[Blanked, Forgotten], None]
_hooks: list[AfterBlanking] = []


def after_blanking(hook: AfterBlanking) -> None:
    """Have ``hook`` called after a forget in a run blanked threads (nodes cannot import
    the server code that knows the runtime's own copies; ``graph.app`` registers it)."""
    if hook not in _hooks:
        _hooks.append(hook)


def report_blanked(blanked: Blanked, forgotten: Forgotten) -> None:
    """Hand the threads a forget in this run blanked to the registered hooks."""
    if not blanked:
        return
    for hook in _hooks:
        hook(blanked, forgotten)


def typed_in(messages: Iterable[AnyMessage], blanked: Iterable[AnyMessage]) -> list[str]:
    """What the user typed in the turns ``blanked`` replaces (read before blanking)."""
    ids = {message.id for message in blanked}
    return [
        m.content
        for m in messages
        if isinstance(m, HumanMessage) and m.id in ids and isinstance(m.content, str)
    ]


def _saver() -> BaseCheckpointSaver[Any] | None:
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # called outside a run
        return None
    saver = configurable.get(CONFIG_KEY_CHECKPOINTER)
    return saver if isinstance(saver, BaseCheckpointSaver) else None


def _newest_per_thread(checkpoints: Iterable[CheckpointTuple]) -> list[CheckpointTuple]:
    newest: dict[str, CheckpointTuple] = {}
    for checkpoint in checkpoints:
        configurable = checkpoint.config["configurable"]
        if configurable.get("checkpoint_ns", ""):
            continue
        thread_id = str(configurable["thread_id"])
        known = newest.get(thread_id)
        if known is None or checkpoint.checkpoint["id"] > known.checkpoint["id"]:
            newest[thread_id] = checkpoint
    return list(newest.values())


def blank_in_other_threads(
    user_id: str, current_thread: str | None, forgotten: Forgotten
) -> Blanked:
    """Blank every turn of ``user_id``'s other threads that involved ``forgotten``.

    Returns:
        The threads changed (none when the run has no checkpointer).
    """
    saver = _saver()
    if saver is None:
        return {}
    if _async_only(saver):
        return _on_saver_loop(
            saver, lambda: ablank_in_threads(saver, user_id, forgotten, current_thread), {}
        )
    return blank_in_threads(saver, user_id, forgotten, current_thread)


def blank_outside_a_run(
    saver: BaseCheckpointSaver[Any], user_id: str, forgotten: Forgotten
) -> Blanked:
    """:func:`blank_in_threads` for a deletion made beside a server (its inspector, from a
    worker thread): an async-only checkpointer is driven on its own event loop."""
    if _async_only(saver):
        return _on_saver_loop(saver, lambda: ablank_in_threads(saver, user_id, forgotten), {})
    return blank_in_threads(saver, user_id, forgotten)


def _async_only(saver: BaseCheckpointSaver[Any]) -> bool:
    """Whether the saver offers only the async API (as a server's adapter does: its sync
    methods are the base class's, which raise NotImplementedError)."""
    return type(saver).list is BaseCheckpointSaver.list


def _on_saver_loop(
    saver: BaseCheckpointSaver[Any], work: Callable[[], Awaitable[T]], otherwise: T
) -> T:
    """Run ``work`` on the event loop of an async-only ``saver`` and wait for it.

    A server's custom checkpointer (behind its async-only adapter) is bound to the loop it
    was opened on (``saver.loop``, as LangGraph's async savers name it); a node runs in a
    worker thread meanwhile, so it can wait for that loop. Without such a loop, or on it,
    the threads stay as they are, with a warning.
    """
    loop = getattr(saver, "loop", None)
    if isinstance(loop, asyncio.AbstractEventLoop) and loop.is_running() and not _on(loop):
        return asyncio.run_coroutine_threadsafe(_coroutine(work), loop).result()
    logger.warning(
        "the checkpointer offers no sync access and no event loop to wait for: the other"
        " threads, and older checkpoints, were left as they are"
    )
    return otherwise


def _on(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether this thread runs ``loop`` (waiting for it here would never end)."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


async def _coroutine(work: Callable[[], Awaitable[T]]) -> T:
    return await work()


def blank_in_threads(
    saver: BaseCheckpointSaver[Any],
    user_id: str,
    forgotten: Forgotten,
    skip_thread: str | None = None,
) -> Blanked:
    """Blank every turn of ``user_id``'s threads in ``saver`` that involved ``forgotten``
    (a deletion made outside a run: the CLI, the inspector, a store's approval).

    Returns:
        The threads changed.
    """
    changed: Blanked = {}
    for newest in _newest_per_thread(saver.list(None)):
        blanked = _blanked(newest, user_id, forgotten, skip_thread)
        if blanked is not None:
            thread_id = str(newest.config["configurable"]["thread_id"])
            saver.put(*_rewritten(saver, newest, blanked.values))
            for task_id, channel, written in blanked.questions:
                saver.put_writes(newest.config, [(channel, written)], task_id)
            _keep_latest(saver, thread_id)
            changed[thread_id] = blanked.typed
    _rotate_keys(saver, list(changed))
    return changed


async def ablank_in_threads(
    saver: BaseCheckpointSaver[Any],
    user_id: str,
    forgotten: Forgotten,
    skip_thread: str | None = None,
) -> Blanked:
    """:func:`blank_in_threads` through the saver's async API (a server's checkpointer).

    Returns:
        The threads changed.
    """
    changed: Blanked = {}
    for newest in _newest_per_thread([c async for c in saver.alist(None)]):
        blanked = _blanked(newest, user_id, forgotten, skip_thread)
        if blanked is not None:
            thread_id = str(newest.config["configurable"]["thread_id"])
            await saver.aput(*_rewritten(saver, newest, blanked.values))
            for task_id, channel, written in blanked.questions:
                await saver.aput_writes(newest.config, [(channel, written)], task_id)
            await _akeep_latest(saver, thread_id)
            changed[thread_id] = blanked.typed
    await _arotate_keys(saver, list(changed))
    return changed


@dataclass(frozen=True)
class _BlankedThread:
    """What a forget rewrites in one thread's newest checkpoint."""

    values: dict[str, Any]
    """The channel values to save instead of the checkpoint's."""
    questions: list[tuple[str, str, Any]]
    """Each pending write of a paused question that showed the memory, blanked: (task id,
    channel, value)."""
    typed: list[str]
    """What the user typed in the blanked turns."""


def _blanked(
    newest: CheckpointTuple, user_id: str, forgotten: Forgotten, skip_thread: str | None
) -> _BlankedThread | None:
    """What to save in a thread of ``user_id`` instead of its newest checkpoint; None when
    the thread is another's, skipped, or has none of it."""
    values = newest.checkpoint.get("channel_values") or {}
    thread_id = str(newest.config["configurable"]["thread_id"])
    if thread_id == skip_thread or values.get("owner_user_id") != user_id:
        return None
    messages: list[AnyMessage] = list(values.get("messages") or [])
    blanked = {m.id: m for m in blanked_turns(messages, forgotten)}
    fields = blanked_fields(values, forgotten)
    questions = _blanked_questions(newest, forgotten)
    if not (blanked or fields or questions):
        return None
    fields["messages"] = [blanked.get(m.id, m) for m in messages]
    return _BlankedThread(fields, questions, typed_in(messages, blanked.values()))


def _blanked_questions(newest: CheckpointTuple, forgotten: Forgotten) -> list[tuple[str, str, Any]]:
    """The thread's pending writes that show the memory, with its words taken out: a paused
    approval question (the interrupt a resumed run reads back), and an answer typed to it
    that quoted the memory (it was not an answer, and stays none)."""
    found = []
    for task_id, channel, written in newest.pending_writes or []:
        if channel == INTERRUPT and isinstance(written, list | tuple):
            blanked: Any = [
                replace(item, value=blanked_request(item.value, forgotten))
                if isinstance(item, Interrupt) and isinstance(item.value, dict)
                else item
                for item in written
            ]
            changed = blanked != list(written)
        elif channel == RESUME:
            blanked = _without_quotes(written, forgotten)
            changed = blanked != written
        else:
            continue
        if changed:
            found.append((task_id, channel, blanked))
    return found


def _without_quotes(value: Any, forgotten: Forgotten) -> Any:
    """``value`` with every string in it that quotes the memory blanked."""
    if isinstance(value, str):
        return REMOVED if forgotten.in_text(value) else value
    if isinstance(value, list | tuple):
        return type(value)(_without_quotes(item, forgotten) for item in value)
    if isinstance(value, dict):
        return {key: _without_quotes(item, forgotten) for key, item in value.items()}
    return value


def keep_only_latest(thread_id: str | None) -> None:
    """Drop every checkpoint of the thread but its newest, where the run's checkpointer
    keeps a history (a server's does), and give a sealed thread a new key: the older
    checkpoints, or their bytes in free space, still hold what was blanked."""
    saver = _saver()
    if saver is None or thread_id is None:
        return
    if _async_only(saver):
        _on_saver_loop(saver, lambda: _akeep_latest_and_rotate(saver, thread_id), None)
        return
    _keep_latest(saver, thread_id)
    _rotate_keys(saver, [thread_id])


async def _akeep_latest_and_rotate(saver: BaseCheckpointSaver[Any], thread_id: str) -> None:
    await _akeep_latest(saver, thread_id)
    await _arotate_keys(saver, [thread_id])


def _rotate_keys(saver: BaseCheckpointSaver[Any], thread_ids: list[str]) -> None:
    """Reseal these blanked threads under new keys, where the saver seals them."""
    serde = getattr(saver, "serde", None)
    if thread_ids and isinstance(serde, SealingSerializer) and not serde.rotate(thread_ids):
        _say_old_keys_stay()


async def _arotate_keys(saver: BaseCheckpointSaver[Any], thread_ids: list[str]) -> None:
    """:func:`_rotate_keys` from the saver's event loop."""
    serde = getattr(saver, "serde", None)
    if thread_ids and isinstance(serde, SealingSerializer) and not await serde.arotate(thread_ids):
        _say_old_keys_stay()


def _say_old_keys_stay() -> None:
    logger.warning(
        "a reader held the thread key table: the blanked threads' old keys stay in its"
        " file until the next rewrite"
    )


def _keep_latest(saver: BaseCheckpointSaver[Any], thread_id: str) -> None:
    if isinstance(saver, InMemorySaver):
        _keep_latest_in_memory(saver, thread_id)
        return
    try:  # the Postgres savers prune; a local SQLite one keeps no history to prune
        saver.prune([thread_id], strategy="keep_latest")
    except NotImplementedError:
        logger.debug("the checkpointer has no history to prune")


async def _akeep_latest(saver: BaseCheckpointSaver[Any], thread_id: str) -> None:
    """:func:`_keep_latest` through the async API."""
    try:
        await saver.aprune([thread_id], strategy="keep_latest")
    except NotImplementedError:
        logger.debug("the checkpointer has no history to prune")


def _keep_latest_in_memory(saver: InMemorySaver, thread_id: str) -> None:
    """:meth:`prune` for the in-memory saver (which has none): its dicts, trimmed.

    A background save may be writing the same thread: every dict is read through a snapshot,
    and of the channels the newest checkpoint has, only older blob versions are dropped, so a
    checkpoint being written keeps its own.
    """
    for namespace, checkpoints in list(saver.storage.get(thread_id, {}).items()):
        ids = list(checkpoints)
        if not ids:
            continue
        newest = max(ids)
        for checkpoint_id in [c for c in ids if c != newest]:
            checkpoints.pop(checkpoint_id, None)
            saver.writes.pop((thread_id, namespace, checkpoint_id), None)
        versions = saver.serde.loads_typed(checkpoints[newest][0]).get("channel_versions", {})
        stale = [
            key
            for key in list(saver.blobs)
            if key[0] == thread_id
            and key[1] == namespace
            and (key[2] not in versions or _older(key[3], versions[key[2]]))
        ]
        for key in stale:
            saver.blobs.pop(key, None)


def _older(version: object, than: object) -> bool:
    """Whether one in-memory channel version precedes another (they count up: "000…5.0.37")."""
    return int(str(version).split(".")[0]) < int(str(than).split(".")[0])


def _rewritten(
    saver: BaseCheckpointSaver[Any], newest: CheckpointTuple, values: dict[str, Any]
) -> tuple[RunnableConfig, Any, Any, Any]:
    """What to ``put`` to save ``newest`` again under its own id with these channel values."""
    checkpoint = copy_checkpoint(newest.checkpoint)
    versions = {
        name: saver.get_next_version(checkpoint["channel_versions"].get(name), None)
        for name in values
    }
    checkpoint["channel_values"] = {**checkpoint["channel_values"], **values}
    checkpoint["channel_versions"] = {**checkpoint["channel_versions"], **versions}
    parent: RunnableConfig = newest.parent_config or {
        "configurable": {
            key: value
            for key, value in newest.config["configurable"].items()
            if key != "checkpoint_id"
        }
    }
    return parent, checkpoint, newest.metadata, versions
