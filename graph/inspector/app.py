"""The inspector's ASGI app: the page at ``/ui``, its files, and its JSON API at ``/ui/api``.

Under ``langgraph dev`` (``langgraph.json`` → ``http.app``, built in ``graph.inspector.server``)
it runs inside the server, beside the graph. The server does not authenticate custom routes,
so every API call here verifies the same bearer token the graph's auth does
(``memora.identity.TokenVerifier``) and serves only the user it proves; with no
authentication configured it serves the local user, as the graph does. The page itself
holds no data: it is the same file for everyone.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from graph.errors import http_status_for
from graph.inspector import service
from graph.inspector.threads import Threads, resume_value
from memora.api import Memora, shared_memora
from memora.config import get_settings
from memora.errors import InvalidInput, MemoraError
from memora.identity import TokenVerifier
from memora.validation import validate_user_id
from nodes.common import DEFAULT_USER

logger = logging.getLogger("memora.inspector")

STATIC_DIR = Path(__file__).parent / "static"
MAX_BODY_BYTES = 64 * 1024
USER_HEADER = "x-memora-user"
SECURITY_HEADERS = {
    # Everything ships with the package: nothing may load from anywhere else.
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        "frame-ancestors 'none'; form-action 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}

Handler = Callable[["Inspector", Request, str], Awaitable[Any]]


class Inspector:
    """Who a request is, the library and the threads it reaches."""

    def __init__(
        self,
        threads: Threads,
        *,
        memora: Memora | None = None,
        verifier: TokenVerifier | None = None,
        local_user: str = DEFAULT_USER,
        user_header: bool = False,
    ) -> None:
        self.threads = threads
        self._memora = memora
        self.verifier = verifier
        self.local_user = local_user
        self.user_header = user_header and verifier is None
        """Without authentication, whether a request may name its user (``X-Memora-User``),
        as a graph run may name it in ``configurable.user_id`` on such a server."""

    @property
    def memora(self) -> Memora:
        """The library: the one given, else the process-wide one the graph's nodes share."""
        return self._memora or shared_memora(get_settings())

    async def user_of(self, request: Request) -> str:
        """The user the bearer token proves, or the local user without authentication.

        Raises:
            InvalidToken: Authentication is on and the token is missing or does not verify.
            InvalidInput: Without authentication, the user a request names is not a valid id.
        """
        if self.verifier is None:
            claimed = request.headers.get(USER_HEADER) if self.user_header else None
            return validate_user_id(claimed) if claimed else self.local_user
        header = request.headers.get("authorization")
        return await asyncio.to_thread(self.verifier.user_id, header)

    async def call(self, work: Callable[..., Any], *args: Any) -> Any:
        """Run blocking library work off the event loop."""
        return await asyncio.to_thread(work, self.memora, *args)


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers=SECURITY_HEADERS)


def _error(status: int, detail: str) -> JSONResponse:
    return _json({"detail": " ".join(detail.split())}, status)


async def body_of(request: Request) -> dict[str, Any]:
    """The request's JSON object body.

    Raises:
        InvalidInput: The body is not declared as JSON, is too long, not JSON, or not an object.
    """
    # A page on another site may send a "simple" text/plain POST without asking first; one
    # declared as JSON needs the browser's CORS preflight, which this app never grants.
    if not request.headers.get("content-type", "").startswith("application/json"):
        raise InvalidInput("the request body must be sent as application/json")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise InvalidInput("the request body is too long")
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise InvalidInput("the request body is too long")
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("the request body must be JSON") from None
    if not isinstance(body, dict):
        raise InvalidInput("the request body must be a JSON object")
    return body


def endpoint(inspector: Inspector, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """An API route: the user proved first, known failures as one-line JSON errors."""

    async def run(request: Request) -> Response:
        try:
            user_id = await inspector.user_of(request)
            return _json(await handler(inspector, request, user_id))
        except MemoraError as error:
            return _error(http_status_for(error), str(error))
        except Exception:
            logger.exception("inspector request failed: %s %s", request.method, request.url.path)
            return _error(500, "the inspector failed; the server log has the details")

    return run


# -- handlers: each gets the proved user and returns JSON-ready data -------------------


async def me(inspector: Inspector, request: Request, user_id: str) -> Any:
    """Who the request is, and whether the server checks tokens."""
    return {
        "user_id": user_id,
        "auth": inspector.verifier is not None,
        "user_header": inspector.user_header,
    }


async def memories(inspector: Inspector, request: Request, user_id: str) -> Any:
    """The user's memories, filtered or searched (``service.list_memories``)."""
    params = dict(request.query_params)
    return await inspector.call(service.list_memories, user_id, params)


async def memory(inspector: Inspector, request: Request, user_id: str) -> Any:
    """One memory with its history and audit trail; DELETE forgets it and its older versions."""
    memory_id = request.path_params["memory_id"]
    if request.method == "DELETE":
        # The conversations first: a forget cut short can be run again, the memory is still there.
        # ?versions=: the ids the confirmation listed, the most that may go.
        listed = request.query_params.get("versions")
        shown = None if listed is None else [v for v in listed.split(",") if v]
        words = await inspector.call(service.words_of_memory, user_id, memory_id, shown)
        threads = await inspector.threads.forget_words(user_id, words["ids"], words["texts"])
        done = await inspector.call(service.forget, user_id, memory_id, words["ids"])
        return {**done, "threads": threads}
    return await inspector.call(service.memory_detail, user_id, memory_id)


async def forget_preview(inspector: Inspector, request: Request, user_id: str) -> Any:
    """Everything forgetting this memory would delete."""
    memory_id = request.path_params["memory_id"]
    return await inspector.call(service.forget_preview, user_id, memory_id)


async def approvals(inspector: Inspector, request: Request, user_id: str) -> Any:
    """Every deletion awaiting this user's answer: across their threads, and the requests
    made through the store or MCP."""
    paused = await inspector.threads.pending(user_id)
    return {"pending": paused + await inspector.call(service.forget_requests, user_id)}


async def decide_request(inspector: Inspector, request: Request, user_id: str) -> Any:
    """Answer one deletion request made outside a conversation."""
    body = await body_of(request)
    request_id = request.path_params["request_id"]
    decision = body.get("decision")
    threads = 0
    if decision == "approve":  # the conversations first, as for a memory's own forget
        words = await inspector.call(service.words_of_request, user_id, request_id)
        if words["ids"]:
            threads = await inspector.threads.forget_words(user_id, words["ids"], words["texts"])
    done = await inspector.call(service.decide_request, user_id, request_id, decision)
    if done["deleted"]:
        done["threads"] = threads
    return {**done, "request_id": request_id}


async def decide(inspector: Inspector, request: Request, user_id: str) -> Any:
    """Answer one pending deletion with the standard decision and resume its thread."""
    body = await body_of(request)
    resume = resume_value(body)
    memory_id = body.get("memory_id")
    if not isinstance(memory_id, str):
        raise InvalidInput("the answer must name the memory_id it answers; nothing was changed")
    thread_id = request.path_params["thread_id"]
    result = await inspector.threads.decide(user_id, thread_id, memory_id, resume)
    # The turn's output does not list what it deleted; the library says whether it is gone.
    kept = await inspector.call(Memora.get, user_id, memory_id)
    return {**result, "memory_id": memory_id, "deleted": kept is None}


async def profile(inspector: Inspector, request: Request, user_id: str) -> Any:
    """The user's profile; PUT sets one field, DELETE removes one."""
    if request.method == "PUT":
        return await inspector.call(service.set_profile, user_id, await body_of(request))
    if request.method == "DELETE":
        key = request.path_params.get("key", "")
        return await inspector.call(service.unset_profile, user_id, key)
    return {"profile": await inspector.call(Memora.get_profile, user_id)}


async def export(inspector: Inspector, request: Request, user_id: str) -> Any:
    """Everything held of the user, threads included (``memora users export``)."""
    data = await inspector.call(Memora.export_user, user_id)
    data["threads"] = await inspector.threads.export(user_id)
    return data


async def erase(inspector: Inspector, request: Request, user_id: str) -> Any:
    """Remove everything of the user, after the typed confirmation."""
    service.check_erase_confirmation(user_id, await body_of(request))
    threads = await inspector.threads.erase(user_id)
    report = await inspector.call(Memora.erase_user, user_id)
    report.threads = threads
    return {"erased": dataclasses.asdict(report)}


API: list[tuple[str, Handler, list[str]]] = [
    ("/me", me, ["GET"]),
    ("/memories", memories, ["GET"]),
    ("/memories/{memory_id}", memory, ["GET", "DELETE"]),
    ("/memories/{memory_id}/forget", forget_preview, ["GET"]),
    ("/approvals", approvals, ["GET"]),
    ("/approvals/{thread_id}", decide, ["POST"]),
    ("/requests/{request_id}", decide_request, ["POST"]),
    ("/profile", profile, ["GET", "PUT"]),
    ("/profile/{key}", profile, ["DELETE"]),
    ("/export", export, ["GET"]),
    ("/erase", erase, ["POST"]),
]


async def page(request: Request) -> Response:
    """The single page; the same file for everyone (the data comes from the API)."""
    return FileResponse(STATIC_DIR / "index.html", headers=SECURITY_HEADERS)


async def to_page(request: Request) -> Response:
    """``/ui`` without its slash goes to the page."""
    return RedirectResponse("/ui/")


async def unknown_api(request: Request) -> Response:
    """A one-line 404 for any other API path."""
    return _error(404, "no such inspector API")


class WithHeaders:
    """An ASGI wrapper adding the security headers to every response of the app it wraps
    (here the static files; a Starlette middleware would reach the whole server's routes)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                extra = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, with_headers)


def create_app(inspector: Inspector) -> Starlette:
    """The inspector's routes, all under ``/ui`` (the graph's own routes stay untouched)."""
    api = [
        Route(path, endpoint(inspector, handler), methods=methods) for path, handler, methods in API
    ]
    api.append(Route("/{rest:path}", unknown_api, methods=["GET", "POST", "PUT", "DELETE"]))
    return Starlette(
        routes=[
            Route("/ui", to_page),
            Route("/ui/", page),
            Mount("/ui/api", routes=api),
            Mount("/ui/static", WithHeaders(StaticFiles(directory=STATIC_DIR))),
        ]
    )
