"""Reconciliation: decide how a new memory candidate relates to what is stored.

Two implementations share the :class:`Reconciler` protocol: an offline one
(token alignment and statement structure, gated by embedding similarity) and one
that asks the configured chat model for a structured verdict.
"""

from memora.write.reconcile.model import LLMReconciler
from memora.write.reconcile.offline import OfflineReconciler, Reconciler, ReconcileThresholds
from memora.write.reconcile.structure import Relation, relate, restates, same_text

__all__ = [
    "LLMReconciler",
    "OfflineReconciler",
    "ReconcileThresholds",
    "Reconciler",
    "Relation",
    "relate",
    "restates",
    "same_text",
]
