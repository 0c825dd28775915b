"""Recall: filter a user's memories, then rank by fused relevance, importance and recency.

Ranking (the same for the agent's ``search_memory`` and for the evaluations):

    eligible   = this user's ACTIVE memories, not expired at ``now``, in scope
    dense      = cosine(embed(content_words(query)), memory)   (question words dropped)
    bm25       = BM25(query, memory), k1=0.9, b=0.1, stemmed, CJK bigrams
    fused      = (1 - w) * minmax(bm25) + w * minmax(dense)     (over the eligible set;
                 w = the model's fusion_dense_weight: WordLlama 0.5, e5 0.65)
    score      = fused * (1 + IMPORTANCE_WEIGHT * (importance - 3) / 2
                            + RECENCY_WEIGHT * 0.5 ** (age_days / half_life))

Min-max fusion ranks well (LoCoMo dev R@10 0.667, the same by
leave-one-conversation-out) but is relative to the other memories, so the
threshold uses an absolute score instead:

    relevance  = 0.5 * max(calibrated(dense), 0) + 0.5 * bm25 / (sum of the query terms' idf)
    calibrated(c) = (c - u) / (1 - u), u = the model's unrelated_cosine (WordLlama 0)

i.e. cosine averaged with the share of a perfect lexical match, both 0..1;
``retrieval_min_score`` compares against it and means the same in every
search. The caller can tighten limit and threshold but never loosen them.

A memory whose text is the query's (up to case, punctuation, filler and
spelling: ``reconcile.same_text``) comes first, whatever the rest says.

Conflicts go to the more recent memory: among the best ``max(limit, 20)``
results above the threshold, a memory with an OLDER restatement ranked above
it (stored-vector cosine >= 0.6 AND Jaccard overlap of index terms >= 0.3,
older = earlier ``created_at``, AND not another occasion or instance by
``reconcile.restates``: other dates, another named pet, one more language)
is moved directly above the best-ranked such one; all else keeps its order
and nothing is dropped. This catches updates
the write path did not supersede (Letta update dev: update_win 0.858 -> 0.909,
LoCoMo dev R@10 0.662 -> 0.656). Both gates are needed: cosine alone promotes
merely topical LoCoMo turns, overlap alone too. Each result keeps its own
``score``, so after a promotion scores are not monotone down the list.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from memora.models import MemoryUnit
from memora.recall.lexical import content_words, tokenize
from memora.storage.ranking_cache import UserIndex
from memora.write.reconcile import restates, same_text

DENSE_WEIGHT = 0.5
IMPORTANCE_WEIGHT = 0.1
RECENCY_WEIGHT = 0.1
CONFLICT_WINDOW = 20
"""Candidates (at least ``limit``) among which a newer restatement is moved up."""
CONFLICT_MIN_COSINE = 0.6
"""Stored-vector cosine at which two memories count as restatements of one fact."""
CONFLICT_MIN_OVERLAP = 0.3
"""And the Jaccard overlap of their index terms (``lexical.tokenize``) they must reach."""
EXACT_MIN_LEXICAL = 0.8
"""Share of a perfect lexical match from which a memory is checked for saying the query's words."""
EXACT_CHECKED = 50
"""Most memories (the lexically best) checked for saying exactly the query."""


@dataclass(frozen=True)
class RetrievedMemory:
    """A recalled memory with the scores that ranked it."""

    memory: MemoryUnit
    score: float
    relevance: float
    semantic_similarity: float
    lexical: float


def _minmax(values: np.ndarray) -> np.ndarray:
    """Scale to 0..1 over this search's candidates; equal values score 1 if positive, else 0."""
    spread = float(values.max() - values.min()) if values.size else 0.0
    if spread <= 1e-12:
        return (values > 0).astype(np.float64)
    return (values - values.min()) / spread


def _calibrated(cosines: np.ndarray, unrelated_cosine: float) -> np.ndarray:
    """Cosines on a scale where ``unrelated_cosine`` reads 0 and identical texts 1."""
    if unrelated_cosine == 0.0:
        return cosines
    return (cosines - unrelated_cosine) / (1.0 - unrelated_cosine)


def _content(index: UserIndex, row: int) -> str:
    return index.records[index.ids[row]].content


def _newer_restatements_first(
    index: UserIndex, rows: np.ndarray, order: np.ndarray, unrelated_cosine: float = 0.0
) -> np.ndarray:
    """Move each memory directly above the best-ranked older restatement of it.

    ``order`` indexes ``rows``, best first. One pass, best first: a memory that
    has an older restatement (stored-vector cosine >= ``CONFLICT_MIN_COSINE``
    and index-term Jaccard >= ``CONFLICT_MIN_OVERLAP``) ranked above it is
    moved to just above the highest such one; everything else keeps its
    relative order. Nothing is added or dropped.
    """
    if order.size < 2:
        return order
    picked = rows[order]
    vectors = index.vectors[picked]
    similar = _calibrated(vectors @ vectors.T, unrelated_cosine) >= CONFLICT_MIN_COSINE
    if CONFLICT_MIN_OVERLAP > 0 and similar.any():
        terms = [set(tokenize(index.records[index.ids[row]].content)) for row in picked]
        for a, b in zip(*np.nonzero(np.triu(similar, 1)), strict=True):
            shared = len(terms[a] & terms[b])
            union = len(terms[a] | terms[b])
            if union == 0 or shared / union < CONFLICT_MIN_OVERLAP:
                similar[a, b] = similar[b, a] = False
    created = np.array([index.records[index.ids[row]].created_at for row in picked])
    current = list(range(order.size))
    for item in range(order.size):
        position = current.index(item)
        for above in range(position):
            other = current[above]
            if (
                similar[item, other]
                and created[other] < created[item]
                and restates(_content(index, picked[other]), _content(index, picked[item]))
            ):
                current.insert(above, current.pop(position))
                break
    return order[np.asarray(current)]


def _saying_the_query(
    index: UserIndex, rows: np.ndarray, query: str, lexical: np.ndarray, keep: np.ndarray
) -> np.ndarray:
    """Positions (into ``rows``) of memories whose text is the query's, best lexical first.

    They go first whatever the scores and the conflict ordering say: someone
    who searches a memory's exact words is looking for that memory. Only the
    lexically best ``EXACT_CHECKED`` memories near a perfect lexical match are
    compared, so the check costs nothing on a large store.
    """
    near = keep[lexical[keep] >= EXACT_MIN_LEXICAL]
    if near.size > EXACT_CHECKED:
        near = near[np.argpartition(-lexical[near], EXACT_CHECKED - 1)[:EXACT_CHECKED]]
    near = near[np.argsort(-lexical[near], kind="stable")]
    found = [i for i in near if same_text(index.records[index.ids[rows[i]]].content, query)]
    return np.asarray(found, dtype=keep.dtype)


def dense_query_text(query: str) -> str:
    """The text embedded for a query: question and stop words carry no meaning for WordLlama."""
    return content_words(query)


def rank(
    index: UserIndex,
    query: str,
    query_vector: np.ndarray,
    *,
    now: datetime,
    limit: int,
    min_relevance: float,
    thread_id: str | None = None,
    half_life_days: float = 90.0,
    unrelated_cosine: float = 0.0,
    dense_weight: float = DENSE_WEIGHT,
    newer_restatements_first: bool = True,
) -> list[RetrievedMemory]:
    """Rank a user's eligible memories for a query.

    Args:
        index: The user's in-process index (from ``LongTermMemoryStore.index_for``).
        query: The search text.
        query_vector: Unit-length embedding of ``dense_query_text(query)``.
        now: The clock for expiry and recency (evaluations pass the data's own dates).
        limit: Most results to return.
        min_relevance: Results below this relevance are dropped.
        thread_id: The current thread, for thread-scoped memories.
        half_life_days: Recency half-life.
        unrelated_cosine: The model's ``EmbeddingSpec.unrelated_cosine``: cosines are
            rescaled from it to 1 before the threshold and the restatement gate read them.
        dense_weight: The dense side's share of ``fused`` (the model's
            ``EmbeddingSpec.fusion_dense_weight``).
        newer_restatements_first: Move a memory above the older restatements of it (what a
            reader wants first); the write path, which judges every neighbour, skips it.

    Returns:
        Best first, at most ``limit``.
    """
    rows = index.eligible_rows(now, thread_id)
    if rows.size == 0 or limit <= 0:
        return []
    # Scoring every row then selecting avoids copying the eligible rows' vectors.
    dense = (index.vectors[: index.size] @ np.asarray(query_vector, dtype=np.float32))[rows]
    bm25 = np.zeros(rows.size)
    slot_scores = index.lexical.slot_scores(query)
    if slot_scores is not None:
        slots = index.lexical_slot[rows]
        indexed = slots >= 0
        bm25[indexed] = slot_scores[slots[indexed]]
    ceiling = index.lexical.perfect_score(query)
    lexical = np.minimum(1.0, bm25 / ceiling) if ceiling > 0 else np.zeros_like(bm25)
    semantic = np.clip(_calibrated(dense, unrelated_cosine), 0.0, 1.0)
    relevance = DENSE_WEIGHT * semantic + (1 - DENSE_WEIGHT) * lexical
    fused = dense_weight * _minmax(dense.astype(np.float64)) + (1 - dense_weight) * _minmax(bm25)
    age_days = np.maximum(0.0, now.timestamp() - index.last_used_at[rows]) / 86400.0
    recency = 0.5 ** (age_days / half_life_days)
    score = fused * (
        1 + IMPORTANCE_WEIGHT * (index.importance[rows] - 3) / 2 + RECENCY_WEIGHT * recency
    )
    keep = np.flatnonzero(relevance >= min_relevance)
    exact = _saying_the_query(index, rows, query, lexical, keep)
    if exact.size:
        keep = np.setdiff1d(keep, exact)
    window = max(limit, CONFLICT_WINDOW)
    if keep.size > window:
        keep = keep[np.argpartition(-score[keep], window - 1)[:window]]
    order = keep[np.argsort(-score[keep], kind="stable")]
    if newer_restatements_first:
        order = _newer_restatements_first(index, rows, order, unrelated_cosine)
    order = np.concatenate([exact, order])[:limit]
    return [
        RetrievedMemory(
            memory=index.units[index.ids[rows[i]]],
            score=float(score[i]),
            relevance=float(relevance[i]),
            semantic_similarity=float(dense[i]),
            lexical=float(lexical[i]),
        )
        for i in order
    ]
