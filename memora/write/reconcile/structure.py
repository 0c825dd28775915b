"""Statement structure: subject, attribute, occasion and names, and how two statements relate."""

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

from memora.text.folding import HAN_RE, has_han, stem
from memora.write.reconcile.alignment import (
    CONTRAST,
    FILLER,
    STOP,
    SUBJECT_SPAN,
    Alignment,
    align,
    comparison_fold,
    comparison_tokens,
    content_tokens,
    word_set,
)


# ---------------------------------------------------------------- structure
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
    folded = sorted({comparison_fold(p) for p in phrases}, key=len, reverse=True)
    words = tuple(p for p in folded if not has_han(p))
    chinese = tuple(p for p in folded if has_han(p))
    alternatives = [rf"(?<!\w){re.escape(w)}(?!\w)" for w in words]
    alternatives += [re.escape(c) for c in chinese]
    return _Cues(name, re.compile("|".join(alternatives) or r"(?!)"))


@dataclass(frozen=True)
class _Rules:
    """The tables of ``rules.toml``, folded for matching."""

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
    data = tomllib.loads((Path(__file__).with_name("rules.toml")).read_text("utf-8"))
    equivalents: dict[str, str] = {}
    for pair in data["equivalents"]["pairs"]:
        first, *others = (comparison_fold(word) for word in pair)
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
    folded = comparison_fold(text)
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
    folded = comparison_fold(text)
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
    return name[:4] if HAN_RE.match(name) else name


_APPOSITIVE = re.compile(r"'s\s+((?:[a-z]+\s+){1,2}?)([A-Z][\w-]+)")


def _appositive_name(text: str) -> str | None:
    """The name right after a possessed relation noun ("the user's close friend Tom").

    Not after a function word: "a master's degree in Music" names no one.
    """
    match = _APPOSITIVE.search(text)
    if match is None or match.group(1).split()[-1] in STOP:
        return None
    return match.group(2).lower()


def _equivalent(tokens: list[str]) -> list[str]:
    """Tokens with filler dropped and each word under its canonical spelling."""
    table = _rules().equivalents
    return [table.get(t, t) for t in strip_filler(tokens)]


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
    return tuple(_equivalent(comparison_tokens(text)))


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
    found = capitalised_names(text)
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
        group,
        strip_filler(comparison_tokens(before)),
        strip_filler(comparison_tokens(after)),
        before,
        after,
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
    return _equivalent(comparison_tokens(f"{subject} {attribute}")), _equivalent(
        comparison_tokens(value)
    )


def has_contrast(old_text: str, new_text: str) -> bool:
    """The candidate carries a contrast or change word the memory lacks ("moved", "no longer")."""
    return bool(CONTRAST & (set(comparison_tokens(new_text)) - set(comparison_tokens(old_text))))


def has_named_attribute(old_text: str, new_text: str) -> bool:
    """Both statements fill the same "X's ATTR is" / X的ATTR是 slot."""
    old, new = _attribute(comparison_fold(old_text)), _attribute(comparison_fold(new_text))
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
    words = list(itertools.dropwhile(lambda t: t in STOP, tokens))
    return list(itertools.takewhile(lambda t: t not in STOP, words))


SAME_DESCRIPTION_OVERLAP = 0.5
"""Predicate overlap at which two statements about different names describe one thing."""


def _other_occasion(old_text: str, new_text: str) -> bool:
    """Both statements are pinned to a day, weekday, month or time, and not the same ones."""
    old_when, new_when = occasions(old_text), occasions(new_text)
    if not old_when or not new_when or old_when == new_when:
        return False
    return any(not key.startswith(_COARSE_OCCASIONS) for key in old_when ^ new_when)


_DAY_OCCASIONS = ("date:", "day:", "month:", "weekday:", "zh_date:", "zh_weekday:")
_DIGITS = re.compile(r"\d")


def quantity_may_have_changed(old_text: str, new_text: str) -> bool:
    """Both statements hold a number and neither is pinned to a day, date, weekday or month.

    A count, amount or time of day can change ("has 4 houseplants" / "has 5 houseplants",
    "wakes at 7 a.m." / "wakes at 8 a.m."); two numbered days are two occasions of something
    repeated ("practised on 2026-10-01" / "on 2026-10-02").
    """
    if not (_DIGITS.search(old_text) and _DIGITS.search(new_text)):
        return False
    pinned = occasions(old_text) | occasions(new_text)
    return not any(key.startswith(_DAY_OCCASIONS) for key in pinned)


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
    return {word for name in capitalised_names(text) for word in name.split()}


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
    old_folded, new_folded = comparison_fold(old_text), comparison_fold(new_text)
    marked = _has_cue(rules.another, new_folded) and not _has_cue(rules.another, old_folded)
    if _is_repeat(old_text, new_text) and not marked:
        return Relation.REPEAT
    if _other_occasion(old_text, new_text):
        once = _has_cue(rules.once_only, old_folded) and _has_cue(rules.once_only, new_folded)
        if not once:
            return Relation.DISTINCT
    if marked:
        return Relation.DISTINCT
    contrast = has_contrast(old_text, new_text)
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
            and not _numbers_only_changed(comparison_tokens(old_text), comparison_tokens(new_text))
        ):
            return Relation.DISTINCT
    old_subjects, new_subjects = _named_subjects(old_text), _named_subjects(new_text)
    if (
        old_subjects
        and new_subjects
        and not old_subjects & _name_word_set(new_text)
        and not new_subjects & _name_word_set(old_text)
        and predicate_overlap(old_text, new_text) < SAME_DESCRIPTION_OVERLAP
    ):
        # Another named subject doing something else. The same long description with
        # another name ("X collaborated with Eliza on the charity event" -> "Y ...") is
        # left to the alignment rules: such a description usually fits one person.
        return Relation.DISTINCT
    return Relation.UNKNOWN


def restates(older: str, newer: str) -> bool:
    """Whether ``newer`` may restate ``older``'s attribute (not another occasion or instance)."""
    return relate(older, newer) is not Relation.DISTINCT


# ---------------------------------------------------------------- structure helpers
def subject_tokens(tokens: list[str]) -> set[str]:
    """Content words of the statement's opening, a cheap stand-in for its subject."""
    return set(content_tokens(tokens[:SUBJECT_SPAN]))


def stem_set(tokens: list[str]) -> set[str]:
    """Stemmed content words, so that "participated" meets "participating"."""
    return {stem(word) for word in content_tokens(tokens)}


# A run of capitalised words, possibly joined by "of", "for", "the": "University of Oregon".
_NAME = re.compile(r"[A-Z][\w'-]*(?:\s+(?:(?:of|for|the|de|van|von)\s+)*[A-Z][\w'-]*)*")
# Capitalised words that open a sentence or a title rather than name something.
_NOT_NAMES = word_set("all both in after before on while during since dr mr mrs ms prof professor")


def capitalised_names(text: str) -> set[str]:
    """Lower-cased capitalised spans: a cheap stand-in for the named entities."""
    found = set()
    for span in _NAME.findall(text):
        words = span.lower().split()
        while words and words[0] in STOP | _NOT_NAMES:
            words.pop(0)
        if words:
            found.add(" ".join(words).removesuffix("'s"))
    return found


def _name_words(text: str) -> set[str]:
    """Stemmed words of the capitalised spans."""
    return stem_set([w for name in capitalised_names(text) for w in comparison_tokens(name)])


def predicate_overlap(old: str, new: str) -> float:
    """Jaccard overlap of the stemmed content words outside names (0..1)."""
    old_words = stem_set(comparison_tokens(old)) - _name_words(old)
    new_words = stem_set(comparison_tokens(new)) - _name_words(new)
    union = old_words | new_words
    return len(old_words & new_words) / len(union) if union else 0.0


def strip_filler(tokens: list[str]) -> list[str]:
    """Drop filler words so near repeats compare equal."""
    return [t for t in tokens if t not in FILLER]


def is_contrasted(al: Alignment) -> bool:
    """Whether the candidate names the old value again next to a contrast word.

    "Rebeka, not Rhonya, interviewed Karnel" keeps the old subject in the
    sentence but explicitly replaces it.
    """
    old_values = set(content_tokens(al.old_changed_tokens()))
    added = al.new_changed_tokens()
    return bool(old_values & set(added)) and bool(CONTRAST & set(added))
