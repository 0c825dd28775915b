"""Tests for memora.write.reconcile: offline rules and the LLM reconciler's validation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from memora.models import (
    MemoryCandidate,
    MemoryUnit,
    Neighbour,
    ReconcileAction,
    ReconcileDecision,
)
from memora.write.reconcile import LLMReconciler, OfflineReconciler


def _n(mid: str, content: str, similarity: float) -> Neighbour:
    """A neighbour with a hand-set cosine."""
    return Neighbour(memory=MemoryUnit(id=mid, user_id="u", content=content), similarity=similarity)


def _decide(content: str, *neighbours: Neighbour) -> Any:
    return OfflineReconciler().decide(MemoryCandidate(content=content), list(neighbours))


@pytest.mark.parametrize(
    ("old", "new", "sim"),
    [
        ("使用者的英文程度是 B1", "使用者的英文程度是 B2", 0.95),
        ("使用者的英語程度是 B1", "使用者的英語程度是 B2", 0.95),
        ("I live in Taipei", "I moved to Kaohsiung, I live in Kaohsiung now", 0.8),
        (
            "Nora Fishel and Eliza Woodley collaborated on a charity event that combined music.",
            "Joren Sullivar and Eliza Woodley collaborated on a charity event that combined music.",
            0.75,
        ),
        ("Jonas graduated from MIT in 2015.", "Jonas graduated from MIT in 2020.", 0.98),
    ],
)
def test_value_substitution_updates(old: str, new: str, sim: float) -> None:
    decision = _decide(new, _n("m1", old, sim), _n("m2", "The user has a cat named Mochi.", 0.3))
    assert decision.action is ReconcileAction.UPDATE
    assert decision.target_ids == ["m1"]


def test_traditional_and_simplified_chinese_compare_equal() -> None:
    decision = _decide("使用者的英文程度是 B2", _n("m1", "使用者的英文程度是 B1", 0.9))
    assert decision.action is ReconcileAction.UPDATE
    assert _decide("我住在台灣", _n("m1", "我住在台湾", 0.99)).action is ReconcileAction.SKIP


def test_update_supersedes_every_matching_memory() -> None:
    decision = _decide(
        "My English level is C1",
        _n("a", "My English level is B1", 0.9),
        _n("b", "My English level is B2", 0.9),
        _n("c", "My French teacher lives in Paris", 0.7),
    )
    assert decision.action is ReconcileAction.UPDATE
    assert sorted(decision.target_ids) == ["a", "b"]


@pytest.mark.parametrize(
    "new",
    [
        "I live in Taipei",
        "i live in taipei!",
        "I really live in Taipei.",
    ],
)
def test_exact_and_near_repeats_skip(new: str) -> None:
    decision = _decide(new, _n("m1", "I live in Taipei.", 0.97))
    assert decision.action is ReconcileAction.SKIP
    assert decision.target_ids == ["m1"]


def test_related_facts_about_same_entity_never_update() -> None:
    decision = _decide(
        "Nora attended the University of Edinburgh.",
        _n("m1", "Nora is a violinist.", 0.7),
    )
    assert decision.action in {ReconcileAction.CREATE, ReconcileAction.KEEP_BOTH}
    assert decision.target_ids == []


def test_same_short_predicate_for_another_subject_is_compatible() -> None:
    decision = _decide("Joren is a violinist.", _n("m1", "Nora is a violinist.", 0.85))
    assert decision.action is not ReconcileAction.UPDATE


def test_refinement_keeps_the_memory() -> None:
    decision = _decide(
        "Kevin has received awards for his published articles on leadership.",
        _n("m1", "Kevin has published articles on leadership.", 0.87),
    )
    assert decision.action is not ReconcileAction.UPDATE


def test_unrelated_fact_creates() -> None:
    decision = _decide("I have a dog called Rex.", _n("m1", "I live in Taipei.", 0.2))
    assert decision.action is ReconcileAction.CREATE
    assert _decide("I have a dog called Rex.").action is ReconcileAction.CREATE


def test_paraphrased_contradiction_with_negation_updates() -> None:
    decision = _decide(
        "Amara Monrow has never attended any international conferences.",
        _n("m1", "Amara Monrow has participated in international conferences.", 0.93),
        _n("m2", "Amara Monrow is fluent in multiple languages.", 0.6),
    )
    assert decision.action is ReconcileAction.UPDATE
    assert decision.target_ids == ["m1"]


def test_low_similarity_neighbour_is_ignored() -> None:
    decision = _decide(
        "I live in Kaohsiung", _n("m1", "I live in a small flat near the old station", 0.3)
    )
    assert decision.action is not ReconcileAction.UPDATE


def test_final_value_swap_updates_even_below_the_cosine_gate() -> None:
    # Names move an averaged embedding a lot: the same sentence with another name is an update.
    decision = _decide("The user's name is Mitchel.", _n("m1", "The user's name is Gary.", 0.3))
    assert decision.action is ReconcileAction.UPDATE and decision.target_ids == ["m1"]
    other = _decide("The user's dog is Rex.", _n("m1", "The user's name is Gary.", 0.3))
    assert other.action is not ReconcileAction.UPDATE


class _ScriptedChatModel(BaseChatModel):
    """Answers every call with one tool call carrying ``answer`` as its arguments."""

    answer: dict[str, Any]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        # Structured output goes through tool calling; the schema name is the tool name.
        self._tool_name = tools[0].__name__
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        call = {"name": self._tool_name, "args": self.answer, "id": "call_1", "type": "tool_call"}
        message = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=message)])


def _llm(answer: dict[str, Any]) -> LLMReconciler:
    return LLMReconciler(_ScriptedChatModel(answer=answer))


def test_llm_reconciler_returns_valid_verdict() -> None:
    rec = _llm({"action": "update", "target_ids": ["m1"], "rationale": "new city"})
    decision = rec.decide(
        MemoryCandidate(content="I live in Kaohsiung"), [_n("m1", "I live in Taipei", 0.8)]
    )
    assert decision.action is ReconcileAction.UPDATE
    assert decision.target_ids == ["m1"]
    assert decision.rationale == "new city"


@pytest.mark.parametrize(
    "answer",
    [
        {"action": "update", "target_ids": ["nope"]},
        {"action": "skip", "target_ids": []},
        {"action": "explode", "target_ids": []},
    ],
)
def test_llm_reconciler_falls_back_to_review(answer: dict[str, Any]) -> None:
    decision = _llm(answer).decide(
        MemoryCandidate(content="I live in Kaohsiung"), [_n("m1", "I live in Taipei", 0.8)]
    )
    assert decision.action is ReconcileAction.REVIEW
    assert decision.target_ids == []


def test_the_scripted_model_answers_like_a_real_one() -> None:
    # Guards the fake itself: a real model's tool call names the schema it was bound to and
    # carries plain JSON arguments, which the reconciler turns into its decision.
    answer = {"action": "create", "target_ids": [], "rationale": "a new fact"}
    model = _ScriptedChatModel(answer=answer)
    model.bind_tools([ReconcileDecision])
    call = model.invoke("decide").tool_calls[0]
    assert call["name"] == "ReconcileDecision"
    assert json.loads(json.dumps(call["args"])) == answer
    decision = _llm(answer).decide(
        MemoryCandidate(content="I play tennis"), [_n("m1", "I live in Taipei", 0.2)]
    )
    assert decision.action is ReconcileAction.CREATE
    assert decision.target_ids == []


def test_swapped_multiword_name_updates() -> None:
    decision = _decide(
        "Austen graduated from New York University with a degree in communications.",
        _n(
            "m1",
            "Austen graduated from University of California Berkeley with a degree in "
            "communications.",
            0.71,
        ),
    )
    assert decision.action is ReconcileAction.UPDATE


def test_different_event_sharing_names_is_not_an_update() -> None:
    decision = _decide(
        "Christian Sutter also played for FC Baden after leaving FC Basel.",
        _n("m1", "Christian Sutter scored one goal for FC Basel.", 0.76),
    )
    assert decision.action is not ReconcileAction.UPDATE


def test_negation_about_another_topic_of_same_person_is_not_an_update() -> None:
    decision = _decide(
        "Amara Monrow has never attended any international conferences.",
        _n("m1", "Amara Monrow is fluent in multiple languages.", 0.8),
    )
    assert decision.action is not ReconcileAction.UPDATE


def test_role_swap_updates() -> None:
    decision = _decide(
        "Jonan Butley has written a cookbook that includes a foreword by Jasen Sandovar.",
        _n(
            "m1",
            "Jasen Sandovar has written a cookbook that includes a foreword by Jonan Butley.",
            1.0,
        ),
        _n("m2", "Jonan Butley and Jasen Sandovar collaborated on a charity event.", 0.64),
    )
    assert decision.action is ReconcileAction.UPDATE
    assert decision.target_ids == ["m1"]


def test_reworded_restatement_with_new_name_updates_only_the_best_match() -> None:
    decision = _decide(
        "Jasen Rodriquez was born in Los Angeles.",
        _n("m1", "Jasen Rodriquez was born in New York City.", 0.79),
        _n("m2", "Jasen Rodriquez is a professional dancer and choreographer.", 0.68),
    )
    assert decision.action is ReconcileAction.UPDATE
    assert decision.target_ids == ["m1"]


def test_restatement_without_a_clear_margin_keeps_both() -> None:
    decision = _decide(
        "Jasen Rodriquez was born in Los Angeles.",
        _n("m1", "Jasen Rodriquez was born in New York City.", 0.6),
        _n("m2", "Jasen Rodriquez was born into a family of dancers.", 0.78),
    )
    assert decision.action is not ReconcileAction.UPDATE


def test_candidate_adding_a_name_is_an_addition() -> None:
    decision = _decide(
        "Kenton Macmillen's wildlife photographs have been featured in National Geographic.",
        _n("m1", "Kenton Macmillen is known for his work as a wildlife photographer.", 0.8),
    )
    assert decision.action is not ReconcileAction.UPDATE


def test_only_the_best_of_several_contradicted_memories_is_superseded() -> None:
    decision = _decide(
        "Christian Sutter did not score any goals for FC Basel during his career.",
        _n("m1", "Christian Sutter scored one goal for FC Basel.", 0.885),
        _n("m2", "Christian Sutter played for FC Basel during his football career.", 0.844),
    )
    assert decision.action is ReconcileAction.UPDATE
    assert decision.target_ids == ["m1"]


def test_swap_that_changes_the_verb_is_another_fact() -> None:
    decision = _decide(
        "Jonas Wade and Mitchell Borne are members of the same local chess club.",
        _n("m1", "Jonas Wade and Mitchell Borne both attended the same university.", 0.76),
    )
    assert decision.action is not ReconcileAction.UPDATE


def test_weaker_negation_updates_only_a_clear_best_match() -> None:
    new = (
        "Brion Lang has never published any articles or essays online or in print, "
        "and instead focuses exclusively on live spoken word performances."
    )
    old = "Brion Lang might have published articles or essays in online magazines."
    decision = _decide(
        new,
        _n("m1", old, 0.618),
        _n("m2", "Brion Lang could have attended a university with a focus on liberal arts.", 0.39),
    )
    assert decision.action is ReconcileAction.UPDATE
    assert decision.target_ids == ["m1"]
    ambiguous = _decide(
        new,
        _n("m1", old, 0.618),
        _n("m2", "Brion Lang has published essays about spoken word performances.", 0.6),
    )
    assert ambiguous.action is not ReconcileAction.UPDATE


def test_different_contradicts_a_shared_value() -> None:
    decision = _decide(
        "Kelsa Horten and Melina Tayler attended different universities; Kelsa Horten "
        "attended the University of Vienna, while Melina Tayler attended Charles University.",
        _n("m1", "Kelsa Horten and Melina Tayler both attended the University of Vienna.", 0.94),
        _n("m2", "Melina Tayler and Barbora Taylen are sisters who grew up in Prague.", 0.57),
    )
    assert decision.action is ReconcileAction.UPDATE
    assert decision.target_ids == ["m1"]
