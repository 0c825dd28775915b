"""The memory library against real Chroma on disk and real SQLite."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from memora.api import Memora
from memora.config import load_settings
from memora.embeddings import EmbeddingSpec
from memora.models import (
    MemoryCandidate,
    MemoryScope,
    MemorySource,
    MemoryStatus,
    MemoryType,
    ReconcileAction,
)
from memora.storage.store import EmbeddingMismatchError, LongTermMemoryStore
from tests.conftest import Backend, Clock, tables_containing


def _files_containing(root: Path, needle: str) -> list[str]:
    data = needle.encode("utf-8")
    return [str(p) for p in root.rglob("*") if p.is_file() and data in p.read_bytes()]


def test_add_search_and_scoping(memora: Memora) -> None:
    outcome = memora.add("alice", "I prefer concise answers with code examples")
    assert outcome.accepted and outcome.action is ReconcileAction.CREATE
    assert outcome.memory_id is not None
    memora.add("bob", "I prefer long detailed essays")

    hits = memora.search("alice", "how should answers be written, concise?")
    assert [hit.memory.id for hit in hits] == [outcome.memory_id]
    assert 0 < hits[0].semantic_similarity <= 1

    # Another user's id behaves exactly like an unknown id, everywhere.
    assert memora.get("bob", outcome.memory_id) is None
    assert memora.preview("bob", outcome.memory_id) is None
    assert memora.forget("bob", outcome.memory_id) == []
    assert memora.store.touch("bob", [outcome.memory_id]) == 0
    assert memora.get("alice", outcome.memory_id) is not None
    assert all(hit.memory.user_id == "bob" for hit in memora.search("bob", "concise answers"))


def test_chinese_recall_across_scripts(memora: Memora) -> None:
    memora.add("alice", "我住在高雄，喜歡在海邊散步")
    memora.add("alice", "I play tennis every Sunday")
    hits = memora.search("alice", "高雄")
    assert hits and "高雄" in hits[0].memory.content
    simplified = memora.search("alice", "我喜欢海边吗")
    assert simplified and "高雄" in simplified[0].memory.content


def test_policy_rejection_is_never_stored_or_audited(memora: Memora, data_dir: Path) -> None:
    outcome = memora.add("alice", "記住，我的驗證碼是 739164")
    assert not outcome.accepted and outcome.reason == "sensitive_data"
    assert memora.list("alice") == []
    assert _files_containing(data_dir, "739164") == []
    entries = memora.audit.entries("alice")
    assert [(e.event, e.decision, e.reason) for e in entries] == [
        ("write", "rejected", "sensitive_data")
    ]


def test_update_supersedes_with_history(memora: Memora, clock: Clock) -> None:
    first = memora.add("alice", "使用者的英文程度是 B1")
    clock.advance(days=30)
    second = memora.add("alice", "使用者的英文程度是 B2")
    assert second.action is ReconcileAction.UPDATE
    assert second.affected_ids == [first.memory_id]
    old = memora.get("alice", first.memory_id or "")
    assert old is not None and old.status is MemoryStatus.SUPERSEDED
    assert old.superseded_by == second.memory_id
    assert [hit.memory.content for hit in memora.search("alice", "英文程度")] == [
        "使用者的英文程度是 B2"
    ]
    history = memora.history("alice", second.memory_id or "")
    assert [unit.content for unit in history.chain] == [
        "使用者的英文程度是 B1",
        "使用者的英文程度是 B2",
    ]
    assert [e.action for e in history.audit if e.event == "write"] == ["create", "update"]
    assert any(e.event == "read" and e.query == "英文程度" for e in history.audit)


def test_repeat_is_skipped_and_unrelated_facts_survive(memora: Memora) -> None:
    first = memora.add("alice", "I live in Taipei with my two cats")
    memora.add("alice", "My favourite programming language is Rust")
    repeat = memora.add("alice", "I live in Taipei with my two cats.")
    assert repeat.action is ReconcileAction.SKIP and repeat.memory_id == first.memory_id
    memora.add("alice", "I work as a nurse at a hospital")
    statuses = {unit.content: unit.status for unit in memora.list("alice")}
    assert len(statuses) == 3
    assert set(statuses.values()) == {MemoryStatus.ACTIVE}


def test_relative_dates_are_stored_resolved(memora: Memora) -> None:
    outcome = memora.add("alice", "請記住，我預計明年五月參加 IELTS")
    unit = memora.get("alice", outcome.memory_id or "")
    assert unit is not None
    assert "2027-05" in unit.content
    assert unit.metadata["resolved_dates"] == ["2027-05"]


def test_retrieval_filters_limit_and_threshold(memora: Memora, clock: Clock) -> None:
    facts = [
        "My cousin Ana plays the violin in the Vienna orchestra",
        "Our orchestra rehearses on Thursday evenings",
        "I joined a community orchestra as a cellist last spring",
        "The orchestra's conductor is a retired music teacher",
        "I want to perform a solo with the orchestra someday",
        "My orchestra uniform is a black shirt",
        "Playing in an orchestra helps me relax after work",
        "I bought a new bow before the orchestra concert",
    ]
    for fact in facts:
        outcome = memora.add("alice", fact)
        assert outcome.accepted and outcome.action is not ReconcileAction.UPDATE, fact
    query = "tell me about the orchestra"
    assert len(memora.search("alice", query)) == memora.settings.retrieval_limit == 5
    assert len(memora.search("alice", query, limit=50)) == 5
    assert len(memora.search("alice", query, limit=2)) == 2
    assert memora.search("alice", "quantum chromodynamics lattice") == []

    thread_memory = memora.store_accepted_memories(
        "alice",
        [
            MemoryCandidate(
                content="For this chat we call the parser Bob the parser",
                user_message="For this chat we call the parser Bob the parser",
                scope=MemoryScope.THREAD,
                thread_id="t1",
            )
        ],
        MemorySource(thread_id="t1"),
    )[0]
    assert thread_memory.accepted, thread_memory
    assert memora.search("alice", "parser Bob", thread_id="t1")
    assert not memora.search("alice", "parser Bob", thread_id="t2")

    expiring = memora.add(
        "alice",
        "I am staying at the Hilton hotel in Osaka",
        metadata={"expires_at": (clock.now + timedelta(days=3)).isoformat()},
    )
    assert memora.search("alice", "Hilton hotel Osaka")
    clock.advance(days=4)
    assert not memora.search("alice", "Hilton hotel Osaka")
    report = memora.consolidate("alice")
    assert report.expired == [expiring.memory_id]
    archived = memora.get("alice", expiring.memory_id or "")
    assert archived is not None and archived.status is MemoryStatus.ARCHIVED


def test_forget_removes_every_trace_of_the_chain(
    memora: Memora, data_dir: Path, backend: Backend
) -> None:
    memora.add("alice", "My Quokkaberry level of English is B1")
    latest = memora.add("alice", "My Quokkaberry level of English is B2")
    memora.add("alice", "I like hiking in the Alps on weekends")
    assert memora.search("alice", "Quokkaberry level")  # the audit now holds this query
    memora.touch("alice", [latest.memory_id or ""])

    deleted = memora.forget("alice", latest.memory_id or "")
    assert len(deleted) == 2
    assert memora.forget("alice", latest.memory_id or "") == []  # idempotent
    assert memora.store.is_tombstoned("alice", latest.memory_id or "")
    assert [unit.content for unit in memora.list("alice")] == [
        "I like hiking in the Alps on weekends"
    ]
    assert _files_containing(data_dir, "Quokkaberry") == []
    if backend.database_url is None:
        assert _files_containing(data_dir, "Alps")  # the control: other text is still on disk
    else:
        assert _files_containing(data_dir, "Alps") == []  # a node keeps no memory text
        assert tables_containing(backend.database_url, "Quokkaberry") == []
        # Memory text is sealed on Postgres (test_postgres_shredding.py scans its files);
        # the control: the kept memory's row is found by its id.
        assert tables_containing(backend.database_url, "Alps") == []
        kept = memora.list("alice")[0].id
        assert "memories" in tables_containing(backend.database_url, kept)
    assert memora.search("alice", "English level B2") == []


def test_touch_records_access(memora: Memora, clock: Clock) -> None:
    outcome = memora.add("alice", "I drink oat milk in my coffee")
    clock.advance(hours=1)
    assert memora.touch("alice", [outcome.memory_id or "", "unknown-id"]) == 1
    unit = memora.get("alice", outcome.memory_id or "")
    assert unit is not None and unit.access_count == 1 and unit.last_accessed_at is not None


def test_consolidation_merges_and_decays_but_never_deletes(memora: Memora, clock: Clock) -> None:
    first = memora.add("alice", "I enjoy reading science fiction novels")
    # A near-duplicate that slipped in directly (an import, say).
    copy = first.memory_id
    imported = memora.get("alice", copy or "")
    assert imported is not None
    duplicate = imported.model_copy(update={"id": "dup-1", "created_at": clock.now})
    memora.ingest([duplicate])
    memora.add("alice", "My sister lives in Lisbon and works as an architect")
    clock.advance(days=400)
    report = memora.consolidate("alice")
    assert len(report.merged) == 1
    assert len(report.decayed) == 2
    assert memora.store.count("alice") == 3  # nothing deleted
    assert memora.store.count("alice", MemoryStatus.ACTIVE) == 2
    again = memora.consolidate("alice")
    assert again.decayed == [] and again.merged == []


def test_embedding_model_mismatch_names_reindex(data_dir: Path, clock: Clock) -> None:
    memora = Memora(load_settings(data_dir=data_dir), clock=clock)
    memora.add("alice", "I keep bees in my garden in Taichung")
    with pytest.raises(EmbeddingMismatchError, match="memora memories reindex"):
        LongTermMemoryStore(data_dir, EmbeddingSpec("other/model", 64))
    store = LongTermMemoryStore(data_dir, EmbeddingSpec("other/model", 8), allow_model_change=True)
    rng = np.random.default_rng(0)

    def embed(texts: list[str]) -> np.ndarray:
        matrix = rng.normal(size=(len(texts), 8)).astype(np.float32)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    assert store.reindex(embed) == 1
    reopened = LongTermMemoryStore(data_dir, EmbeddingSpec("other/model", 8))
    assert reopened.count("alice") == 1
    assert reopened.index_for("alice").vectors.shape[1] == 8


def test_export_import_round_trip(memora: Memora, tmp_path: Path, clock: Clock) -> None:
    memora.add("alice", "使用者的英文程度是 B1")
    memora.add("alice", "使用者的英文程度是 B2")
    memora.add("alice", "I climb at the gym on Tuesdays", memory_type=MemoryType.EPISODIC)
    lines = list(memora.export("alice"))
    other = Memora(load_settings(data_dir=tmp_path / "other"), clock=clock)
    assert other.import_lines("alice", lines).imported == 3
    assert list(other.export("alice")) == lines
    again = other.import_lines("alice", lines)
    assert (again.imported, again.skipped) == (0, 3)  # ids already present
    assert other.import_lines("alice", ["{not json"]).rejected == [(1, "not valid JSON")]


_OBSERVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from memora.api import Memora
    from memora.config import load_settings
    memora = Memora(load_settings(data_dir=Path(sys.argv[1])))
    for line in sys.stdin:
        hits = memora.search("alice", line.strip())
        print("|".join(hit.memory.content for hit in hits), flush=True)
    """
)


def test_second_process_never_answers_from_a_stale_index(
    memora: Memora, data_dir: Path, backend: Backend
) -> None:
    memora.add("alice", "I have a golden retriever named Mochi")
    observer = subprocess.Popen(
        [sys.executable, "-c", _OBSERVER, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **backend.env()},
    )
    assert observer.stdin and observer.stdout
    try:
        observer.stdin.write("golden retriever Mochi\n")
        observer.stdin.flush()
        assert "Mochi" in observer.stdout.readline()
        # This process writes after the observer opened the store and built its index.
        added = memora.add("alice", "My favourite hiking trail is Wuling in Taichung")
        observer.stdin.write("hiking trail Wuling\n")
        observer.stdin.flush()
        assert "Wuling" in observer.stdout.readline()
        memora.forget("alice", added.memory_id or "")
        observer.stdin.write("hiking trail Wuling\n")
        observer.stdin.flush()
        assert "Wuling" not in observer.stdout.readline()
    finally:
        observer.stdin.close()
        observer.wait(timeout=30)
