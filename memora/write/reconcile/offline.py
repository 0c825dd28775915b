"""The offline reconciler: token alignment and statement structure, gated by similarity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from memora.models import MemoryCandidate, Neighbour, ReconcileAction, ReconcileDecision
from memora.write.reconcile.alignment import (
    CONTRAST,
    Alignment,
    align,
    comparison_tokens,
    content_tokens,
    tail_swap,
)
from memora.write.reconcile.structure import (
    Relation,
    capitalised_names,
    has_contrast,
    has_named_attribute,
    is_contrasted,
    predicate_overlap,
    relate,
    stem_set,
    strip_filler,
    subject_tokens,
)


# ---------------------------------------------------------------- offline
class Reconciler(Protocol):
    """Decides what the write path does with an accepted candidate."""

    def decide(self, candidate: MemoryCandidate, neighbours: list[Neighbour]) -> ReconcileDecision:
        """Return the action for ``candidate`` given its nearest active memories."""
        ...


@dataclass(frozen=True)
class ReconcileThresholds:
    """The offline reconciler's thresholds, in one place (cosines are of the configured encoder)."""

    gate: float = 0.5
    """Minimum cosine for a neighbour to be compared at all."""

    related: float = 0.65
    """Minimum cosine for KEEP_BOTH instead of CREATE."""

    min_coverage: float = 0.65
    """Fraction of a memory the candidate must repeat for a swap."""

    max_changed_fraction: float = 0.45
    """Most of a memory a swap may replace."""

    max_changed_tokens: int = 6
    """Most tokens a swap may replace."""

    min_shared_content: int = 1
    """Content words that must be shared for a swap."""

    min_shared_content_subject: int = 5
    """Content words that must be shared when the swapped span is the statement's subject (at its
    start): "Nora is a violinist" and "Joren is a violinist" are both true, but the same long
    event with a different participant is a correction.
    """

    max_value_growth: int = 5
    """How many tokens longer a replacing span may be than the span it replaces."""

    max_dropped_content: int = 1
    """Content words a swap may drop without replacement."""

    max_swapped_spans: int = 2
    """Separate spans of a memory a swap may change."""

    contrast_gate: float = 0.65
    """Minimum cosine for a candidate that negates or restricts ("never", "only", "instead") a
    memory about the same subject to supersede it although the wording differs.
    """

    contrast_low_gate: float = 0.5
    """Minimum cosine for such a candidate when its match with the memory clearly leads all others
    (see ``match_margin``).
    """

    contrast_margin: float = 0.0
    """Such a paraphrased contradiction supersedes only the memories within this cosine of the
    closest one, so that other facts about the same subject survive.
    """

    contrast_min_topic: int = 2
    """Content words (stemmed, besides the subject) such a candidate must share with the memory it
    contradicts.
    """

    match_score: float = 0.9
    """Minimum match score (cosine + ``predicate_weight`` x the Jaccard overlap of the stemmed non-
    name words) for a reworded statement about the same names to supersede a memory without a
    token swap or a contrast word.
    """

    match_margin: float = 0.2
    """How far that best match must lead every other memory."""

    predicate_weight: float = 0.5
    """Weight of the predicate-word overlap in the match score."""

    tie: float = 0.02
    """Of several superseded candidates, only those within this match score of the best are taken;
    the others are more likely separate facts.
    """

    min_swap_predicate: float = 0.2
    """Least predicate overlap (as in the match score) for a token swap to count: "A and B both
    attended the same university" -> "A and B are members of the same chess club" swaps the verb
    too.
    """


class OfflineReconciler:
    """Rules over token alignment, with embedding similarity as a gate.

    For each neighbour the two statements are aligned token by token. A
    candidate that repeats a memory (up to case, punctuation and filler words)
    is a duplicate. A candidate that keeps most of a memory and swaps a short
    span (a name, number, place, level) states a new value for the same slot,
    so it supersedes that memory. A reworded candidate that negates or restricts
    ("never", "only", "instead") a close memory about the same subject and topic
    supersedes the closest such memory. A reworded candidate about the same names
    whose match score (cosine + predicate-word overlap) is high and clearly ahead
    of every other memory restates that one memory with a new value. Of several
    superseded memories only the best-matching ones (ties) are taken. Everything
    else is new or merely related.
    """

    def __init__(self, thresholds: ReconcileThresholds | None = None) -> None:
        self.thresholds = thresholds or ReconcileThresholds()

    def decide(self, candidate: MemoryCandidate, neighbours: list[Neighbour]) -> ReconcileDecision:
        """Return SKIP, UPDATE, KEEP_BOTH or CREATE for ``candidate``.

        Structure decides first (:func:`relate`): a repeat is skipped, the same
        attribute of the same subject is superseded, another occasion or
        instance is never touched. The alignment rules below judge only the
        memories structure says nothing about.
        """
        relations = [relate(n.memory.content, candidate.content) for n in neighbours]
        for neighbour, relation in zip(neighbours, relations, strict=True):
            if relation is Relation.REPEAT:
                return ReconcileDecision(
                    action=ReconcileAction.SKIP,
                    target_ids=[neighbour.memory.id],
                    rationale="repeats an existing memory",
                )
        same: list[str] = []
        undecided: list[Neighbour] = []
        for neighbour, relation in zip(neighbours, relations, strict=True):
            if relation is Relation.SAME_ATTRIBUTE and self._close_enough(neighbour, candidate):
                same.append(neighbour.memory.id)
            elif relation is not Relation.DISTINCT:
                undecided.append(neighbour)
        decision = self._by_alignment(candidate, undecided)
        if same:
            others = decision.target_ids if decision.action is ReconcileAction.UPDATE else []
            return ReconcileDecision(
                action=ReconcileAction.UPDATE,
                target_ids=list(dict.fromkeys([*same, *others])),
                rationale="states a new value for the same attribute",
            )
        related = (
            bool(neighbours) and max(n.similarity for n in neighbours) >= self.thresholds.related
        )
        if decision.action is ReconcileAction.CREATE and related:
            return ReconcileDecision(
                action=ReconcileAction.KEEP_BOTH,
                target_ids=[],
                rationale="related to existing memories but compatible",
            )
        return decision

    def _close_enough(self, neighbour: Neighbour, candidate: MemoryCandidate) -> bool:
        """A relation cue alone ("lives in") needs the cosine gate or a change word.

        "I live in a small flat" and "I live in Kaohsiung" share the cue but not
        the kind of value; "moved to" says the value changed, and a named
        attribute ("the user's phone is") says which slot it fills even when a
        brand name moves the embedding far away.
        """
        old, new = neighbour.memory.content, candidate.content
        return (
            neighbour.similarity >= self.thresholds.gate
            or has_contrast(old, new)
            or has_named_attribute(old, new)
        )

    def _by_alignment(
        self, candidate: MemoryCandidate, neighbours: list[Neighbour]
    ) -> ReconcileDecision:
        """The token-alignment rules over the memories structure left open."""
        new = comparison_tokens(candidate.content)
        superseded: list[Neighbour] = []
        for neighbour in neighbours:
            old = comparison_tokens(neighbour.memory.content)
            if neighbour.similarity < self.thresholds.gate and not tail_swap(old, new):
                continue
            verdict = self._compare(old, new)
            if (
                verdict is ReconcileAction.UPDATE
                and predicate_overlap(neighbour.memory.content, candidate.content)
                < self.thresholds.min_swap_predicate
            ):
                verdict = None  # the verb changed as well: another fact, not a new value
            if verdict is ReconcileAction.SKIP:
                return ReconcileDecision(
                    action=ReconcileAction.SKIP,
                    target_ids=[neighbour.memory.id],
                    rationale="repeats an existing memory",
                )
            if verdict is ReconcileAction.UPDATE:
                superseded.append(neighbour)
        # A swap and a contrast may point at different memories: pool them, and
        # let the match score pick (below).
        superseded += [
            n for n in self._contradicted(candidate.content, new, neighbours) if n not in superseded
        ]
        if not superseded:
            superseded = self._restated(candidate.content, new, neighbours)
        if superseded:
            return ReconcileDecision(
                action=ReconcileAction.UPDATE,
                target_ids=self._closest(candidate.content, superseded),
                rationale="states a new value for the same fact",
            )
        if neighbours and max(n.similarity for n in neighbours) >= self.thresholds.related:
            return ReconcileDecision(
                action=ReconcileAction.KEEP_BOTH,
                target_ids=[],
                rationale="related to existing memories but compatible",
            )
        return ReconcileDecision(action=ReconcileAction.CREATE, rationale="new information")

    def _match(self, candidate: str, neighbour: Neighbour) -> float:
        """How strongly a memory looks like the same statement as the candidate.

        Cosine plus the overlap of the predicate words (stemmed content words that
        are not part of a name), which is order-insensitive, so "A and B" and
        "B and A" or a swapped role still count as the same statement.
        """
        return neighbour.similarity + self.thresholds.predicate_weight * predicate_overlap(
            neighbour.memory.content, candidate
        )

    def _leads(self, candidate: str, neighbour: Neighbour, neighbours: list[Neighbour]) -> bool:
        """Whether ``neighbour`` matches the candidate clearly better than all others."""
        own = self._match(candidate, neighbour)
        others = [self._match(candidate, n) for n in neighbours if n is not neighbour]
        return all(own - other >= self.thresholds.match_margin for other in others)

    def _closest(self, candidate: str, hits: list[Neighbour]) -> list[str]:
        """Keep only the best-matching superseded memories (ties kept)."""
        scores = [self._match(candidate, n) for n in hits]
        best = max(scores)
        return [
            n.memory.id
            for n, score in zip(hits, scores, strict=True)
            if score >= best - self.thresholds.tie
        ]

    def _restated(
        self, candidate: str, new: list[str], neighbours: list[Neighbour]
    ) -> list[Neighbour]:
        """The one memory a reworded candidate restates with a different value.

        No token swap and no contrast word, so this asks for more: the memory's
        names must reappear in the candidate (one may be replaced, none merely
        added), something of the memory must be lost (a candidate that keeps it
        whole is a refinement),
        and its match score must be high and clearly ahead of every other memory,
        because a new fact about the same people is usually compatible.
        """
        if not neighbours:
            return []
        scored = sorted(
            ((self._match(candidate, n), n) for n in neighbours), key=lambda pair: -pair[0]
        )
        best_score, best = scored[0]
        runner_up = scored[1][0] if len(scored) > 1 else float("-inf")
        if best.similarity < self.thresholds.gate or best_score < self.thresholds.match_score:
            return []
        if best_score - runner_up < self.thresholds.match_margin:
            return []
        old_names, new_names = capitalised_names(best.memory.content), capitalised_names(candidate)
        if len(old_names - new_names) > 1 or (old_names and not old_names & new_names):
            return []
        if new_names - old_names and old_names <= new_names:
            return []  # names something more without replacing anything: an addition
        old = comparison_tokens(best.memory.content)
        if not content_tokens(align(old, new).old_changed_tokens()):
            return []
        return [best]

    def _contradicted(
        self, candidate: str, new: list[str], neighbours: list[Neighbour]
    ) -> list[Neighbour]:
        """Memories a reworded candidate contradicts ("X has never ...", "X only ...").

        Wording differs too much for alignment, so this relies on a contrast word
        the memory lacks, a shared subject and a high cosine; only the closest
        memories are taken, because the others are more likely separate facts.
        A memory below ``contrast_gate`` (but above ``contrast_low_gate``) counts
        only if its match score leads every other memory by ``match_margin``.
        """
        cues = CONTRAST & set(new)
        if not cues:
            return []
        subject = subject_tokens(new)
        topic = stem_set(new) - stem_set(list(subject))
        hits = []
        for n in neighbours:
            old = comparison_tokens(n.memory.content)
            if n.similarity < self.thresholds.contrast_low_gate or cues <= set(old):
                continue
            if not subject & set(old):
                continue
            if n.similarity < self.thresholds.contrast_gate and not self._leads(
                candidate, n, neighbours
            ):
                continue
            # Sharing only the subject means another fact about the same person.
            if len(topic & stem_set(old)) >= self.thresholds.contrast_min_topic:
                hits.append(n)
        if not hits:
            return []
        best = max(n.similarity for n in hits)
        return [n for n in hits if n.similarity >= best - self.thresholds.contrast_margin]

    def token_verdict(self, old: list[str], new: list[str]) -> ReconcileAction | None:
        """What token alignment alone says of one (memory, candidate) pair of token lists:
        SKIP (a repeat), UPDATE (a value swapped) or None (no relation found)."""
        return self._compare(old, new)

    def _compare(self, old: list[str], new: list[str]) -> ReconcileAction | None:
        """Classify one (memory, candidate) pair; None means no relation found."""
        if not old or not new:
            return None
        if strip_filler(old) == strip_filler(new):
            return ReconcileAction.SKIP
        al = align(old, new)
        if not content_tokens(al.old_changed_tokens()):
            # Nothing meaningful of the memory was lost: a repeat with extra filler is a
            # duplicate; a refinement that keeps it whole is compatible, not a new value.
            return None if content_tokens(al.new_changed_tokens()) else ReconcileAction.SKIP
        if not content_tokens(al.new_changed_tokens()):
            return None  # the candidate is a less specific version; keep both
        return ReconcileAction.UPDATE if self._is_swap(al) else None

    def _is_swap(self, al: Alignment) -> bool:
        """Whether the candidate replaces short value spans in the same statement.

        Added clauses are fine ("I moved to X, I live in X now"); what the memory
        loses must be short values swapped for similarly short ones, and enough
        of it must survive to show it is the same statement.
        """
        if al.old_coverage < self.thresholds.min_coverage:
            return False
        if len(content_tokens(al.shared)) < self.thresholds.min_shared_content:
            return False
        changed = len(al.old_changed_tokens())
        if (
            changed > self.thresholds.max_changed_tokens
            or changed > self.thresholds.max_changed_fraction * len(al.old)
        ):
            return False
        for (i1, i2), (j1, j2) in al.pairs:
            if i1 == i2:
                continue  # pure insertion: the candidate adds, the memory loses nothing
            if (
                j1 == j2
                and len(content_tokens(al.old[i1:i2])) > self.thresholds.max_dropped_content
            ):
                return False  # a meaningful part of the memory dropped, nothing in its place
            if (j2 - j1) > (i2 - i1) + self.thresholds.max_value_growth:
                return False  # a phrase rewritten into a longer one is not a value swap
        swapped = [
            p for p in al.pairs if p[0][0] < p[0][1] and content_tokens(al.old[p[0][0] : p[0][1]])
        ]
        if len(swapped) > self.thresholds.max_swapped_spans:
            return False  # two slots changed at once: a different fact, not a new value
        if al.pairs and al.pairs[0][0][0] == 0 and al.pairs[0][0][1] > 0 and not is_contrasted(al):
            return len(content_tokens(al.shared)) >= self.thresholds.min_shared_content_subject
        return True
