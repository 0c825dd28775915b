"""The inspector's JSON API in-process (Starlette's test client), on a local data dir:
identity, isolation and one-line refusals that change nothing."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from starlette.testclient import TestClient

from graph.checkpointed import open_agent
from graph.inspector.app import Inspector, create_app
from graph.inspector.threads import LocalThreads
from memora.api import Memora
from memora.config import load_settings
from memora.identity import TokenVerifier
from memora.models import MemorySource, MemoryUnit
from tests.e2e.inspector_seed import seed_local

SECRET = "inspector-api-test-secret-0123456789abcdef"
JSON = {"Content-Type": "application/json"}
TEXT = {"Content-Type": "text/plain"}
"""What another site's page can send without a CORS preflight."""


def _bearer(sub: str) -> dict[str, str]:
    token = jwt.encode({"sub": sub, "exp": int(time.time()) + 600}, SECRET, algorithm="HS256")
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    data_dir = tmp_path / "data"
    return data_dir, seed_local(data_dir)


def _client(data_dir: Path, **inspector: Any) -> Iterator[tuple[TestClient, Memora]]:
    memora = Memora(load_settings(data_dir=data_dir))
    with open_agent(data_dir) as agent:
        app = create_app(Inspector(LocalThreads(agent, memora), memora=memora, **inspector))
        with TestClient(app) as client:
            yield client, memora
    memora.close()


@pytest.fixture
def local(seeded: tuple[Path, dict[str, str]]) -> Iterator[tuple[TestClient, Memora]]:
    yield from _client(seeded[0], local_user="alice")


@pytest.fixture
def authed(seeded: tuple[Path, dict[str, str]]) -> Iterator[tuple[TestClient, Memora]]:
    verifier = TokenVerifier(load_settings(data_dir=seeded[0], auth_secret=SECRET))
    yield from _client(seeded[0], verifier=verifier)


def _one_line(response: Any, status: int) -> str:
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, str) and detail and "\n" not in detail
    return detail


def test_memora_ui_serves_its_one_user_whatever_a_request_claims(
    local: tuple[TestClient, Memora],
) -> None:
    client, _ = local
    me = client.get("/ui/api/me", headers={"X-Memora-User": "bob"}).json()
    assert me == {"user_id": "alice", "auth": False, "user_header": False}
    texts = [m["content"] for m in client.get("/ui/api/memories").json()["memories"]]
    assert len(texts) == 2 and not [t for t in texts if "cello" in t]


def test_bad_input_gets_one_line_and_changes_nothing(
    local: tuple[TestClient, Memora], seeded: tuple[Path, dict[str, str]]
) -> None:
    client, memora = local
    ids = seeded[1]
    before = client.get("/ui/api/approvals").json()
    thread = before["pending"][0]["thread_id"]
    approve = json.dumps({"decision": "approve", "memory_id": before["pending"][0]["memory_id"]})
    refusals = [
        (client.post(f"/ui/api/approvals/{thread}", content=b"{not json", headers=JSON), 422),
        (client.post(f"/ui/api/approvals/{thread}", content=approve, headers=TEXT), 422),
        (client.post("/ui/api/erase", content=b'{"confirm": "alice"}', headers=TEXT), 422),
        (client.post(f"/ui/api/approvals/{thread}", json=["approve"]), 422),
        (client.post(f"/ui/api/approvals/{thread}", json={"decision": "approve"}), 422),
        (client.post(f"/ui/api/approvals/{thread}", json={"decision": "edit"}), 422),
        (client.post(f"/ui/api/approvals/{thread}", content=b"x" * 70_000, headers=JSON), 422),
        (client.get("/ui/api/memories?status=deleted"), 422),
        (client.get("/ui/api/memories?limit=-1"), 422),
        (client.get("/ui/api/memories?q=" + "x" * 5000), 422),
        (client.put("/ui/api/profile", json={"key": "city"}), 422),
        (client.delete("/ui/api/profile/never-set"), 404),
        (client.post("/ui/api/erase", json={"confirm": "ALICE"}), 422),
        (client.get("/ui/api/no-such-route"), 404),
    ]
    for response, status in refusals:
        _one_line(response, status)
    assert client.get("/ui/api/approvals").json() == before
    assert {u.id for u in memora.list("alice")} == {ids["Kaohsiung"], ids["oolong"]}


def test_with_a_token_each_user_sees_only_their_own(
    authed: tuple[TestClient, Memora], seeded: tuple[Path, dict[str, str]]
) -> None:
    client, memora = authed
    ids = seeded[1]
    assert "missing bearer token" in _one_line(client.get("/ui/api/memories"), 401)
    # The user header is a local-mode convenience: with authentication only the token counts.
    claimed = client.get("/ui/api/me", headers={**_bearer("bob"), "X-Memora-User": "alice"})
    assert claimed.json()["user_id"] == "bob"
    bob = _bearer("bob")
    foreign = client.get(f"/ui/api/memories/{ids['oolong']}", headers=bob)
    unknown = client.get("/ui/api/memories/0123456789abcdef", headers=bob)
    assert _one_line(foreign, 404).replace(ids["oolong"], "ID") == _one_line(unknown, 404).replace(
        "0123456789abcdef", "ID"
    )
    assert client.delete(f"/ui/api/memories/{ids['oolong']}", headers=bob).status_code == 404
    assert memora.get("alice", ids["oolong"]) is not None
    assert client.get("/ui/api/approvals", headers=bob).json() == {"pending": []}
    assert len(client.get("/ui/api/approvals", headers=_bearer("alice")).json()["pending"]) == 2


def test_forget_preview_lists_the_whole_history_chain(
    local: tuple[TestClient, Memora],
) -> None:
    client, memora = local
    first = memora.add("alice", "I work at Acme.", source=MemorySource(actor="cli")).memory_id
    second = memora.add("alice", "I work at Globex now.").memory_id
    assert first and second
    preview = client.get(f"/ui/api/memories/{second}/forget").json()
    chain = {memory["id"] for memory in preview["deletes"]}
    assert chain == {first, second}  # the update superseded the first: one chain of two
    detail = client.get(f"/ui/api/memories/{second}").json()
    assert chain == {memory["id"] for memory in detail["chain"]}
    deleted = client.delete(f"/ui/api/memories/{second}").json()["deleted"]
    assert set(deleted) == chain
    assert all(memora.get("alice", memory_id) is None for memory_id in chain)


def test_the_listing_pages_newest_first_and_filters(local: tuple[TestClient, Memora]) -> None:
    client, memora = local
    for colour in ("red", "green", "blue"):
        memora.add("alice", f"My brother's car is {colour}.")
    everything = client.get("/ui/api/memories").json()
    texts = [m["content"] for m in everything["memories"]]
    assert everything["total"] == len(texts) == 5 and "blue" in texts[0]
    page = client.get("/ui/api/memories?offset=1&limit=2").json()
    assert [m["content"] for m in page["memories"]] == texts[1:3] and page["total"] == 5
    assert client.get("/ui/api/memories?offset=9").json()["memories"] == []
    events = client.get("/ui/api/memories?type=episodic").json()
    assert events["memories"] == [] and events["total"] == 0
    facts = client.get("/ui/api/memories?type=semantic&offset=4").json()
    assert [m["content"] for m in facts["memories"]] == texts[4:] and facts["total"] == 5
    superseded = client.get("/ui/api/memories?status=superseded&q=brother car").json()
    assert superseded["memories"] == [] and superseded["search"] is True


def test_forgetting_in_the_inspector_takes_the_words_out_of_the_threads(tmp_path: Path) -> None:
    from langchain_core.messages import HumanMessage

    from graph.checkpointed import thread_records
    from nodes.state import Context

    data_dir = tmp_path / "data"
    memora = Memora(load_settings(data_dir=data_dir))
    with open_agent(data_dir) as agent:
        config = {"configurable": {"thread_id": "t1", "user_id": "alice"}}
        context = Context(user_id="alice", memora=memora, chat_model="offline")
        said = HumanMessage("Please remember that I live in Kaohsiung.")
        agent.invoke({"messages": [said]}, config, context=context)
        [memory] = [m for m in memora.list("alice") if "Kaohsiung" in m.content]
        app = create_app(Inspector(LocalThreads(agent, memora), memora=memora, local_user="alice"))
        with TestClient(app) as client:
            done = client.delete(f"/ui/api/memories/{memory.id}").json()
        assert done == {"deleted": [memory.id], "threads": 1}
        [thread] = thread_records(agent)
        assert "Kaohsiung" not in json.dumps([str(m.content) for m in thread.messages])
    memora.close()


def test_deletion_requests_from_the_store_are_answered_on_the_approvals_page(
    authed: tuple[TestClient, Memora],
) -> None:
    client, memora = authed
    alice, bob = _bearer("alice"), _bearer("bob")
    kept = memora.add("alice", "I play the oboe on Sundays.").memory_id or ""
    gone = memora.add("alice", "I collect enamel pins.").memory_id or ""
    asked = [memora.request_forget("alice", gone, reason="asked through MCP", source="mcp")]
    asked.append(memora.request_forget("alice", kept, reason="", source="store"))
    first, second = (request.id for request in asked if request is not None)
    listed = client.get("/ui/api/approvals", headers=alice).json()["pending"]
    requests = {item["request_id"]: item for item in listed if "request_id" in item}
    assert set(requests) == {first, second}
    assert requests[first]["source"] == "mcp" and "enamel" in requests[first]["preview"]
    assert all(
        "request_id" not in item
        for item in client.get("/ui/api/approvals", headers=bob).json()["pending"]
    )

    # Bob cannot answer alice's request: the same 404 as an unknown one.
    _one_line(
        client.post(
            f"/ui/api/requests/{first}", headers={**bob, **JSON}, json={"decision": "approve"}
        ),
        404,
    )
    _one_line(
        client.post(
            f"/ui/api/requests/{first}", headers={**alice, **JSON}, json={"decision": "maybe"}
        ),
        422,
    )
    rejected = client.post(
        f"/ui/api/requests/{second}", headers={**alice, **JSON}, json={"decision": "reject"}
    ).json()
    assert rejected["deleted"] == [] and memora.get("alice", kept) is not None
    approved = client.post(
        f"/ui/api/requests/{first}", headers={**alice, **JSON}, json={"decision": "approve"}
    ).json()
    assert approved["deleted"] == [gone] and memora.get("alice", gone) is None
    left = client.get("/ui/api/approvals", headers=alice).json()["pending"]
    assert all("request_id" not in item for item in left)


def test_a_request_on_the_approvals_page_names_the_older_versions_it_deletes(
    local: tuple[TestClient, Memora],
) -> None:
    client, memora = local
    first = memora.add("alice", "I work at Acme.").memory_id or ""
    second = memora.add("alice", "I work at Globex now.", replaces=first).memory_id or ""
    third = memora.add("alice", "I work at Initech now.", replaces=second).memory_id or ""
    memora.request_forget("alice", second, reason="wrong", source="store")
    [item] = [i for i in client.get("/ui/api/approvals").json()["pending"] if "request_id" in i]
    assert item["also_deletes"] == ["I work at Acme."]  # not the newer Initech
    assert client.get(f"/ui/api/memories/{third}").json()["chain"]  # the history stays whole


def test_the_forget_button_deletes_only_the_versions_its_confirmation_listed(
    local: tuple[TestClient, Memora],
) -> None:
    client, memora = local
    memora.ingest([
        MemoryUnit(id="m-old", user_id="alice", content="I live in Kaohsiung.",
                   source=MemorySource(actor="test")),
        MemoryUnit(id="m-new", user_id="alice", content="I live in Taipei now.",
                   source=MemorySource(actor="test"), needs_review=True,
                   metadata={"review_targets": ["m-old"]}),
    ])  # fmt: skip
    listed = [m["id"] for m in client.get("/ui/api/memories/m-new/forget").json()["deletes"]]
    assert listed == ["m-new"]
    assert memora.resolve_review("alice", "m-new", accept=True)  # linked while the dialog is open
    assert {u.id for u in memora.chain("alice", "m-new")} == {"m-old", "m-new"}
    refused = client.delete("/ui/api/memories/m-new?versions=m-old")
    assert _one_line(refused, 422).startswith("versions must list the memory itself")
    done = client.delete("/ui/api/memories/m-new?versions=" + ",".join(listed)).json()
    assert done["deleted"] == ["m-new"]
    assert memora.get("alice", "m-old") is not None
