"""`memora mcp`: Memora's memory tools for MCP clients (Claude Desktop, Cursor, …)."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.console import UserOption
from cli.library import open_memora
from memora.config import get_settings
from memora.validation import validate_user_id


def mcp(
    user: UserOption = "default",
    http: Annotated[
        bool,
        typer.Option(
            "--http", help="Serve streamable HTTP at /mcp, each request's user from its token."
        ),
    ] = False,
    host: Annotated[str, typer.Option(help="Address to listen on with --http.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port for --http.")] = 8765,
) -> None:
    """Serve the memory tools over MCP: on stdin/stdout for --user, or over HTTP with tokens.

    Deletions are requests: approve them with `memora memories pending`.
    """
    from agent.mcp_server import serve_http, serve_stdio  # the MCP SDK loads only here

    if http:
        serve_http(open_memora(), get_settings(), host=host, port=port)
    else:
        serve_stdio(open_memora(), validate_user_id(user))
