"""Helpers the nodes share: whose turn this is, the run's settings, and the library they call."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import Runtime

from agent.spotlight import DataFrame
from memora.api import Memora, shared_memora
from memora.config import Settings, get_settings
from memora.errors import IdentityMismatchError, ThreadOwnershipError
from memora.identity import VERIFIED_PERMISSION
from memora.validation import validate_user_id
from nodes.state import Context, State

DEFAULT_USER = "default"


def authenticated_user_id(
    runtime: Runtime[Context] | None, config: RunnableConfig | None
) -> str | None:
    """The user a verified bearer token proved, as the server passes it; None without auth."""
    configurable = (config or {}).get("configurable") or {}
    server_info = getattr(runtime, "server_info", None)
    user = getattr(server_info, "user", None) or configurable.get("langgraph_auth_user")
    permissions = list(configurable.get("langgraph_auth_permissions") or [])
    permissions += list(_field(user, "permissions") or [])
    identity = _field(user, "identity")
    if VERIFIED_PERMISSION in permissions and isinstance(identity, str) and identity:
        return identity
    return None


def _field(user: Any, name: str) -> Any:
    if user is None:
        return None
    if isinstance(user, dict):
        return user.get(name)
    return getattr(user, name, None)


def resolve_user_id(runtime: Runtime[Context] | None, config: RunnableConfig | None) -> str:
    """The user of this run.

    Under a server with authentication, the identity the bearer token proved, and a
    different client-sent user id is refused. Otherwise (the CLI, local mode) the
    run's context, else ``configurable.user_id``, else "default".

    Raises:
        IdentityMismatchError: The client claimed another user than its token proves.
        InvalidInput: The user id is not 1..MAX_USER_ID_CHARS printable characters.
    """
    claimed = run_context(runtime).user_id
    if not claimed and config is not None:
        claimed = str((config.get("configurable") or {}).get("user_id") or "")
    verified = authenticated_user_id(runtime, config)
    if verified is None:
        return validate_user_id(claimed or DEFAULT_USER)
    if claimed and claimed != verified:
        raise IdentityMismatchError(
            "the run's user_id does not match the authenticated user; leave it out"
        )
    return validate_user_id(verified)


def is_foreign(state: State, user_id: str) -> bool:
    """Whether ``user_id`` is someone other than the thread's owner (a new thread has none)."""
    return bool(state.owner_user_id) and state.owner_user_id != user_id


def ownership_error(user_id: str) -> ThreadOwnershipError:
    """The refusal of a run by ``user_id`` on a thread they do not own."""
    return ThreadOwnershipError(
        f"this thread belongs to another user; user {user_id!r} cannot use it"
    )


def owned_user_id(state: State, runtime: Runtime[Context] | None) -> str:
    """The current user, refusing anyone but the thread's owner."""
    user_id = resolve_user_id(runtime, get_config())
    if is_foreign(state, user_id):
        raise ownership_error(user_id)
    return user_id


def current_thread_id() -> str | None:
    """The running thread's id, if the run has one."""
    thread_id = (get_config().get("configurable") or {}).get("thread_id")
    return str(thread_id) if thread_id is not None else None


def run_context(runtime: Runtime[Context] | None) -> Context:
    """The run's context as a ``Context``, whatever shape the caller passed."""
    context = getattr(runtime, "context", None)
    if isinstance(context, Context):
        return context
    if isinstance(context, dict):
        known = {f for f in Context.__dataclass_fields__ if f != "memora"}
        return Context(**{k: v for k, v in context.items() if k in known})
    return Context()


def library(runtime: Runtime[Context] | None) -> Memora:
    """The run's memory library: the one a local caller passed, else the process-wide one."""
    return run_context(runtime).memora or shared_memora(get_settings())


def settings(runtime: Runtime[Context] | None) -> Settings:
    """The settings of the run's library."""
    return library(runtime).settings


def step_limit(runtime: Runtime[Context] | None) -> int:
    """Tool executions this run allows: the run's choice, else MEMORA_MAX_AGENT_STEPS."""
    return run_context(runtime).max_agent_steps or settings(runtime).max_agent_steps


def current_turn_start(messages: list[AnyMessage]) -> int:
    """Index of the latest user message: the turn runs from there to the end."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return index
    return len(messages)


def data_frame(state: State) -> DataFrame:
    """The frame this turn quotes stored text in (drawn by assemble_context)."""
    return DataFrame(state.data_frame_id)


def last_ai_message(messages: list[AnyMessage]) -> AIMessage | None:
    """The newest AI message, if the thread ends with one."""
    return messages[-1] if messages and isinstance(messages[-1], AIMessage) else None


def requested_calls(message: AIMessage | None) -> list[dict[str, Any]]:
    """Every tool call the model asked for, including ones whose arguments did not parse.

    A call with malformed JSON lands in ``invalid_tool_calls``; it still needs
    an ``ok: false`` observation the model can correct, so it counts as a call
    with its raw argument string.
    """
    if message is None:
        return []
    calls: list[dict[str, Any]] = [dict(call) for call in message.tool_calls]
    calls += [
        {"name": bad.get("name") or "", "args": bad.get("args") or "", "id": bad.get("id") or ""}
        for bad in message.invalid_tool_calls
    ]
    return calls
