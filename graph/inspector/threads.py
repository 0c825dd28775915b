"""The user's conversation threads as the inspector needs them: paused deletions, answered
the way the chat answers them, and every thread for export and erasure.

``ServerThreads`` talks to the LangGraph server it runs inside (``langgraph_sdk.get_client()``
with no url is an in-process client). That client skips the server's authentication, so
ownership is checked here: with authentication on, a thread is the user's when its
``owner`` metadata (stamped by ``graph.auth``) names them; without, when its state's owner
does. ``LocalThreads`` drives the local checkpointed graph, as ``memora chat`` does.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any, Protocol

import httpx
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError

from agent.forgotten import Forgotten
from graph.builder import durability_for
from graph.checkpointed import delete_threads, forget_in_threads, thread_records
from graph.runtime_records import refresh
from graph.thread_owners import PAGE, next_offset, owned, search_filter, thread_owner
from memora.api import Memora
from memora.errors import InvalidInput, NotFound, Unavailable
from memora.validation import validate_memory_id, validate_thread_id
from nodes.other_threads import blank_outside_a_run
from nodes.state import Context

ASSISTANT_ID = "memora"


def resume_value(body: Mapping[str, Any]) -> dict[str, Any]:
    """The standard HITL resume (``{"decisions": [...]}``) for an inspector button press.

    Raises:
        InvalidInput: The decision is not "approve" or "reject", or the message is not text.
    """
    decision, message = body.get("decision"), body.get("message")
    if decision == "approve":
        return {"decisions": [{"type": "approve"}]}
    if decision != "reject":
        raise InvalidInput("decision must be 'approve' or 'reject'; nothing was changed")
    if message is not None and not isinstance(message, str):
        raise InvalidInput("a rejection's message must be text; nothing was changed")
    return {"decisions": [{"type": "reject", **({"message": message} if message else {})}]}


def approval_request(interrupts: list[Any]) -> dict[str, Any] | None:
    """The first pending deletion request among a thread's interrupt values."""
    for value in interrupts:
        if isinstance(value, dict) and isinstance(value.get("memory_id"), str):
            return value
    return None


def pending_json(thread_id: str, updated: str, request: dict[str, Any]) -> dict[str, Any]:
    """One pending deletion as the page shows it."""
    config = (request.get("review_configs") or [{}])[0]
    action = (request.get("action_requests") or [{}])[0]
    return {
        "thread_id": thread_id,
        "updated": updated,
        "memory_id": request["memory_id"],
        "preview": request.get("preview", ""),
        "also_deletes": [
            str(d.get("content", ""))
            for d in request.get("deletes") or []
            if isinstance(d, dict) and d.get("memory_id") != request["memory_id"]
        ],
        "reason": request.get("reason", ""),
        "description": action.get("description", ""),
        "allowed_decisions": config.get("allowed_decisions", ["approve", "reject"]),
    }


def _not_pending(memory_id: str) -> NotFound:
    return NotFound(f"no deletion of memory {memory_id} awaits your answer in this thread")


def _message_json(message: Any) -> dict[str, Any]:
    if isinstance(message, dict):
        return {"type": message.get("type"), "content": message.get("content")}
    return {"type": message.type, "content": message.content}


class Threads(Protocol):
    """Where a user's threads live: the server's runtime, or the local checkpointer."""

    async def pending(self, user_id: str) -> list[dict[str, Any]]:
        """Every deletion awaiting the user's answer, across all their threads."""
        ...

    async def decide(
        self, user_id: str, thread_id: str, memory_id: str, resume: dict[str, Any]
    ) -> dict[str, Any]:
        """Resume the thread paused on ``memory_id`` with ``resume`` and return the turn's
        reply; NotFound when no such deletion awaits this user."""
        ...

    async def export(self, user_id: str) -> list[dict[str, Any]]:
        """Every thread of the user with its messages (what ``memora users export`` writes)."""
        ...

    async def erase(self, user_id: str) -> int:
        """Delete every thread of the user; returns how many."""
        ...

    async def forget_words(self, user_id: str, ids: list[str], texts: list[str]) -> int:
        """Blank the turns of the user's threads that involved these deleted memories;
        returns how many threads changed."""
        ...


class ServerThreads:
    """The threads of the LangGraph server this app runs inside."""

    def __init__(self, auth_enabled: bool) -> None:
        self._auth = auth_enabled
        self._client: Any = None

    def _sdk(self) -> Any:
        # Made on first use: the in-process transport exists only once the server runs.
        if self._client is None:
            self._client = get_client(timeout=(10.0, 300.0, 300.0, 10.0))
        return self._client

    def _owns(self, thread: dict[str, Any], user_id: str) -> bool:
        return thread_owner(thread, authenticated=self._auth) == user_id

    async def _threads(self, user_id: str, status: str | None = None) -> list[dict[str, Any]]:
        metadata = search_filter(user_id, authenticated=self._auth)
        found: list[dict[str, Any]] = []
        offset: int | None = 0
        while offset is not None:
            page = await self._sdk().threads.search(
                metadata=metadata, status=status, limit=PAGE, offset=offset
            )
            found += page
            offset = next_offset(len(found), page)
        return owned(found, user_id, authenticated=self._auth)

    async def _request(self, thread_id: str) -> dict[str, Any] | None:
        state = await self._sdk().threads.get_state(thread_id)
        tasks = state.get("tasks") or []
        return approval_request([i.get("value") for t in tasks for i in t.get("interrupts") or []])

    async def pending(self, user_id: str) -> list[dict[str, Any]]:
        """See ``Threads.pending``."""
        found = []
        for thread in await self._threads(user_id, status="interrupted"):
            request = await self._request(thread["thread_id"])
            if request is not None:
                updated = str(thread.get("updated_at") or "")
                found.append(pending_json(thread["thread_id"], updated, request))
        return found

    async def decide(
        self, user_id: str, thread_id: str, memory_id: str, resume: dict[str, Any]
    ) -> dict[str, Any]:
        """See ``Threads.decide``."""
        validate_thread_id(thread_id)
        validate_memory_id(memory_id)
        try:
            thread = await self._sdk().threads.get(thread_id)
        except NotFoundError:
            raise _not_pending(memory_id) from None
        request = await self._request(thread_id) if self._owns(thread, user_id) else None
        if request is None or request["memory_id"] != memory_id:
            raise _not_pending(memory_id)
        try:
            result = await self._sdk().runs.wait(
                thread_id, ASSISTANT_ID, command={"resume": resume}, context={"user_id": user_id}
            )
        except httpx.HTTPError as error:
            raise Unavailable(f"the thread could not be resumed: {error}") from None
        values = result if isinstance(result, dict) else {}
        return {"thread_id": thread_id, "reply": values.get("reply") or ""}

    async def export(self, user_id: str) -> list[dict[str, Any]]:
        """See ``Threads.export``: each thread's messages from its checkpoint (the state a
        run goes on from)."""
        exported = []
        for thread in await self._threads(user_id):
            state = await self._sdk().threads.get_state(thread["thread_id"])
            values = state.get("values") if isinstance(state.get("values"), dict) else {}
            exported.append(
                {
                    "thread_id": thread["thread_id"],
                    "updated": str(thread.get("updated_at") or ""),
                    "messages": [_message_json(m) for m in values.get("messages", [])],
                }
            )
        return exported

    async def erase(self, user_id: str) -> int:
        """See ``Threads.erase``."""
        threads = await self._threads(user_id)
        for thread in threads:
            await self._sdk().threads.delete(thread["thread_id"])
        return len(threads)

    async def forget_words(self, user_id: str, ids: list[str], texts: list[str]) -> int:
        """See ``Threads.forget_words``: the turns are blanked in the runtime's own
        checkpointer, as an approved deletion in a chat turn blanks them, and then in the
        runtime's records of those threads and their runs."""
        saver = await _runtime_checkpointer()
        if saver is None:
            return 0
        forgotten = Forgotten.of(ids, texts)
        blanked = await asyncio.to_thread(blank_outside_a_run, saver, user_id, forgotten)
        await refresh(blanked, forgotten)
        return len(blanked)


async def _runtime_checkpointer() -> BaseCheckpointSaver[Any] | None:
    """The checkpointer the server's runs use (this app runs in the server's process)."""
    try:
        from langgraph_api._checkpointer import get_checkpointer
    except ImportError:  # not inside a LangGraph server
        return None
    saver = await get_checkpointer()
    return saver if isinstance(saver, BaseCheckpointSaver) else None


class LocalThreads:
    """The threads of the local checkpointed graph (``graph.checkpointed.open_agent``)."""

    def __init__(self, agent: Any, memora: Memora) -> None:
        self._agent = agent
        self._memora = memora
        # One graph, one SQLite connection: requests take turns.
        self._lock = threading.Lock()

    def _config(self, thread_id: str, user_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread_id, "user_id": user_id}}

    def _request(self, thread_id: str, user_id: str) -> dict[str, Any] | None:
        snapshot = self._agent.get_state(self._config(thread_id, user_id))
        return approval_request([i.value for t in snapshot.tasks for i in t.interrupts])

    def _records(self, user_id: str) -> list[Any]:
        return [r for r in thread_records(self._agent) if r.user_id == user_id]

    def _pending(self, user_id: str) -> list[dict[str, Any]]:
        with self._lock:
            found = []
            for record in self._records(user_id):
                request = self._request(record.thread_id, user_id)
                if request is not None:
                    found.append(pending_json(record.thread_id, record.updated, request))
            return found

    def _decide(
        self, user_id: str, thread_id: str, memory_id: str, resume: dict[str, Any]
    ) -> dict[str, Any]:
        validate_thread_id(thread_id)
        validate_memory_id(memory_id)
        with self._lock:
            owned = {record.thread_id for record in self._records(user_id)}
            request = self._request(thread_id, user_id) if thread_id in owned else None
            if request is None or request["memory_id"] != memory_id:
                raise _not_pending(memory_id)
            command: Command[Any] = Command(resume=resume)
            values = self._agent.invoke(
                command,
                self._config(thread_id, user_id),
                context=Context(user_id=user_id, memora=self._memora),
                durability=durability_for(command),
            )
        return {"thread_id": thread_id, "reply": values.get("reply") or ""}

    def _export(self, user_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [
                {
                    "thread_id": record.thread_id,
                    "updated": record.updated,
                    "messages": [_message_json(message) for message in record.messages],
                }
                for record in self._records(user_id)
            ]

    def _erase(self, user_id: str) -> int:
        with self._lock:
            thread_ids = [record.thread_id for record in self._records(user_id)]
            delete_threads(self._agent, thread_ids)
            return len(thread_ids)

    async def pending(self, user_id: str) -> list[dict[str, Any]]:
        """See ``Threads.pending``."""
        return await asyncio.to_thread(self._pending, user_id)

    async def decide(
        self, user_id: str, thread_id: str, memory_id: str, resume: dict[str, Any]
    ) -> dict[str, Any]:
        """See ``Threads.decide``."""
        return await asyncio.to_thread(self._decide, user_id, thread_id, memory_id, resume)

    async def export(self, user_id: str) -> list[dict[str, Any]]:
        """See ``Threads.export``."""
        return await asyncio.to_thread(self._export, user_id)

    async def erase(self, user_id: str) -> int:
        """See ``Threads.erase``."""
        return await asyncio.to_thread(self._erase, user_id)

    def _forget_words(self, user_id: str, ids: list[str], texts: list[str]) -> int:
        with self._lock:
            return forget_in_threads(self._agent, user_id, ids, texts)

    async def forget_words(self, user_id: str, ids: list[str], texts: list[str]) -> int:
        """See ``Threads.forget_words``."""
        return await asyncio.to_thread(self._forget_words, user_id, ids, texts)
