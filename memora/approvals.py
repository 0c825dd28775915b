"""Deletion requests on :class:`memora.api.Memora`: request, list, approve, reject.

Kept out of ``api.py`` so that module stays one screenful per concern; ``Memora``
inherits these methods. See :mod:`memora.forget_requests` for the table.
"""

from __future__ import annotations

import builtins
import dataclasses
from typing import TYPE_CHECKING

from memora.audit import AuditLog
from memora.forget_requests import ForgetRequest, ForgetRequests
from memora.judgement import Judgement
from memora.limits import MAX_REASON_CHARS
from memora.redaction import redact
from memora.storage.store import LongTermMemoryStore
from memora.storage.user_keys import rotate_user_key
from memora.validation import (
    check_identifier,
    check_text,
    validate_memory_id,
    validate_user_id,
)

MAX_REQUEST_ID_CHARS = 64


class ForgetApprovals:
    """The approval step between asking to forget a memory and forgetting it."""

    store: LongTermMemoryStore
    audit: AuditLog
    forget_requests: ForgetRequests
    judge: Judgement | None

    if TYPE_CHECKING:

        def forget(
            self, user_id: str, memory_id: str, *, actor: str = "user"
        ) -> builtins.list[str]: ...

        def finish_scrub(self) -> bool: ...

    def new_user_key(self, user_id: str) -> None:
        """On Postgres, give the user a new key for their profile, audit and requests and
        reseal them under it (``memora.storage.user_keys``): what their redacted queries and
        dropped requests left in free space loses its key at the next scrub."""
        db = self.store.db
        if db.dialect == "postgres":
            with db.transaction() as conn:
                rotate_user_key(conn, user_id)

    def request_forget(
        self, user_id: str, memory_id: str, *, reason: str = "", source: str = "store"
    ) -> ForgetRequest | None:
        """Ask to forget one memory; nothing is deleted until the user approves.

        Asking twice for the same memory returns the request already pending.

        Args:
            user_id: The memory's owner.
            memory_id: The memory to forget (its older versions go with it on approval).
            reason: Why, as the requester put it (at most 300 characters).
            source: Which door asked (``store``, ``mcp``, …), shown with the request.

        Returns:
            The pending request with the memory's preview, or None for an unknown or
            another user's memory (the two look the same).

        Raises:
            InvalidInput: An id or the reason breaks a limit or is not valid UTF-8.
        """
        validate_user_id(user_id)
        validate_memory_id(memory_id)
        reason = check_text(reason, "reason", MAX_REASON_CHARS, allow_empty=True)
        preview = self.store.get_preview(user_id, memory_id)
        if preview is None:
            return None
        # The reason is shown and kept until the request is answered: "forget my PIN, it's
        # 9931" keeps its words, not its value.
        reason = redact(reason, judge=self.judge).text
        request = self.forget_requests.add(user_id, memory_id, reason, source)
        self.audit.record(user_id, "delete", "requested", memory_ids=[memory_id], source=source)
        return dataclasses.replace(request, preview=preview)

    def pending_forgets(self, user_id: str) -> builtins.list[ForgetRequest]:
        """This user's pending deletion requests, oldest first, each with its preview.

        A request whose memory is already gone (forgotten another way) is dropped.
        """
        validate_user_id(user_id)
        pending = []
        for request in self.forget_requests.pending(user_id):
            preview = self.store.get_preview(user_id, request.memory_id)
            if preview is None:
                self.forget_requests.remove(user_id, request.id)
                continue
            pending.append(dataclasses.replace(request, preview=preview))
        return pending

    def approve_forget(self, user_id: str, request_id: str) -> builtins.list[str] | None:
        """Approve a request: forget its memory through the normal forget path.

        Returns:
            The deleted memory ids, or None for an unknown or another user's request.
        """
        request = self._own_request(user_id, request_id)
        if request is None:
            return None
        deleted = self.forget(user_id, request.memory_id, actor=f"approved:{request.source}")
        self.forget_requests.remove(user_id, request.id)
        return deleted

    def reject_forget(self, user_id: str, request_id: str) -> bool:
        """Reject a request: the memory stays. Returns False for an unknown or foreign id."""
        request = self._own_request(user_id, request_id)
        if request is None:
            return False
        self.forget_requests.remove(user_id, request.id)
        self.audit.record(
            user_id, "delete", "rejected", memory_ids=[request.memory_id], source="user"
        )
        self.forget_requests.scrub()
        self.new_user_key(user_id)
        self.finish_scrub()
        return True

    def _own_request(self, user_id: str, request_id: str) -> ForgetRequest | None:
        validate_user_id(user_id)
        check_identifier(request_id, "request id", MAX_REQUEST_ID_CHARS)
        return self.forget_requests.get(user_id, request_id)
