"""Shared text handling: folding, Chinese script folding, stopwords and tokenising.

One place for what the policy gate and lexical recall both need, so a memory and a
query (or a rule and a candidate) are folded the same way.

Library choices:

* ``unicodedata`` (NFKC) folds full-width letters and digits (``ｐａｓｓ``) to ASCII.
* ``opencc`` (``t2s``) folds Traditional Chinese to Simplified, so 驗證碼 and 验证码
  meet; the converter is a lazily created singleton and only runs on text with Han.
* ``snowballstemmer`` for English stems ("running", "runs" -> "run"), memoised.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import snowballstemmer

__all__ = [
    "CJK_CLASS",
    "HAN_CHARS",
    "HAN_RE",
    "STOPWORDS",
    "content_words",
    "count_han",
    "fold",
    "has_han",
    "index_terms",
    "load_word_list",
    "stem",
    "strip_invisible",
    "to_simplified",
    "to_traditional",
]

HAN_CHARS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""Han ideographs (extension A, unified, compatibility), for regex character classes."""
CJK_CLASS = HAN_CHARS + "\u3040-\u30ff"
"""Han plus kana, so Japanese is bigrammed like Chinese."""
HAN_RE = re.compile(f"[{HAN_CHARS}]")
"""One Han ideograph; the one compiled pattern every module tests Chinese text with."""
_CJK_RE = re.compile(f"[{CJK_CLASS}]")
_TOKEN_RE = re.compile(rf"[{CJK_CLASS}]+|[^\W_{CJK_CLASS}]+(?:'[^\W_{CJK_CLASS}]+)*")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'"})
_DATA_DIR = Path(__file__).with_name("data")


def load_word_list(path: Path) -> frozenset[str]:
    """Whitespace-separated words of a text file; ``#`` starts a comment line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(w for line in lines if not line.lstrip().startswith("#") for w in line.split())


STOPWORDS: frozenset[str] = load_word_list(_DATA_DIR / "stopwords_en.txt")
"""Compact English stopword list (NLTK-like); matched on lower-case tokens."""


@cache
def _opencc(config: str) -> Any:
    """An OpenCC converter (``t2s`` or ``s2t``), created once on first use."""
    import opencc

    return opencc.OpenCC(config)


def has_han(text: str) -> bool:
    """Whether ``text`` holds at least one Han ideograph."""
    return bool(HAN_RE.search(text))


def count_han(text: str) -> int:
    """How many Han ideographs ``text`` holds."""
    return len(HAN_RE.findall(text))


def to_simplified(text: str) -> str:
    """``text`` with Traditional Chinese folded to Simplified (unchanged without Han)."""
    return str(_opencc("t2s").convert(text)) if has_han(text) else text


def to_traditional(text: str) -> str:
    """``text`` with Simplified Chinese written in Traditional (unchanged without Han)."""
    return str(_opencc("s2t").convert(text)) if has_han(text) else text


def fold(text: str) -> str:
    """Width (NFKC), invisible characters, apostrophes, Chinese script and case folded.

    Zero-width characters are dropped so that "del\u200bete" reads as "delete".
    Lower-casing rather than ``casefold`` keeps one character for one character on
    ordinary text, so a match found in the folded text can be cut out of the original
    (callers compare lengths before placing a span).
    """
    text = strip_invisible(unicodedata.normalize("NFKC", text)).translate(_QUOTES)
    return to_simplified(text).lower()


def nfkc_with_origin(text: str) -> tuple[str, list[int]]:
    """NFKC of ``text`` character by character, and for each offset of the result (and its
    end) the offset of ``text`` it came from: "…" becomes "..." and all three point at it."""
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        piece = unicodedata.normalize("NFKC", char)
        chars.append(piece)
        origin += [index] * len(piece)
    origin.append(len(text))
    return "".join(chars), origin


def fold_with_origin(text: str) -> tuple[str, list[int]]:
    """:func:`fold` of ``text`` (NFKC character by character), and for each offset of the
    result (and its end) the offset of ``text`` it came from, for a text whose folded form
    has another length (an ellipsis, a ligature, a zero-width space)."""
    width, width_origin = nfkc_with_origin(text)
    kept = [i for i, char in enumerate(width) if unicodedata.category(char) != "Cf"]
    visible = "".join(width[i] for i in kept)
    origin = [width_origin[i] for i in kept]
    folded = to_simplified(visible.translate(_QUOTES)).lower()
    if len(folded) != len(visible):  # a character whose lower case is longer ("İ")
        folded = "".join(to_simplified(char.translate(_QUOTES)).lower()[:1] for char in visible)
    return folded, [*origin, len(text)]


def strip_invisible(text: str) -> str:
    """``text`` without format characters (zero-width spaces and joiners, bidi marks)."""
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball English stem of a lower-case word (memoised)."""
    return str(_stemmer().stemWord(word))


@cache
def _stemmer() -> Any:
    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _word_terms(word: str) -> tuple[str, ...]:
    """One lower-case word as zero or one index term: stopwords dropped, "'s" cut, stemmed.

    Memoised: conversational vocabulary is small and repetitive, and a user's whole
    index is tokenised when a process first loads it.
    """
    if word in STOPWORDS:
        return ()
    if "'" in word:
        word = word.split("'", 1)[0] if word.endswith("'s") else word.replace("'", "")
        if not word or word in STOPWORDS:
            return ()
    if word.isdigit():
        return (word,)
    return (stem(word),)


def _cjk_terms(run: str) -> list[str]:
    """Character unigrams followed by character bigrams of a CJK run."""
    chars = list(run)
    return chars + [a + b for a, b in zip(chars, chars[1:], strict=False)]


def index_terms(text: str) -> list[str]:
    """Split text into lexical index terms; handles English, Chinese and mixtures.

    English words are lower-cased, stopwords dropped and Snowball-stemmed; numbers are
    kept. Chinese is folded to Simplified and each CJK run yields its character unigrams
    and bigrams (every two-character word matches without a dictionary).

    Args:
        text: Any text.

    Returns:
        The terms in order of appearance (duplicates kept).
    """
    if not text:
        return []
    text = text.lower().translate(_QUOTES)
    if not _CJK_RE.search(text):
        return [term for token in _TOKEN_RE.findall(text) for term in _word_terms(token)]
    text = to_simplified(text)
    terms: list[str] = []
    for token in _TOKEN_RE.findall(text):
        terms.extend(_cjk_terms(token) if _CJK_RE.match(token) else _word_terms(token))
    return terms


def content_words(text: str) -> str:
    """Drop English stopwords (incl. question words) but keep surface forms.

    Meant for the dense side of hybrid recall: an averaged-token embedding is sharper
    without "what/when/did/the". No stemming: the embedding has its own vocabulary.

    Returns:
        The remaining words joined by single spaces (CJK runs kept whole); the original
        text when nothing would remain.
    """
    words = _TOKEN_RE.findall(text.lower().translate(_QUOTES))
    kept = " ".join(w for w in words if w not in STOPWORDS)
    return kept or text
