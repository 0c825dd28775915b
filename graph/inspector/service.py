"""What the inspector's pages read and change, as JSON-ready data: one user's library only.

Every function takes the user the request proved and passes it to the library, which
answers an unknown and another user's memory id alike (``None``), so both become the
same ``NotFound``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from memora.api import Memora
from memora.audit import AuditEntry
from memora.errors import InvalidInput, NotFound
from memora.models import MemoryStatus, MemoryType, MemoryUnit
from memora.validation import validate_memory_id, validate_query

PAGE_LIMIT = 200
"""Most memories one listing returns."""
_HIDDEN_FIELDS = {"user_id", "metadata", "embedding_model"}


def memory_json(unit: MemoryUnit) -> dict[str, Any]:
    """One memory as the pages show it (internal bookkeeping left out)."""
    return unit.model_dump(mode="json", exclude=_HIDDEN_FIELDS)


def _missing(memory_id: str) -> NotFound:
    return NotFound(f"no memory {memory_id} for this user")


def _choice(value: str, kind: type[MemoryStatus] | type[MemoryType], name: str) -> Any:
    if not value:
        return None
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(member.value for member in kind)
        raise InvalidInput(f"{name} must be one of {allowed}") from None


def _bounded(value: str, name: str, default: int, most: int) -> int:
    if not value:
        return default
    if not value.isdigit() or int(value) > most:
        raise InvalidInput(f"{name} must be a whole number 0..{most}")
    return int(value)


def list_memories(memora: Memora, user_id: str, params: dict[str, str]) -> dict[str, Any]:
    """The user's memories, filtered by status and type, or found by a search.

    A search goes through the same hybrid recall as the agent (``Memora.search``), so it
    finds active memories only; it is not written to the audit, since the person looking
    is not the agent using a memory.

    Raises:
        InvalidInput: A filter, the offset, the limit or the query is not a valid one.
    """
    status = _choice(params.get("status", ""), MemoryStatus, "status")
    memory_type = _choice(params.get("type", ""), MemoryType, "type")
    offset = _bounded(params.get("offset", ""), "offset", 0, 10**9)
    limit = max(1, _bounded(params.get("limit", ""), "limit", PAGE_LIMIT, PAGE_LIMIT))
    query = params.get("q", "").strip()
    if query:
        validate_query(query)
        hits = memora.search(user_id, query, audit=False)
        found = [
            {**memory_json(hit.memory), "score": round(hit.score, 3)}
            for hit in hits
            if (memory_type is None or hit.memory.memory_type is memory_type)
            and (status is None or hit.memory.status is status)
        ]
        return {"memories": found, "total": len(found), "search": True}
    if memory_type is not None:
        return _filtered_page(memora, user_id, status, memory_type, offset, limit)
    # Newest first (what a person looks for is usually recent): the store lists oldest
    # first, so the page is read from the end.
    total = memora.count(user_id, status)
    start = max(0, total - offset - limit)
    count = total - offset - start
    units = memora.list(user_id, status, limit=count, offset=start) if count > 0 else []
    units.reverse()
    return {"memories": [memory_json(unit) for unit in units], "total": total, "search": False}


def _filtered_page(
    memora: Memora,
    user_id: str,
    status: MemoryStatus | None,
    memory_type: MemoryType,
    offset: int,
    limit: int,
) -> dict[str, Any]:
    # The store does not filter by type: read every memory of the status, a batch at a time.
    units = [u for u in memora.iter_memories(user_id, status) if u.memory_type is memory_type]
    units.reverse()
    page = units[offset : offset + limit]
    return {"memories": [memory_json(unit) for unit in page], "total": len(units), "search": False}


def _audit_json(entry: AuditEntry, memory_ids: set[str]) -> dict[str, Any]:
    data = dataclasses.asdict(entry)
    data.pop("user_id")
    # The score of this memory's chain in a read, not of everything the read returned.
    scores = entry.scores or []
    data["scores"] = [
        score
        for memory_id, score in zip(entry.memory_ids, scores, strict=False)
        if memory_id in memory_ids
    ]
    return data


def memory_detail(memora: Memora, user_id: str, memory_id: str) -> dict[str, Any]:
    """One memory, its history chain (oldest first) and its audit trail.

    Raises:
        NotFound: The id names no memory of this user (an unknown and a foreign id alike).
    """
    unit = memora.get(user_id, memory_id)
    if unit is None:
        raise _missing(memory_id)
    history = memora.history(user_id, memory_id)
    ids = {link.id for link in history.chain}
    return {
        "memory": memory_json(unit),
        "chain": [memory_json(link) for link in history.chain],
        "audit": [_audit_json(entry, ids) for entry in history.audit],
    }


def forget_preview(memora: Memora, user_id: str, memory_id: str) -> dict[str, Any]:
    """Everything forgetting this memory deletes: the memory and the older versions it replaced.

    Raises:
        NotFound: The id names no memory of this user.
    """
    preview = memora.preview(user_id, memory_id)
    if preview is None:
        raise _missing(memory_id)
    chain = memora.chain(user_id, memory_id)
    return {"memory_id": memory_id, "preview": preview, "deletes": [memory_json(u) for u in chain]}


def words_of_memory(
    memora: Memora, user_id: str, memory_id: str, shown: list[str] | None = None
) -> dict[str, Any]:
    """The ids and texts forgetting this memory deletes and takes out of the conversations,
    read before it is deleted (so a forget cut short can be run again); with ``shown`` (the
    versions a confirmation listed), only those of them.

    Raises:
        NotFound: The id names no memory of this user.
        InvalidInput: ``shown`` leaves out the memory itself.
    """
    validate_memory_id(memory_id)
    if shown is not None and memory_id not in shown:
        raise InvalidInput("versions must list the memory itself; nothing was deleted")
    chain = [u for u in memora.chain(user_id, memory_id) if shown is None or u.id in shown]
    if not chain:
        raise _missing(memory_id)
    return {"ids": [u.id for u in chain], "texts": [u.content for u in chain]}


def forget(memora: Memora, user_id: str, memory_id: str, shown: list[str]) -> dict[str, Any]:
    """Delete the memory and its older versions (of them, those in ``shown``), as ``memora
    memories forget`` does; returns the deleted ids.

    Raises:
        NotFound: The id names no memory of this user (or it is already deleted).
    """
    validate_memory_id(memory_id)
    deleted = memora.forget(user_id, memory_id, actor="inspector", only=shown)
    if not deleted:
        raise _missing(memory_id)
    return {"deleted": deleted}


def set_profile(memora: Memora, user_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Set one profile field from ``{"key": …, "value": …}``; returns the whole profile.

    Raises:
        InvalidInput: The key or value is missing, too long, or holds a secret.
    """
    key, value = body.get("key"), body.get("value")
    if not isinstance(key, str) or not isinstance(value, str):
        raise InvalidInput("a profile field needs a text key and a text value")
    memora.set_profile(user_id, key, value)
    return {"profile": memora.get_profile(user_id)}


def unset_profile(memora: Memora, user_id: str, key: str) -> dict[str, Any]:
    """Remove one profile field; returns the whole profile.

    Raises:
        NotFound: The field is not set.
    """
    if not memora.unset_profile(user_id, key):
        raise NotFound(f"no profile field {key!r}")
    return {"profile": memora.get_profile(user_id)}


def check_erase_confirmation(user_id: str, body: dict[str, Any]) -> None:
    """Erasing needs the user's id typed back, so a stray click erases nothing.

    Raises:
        InvalidInput: The typed confirmation is not the user's id.
    """
    if body.get("confirm") != user_id:
        raise InvalidInput(f"type your user id ({user_id}) to confirm; nothing was erased")


def forget_requests(memora: Memora, user_id: str) -> list[dict[str, Any]]:
    """Deletion requests made outside a conversation (a LangGraph store, MCP), as the
    approvals page shows them beside the paused conversations."""
    return [
        {
            "request_id": request.id,
            "memory_id": request.memory_id,
            "preview": request.preview,
            "also_deletes": [
                unit.content
                for unit in memora.chain(user_id, request.memory_id)
                if unit.id != request.memory_id
            ],
            "reason": request.reason,
            "source": request.source,
            "updated": request.requested_at,
            "allowed_decisions": ["approve", "reject"],
        }
        for request in memora.pending_forgets(user_id)
    ]


def decide_request(memora: Memora, user_id: str, request_id: str, decision: Any) -> dict[str, Any]:
    """Approve or reject one deletion request; approving deletes the memory and its older versions.

    Raises:
        InvalidInput: The decision is not "approve" or "reject".
        NotFound: No pending request of this user has this id.
    """
    if decision not in {"approve", "reject"}:
        raise InvalidInput("decision must be 'approve' or 'reject'; nothing was changed")
    request = next((r for r in memora.pending_forgets(user_id) if r.id == request_id), None)
    if request is None:
        raise NotFound(f"no deletion request {request_id} awaits your answer")
    if decision == "reject":
        memora.reject_forget(user_id, request_id)
        return {"deleted": []}
    return {"deleted": memora.approve_forget(user_id, request_id) or []}


def words_of_request(memora: Memora, user_id: str, request_id: str) -> dict[str, Any]:
    """:func:`words_of_memory` for a pending deletion request (none for an unknown one)."""
    request = next((r for r in memora.pending_forgets(user_id) if r.id == request_id), None)
    if request is None:
        return {"ids": [], "texts": []}
    chain = memora.chain(user_id, request.memory_id)
    return {"ids": [u.id for u in chain], "texts": [request.preview, *(u.content for u in chain)]}
