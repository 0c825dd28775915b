"""The memory policy gate: hard rules that decide whether a candidate may be remembered.

Every candidate passes :func:`apply_memory_policy` before the write path. Hard rules run
in this order (the first one that fires wins):

1. ``instruction_like`` hidden by an encoding (base64, rot13, reversed): decoded first,
   because a base64 run also looks like a key.
2. ``sensitive_data``: a redaction mark (a secret stood there), credentials, card and
   ID numbers, "my password is ..." values.
3. ``instruction_like``: text that tries to steer the assistant (prompt injection).
4. ``user_refused``: the user's message says not to remember / store it.
5. ``assistant_generated``: the candidate says the assistant suggested it.
6. ``ephemeral``: one-off, this-time-only requests and same-day states.
7. ``too_vague``: empty, over-long or content-free text.
8. ``assistant_generated``: the user's message does not support the candidate.

An optional model-based :class:`MemoryClassifier` runs only on candidates the hard rules
accepted: it can add rejections, never overrule a hard one. The ``rule`` recorded with a
rejection names the rule that fired and never contains any of the candidate's text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from memora.judgement.decisions import Judgement
from memora.limits import MAX_MEMORY_CHARS, MAX_USER_MESSAGE_CHARS
from memora.models import MemoryCandidate, MemoryScope, PolicyRejection, RejectionReason
from memora.text.folding import fold, strip_invisible
from memora.validation import has_surrogates
from memora.write.policy.engine import load_rule_file
from memora.write.policy.ephemeral import check_ephemeral
from memora.write.policy.injection import check_encoded_instruction, check_instruction_like
from memora.write.policy.judged import is_kept_veto, trained_verdict
from memora.write.policy.secrets import (
    mentions_secret_keyword,
    redaction_mark_rule,
    sensitive_rule,
)
from memora.write.policy.support import check_assistant_attribution, check_assistant_support
from memora.write.policy.vague import check_too_vague

__all__ = [
    "HARD_RULES",
    "MAX_MEMORY_CHARS",
    "MemoryClassifier",
    "apply_memory_policy",
    "check_candidate",
]


class MemoryClassifier(Protocol):
    """A (usually model-based) second opinion on candidates the hard rules accepted."""

    def classify(self, candidate: MemoryCandidate) -> RejectionReason | None:
        """Return a rejection reason, or ``None`` to accept the candidate."""
        ...


def _check_redaction_mark(candidate: MemoryCandidate) -> str | None:
    return redaction_mark_rule(candidate.content)


def _check_sensitive(candidate: MemoryCandidate) -> str | None:
    """Sensitive values in the content, or a content that refers to a secret the user gave.

    "記住使用者的驗證碼" holds no code itself, but if the user's message held one the
    candidate is about that secret and is rejected too.
    """
    rule = sensitive_rule(candidate.content)
    if rule or not candidate.user_message:
        return rule
    message_rule = sensitive_rule(candidate.user_message)
    if message_rule and mentions_secret_keyword(candidate.content):
        return f"user-message:{message_rule}"
    return None


def _check_user_refused(candidate: MemoryCandidate) -> str | None:
    """The user said not to keep it (in the candidate or the message it came from)."""
    file = load_rule_file("refusal")
    for text in (candidate.content, candidate.user_message or ""):
        rule = file.first_rule(fold(text)) if text else None
        if rule:
            return rule
    return None


def _check_vague(candidate: MemoryCandidate) -> str | None:
    return check_too_vague(candidate.content)


HARD_RULES: tuple[tuple[RejectionReason, Callable[[MemoryCandidate], str | None]], ...] = (
    (RejectionReason.INSTRUCTION_LIKE, check_encoded_instruction),
    (RejectionReason.SENSITIVE_DATA, _check_redaction_mark),
    (RejectionReason.SENSITIVE_DATA, _check_sensitive),
    (RejectionReason.INSTRUCTION_LIKE, check_instruction_like),
    (RejectionReason.USER_REFUSED, _check_user_refused),
    (RejectionReason.ASSISTANT_GENERATED, check_assistant_attribution),
    (RejectionReason.EPHEMERAL, check_ephemeral),
    (RejectionReason.TOO_VAGUE, _check_vague),
    (RejectionReason.ASSISTANT_GENERATED, check_assistant_support),
)
"""The hard rules in their fixed order; the first that fires decides the reason."""


def check_candidate(
    candidate: MemoryCandidate, judge: Judgement | None = None
) -> tuple[RejectionReason, str] | None:
    """Apply the rules, and the trained gate when there is one, to one candidate.

    Without ``judge`` every rule decides. With it, only the deterministic detectors
    and the rules near-certain on the labelled corpora reject on their own; the
    trained gate decides the rest.

    Returns:
        ``(reason, rule_name)`` for the first rule that fires, or ``None`` if accepted.
        ``rule_name`` never contains any of the candidate's text.
    """
    # Before every other rule: their regexes cost seconds on a megabyte of text,
    # and text that is not valid UTF-8 can be neither judged nor stored.
    if len(candidate.content) > MAX_MEMORY_CHARS:
        return RejectionReason.TOO_VAGUE, "vague:max-length"
    message = candidate.user_message or ""
    if len(message) > MAX_USER_MESSAGE_CHARS:
        return RejectionReason.TOO_VAGUE, "vague:source-too-long"
    if has_surrogates(candidate.content) or has_surrogates(message):
        return RejectionReason.TOO_VAGUE, "vague:not-utf8"
    if not strip_invisible(candidate.content).strip():
        return RejectionReason.TOO_VAGUE, "vague:empty"  # nothing for a judgement to read
    for reason, check in HARD_RULES:
        if reason is RejectionReason.EPHEMERAL and candidate.scope is MemoryScope.THREAD:
            continue  # "for this chat" is exactly what a thread-scoped memory is for
        rule = check(candidate)
        # A decoder or the redaction's own mark proves it; no judgement needed.
        proven = check in (check_encoded_instruction, _check_redaction_mark)
        if rule and (judge is None or proven or is_kept_veto(reason, rule)):
            return reason, rule
    return trained_verdict(candidate, judge) if judge is not None else None


def apply_memory_policy(
    candidates: Iterable[MemoryCandidate],
    classifier: MemoryClassifier | None = None,
    judge: Judgement | None = None,
) -> tuple[list[MemoryCandidate], list[PolicyRejection]]:
    """Split candidates into accepted ones and rejections.

    Hard rules run first; the classifier (if any) only sees candidates they accepted, so it
    can add a rejection but never overturn a hard one.

    Returns:
        ``(accepted, rejected)``, each in input order.
    """
    accepted: list[MemoryCandidate] = []
    rejected: list[PolicyRejection] = []
    for candidate in candidates:
        verdict = check_candidate(candidate, judge)
        if verdict is None and classifier is not None:
            reason = classifier.classify(candidate)
            if reason is not None:
                verdict = RejectionReason(reason), f"classifier:{type(classifier).__name__}"
        if verdict is None:
            accepted.append(candidate)
        else:
            reason, rule = verdict
            rejected.append(PolicyRejection(candidate=candidate, reason=reason, rule=rule))
    return accepted, rejected
