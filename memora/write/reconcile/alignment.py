"""Token alignment of two statements: which spans one keeps, drops or swaps of the other."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from memora.text.folding import HAN_CHARS, has_han
from memora.text.folding import fold as text_fold


def word_set(text: str) -> frozenset[str]:
    """Build a word set from a space-separated list (CJK entries are single characters)."""
    return frozenset(text.split())


# Words whose presence or absence does not change what a statement says.
FILLER = word_set(
    "a an the really very also just actually now still so quite indeed currently too "
    "definitely truly basically of course well um uh please 也 很 真 还 其 实 啦 呢 吧 啊 了"
)
# Function words: shared ones do not show that two statements are about the same thing.
STOP = FILLER | word_set(
    "i me my mine we our you your he him his she her they them their it its is are was were "
    "be been being am has have had do does did and or but to in on at for with by from as "
    "that this these those who which what where when while not no never only once both "
    "的 是 在 我 你 他 她 它 们 和 与 及 或 但 不 没 有 就 都 把 被 给 对 从 到"
)
# Words that mark the candidate as a correction or contrast rather than an addition.
CONTRAST = word_set(
    "not never no longer anymore instead only exclusively solely rather moved changed switched "
    "nor neither different 不 没 只 仅 改 搬 换"
)
# How many leading tokens are taken as a statement's subject ("Nora Fishel and Eliza", 我的英文).
SUBJECT_SPAN = 4
_CJK_SPLIT = re.compile(f"[{HAN_CHARS}]|[^{HAN_CHARS}]+")
_WORD = re.compile(r"\w+")


_CONTRACTIONS = ((re.compile(r"\bwon't\b"), "will not"), (re.compile(r"\bcan't\b"), "can not"))
_NOT_SUFFIX = re.compile(r"(\w)n't\b")


@lru_cache(maxsize=16384)
def comparison_fold(text: str) -> str:
    """The shared text folding (width, invisible characters, script, case), plus "n't"
    spelled "not" so that "doesn't" and "does not" compare equal."""
    text = text_fold(text)
    for pattern, spelled in _CONTRACTIONS:
        text = pattern.sub(spelled, text)
    return _NOT_SUFFIX.sub(r"\1 not", text)


def comparison_tokens(text: str) -> list[str]:
    """Split text into comparable tokens: lower-cased words, single CJK characters.

    Traditional Chinese is folded to Simplified so that 程度 and 程度 compare
    equal whatever script the user typed in; CJK has no spaces, so each
    character is a token and the alignment works on character sequences.
    """
    text = comparison_fold(text)
    tokens: list[str] = []
    for word in _WORD.findall(text):
        if has_han(word):
            tokens.extend(_split_cjk(word))
        else:
            tokens.append(word)
    return tokens


TAIL_SWAP_MIN_PREFIX = 3
TAIL_SWAP_MAX_VALUE = 3


def tail_swap(old: list[str], new: list[str]) -> bool:
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


def content_tokens(tokens: list[str]) -> list[str]:
    """Return the tokens that carry meaning (not function words)."""
    return [t for t in tokens if t not in STOP]


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
