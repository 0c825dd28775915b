"""The root ``memora`` command: its sub-commands, and one-line errors for known failures."""

from __future__ import annotations

import logging
import sys
from typing import Any

import typer
from typer.core import TyperGroup

from cli.chat import chat
from cli.console import errors
from cli.demo import demo
from cli.eval_embedding import eval_embedding  # noqa: F401  (registers the command)
from cli.eval_memory import eval_memory
from cli.eval_recall import eval_recall  # noqa: F401  (registers the command)
from cli.eval_secrets import eval_secrets  # noqa: F401  (registers the command)
from cli.eval_selection import eval_selection  # noqa: F401  (registers the command)
from cli.evals import eval_app
from cli.library import close_opened
from cli.mcp import mcp
from cli.memories import memories_app
from cli.profile import profile_app
from cli.threads import threads_app
from cli.train import train
from cli.ui import ui
from cli.users import users_app
from memora.api import close_shared
from memora.config import get_settings
from memora.errors import (
    ConfigurationError,
    IdentityError,
    InvalidInput,
    MemoraError,
    MemoryRefused,
    NotFound,
    StoreError,
)
from memora.redaction import install_log_redaction
from memora.validation import check_arguments

EXIT_CODES: tuple[tuple[type[MemoraError], int], ...] = (
    (NotFound, 1),
    (InvalidInput, 2),
    (MemoryRefused, 2),
    (ConfigurationError, 2),
    (StoreError, 2),
    (IdentityError, 2),
)
"""The exit status of each kind of known failure; any other ``MemoraError`` exits 1.

2 means nothing was done: refused input (not valid UTF-8, over a limit, a malformed
id, a memory the policy refuses), a bad setting, or a store that cannot be opened.
"""


def exit_code_for(error: MemoraError) -> int:
    """The exit status ``memora`` ends with after this failure."""
    return next((code for kind, code in EXIT_CODES if isinstance(error, kind)), 1)


def report(error: MemoraError) -> int:
    """Print the failure as one line on stderr; return the exit status it maps to."""
    errors.print(f"memora: {error}", markup=False)
    return exit_code_for(error)


class _MemoraGroup(TyperGroup):
    """The root command group: a known failure in any sub-command ends in one line."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except MemoraError as error:
            raise typer.Exit(report(error)) from None


app = typer.Typer(
    cls=_MemoraGroup,
    help="Memora: a chat agent with agentic long-term memory.",
    no_args_is_help=True,
)
app.add_typer(memories_app, name="memories")
app.add_typer(eval_app, name="eval")
eval_app.command("memory")(eval_memory)
app.add_typer(profile_app, name="profile")
app.add_typer(threads_app, name="threads")
app.add_typer(users_app, name="users")
app.command("chat")(chat)
app.command("demo")(demo)
app.command("mcp")(mcp)
app.command("train")(train)
app.command("ui")(ui)


def main() -> None:
    """Console entry point: known failures print one line and exit non-zero (see EXIT_CODES)."""
    try:
        check_arguments(sys.argv[1:])
        logging.basicConfig(
            level=get_settings().log_level, format="%(levelname)s %(name)s: %(message)s"
        )
        install_log_redaction()
        try:
            app()
        finally:
            close_opened()
            close_shared()
    except MemoraError as error:
        sys.exit(report(error))
    except KeyboardInterrupt:
        sys.exit(130)
