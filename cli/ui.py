"""`memora ui`: the memory inspector for the local data dir, in the browser.

The same app ``langgraph dev`` serves at ``/ui``, here for one local user: approvals
resume the local checkpointed graph, as ``memora chat`` does.
"""

from __future__ import annotations

from typing import Annotated

import typer
import uvicorn
from starlette.middleware.trustedhost import TrustedHostMiddleware

from cli.console import UserOption, console
from cli.library import open_memora
from graph.checkpointed import open_agent
from graph.inspector.app import Inspector, create_app
from graph.inspector.threads import LocalThreads
from memora.config import get_settings
from memora.validation import validate_user_id


def ui(
    user: UserOption = "default",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8765,
    host: Annotated[
        str, typer.Option(help="Address to listen on (anyone who reaches it sees USER's memory).")
    ] = "127.0.0.1",
) -> None:
    """Open the memory inspector for USER's local memories at http://HOST:PORT/ui/."""
    validate_user_id(user)
    settings = get_settings()
    memora = open_memora()
    with open_agent(settings.data_dir, settings.database_url) as agent:
        inspector = Inspector(LocalThreads(agent, memora), memora=memora, local_user=user)
        console.print(f"Memory inspector for {user}: http://{host}:{port}/ui/", markup=False)
        # Only requests addressed to this host: a page on another site cannot reach the
        # unauthenticated API by pointing its own name at this address (DNS rebinding).
        app = TrustedHostMiddleware(create_app(inspector), allowed_hosts=[host, "localhost"])
        uvicorn.run(app, host=host, port=port, log_level="warning")
