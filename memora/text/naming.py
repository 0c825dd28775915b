"""Whether a text names a memory: the rule that decides which audit queries a forget redacts.

A search that found nothing still says what it looked for ("where does Chen Wei
live?"), so redacting only the queries that returned a forgotten memory would
keep its words in the audit. A query *names* a memory when the two share a
distinctive term:

* an English word of three or more letters (after stemming, as lexical recall
  folds it) that is neither a stopword nor one of the words common to every
  memory and question (``data/common_words.txt``: "favourite", "remember", …);
* a number of two or more digits;
* a Chinese (or Japanese) two-character run whose characters are not function
  characters (的, 是, 我, …), after Traditional → Simplified folding, so 高雄 in
  "我住在高雄" is distinctive and 住在 is not.

The rule errs toward redacting: a query that shares one such word with a
forgotten memory loses its text, though its ids and scores stay.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from memora.text.folding import HAN_RE, index_terms, load_word_list

__all__ = ["distinctive_terms", "names_any"]

_COMMON_WORDS = load_word_list(Path(__file__).with_name("data") / "common_words.txt")
_COMMON_TERMS: frozenset[str] = frozenset(
    term for word in _COMMON_WORDS for term in index_terms(word)
)
_FUNCTION_CHARS = frozenset(
    "的了是在我你他她它们们这那有和与也都就很还要会能吗呢吧啊么什哪谁个一不没对把被给让从到"
    "为以及或而之其所着过得地上下中里来去说想叫住"
)
"""Simplified Chinese characters that mostly glue sentences together."""


def _distinctive(term: str) -> bool:
    if HAN_RE.search(term):
        return len(term) == 2 and not _FUNCTION_CHARS.intersection(term)
    if term.isdigit():
        return len(term) >= 2
    return len(term) >= 3 and term not in _COMMON_TERMS


def distinctive_terms(text: str) -> frozenset[str]:
    """The terms of ``text`` that could point at one memory (see the module's rule)."""
    return frozenset(term for term in index_terms(text) if _distinctive(term))


def names_any(text: str, terms: Iterable[str]) -> bool:
    """Whether ``text`` shares a distinctive term with ``terms``."""
    return not distinctive_terms(text).isdisjoint(terms)
