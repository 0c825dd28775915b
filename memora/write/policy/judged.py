"""The gate with trained judgement: deterministic detectors and near-certain rules, then the model.

A pattern rule stays a veto only if it was near-certain on the labelled corpora
(``memora train`` measures each rule and writes the list beside the weights);
every other decision about what a sentence is comes from the trained gate.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from memora.judgement.decisions import WEIGHTS_DIR, Judgement
from memora.models import MemoryCandidate, MemoryScope, RejectionReason
from memora.text.folding import fold, strip_invisible
from memora.write.policy.injection import decoded_readings

VETOES_FILE = WEIGHTS_DIR / "vetoes.json"
"""The rules kept as vetoes, with their measured precision (written by ``memora train``)."""

GATE_REASONS = {
    "sensitive": RejectionReason.SENSITIVE_DATA,
    "instruction": RejectionReason.INSTRUCTION_LIKE,
    "refused": RejectionReason.USER_REFUSED,
    "assistant_generated": RejectionReason.ASSISTANT_GENERATED,
    "ephemeral": RejectionReason.EPHEMERAL,
    "vague": RejectionReason.TOO_VAGUE,
}


def rule_family(rule: str) -> str:
    """A rule's name without a candidate-specific suffix ("keyword:pin", "iban")."""
    return ":".join(rule.split(":")[:2])


@cache
def kept_vetoes(path: Path = VETOES_FILE) -> frozenset[str]:
    """The rule families that stay vetoes beside the trained gate."""
    if not path.exists():
        return frozenset()
    return frozenset(json.loads(path.read_text("utf-8"))["kept"])


def is_kept_veto(reason: RejectionReason, rule: str) -> bool:
    """Whether a fired rule still rejects when the trained gate decides.

    Sensitive data always does: a secret refused twice costs nothing, one kept costs a lot.
    """
    return reason is RejectionReason.SENSITIVE_DATA or rule_family(rule) in kept_vetoes()


def trained_verdict(
    candidate: MemoryCandidate, judge: Judgement
) -> tuple[RejectionReason, str] | None:
    """The trained gate's rejection of a candidate, or ``None`` to store it."""
    message = candidate.user_message or candidate.content
    probabilities = judge.gate(candidate.content, message)
    if not probabilities:
        return None
    secret = float(judge.secret_probability([candidate.content])[0])
    # The gate's `sensitive` reading also fires on talk about passwords and on numbers that
    # open nothing; the secret decision, trained on exactly those look-alikes, must back it,
    # in the whole text or in one of its sentences.
    backed = judge.secret_reading(candidate.content, whole=secret) >= judge.SECRET_SUPPORT
    gate_refuses = probabilities["sensitive"] >= judge.GATE_SENSITIVE and backed
    if gate_refuses or secret >= judge.SECRET_TEXT:
        return RejectionReason.SENSITIVE_DATA, "judge:sensitive"
    if judge.secret_sentences(candidate.content):
        # Redaction reads sentence by sentence, where a secret is not diluted by the
        # sentences around it; a sentence it would cut from a transcript is never stored either.
        return RejectionReason.SENSITIVE_DATA, "judge:secret-value"
    odds = {
        label: p * (judge.STORE_ODDS if label == "store" else 1.0)
        for label, p in probabilities.items()
    }
    ranked = sorted(odds, key=odds.__getitem__, reverse=True)
    content, said = fold(candidate.content).strip(), fold(message).strip()
    if content in said:
        # The user's own words, verbatim: whatever else they are, the assistant did not make them.
        ranked.remove("assistant_generated")
    if content == said:
        # A memory typed directly has no conversation to refuse it in; an explicit "don't keep
        # this" in the text itself is still caught by the refusal rules kept as vetoes.
        ranked.remove("refused")
    if candidate.scope is MemoryScope.THREAD:
        ranked.remove("ephemeral")  # "for this chat" is exactly what a thread-scoped memory is for
    if not backed:
        ranked.remove("sensitive")
    label = ranked[0]
    if label == "instruction" and probabilities[label] < judge.INSTRUCTION:
        # Facts about people and their roles look like orders to a small model; the
        # near-certain injection rules still veto, so only a confident reading refuses.
        label = ranked[1]
    if label == "store":
        return _encoded_instruction(candidate.content, judge)
    return GATE_REASONS[label], f"judge:{label}"


def _encoded_instruction(content: str, judge: Judgement) -> tuple[RejectionReason, str] | None:
    """The refusal of a memory that hides an instruction behind an encoding (reversed,
    rot13, base64, URL escapes): a decoder shows the payload, the gate reads what it says."""
    for reading in decoded_readings(strip_invisible(content)):
        if judge.gate(reading, reading).get("instruction", 0.0) >= judge.INSTRUCTION:
            return RejectionReason.INSTRUCTION_LIKE, "judge:encoded-instruction"
    return None


def secret_value_spans(text: str, judge: Judgement) -> list[tuple[int, int]]:
    """Where the trained judgement cuts values from a transcript: those of
    :func:`located_secret_spans`, or, in a text the gate refuses as sensitive though it refuses
    none of its sentences alone, every value of the text. What the gate refuses to keep as a
    memory is then not kept in a transcript either."""
    located, refused = _located_spans(text, judge)
    return located if located or not refused else judge.value_spans(text)


def located_secret_spans(text: str, judge: Judgement) -> list[tuple[int, int]]:
    """The values of the sentences that hold a secret: as the secret decision reads them, or,
    where it reads none, in each sentence the gate refuses as sensitive. These are precise
    enough to be cut wherever a turn echoes them; the numbers of a whole refused text are not."""
    return _located_spans(text, judge)[0]


def _located_spans(text: str, judge: Judgement) -> tuple[list[tuple[int, int]], bool]:
    """:func:`located_secret_spans`, and whether the gate refuses the whole text (read only
    where the secret decision places no value)."""
    found = judge.secret_value_spans(text)
    if found or judge.span_model is None or not text.strip() or not _refuses(text, judge):
        return found, False
    sentences = judge.sentences(text)
    if len(sentences) > 1:
        sentences = [m for m in sentences if _refuses(m.group(0), judge)]
    return [span for m in sentences for span in judge.value_spans(m.group(0), m.start())], True


def _refuses(text: str, judge: Judgement) -> bool:
    verdict = trained_verdict(MemoryCandidate(content=text, user_message=text), judge)
    return verdict is not None and verdict[0] is RejectionReason.SENSITIVE_DATA
