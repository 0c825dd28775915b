"""`memora profile …`: the confirmed facts injected into every turn."""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from cli.console import UserOption, console
from cli.library import open_memora

profile_app = typer.Typer(help="Show or change the user profile.", no_args_is_help=True)


@profile_app.command("show")
def profile_show(user: UserOption = "default") -> None:
    """Print the user's profile."""
    profile = open_memora().get_profile(user)
    table = Table("key", "value", title=f"profile of {escape(user)}")
    for key, value in profile.items():
        table.add_row(escape(key), escape(value))
    console.print(table)


@profile_app.command("set")
def profile_set(key: str, value: str, user: UserOption = "default") -> None:
    """Set one profile field."""
    open_memora().set_profile(user, key, value)
    console.print(f"{key} set", markup=False)


@profile_app.command("unset")
def profile_unset(key: str, user: UserOption = "default") -> None:
    """Remove one profile field."""
    removed = open_memora().unset_profile(user, key)
    console.print(f"{key} removed" if removed else f"{key} was not set", markup=False)
