"""Content-free candidates (the ``too_vague`` check)."""

from __future__ import annotations

from memora.limits import MAX_MEMORY_CHARS
from memora.text.folding import count_han, fold
from memora.write.policy.engine import load_rule_file
from memora.write.policy.support import cjk_runs, english_tokens
from memora.write.policy.words import policy_words

_MIN_CONTENT_UNITS = 2
_MIN_INFORMATIVE_CJK = 2


def check_too_vague(content: str) -> str | None:
    """Empty, over-long, pronoun-only or generic-only content.

    English counts content words; Chinese counts about one unit per two characters. With
    a subject frame ("User is vegan", 我吃素) a single informative word is a whole fact.
    """
    if not content.strip():
        return "vague:empty"
    if len(content) > MAX_MEMORY_CHARS:
        return "vague:max-length"
    file, words = load_rule_file("vague"), policy_words()
    text = fold(content)
    tokens = english_tokens(text)
    cjk_chars = count_han(text)
    hedged = file.term("hedge").search(text) is not None
    informative = [
        w
        for w in tokens
        if w not in words.generic
        and w not in words.hedges
        and not (hedged and w in words.broad_nouns)
    ]
    zh_text = file.term("zh-generic").alternation().sub(" ", text)
    if hedged:
        zh_text = file.term("zh-broad").alternation().sub(" ", zh_text)
    informative_cjk = "".join(cjk_runs(zh_text))
    units = len(tokens) + cjk_chars / 2
    framed = file.term("framed").search(text) is not None
    if units < _MIN_CONTENT_UNITS and not (units >= 1 and informative and framed):
        return "vague:too-short"
    if not informative and len(informative_cjk) < _MIN_INFORMATIVE_CJK:
        return "vague:no-content-words"
    return None
