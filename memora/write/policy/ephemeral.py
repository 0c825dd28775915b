"""One-off requests and passing states (the ``ephemeral`` checks)."""

from __future__ import annotations

import re

from memora.models import MemoryCandidate
from memora.text.folding import fold
from memora.write.policy.engine import load_rule_file

_CLAUSE_SPLIT_RE = re.compile(r"[.!?;,，。！？；\n]|(?<![a-z])(?:but|and|so)(?![a-z])")


def _texts(candidate: MemoryCandidate) -> list[str]:
    """The candidate's content and, when given, its user message, both folded."""
    texts = [fold(candidate.content)]
    if candidate.user_message:
        texts.append(fold(candidate.user_message))
    return texts


def _transient_state_rule(candidate: MemoryCandidate) -> str | None:
    """The candidate reports a passing state (hungry, in a meeting, 心情不好 today).

    A temporary physical or emotional state, or what the user is doing right now, is not
    a durable fact unless a durable marker says it keeps happening ("always", 长期).
    """
    file = load_rule_file("ephemeral")
    durable, timed, now = file.term("durable"), file.term("timed-state"), file.term("now")
    content = fold(candidate.content)
    if durable.search(content):
        return None
    if file.term("transient-state").search(content):
        return "ephemeral:transient-state"
    if not timed.search(content):
        return None
    for text in _texts(candidate):
        for clause in filter(None, _CLAUSE_SPLIT_RE.split(text)):
            if timed.search(clause) and now.search(clause) and not durable.search(clause):
                return "ephemeral:state-today"
    return None


def check_ephemeral(candidate: MemoryCandidate) -> str | None:
    """A this-time-only request or a same-day state, in the candidate or the message."""
    file = load_rule_file("ephemeral")
    for text in _texts(candidate):
        rule = file.first_rule(text)
        if rule:
            return rule
    return _transient_state_rule(candidate)
