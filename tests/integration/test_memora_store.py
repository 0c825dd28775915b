"""``MemoraStore``: the LangGraph ``BaseStore`` contract over real data dirs, with Memora's
guarantees (policy, supersession, approval before deletion, one user per namespace)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.store.base import Item, SearchItem

from memora.api import Memora
from memora.errors import ConfigurationError, InvalidInput, MemoryRefused
from memora.integrations import MemoraStore
from memora.models import MemoryStatus
from tests.conftest import Backend, Clock, tables_containing
from tests.integration.test_forgetting import files_containing

ALICE = ("memories", "alice")
BOB = ("memories", "bob")
SECRET = "My bank password is hunter2-Zq9"


@pytest.fixture
def store(memora: Memora) -> MemoraStore:
    return MemoraStore(memora)


def test_put_get_search_and_list_return_langgraph_items(store: MemoraStore) -> None:
    store.put(ALICE, "pref-1", {"content": "I prefer concise answers"})
    store.put(ALICE, "trip-1", {"content": "I went hiking in Taroko", "memory_type": "episodic"})

    item = store.get(ALICE, "pref-1")
    assert type(item) is Item
    assert (item.namespace, item.key) == (ALICE, "pref-1")
    assert item.value == {"content": "I prefer concise answers", "memory_type": "semantic"}

    hits = store.search(("memories", "alice"), query="how should answers be written?")
    assert hits and isinstance(hits[0], SearchItem)
    assert hits[0].key == "pref-1" and hits[0].score is not None and hits[0].score > 0

    episodic = store.search(ALICE, filter={"memory_type": "episodic"})
    assert [hit.key for hit in episodic] == ["trip-1"]
    assert store.search(ALICE, filter={"memory_type": {"$ne": "episodic"}})[0].key == "pref-1"
    assert [hit.key for hit in store.search(ALICE, limit=1, offset=1)] == ["trip-1"]
    assert store.list_namespaces(prefix=("memories",)) == [ALICE]
    assert store.list_namespaces(suffix=("bob",)) == []


def test_a_refused_value_raises_with_the_reason_and_stores_nothing(
    store: MemoraStore, memora: Memora
) -> None:
    with pytest.raises(MemoryRefused) as refused:
        store.put(ALICE, "k", {"content": SECRET})
    assert refused.value.reason == "sensitive_data"
    assert "hunter2" not in str(refused.value)
    assert memora.count("alice") == 0
    assert store.get(ALICE, "k") is None
    entries = memora.audit.entries("alice", limit=-1)
    assert [(e.event, e.decision, e.reason) for e in entries] == [
        ("write", "rejected", "sensitive_data")
    ]


@pytest.mark.parametrize(
    ("namespace", "value"),
    [
        (("memories",), {"content": "I like tea"}),
        (("notes", "alice"), {"content": "I like tea"}),
        (("memories", "alice", "extra"), {"content": "I like tea"}),
        (ALICE, {"text": "I like tea"}),
        (ALICE, {"content": "I like tea", "context": "my password is hunter2-Zq9"}),
        (ALICE, {"content": "I like tea", "memory_type": "procedural"}),
        (ALICE, "I like tea"),
    ],
)
def test_bad_namespaces_and_values_are_refused_before_any_work(
    store: MemoraStore, memora: Memora, namespace: tuple[str, ...], value: object
) -> None:
    with pytest.raises(InvalidInput):
        store.put(namespace, "k", value)  # type: ignore[arg-type]
    assert memora.store.users() == []
    assert memora.audit.entries("alice", limit=-1) == []


def test_the_layout_needs_one_user_element(memora: Memora) -> None:
    with pytest.raises(ConfigurationError):
        MemoraStore(memora, namespace=("memories",))
    custom = MemoraStore(memora, namespace=("{user_id}", "memories"))
    custom.put(("carol", "memories"), "k", {"content": "I play the cello"})
    assert memora.list("carol")[0].content == "I play the cello"
    assert custom.get(("carol", "memories"), "k") is not None


def test_put_under_a_used_key_supersedes_and_keeps_the_key(
    store: MemoraStore, memora: Memora, clock: Clock
) -> None:
    store.put(ALICE, "home", {"content": "I live in London"})
    clock.advance(days=1)
    store.put(ALICE, "home", {"content": "I moved to Kaohsiung and live there now"})

    item = store.get(ALICE, "home")
    assert item is not None and "Kaohsiung" in item.value["content"]
    active = memora.list("alice", MemoryStatus.ACTIVE)
    assert [unit.content for unit in active] == [item.value["content"]]
    history = memora.history("alice", active[0].id)
    assert [unit.content for unit in history.chain][0] == "I live in London"
    assert [unit.status for unit in history.chain] == [MemoryStatus.SUPERSEDED, MemoryStatus.ACTIVE]


def test_a_memory_written_elsewhere_is_reached_by_its_id(
    store: MemoraStore, memora: Memora
) -> None:
    memory_id = memora.add("alice", "My sister Meiling is a nurse").memory_id
    assert memory_id is not None
    item = store.get(ALICE, memory_id)
    assert item is not None and item.key == memory_id
    store.put(ALICE, memory_id, {"content": "My sister Meiling is a doctor now"})
    updated = store.get(ALICE, memory_id)
    assert updated is not None and "doctor" in updated.value["content"]
    assert memora.get("alice", memory_id).status is MemoryStatus.SUPERSEDED  # type: ignore[union-attr]


def test_delete_is_a_request_until_the_user_approves(store: MemoraStore, memora: Memora) -> None:
    store.put(ALICE, "therapist", {"content": "My therapist is Dr. Lin"})
    store.delete(ALICE, "therapist")
    store.delete(ALICE, "therapist")  # asking twice is one request

    assert store.get(ALICE, "therapist") is not None
    exported = memora.export_user("alice")["forget_requests"]
    assert [(r["source"], r["reason"]) for r in exported] == [
        ("store", "deleted through the LangGraph store")
    ]
    pending = memora.pending_forgets("alice")
    assert len(pending) == 1
    assert pending[0].preview == "My therapist is Dr. Lin" and pending[0].source == "store"
    assert memora.pending_forgets("bob") == []
    assert memora.approve_forget("bob", pending[0].id) is None  # another user's id: unknown

    deleted = memora.approve_forget("alice", pending[0].id)
    assert deleted and store.get(ALICE, "therapist") is None
    assert memora.count("alice") == 0 and memora.pending_forgets("alice") == []
    assert memora.approve_forget("alice", pending[0].id) is None


def test_a_rejected_request_keeps_the_memory(store: MemoraStore, memora: Memora) -> None:
    store.put(ALICE, "pet", {"content": "My cat is called Mochi"})
    store.delete(ALICE, "pet")
    request = memora.pending_forgets("alice")[0]
    assert memora.reject_forget("bob", request.id) is False
    assert memora.reject_forget("alice", request.id) is True
    assert store.get(ALICE, "pet") is not None and memora.pending_forgets("alice") == []
    decisions = [(e.event, e.decision) for e in memora.audit.entries("alice", limit=-1)]
    assert ("delete", "requested") in decisions and ("delete", "rejected") in decisions


def test_direct_deletes_forget_at_once(memora: Memora) -> None:
    store = MemoraStore(memora, direct_deletes=True)
    store.put(ALICE, "pet", {"content": "My cat is called Mochi"})
    store.delete(ALICE, "pet")
    assert store.get(ALICE, "pet") is None and memora.count("alice") == 0
    assert memora.pending_forgets("alice") == []


def test_another_users_keys_look_unknown(store: MemoraStore, memora: Memora) -> None:
    store.put(ALICE, "k1", {"content": "I keep a sourdough starter named Bubbles"})
    alice_id = memora.list("alice")[0].id

    for key in ("k1", alice_id):
        assert store.get(BOB, key) is None
        assert store.get(BOB, key) == store.get(BOB, "never-used")
        store.delete(BOB, key)
    assert store.search(BOB, query="sourdough starter") == []
    assert store.search(BOB) == []
    assert memora.pending_forgets("alice") == [] and memora.pending_forgets("bob") == []
    store.put(BOB, "k1", {"content": "I collect vintage fountain pens"})
    alice_item, bob_item = store.get(ALICE, "k1"), store.get(BOB, "k1")
    assert alice_item is not None and "Bubbles" in alice_item.value["content"]
    assert bob_item is not None and "fountain pens" in bob_item.value["content"]
    assert sorted(store.list_namespaces(prefix=("memories",))) == [ALICE, BOB]


def test_async_operations(store: MemoraStore) -> None:
    async def scenario() -> tuple[Item | None, list[SearchItem]]:
        await store.aput(ALICE, "a1", {"content": "I am learning Japanese"})
        found = await store.asearch(ALICE, query="which language am I learning?")
        return await store.aget(ALICE, "a1"), found

    item, found = asyncio.run(scenario())
    assert item is not None and item.value["content"] == "I am learning Japanese"
    assert [hit.key for hit in found] == ["a1"]


@pytest.fixture
def backend_memora(tmp_path: Path, backend: Backend) -> Iterator[Memora]:
    instance = Memora(backend.settings(tmp_path / "data"))
    yield instance
    instance.close()


def test_requests_live_in_the_library_database_and_go_with_the_user(
    backend_memora: Memora, tmp_path: Path, backend: Backend
) -> None:
    MemoraStore(backend_memora).put(ALICE, "k", {"content": "My therapist is Dr. Lin"})
    MemoraStore(backend_memora).delete(ALICE, "k")
    reopened = Memora(backend.settings(tmp_path / "data"))
    try:
        assert [r.preview for r in reopened.pending_forgets("alice")] == ["My therapist is Dr. Lin"]
        report = reopened.erase_user("alice")
        assert (report.memories, report.forget_requests) == (1, 1)
        assert reopened.pending_forgets("alice") == []
        rows = reopened.forget_requests.db.query("SELECT * FROM forget_requests")
        assert rows == []
    finally:
        reopened.close()


def test_forgetting_another_way_drops_the_request(store: MemoraStore, memora: Memora) -> None:
    store.put(ALICE, "k", {"content": "My therapist is Dr. Lin"})
    store.delete(ALICE, "k")
    memory_id = memora.pending_forgets("alice")[0].memory_id
    memora.forget("alice", memory_id, actor="cli")
    assert memora.forget_requests.pending("alice") == []


def test_keys_are_matched_exactly_whatever_they_hold(store: MemoraStore) -> None:
    facts = {
        "50%_off!": "I drink green tea every morning",
        "50x_off!": "My cat is called Mochi",
        'a "quoted" key': "I play the cello",
        "k": "My sister Meiling is a nurse",
        "kk": "I am learning Japanese",
        "ключ 鑰匙": "I keep a sourdough starter named Bubbles",
    }
    for key, fact in facts.items():
        store.put(ALICE, key, {"content": fact})
    for key, fact in facts.items():
        item = store.get(ALICE, key)
        assert item is not None and (item.key, item.value["content"]) == (key, fact)
    assert store.get(ALICE, "50%") is None and store.get(ALICE, "%") is None


@pytest.mark.parametrize(
    ("namespace", "key"),
    [
        (ALICE, "k" * 129),
        (ALICE, "line\nbreak"),
        (ALICE, ""),
        (("memories", "bad\tid"), "k"),
        (("memories", "u" * 300), "k"),
    ],
)
def test_bad_keys_and_user_ids_are_refused(
    store: MemoraStore, namespace: tuple[str, ...], key: str
) -> None:
    with pytest.raises(InvalidInput):
        store.get(namespace, key)
    with pytest.raises(InvalidInput):
        store.put(namespace, key, {"content": "I like tea"})


def test_an_approved_request_leaves_no_text_behind(
    backend_memora: Memora, tmp_path: Path, backend: Backend
) -> None:
    """The reason a requester gave can quote the memory: approval erases both everywhere."""
    memora = backend_memora
    memory_id = memora.add("alice", "My therapist is Dr. Quillfeather").memory_id
    assert memory_id is not None
    request = memora.request_forget(
        "alice", memory_id, reason="forget Quillfeather, please", source="mcp"
    )
    assert request is not None and request.preview == "My therapist is Dr. Quillfeather"
    memora.flush()
    needles = ["Quillfeather"]
    if backend.database_url is None:
        assert _held(tmp_path / "data", backend, needles) != []
    else:  # sealed on Postgres: read back through the requests
        assert _held(tmp_path / "data", backend, needles) == []
        [pending] = memora.pending_forgets("alice")
        assert pending.reason == "forget Quillfeather, please"

    assert memora.approve_forget("alice", request.id) == [memory_id]
    assert _held(tmp_path / "data", backend, needles) == []
    audit = [(e.event, e.decision, e.source) for e in memora.audit.entries("alice", limit=-1)]
    assert ("delete", "requested", "mcp") in audit and (
        "delete",
        "deleted",
        "approved:mcp",
    ) in audit


def _held(data: Path, backend: Backend, texts: list[str]) -> list[str]:
    held = files_containing(data, [text.encode() for text in texts])
    if backend.database_url is not None:
        held += [table for text in texts for table in tables_containing(backend.database_url, text)]
    return held
