"""`memora mcp`: Memora's memory tools for MCP clients (Claude Desktop, Cursor, …)."""

from __future__ import annotations

from cli.console import UserOption
from cli.library import open_memora
from memora.validation import validate_user_id


def mcp(user: UserOption = "default") -> None:
    """Serve the memory tools over MCP on stdin/stdout, for one user.

    Deletions are requests: approve them with `memora memories pending`.
    """
    from agent.mcp_server import serve_stdio  # the MCP SDK loads only for this command

    serve_stdio(open_memora(), validate_user_id(user))
