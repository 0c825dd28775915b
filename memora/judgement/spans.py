"""Candidate value spans of a text and what surrounds them, for the trained secret-span decision.

The scanner proposes every token-like piece a value could be (words, digit groups,
joined digit sequences, runs of spelled or Chinese digits); the trained model decides
which of them is a way into something. Context is hashed character trigrams of
the words around a span, so the model learns its cues from the corpus.
"""

from __future__ import annotations

import re
import tomllib
import zlib
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from memora.text.folding import HAN_CHARS

_PIECE = re.compile(
    rf"[{HAN_CHARS}]+|[\u3040-\u30ff]+|[\uac00-\ud7af]+|[^\s{HAN_CHARS}\u3040-\u30ff\uac00-\ud7af]+"
)
_JOINED_DIGITS = re.compile(r"(?<![\w])\d(?:[ \-.]\d){3,}(?![\w])")
_DIGIT_GROUPS = re.compile(r"(?<![\w.:/\-])\d{2,4}(?:[ \-]\d{2,4}){1,5}(?![\w]|[.:/\-]\d)")
"""Digits read out in groups ("481 207", "12-34-56"): one value, as a code is typed."""
_QUOTE_PAIRS = {"'": "'", '"': '"', "“": "”", "‘": "’", "„": "“", "「": "」", "『": "』", "«": "»"}
_QUOTED = re.compile(
    "|".join(
        rf"(?<!\w){re.escape(opening)}([^{re.escape(opening + closing)}\n]{{2,40}}?)"
        rf"{re.escape(closing)}(?!\w)"
        for opening, closing in _QUOTE_PAIRS.items()
    )
)
"""A phrase in quotes: a passphrase of several words is often set off this way."""
DIGIT_WORDS_FILE = Path(__file__).with_name("digit_words.toml")


_WORD_EDGE = r"\w\u0900-\u097f"
"""What may not touch a digit word written apart: a letter, or a Devanagari vowel sign, which
a regex word character does not cover ("विचार" must not end in the digit "चार")."""


@cache
def _digit_languages() -> dict[str, Any]:
    """``digit_words.toml``'s languages, read once."""
    return dict(tomllib.loads(DIGIT_WORDS_FILE.read_text("utf-8"))["languages"])


@cache
def digit_word_runs() -> re.Pattern[str]:
    """Runs of one language's digit words in ``digit_words.toml``: at least its ``least_run``
    (3 if unset), apart, or run together in a script written without spaces."""
    runs = []
    for language in _digit_languages().values():
        words = sorted(language["words"], key=len, reverse=True)
        word = "|".join(re.escape(w) for w in words)
        least = int(language.get("least_run", 3))
        if language.get("joined", False):
            runs.append(rf"(?:(?:{word})[\s・、-]?){{{least - 1},}}(?:{word})")
        else:
            edge = _WORD_EDGE
            runs.append(rf"(?:(?<![{edge}])(?:{word})(?![{edge}])[\s,-]*){{{least},}}")
    return re.compile("|".join(runs), re.IGNORECASE)


@cache
def _digit_words() -> tuple[re.Pattern[str], dict[str, str]]:
    """Any one digit word of ``digit_words.toml`` (the longest first), and the digit of each."""
    digit = {
        word.casefold(): value
        for language in _digit_languages().values()
        for word, value in zip(language["words"], language["digits"], strict=True)
    }
    words = "|".join(re.escape(w) for w in sorted(digit, key=len, reverse=True))
    return re.compile(words, re.IGNORECASE), digit


def spelled_as_digits(text: str) -> str | None:
    """``text`` with each run of digit words written in digits, between the same separators
    ("cinco cero cero nueve" -> "5 0 0 9"), or None where it has no such run. A run that
    counts up or down ("eins, zwei, drei, vier", "five six seven eight", "three two one")
    stays in words: counting aloud is far commoner than such a code, and the secret decision
    reads "1 2 3 4" as one."""
    words, digit = _digit_words()

    def written(run: re.Match[str]) -> str:
        spoken = [w.group(0).casefold() for w in words.finditer(run.group(0))]
        # A run holding a casing whose fold is not listed ("İKİ") stays in words.
        if not all(word in digit for word in spoken):
            return run.group(0)
        values = [int(digit[word]) for word in spoken]
        if {b - a for a, b in pairwise(values)} in ({1}, {-1}):
            return run.group(0)
        return words.sub(lambda w: digit[w.group(0).casefold()], run.group(0))

    written_text = digit_word_runs().sub(written, text)
    return written_text if written_text != text else None


_CJK_DIGITS = re.compile(r"[零〇一二三四五六七八九两]{4,}")
_EDGE = "\"'“”‘’「」『』()[]{}<>.,;:!?。，；：！？、"
_HAN_SPLIT = re.compile(r"[的是为為在用把：:，,。]")

LEFT_BUCKETS = 1024
RIGHT_BUCKETS = 256
VALUE_BUCKETS = 512
SHAPE_FEATURES = 10
CONTEXT_CHARS = 24


@dataclass(frozen=True)
class Span:
    """A candidate value: where it is in the text and its characters."""

    start: int
    end: int
    value: str
    numeric: bool = False
    """Digits or digit words, however written: a number rather than a word."""


def candidate_spans(text: str) -> list[Span]:
    """Every piece of ``text`` that could be a value, longest joined forms included."""
    spans: dict[tuple[int, int], Span] = {}
    for pattern in (_JOINED_DIGITS, _DIGIT_GROUPS, digit_word_runs(), _CJK_DIGITS):
        for match in pattern.finditer(text):
            start, end = match.start(), match.end()
            value = text[start:end].rstrip(" ,-")
            spans[(start, start + len(value))] = Span(start, start + len(value), value, True)
    for match in _QUOTED.finditer(text):
        group = match.lastindex or 0
        value = match.group(group).strip()
        if " " in value:
            start = match.start(group) + match.group(group).index(value)
            spans[(start, start + len(value))] = Span(
                start, start + len(value), value, _holds_number(value)
            )
    for match in _PIECE.finditer(text):
        start, end = match.start(), match.end()
        piece = match.group(0)
        if re.match(rf"[{HAN_CHARS}]", piece):
            for sub in _split_han(piece, start):
                spans.setdefault((sub.start, sub.end), sub)
            continue
        stripped = piece.strip(_EDGE)
        if not stripped:
            continue
        offset = start + piece.index(stripped)
        spans.setdefault(
            (offset, offset + len(stripped)),
            Span(offset, offset + len(stripped), stripped, _holds_number(stripped)),
        )
    return sorted(spans.values(), key=lambda s: (s.start, -s.end))


def _holds_number(value: str) -> bool:
    return any(c.isnumeric() for c in value)


def _split_han(run: str, start: int) -> list[Span]:
    """A Han run cut at particles and punctuation: the values in it are usually whole pieces."""
    pieces: list[Span] = []
    position = 0
    for match in _HAN_SPLIT.finditer(run + "。"):
        if match.start() > position:
            pieces.append(
                Span(
                    start + position,
                    start + match.start(),
                    run[position : match.start()],
                    run[position : match.start()].isnumeric(),
                )
            )
        position = match.end()
    return [p for p in pieces if 1 < len(p.value) <= 12]


def _hashed(text: str, buckets: int) -> np.ndarray:
    row = np.zeros(buckets, dtype=np.float32)
    padded = f" {text.lower()} "
    for i in range(len(padded) - 2):
        row[zlib.crc32(padded[i : i + 3].encode("utf-8", "surrogatepass")) % buckets] = 1.0
    return row


def _shape(value: str) -> np.ndarray:
    chars = max(len(value), 1)
    digits = sum(c.isdigit() for c in value)
    letters = sum(c.isalpha() for c in value)
    symbols = sum(not c.isalnum() and not c.isspace() for c in value)
    return np.asarray(
        (
            min(len(value), 40) / 40,
            digits / chars,
            letters / chars,
            symbols / chars,
            float(digits > 0 and letters > 0),
            float(any(c.isupper() for c in value) and any(c.islower() for c in value)),
            float(value[:1].isupper()),
            float(" " in value),
            float(bool(re.search(f"[{HAN_CHARS}]", value))),
            float(digits >= 4),
        ),
        dtype=np.float32,
    )


def span_features(text: str, span: Span) -> np.ndarray:
    """Shape of the span, hashed trigrams of its own characters (so the model learns that
    "still" or "for" is a word around a value, not one), and hashed trigrams of the text just
    before and after it."""
    left = text[max(0, span.start - CONTEXT_CHARS) : span.start]
    right = text[span.end : span.end + CONTEXT_CHARS // 2]
    return np.concatenate(
        [
            _shape(span.value),
            _hashed(span.value, VALUE_BUCKETS),
            _hashed(left, LEFT_BUCKETS),
            _hashed(right, RIGHT_BUCKETS),
        ]
    )
