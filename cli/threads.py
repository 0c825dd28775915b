"""`memora threads …`: the conversation transcripts kept as checkpoints."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from cli.console import ask, console
from graph.checkpointed import delete_threads, open_agent, thread_records
from memora.config import get_settings
from memora.errors import NotFound
from memora.validation import validate_thread_id, validate_user_id

threads_app = typer.Typer(help="List or delete conversation threads.", no_args_is_help=True)


@threads_app.command("list")
def threads_list(user: Annotated[str | None, typer.Option("--user", "-u")] = None) -> None:
    """List conversation threads (optionally only one user's)."""
    if user is not None:
        validate_user_id(user)
    table = Table("thread", "user", "updated", "messages")
    with open_agent(get_settings().data_dir, get_settings().database_url) as agent:
        records = thread_records(agent)
    for record in records:
        if user is None or record.user_id == user:
            table.add_row(
                escape(record.thread_id),
                escape(record.user_id),
                escape(str(record.updated)),
                str(len(record.messages)),
            )
    console.print(table)


@threads_app.command("delete")
def threads_delete(
    thread_id: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
) -> None:
    """Delete a thread's whole transcript (its checkpoints)."""
    validate_thread_id(thread_id)
    with open_agent(get_settings().data_dir, get_settings().database_url) as agent:
        if not any(record.thread_id == thread_id for record in thread_records(agent)):
            raise NotFound(f"no thread {thread_id}")
        if not yes and ask("Delete this thread? [y/N]: ") not in {"y", "yes"}:
            console.print("kept")
            return
        delete_threads(agent, [thread_id])
    console.print("deleted")
