"""The root ``memora`` command: its sub-commands, and one-line errors for known failures."""

from __future__ import annotations

import logging
import sys

import typer

from cli.chat import chat
from cli.console import errors
from cli.demo import demo
from cli.eval_memory import eval_memory
from cli.evals import eval_app
from cli.library import close_opened
from cli.memories import memories_app
from cli.profile import profile_app
from cli.threads import threads_app
from cli.users import users_app
from memora.api import close_shared
from memora.config import ConfigError, get_settings
from memora.redaction import install_log_redaction
from memora.storage.db import StoreError
from memora.validation import InvalidInput, check_arguments

app = typer.Typer(help="Memora: a chat agent with agentic long-term memory.", no_args_is_help=True)
app.add_typer(memories_app, name="memories")
app.add_typer(eval_app, name="eval")
eval_app.command("memory")(eval_memory)
app.add_typer(profile_app, name="profile")
app.add_typer(threads_app, name="threads")
app.add_typer(users_app, name="users")
app.command("chat")(chat)
app.command("demo")(demo)


def main() -> None:
    """Console entry point: known failures print one line and exit non-zero.

    Refused input (not valid UTF-8, over a limit, a malformed id) exits 2 before
    anything is stored.
    """
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
    except (StoreError, ConfigError, InvalidInput) as error:
        errors.print(f"memora: {error}", markup=False)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
