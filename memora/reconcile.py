"""Reconciliation: decide how a new memory candidate relates to what is stored.

Two implementations share the :class:`Reconciler` protocol: an offline one
(token alignment gated by embedding similarity) and one that asks the
configured chat model for a structured verdict.
"""

from __future__ import annotations

import difflib
import itertools
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from memora.models import MemoryCandidate, Neighbour, ReconcileAction, ReconcileDecision
from memora.prompts import RECONCILE_PROMPT
from memora.text import HAN_CHARS, stem
from memora.text import fold as text_fold


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


_CONTRACTIONS = ((re.compile(r"\bwon't\b"), "will not"), (re.compile(r"\bcan't\b"), "can not"))
_NOT_SUFFIX = re.compile(r"(\w)n't\b")


@lru_cache(maxsize=16384)
def fold(text: str) -> str:
    """The shared text folding (width, invisible characters, script, case), plus "n't"
    spelled "not" so that "doesn't" and "does not" compare equal."""
    text = text_fold(text)
    for pattern, spelled in _CONTRACTIONS:
        text = pattern.sub(spelled, text)
    return _NOT_SUFFIX.sub(r"\1 not", text)


def tokenize(text: str) -> list[str]:
    """Split text into comparable tokens: lower-cased words, single CJK characters.

    Traditional Chinese is folded to Simplified so that 程度 and 程度 compare
    equal whatever script the user typed in; CJK has no spaces, so each
    character is a token and the alignment works on character sequences.
    """
    text = fold(text)
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


# -- Statement structure: subject, attribute, instance --------------------------------------


class Relation(Enum):
    """How a candidate statement relates to one stored statement."""

    REPEAT = "repeat"
    """The same statement again (up to case, filler, spelling, word order)."""
    SAME_ATTRIBUTE = "same_attribute"
    """The same attribute of the same subject with another value: an update."""
    DISTINCT = "distinct"
    """Another occasion or instance (other date, another pet, another person): keep both."""
    UNKNOWN = "unknown"
    """Structure says nothing; the alignment rules decide."""


@dataclass(frozen=True)
class _Cues:
    """One group of cue phrases from the rules file.

    English cues match whole words, Chinese ones (Simplified after folding)
    anywhere: Chinese has no spaces between words.
    """

    name: str
    """The rule's name in the rules file."""
    pattern: re.Pattern[str]
    """All cues as one alternation, longest first, so the earliest match is one search."""

    def first(self, folded: str) -> tuple[int, int] | None:
        """Span of the earliest cue in ``folded``, or None."""
        match = self.pattern.search(folded)
        return match.span() if match else None


def _cues(name: str, phrases: list[str]) -> _Cues:
    folded = sorted({fold(p) for p in phrases}, key=len, reverse=True)
    words = tuple(p for p in folded if not _CJK.search(p))
    chinese = tuple(p for p in folded if _CJK.search(p))
    alternatives = [rf"(?<!\w){re.escape(w)}(?!\w)" for w in words]
    alternatives += [re.escape(c) for c in chinese]
    return _Cues(name, re.compile("|".join(alternatives) or r"(?!)"))


@dataclass(frozen=True)
class _Rules:
    """The tables of ``reconcile_rules.toml``, folded for matching."""

    single_valued: tuple[_Cues, ...]
    """Relations holding one value at a time."""
    multi_valued: tuple[_Cues, ...]
    """Relations collecting many values."""
    once_only: _Cues
    """Events that happen once for a subject."""
    another: _Cues
    """Words announcing another occurrence or instance."""
    indefinite: _Cues
    """Words opening an indefinite noun phrase."""
    naming: _Cues
    """Words introducing a name."""
    equivalents: dict[str, str]
    """Word -> the spelling it is compared under."""
    entity_nouns: _Cues
    """Nouns heading a person or an animal, whose "is ..." states a fact rather than a value."""


@lru_cache(maxsize=1)
def _rules() -> _Rules:
    """Load the rules file beside this module once."""
    data = tomllib.loads((Path(__file__).with_name("reconcile_rules.toml")).read_text("utf-8"))
    equivalents: dict[str, str] = {}
    for pair in data["equivalents"]["pairs"]:
        first, *others = (fold(word) for word in pair)
        equivalents |= {other: first for other in others}
    return _Rules(
        single_valued=tuple(_cues(r["name"], r["cues"]) for r in data["single_valued"]),
        multi_valued=tuple(_cues(r["name"], r["cues"]) for r in data["multi_valued"]),
        once_only=_cues("once_only", data["once_only"]["cues"]),
        another=_cues("another", data["another"]["cues"]),
        indefinite=_cues("indefinite", data["naming"]["indefinite"]),
        naming=_cues("naming", data["naming"]["naming"]),
        equivalents=equivalents,
        entity_nouns=_cues("entity_nouns", data["entity_nouns"]["nouns"]),
    )


_MONTH_WORDS = (
    "jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    "|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_ZH_NUMBER = "[0-9]{1,2}|[一二三四五六七八九十]{1,3}"
# Each pattern finds one kind of date or time; all its groups together are the value.
_OCCASIONS = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("date", r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b"),
        ("day", rf"\b({_MONTH_WORDS})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b"),
        ("day", rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_WORDS})\b"),
        ("month", rf"\b({_MONTH_WORDS})\s+(?:of\s+)?(\d{{4}})\b"),
        ("month", rf"\b(?:in|during|since)\s+({_MONTH_WORDS})\b"),
        ("year", r"\b(?:in|during|since|of|from)\s+((?:19|20)\d{2})\b"),
        ("year", r"\(((?:19|20)\d{2})[^)]*\)"),
        ("weekday", r"\b(mon|tues|wednes|thurs|fri|satur|sun)day"),
        ("time", r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\b"),
        ("time", r"\b(\d{1,2}):(\d{2})\b"),
        ("zh_date", rf"(?:(\d{{4}})\s*年\s*)?({_ZH_NUMBER})\s*月\s*(?:({_ZH_NUMBER})\s*[日号])?"),
        ("zh_year", r"(\d{4})\s*年"),
        ("zh_weekday", r"(?:星期|礼拜|周)([一二三四五六日天])"),
        ("zh_time", rf"(早上|上午|中午|下午|晚上)?\s*({_ZH_NUMBER})\s*点"),
    )
)


@lru_cache(maxsize=4096)
def occasions(text: str) -> frozenset[str]:
    """The dates and times a statement is pinned to ("2026-03-03", "Monday", "7 pm", 3月5日)."""
    folded = fold(text)
    found = set()
    for kind, pattern in _OCCASIONS:
        for match in pattern.finditer(folded):
            found.add(kind + ":" + "-".join(g or "" for g in match.groups()))
    return frozenset(found)


# The name after a naming word: an English word, or up to four Chinese characters before
# 的, 是 or punctuation (一只叫小黑的狗).
_NAME_AFTER = re.compile(r"\s*([^\s,，。、的是.!?;:]+)")


def _introduced_name(text: str) -> str | None:
    """The name an indefinite noun phrase introduces ("a cat named Miso", 一只叫小黑的狗)."""
    rules = _rules()
    folded = fold(text)
    opening = rules.indefinite.first(folded)
    if opening is None:
        return None
    tail = folded[opening[0] :]
    naming = rules.naming.first(tail)
    if naming is None:
        return None
    match = _NAME_AFTER.match(tail, naming[1])
    if match is None:
        return None
    name = match.group(1)
    return name[:4] if _CJK.match(name) else name


_APPOSITIVE = re.compile(r"'s\s+((?:[a-z]+\s+){1,2}?)([A-Z][\w-]+)")


def _appositive_name(text: str) -> str | None:
    """The name right after a possessed relation noun ("the user's close friend Tom").

    Not after a function word: "a master's degree in Music" names no one.
    """
    match = _APPOSITIVE.search(text)
    if match is None or match.group(1).split()[-1] in _STOP:
        return None
    return match.group(2).lower()


def _equivalent(tokens: list[str]) -> list[str]:
    """Tokens with filler dropped and each word under its canonical spelling."""
    table = _rules().equivalents
    return [table.get(t, t) for t in _strip_filler(tokens)]


SPELLING_VARIANT_RATIO = 0.85
"""How alike two words of at least five letters must be to count as one spelled two ways."""


def _spelling_variants(old: list[str], new: list[str], names: set[str]) -> bool:
    """Same length, and every differing word pair is one word spelled two ways.

    Names never count: "Rusty" and "Dusty" are two lizards.
    """
    if len(old) != len(new):
        return False
    for a, b in zip(old, new, strict=True):
        if a == b:
            continue
        if a in names or b in names:
            return False
        if not (a.isalpha() and b.isalpha()) or min(len(a), len(b)) < 5:
            return False
        if difflib.SequenceMatcher(None, a, b).ratio() < SPELLING_VARIANT_RATIO:
            return False
    return True


@lru_cache(maxsize=65536)
def _comparable(text: str) -> tuple[str, ...]:
    """The words two texts are compared by: filler dropped, canonical spellings (remembered)."""
    return tuple(_equivalent(tokenize(text)))


def same_text(a: str, b: str) -> bool:
    """Whether two texts say the same words (up to case, punctuation, filler, spelling)."""
    old, new = _comparable(a), _comparable(b)
    if not old or len(old) != len(new):
        return False
    if old == new:
        return True
    return _spelling_variants(list(old), list(new), _name_word_set(a) | _name_word_set(b))


def _is_repeat(old_text: str, new_text: str) -> bool:
    """The same statement again, possibly reworded by word order only.

    Reordering counts only when the names keep their order: "A wrote a book
    with a foreword by B" and "B wrote a book with a foreword by A" use the
    same words and are different statements.
    """
    if same_text(old_text, new_text):
        return True
    old, new = _comparable(old_text), _comparable(new_text)
    if not old or sorted(old) != sorted(new):
        return False
    return _ordered_names(old_text) == _ordered_names(new_text)


def _ordered_names(text: str) -> list[str]:
    """The statement's names in the order they appear."""
    found = _names(text)
    return [span.lower() for span in _NAME.findall(text) if span.lower() in found]


def _has_cue(cues: _Cues, folded: str) -> bool:
    return cues.first(folded) is not None


@dataclass(frozen=True)
class _Clause:
    """A statement split at the cue of a relation."""

    relation: _Cues
    """The relation whose cue comes first."""
    subject: list[str]
    """Tokens before the cue (filler dropped)."""
    object: list[str]
    """Tokens after the cue (filler dropped)."""
    raw_subject: str
    """Folded text before the cue, punctuation kept."""
    raw_object: str
    """Folded text after the cue, punctuation kept."""


def _clause(groups: Sequence[_Cues], folded: str) -> _Clause | None:
    """The statement split at the earliest cue of any of ``groups``."""
    best: tuple[tuple[int, int], _Cues] | None = None
    for group in groups:
        span = group.first(folded)
        if span is not None and (best is None or span[0] < best[0][0]):
            best = (span, group)
    if best is None:
        return None
    (start, end), group = best
    before, after = folded[:start], folded[end:]
    return _Clause(
        group, _strip_filler(tokenize(before)), _strip_filler(tokenize(after)), before, after
    )


_EN_ATTRIBUTE = re.compile(r"^(.+?)'s\s+(.+?)\s+(?:is|are|was|were)\s+(.+?)[.!]?$")
_ZH_ATTRIBUTE = re.compile(r"^(.+?)的(.+?)(?:是|为)(.+?)[。.!！]?$")


def _attribute(folded: str) -> tuple[list[str], list[str]] | None:
    """("subject's attribute", value) of "X's ATTR is VALUE" / X的ATTR是VALUE, as tokens.

    When ATTR is a person or an animal ("the user's sister is ..."), only a
    name is a slot: whatever else follows "is" is one more fact about them.
    """
    match = _EN_ATTRIBUTE.match(folded) or _ZH_ATTRIBUTE.match(folded)
    if match is None:
        return None
    subject, attribute, value = match.groups()
    rules = _rules()
    if rules.entity_nouns.first(attribute) and not rules.naming.pattern.match(value.strip()):
        return None
    return _equivalent(tokenize(f"{subject} {attribute}")), _equivalent(tokenize(value))


def _contrasts(old_text: str, new_text: str) -> bool:
    """The candidate carries a contrast or change word the memory lacks ("moved", "no longer")."""
    return bool(_CONTRAST & (set(tokenize(new_text)) - set(tokenize(old_text))))


def has_named_attribute(old_text: str, new_text: str) -> bool:
    """Both statements fill the same "X's ATTR is" / X的ATTR是 slot."""
    old, new = _attribute(fold(old_text)), _attribute(fold(new_text))
    return bool(old and new and old[0] == new[0])


def _numbers_only_changed(old: list[str], new: list[str]) -> bool:
    """Whether the statements differ in numbers only ("a 40-day streak" -> "a 41-day streak")."""
    al = align(old, new)
    changed = al.old_changed_tokens() + al.new_changed_tokens()
    return bool(changed) and all(any(c.isdigit() for c in t) for t in changed)


_COARSE_OCCASIONS = ("year:", "zh_year:")
"""A year alone dates a one-off fact ("won an award in 2021"); days, weekdays, months and
times pin an occasion of something repeated."""
_ENUMERATION = re.compile(r"\b(?:and|or|both|all)\b|[,:;、和及与]")


def _head(tokens: list[str]) -> list[str]:
    """The first run of content words: the value a relation names ("a Honda Civic").

    What follows a function word ("hiking *in* the Rockies") is a detail of the
    same value, not another one.
    """
    words = list(itertools.dropwhile(lambda t: t in _STOP, tokens))
    return list(itertools.takewhile(lambda t: t not in _STOP, words))


SAME_DESCRIPTION_OVERLAP = 0.5
"""Predicate overlap at which two statements about different names describe one thing."""


def _other_occasion(old_text: str, new_text: str) -> bool:
    """Both statements are pinned to a day, weekday, month or time, and not the same ones."""
    old_when, new_when = occasions(old_text), occasions(new_text)
    if not old_when or not new_when or old_when == new_when:
        return False
    return any(not key.startswith(_COARSE_OCCASIONS) for key in old_when ^ new_when)


def _another_value(old: _Clause, new: _Clause) -> bool:
    """One subject, one many-valued relation, another single value ("speaks German").

    A statement that enumerates ("both English and Spanish", "three languages:
    ...", "Spanish, which ...") may give the whole set, so another set replaces
    it: that is left to the alignment rules. Chinese puts the object before some
    cues (对花生过敏): then the subjects differ in it and the objects agree.
    """
    if old.subject == new.subject:
        enumerates = any(_ENUMERATION.search(c.raw_object) for c in (old, new))
        return _head(old.object) != _head(new.object) and not enumerates
    if old.object != new.object:
        return False
    return not any(_ENUMERATION.search(c.raw_subject) for c in (old, new))


SUBJECT_NAME_WORDS = 4
"""A name among a statement's first words is taken as (part of) its subject."""


def _name_word_set(text: str) -> set[str]:
    return {word for name in _names(text) for word in name.split()}


def _named_subjects(text: str) -> set[str]:
    """Words of the names that open the statement ("Nora ...", "The user's colleague Priya")."""
    return _name_word_set(" ".join(text.split()[:SUBJECT_NAME_WORDS]))


@lru_cache(maxsize=16384)
def relate(old_text: str, new_text: str) -> Relation:
    """Decide by structure how a candidate (new) relates to a stored statement (old).

    Repeats first; then what makes two statements separate memories (other
    dates or times, "another", a differently named instance, one more value of
    a many-valued relation, another named subject); then what makes them one
    attribute with a new value (the same "X's ATTR is", the same one-valued
    relation of the same subject).
    """
    rules = _rules()
    old_folded, new_folded = fold(old_text), fold(new_text)
    marked = _has_cue(rules.another, new_folded) and not _has_cue(rules.another, old_folded)
    if _is_repeat(old_text, new_text) and not marked:
        return Relation.REPEAT
    if _other_occasion(old_text, new_text):
        once = _has_cue(rules.once_only, old_folded) and _has_cue(rules.once_only, new_folded)
        if not once:
            return Relation.DISTINCT
    if marked:
        return Relation.DISTINCT
    contrast = _contrasts(old_text, new_text)
    for introduced in (_introduced_name, _appositive_name):
        old_name, new_name = introduced(old_text), introduced(new_text)
        if old_name and new_name and old_name != new_name and not contrast:
            return Relation.DISTINCT
    old_attr, new_attr = _attribute(old_folded), _attribute(new_folded)
    if old_attr and new_attr and old_attr[0] == new_attr[0]:
        return Relation.SAME_ATTRIBUTE if old_attr[1] != new_attr[1] else Relation.REPEAT
    for kind, groups in (("single", rules.single_valued), ("multi", rules.multi_valued)):
        old_rel, new_rel = _clause(groups, old_folded), _clause(groups, new_folded)
        if old_rel is None or new_rel is None or old_rel.relation != new_rel.relation:
            continue
        if (old_rel.subject, old_rel.object) == (new_rel.subject, new_rel.object):
            continue
        if kind == "single" and old_rel.subject == new_rel.subject:
            return Relation.SAME_ATTRIBUTE
        if (
            kind == "multi"
            and not contrast
            and _another_value(old_rel, new_rel)
            and not _numbers_only_changed(tokenize(old_text), tokenize(new_text))
        ):
            return Relation.DISTINCT
    old_subjects, new_subjects = _named_subjects(old_text), _named_subjects(new_text)
    if (
        old_subjects
        and new_subjects
        and not old_subjects & _name_word_set(new_text)
        and not new_subjects & _name_word_set(old_text)
        and _predicate_overlap(old_text, new_text) < SAME_DESCRIPTION_OVERLAP
    ):
        # Another named subject doing something else. The same long description with
        # another name ("X collaborated with Eliza on the charity event" -> "Y ...") is
        # left to the alignment rules: such a description usually fits one person.
        return Relation.DISTINCT
    return Relation.UNKNOWN


def restates(older: str, newer: str) -> bool:
    """Whether ``newer`` may restate ``older``'s attribute (not another occasion or instance)."""
    return relate(older, newer) is not Relation.DISTINCT


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
        related = bool(neighbours) and max(n.similarity for n in neighbours) >= self.related
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
            neighbour.similarity >= self.gate
            or _contrasts(old, new)
            or has_named_attribute(old, new)
        )

    def _by_alignment(
        self, candidate: MemoryCandidate, neighbours: list[Neighbour]
    ) -> ReconcileDecision:
        """The token-alignment rules over the memories structure left open."""
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
    return {stem(word) for word in _content(tokens)}


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
    """Asks a chat model for a structured verdict, validates it and holds it to the hard rules.

    The hard rules are code, as for the policy gate: a candidate saying exactly
    what a memory says is skipped without asking, and a verdict that would
    supersede or skip a memory structure marks as another occasion or
    instance (:func:`relate`) keeps that memory instead.
    """

    def __init__(self, model: BaseChatModel) -> None:
        """Wrap ``model`` (a langchain ``BaseChatModel`` supporting tool calling)."""
        self._model = model.with_structured_output(_Verdict, include_raw=True)

    def decide(self, candidate: MemoryCandidate, neighbours: list[Neighbour]) -> ReconcileDecision:
        """Return the model's verdict, or REVIEW when the answer is unusable."""
        for neighbour in neighbours:
            if same_text(neighbour.memory.content, candidate.content):
                return ReconcileDecision(
                    action=ReconcileAction.SKIP,
                    target_ids=[neighbour.memory.id],
                    rationale="repeats an existing memory",
                )
        memories = "\n".join(f"{n.memory.id}: {n.memory.content}" for n in neighbours) or "(none)"
        prompt = RECONCILE_PROMPT.format(candidate=candidate.content, memories=memories)
        try:
            result = self._model.invoke(prompt)
        except Exception as exc:  # noqa: BLE001 - any model failure must not lose the memory
            return _review(f"model call failed: {type(exc).__name__}")
        verdict = result.get("parsed") if isinstance(result, dict) else result
        if not isinstance(verdict, _Verdict):
            return _review("model answer did not match the schema")
        decision = _validate(verdict, {n.memory.id for n in neighbours})
        return _keep_distinct(decision, candidate, neighbours)


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


def _keep_distinct(
    decision: ReconcileDecision, candidate: MemoryCandidate, neighbours: list[Neighbour]
) -> ReconcileDecision:
    """Drop UPDATE / SKIP targets that are another occasion or instance than the candidate."""
    if decision.action not in {ReconcileAction.UPDATE, ReconcileAction.SKIP}:
        return decision
    content = {n.memory.id: n.memory.content for n in neighbours}
    kept = [
        i
        for i in decision.target_ids
        if relate(content[i], candidate.content) is not Relation.DISTINCT
    ]
    if kept == decision.target_ids:
        return decision
    if kept:
        return ReconcileDecision(
            action=decision.action, target_ids=kept, rationale=decision.rationale
        )
    return ReconcileDecision(
        action=ReconcileAction.KEEP_BOTH,
        rationale="another occasion or instance than the memories the model named",
    )


def _review(why: str) -> ReconcileDecision:
    """A REVIEW decision: store the candidate but flag it for a human."""
    return ReconcileDecision(action=ReconcileAction.REVIEW, rationale=why)
