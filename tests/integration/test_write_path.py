"""The write path and consolidation as their own parts, on real Chroma and SQLite."""

from __future__ import annotations

from datetime import timedelta

from memora.api import Memora
from memora.models import (
    MemoryCandidate,
    MemoryScope,
    MemorySource,
    MemoryStatus,
    Neighbour,
    ReconcileAction,
    ReconcileDecision,
)
from memora.write.consolidation import Consolidator
from memora.write.write_path import find_neighbours
from tests.conftest import Clock


class FlagEverything:
    """A reconciler that sends every candidate with neighbours to review."""

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def decide(self, candidate: MemoryCandidate, neighbours: list[Neighbour]) -> ReconcileDecision:
        self.seen.append([n.memory.id for n in neighbours])
        if not neighbours:
            return ReconcileDecision(action=ReconcileAction.CREATE)
        return ReconcileDecision(
            action=ReconcileAction.REVIEW, target_ids=[neighbours[0].memory.id]
        )


def test_a_replaced_reconciler_decides_the_next_write(memora: Memora) -> None:
    first = memora.add("alice", "I live in Porto")
    reconciler = FlagEverything()
    memora.reconciler = reconciler
    second = memora.add("alice", "I live in Braga")
    assert reconciler.seen == [[first.memory_id]]
    assert second.action is ReconcileAction.REVIEW
    assert second.affected_ids == [first.memory_id]
    flagged = memora.review_items("alice")
    assert [unit.id for unit in flagged] == [second.memory_id]
    assert flagged[0].metadata["review_targets"] == [first.memory_id]


def test_neighbours_come_from_the_users_scope_only(memora: Memora) -> None:
    memora.add("bob", "I drink green tea every morning")
    in_thread = memora.store_accepted_memories(
        "alice",
        [
            MemoryCandidate(
                content="I drink black tea every morning",
                user_message="I drink black tea every morning",
                reason="explicit_request",
                scope=MemoryScope.THREAD,
                thread_id="t1",
            )
        ],
        MemorySource(thread_id="t1"),
    )[0]
    probe = "I drink tea every morning"
    vector = memora.embeddings.embed_array([probe])[0]
    now = memora.clock()

    def ids(thread_id: str | None) -> list[str]:
        candidate = MemoryCandidate(content=probe, thread_id=thread_id)
        found = find_neighbours(memora.store, "alice", candidate, vector, now)
        return [n.memory.id for n in found]

    assert ids("t1") == [in_thread.memory_id]
    assert ids("t2") == []
    assert ids(None) == []


def test_consolidator_archives_expired_and_decays_unused(memora: Memora, clock: Clock) -> None:
    lasting = memora.add("alice", "My sister lives in Lisbon and works as an architect")
    trip = memora.add(
        "alice",
        "I am in Tokyo for a conference",
        metadata={"expires_at": (clock.now + timedelta(days=3)).isoformat()},
    )
    before = memora.get("alice", lasting.memory_id or "")
    assert before is not None and before.importance > 1
    consolidator = Consolidator(
        memora.store, memora.audit, memora.reconciler, decay_after=timedelta(days=10)
    )
    clock.advance(days=5)
    report = consolidator.consolidate("alice", clock.now)
    assert report.expired == [trip.memory_id]
    assert report.decayed == [] and report.merged == []

    clock.advance(days=6)
    report = consolidator.consolidate("alice", clock.now)
    assert report.decayed == [lasting.memory_id]
    unit = memora.get("alice", lasting.memory_id or "")
    assert unit is not None and unit.importance == before.importance - 1
    assert unit.metadata["decayed_at"] == clock.now.isoformat()
    assert memora.store.count("alice", MemoryStatus.ARCHIVED) == 1
    entries = memora.audit.entries("alice", lasting.memory_id)
    assert entries[-1].event == "consolidate"
