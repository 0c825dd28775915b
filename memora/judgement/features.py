"""Structural features the encoder does not see well: digits, value shapes, script, length.

These are measurements of a text, not rules about what it means: the trained
decisions weigh them together with the sentence vectors.
"""

from __future__ import annotations

import math
import re

import numpy as np

from memora.text.folding import HAN_CHARS, fold, index_terms

_DIGIT_RUN = re.compile(r"\d+")
_SPACED_DIGITS = re.compile(r"(?:\d[\s\-.]){3,}\d")
_MIXED_TOKEN = re.compile(r"(?=\S*[A-Za-z])(?=\S*\d)\S{4,}")
_SYMBOL_TOKEN = re.compile(r"(?=\S*[A-Za-z0-9])(?=\S*[^\w\s])\S{6,}")
_WORD_CHAIN = re.compile(r"\b[a-z]+(?:[-.][a-z0-9]+){2,}\b", re.IGNORECASE)
_NUMBER_WORDS = re.compile(
    r"(?:\b(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)\b[\s,-]*){3,}"
    r"|[零〇一二三四五六七八九两]{4,}",
    re.IGNORECASE,
)
_COLON = re.compile(r"[:：=]")
_QUESTION = re.compile(r"[?？]")
_HAN = re.compile(f"[{HAN_CHARS}]")
_LATIN = re.compile(r"[A-Za-z]")
_KANA_HANGUL = re.compile(r"[\u3040-\u30ff\uac00-\ud7af]")
_URL_OR_EMAIL = re.compile(r"https?://|www\.|\S+@\S+\.\w+")
_LONG_RANDOM = re.compile(r"[A-Za-z0-9_\-]{20,}")

TEXT_FEATURES = (
    "log_chars",
    "log_words",
    "digit_share",
    "digit_runs",
    "run_4_plus",
    "run_6_plus",
    "spaced_digits",
    "mixed_token",
    "symbol_token",
    "word_chain",
    "number_words",
    "colon",
    "question",
    "han_share",
    "latin_share",
    "kana_hangul",
    "url_or_email",
    "long_random",
)
"""Names of :func:`text_features`' columns, in order (recorded with the weights)."""


def text_features(text: str) -> np.ndarray:
    """One row of :data:`TEXT_FEATURES` for ``text``."""
    chars = max(len(text), 1)
    runs = [len(run) for run in _DIGIT_RUN.findall(text)]
    values = (
        math.log1p(len(text)) / 6,
        math.log1p(len(text.split())) / 4,
        sum(runs) / chars,
        min(len(runs), 6) / 6,
        float(any(n >= 4 for n in runs)),
        float(any(n >= 6 for n in runs)),
        float(bool(_SPACED_DIGITS.search(text))),
        float(bool(_MIXED_TOKEN.search(text))),
        float(bool(_SYMBOL_TOKEN.search(text))),
        float(bool(_WORD_CHAIN.search(text))),
        float(bool(_NUMBER_WORDS.search(text))),
        float(bool(_COLON.search(text))),
        float(bool(_QUESTION.search(text))),
        len(_HAN.findall(text)) / chars,
        len(_LATIN.findall(text)) / chars,
        float(bool(_KANA_HANGUL.search(text))),
        float(bool(_URL_OR_EMAIL.search(text))),
        float(bool(_LONG_RANDOM.search(text))),
    )
    return np.asarray(values, dtype=np.float32)


SUPPORT_FEATURES = ("term_support", "same_text", "length_ratio", "unsupported_numbers")
"""Names of :func:`support_features`' columns: how much of a candidate its message says."""


def support_features(candidate: str, message: str) -> np.ndarray:
    """How far the user's message supports a candidate memory, measured on the surface."""
    candidate_terms, message_terms = set(index_terms(candidate)), set(index_terms(message))
    shared = len(candidate_terms & message_terms) / len(candidate_terms) if candidate_terms else 1.0
    values = (
        shared,
        float(fold(candidate).strip() == fold(message).strip()),
        min(len(candidate), len(message)) / max(len(candidate), len(message), 1),
        float(bool(_numbers(candidate) - _numbers(message))),
    )
    return np.asarray(values, dtype=np.float32)


def _numbers(text: str) -> set[str]:
    return set(_DIGIT_RUN.findall(text))


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower()) if not w.isdigit()} | set(
        _HAN.findall(text)
    )


PAIR_FEATURES = (
    "cosine",
    "word_jaccard",
    "numbers_equal",
    "numbers_differ",
    "only_one_has_numbers",
    "length_ratio",
    "same_script",
)
"""Names of :func:`pair_features`' columns, in order."""


def pair_features(old: str, new: str, old_vector: np.ndarray, new_vector: np.ndarray) -> np.ndarray:
    """How two statements compare on the surface: overlap, numbers, length, script."""
    old_words, new_words = _words(old), _words(new)
    union = old_words | new_words
    old_numbers, new_numbers = _numbers(old), _numbers(new)
    han_old, han_new = bool(_HAN.search(old)), bool(_HAN.search(new))
    values = (
        float(old_vector @ new_vector),
        len(old_words & new_words) / len(union) if union else 0.0,
        float(bool(old_numbers) and old_numbers == new_numbers),
        float(bool(old_numbers) and bool(new_numbers) and old_numbers != new_numbers),
        float(bool(old_numbers) != bool(new_numbers)),
        min(len(old), len(new)) / max(len(old), len(new), 1),
        float(han_old == han_new),
    )
    return np.asarray(values, dtype=np.float32)
