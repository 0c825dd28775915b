"""`memora chat`: talk to the agent in a terminal, approve deletions at the prompt.

This module drives the compiled graph; the graph decides, the chat only shows
what happened and asks the user when a deletion needs approval.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Annotated, Any

import typer
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langgraph.types import Command
from rich.markup import escape

from agent.chat_models import describe_model
from agent.prompts import FORGET_GONE_LINE, FORGET_NOT_KEPT_LINE
from cli.console import UserOption, console, errors, id_table, status_style
from cli.library import open_memora
from graph.builder import durability_for
from graph.checkpointed import open_agent
from memora.api import Memora
from memora.config import get_settings
from memora.errors import MemoraError
from memora.validation import validate_thread_id, validate_user_id
from nodes.state import Context, State, StopReason

Asker = Callable[[dict[str, Any]], Any]
"""Answers one approval request (the interrupt's payload) with a resume value."""


def _config(thread_id: str, user_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "user_id": user_id}}


def _print_step(node: str, update: dict[str, Any]) -> None:
    """Show one node's action and observation (the --verbose trace)."""
    if node == "redact_transcript":
        return  # its messages are redacted copies of ones already shown
    for message in update.get("messages", []) or []:
        if isinstance(message, AIMessage) and message.tool_calls:
            for call in message.tool_calls:
                args = json.dumps(call.get("args", {}), ensure_ascii=False)
                console.print(f"[cyan]  Action[/cyan]: {escape(str(call['name']))} {escape(args)}")
        elif isinstance(message, ToolMessage):
            console.print(f"[magenta]  Observation[/magenta]: {escape(str(message.content))}")
    if node == "commit_memory":
        for outcome in update.get("commit_outcomes", []):
            outcome_json = json.dumps(outcome, ensure_ascii=False)
            console.print(f"[green]  Commit[/green]: {escape(outcome_json)}")
    if node == "delete_memory":
        console.print(f"[red]  Deleted[/red]: {escape(str(update.get('deleted_memory_ids')))}")
    if node == "finish" and update.get("stop_reason"):
        console.print(f"[dim]  stop_reason: {escape(str(update['stop_reason']))}[/dim]")


def run_turn(
    agent: Any,
    thread_id: str,
    user_id: str,
    text: str | None,
    ask: Asker,
    *,
    memora: Memora,
    verbose: bool = False,
) -> dict[str, Any]:
    """Send one message (or, with ``text=None``, answer a pending approval); return the result.

    Streams the reply as it is generated, prints the agent trace when
    ``verbose``, and asks ``ask`` for each deletion approval.
    """
    config = _config(thread_id, user_id)
    context = Context(user_id=user_id, memora=memora)
    payload: Any = (
        {"messages": [HumanMessage(text)]} if text is not None else _resume(agent, config, ask)
    )
    replied = text is None  # a resumed turn's reply was shown before it paused
    while payload is not None:
        mid_line = False
        for mode, chunk in agent.stream(
            payload,
            config,
            context=context,
            stream_mode=["messages", "updates"],
            durability=durability_for(payload),
        ):
            if mode == "messages":
                message, metadata = chunk
                if (
                    isinstance(message, AIMessageChunk)
                    and metadata.get("langgraph_node") == "call_model"
                    and isinstance(message.content, str)
                    and message.content
                ):
                    if not mid_line:
                        console.print("[bold]Memora[/bold]: ", end="")
                    console.print(message.content, end="", markup=False, highlight=False)
                    mid_line = replied = True
            elif verbose:
                if mid_line:
                    console.print()
                    mid_line = False
                for node, update in chunk.items():
                    if node != "__interrupt__" and isinstance(update, dict):
                        _print_step(node, update)
        if mid_line:
            console.print()
        values = agent.get_state(config).values
        if not replied and values.get("reply"):
            console.print("[bold]Memora[/bold]: ", end="")
            console.print(values["reply"], markup=False, highlight=False)
            replied = True
        payload = _resume(agent, config, ask)
    values = dict(agent.get_state(config).values)
    if values.get("approved_forget_ids") or _had_forget(State(**values)):
        console.print(_outcome(values))
    return values


def _had_forget(state: State) -> bool:
    return state.stop_reason == StopReason.FINAL_ANSWER and bool(state.forget_actions())


def _outcome(values: dict[str, Any]) -> str:
    if values.get("deleted_memory_ids"):
        return "Memory deleted."
    if values.get("approved_forget_ids"):
        return FORGET_GONE_LINE.format(count="")
    if values.get("gone_forget_ids"):
        return FORGET_NOT_KEPT_LINE
    return "Memory deletion cancelled; kept."


def _pending_interrupts(agent: Any, config: dict[str, Any]) -> list[Any]:
    snapshot = agent.get_state(config)
    return [item for task in snapshot.tasks for item in task.interrupts]


def _resume(agent: Any, config: dict[str, Any], ask: Asker) -> Command | None:
    """If the thread is paused at an approval, ask and return the resume command."""
    pending = _pending_interrupts(agent, config)
    if not pending:
        return None
    request = pending[0].value
    console.print("--- Forget Request ---")
    if request.get("error"):
        console.print(request["error"], markup=False)
    console.print(f"Memory: {request.get('preview')}", markup=False)
    console.print(f"Reason: {request.get('reason')}", markup=False)
    answer = ask(request)
    if answer is None:
        raise ApprovalUnanswered
    return Command(resume=answer)


class ApprovalUnanswered(MemoraError):
    """The terminal closed at the approval prompt: the thread stays paused for next time."""


def prompt_approval(_: dict[str, Any]) -> str | None:
    """Ask at the terminal; an empty answer keeps the memory, a closed terminal answers nothing."""
    try:
        return input("Delete this memory? [y/N]: ").strip().lower()
    except EOFError:
        return None


def print_memories(memora: Memora, user_id: str) -> None:
    """The user's memories as a table."""
    table = id_table("status", "kind", "content", title=f"memories of {escape(user_id)}")
    for unit in memora.list(user_id):
        style = status_style(unit.status.value)
        table.add_row(
            escape(unit.id),
            f"[{style}]{unit.status.value}[/]",
            escape(unit.kind),
            escape(unit.content),
        )
    console.print(table)


def _profile_command(memora: Memora, user_id: str, line: str) -> None:
    parts = line.split(maxsplit=3)
    if len(parts) >= 4 and parts[1] == "set":
        memora.set_profile(user_id, parts[2], parts[3])
        console.print(f"profile {parts[2]} set", markup=False)
        return
    profile = memora.get_profile(user_id)
    text = json.dumps(profile, ensure_ascii=False, indent=2) if profile else "(empty)"
    console.print(text, markup=False)


def chat(
    user: UserOption = "default",
    thread: Annotated[str | None, typer.Option("--thread", help="Resume this thread.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show agent steps.")] = False,
) -> None:
    """Chat with Memora. /memories, /profile, /profile set KEY VALUE, /exit."""
    validate_user_id(user)
    thread_id = validate_thread_id(thread) if thread is not None else uuid.uuid4().hex
    settings = get_settings()
    memora = open_memora()
    console.print(f"Model: {describe_model(settings)}", markup=False)
    console.print(
        f"Thread: {thread_id} (resume with --thread {thread_id}); user: {user}", markup=False
    )
    with open_agent(settings.data_dir, settings.database_url) as agent:
        try:
            _converse(agent, memora, thread_id, user, verbose)
        except ApprovalUnanswered:
            console.print()
            console.print(
                f"The deletion still awaits your approval: --thread {thread_id}", markup=False
            )


def _finish_cut_turn(agent: Any, memora: Memora, thread_id: str, user: str) -> None:
    """Run to its end a turn that stopped after its approvals were answered (the process died
    before the delete, whose checkpoint is durable): a new message would let it lapse, and
    the user approved it."""
    config = _config(thread_id, user)
    snapshot = agent.get_state(config)
    if not snapshot.next or _pending_interrupts(agent, config):
        return
    context = Context(user_id=user, memora=memora)
    agent.invoke(None, config, context=context, durability="sync")
    values = dict(agent.get_state(config).values)
    console.print("[bold]Memora[/bold]: ", end="")
    console.print(values.get("reply") or "", markup=False, highlight=False)


def _converse(agent: Any, memora: Memora, thread_id: str, user: str, verbose: bool) -> None:
    """The chat loop: a turn cut short after its approval is finished, a pending approval is
    asked, then one turn per line until /exit or EOF."""
    _finish_cut_turn(agent, memora, thread_id, user)
    if _pending_interrupts(agent, _config(thread_id, user)):
        run_turn(agent, thread_id, user, None, prompt_approval, memora=memora, verbose=verbose)
    while True:
        try:
            line = input("You: ").strip()
        except EOFError:
            break
        except UnicodeDecodeError:
            errors.print("that line is not valid UTF-8; nothing was sent", markup=False)
            continue
        if not line:
            continue
        if line in {"/exit", "/quit"}:
            break
        if line == "/memories":
            print_memories(memora, user)
            continue
        if line.startswith("/profile"):
            try:
                _profile_command(memora, user, line)
            except ValueError as error:
                errors.print(str(error), markup=False)
            continue
        run_turn(agent, thread_id, user, line, prompt_approval, memora=memora, verbose=verbose)
