"""Turning a first-person statement into a third-person memory."""

from __future__ import annotations

import re

from agent.offline.text import PUNCT, Lang

# --------------------------------------------------------------------------- first person

_EN_MODALS = frozenset(
    {"can", "could", "will", "would", "should", "shall", "may", "might", "must", "was", "did"}
    | {"had", "used"}
)
_EN_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "am": "is", "be": "is"}
_EN_SUBJECT_RE = re.compile(
    r"^(?P<lead>\W*)(?:(?P<my>my)\s+|(?P<iam>i'm|i\s+am)(?![a-z])|(?P<ive>i've)(?![a-z])"
    r"|(?P<ill>i'll)(?![a-z])|(?P<id>i'd)(?![a-z])"
    r"|(?P<neg>i\s+(?:don't|do\s+not))(?![a-z])"
    r"|i\s+(?P<adv>\w+ly\s+|always\s+|never\s+|often\s+|also\s+|still\s+)?(?P<verb>[a-z]+))",
    re.IGNORECASE,
)
_EN_OBJECT_WORDS = [
    (re.compile(r"\bI'm\b|\bI am\b", re.IGNORECASE), "they are"),
    (re.compile(r"\bI was\b", re.IGNORECASE), "they were"),
    (re.compile(r"\bmyself\b", re.IGNORECASE), "themselves"),
    (re.compile(r"\bmine\b", re.IGNORECASE), "theirs"),
    (re.compile(r"\bmy\b", re.IGNORECASE), "their"),
    (re.compile(r"\bme\b", re.IGNORECASE), "them"),
    (re.compile(r"\bI\b"), "they"),
]


def _conjugate(verb: str) -> str:
    """Third person singular of a first-person verb ("prefer" -> "prefers")."""
    lower = verb.lower()
    if lower in _EN_IRREGULAR:
        return _EN_IRREGULAR[lower]
    if lower in _EN_MODALS or lower.endswith("ed"):
        return verb
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _english_subject(match: re.Match[str]) -> str:
    """The replacement for a sentence-initial "I ..." / "My ..." (see _EN_SUBJECT_RE)."""
    lead = match.group("lead")
    fixed = {
        "my": "The user's ",
        "iam": "The user is",
        "ive": "The user has",
        "ill": "The user will",
        "id": "The user would",
        "neg": "The user does not",
    }
    for group, replacement in fixed.items():
        if match.group(group):
            return lead + replacement
    adverb = match.group("adv") or ""
    return f"{lead}The user {adverb}{_conjugate(match.group('verb'))}"


_EN_FIRST_MENTION = [
    (re.compile(r"\bmy\b", re.IGNORECASE), "the user's"),
    (re.compile(r"\bI'm\b|\bI am\b", re.IGNORECASE), "the user is"),
    (re.compile(r"\bme\b", re.IGNORECASE), "the user"),
    (re.compile(r"\bI\b"), "the user"),
]
"""A first person that does not open the sentence ("White is my favourite colour")."""


def _third_person(text: str) -> str:
    """The first first-person word as "the user", later ones as they/them/their."""
    found = [(m.start(), m.end(), r) for p, r in _EN_FIRST_MENTION if (m := p.search(text))]
    if not found:
        return text
    start, end, replacement = min(found)
    rest = text[end:]
    for pattern, pronoun in _EN_OBJECT_WORDS:
        rest = pattern.sub(pronoun, rest)
    return text[:start] + replacement + rest


def _english_memory(text: str) -> str:
    """Rewrite a first-person English fact as "The user ..."; other text stays as is."""
    match = _EN_SUBJECT_RE.match(text)
    if match is None:
        return _third_person(text)
    rest = text[match.end() :]
    for pattern, replacement in _EN_OBJECT_WORDS:
        rest = pattern.sub(replacement, rest)
    return _english_subject(match) + rest


def _chinese_memory(text: str) -> str:
    """Rewrite the subject 我 as 使用者 (the same word in both scripts).

    A later clause's 我 is dropped, as Chinese does once the subject is known, except
    in 我的, which becomes 使用者的.
    """
    text = re.sub(r"^我(?![们們])", "使用者", text, count=1)
    text = re.sub(r"([，,；;]\s*)我的", r"\1使用者的", text)
    return re.sub(r"([，,；;]\s*)我(?![们們的])", r"\1", text)


def as_memory(content: str) -> str:
    """A self-contained memory in the user's words, first person turned to "The user"."""
    content = content.strip(PUNCT + "-")
    if Lang.of(content).chinese:
        content = _chinese_memory(content)
        return content if content.endswith(("。", "！", "!", ".")) else content + "。"
    content = _english_memory(content)
    return content if content.endswith((".", "!")) else content + "."
