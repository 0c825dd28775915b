"""`memora ui` in a real browser: the inspector for one local user's data dir.

alice's two conversations are paused on a deletion each; bob has a memory of his own.
The tests share one `memora ui` process and one phone-sized page, and run in file order.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from memora.api import Memora
from memora.config import load_settings
from memora.models import MemoryUnit
from tests.e2e.browser import PHONE, browser  # noqa: F401  (the fixture)
from tests.e2e.inspector_seed import seed_local

MEMORA = str(Path(sys.executable).with_name("memora"))


@dataclass
class LocalInspector:
    url: str
    data_dir: Path
    ids: dict[str, str]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"memora ui exited early:\n{log.read_text(errors='replace')}")
        try:
            if httpx.get(f"{url}/ui/api/me", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    pytest.fail(f"memora ui did not answer:\n{log.read_text(errors='replace')}")


@pytest.fixture(scope="module")
def inspector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalInspector]:
    base = tmp_path_factory.mktemp("inspector_local")
    data_dir = base / "data"
    ids = seed_local(data_dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEMORA_"))}
    env["MEMORA_DATA_DIR"] = str(data_dir)
    port = _free_port()
    log = base / "ui.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [MEMORA, "ui", "--user", "alice", "--port", str(port)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(url, process, log)
        yield LocalInspector(url, data_dir, ids)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)


@pytest.fixture(scope="module")
def page(browser: Browser, inspector: LocalInspector) -> Iterator[Page]:  # noqa: F811
    context = browser.new_context(viewport=PHONE, accept_downloads=True)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto(f"{inspector.url}/ui/")
    yield opened
    context.close()
    assert errors == [], errors  # the page's script never failed


def _cards(page: Page, selector: str = "#memory-list li.memory") -> list[str]:
    return [text.strip() for text in page.locator(f"{selector} .text").all_inner_texts()]


def test_the_local_user_is_served_without_a_sign_in(page: Page) -> None:
    expect(page.locator("#user-id")).to_have_text("Signed in as alice (local)")
    expect(page.locator("#sign-in")).to_be_hidden()
    expect(page.locator("#memory-list li.memory")).to_have_count(2)
    texts = " ".join(_cards(page))
    assert "Kaohsiung" in texts and "oolong" in texts and "cello" not in texts
    expect(page.locator("#pending-count")).to_have_text("2")
    # Readable on a phone: nothing wider than the screen.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_search_uses_recall_and_history_shows_where_a_memory_came_from(page: Page) -> None:
    page.click("nav a[data-tab=memories]")
    page.fill("#query", "where do I live?")
    page.click("#search-form button")
    expect(page.locator("#memory-summary")).to_contain_text("matches")
    assert [t for t in _cards(page) if "Kaohsiung" in t] and not [
        t for t in _cards(page) if "oolong" in t
    ]
    page.locator("#memory-list li.memory", has_text="Kaohsiung").get_by_text("History").click()
    expect(page.locator("#detail-chain li")).to_have_count(1)
    expect(page.locator("#detail-chain")).to_contain_text("from conversation alice-1, turn 1")
    expect(page.locator("#detail-audit li.audit-write")).to_contain_text("alice-1")
    # The forget request searched for it: that search is in the trail, with its query.
    expect(page.locator("#detail-audit li.audit-read").first).to_contain_text("alice-2")
    page.click("nav a[data-tab=memories]")  # the address has not changed: the tab still opens
    expect(page.locator("#memories")).to_be_visible()
    expect(page.locator("#detail")).to_be_hidden()


def test_approve_one_deletion_and_reject_the_other(page: Page, inspector: LocalInspector) -> None:
    page.click("nav a[data-tab=approvals]")
    cards = page.locator("#approval-list li.approval")
    expect(cards).to_have_count(2)
    cards.filter(has_text="Kaohsiung").get_by_role("button", name="Approve").click()
    expect(page.locator("#notice")).to_contain_text("Deleted: The user lives in Kaohsiung.")
    expect(cards).to_have_count(1)
    cards.filter(has_text="oolong").get_by_role("button", name="Reject").click()
    expect(page.locator("#notice")).to_contain_text("Kept:")
    expect(page.locator("#approval-list")).to_have_text("No deletion awaits your approval.")
    expect(page.locator("#pending-count")).to_have_text("")
    page.click("nav a[data-tab=memories]")
    page.fill("#query", "")  # the earlier search's words
    page.click("#search-form button")
    expect(page.locator("#memory-list li.memory")).to_have_count(1)
    assert "oolong" in _cards(page)[0]


def test_a_request_made_through_mcp_is_approved_on_the_same_page(
    page: Page, inspector: LocalInspector
) -> None:
    memora = Memora(load_settings(data_dir=inspector.data_dir))
    memory_id = memora.add("alice", "I keep bees on the roof.").memory_id or ""
    assert memora.request_forget("alice", memory_id, reason="asked in Claude", source="mcp")
    memora.close()
    page.click("nav a[data-tab=memories]")
    page.click("nav a[data-tab=approvals]")
    card = page.locator("#approval-list li.approval").filter(has_text="bees")
    expect(card).to_contain_text("requested through mcp")
    card.get_by_role("button", name="Approve").click()
    expect(page.locator("#notice")).to_contain_text("Deleted:")
    expect(page.locator("#approval-list")).to_have_text("No deletion awaits your approval.")
    reopened = Memora(load_settings(data_dir=inspector.data_dir))
    assert reopened.get("alice", memory_id) is None
    reopened.close()


def test_an_answer_to_a_deletion_no_longer_pending_is_refused(inspector: LocalInspector) -> None:
    answer = {"decision": "approve", "memory_id": inspector.ids["oolong"]}
    response = httpx.post(f"{inspector.url}/ui/api/approvals/alice-3", json=answer)
    assert response.status_code == 404 and "awaits" in response.json()["detail"]
    bad = httpx.post(f"{inspector.url}/ui/api/approvals/alice-3", json={"decision": "maybe"})
    assert bad.status_code == 422 and "\n" not in bad.json()["detail"]
    # bob's memory and thread are not alice's: the same answer as an unknown id.
    for path in (f"/memories/{inspector.ids['cello']}", "/memories/no-such-memory"):
        response = httpx.get(f"{inspector.url}/ui/api{path}")
        assert response.status_code == 404, response.text
        assert "cello" not in response.text
    # Another site's name pointed at this address (DNS rebinding) is not served.
    rebound = httpx.get(f"{inspector.url}/ui/api/memories", headers={"Host": "evil.example"})
    assert rebound.status_code == 400 and "Kaohsiung" not in rebound.text
    foreign = {"decision": "approve", "memory_id": inspector.ids["cello"]}
    assert httpx.post(f"{inspector.url}/ui/api/approvals/bob-1", json=foreign).status_code == 404


def test_profile_is_edited_and_a_secret_is_refused_in_one_line(page: Page) -> None:
    page.click("nav a[data-tab=profile]")
    expect(page.locator("#profile-table")).to_contain_text("Your profile is empty.")
    page.fill("#profile-key", "city")
    page.fill("#profile-value", "Taipei")
    page.click("#profile-form button")
    expect(page.locator("#profile-table")).to_contain_text("Taipei")
    page.fill("#profile-key", "wifi_password")
    page.fill("#profile-value", "hunter2-correct-horse")
    page.click("#profile-form button")
    expect(page.locator("#error")).to_contain_text("sensitive data")
    assert "\n" not in page.locator("#error").inner_text()
    expect(page.locator("#profile-table")).not_to_contain_text("hunter2")


def test_forget_lists_what_it_deletes_then_deletes_it(page: Page) -> None:
    page.click("nav a[data-tab=memories]")
    page.locator("#memory-list li.memory", has_text="oolong").get_by_text("Forget").click()
    expect(page.locator("#forget-list li")).to_have_count(1)
    expect(page.locator("#forget-list")).to_contain_text("oolong")
    page.click("#forget-confirm")
    expect(page.locator("#notice")).to_have_text("Deleted 1 memory.")
    expect(page.locator("#memory-list")).to_contain_text("No memories yet.")


def test_export_then_erase_with_a_typed_confirmation(page: Page, inspector: LocalInspector) -> None:
    page.click("nav a[data-tab=data]")
    with page.expect_download() as download:
        page.click("#export")
    exported = json.loads(Path(download.value.path()).read_text())
    assert exported["user_id"] == "alice" and exported["profile"] == {"city": "Taipei"}
    assert {t["thread_id"] for t in exported["threads"]} == {"alice-1", "alice-2", "alice-3"}
    assert "cello" not in json.dumps(exported)
    expect(page.locator("#erase")).to_be_disabled()
    page.fill("#erase-confirm", "alic")
    expect(page.locator("#erase")).to_be_disabled()
    page.fill("#erase-confirm", "alice")
    page.click("#erase")
    expect(page.locator("#notice")).to_contain_text("3 conversations")
    wrong = httpx.post(f"{inspector.url}/ui/api/erase", json={"confirm": "bob"})
    assert wrong.status_code == 422 and "nothing was erased" in wrong.json()["detail"]


def test_erasing_alice_left_bob_untouched(inspector: LocalInspector) -> None:
    memora = Memora(load_settings(data_dir=inspector.data_dir))
    try:
        assert memora.list("alice") == [] and memora.get_profile("alice") == {}
        assert [unit.id for unit in memora.list("bob")] == [inspector.ids["cello"]]
    finally:
        memora.close()


def test_a_long_list_shows_the_newest_page_then_more(page: Page, inspector: LocalInspector) -> None:
    memora = Memora(load_settings(data_dir=inspector.data_dir))
    try:
        units = [
            MemoryUnit(id=f"bulk-{n:03d}", user_id="alice", content=f"Bulk note number {n}.")
            for n in range(205)
        ]
        memora.ingest(units)
    finally:
        memora.close()
    page.goto(f"{inspector.url}/ui/#memories")
    page.reload()
    expect(page.locator("#memory-list li.memory")).to_have_count(200)
    expect(page.locator("#memory-summary")).to_have_text("205 memories, newest 200 shown.")
    page.click("#more")
    expect(page.locator("#memory-list li.memory")).to_have_count(205)
    expect(page.locator("#more")).to_be_hidden()
    cards = page.locator("#memory-list li.memory")
    ids = cards.evaluate_all("cards => cards.map(card => card.dataset.id)")
    assert len(set(ids)) == 205
