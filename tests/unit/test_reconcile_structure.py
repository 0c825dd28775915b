"""Reconciliation by subject and attribute: repeats, other occasions and instances, new values."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from memora.models import MemoryCandidate, MemoryUnit, Neighbour, ReconcileAction
from memora.write import reconcile
from memora.write.reconcile import (
    LLMReconciler,
    OfflineReconciler,
    Relation,
    relate,
    restates,
    same_text,
)
from memora.write.reconcile.structure import occasions, quantity_may_have_changed
from tests.scripted import ScriptedByPrompt, ScriptedStructuredModel


def _n(mid: str, content: str, similarity: float) -> Neighbour:
    return Neighbour(memory=MemoryUnit(id=mid, user_id="u", content=content), similarity=similarity)


def _decide(content: str, *neighbours: Neighbour) -> Any:
    return OfflineReconciler().decide(MemoryCandidate(content=content), list(neighbours))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "On 2026-03-03 the user swam 20 laps at the city pool.",
            "On 2026-03-04 the user swam 25 laps at the city pool.",
        ),
        ("On 2026-03-03 the user swam 20 laps.", "On 2026-03-05 the user swam 20 laps."),
        ("The user went running on Monday.", "The user went running on Thursday."),
        ("At 7am the user walked the dog.", "At 6pm the user walked the dog."),
        ("The user visited the dentist on March 3.", "The user visited the dentist on May 12."),
        ("The user went to a pottery class.", "The user went to another pottery class."),
        ("I keep a pet lizard named Ziggy", "I keep a pet lizard named Rango"),
        ("The user has a daughter named Ingrid.", "The user has a son named Tomas."),
        ("The user speaks Portuguese.", "The user speaks German."),
        ("The user is allergic to peanuts.", "The user is allergic to shellfish."),
        (
            "The user's colleague Priya leads the data team.",
            "The user's colleague Kenji runs the mobile team.",
        ),
        (
            "使用者在 2026-03-03 在市立游泳池游了 20 圈。",
            "使用者在 2026-03-05 在市立游泳池游了 24 圈。",
        ),
        ("用户在 4 月 2 日跑了 5 公里。", "用户在 4 月 5 日跑了 8 公里。"),
        ("用户在星期一和产品团队开会。", "用户在星期三和产品团队开会。"),
        ("使用者養了一隻叫小黑的狗。", "使用者養了一隻叫阿福的狗。"),
        ("使用者對花生過敏。", "使用者對芒果過敏。"),
        ("The user owns a Honda Civic.", "The user owns a Honda Accord."),
    ],
)
def test_other_occasions_and_instances_are_distinct(old: str, new: str) -> None:
    assert relate(old, new) is Relation.DISTINCT
    assert not restates(old, new)
    decision = _decide(new, _n("m1", old, 0.95))
    assert decision.action is not ReconcileAction.UPDATE and decision.target_ids == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("使用者的英文程度是 B1。", "使用者的英文程度是 B2。"),
        ("The user's English level is B1.", "The user's English level is B2."),
        ("The user lives in Taipei.", "The user moved to Tainan."),
        ("The user's favourite colour is white.", "The user's favourite colour is blue."),
        ("The user's phone is a Pixel 7.", "The user's phone is an iPhone 15."),
        ("用户住在杭州。", "用户搬到了苏州,现在住在苏州。"),
        ("The user works at Northwind Traders.", "The user works at Contoso Bank."),
    ],
)
def test_same_attribute_of_same_subject_supersedes(old: str, new: str) -> None:
    assert relate(old, new) is Relation.SAME_ATTRIBUTE
    decision = _decide(new, _n("m1", old, 0.6), _n("m2", "The user has a cat named Miso.", 0.3))
    assert decision.action is ReconcileAction.UPDATE and decision.target_ids == ["m1"]


def test_a_named_attribute_supersedes_below_the_cosine_gate() -> None:
    decision = _decide(
        "The user's phone is an iPhone 15.", _n("m1", "The user's phone is a Pixel 7.", 0.2)
    )
    assert decision.action is ReconcileAction.UPDATE


def test_a_relation_cue_alone_needs_the_gate_or_a_change_word() -> None:
    flat = _n("m1", "I live in a small flat near the old station", 0.3)
    assert _decide("I live in Kaohsiung", flat).action is not ReconcileAction.UPDATE
    moved = _decide("I moved to Kaohsiung", flat)
    assert moved.action is ReconcileAction.UPDATE and moved.target_ids == ["m1"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The user's favourite colour is teal.", "The user's favorite color is teal."),
        ("On 2026-03-09 the user swam 16 laps.", "The user swam 16 laps on 2026-03-09."),
        ("The user has a pet hamster named Chester.", "The user has a pet hamster called Chester."),
        ("The user does not eat pork.", "The user doesn't eat pork."),
        ("使用者喜歡喝烏龍茶。", "使用者喜欢喝乌龙茶。"),
        ("The user is vegetarian.", "the user is vegetarian"),
    ],
)
def test_near_repeats_skip(old: str, new: str) -> None:
    assert relate(old, new) is Relation.REPEAT
    decision = _decide(new, _n("m1", old, 0.5))
    assert decision.action is ReconcileAction.SKIP and decision.target_ids == ["m1"]


def test_names_are_never_spelling_variants() -> None:
    assert relate("I keep a pet lizard named Rusty", "I keep a pet lizard named Dusty") is (
        Relation.DISTINCT
    )
    assert not same_text("The user's cat is Mango.", "The user's cat is Tango.")


def test_reordered_names_are_not_a_repeat() -> None:
    old = "Jasen wrote a cookbook with a foreword by Jonan."
    new = "Jonan wrote a cookbook with a foreword by Jasen."
    assert relate(old, new) is not Relation.REPEAT


def test_a_counter_with_the_same_wording_updates() -> None:
    decision = _decide(
        "The user has a 41-day streak on Duolingo.",
        _n("m1", "The user has a 40-day streak on Duolingo.", 0.97),
    )
    assert decision.action is ReconcileAction.UPDATE


def test_a_year_alone_does_not_make_another_occasion() -> None:
    assert occasions("Jonas graduated from MIT in 2015.") == {"year:2015"}
    decision = _decide(
        "Jonas graduated from MIT in 2020.", _n("m1", "Jonas graduated from MIT in 2015.", 0.98)
    )
    assert decision.action is ReconcileAction.UPDATE


def test_a_contrast_word_updates_a_many_valued_relation() -> None:
    decision = _decide(
        "The user no longer speaks French.", _n("m1", "The user speaks French.", 0.9)
    )
    assert decision.action is ReconcileAction.UPDATE


def _rules_file() -> dict[str, Any]:
    path = Path(reconcile.__file__).with_name("rules.toml")
    return tomllib.loads(path.read_text("utf-8"))


def _examples(kind: str) -> list[tuple[str, list[str]]]:
    data = _rules_file()
    found = []
    for section in data.values():
        for rule in section if isinstance(section, list) else [section]:
            if kind in rule:
                found.append((rule.get("name", "?"), rule[kind]))
    return found


@pytest.mark.parametrize(("name", "example"), _examples("same"))
def test_every_same_example_of_the_rules_file_supersedes_or_repeats(
    name: str, example: list[str]
) -> None:
    old, new = example
    decision = _decide(new, _n("m1", old, 0.9))
    assert decision.action in {ReconcileAction.UPDATE, ReconcileAction.SKIP}, name


@pytest.mark.parametrize(("name", "example"), _examples("distinct"))
def test_every_distinct_example_of_the_rules_file_keeps_both(name: str, example: list[str]) -> None:
    old, new = example
    assert relate(old, new) is Relation.DISTINCT, name
    assert _decide(new, _n("m1", old, 0.9)).action is ReconcileAction.KEEP_BOTH, name


# -- the chat-model reconciler, held to the same rules --------------------------------------


def _llm(answer: dict[str, Any]) -> tuple[LLMReconciler, ScriptedStructuredModel]:
    model = ScriptedStructuredModel(answer=answer)
    return LLMReconciler(model), model


def test_llm_update_of_another_occasion_keeps_the_memory() -> None:
    reconciler, _ = _llm({"action": "update", "target_ids": ["m1"]})
    decision = reconciler.decide(
        MemoryCandidate(content="On 2026-03-04 the user swam 25 laps."),
        [_n("m1", "On 2026-03-03 the user swam 20 laps.", 0.95)],
    )
    assert decision.action is ReconcileAction.KEEP_BOTH and decision.target_ids == []


def test_llm_skip_of_another_instance_keeps_the_memory() -> None:
    reconciler, _ = _llm({"action": "skip", "target_ids": ["m1"]})
    decision = reconciler.decide(
        MemoryCandidate(content="I keep a pet lizard named Rango"),
        [_n("m1", "I keep a pet lizard named Ziggy", 0.95)],
    )
    assert decision.action is ReconcileAction.KEEP_BOTH


def test_llm_update_keeps_only_the_targets_of_the_same_occasion() -> None:
    reconciler, _ = _llm({"action": "update", "target_ids": ["m1", "m2"]})
    decision = reconciler.decide(
        MemoryCandidate(content="On 2026-01-17 the user had an English lesson with Ana."),
        [
            _n("m1", "On 2026-01-17 the user had an English lesson with Bea.", 0.95),
            _n("m2", "On 2026-01-10 the user had an English lesson with Ana.", 0.9),
        ],
    )
    assert decision.action is ReconcileAction.UPDATE and decision.target_ids == ["m1"]


def test_llm_is_not_asked_about_an_exact_repeat() -> None:
    reconciler, model = _llm({"action": "create"})
    model.prompts.clear()
    decision = reconciler.decide(
        MemoryCandidate(content="the user is vegetarian"),
        [_n("m1", "The user is vegetarian.", 0.99)],
    )
    assert decision.action is ReconcileAction.SKIP and decision.target_ids == ["m1"]
    assert model.prompts == []


@pytest.mark.parametrize(
    "answer",
    [
        {"action": "update", "target_ids": ["not-a-memory"]},
        {"action": "skip"},
        {"action": "supersede-everything", "target_ids": ["m1"]},
        {"target_ids": ["m1"]},
        {"action": ["update"], "target_ids": "m1"},
    ],
)
def test_malformed_llm_verdicts_fall_back_to_review(answer: dict[str, Any]) -> None:
    reconciler = LLMReconciler(ScriptedByPrompt(script=lambda prompt: answer))
    decision = reconciler.decide(
        MemoryCandidate(content="The user's English level is B2."),
        [_n("m1", "The user's English level is B1.", 0.95)],
    )
    assert decision.action is ReconcileAction.REVIEW and decision.target_ids == []


def test_the_prompt_tells_the_model_about_occasions() -> None:
    model = ScriptedStructuredModel(answer={"action": "create"})
    LLMReconciler(model).decide(MemoryCandidate(content="I swam today"), [])
    assert "Another occasion" in model.prompts[-1]


def test_a_detail_after_the_value_is_not_another_value() -> None:
    old, new = "Jon enjoys hiking in the Rocky Mountains.", "Jon enjoys hiking in the Alps."
    assert relate(old, new) is not Relation.DISTINCT


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The user's sister is a doctor.", "The user's sister is pregnant."),
        (
            "The user's daughter Lena is 5 years old.",
            "The user's daughter Lena is allergic to dairy.",
        ),
        ("用户的女儿是医生。", "用户的女儿很喜欢画画。"),
    ],
)
def test_what_follows_a_person_is_not_one_slot(old: str, new: str) -> None:
    assert relate(old, new) is not Relation.SAME_ATTRIBUTE


@pytest.mark.parametrize(
    ("old", "new", "may_have_changed"),
    [
        ("The user has 4 houseplants.", "The user bought more and has 5 houseplants.", True),
        ("The user wakes up at 7 a.m.", "The user now wakes up at 6:30.", True),
        ("用户有2只猫。", "用户现在有3只猫。", True),
        ("On 2026-05-01 the user swam 2 km.", "On 2026-05-02 the user swam 3 km.", False),
        ("The user ran 5 km on Monday.", "The user ran 8 km on Friday.", False),
        ("The user lives in Leeds.", "The user moved to 4 Elm Road.", False),
    ],
)
def test_a_quantity_may_have_changed_only_off_numbered_days(
    old: str, new: str, may_have_changed: bool
) -> None:
    assert quantity_may_have_changed(old, new) is may_have_changed
