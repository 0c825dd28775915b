"""The inspector at /ui under `langgraph dev` with authentication on, in a real browser.

alice and bob hold their own signed tokens. alice has two conversations paused on a
deletion each and answers them in the browser (one approved, one rejected); bob has one
of his own. Nobody sees anything without a token, and bob sees none of alice's data.
The tests share one server and run in file order.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient
from playwright.sync_api import Browser, Page, expect

from tests.e2e.browser import PHONE, browser  # noqa: F401  (the fixture)
from tests.e2e.inspector_seed import (
    CELLO,
    FORGET_KAOHSIUNG,
    FORGET_OOLONG,
    KAOHSIUNG,
    OOLONG,
)
from tests.e2e.langgraph_server import REPO_ROOT, Server, langgraph_dev

SECRET = "test-secret-for-the-memora-inspector-0123456789"
ASSISTANT = "memora"
FORGET_CELLO = "Please forget that I play the cello."
README_SCREENSHOT = REPO_ROOT / "docs" / "images" / "inspector.png"


def _update_readme_images() -> bool:
    """The README's screenshots are rewritten when asked (UPDATE_README_IMAGES=1) or missing,
    so a test run leaves the work tree clean; each run keeps its own under the tmp dir."""
    return os.environ.get("UPDATE_README_IMAGES") == "1" or not README_SCREENSHOT.exists()


def _token(sub: str) -> str:
    return jwt.encode({"sub": sub, "exp": int(time.time()) + 3600}, SECRET, algorithm="HS256")


TOKENS = {"alice": _token("alice"), "bob": _token("bob")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("inspector_server")
    with langgraph_dev(base, {"MEMORA_AUTH_SECRET": SECRET}) as running:
        yield running


def _sdk(server: Server, user: str) -> SyncLangGraphClient:
    headers = {"Authorization": f"Bearer {TOKENS[user]}"}
    return get_sync_client(url=server.url, timeout=httpx.Timeout(60.0), headers=headers)


def _turn(client: SyncLangGraphClient, text: str, thread_id: str | None = None) -> str:
    thread_id = thread_id or client.threads.create()["thread_id"]
    message = {"messages": [{"role": "user", "content": text}]}
    result = client.runs.wait(thread_id, ASSISTANT, input=message)
    assert isinstance(result, dict) and result["stop_reason"] == "final_answer", result
    return thread_id


def _pending(client: SyncLangGraphClient, thread_id: str) -> list[dict[str, Any]]:
    tasks = client.threads.get_state(thread_id)["tasks"]
    return [i["value"] for task in tasks for i in task.get("interrupts") or []]


def _api(server: Server, path: str, user: str | None, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {TOKENS[user]}"} if user else {}
    method = "POST" if "json" in kwargs else "GET"
    url = f"{server.url}/ui/api{path}"
    return httpx.request(method, url, headers=headers, timeout=60, **kwargs)


@pytest.fixture(scope="module")
def seeded(server: Server) -> dict[str, str]:
    """alice: two memories, each with a paused deletion; bob: one, with a paused deletion."""
    alice, bob = _sdk(server, "alice"), _sdk(server, "bob")
    # `langgraph dev` keeps threads in the repository's .langgraph_api between runs; an
    # earlier run's alice and bob would still have theirs, with deletions still paused.
    for client in (alice, bob):
        for thread in client.threads.search(limit=1000):
            client.threads.delete(thread["thread_id"])
    first = _turn(alice, KAOHSIUNG)
    _turn(alice, OOLONG, first)
    threads = {"kaohsiung": _turn(alice, FORGET_KAOHSIUNG), "oolong": _turn(alice, FORGET_OOLONG)}
    _turn(bob, CELLO)
    threads["cello"] = _turn(bob, FORGET_CELLO)
    for name, thread_id in list(threads.items()):
        client = bob if name == "cello" else alice
        [request] = _pending(client, thread_id)
        threads[f"{name}-memory"] = request["memory_id"]
        # LangChain's human-in-the-loop request, beside Memora's own fields.
        assert request["review_configs"][0]["allowed_decisions"] == ["approve", "reject"]
        assert request["action_requests"][0]["args"]["memory_id"] == request["memory_id"]
    return threads


PAGE_ERRORS: dict[int, list[str]] = {}


def _open(browser: Browser, server: Server, **context: Any) -> Page:  # noqa: F811
    page = browser.new_context(**context).new_page()
    errors = PAGE_ERRORS.setdefault(id(page), [])
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{server.url}/ui/")
    return page


def _close(page: Page) -> None:
    page.context.close()
    assert PAGE_ERRORS.pop(id(page)) == [], "the page's script failed"


def _signed_in(browser: Browser, server: Server, user: str, **context: Any) -> Page:  # noqa: F811
    page = _open(browser, server, **context)
    expect(page.locator("#sign-in")).to_be_visible()
    page.fill("#token", TOKENS[user])
    page.click("#sign-in-form button")
    expect(page.locator("#user-id")).to_have_text(f"Signed in as {user}")
    return page


def test_without_a_token_nothing_is_shown(
    browser: Browser,  # noqa: F811
    server: Server,
    seeded: dict[str, str],
) -> None:
    page = _open(browser, server)
    expect(page.locator("#sign-in")).to_be_visible()
    expect(page.locator("#tabs")).to_be_hidden()
    expect(page.locator("#error")).to_be_hidden()
    for word in ("Kaohsiung", "oolong", "cello"):
        assert word not in page.content()
    for path in ("/me", "/memories", "/approvals", "/profile", "/export"):
        response = _api(server, path, None)
        assert response.status_code == 401, (path, response.text)
        assert "missing bearer token" in response.json()["detail"]
    page.fill("#token", "not.a.jwt")
    page.click("#sign-in-form button")
    expect(page.locator("#error")).to_have_text("malformed bearer token")
    expect(page.locator("#sign-in")).to_be_visible()
    expect(page.locator("#memory-list li")).to_have_count(0)
    _close(page)


def test_alice_sees_her_memories_and_both_pending_deletions(
    browser: Browser,  # noqa: F811
    server: Server,
    seeded: dict[str, str],
    tmp_path: Path,
) -> None:
    page = _signed_in(browser, server, "alice", viewport={"width": 1000, "height": 720})
    expect(page.locator("#memory-list li.memory")).to_have_count(2)
    expect(page.locator("#pending-count")).to_have_text("2")
    assert "cello" not in page.content()
    artifact = tmp_path / "inspector.png"
    page.screenshot(path=str(artifact), full_page=True)
    assert artifact.stat().st_size > 10_000
    if _update_readme_images():
        README_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(artifact, README_SCREENSHOT)
    _close(page)


def test_alice_approves_one_deletion_and_rejects_the_other_in_the_browser(
    browser: Browser,  # noqa: F811
    server: Server,
    seeded: dict[str, str],
    tmp_path: Path,
) -> None:
    page = _signed_in(browser, server, "alice", viewport=PHONE)
    page.click("nav a[data-tab=approvals]")
    cards = page.locator("#approval-list li.approval")
    expect(cards).to_have_count(2)
    assert "cello" not in page.content()
    approvals = tmp_path / "inspector-approvals.png"
    page.screenshot(path=str(approvals))
    if _update_readme_images():
        shutil.copyfile(approvals, README_SCREENSHOT.with_name(approvals.name))
    cards.filter(has_text="Kaohsiung").get_by_role("button", name="Approve").click()
    expect(page.locator("#notice")).to_have_text("Deleted: The user lives in Kaohsiung.")
    expect(cards).to_have_count(1)
    cards.filter(has_text="oolong").get_by_role("button", name="Reject").click()
    expect(page.locator("#notice")).to_contain_text("Kept:")
    expect(page.locator("#approval-list")).to_have_text("No deletion awaits your approval.")
    page.click("nav a[data-tab=memories]")
    expect(page.locator("#memory-list li.memory")).to_have_count(1)
    expect(page.locator("#memory-list")).to_contain_text("oolong")
    page.click("#sign-out")
    expect(page.locator("#sign-in")).to_be_visible()
    assert "oolong" not in page.content()  # nothing of alice stays, shown or hidden
    _close(page)
    # The threads resumed as the chat resumes them: finished, with the turn's reply.
    alice = _sdk(server, "alice")
    for name, outcome in (("kaohsiung", "Memory deleted"), ("oolong", "Memory kept")):
        assert _pending(alice, seeded[name]) == []
        assert outcome in alice.threads.get_state(seeded[name])["values"]["reply"]
    assert _api(server, f"/memories/{seeded['kaohsiung-memory']}", "alice").status_code == 404
    assert _api(server, f"/memories/{seeded['oolong-memory']}", "alice").status_code == 200


def test_bob_sees_none_of_alices_data(
    browser: Browser,  # noqa: F811
    server: Server,
    seeded: dict[str, str],
) -> None:
    page = _signed_in(browser, server, "bob")
    expect(page.locator("#memory-list li.memory")).to_have_count(1)
    expect(page.locator("#memory-list")).to_contain_text("cello")
    page.click("nav a[data-tab=approvals]")
    expect(page.locator("#approval-list li.approval")).to_have_count(1)
    expect(page.locator("#approval-list")).to_contain_text("cello")
    for word in ("Kaohsiung", "oolong"):
        assert word not in page.content()
    _close(page)
    alices = seeded["oolong-memory"]
    foreign = _api(server, f"/memories/{alices}", "bob")
    unknown = _api(server, "/memories/no-such-memory", "bob")
    assert foreign.status_code == unknown.status_code == 404
    assert "oolong" not in foreign.text
    preview = _api(server, f"/memories/{alices}/forget", "bob")
    assert preview.status_code == 404 and "oolong" not in preview.text
    answer = {"decision": "approve", "memory_id": alices}
    resumed = _api(server, f"/approvals/{seeded['oolong']}", "bob", json=answer)
    assert resumed.status_code == 404, resumed.text
    found = _api(server, "/memories", "bob", params={"q": "favourite tea oolong"}).json()
    assert found["memories"] == []
    exported = _api(server, "/export", "bob").json()
    assert "oolong" not in str(exported) and "Kaohsiung" not in str(exported)
    assert {t["thread_id"] for t in exported["threads"]} >= {seeded["cello"]}
    assert _api(server, f"/memories/{alices}", "alice").status_code == 200


def test_the_standard_decision_resumes_through_the_sdk_too(
    server: Server, seeded: dict[str, str]
) -> None:
    bob = _sdk(server, "bob")
    decision = {"decisions": [{"type": "reject", "message": "keep it"}]}
    result = bob.runs.wait(seeded["cello"], ASSISTANT, command={"resume": decision})
    assert isinstance(result, dict) and "Memory kept" in result["reply"]
    assert _pending(bob, seeded["cello"]) == []
    assert _api(server, f"/memories/{seeded['cello-memory']}", "bob").status_code == 200
    assert _api(server, "/approvals", "bob").json() == {"pending": []}
