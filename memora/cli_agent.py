"""`memora chat`, `memora demo`, `memora profile …` and `memora threads …`.

The top floor: this module drives the graph (imports run CLI → graph → nodes → memora).
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langgraph.types import Command
from rich.table import Table

from memora.cli import UserOption, _ask, _id_table, _status_style, app, console, errors
from memora.config import get_settings
from memora.db import StoreError, describe_sqlite_error

profile_app = typer.Typer(help="Show or change the user profile.", no_args_is_help=True)
threads_app = typer.Typer(help="List or delete conversation threads.", no_args_is_help=True)
app.add_typer(profile_app, name="profile")
app.add_typer(threads_app, name="threads")

Asker = Callable[[dict[str, Any]], Any]


@contextmanager
def open_agent(data_dir: Path) -> Iterator[Any]:
    """The graph compiled with a SQLite checkpointer under the data dir."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from graph.builder import builder, recursion_limit

    path = data_dir / "checkpoints.sqlite"
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, check_same_thread=False, timeout=5)
        conn.execute("PRAGMA secure_delete=ON")
        saver = SqliteSaver(conn)
        saver.setup()
    except OSError as error:
        raise StoreError(f"cannot use data dir {data_dir}: {error}") from None
    except sqlite3.Error as error:
        raise StoreError(describe_sqlite_error(path, error)) from None
    try:
        agent = builder.compile(checkpointer=saver, name="memora")
        yield agent.with_config({"recursion_limit": recursion_limit()})
    finally:
        conn.close()


def _config(thread_id: str, user_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "user_id": user_id}}


def _print_step(node: str, update: dict[str, Any]) -> None:
    """Show one node's action and observation (the --verbose trace)."""
    for message in update.get("messages", []) or []:
        if isinstance(message, AIMessage) and message.tool_calls:
            for call in message.tool_calls:
                args = json.dumps(call.get("args", {}), ensure_ascii=False)
                console.print(f"[cyan]  Action[/cyan]: {call['name']} {args}", markup=True)
        elif isinstance(message, ToolMessage):
            console.print(f"[magenta]  Observation[/magenta]: {message.content}")
    if node == "commit_memory":
        for outcome in update.get("commit_outcomes", []):
            console.print(f"[green]  Commit[/green]: {json.dumps(outcome, ensure_ascii=False)}")
    if node == "delete_memory":
        console.print(f"[red]  Deleted[/red]: {update.get('deleted_memory_ids')}")
    if node == "finish" and update.get("stop_reason"):
        console.print(f"[dim]  stop_reason: {update['stop_reason']}[/dim]")


def run_turn(
    agent: Any,
    thread_id: str,
    user_id: str,
    text: str | None,
    ask: Asker,
    *,
    verbose: bool = False,
) -> dict[str, Any]:
    """Send one message (or, with ``text=None``, answer a pending approval); return the result.

    Streams the reply as it is generated, prints the agent trace when
    ``verbose``, and asks ``ask`` for each deletion approval.
    """
    from nodes.state import Context

    config = _config(thread_id, user_id)
    context = Context(user_id=user_id)
    payload: Any = (
        {"messages": [HumanMessage(text)]} if text is not None else _resume(agent, config, ask)
    )
    replied = text is None  # a resumed turn's reply was shown before it paused
    while payload is not None:
        mid_line = False
        for mode, chunk in agent.stream(
            payload, config, context=context, stream_mode=["messages", "updates"]
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
    if values.get("approved_forget_ids") or _had_forget(values):
        deleted = values.get("deleted_memory_ids") or []
        console.print("Memory deleted." if deleted else "Memory deletion cancelled; kept.")
    return values


def _had_forget(values: dict[str, Any]) -> bool:
    return values.get("stop_reason") == "final_answer" and any(
        action.get("type") == "forget_memory" for action in values.get("pending_actions", [])
    )


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
    console.print(f"Memory: {request.get('preview')}", markup=False)
    console.print(f"Reason: {request.get('reason')}", markup=False)
    return Command(resume=ask(request))


def prompt_approval(_: dict[str, Any]) -> str:
    """Ask at the terminal; no answer keeps the memory."""
    return _ask("Delete this memory? [y/N]: ")


def _print_memories(user_id: str) -> None:
    from memora.api import shared_memora

    table = _id_table("status", "kind", "content", title=f"memories of {user_id}")
    for unit in shared_memora(get_settings()).list(user_id):
        style = _status_style(unit.status.value)
        table.add_row(unit.id, f"[{style}]{unit.status.value}[/]", unit.kind, unit.content)
    console.print(table)


def _profile_command(user_id: str, line: str) -> None:
    from memora.api import shared_memora

    memora = shared_memora(get_settings())
    parts = line.split(maxsplit=3)
    if len(parts) >= 4 and parts[1] == "set":
        memora.profile.set(user_id, parts[2], parts[3])
        console.print(f"profile {parts[2]} set")
        return
    profile = memora.get_profile(user_id)
    console.print(json.dumps(profile, ensure_ascii=False, indent=2) if profile else "(empty)")


@app.command("chat")
def chat(
    user: UserOption = "default",
    thread: Annotated[str | None, typer.Option("--thread", help="Resume this thread.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show agent steps.")] = False,
) -> None:
    """Chat with Memora. /memories, /profile, /profile set KEY VALUE, /exit."""
    from memora.chat_models import describe_model

    settings = get_settings()
    thread_id = thread or uuid.uuid4().hex
    console.print(f"Model: {describe_model(settings)}")
    console.print(f"Thread: {thread_id} (resume with --thread {thread_id}); user: {user}")
    with open_agent(settings.data_dir) as agent:
        if _pending_interrupts(agent, _config(thread_id, user)):
            run_turn(agent, thread_id, user, None, prompt_approval, verbose=verbose)
        while True:
            try:
                line = input("You: ").strip()
            except EOFError:
                break
            if not line:
                continue
            if line in {"/exit", "/quit"}:
                break
            if line == "/memories":
                _print_memories(user)
                continue
            if line.startswith("/profile"):
                try:
                    _profile_command(user, line)
                except ValueError as error:
                    errors.print(str(error), markup=False)
                continue
            run_turn(agent, thread_id, user, line, prompt_approval, verbose=verbose)


@profile_app.command("show")
def profile_show(user: UserOption = "default") -> None:
    """Print the user's profile."""
    from memora.api import shared_memora

    profile = shared_memora(get_settings()).get_profile(user)
    table = Table("key", "value", title=f"profile of {user}")
    for key, value in profile.items():
        table.add_row(key, value)
    console.print(table)


@profile_app.command("set")
def profile_set(key: str, value: str, user: UserOption = "default") -> None:
    """Set one profile field."""
    from memora.api import shared_memora

    try:
        shared_memora(get_settings()).profile.set(user, key, value)
    except ValueError as error:
        errors.print(str(error), markup=False)
        raise typer.Exit(1) from None
    console.print(f"{key} set")


@profile_app.command("unset")
def profile_unset(key: str, user: UserOption = "default") -> None:
    """Remove one profile field."""
    from memora.api import shared_memora

    removed = shared_memora(get_settings()).profile.unset(user, key)
    console.print(f"{key} removed" if removed else f"{key} was not set")


def _threads(data_dir: Path) -> list[dict[str, Any]]:
    with open_agent(data_dir) as agent:
        saver = agent.checkpointer
        latest: dict[str, Any] = {}
        for checkpoint in saver.list(None):
            thread_id = checkpoint.config["configurable"]["thread_id"]
            latest.setdefault(thread_id, checkpoint)
        rows = []
        for thread_id, checkpoint in latest.items():
            values = checkpoint.checkpoint.get("channel_values", {})
            messages = values.get("messages", [])
            rows.append(
                {
                    "thread_id": thread_id,
                    "user_id": values.get("owner_user_id", ""),
                    "updated": checkpoint.checkpoint.get("ts", ""),
                    "messages": len(messages),
                }
            )
        return rows


@threads_app.command("list")
def threads_list(user: Annotated[str | None, typer.Option("--user", "-u")] = None) -> None:
    """List conversation threads (optionally only one user's)."""
    table = Table("thread", "user", "updated", "messages")
    for row in _threads(get_settings().data_dir):
        if user is None or row["user_id"] == user:
            table.add_row(row["thread_id"], row["user_id"], row["updated"], str(row["messages"]))
    console.print(table)


@threads_app.command("delete")
def threads_delete(
    thread_id: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
) -> None:
    """Delete a thread's whole transcript (its checkpoints)."""
    settings = get_settings()
    if not any(row["thread_id"] == thread_id for row in _threads(settings.data_dir)):
        errors.print(f"no thread {thread_id}", markup=False)
        raise typer.Exit(1)
    if not yes and _ask("Delete this thread? [y/N]: ") not in {"y", "yes"}:
        console.print("kept")
        return
    with open_agent(settings.data_dir) as agent:
        agent.checkpointer.delete_thread(thread_id)
        agent.checkpointer.conn.execute("VACUUM")
    console.print("deleted")


DEMO_SESSIONS: list[tuple[str, list[str]]] = [
    ("seed 000 §15, test 1: no memory needed", ["請解釋 present perfect。"]),
    (
        "seed 000 §15, test 2: recall a past weakness",
        [
            "請記住，我的弱點是經常混淆 present perfect 和 past simple。",
            "依照我以前提過的弱點，今天應該練什麼？",
        ],
    ),
    ("seed 000 §15, test 3: remember on request", ["請記住，我預計明年五月參加 IELTS。"]),
    ("seed 000 §15, test 4: sensitive data is refused", ["請記住，我的驗證碼是 123456。"]),
    ("seed 000 §15, test 5: forget needs approval", ["不要再記得我以前想準備 IELTS。"]),
    (
        "seed 003, session 1: preferences and project",
        [
            "I prefer concise answers with code examples.",
            "I'm working on a project called Atlas, a LangGraph agent for travel planning.",
        ],
    ),
    (
        "seed 003, session 2 (new thread): recall across sessions",
        [
            "What do you know about my project and my preferred style?",
        ],
    ),
]


@app.command("demo")
def demo(
    yes: Annotated[bool, typer.Option("--yes", help="Approve deletions.")] = False,
    no: Annotated[bool, typer.Option("--no", help="Refuse deletions.")] = False,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Keep the demo store here (default: temp).")
    ] = None,
) -> None:
    """Run the seed scenarios offline, printing the agent trace and the memory table."""
    from memora.api import shared_memora
    from memora.chat_models import describe_model

    with tempfile.TemporaryDirectory(prefix="memora-demo-") as tmp:
        root = data_dir or Path(tmp)
        # The graph's nodes read the process settings: point them at the demo store.
        os.environ["MEMORA_DATA_DIR"] = str(root)
        get_settings.cache_clear()
        console.print(f"Model: {describe_model(get_settings())}; data dir: {root}")

        def ask(request: dict[str, Any]) -> Any:
            if yes or no:
                answer = "y" if yes else "n"
                console.print(f"Delete this memory? [y/N]: {answer}", markup=False)
                return answer
            return prompt_approval(request)

        user = "demo"
        with open_agent(root) as agent:
            for title, messages in DEMO_SESSIONS:
                thread_id = uuid.uuid4().hex
                console.rule(title)
                for text in messages:
                    console.print(f"[bold]You[/bold]: {text}", markup=True)
                    run_turn(agent, thread_id, user, text, ask, verbose=True)
        _print_memories(user)
        shared_memora(get_settings()).close()
