"""`memora threads …`: the conversation transcripts kept as checkpoints."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from cli.console import ask, console, errors
from graph.checkpointed import delete_threads, open_agent, thread_records
from memora.config import get_settings
from memora.validation import validate_thread_id, validate_user_id

threads_app = typer.Typer(help="List or delete conversation threads.", no_args_is_help=True)


def _threads(data_dir: Path) -> list[dict[str, Any]]:
    with open_agent(data_dir) as agent:
        return [
            {
                "thread_id": record.thread_id,
                "user_id": record.user_id,
                "updated": record.updated,
                "messages": len(record.messages),
            }
            for record in thread_records(agent)
        ]


@threads_app.command("list")
def threads_list(user: Annotated[str | None, typer.Option("--user", "-u")] = None) -> None:
    """List conversation threads (optionally only one user's)."""
    if user is not None:
        validate_user_id(user)
    table = Table("thread", "user", "updated", "messages")
    for row in _threads(get_settings().data_dir):
        if user is None or row["user_id"] == user:
            table.add_row(
                escape(str(row["thread_id"])),
                escape(str(row["user_id"])),
                escape(str(row["updated"])),
                str(row["messages"]),
            )
    console.print(table)


@threads_app.command("delete")
def threads_delete(
    thread_id: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
) -> None:
    """Delete a thread's whole transcript (its checkpoints)."""
    validate_thread_id(thread_id)
    settings = get_settings()
    if not any(row["thread_id"] == thread_id for row in _threads(settings.data_dir)):
        errors.print(f"no thread {thread_id}", markup=False)
        raise typer.Exit(1)
    if not yes and ask("Delete this thread? [y/N]: ") not in {"y", "yes"}:
        console.print("kept")
        return
    with open_agent(settings.data_dir) as agent:
        delete_threads(agent, [thread_id])
    console.print("deleted")
