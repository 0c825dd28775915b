"""End to end: `memora mcp --user U` as a real stdio subprocess, driven by the MCP client SDK.

alice and bob each get their own server process on one data dir, open at the same time.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from agent.spotlight import unquote
from agent.tools import tool_schemas
from memora.api import Memora
from memora.config import load_settings

MEMORA = Path(sys.executable).parent / "memora"
REPO_ROOT = Path(__file__).resolve().parents[2]
MEMORY_TOOLS = {"search_memory", "remember_memory", "request_forget_memory"}
UNKNOWN_ID = "0123456789abcdef0123456789abcdef"


def _server(data: Path, user: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORA_")}
    env.update(MEMORA_DATA_DIR=str(data), ANONYMIZED_TELEMETRY="False")
    return StdioServerParameters(
        command=str(MEMORA), args=["mcp", "--user", user], env=env, cwd=str(REPO_ROOT)
    )


class Client:
    """One user's MCP session; ``call`` returns (is_error, parsed observation)."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, tool: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
        result = await self.session.call_tool(tool, arguments)
        text = "".join(block.text for block in result.content if block.type == "text")
        return bool(result.is_error), json.loads(text)


async def _open(stack: AsyncExitStack, data: Path, user: str, log: Any) -> Client:
    read, write = await stack.enter_async_context(stdio_client(_server(data, user), errlog=log))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return Client(session)


async def _scenario(data: Path, log: Any) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        alice = await _open(stack, data, "alice", log)
        bob = await _open(stack, data, "bob", log)
        seen["tools"] = (await alice.session.list_tools()).tools
        seen["stored"] = await alice.call(
            "remember_memory",
            content="I prefer concise answers",
            memory_type="semantic",
            reason="explicit_request",
        )
        seen["secret"] = await alice.call(
            "remember_memory",
            content="My bank password is hunter2-Zq9",
            memory_type="semantic",
            reason="explicit_request",
        )
        seen["extra_key"] = await alice.call("search_memory", query="answers", limit=50)
        seen["alice_search"] = await alice.call("search_memory", query="how do I like answers?")
        seen["bob_search"] = await bob.call("search_memory", query="how do I like answers?")
        memory_id = seen["stored"][1]["result"]["memory_id"]
        seen["bob_forget"] = await bob.call(
            "request_forget_memory", memory_id=memory_id, reason="asked"
        )
        seen["unknown_forget"] = await bob.call(
            "request_forget_memory", memory_id=UNKNOWN_ID, reason="asked"
        )
        seen["alice_forget"] = await alice.call(
            "request_forget_memory", memory_id=memory_id, reason="the user asked to forget it"
        )
        seen["after_request"] = await alice.call("search_memory", query="how do I like answers?")
        seen["not_a_tool"] = await alice.call("count_english_words", text="two words")
    return seen


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    base = tmp_path_factory.mktemp("mcp")
    with (base / "servers.log").open("w") as log:
        seen = anyio.run(_scenario, base / "data", log)
    return base / "data", seen


def test_the_tools_have_the_agents_schemas(run: tuple[Path, dict[str, Any]]) -> None:
    _, seen = run
    tools = {tool.name: tool for tool in seen["tools"]}
    assert set(tools) == MEMORY_TOOLS
    for schema in tool_schemas():
        function = schema["function"]
        if function["name"] in MEMORY_TOOLS:
            assert tools[function["name"]].input_schema == function["parameters"]
            assert tools[function["name"]].description == function["description"]


def test_remember_runs_the_policy_and_stores(run: tuple[Path, dict[str, Any]]) -> None:
    data, seen = run
    error, stored = seen["stored"]
    assert not error and stored["result"]["status"] == "stored"
    error, secret = seen["secret"]
    assert not error and secret["result"] == {"status": "rejected", "reason": "sensitive_data"}
    error, extra = seen["extra_key"]
    assert error and extra["ok"] is False and "limit" in extra["error"]
    error, other = seen["not_a_tool"]
    assert error and "unknown tool" in other["error"]
    memora = Memora(load_settings(data_dir=data))
    try:
        contents = [unit.content for unit in memora.list("alice")]
        assert contents == ["I prefer concise answers"]
        assert memora.list("alice")[0].source.actor == "mcp"
    finally:
        memora.close()


def test_search_is_the_users_own_and_quoted(run: tuple[Path, dict[str, Any]]) -> None:
    _, seen = run
    error, found = seen["alice_search"]
    assert not error and found["result"]["count"] == 1
    quoted = found["result"]["memories"][0]["content"]
    assert quoted.startswith("\u27e6data ") and unquote(quoted) == "I prefer concise answers"
    error, nothing = seen["bob_search"]
    assert not error and nothing["result"] == {"count": 0, "memories": []}


def test_another_users_id_looks_unknown(run: tuple[Path, dict[str, Any]]) -> None:
    _, seen = run
    assert seen["bob_forget"][0] is True
    assert seen["bob_forget"] == seen["unknown_forget"]


def test_forget_only_asks_and_says_where_to_approve(run: tuple[Path, dict[str, Any]]) -> None:
    data, seen = run
    error, asked = seen["alice_forget"]
    result = asked["result"]
    assert not error and result["status"] == "pending_approval"
    assert "memora memories pending --user alice" in result["note"] and "/ui" in result["note"]
    assert seen["after_request"][1]["result"]["count"] == 1  # still there
    memora = Memora(load_settings(data_dir=data))
    try:
        pending = memora.pending_forgets("alice")
        assert [(r.id, r.source) for r in pending] == [(result["request_id"], "mcp")]
        assert pending[0].reason == "the user asked to forget it"
        assert memora.pending_forgets("bob") == []
        assert memora.approve_forget("alice", pending[0].id)
        assert memora.count("alice") == 0
    finally:
        memora.close()
