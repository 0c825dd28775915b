"""Reconciliation: decide how a new memory candidate relates to what is stored.

Two implementations share the :class:`Reconciler` protocol: an offline one
(token alignment gated by embedding similarity) and one that asks the
configured chat model for a structured verdict.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from memora.lexical import HAN_CHARS
from memora.models import MemoryCandidate, Neighbour, ReconcileAction, ReconcileDecision
from memora.prompts import RECONCILE_PROMPT


def _words(text: str) -> frozenset[str]:
    """Build a word set from a space-separated list (CJK entries are single characters)."""
    return frozenset(text.split())


# Words whose presence or absence does not change what a statement says.
_FILLER = _words(
    "a an the really very also just actually now still so quite indeed currently too "
    "definitely truly basically of course well um uh please 也 很 真 还 其 实 啦 呢 吧 啊 了"
)
# Function words: shared ones do not show that two statements are about the same thing.
_STOP = _FILLER | _words(
    "i me my mine we our you your he him his she her they them their it its is are was were "
    "be been being am has have had do does did and or but to in on at for with by from as "
    "that this these those who which what where when while not no never only once both "
    "的 是 在 我 你 他 她 它 们 和 与 及 或 但 不 没 有 就 都 把 被 给 对 从 到"
)
# Words that mark the candidate as a correction or contrast rather than an addition.
_CONTRAST = _words(
    "not never no longer anymore instead only exclusively solely rather moved changed switched "
    "nor neither different 不 没 只 仅 改 搬 换"
)
# How many leading tokens are taken as a statement's subject ("Nora Fishel and Eliza", 我的英文).
_SUBJECT_SPAN = 4
_CJK = re.compile(f"[{HAN_CHARS}]")
_CJK_SPLIT = re.compile(f"[{HAN_CHARS}]|[^{HAN_CHARS}]+")
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=1)
def _t2s() -> Any:
    """Return an OpenCC Traditional-to-Simplified converter, or None if unavailable."""
    try:
        import opencc
    except ImportError:  # pragma: no cover - opencc is a declared dependency
        return None
    return opencc.OpenCC("t2s")


def tokenize(text: str) -> list[str]:
    """Split text into comparable tokens: lower-cased words, single CJK characters.

    Traditional Chinese is folded to Simplified so that 程度 and 程度 compare
    equal whatever script the user typed in; CJK has no spaces, so each
    character is a token and the alignment works on character sequences.
    """
    converter = _t2s()
    text = unicodedata.normalize("NFKC", text).lower()
    if converter is not None and _CJK.search(text):
        text = converter.convert(text)
    tokens: list[str] = []
    for word in _WORD.findall(text):
        if _CJK.search(word):
            tokens.extend(_split_cjk(word))
        else:
            tokens.append(word)
    return tokens


TAIL_SWAP_MIN_PREFIX = 3
TAIL_SWAP_MAX_VALUE = 3


def _tail_swap(old: list[str], new: list[str]) -> bool:
    """Same statement up to a short final value ("the user's name is X" -> "... is Y").

    A sentence that differs only in its last few tokens restates one slot with
    a new value; names and numbers move an averaged embedding so much that the
    cosine gate alone would miss it.
    """
    prefix = 0
    for a, b in zip(old, new, strict=False):
        if a != b:
            break
        prefix += 1
    old_value, new_value = old[prefix:], new[prefix:]
    return (
        prefix >= TAIL_SWAP_MIN_PREFIX
        and prefix >= 0.6 * len(old)
        and 0 < len(old_value) <= TAIL_SWAP_MAX_VALUE
        and 0 < len(new_value) <= TAIL_SWAP_MAX_VALUE
    )


def _split_cjk(word: str) -> list[str]:
    """Split a mixed word into CJK characters and runs of other word characters."""
    return _CJK_SPLIT.findall(word)


def _content(tokens: list[str]) -> list[str]:
    """Return the tokens that carry meaning (not function words)."""
    return [t for t in tokens if t not in _STOP]


@dataclass(frozen=True)
class Alignment:
    """How an existing statement (old) maps onto a candidate (new)."""

    old: list[str]
    new: list[str]
    shared: list[str]
    old_changed: list[tuple[int, int]]
    new_changed: list[tuple[int, int]]
    pairs: list[tuple[tuple[int, int], tuple[int, int]]]
    """Each differing op as ((old start, old end), (new start, new end))."""

    @property
    def old_coverage(self) -> float:
        """Fraction of the old statement found unchanged in the new one."""
        return len(self.shared) / max(1, len(self.old))

    def old_changed_tokens(self) -> list[str]:
        """Old tokens that the candidate replaced or dropped."""
        return [t for i, j in self.old_changed for t in self.old[i:j]]

    def new_changed_tokens(self) -> list[str]:
        """Candidate tokens that are not in the old statement's aligned part."""
        return [t for i, j in self.new_changed for t in self.new[i:j]]


def align(old: list[str], new: list[str]) -> Alignment:
    """Align two token sequences and collect the shared and differing spans."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    shared: list[str] = []
    old_changed: list[tuple[int, int]] = []
    new_changed: list[tuple[int, int]] = []
    pairs: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for tag, i1, i2, j1, j2 in _coalesce(matcher.get_opcodes()):
        if tag == "equal":
            shared.extend(old[i1:i2])
            continue
        pairs.append(((i1, i2), (j1, j2)))
        if i2 > i1:
            old_changed.append((i1, i2))
        if j2 > j1:
            new_changed.append((j1, j2))
    return Alignment(old, new, shared, old_changed, new_changed, pairs)


Opcode = tuple[str, int, int, int, int]


def _coalesce(opcodes: Sequence[Opcode]) -> list[Opcode]:
    """Merge changes separated by a single shared token into one change.

    "the University of California" -> "New York University" matches on
    "university" alone, which would split one swapped name into a replacement
    and a bare deletion; one shared word between two edits is a coincidence,
    not context.
    """
    merged: list[Opcode] = []
    for op in opcodes:
        if (
            op[0] != "equal"
            and len(merged) >= 2
            and merged[-1][0] == "equal"
            and merged[-1][2] - merged[-1][1] <= 1
            and merged[-2][0] != "equal"
        ):
            merged.pop()
            first = merged.pop()
            op = ("replace", first[1], op[2], first[3], op[4])
        merged.append(op)
    return merged


class Reconciler(Protocol):
    """Decides what the write path does with an accepted candidate."""

    def decide(self, candidate: MemoryCandidate, neighbours: list[Neighbour]) -> ReconcileDecision:
        """Return the action for ``candidate`` given its nearest active memories."""
        ...


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

    def __init__(
        self,
        *,
        gate: float = 0.5,
        related: float = 0.65,
        min_coverage: float = 0.65,
        max_changed_fraction: float = 0.45,
        max_changed_tokens: int = 6,
        min_shared_content: int = 1,
        min_shared_content_subject: int = 5,
        max_value_growth: int = 5,
        max_dropped_content: int = 1,
        max_swapped_spans: int = 2,
        contrast_gate: float = 0.65,
        contrast_low_gate: float = 0.5,
        contrast_margin: float = 0.0,
        contrast_min_topic: int = 2,
        match_score: float = 0.9,
        match_margin: float = 0.2,
        predicate_weight: float = 0.5,
        tie: float = 0.02,
        min_swap_predicate: float = 0.2,
    ) -> None:
        """Configure the thresholds.

        Args:
            gate: Minimum cosine for a neighbour to be compared at all.
            related: Minimum cosine for KEEP_BOTH instead of CREATE.
            min_coverage: Fraction of a memory the candidate must repeat for a swap.
            max_changed_fraction: Most of a memory a swap may replace.
            max_changed_tokens: Most tokens a swap may replace.
            min_shared_content: Content words that must be shared for a swap.
            min_shared_content_subject: Content words that must be shared when the
                swapped span is the statement's subject (at its start): "Nora is a
                violinist" and "Joren is a violinist" are both true, but the same
                long event with a different participant is a correction.
            max_value_growth: How many tokens longer a replacing span may be than
                the span it replaces.
            max_dropped_content: Content words a swap may drop without replacement.
            max_swapped_spans: Separate spans of a memory a swap may change.
            contrast_gate: Minimum cosine for a candidate that negates or restricts
                ("never", "only", "instead") a memory about the same subject to
                supersede it although the wording differs.
            contrast_low_gate: Minimum cosine for such a candidate when its match
                with the memory clearly leads all others (see ``match_margin``).
            contrast_margin: Such a paraphrased contradiction supersedes only the
                memories within this cosine of the closest one, so that other facts
                about the same subject survive.
            contrast_min_topic: Content words (stemmed, besides the subject) such a
                candidate must share with the memory it contradicts.
            match_score: Minimum match score (cosine + ``predicate_weight`` x the
                Jaccard overlap of the stemmed non-name words) for a reworded
                statement about the same names to supersede a memory without a
                token swap or a contrast word.
            match_margin: How far that best match must lead every other memory.
            predicate_weight: Weight of the predicate-word overlap in the match score.
            tie: Of several superseded candidates, only those within this match score
                of the best are taken; the others are more likely separate facts.
            min_swap_predicate: Least predicate overlap (as in the match score) for a
                token swap to count: "A and B both attended the same university" ->
                "A and B are members of the same chess club" swaps the verb too.
        """
        self.gate = gate
        self.related = related
        self.min_coverage = min_coverage
        self.max_changed_fraction = max_changed_fraction
        self.max_changed_tokens = max_changed_tokens
        self.min_shared_content = min_shared_content
        self.min_shared_content_subject = min_shared_content_subject
        self.max_value_growth = max_value_growth
        self.max_dropped_content = max_dropped_content
        self.max_swapped_spans = max_swapped_spans
        self.contrast_gate = contrast_gate
        self.contrast_low_gate = contrast_low_gate
        self.contrast_margin = contrast_margin
        self.contrast_min_topic = contrast_min_topic
        self.match_score = match_score
        self.match_margin = match_margin
        self.predicate_weight = predicate_weight
        self.tie = tie
        self.min_swap_predicate = min_swap_predicate

    def decide(self, candidate: MemoryCandidate, neighbours: list[Neighbour]) -> ReconcileDecision:
        """Return SKIP, UPDATE, KEEP_BOTH or CREATE for ``candidate``."""
        new = tokenize(candidate.content)
        superseded: list[Neighbour] = []
        for neighbour in neighbours:
            old = tokenize(neighbour.memory.content)
            if neighbour.similarity < self.gate and not _tail_swap(old, new):
                continue
            verdict = self._compare(old, new)
            if (
                verdict is ReconcileAction.UPDATE
                and _predicate_overlap(neighbour.memory.content, candidate.content)
                < self.min_swap_predicate
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
        if neighbours and max(n.similarity for n in neighbours) >= self.related:
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
        return neighbour.similarity + self.predicate_weight * _predicate_overlap(
            neighbour.memory.content, candidate
        )

    def _leads(self, candidate: str, neighbour: Neighbour, neighbours: list[Neighbour]) -> bool:
        """Whether ``neighbour`` matches the candidate clearly better than all others."""
        own = self._match(candidate, neighbour)
        others = [self._match(candidate, n) for n in neighbours if n is not neighbour]
        return all(own - other >= self.match_margin for other in others)

    def _closest(self, candidate: str, hits: list[Neighbour]) -> list[str]:
        """Keep only the best-matching superseded memories (ties kept)."""
        scores = [self._match(candidate, n) for n in hits]
        best = max(scores)
        return [
            n.memory.id for n, score in zip(hits, scores, strict=True) if score >= best - self.tie
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
        if best.similarity < self.gate or best_score < self.match_score:
            return []
        if best_score - runner_up < self.match_margin:
            return []
        old_names, new_names = _names(best.memory.content), _names(candidate)
        if len(old_names - new_names) > 1 or (old_names and not old_names & new_names):
            return []
        if new_names - old_names and old_names <= new_names:
            return []  # names something more without replacing anything: an addition
        old = tokenize(best.memory.content)
        if not _content(align(old, new).old_changed_tokens()):
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
        cues = _CONTRAST & set(new)
        if not cues:
            return []
        subject = _subject(new)
        topic = _stems(new) - _stems(list(subject))
        hits = []
        for n in neighbours:
            old = tokenize(n.memory.content)
            if n.similarity < self.contrast_low_gate or cues <= set(old):
                continue
            if not subject & set(old):
                continue
            if n.similarity < self.contrast_gate and not self._leads(candidate, n, neighbours):
                continue
            # Sharing only the subject means another fact about the same person.
            if len(topic & _stems(old)) >= self.contrast_min_topic:
                hits.append(n)
        if not hits:
            return []
        best = max(n.similarity for n in hits)
        return [n for n in hits if n.similarity >= best - self.contrast_margin]

    def _compare(self, old: list[str], new: list[str]) -> ReconcileAction | None:
        """Classify one (memory, candidate) pair; None means no relation found."""
        if not old or not new:
            return None
        if _strip_filler(old) == _strip_filler(new):
            return ReconcileAction.SKIP
        al = align(old, new)
        if not _content(al.old_changed_tokens()):
            # Nothing meaningful of the memory was lost: a repeat with extra filler is a
            # duplicate; a refinement that keeps it whole is compatible, not a new value.
            return None if _content(al.new_changed_tokens()) else ReconcileAction.SKIP
        if not _content(al.new_changed_tokens()):
            return None  # the candidate is a less specific version; keep both
        return ReconcileAction.UPDATE if self._is_swap(al) else None

    def _is_swap(self, al: Alignment) -> bool:
        """Whether the candidate replaces short value spans in the same statement.

        Added clauses are fine ("I moved to X, I live in X now"); what the memory
        loses must be short values swapped for similarly short ones, and enough
        of it must survive to show it is the same statement.
        """
        if al.old_coverage < self.min_coverage:
            return False
        if len(_content(al.shared)) < self.min_shared_content:
            return False
        changed = len(al.old_changed_tokens())
        if changed > self.max_changed_tokens or changed > self.max_changed_fraction * len(al.old):
            return False
        for (i1, i2), (j1, j2) in al.pairs:
            if i1 == i2:
                continue  # pure insertion: the candidate adds, the memory loses nothing
            if j1 == j2 and len(_content(al.old[i1:i2])) > self.max_dropped_content:
                return False  # a meaningful part of the memory dropped, nothing in its place
            if (j2 - j1) > (i2 - i1) + self.max_value_growth:
                return False  # a phrase rewritten into a longer one is not a value swap
        swapped = [p for p in al.pairs if p[0][0] < p[0][1] and _content(al.old[p[0][0] : p[0][1]])]
        if len(swapped) > self.max_swapped_spans:
            return False  # two slots changed at once: a different fact, not a new value
        if al.pairs and al.pairs[0][0][0] == 0 and al.pairs[0][0][1] > 0 and not _contrasted(al):
            return len(_content(al.shared)) >= self.min_shared_content_subject
        return True


def _subject(tokens: list[str]) -> set[str]:
    """Content words of the statement's opening, a cheap stand-in for its subject."""
    return set(_content(tokens[:_SUBJECT_SPAN]))


def _stems(tokens: list[str]) -> set[str]:
    """Stemmed content words, so that "participated" meets "participating"."""
    return set(_stemmer().stemWords(_content(tokens)))


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    """The English Snowball stemmer (CJK characters pass through unchanged)."""
    import snowballstemmer

    return snowballstemmer.stemmer("english")


# A run of capitalised words, possibly joined by "of", "for", "the": "University of Oregon".
_NAME = re.compile(r"[A-Z][\w'-]*(?:\s+(?:(?:of|for|the|de|van|von)\s+)*[A-Z][\w'-]*)*")
# Capitalised words that open a sentence or a title rather than name something.
_NOT_NAMES = _words("all both in after before on while during since dr mr mrs ms prof professor")


def _names(text: str) -> set[str]:
    """Lower-cased capitalised spans: a cheap stand-in for the named entities."""
    found = set()
    for span in _NAME.findall(text):
        words = span.lower().split()
        while words and words[0] in _STOP | _NOT_NAMES:
            words.pop(0)
        if words:
            found.add(" ".join(words).removesuffix("'s"))
    return found


def _name_words(text: str) -> set[str]:
    """Stemmed words of the capitalised spans."""
    return _stems([w for name in _names(text) for w in tokenize(name)])


def _predicate_overlap(old: str, new: str) -> float:
    """Jaccard overlap of the stemmed content words outside names (0..1)."""
    old_words = _stems(tokenize(old)) - _name_words(old)
    new_words = _stems(tokenize(new)) - _name_words(new)
    union = old_words | new_words
    return len(old_words & new_words) / len(union) if union else 0.0


def _strip_filler(tokens: list[str]) -> list[str]:
    """Drop filler words so near repeats compare equal."""
    return [t for t in tokens if t not in _FILLER]


def _contrasted(al: Alignment) -> bool:
    """Whether the candidate names the old value again next to a contrast word.

    "Rebeka, not Rhonya, interviewed Karnel" keeps the old subject in the
    sentence but explicitly replaces it.
    """
    old_values = set(_content(al.old_changed_tokens()))
    added = al.new_changed_tokens()
    return bool(old_values & set(added)) and bool(_CONTRAST & set(added))


class _Verdict(BaseModel):
    """Structured answer expected from the chat model."""

    action: ReconcileAction = Field(description="create, update, keep_both, skip or review")
    target_ids: list[str] = Field(
        default_factory=list,
        description="ids of existing memories the action applies to (superseded or duplicated)",
    )
    rationale: str = Field(default="", description="one short sentence")


class LLMReconciler:
    """Asks a chat model for a structured verdict and validates it."""

    def __init__(self, model: BaseChatModel) -> None:
        """Wrap ``model`` (a langchain ``BaseChatModel`` supporting tool calling)."""
        self._model = model.with_structured_output(_Verdict, include_raw=True)

    def decide(self, candidate: MemoryCandidate, neighbours: list[Neighbour]) -> ReconcileDecision:
        """Return the model's verdict, or REVIEW when the answer is unusable."""
        memories = "\n".join(f"{n.memory.id}: {n.memory.content}" for n in neighbours) or "(none)"
        prompt = RECONCILE_PROMPT.format(candidate=candidate.content, memories=memories)
        try:
            result = self._model.invoke(prompt)
        except Exception as exc:  # noqa: BLE001 - any model failure must not lose the memory
            return _review(f"model call failed: {type(exc).__name__}")
        verdict = result.get("parsed") if isinstance(result, dict) else result
        if not isinstance(verdict, _Verdict):
            return _review("model answer did not match the schema")
        return _validate(verdict, {n.memory.id for n in neighbours})


def _validate(verdict: _Verdict, known_ids: set[str]) -> ReconcileDecision:
    """Reject verdicts that name unknown memories or lack required targets."""
    unknown = [i for i in verdict.target_ids if i not in known_ids]
    if unknown:
        return _review(f"model named unknown memory ids: {unknown}")
    needs_target = {ReconcileAction.UPDATE, ReconcileAction.SKIP}
    if verdict.action in needs_target and not verdict.target_ids:
        return _review(f"model chose {verdict.action.value} without a target")
    return ReconcileDecision(
        action=verdict.action,
        target_ids=list(dict.fromkeys(verdict.target_ids)),
        rationale=verdict.rationale,
    )


def _review(why: str) -> ReconcileDecision:
    """A REVIEW decision: store the candidate but flag it for a human."""
    return ReconcileDecision(action=ReconcileAction.REVIEW, rationale=why)
