"""The server's identity: LangGraph custom auth (``langgraph.json`` → ``auth``).

With MEMORA_AUTH_SECRET or MEMORA_AUTH_JWKS_URL set, every request needs a
signed bearer token; its ``sub`` is the user. Threads are stamped with their
owner when created and every thread, run and cron operation is filtered to the
owner; assistants are read-only; store access stays inside the user's namespace
(a ``("memories", user)`` namespace, ``MemoraStore``'s, must name the token's user).
A thread's owner never changes, and its state is written only by its runs.
Anything else is refused.

With neither set, the server keeps the local single-user behaviour: it trusts
the user id a client sends (``configurable.user_id``) and says so once at startup.

Either way, a run's input and resume value are redacted here, before the server
records the run: the runtime keeps every run's input (``GET /threads/{id}/runs``,
its own files), and a run that fails keeps its input in the thread, so this is the
one place a secret can be cut out before anything stores it. The model then sees
the redaction mark instead of the value.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

from langgraph_sdk import Auth

from graph.errors import http_refusal
from memora.api import shared_memora
from memora.config import get_settings
from memora.errors import MemoraError
from memora.identity import VERIFIED_PERMISSION, TokenVerifier
from memora.integrations import DEFAULT_NAMESPACE
from memora.judgement import trained_judgement
from memora.redaction import PLUMBING, redact_tree

logger = logging.getLogger("memora.auth")

MEMORIES = DEFAULT_NAMESPACE[0]
"""The first element of a ``MemoraStore`` namespace, ``("memories", user_id)``."""
LOCAL_IDENTITY = "local-unauthenticated"
"""Who a request is when the server runs without authentication."""

auth = Auth()
_settings = get_settings()
_verifier = TokenVerifier(_settings) if _settings.auth_enabled else None

if _verifier is None:
    logger.warning(
        "authentication is off (MEMORA_AUTH_SECRET and MEMORA_AUTH_JWKS_URL are unset): "
        "the server trusts the user id each client sends"
    )


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    """The user a request's bearer token proves; 401 with a one-line reason otherwise."""
    if _verifier is None:
        return {"identity": LOCAL_IDENTITY, "permissions": []}
    try:
        user_id = await asyncio.to_thread(_verifier.user_id, authorization)
    except MemoraError as refusal:
        raise http_refusal(refusal) from None
    return {"identity": user_id, "permissions": [VERIFIED_PERMISSION]}


def _owner(ctx: Auth.types.AuthContext) -> str | None:
    """The identity to filter by, or None when the server runs without authentication."""
    return ctx.user.identity if _verifier is not None else None


def _stamp_owner(value: dict[str, Any], owner: str) -> None:
    # In place: the server keeps its own reference to the metadata dict it passed in.
    metadata = value.get("metadata")
    if isinstance(metadata, dict):
        metadata["owner"] = owner
    else:
        value["metadata"] = {"owner": owner}


def _refuse(reason: str) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(status_code=403, detail=reason)


def _check_thread_update(value: Any, owner: str) -> None:
    """Refuse a change of a thread's owner and any client write to its state.

    The server hands this handler ``{"thread_id", "metadata"}`` for PATCH /threads/{id}
    (and for run cancels), but only ``{"thread_id"}`` for POST /threads/{id}/state and
    its bulk form: the state values never reach auth, so they cannot be screened
    field by field. Memora needs no client state writes (a turn is a run, an approval
    a resume), so all of them are refused: otherwise a client could write the thread's
    owner, summary, pending actions or approvals, or put words in the assistant's mouth.
    """
    if not isinstance(value, dict):
        return
    if "metadata" not in value:
        raise _refuse("a thread's state is written only by its runs; send a run instead")
    metadata = value.get("metadata")
    if isinstance(metadata, dict) and metadata.get("owner", owner) != owner:
        raise _refuse("a thread's owner cannot be changed")


def _check_run(value: Any) -> None:
    """A run may carry input and a resume, not a Command that writes state or jumps nodes.

    ``Command(update=...)`` writes any state channel (owner, summary, approvals) and
    ``goto`` could enter delete_memory without the approval step; Memora's clients
    only ever resume.
    """
    kwargs = value.get("kwargs") if isinstance(value, dict) else None
    command = kwargs.get("command") if isinstance(kwargs, dict) else None
    if isinstance(command, dict) and (command.get("update") or command.get("goto")):
        raise _refuse("a run's command may only resume; 'update' and 'goto' are refused")


_HEX_ID = re.compile(r"\b[0-9a-f]{32}\b")


def _own_memory_ids(texts: Any, user_id: str | None) -> frozenset[str]:
    """The user's memory ids the texts quote (a memory id looks like a random key)."""
    quoted = set(_HEX_ID.findall(json.dumps(texts, ensure_ascii=False, default=str)))
    if not quoted or not user_id:
        return frozenset()
    library = shared_memora(_settings)
    try:
        return frozenset(i for i in quoted if library.get(user_id, i) is not None)
    except MemoraError:  # a user id the library refuses owns no memory
        return frozenset()


def _run_user(kwargs: dict[str, Any], owner: str | None) -> str | None:
    if owner is not None:
        return owner
    config = kwargs.get("config")
    configurable = config.get("configurable") if isinstance(config, dict) else None
    user_id = configurable.get("user_id") if isinstance(configurable, dict) else None
    return user_id if isinstance(user_id, str) else None


def _redact_run(value: Any, owner: str | None) -> None:
    """Cut sensitive values out of a run's input and resume value, in place: the server
    stores the very ``kwargs`` dict it hands this handler."""
    kwargs = value.get("kwargs") if isinstance(value, dict) else None
    if not isinstance(kwargs, dict):
        return
    command = kwargs.get("command")
    command = command if isinstance(command, dict) and "resume" in command else {}
    sent = [kwargs.get("input"), command.get("resume")]
    if not any(sent):
        return
    judge = trained_judgement(_settings.judgement)
    keep = _own_memory_ids(sent, _run_user(kwargs, owner))
    if "input" in kwargs:
        kwargs["input"], _ = redact_tree(kwargs["input"], keep=keep, judge=judge, fixed=PLUMBING)
    if command:
        command["resume"], _ = redact_tree(
            command["resume"], keep=keep, judge=judge, fixed=PLUMBING
        )


@auth.on
async def refuse_the_rest(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Default deny: only the resources below are reachable when authentication is on."""
    return _verifier is None


@auth.on.threads
async def own_threads(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """Stamp new threads and runs with their owner; show and touch only the owner's threads;
    never let a client move a thread to another owner or write its state."""
    owner = _owner(ctx)
    if ctx.action == "create_run" and _settings.redact_transcripts:
        await asyncio.to_thread(_redact_run, value, owner)
    if owner is None:
        return None
    if ctx.action == "update":
        _check_thread_update(value, owner)
    if ctx.action == "create_run":
        _check_run(value)
    if isinstance(value, dict) and ctx.action in {"create", "create_run"}:
        _stamp_owner(value, owner)
    return {"owner": owner}


@auth.on.crons
async def own_crons(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """Crons are the owner's, like threads."""
    owner = _owner(ctx)
    if owner is None:
        return None
    if isinstance(value, dict) and ctx.action == "create":
        _stamp_owner(value, owner)
    return {"owner": owner}


@auth.on.assistants
async def read_only_assistants(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Anyone may read and list the assistants (a run names one); with authentication on,
    nobody may create, change or delete them."""
    return _verifier is None or ctx.action in {"read", "search"}


def _check_memories_namespace(namespace: tuple[str, ...], owner: str, value: dict) -> None:
    """A ``("memories", user)`` namespace (``MemoraStore``'s) must name the token's user;
    a bare ``("memories",)`` prefix (a search, a listing) is narrowed to it."""
    if len(namespace) == 1:
        value["namespace"] = (MEMORIES, owner)
    elif namespace[1] != owner:
        raise _refuse("a ('memories', user) namespace must name your own user")


@auth.on.store
async def own_store_namespace(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Every store access happens under the user's own namespace."""
    owner = _owner(ctx)
    if owner is None or not isinstance(value, dict):
        return
    namespace = tuple(value.get("namespace") or ())
    if namespace[:1] == (MEMORIES,):
        _check_memories_namespace(namespace, owner, value)
    elif namespace[:1] != (owner,):
        value["namespace"] = (owner, *namespace)
