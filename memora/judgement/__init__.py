"""Trained judgement: small decisions over a bundled multilingual sentence encoder.

What a candidate memory is (the gate), where a secret value is (for the gate and
for transcript redaction) and how a new memory relates to a stored one (for
reconciliation) come from models trained on the labelled corpora in
``corpora/``; ``memora train`` reproduces the weights in ``weights/``.
"""

from __future__ import annotations

from memora.judgement.decisions import Judgement, judgement


def trained_judgement(setting: str) -> Judgement | None:
    """The process-wide trained decisions if the setting asks for them and their weights load."""
    if setting != "trained":
        return None
    judge = judgement()
    return judge if judge.gate_model is not None else None


__all__ = ["Judgement", "judgement", "trained_judgement"]
