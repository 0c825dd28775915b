"""The inspector as ``langgraph.json`` → ``http.app`` serves it, beside the graph.

Built when the server imports this module (not when ``memora ui`` imports the app), so a bad
setting stops the server with its one-line reason, as ``graph.auth`` does.
"""

from __future__ import annotations

from starlette.applications import Starlette

from graph.inspector.app import Inspector, create_app
from graph.inspector.threads import ServerThreads
from memora.config import get_settings
from memora.identity import TokenVerifier


def server_app() -> Starlette:
    """The app ``langgraph dev`` serves beside the graph, under the graph's identity rules."""
    settings = get_settings()
    verifier = TokenVerifier(settings) if settings.auth_enabled else None
    threads = ServerThreads(settings.auth_enabled)
    return create_app(Inspector(threads, verifier=verifier, user_header=True))


app = server_app()
