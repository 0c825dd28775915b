"""A scripted, OpenAI-compatible Chat Completions server for integration tests.

It listens on 127.0.0.1 (a ``ThreadingHTTPServer`` in a daemon thread) and answers
``POST /v1/chat/completions`` from a script, one entry per request, in order::

    {"tool": "search_memory", "arguments": {"query": "tennis"}}   # one tool call
    {"tool": "search_memory", "arguments": '{"query": '}          # raw (here broken) JSON
    {"tools": [{"tool": ..., "arguments": ...}, ...]}              # several tool calls
    {"text": "Done."}                                              # a text answer
    {"status": 500, "message": "boom"}                             # an HTTP error
    {"empty": True}                                                # empty content, no calls

Any entry may carry ``"id"`` (tool call ids; default ``call_<n>``), ``"usage"``
(``{"prompt_tokens", "completion_tokens"}``) and ``"delay"`` (seconds to wait before
answering: a client with a shorter timeout gives up, as on a slow model).
Instead of (or after) a fixed script, ``answer`` may be a function from the request body
to an entry: a scripted model that reads its prompt. Responses use the real wire format,
non-streaming or SSE (``"stream": true``), including tool-call deltas and the final
usage chunk when ``stream_options.include_usage`` is set.

Every request body is recorded in ``requests`` (parsed JSON) so tests can assert what
the client sent. A request the script has no entry for gets HTTP 500 and is noted in
``problems``, as is anything malformed; tests should assert ``problems == []``.

The server is bounded: request bodies over ``MAX_BODY_BYTES``, more than
``MAX_REQUESTS`` requests, and idle connections (socket timeout) are refused.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_BODY_BYTES = 2_000_000
MAX_REQUESTS = 200
SOCKET_TIMEOUT_S = 10.0
CHAT_PATH = "/v1/chat/completions"

Response = dict[str, Any]


# -- script entries -------------------------------------------------------------------


def tool_call(name: str, arguments: dict[str, Any] | str, *, id: str | None = None) -> Response:
    """A response with one tool call; ``arguments`` as a dict or a raw JSON string."""
    entry: Response = {"tool": name, "arguments": arguments}
    if id is not None:
        entry["id"] = id
    return entry


def tool_calls(*calls: Response) -> Response:
    """A response with several tool calls (each made with ``tool_call``)."""
    return {"tools": list(calls)}


def text(content: str) -> Response:
    """A plain text answer."""
    return {"text": content}


def error(status: int = 500, message: str = "scripted failure") -> Response:
    """An HTTP error with an OpenAI-style error body."""
    return {"status": status, "message": message}


def empty() -> Response:
    """An assistant message with empty content and no tool calls."""
    return {"empty": True}


# -- the server -----------------------------------------------------------------------


class FakeOpenAI:
    """The scripted server; use as a context manager or call ``start``/``stop``."""

    def __init__(
        self,
        script: Iterable[Response] = (),
        *,
        model: str = "gpt-4o-mini",
        answer: Callable[[dict[str, Any]], Response] | None = None,
        max_requests: int = MAX_REQUESTS,
    ) -> None:
        self.model = model
        self._script: deque[Response] = deque(script)
        self._answer = answer
        self._max_requests = max_requests
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.requests: list[dict[str, Any]] = []
        """Every parsed request body, in arrival order."""
        self.problems: list[str] = []
        """Unexpected requests: unscripted, malformed, wrong path, over the bounds."""
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # script -------------------------------------------------------------------------

    def push(self, *responses: Response) -> None:
        """Append responses to the script."""
        with self._lock:
            self._script.extend(responses)

    @property
    def remaining(self) -> int:
        """Script entries not yet served."""
        with self._lock:
            return len(self._script)

    def _next(self, body: dict[str, Any]) -> Response | None:
        with self._lock:
            self.requests.append(body)
            if len(self.requests) > self._max_requests:
                self.problems.append(f"more than {self._max_requests} requests")
                return None
            if not self._script and self._answer is not None:
                try:
                    return self._answer(body)
                except Exception as error:  # a broken scripted model is the test's problem
                    self.problems.append(f"answer failed: {type(error).__name__}: {error}")
                    return None
            if not self._script:
                self.problems.append(f"unscripted request #{len(self.requests)}")
                return None
            return self._script.popleft()

    # lifecycle ------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The ``OPENAI_BASE_URL`` for a client (ends in ``/v1``)."""
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(_Handler):
            server_fake = fake

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # wire format ----------------------------------------------------------------------

    def _tool_calls(self, entry: Response) -> list[dict[str, Any]]:
        calls = entry.get("tools", [entry])
        wire = []
        for call in calls:
            arguments = call.get("arguments", {})
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            wire.append(
                {
                    "id": call.get("id") or f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {"name": call["tool"], "arguments": arguments},
                }
            )
        return wire

    def _message(self, entry: Response) -> tuple[str | None, list[dict[str, Any]], str]:
        """(content, tool_calls, finish_reason) for a scripted answer."""
        if "tool" in entry or "tools" in entry:
            return None, self._tool_calls(entry), "tool_calls"
        if entry.get("empty"):
            return "", [], "stop"
        return str(entry["text"]), [], "stop"

    def completion(self, body: dict[str, Any], entry: Response) -> dict[str, Any]:
        content, calls, finish_reason = self._message(entry)
        message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
        if calls:
            message["tool_calls"] = calls
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "system_fingerprint": "fp_fake",
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
            ],
            "usage": _usage(entry),
        }

    def chunks(self, body: dict[str, Any], entry: Response) -> Iterator[dict[str, Any]]:
        content, calls, finish_reason = self._message(entry)
        base = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "system_fingerprint": "fp_fake",
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return {**base, "choices": [choice]}

        yield chunk({"role": "assistant", "content": "", "refusal": None})
        for piece in _pieces(content or ""):
            yield chunk({"content": piece})
        for index, call in enumerate(calls):
            head = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }
            yield chunk({"tool_calls": [head]})
            for piece in _pieces(call["function"]["arguments"], size=8):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, finish_reason)
        if (body.get("stream_options") or {}).get("include_usage"):
            yield {**base, "choices": [], "usage": _usage(entry)}


def _usage(entry: Response) -> dict[str, int]:
    usage = entry.get("usage") or {}
    prompt = int(usage.get("prompt_tokens", 11))
    completion = int(usage.get("completion_tokens", 7))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _pieces(value: str, size: int = 0) -> list[str]:
    """Split text into several stream deltas: by words, or by ``size`` characters."""
    if not value:
        return []
    if size:
        return [value[i : i + size] for i in range(0, len(value), size)]
    words = value.split(" ")
    return [word + (" " if i < len(words) - 1 else "") for i, word in enumerate(words)]


class _Handler(BaseHTTPRequestHandler):
    server_fake: FakeOpenAI
    timeout = SOCKET_TIMEOUT_S
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once: no 40 ms stall per answer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _fail(self, status: int, message: str, kind: str = "server_error") -> None:
        error = {"message": message, "type": kind, "param": None, "code": None}
        self._send_json(status, {"error": error})

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        self.server_fake.problems.append(f"GET {self.path}")
        self._fail(404, f"no route GET {self.path}", "invalid_request_error")

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        fake = self.server_fake
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            fake.problems.append(f"body of {length} bytes")
            self.close_connection = True
            self._fail(413, "request body too large", "invalid_request_error")
            return
        raw = self.rfile.read(length)
        if self.path.split("?")[0].rstrip("/") != CHAT_PATH:
            fake.problems.append(f"POST {self.path}")
            self._fail(404, f"no route POST {self.path}", "invalid_request_error")
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            fake.problems.append("request body is not JSON")
            self._fail(400, "body is not JSON", "invalid_request_error")
            return
        entry = fake._next(body)
        if entry is None:
            self._fail(500, "fake server: no scripted response left")
            return
        if entry.get("delay"):
            time.sleep(float(entry["delay"]))
        try:
            self._answer(fake, body, entry)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up waiting (its timeout)

    def _answer(self, fake: FakeOpenAI, body: dict[str, Any], entry: Response) -> None:
        if "status" in entry:
            self._fail(int(entry["status"]), str(entry.get("message", "scripted failure")))
            return
        if not body.get("stream"):
            self._send_json(200, fake.completion(body, entry))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for event in fake.chunks(body, entry):
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
