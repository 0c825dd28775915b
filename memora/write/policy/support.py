"""Whether the user's message supports a candidate (the ``assistant_generated`` checks).

Three lexical signs that the assistant, not the user, is the source: too few of the
candidate's content words occur in the message; the candidate names a number or a
capitalised name the user never wrote; or the user weighed options or asked a question
and the candidate states a decision or a plan.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator

from memora.models import MemoryCandidate
from memora.text.folding import HAN_CHARS, count_han, fold, stem
from memora.write.policy.engine import load_rule_file
from memora.write.policy.words import policy_words

SUPPORT_THRESHOLD = 0.34
"""Minimum share of the candidate's content tokens that must appear in the user message."""

_EN_TOKEN_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_YEAR_RE = re.compile(r"(?:19|20)\d\d")
_NUMBER_UNIT_RE = re.compile(r"(\d+)(?:st|nd|rd|th)?([a-z]*)")
_NUMBER_WORDS = {
    word: n
    for n, word in enumerate(
        ("zero", "one", "two", "three", "four", "five", "six")
        + ("seven", "eight", "nine", "ten", "eleven", "twelve")
    )
}
_ZH_NUMERALS = dict(
    zip("零一二两三四五六七八九十", (0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10), strict=True)
)
_SPECIFIC_RE = re.compile(r"\d+(?:[.,]\d+)*|(?<![A-Za-z])[A-Z][A-Za-z0-9]*[a-z0-9][A-Za-z0-9]*")
"""Numbers and capitalised names (``Mochi``, ``A7C``): the details an assistant makes up."""
_PLAN_CLAIM_RE = re.compile(
    r"(?<![a-z])(?:(?:plans?|planning|planned|intends?|intending|decided|decides|going)\s+to"
    r"|will)\s+([a-z]+)(?:\s+(?:the|a|an|his|her|their|its|some|to|on|in|for|with)){0,2}"
    r"(?:\s+([a-z]+))?"
)
_MIN_SHARED_PREFIX = 4
_MAX_ABBREVIATION = 5


def english_tokens(text: str) -> list[str]:
    """Lower-case English content words of folded text, without stopwords."""
    stopwords = policy_words().stopwords
    tokens = (t.removesuffix("'s") for t in _EN_TOKEN_RE.findall(text))
    return [t for t in tokens if t not in stopwords]


def cjk_runs(text: str) -> list[str]:
    """Chinese runs of folded text with framing words and particles cut out."""
    words = policy_words()
    text = words.zh_framing.sub(" ", text)
    for word, canonical in words.zh_synonyms:
        text = text.replace(word, canonical)
    text = "".join(" " if ch in words.zh_particles else ch for ch in text)
    return re.findall(f"[{HAN_CHARS}]+", text)


def _canonical_tokens(tokens: Iterable[str]) -> Iterator[str]:
    """Spell out abbreviations and number words; split "4h" into "4" and "hour"."""
    abbreviations = policy_words().abbreviations
    for token in tokens:
        match = _NUMBER_UNIT_RE.fullmatch(token)
        if match:
            yield match.group(1)
            if match.group(2):
                yield abbreviations.get(match.group(2), match.group(2))
        elif token in _NUMBER_WORDS:
            yield str(_NUMBER_WORDS[token])
        else:
            yield abbreviations.get(token, token)


def _support_tokens(text: str) -> set[str]:
    """Content tokens for the overlap test: English stems and Chinese character bigrams."""
    words = _canonical_tokens(english_tokens(text))
    stems = {stem(t) for t in words if not _YEAR_RE.fullmatch(t)}
    tokens = stems - policy_words().framing_stems
    for run in cjk_runs(text):
        tokens.update(run[i : i + 2] for i in range(max(len(run) - 1, 1)))
    return tokens


def mostly_chinese(text: str) -> bool:
    """True if CJK characters outnumber Latin letters (the text's dominant script)."""
    return count_han(text) > len(re.findall(r"[a-z]", text))


def support_ratio(content: str, user_message: str) -> float | None:
    """Share of the candidate's content tokens that also occur in the user's message.

    Returns:
        A ratio in [0, 1], or ``None`` when it cannot be measured lexically (no content
        tokens, or the two texts are written in different scripts).
    """
    content_n, message_n = fold(content), fold(user_message)
    if mostly_chinese(content_n) != mostly_chinese(message_n):
        return None
    candidate_tokens = _support_tokens(content_n)
    if not candidate_tokens:
        return None
    message_tokens = _support_tokens(message_n)
    message_tokens |= _initialisms(english_tokens(content_n), english_tokens(message_n))
    supported = sum(1 for token in candidate_tokens if _token_supported(token, message_tokens))
    return supported / len(candidate_tokens)


def _token_supported(token: str, message_tokens: set[str]) -> bool:
    """The token occurs in the message, or (English) one word shortens the other."""
    if token in message_tokens:
        return True
    if not token.isascii() or not token.isalpha():
        return False
    return any(
        other.isascii() and (_abbreviates(token, other) or _abbreviates(other, token))
        for other in message_tokens
    )


def _abbreviates(short: str, long: str) -> bool:
    """``short`` shortens ``long``: a prefix of 4+ letters ("intro"), or a 2-5 letter
    initialism whose letters occur in order in a much longer word ("js", "javascript")."""
    if len(short) >= len(long) or not short.isalpha():
        return False
    if len(short) >= _MIN_SHARED_PREFIX and long.startswith(short):
        return True
    if not 2 <= len(short) <= _MAX_ABBREVIATION or short[0] != long[0]:
        return False
    if len(long) < len(short) + 3:
        return False
    rest = iter(long[1:])
    return all(ch in rest for ch in short[1:])


def _initialisms(content_words: list[str], message_words: Iterable[str]) -> set[str]:
    """Content stems spelled by a message initialism ("ML" -> "machine learning")."""
    found: set[str] = set()
    for short in message_words:
        if not (2 <= len(short) <= _MAX_ABBREVIATION and short.isalpha()):
            continue
        for i in range(len(content_words) - len(short) + 1):
            run = content_words[i : i + len(short)]
            if "".join(w[0] for w in run) == short:
                found.update(stem(w) for w in run)
    return found


def _numbers_said(text: str) -> set[str]:
    """Digit strings of ``text`` plus the numbers it spells out (two, 两, 十)."""
    said = {m.replace(",", "") for m in re.findall(r"\d+(?:[.,]\d+)*", text)}
    said.update(str(n) for w, n in _NUMBER_WORDS.items() if re.search(rf"\b{w}\b", text))
    said.update(str(n) for ch, n in _ZH_NUMERALS.items() if ch in text)
    return said


def _unsupported_specific(content: str, user_message: str) -> bool:
    """True if the candidate names a number or a capitalised name the user never wrote.

    Years are skipped (a relative date is resolved to one), as is the first word of each
    sentence (capitalised by grammar) and the framing word "User".
    """
    message = unicodedata.normalize("NFKC", user_message)
    message_lower = message.lower()
    numbers = _numbers_said(message_lower)
    message_words = list(_canonical_tokens(_EN_TOKEN_RE.findall(message_lower)))
    stems = {stem(t) for t in message_words}
    text = unicodedata.normalize("NFKC", content)
    stems |= _initialisms(_EN_TOKEN_RE.findall(text.lower()), message_words)
    for match in _SPECIFIC_RE.finditer(text):
        token = match.group()
        before = text[: match.start()].rstrip()
        if token[0].isdigit():
            value = token.replace(",", "")
            if _YEAR_RE.fullmatch(value) or value in numbers:
                continue
            return True
        if not before or before[-1] in ".!?;:。！？；：" or token.lower() in {"user", "users"}:
            continue
        lower = token.lower()
        if lower in message_lower or stem(lower) in stems:
            continue
        if lower.isalpha() and any(
            _abbreviates(lower, w) or _abbreviates(w, lower) for w in message_words
        ):
            continue
        return True
    return False


def _term(term_id: str, folded: str) -> bool:
    return load_rule_file("assistant").term(term_id).search(folded) is not None


def _unsupported_plan(content: str, message: str) -> str | None:
    """A plan, decision or pursuit the message does not state.

    A question that says nothing about the asker ("what's the capital of X?") supports no
    claim about the user's plans; and a stated plan needs its action or object in the
    message ("plans to withhold rent" from a request to draft a letter does not).
    """
    content_n, message_n = fold(content), fold(message)
    claims_plan = _term("plan", content_n) or _term("decision", content_n)
    if (
        claims_plan
        and _term("question", message_n)
        and not _term("first-person", message_n)
        and not _term("plan", message_n)
    ):
        return "assistant:question-not-plan"
    message_tokens = _support_tokens(message_n)
    stopwords = policy_words().stopwords
    for match in _PLAN_CLAIM_RE.finditer(content_n):
        words = [w for w in match.groups() if w and w not in stopwords]
        if words and not any(
            _token_supported(token, message_tokens) for token in _support_tokens(" ".join(words))
        ):
            return "assistant:unsupported-plan"
    return None


def check_assistant_attribution(candidate: MemoryCandidate) -> str | None:
    """The candidate says the assistant suggested, said or decided it."""
    return load_rule_file("assistant").first_rule(fold(candidate.content))


def check_assistant_support(candidate: MemoryCandidate) -> str | None:
    """The user's message does not support the candidate (see the module docstring)."""
    if candidate.user_message is None:
        return None
    content, message = candidate.content, candidate.user_message
    ratio = support_ratio(content, message)
    if ratio is not None and ratio < SUPPORT_THRESHOLD:
        return "assistant:low-support"
    message_n, content_n = fold(message), fold(content)
    if mostly_chinese(content_n) != mostly_chinese(message_n):
        # Written in another script: names are translated, but numbers stay numbers.
        said = _numbers_said(unicodedata.normalize("NFKC", message).lower())
        for number in re.findall(r"\d+(?:[.,]\d+)*", unicodedata.normalize("NFKC", content)):
            value = number.replace(",", "")
            if not _YEAR_RE.fullmatch(value) and value not in said:
                return "assistant:unsupported-detail"
        return None
    if _unsupported_specific(content, message):
        return "assistant:unsupported-detail"
    if (
        _term("choice", message_n)
        and _term("decision", content_n)
        and not _term("decision", message_n)
    ):
        return "assistant:unmade-choice"
    return _unsupported_plan(content, message)
