"""The public Python API: the one way in for the CLI, the agent's tools and the evaluations.

memora = Memora()                      # settings from the environment
memora.add("alice", "I prefer concise answers")
memora.search("alice", "how should answers look?")
memora.forget("alice", memory_id)      # a person deleting directly
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any

from memora.approvals import ForgetApprovals
from memora.audit import AuditEntry, AuditLog
from memora.config import Settings, get_settings
from memora.embeddings import MemoraEmbeddings, make_embeddings
from memora.forget_requests import ForgetRequests
from memora.judgement import trained_judgement
from memora.models import (
    MemoryCandidate,
    MemorySource,
    MemoryStatus,
    MemoryType,
    MemoryUnit,
    ReconcileAction,
    utcnow,
)
from memora.profile import UserProfileStore
from memora.recall.retrieval import RetrievedMemory, dense_query_text, rank
from memora.reports import ErasureReport, History
from memora.storage.store import LongTermMemoryStore, open_rows
from memora.validation import (
    validate_memory_content,
    validate_memory_id,
    validate_query,
    validate_thread_id,
    validate_user_id,
    validate_user_message,
)
from memora.write.chat_judge import write_judge
from memora.write.classifier import LLMMemoryClassifier
from memora.write.consolidation import ConsolidationReport, Consolidator
from memora.write.importance import ImportanceScorer, LLMImportanceScorer, RuleImportanceScorer
from memora.write.policy import MemoryClassifier
from memora.write.reconcile import Reconciler, default_reconciler
from memora.write.transfer import ImportReport, backed_links, not_held, parse_import_line, renumber
from memora.write.write_path import WriteOutcome, WritePath

__all__ = [
    "ConsolidationReport",
    "ErasureReport",
    "History",
    "ImportReport",
    "Memora",
    "WriteOutcome",
    "close_shared",
    "shared_memora",
]


class Memora(ForgetApprovals):
    """Long-term memory for many users: policy, write path, recall, lifecycle, and the
    approval of deletion requests (:class:`memora.approvals.ForgetApprovals`)."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        embeddings: MemoraEmbeddings | None = None,
        reconciler: Reconciler | None = None,
        importance: ImportanceScorer | None = None,
        classifier: MemoryClassifier | None = None,
        clock: Callable[[], datetime] = utcnow,
        allow_model_change: bool = False,
    ) -> None:
        self.settings = settings or get_settings()
        rows = open_rows(self.settings.data_dir, self.settings.database_url)
        recorded = rows[0].embedding_model()
        self.embeddings = embeddings or make_embeddings(
            self.settings, recorded.model_id if recorded else None
        )
        self.store = LongTermMemoryStore(
            self.settings.data_dir,
            self.embeddings.spec,
            self.settings.chroma_url,
            database_url=self.settings.database_url,
            chroma_collection=self.settings.chroma_collection,
            embed=self.embeddings.embed_array,
            allow_model_change=allow_model_change,
            ranking_cache_users=self.settings.ranking_cache_users,
            rows=rows,
        )
        self.audit = (
            AuditLog(self.store.db)
            if self.settings.database_url
            else AuditLog.in_data_dir(self.settings.data_dir)
        )
        self.profile = UserProfileStore(self.store.db)
        self.forget_requests = ForgetRequests(self.store.db)
        judge = write_judge(self.settings)
        self.importance = importance or (
            LLMImportanceScorer(judge) if judge else RuleImportanceScorer()
        )
        self.classifier = classifier or (LLMMemoryClassifier(judge) if judge else None)
        self.clock = clock
        self.judge = trained_judgement(self.settings.judgement)
        self.reconciler = reconciler or default_reconciler(judge, self.judge, self.settings)
        self.scrub_pending = False
        """A deletion's copy still waits in a write-ahead log that a reader in another
        process holds; :meth:`finish_scrub` (run by every forget, erase and close) clears it."""

    def finish_scrub(self) -> bool:
        """Clear what deletions left in the logs; True when nothing is left pending."""
        stores = self.store.scrub()
        audit = self.audit.scrub()
        self.scrub_pending = not (stores and audit)
        return not self.scrub_pending

    def close(self) -> None:
        """Finish pending vector writes and close the databases."""
        if self.scrub_pending:
            self.finish_scrub()
        self.store.close()
        if self.audit.db is not self.store.db:
            self.audit.db.close()

    def flush(self) -> None:
        """Wait until every queued vector write has reached Chroma."""
        self.store.flush()

    def drop_vector_collection(self) -> None:
        """Delete the whole Chroma collection (a scratch deployment's, after its run)."""
        self.store.flush()
        self.store.vectors.drop()

    def drop_local_vector_copy(self, user_id: str) -> None:
        """Delete this process's on-disk copy of the user's vectors; the next search
        reads them from Chroma again."""
        validate_user_id(user_id)
        self.store.local_vectors.drop(user_id)

    # -- write path ---------------------------------------------------------

    def add(
        self,
        user_id: str,
        content: str,
        *,
        memory_type: MemoryType = MemoryType.SEMANTIC,
        user_message: str | None = None,
        source: MemorySource | None = None,
        said_at: datetime | None = None,
        reason: str = "explicit_request",
        metadata: dict[str, Any] | None = None,
        replaces: str | None = None,
    ) -> WriteOutcome:
        """Remember one text through the full write path.

        ``user_message`` defaults to the text itself: a person typing a memory
        is its own source. ``replaces`` names a memory of the user this text
        updates: once accepted, the new memory supersedes it even where
        reconciliation did not see the two as one (history is kept, as always).

        Raises:
            InvalidInput: The user id, text or user message breaks a limit or is not
                valid UTF-8; checked before any other work, so nothing is audited.
        """
        validate_user_id(user_id)
        validate_memory_content(content)
        if user_message is not None:
            validate_user_message(user_message)
        if source is not None and source.thread_id is not None:
            validate_thread_id(source.thread_id)
        if replaces is not None:
            validate_memory_id(replaces)
        candidate = MemoryCandidate(
            content=content,
            memory_type=memory_type,
            user_message=content if user_message is None else user_message,
            said_at=said_at,
            reason=reason,
            metadata=metadata or {},
        )
        outcome = self.store_accepted_memories(user_id, [candidate], source or MemorySource())[0]
        if replaces is not None and outcome.accepted:
            self._supersede(user_id, replaces, outcome)
        return outcome

    def _supersede(self, user_id: str, old_id: str, outcome: WriteOutcome) -> None:
        if outcome.memory_id in (None, old_id) or old_id in outcome.affected_ids:
            return
        if outcome.action is ReconcileAction.REVIEW:
            return  # a conflict with other memories stays for a person to settle
        superseded = self.store.supersede_with_stored(user_id, [old_id], outcome.memory_id) or []
        if superseded:
            outcome.affected_ids.extend(superseded)
            ids = [outcome.memory_id, *superseded]
            self.audit.record(user_id, "write", "accepted", action="update", memory_ids=ids)

    def store_accepted_memories(
        self, user_id: str, candidates: Sequence[MemoryCandidate], source: MemorySource
    ) -> list[WriteOutcome]:
        """Run the write path for each candidate, in order.

        policy (again) -> importance -> embedding -> candidate search in the
        user's scope -> reconcile -> store -> audit.

        Raises:
            InvalidInput: The user id is not a valid one.
        """
        validate_user_id(user_id)
        return self._write_path().write(user_id, candidates, source)

    def _write_path(self) -> WritePath:
        # Built per call, so a reconciler, scorer, classifier or clock replaced
        # on this object takes effect on the next write.
        return WritePath(
            self.store,
            self.audit,
            self.embeddings,
            self.reconciler,
            self.importance,
            self.classifier,
            self.clock,
            self.judge,
        )

    def ingest(self, units: Sequence[MemoryUnit]) -> list[str]:
        """Bulk-store ready memory units of one user, skipping policy and reconciliation.

        For imports and evaluations that measure recall rather than selection.
        """
        if not units:
            return []
        vectors = self.embeddings.embed_array([unit.content for unit in units])
        ids = self.store.add(units, vectors)
        self.store.flush()
        return ids

    # -- recall -------------------------------------------------------------

    def search(
        self,
        user_id: str,
        query: str,
        *,
        limit: int | None = None,
        min_score: float | None = None,
        thread_id: str | None = None,
        now: datetime | None = None,
        audit: bool = True,
    ) -> list[RetrievedMemory]:
        """Recall this user's memories for a query, within the retrieval policy.

        The caller may ask for fewer results or a stricter threshold, never more.

        Raises:
            InvalidInput: The user id, query or thread id breaks a limit or is not valid
                UTF-8; checked before any other work, so nothing is audited.
        """
        validate_user_id(user_id)
        validate_query(query)
        if thread_id is not None:
            validate_thread_id(thread_id)
        results = self._rank(
            user_id,
            query,
            limit=min(limit or self.settings.retrieval_limit, self.settings.retrieval_limit),
            min_score=max(min_score or 0.0, self.settings.retrieval_min_score),
            thread_id=thread_id,
            now=now,
        )
        if audit:
            self.audit.record(
                user_id,
                "read",
                "returned",
                query=query,
                memory_ids=[hit.memory.id for hit in results],
                scores=[hit.score for hit in results],
                thread_id=thread_id,
            )
        return results

    def rank_for_evaluation(
        self, user_id: str, query: str, k: int, now: datetime
    ) -> list[RetrievedMemory]:
        """The exact ``search`` ranking with k raised and no threshold (evaluations only)."""
        return self._rank(user_id, query, limit=k, min_score=0.0, thread_id=None, now=now)

    def _rank(
        self,
        user_id: str,
        query: str,
        *,
        limit: int,
        min_score: float,
        thread_id: str | None,
        now: datetime | None,
    ) -> list[RetrievedMemory]:
        index = self.store.index_for(user_id)
        if not index.size:
            return []  # nothing to rank (a new or unknown user): the query is not even embedded
        vector = self.embeddings.embed_queries([dense_query_text(query)])[0]
        return rank(
            index,
            query,
            vector,
            now=now or self.clock(),
            limit=limit,
            min_relevance=min_score,
            thread_id=thread_id,
            half_life_days=self.settings.recency_half_life_days,
            unrelated_cosine=self.embeddings.spec.unrelated_cosine,
            dense_weight=self.embeddings.spec.fusion_dense_weight,
        )

    def touch(self, user_id: str, memory_ids: Iterable[str]) -> int:
        """Record that the agent used these memories in a successful answer."""
        return self.store.touch(user_id, memory_ids)

    # -- reading and forgetting ---------------------------------------------

    def get(self, user_id: str, memory_id: str) -> MemoryUnit | None:
        """One memory of this user, or None (unknown and foreign ids look the same)."""
        validate_user_id(user_id)
        validate_memory_id(memory_id)
        return self.store.get(user_id, memory_id)

    def preview(self, user_id: str, memory_id: str) -> str | None:
        """A short preview of one memory of this user (what an approval prompt shows),
        or None for an unknown or foreign id."""
        validate_user_id(user_id)
        validate_memory_id(memory_id)
        return self.store.get_preview(user_id, memory_id)

    def list(
        self,
        user_id: str,
        status: MemoryStatus | None = None,
        *,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[MemoryUnit]:
        """This user's memories, oldest first; with ``limit``, one page of them."""
        validate_user_id(user_id)
        return self.store.list(user_id, status, limit=limit, offset=offset)

    def count(self, user_id: str, status: MemoryStatus | None = None) -> int:
        """How many memories this user has, optionally of one status."""
        validate_user_id(user_id)
        return self.store.count(user_id, status)

    def iter_memories(
        self, user_id: str, status: MemoryStatus | None = None, batch: int = 1000
    ) -> Iterator[MemoryUnit]:
        """Every memory of this user, oldest first, read a batch at a time (bounded memory)."""
        validate_user_id(user_id)
        offset = 0
        while page := self.store.list(user_id, status, limit=batch, offset=offset):
            yield from page
            offset += len(page)

    def forget(
        self,
        user_id: str,
        memory_id: str,
        *,
        actor: str = "user",
        only: Collection[str] | None = None,
    ) -> builtins.list[str]:
        """Delete a memory and the older versions it replaced (``only``: of them, just these
        ids); returns the deleted ids. An unknown, foreign or gone id deletes nothing."""
        validate_user_id(user_id)
        validate_memory_id(memory_id)
        replaced = self.store.replaced(user_id, memory_id)
        texts = [u.content for u in replaced if only is None or u.id in only]
        deleted = self.store.delete(user_id, memory_id, only)
        if deleted:
            dropped = self.forget_requests.remove_for_memories(user_id, deleted)
            self.audit.redact_reads_of(user_id, deleted)
            self.audit.redact_reads_naming(user_id, texts)
            self.audit.record(user_id, "delete", "deleted", memory_ids=deleted, source=actor)
            self.new_user_key(user_id)
            if dropped:
                self.forget_requests.scrub()
        if deleted or self.scrub_pending:
            self.finish_scrub()
        return deleted

    def erase_user(self, user_id: str) -> ErasureReport:
        """Remove everything the library holds of one user: memories with their chains,
        vectors, profile and audit. Text-free tombstones of the memory ids stay, so a
        stale process never writes a vector back.

        Conversation threads live with the checkpointer (``memora users erase`` removes them).
        """
        validate_user_id(user_id)
        memory_ids, vectors = self.store.erase_user(user_id)
        report = ErasureReport(
            memories=len(memory_ids),
            vectors=vectors,
            profile_fields=self.profile.erase(user_id),
            audit_entries=self.audit.erase(user_id),
            forget_requests=self.forget_requests.erase(user_id),
        )
        self.profile.scrub()
        self.forget_requests.scrub()
        self.finish_scrub()
        return report

    def export_user(self, user_id: str) -> dict[str, Any]:
        """Everything the library holds of one user, as JSON-ready data."""
        validate_user_id(user_id)
        return {
            "user_id": user_id,
            "memories": [json.loads(unit.model_dump_json()) for unit in self.store.list(user_id)],
            "profile": self.profile.get(user_id),
            "audit": [dataclasses.asdict(entry) for entry in self.audit.entries(user_id, limit=-1)],
            "forget_requests": [asdict(r) for r in self.forget_requests.pending(user_id)],
        }

    def chain(self, user_id: str, memory_id: str) -> builtins.list[MemoryUnit]:
        """Every version a forget of this memory deletes (it and the older versions it
        replaced, oldest first); empty for an unknown or foreign id."""
        validate_user_id(user_id)
        validate_memory_id(memory_id)
        return self.store.replaced(user_id, memory_id)

    def history(self, user_id: str, memory_id: str) -> History:
        """A memory's supersession chain, newer versions too (oldest first), and its audit."""
        chain = self.store.chain(validate_user_id(user_id), validate_memory_id(memory_id))
        entries: list[AuditEntry] = []
        for unit in chain:
            entries.extend(self.audit.entries(user_id, unit.id))
        unique = {entry.seq: entry for entry in entries}
        return History(chain=chain, audit=[unique[seq] for seq in sorted(unique)])

    # -- review ---------------------------------------------------------------

    def review_items(self, user_id: str) -> builtins.list[MemoryUnit]:
        """Memories the write path flagged as an ambiguous conflict."""
        validate_user_id(user_id)
        return self.store.list(user_id, review_only=True)

    def resolve_review(self, user_id: str, memory_id: str, accept: bool) -> bool:
        """Accept or reject a flagged memory; returns False for an unknown or foreign id.

        Accepting supersedes what it conflicted with, exactly as the write path
        supersedes (the memory records what it replaced, history is kept);
        rejecting deletes it.
        """
        validate_user_id(user_id)
        validate_memory_id(memory_id)
        unit = self.store.get(user_id, memory_id)
        if unit is None:
            return False
        if not accept:
            self.forget(user_id, memory_id, actor="review")
            return True
        targets = unit.metadata.get("review_targets", [])
        superseded = self.store.supersede_with_stored(user_id, targets, memory_id) or []
        self.audit.record(user_id, "review", "accepted", memory_ids=[memory_id, *superseded])
        return True

    # -- lifecycle ------------------------------------------------------------

    def consolidate(self, user_id: str, now: datetime | None = None) -> ConsolidationReport:
        """Expire, merge near-duplicates and decay unused memories. Never deletes."""
        validate_user_id(user_id)
        consolidator = Consolidator(
            self.store,
            self.audit,
            self.reconciler,
            decay_after=timedelta(days=self.settings.decay_after_days),
            embeddings=self.embeddings,
        )
        return consolidator.consolidate(user_id, now or self.clock())

    # -- profile --------------------------------------------------------------

    def get_profile(self, user_id: str) -> dict[str, str]:
        """The user's confirmed profile."""
        validate_user_id(user_id)
        return self.profile.get(user_id)

    def set_profile(self, user_id: str, key: str, value: str) -> None:
        """Set one confirmed profile field.

        Raises:
            InvalidInput: A bad user id or field, or one the policy refuses (``profile.set``).
        """
        self.profile.set(user_id, key, value, judge=self.judge)
        self.finish_scrub()  # on Postgres a replaced value's old key is shredded

    def unset_profile(self, user_id: str, key: str) -> bool:
        """Remove one profile field; returns whether it was set."""
        validate_user_id(user_id)
        removed = self.profile.unset(user_id, key)
        self.finish_scrub()
        return removed

    # -- export, import, reindex -------------------------------------------------

    def export(self, user_id: str) -> Iterator[str]:
        """Every memory of the user as JSON lines (all fields, any status)."""
        validate_user_id(user_id)
        for unit in self.store.list(user_id):
            yield unit.model_dump_json()

    def import_lines(self, user_id: str, lines: Iterable[str]) -> ImportReport:
        """Load exported JSON lines into this user's store, each line checked like an ``add``.

        Every line passes the same limits and memory policy as ``add``; an accepted
        memory keeps its exported fields (status, importance, dates, supersession
        links, metadata, review flag). A refused line is reported by number and
        reason, never by its text, and the other lines are still imported. An id
        already present for this user is skipped, as is an active memory whose text
        the user already holds as an active memory; an id held by anyone else gets
        a new one (links in the file follow it), and nothing tells which.

        Raises:
            InvalidInput: The user id is not a valid one.
        """
        validate_user_id(user_id)
        report = ImportReport()
        units: builtins.list[MemoryUnit] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            unit = parse_import_line(
                user_id, line, number, report, self.audit, self.classifier, self.judge
            )
            if unit is not None:
                units.append(unit)
        existing = self.store.list(user_id)
        fresh = not_held(units, existing, report)
        fresh, report.unlinked = backed_links(fresh, {unit.id: unit for unit in existing})
        fresh = renumber(fresh, self.store.foreign_ids(user_id, [u.id for u in fresh]))
        self.ingest(fresh)
        report.imported = len(fresh)
        if fresh:
            self.audit.record(
                user_id,
                "write",
                "accepted",
                action="import",
                memory_ids=[unit.id for unit in fresh],
                source="import",
            )
        return report

    def reindex(self) -> int:
        """Re-embed every memory with the configured model."""
        return self.store.reindex(self.embeddings.embed_array)


_shared: dict[str, Memora] = {}
_shared_lock = threading.Lock()


def shared_memora(settings: Settings | None = None) -> Memora:
    """The process-wide Memora for the settings' data dir (graph nodes share it)."""
    settings = settings or get_settings()
    key = "|".join(
        str(part)
        for part in (
            settings.data_dir,
            settings.chroma_url,
            settings.chroma_collection,
            settings.database_url,
            settings.embeddings,
        )
    )
    with _shared_lock:
        if key not in _shared:
            _shared[key] = Memora(settings)
        return _shared[key]


def close_shared() -> None:
    """Flush and close every process-wide Memora."""
    while True:
        with _shared_lock:
            if not _shared:
                return
            _, memora = _shared.popitem()
        memora.close()
