"""Where the command line prints and asks: the two consoles, shared options, small table helpers."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

console = Console()
# soft_wrap: an error stays one line however narrow the terminal (or 80 columns off a tty).
errors = Console(stderr=True, soft_wrap=True, highlight=False)

UserOption = Annotated[str, typer.Option("--user", "-u", help="User id the command acts for.")]


def id_table(*columns: str, title: str | None = None) -> Table:
    """A table whose first column shows whole memory ids, so they can be pasted."""
    table = Table(title=title)
    table.add_column("id", no_wrap=True, min_width=32)
    for column in columns:
        table.add_column(column)
    return table


def status_style(status: str) -> str:
    """The colour a memory's status is shown in."""
    return {"active": "green", "superseded": "yellow", "archived": "dim"}.get(status, "")


def ask(prompt: str) -> str:
    """Read one answer; end of input or no terminal means no."""
    try:
        return input(prompt).strip().lower()
    except EOFError:
        return ""
