"""End to end: `memora mcp --http` behind the server's bearer tokens, driven by the MCP client SDK
over streamable HTTP; each request acts for its token's user."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import jwt
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.langgraph_server import REPO_ROOT
from tests.e2e.test_mcp_stdio import MEMORA, UNKNOWN_ID
from tests.integration.test_cli import one_error_line, run

SECRET = "test-secret-for-memora-mcp-http-0123456789"
REMEMBER = {"memory_type": "semantic", "reason": "explicit_request"}


def _token(user: str, secret: str = SECRET) -> str:
    return jwt.encode({"sub": user, "exp": int(time.time() + 3600)}, secret, "HS256")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"memora mcp --http exited: {log.read_text(errors='replace')[-3000:]}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    pytest.fail("memora mcp --http did not listen within 60 s")


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("mcp_http")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORA_")}
    env.update(
        MEMORA_DATA_DIR=str(base / "data"), MEMORA_AUTH_SECRET=SECRET, ANONYMIZED_TELEMETRY="False"
    )
    port = _free_port()
    log = base / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(MEMORA), "mcp", "--http", "--port", str(port)],
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_for(port, process, log)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=20)


async def _calls(url: str, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    headers = {"Authorization": f"Bearer {token}"}
    results = []
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for tool, arguments in calls:
            result = await session.call_tool(tool, arguments)
            text = "".join(block.text for block in result.content if block.type == "text")
            results.append((bool(result.is_error), json.loads(text)))
    return results


def _as(url: str, user: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    return anyio.run(_calls, url, _token(user), list(calls))


def test_each_request_acts_for_its_tokens_user(url: str) -> None:
    [(error, stored)] = _as(
        url, "alice", ("remember_memory", {"content": "I prefer concise answers", **REMEMBER})
    )
    assert not error and stored["result"]["status"] == "stored"
    memory_id = stored["result"]["memory_id"]
    query = {"query": "how do I like answers?"}
    [(_, found)] = _as(url, "alice", ("search_memory", query))
    assert found["result"]["count"] == 1
    bob = _as(
        url,
        "bob",
        ("search_memory", query),
        ("request_forget_memory", {"memory_id": memory_id, "reason": "asked"}),
        ("request_forget_memory", {"memory_id": UNKNOWN_ID, "reason": "asked"}),
    )
    assert bob[0] == (False, {"ok": True, "result": {"count": 0, "memories": []}})
    assert bob[1][0] is True and bob[1] == bob[2]
    [(error, asked)] = _as(
        url, "alice", ("request_forget_memory", {"memory_id": memory_id, "reason": "asked"})
    )
    assert not error and asked["result"]["status"] == "pending_approval"


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer not-a-jwt"},
        {"Authorization": f"Bearer {_token('eve', 'x' * 40)}"},
    ],
)
def test_a_request_without_a_valid_token_gets_401(url: str, headers: dict[str, str]) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    response = httpx.post(url, json=body, headers={"Accept": "application/json", **headers})
    assert response.status_code == 401


def test_http_without_token_settings_refuses_to_start(tmp_path: Path) -> None:
    line = one_error_line(run(tmp_path / "data", "mcp", "--http"))
    assert "MEMORA_AUTH_SECRET" in line
