"""Reconciliation: decide how a new memory candidate relates to what is stored.

Three implementations share the :class:`Reconciler` protocol: the trained relation decision
standing on the rules, the rules alone (token alignment and statement structure, gated by
embedding similarity), and one that asks the configured chat model for a structured verdict.
"""

from langchain_core.language_models import BaseChatModel

from memora.config import Settings
from memora.judgement import Judgement
from memora.write.reconcile.model import LLMReconciler
from memora.write.reconcile.offline import OfflineReconciler, Reconciler, ReconcileThresholds
from memora.write.reconcile.structure import Relation, relate, restates, same_text
from memora.write.reconcile.trained import RelationThresholds, TrainedReconciler


def default_reconciler(
    chat_judge: BaseChatModel | None, trained: Judgement | None, settings: Settings
) -> Reconciler:
    """The chat model's verdicts when one judges writes; else the trained relation decision
    when the settings ask for it and its weights load; else the rules."""
    if chat_judge is not None:
        return LLMReconciler(chat_judge)
    wanted = settings.reconciler == "trained"
    if wanted and trained is not None and trained.relation_model is not None:
        return TrainedReconciler(trained)
    return OfflineReconciler()


__all__ = [
    "LLMReconciler",
    "OfflineReconciler",
    "ReconcileThresholds",
    "Reconciler",
    "RelationThresholds",
    "TrainedReconciler",
    "Relation",
    "default_reconciler",
    "relate",
    "restates",
    "same_text",
]
