"""`memora users …`: everything Memora holds of one user, exported or erased."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from cli.console import ask, console, errors
from cli.library import open_memora
from graph.checkpointed import delete_threads, open_agent, thread_records
from graph.remote_threads import erase_server_threads
from memora.config import get_settings
from memora.validation import validate_user_id

users_app = typer.Typer(help="Export or erase everything of one user.", no_args_is_help=True)


@users_app.command("export")
def users_export(
    user: str,
    out: Annotated[Path | None, typer.Option(help="File to write; stdout if omitted.")] = None,
) -> None:
    """Write USER's memories (every version), profile, audit and threads as one JSON object."""
    validate_user_id(user)
    data = open_memora().export_user(user)
    with open_agent(get_settings().data_dir, get_settings().database_url) as agent:
        data["threads"] = [
            {
                "thread_id": record.thread_id,
                "updated": record.updated,
                "messages": [
                    {"type": message.type, "content": message.content}
                    for message in record.messages
                ],
            }
            for record in thread_records(agent)
            if record.user_id == user
        ]
    text = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    if out is None:
        sys.stdout.write(text + "\n")
    else:
        out.write_text(text + "\n", encoding="utf-8")
        console.print(f"exported {user} to {out}", markup=False)


@users_app.command("erase")
def users_erase(
    user: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Erase without asking.")] = False,
    server: Annotated[
        str | None,
        typer.Option(
            envvar="MEMORA_SERVER_URL",
            help="Also delete the user's threads on this LangGraph server (its own runtime).",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(envvar="MEMORA_SERVER_TOKEN", help="The user's bearer token for --server."),
    ] = None,
) -> None:
    """Remove USER's memories, vectors, profile, audit and threads; print what was removed."""
    validate_user_id(user)
    if not yes and ask(f"Erase everything of {user}? [y/N]: ") not in {"y", "yes"}:
        console.print("kept")
        return
    served = erase_server_threads(server, user, token) if server else 0
    with open_agent(get_settings().data_dir, get_settings().database_url) as agent:
        threads = [record.thread_id for record in thread_records(agent) if record.user_id == user]
        delete_threads(agent, threads)
    report = open_memora().erase_user(user)
    report.threads = len(threads) + served
    if not any((report.memories, report.profile_fields, report.audit_entries, report.threads)):
        errors.print(f"nothing was stored for user {user}", markup=False)
    console.print(
        f"erased {user}: {report.memories} memories, {report.vectors} vectors, "
        f"{report.profile_fields} profile fields, {report.audit_entries} audit entries, "
        f"{report.forget_requests} deletion requests, {report.threads} threads",
        markup=False,
    )
