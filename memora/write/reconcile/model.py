"""The model-backed reconciler: the configured chat model's structured verdict, validated."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from memora.models import MemoryCandidate, Neighbour, ReconcileAction, ReconcileDecision
from memora.write.prompts import RECONCILE_PROMPT
from memora.write.reconcile.structure import Relation, relate, same_text


# ---------------------------------------------------------------- model
class _Verdict(BaseModel):
    """Structured answer expected from the chat model."""

    action: ReconcileAction = Field(description="create, update, keep_both, skip or review")
    target_ids: list[str] = Field(
        default_factory=list,
        description="ids of existing memories the action applies to (superseded or duplicated)",
    )
    rationale: str = Field(default="", description="one short sentence")


class LLMReconciler:
    """Asks a chat model for a structured verdict, validates it and holds it to the hard rules.

    The hard rules are code, as for the policy gate: a candidate saying exactly
    what a memory says is skipped without asking, and a verdict that would
    supersede or skip a memory structure marks as another occasion or
    instance (:func:`relate`) keeps that memory instead.
    """

    def __init__(self, model: BaseChatModel) -> None:
        """Wrap ``model`` (a langchain ``BaseChatModel`` supporting tool calling)."""
        self._model = model.with_structured_output(_Verdict, include_raw=True)

    def decide(self, candidate: MemoryCandidate, neighbours: list[Neighbour]) -> ReconcileDecision:
        """Return the model's verdict, or REVIEW when the answer is unusable."""
        for neighbour in neighbours:
            if same_text(neighbour.memory.content, candidate.content):
                return ReconcileDecision(
                    action=ReconcileAction.SKIP,
                    target_ids=[neighbour.memory.id],
                    rationale="repeats an existing memory",
                )
        memories = "\n".join(f"{n.memory.id}: {n.memory.content}" for n in neighbours) or "(none)"
        prompt = RECONCILE_PROMPT.format(candidate=candidate.content, memories=memories)
        try:
            result = self._model.invoke(prompt)
        except Exception as exc:  # noqa: BLE001 - any model failure must not lose the memory
            return _review(f"model call failed: {type(exc).__name__}")
        verdict = result.get("parsed") if isinstance(result, dict) else result
        if not isinstance(verdict, _Verdict):
            return _review("model answer did not match the schema")
        decision = _validate(verdict, {n.memory.id for n in neighbours})
        return _keep_distinct(decision, candidate, neighbours)


def _validate(verdict: _Verdict, known_ids: set[str]) -> ReconcileDecision:
    """Reject verdicts that name unknown memories or lack required targets."""
    unknown = [i for i in verdict.target_ids if i not in known_ids]
    if unknown:
        return _review(f"model named unknown memory ids: {unknown}")
    needs_target = {ReconcileAction.UPDATE, ReconcileAction.SKIP}
    if verdict.action in needs_target and not verdict.target_ids:
        return _review(f"model chose {verdict.action.value} without a target")
    return ReconcileDecision(
        action=verdict.action,
        target_ids=list(dict.fromkeys(verdict.target_ids)),
        rationale=verdict.rationale,
    )


def _keep_distinct(
    decision: ReconcileDecision, candidate: MemoryCandidate, neighbours: list[Neighbour]
) -> ReconcileDecision:
    """Drop UPDATE / SKIP targets that are another occasion or instance than the candidate."""
    if decision.action not in {ReconcileAction.UPDATE, ReconcileAction.SKIP}:
        return decision
    content = {n.memory.id: n.memory.content for n in neighbours}
    kept = [
        i
        for i in decision.target_ids
        if relate(content[i], candidate.content) is not Relation.DISTINCT
    ]
    if kept == decision.target_ids:
        return decision
    if kept:
        return ReconcileDecision(
            action=decision.action, target_ids=kept, rationale=decision.rationale
        )
    return ReconcileDecision(
        action=ReconcileAction.KEEP_BOTH,
        rationale="another occasion or instance than the memories the model named",
    )


def _review(why: str) -> ReconcileDecision:
    """A REVIEW decision: store the candidate but flag it for a human."""
    return ReconcileDecision(action=ReconcileAction.REVIEW, rationale=why)
