"""What the rules see in a pair of statements, as numbers for the trained relation decision.

The sentence encoder places "weighs 82 kg" and "weighs 79 kg" almost on top of each other,
and "ran 5 km on 2 April" beside "ran 5 km on 6 April": it does not read values. Token
alignment and statement structure do, so the relation decision reads them too, and learns
from its corpus when they are right.
"""

from __future__ import annotations

import numpy as np

from memora.models import ReconcileAction
from memora.write.reconcile.alignment import align, comparison_tokens, content_tokens, tail_swap
from memora.write.reconcile.offline import OfflineReconciler
from memora.write.reconcile.structure import (
    Relation,
    capitalised_names,
    has_contrast,
    has_named_attribute,
    occasions,
    predicate_overlap,
    relate,
)

_RELATIONS = (Relation.REPEAT, Relation.SAME_ATTRIBUTE, Relation.DISTINCT, Relation.UNKNOWN)
_VERDICTS = (ReconcileAction.SKIP, ReconcileAction.UPDATE, None)
_RULES = OfflineReconciler()
WIDTH = len(_RELATIONS) + len(_VERDICTS) + 12
"""How many numbers :func:`pair_structure` gives."""


def _has_digit(tokens: list[str]) -> bool:
    return any(any(c.isdigit() for c in t) for t in tokens)


def pair_structure(old_text: str, new_text: str) -> np.ndarray:
    """The structure of one (stored, new) pair: relation, token verdict, alignment shape."""
    old, new = comparison_tokens(old_text), comparison_tokens(new_text)
    relation = relate(old_text, new_text)
    verdict = _RULES.token_verdict(old, new)
    al = align(old, new)
    old_changed, new_changed = al.old_changed_tokens(), al.new_changed_tokens()
    changed = old_changed + new_changed
    old_dates, new_dates = occasions(old_text), occasions(new_text)
    old_names, new_names = capitalised_names(old_text), capitalised_names(new_text)
    values = [
        *(float(relation is r) for r in _RELATIONS),
        *(float(verdict is v) for v in _VERDICTS),
        al.old_coverage,
        len(al.shared) / max(1, len(new)),
        min(len(content_tokens(old_changed)), 8) / 8,
        min(len(content_tokens(new_changed)), 8) / 8,
        float(bool(changed) and all(any(c.isdigit() for c in t) for t in changed)),
        float(_has_digit(old_changed) and _has_digit(new_changed)),
        float(bool(old_dates) and bool(new_dates) and old_dates != new_dates),
        float(tail_swap(old, new)),
        float(has_contrast(old_text, new_text)),
        float(has_named_attribute(old_text, new_text)),
        predicate_overlap(old_text, new_text),
        float(bool(old_names ^ new_names)),
    ]
    return np.asarray(values, dtype=np.float32)
